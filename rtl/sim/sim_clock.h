// sim_clock.h: the Verilator clock driver shared by the co-simulation mains (tinytpu_sim.cpp for
// sim_top, chip/tinytpu_chip.cpp for sim_chip). Include after verilated.h and TT_TRACE_HEADER
// when tracing (sim_config.h names the trace class). `name` prefixes the one message it prints.
#pragma once

#include <cstdio>
#include <cstdint>
#include <memory>

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
#if VM_TRACE
    if (tfp) tfp->close();
#endif
  }
  void half(int clk) {
    top->clk_i = clk;
    top->eval();
#if VM_TRACE
    if (tfp) tfp->dump(t);
#endif
    t += 5;
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
