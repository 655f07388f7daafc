// sim_clock.h: the Verilator clock driver shared by the co-simulation mains (tinytpu_sim.cpp for
// sim_top, chip/tinytpu_chip.cpp for sim_chip). Include after verilated.h and TT_TRACE_HEADER
// when tracing (sim_config.h names the trace class). `name` prefixes the one message it prints.
#pragma once

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <memory>
#include <sstream>
#include <string>

template <class Top>
struct SimClock {
  std::unique_ptr<VerilatedContext> ctx{new VerilatedContext};
  std::unique_ptr<Top> top;
#if VM_TRACE
  std::unique_ptr<TT_TRACE_CLASS> tfp;
#endif
  uint64_t t = 0;

  SimClock(const char *trace, const char *name) {
    ctx->threads(1);
    // an X-randomised build (tinytpu.cosim.xrand_seed, --x-initial unique): the state the reset does
    // not reach and every X assignment take values drawn from this seed, not zeros
    if (const char *xr = getenv("TINYTPU_XRAND")) {
      ctx->randReset(2);
      ctx->randSeed(atoi(xr));
    }
#if VM_TRACE
    if (trace) ctx->traceEverOn(true);
#endif
    top.reset(new Top{ctx.get()});
#if VM_TRACE
    if (trace) {
      tfp.reset(new TT_TRACE_CLASS);
      top->trace(tfp.get(), 99);
      tfp->open(trace);
    }
#else
    if (trace) fprintf(stderr, "%s: built without tracing (rebuild with trace=True); --trace ignored\n", name);
#endif
  }
  ~SimClock() {
    top->final();
#if VM_COVERAGE
    // a --coverage build (tinytpu.cosim.coverage_build): what every bundle of this process reached
    if (const char *cov = getenv("TINYTPU_COSIM_COVERAGE")) ctx->coveragep()->write(cov);
#endif
#if VM_TRACE
    if (tfp) tfp->close();
#endif
  }
  // simulation time advances with the clock: the assertions (rtl/assert.svh) leave out time 0, the
  // first evaluation, so a context whose time stayed 0 would disable every one of them
  void half(int clk) {
    top->clk_i = clk;
    top->eval();
#if VM_TRACE
    if (tfp) tfp->dump(t);
#endif
    t += 5;
    ctx->timeInc(5);
  }
  // reset through the reset path, then clock until the top has reported
  void run() {
    top->rst_ni = 0;
    for (int i = 0; i < 2; i++) half(0), half(1);
    top->rst_ni = 1;
    half(0);
    while (!top->finished_o) half(1), half(0);
  }
};

// The server loop of both mains: bundles on stdin, each ended by a `%end` line, answered on stdout
// by its output, its error text and `%end <rc>`. run(sim, text, out, err) returns the exit code.
template <class S, class Run>
int serve(S &sim, Run run) {
  std::string line, text;
  while (std::getline(std::cin, line)) {
    std::string l = line;
    if (!l.empty() && l.back() == '\r') l.pop_back();
    if (l != "%end") { text += line + "\n"; continue; }
    std::string out, err;
    int rc = run(sim, text, out, err);
    fputs(out.c_str(), stdout);
    fputs(err.c_str(), stdout);
    fprintf(stdout, "%%end %d\n", rc);
    fflush(stdout);
    text.clear();
  }
  return 0;
}

// A bundle from a file, or from stdin for "-"; false (and a message naming the file) if unreadable.
inline bool read_bundle(const char *path, std::string &text, const char *name) {
  if (!strcmp(path, "-")) {
    std::stringstream ss;
    ss << std::cin.rdbuf();
    text = ss.str();
    return true;
  }
  FILE *f = fopen(path, "rb");
  if (!f) { fprintf(stderr, "%s: cannot open %s\n", name, path); return false; }
  char buf[65536];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, f)) > 0) text.append(buf, n);
  fclose(f);
  return true;
}
