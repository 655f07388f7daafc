// The retire trace of the co-simulation (rtl/sim/retire_probe.sv, doc/random.md): with
// TINYTPU_RETIRE=<path> in the environment, the probes write one line per event into that file:
//   R <cycle> <pc> <sreg or -1> <value>   an instruction retired (slot 0 before slot 1), the scalar register it wrote
//   V <cycle> <vreg> <hash>               a vector register write-back (hash: golden/trace.py's tile_hash, hex)
//   T <cycle> <mem> <tile> <lanes>        a whole-tile write (mem 0: VMEM, 1: PSUM; lanes in hex, rtl/sim/vmem_probe.sv, psum_probe.sv)
//   D <cycle> <tile> <lanes>              a VMEM tile written by the DMA engine
//   E <cycle> <mem> <element> <value>     one lane of a VMEM scatter
//   P <cycle> <tile> <row> <fresh> <lanes> an MXU row written into PSUM (fresh: the tile was zeroed under it)
// The file is opened on the first reset release and closed at exit; it is meant for one-bundle
// runs (server mode would append every bundle's events to one file).
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "Vsim_top__Dpi.h"

namespace {
FILE *trace_file = nullptr;
bool trace_checked = false;
std::vector<unsigned int> words;  // the lanes of the memory write being reported

void put_words() {
  for (unsigned int w : words) fprintf(trace_file, " %x", w);
  fputc('\n', trace_file);
  words.clear();
}

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

extern "C" void tt_mword(unsigned int value) {
  if (trace_file) words.push_back(value);
}

extern "C" void tt_mtile(unsigned int cycle, int kind, unsigned int tile) {
  if (!trace_file) return;
  fprintf(trace_file, "T %u %d %u", cycle, kind, tile);
  put_words();
}

extern "C" void tt_mdma(unsigned int cycle, unsigned int tile) {
  if (!trace_file) return;
  fprintf(trace_file, "D %u %u", cycle, tile);
  put_words();
}

extern "C" void tt_melem(unsigned int cycle, int kind, unsigned int elem, unsigned int value) {
  if (trace_file) fprintf(trace_file, "E %u %d %u %x\n", cycle, kind, elem, value);
}

extern "C" void tt_mrow(unsigned int cycle, unsigned int tile, int row, int fresh) {
  if (!trace_file) return;
  fprintf(trace_file, "P %u %u %d %d", cycle, tile, row, fresh);
  put_words();
}
