// The retire trace of the co-simulation (rtl/sim/retire_probe.sv, doc/random.md): with
// TINYTPU_RETIRE=<path> in the environment, the probes write one line per event into that file:
//   R <cycle> <pc> <sreg or -1> <value>   an instruction retired (slot 0 before slot 1), the scalar register it wrote
//   V <cycle> <vreg> <hash>               a vector register write-back (hash: golden/trace.py's tile_hash, hex)
// The file is opened on the first reset release and closed at exit; it is meant for one-bundle
// runs (server mode would append every bundle's events to one file).
#include <cstdio>
#include <cstdlib>

#include "Vsim_top__Dpi.h"

namespace {
FILE *trace_file = nullptr;
bool trace_checked = false;

void close_trace() {
  if (trace_file) fclose(trace_file);
  trace_file = nullptr;
}
}  // namespace

extern "C" int tt_retire_on() {
  if (!trace_checked) {
    trace_checked = true;
    const char *path = getenv("TINYTPU_RETIRE");
    if (path && *path) {
      trace_file = fopen(path, "w");
      if (!trace_file) {
        fprintf(stderr, "TINYTPU_RETIRE=%s: cannot open for writing\n", path);
        exit(2);
      }
      atexit(close_trace);
    }
  }
  return trace_file != nullptr;
}

extern "C" void tt_retire(unsigned int cycle, unsigned int pc, int sreg, unsigned int value) {
  if (trace_file) fprintf(trace_file, "R %u %u %d %u\n", cycle, pc, sreg, value);
}

extern "C" void tt_vwrite(unsigned int cycle, int vreg, unsigned long long hash) {
  if (trace_file) fprintf(trace_file, "V %u %d %llx\n", cycle, vreg, hash);
}
