// Bundle v1 reader of the co-simulation: the same records, checks, order of checks and
// `error line L: <why>` messages as tinytpu/bundle.py (+ the directive checks of tinytpu/asm.py
// it goes through). `asm` records are the Python assembler's job: tinytpu.cosim turns them into
// `inst` records line for line before a bundle reaches this binary.
#pragma once
#include <cstdint>
#include <map>
#include <ostream>
#include <string>
#include <vector>

// the HBM fields (doc/hbm.md) are the build's TT_HBM_* values
struct SimConfig { int N, VMEM_TILES, PSUM_TILES, IMEM_WORDS; long long HBM_TILES; int HBM_LATENCY, HBM_BW_NUM, HBM_BW_DEN; };

struct BundleError {
  int line;
  std::string why;
};

struct Tile { int addr; std::vector<uint32_t> lanes; };
struct Dump { std::string kind; long long addr, count; };  // kind: vmem, psum, hbm or sreg
// an HBM preload region: tiles addr..addr+count-1, count*N*N lanes (tile-major, each tile row-major);
// the regions of a bundle are disjoint and inside HBM_TILES (the reader checks)
struct HbmRegion { long long addr, count; std::vector<uint32_t> lanes; };

struct Bundle {
  std::vector<Tile> vmem, psum;
  std::vector<std::pair<int, uint32_t>> sregs;
  std::vector<uint64_t> program;
  std::vector<Dump> dumps;
  std::vector<HbmRegion> hbm;
  long long max_cycles = 0;
  int version = 1;
};

// throws BundleError
Bundle parse_bundle(const std::string &text, const SimConfig &cfg);

// the result line of one `dump hbm` (lanes: d.count*N*N values) in the bundle's format (v1: a
// text line `hbm <addr> <count> <values>`, as format_result; v2: doc/bundle.md)
void write_hbm_dump(std::ostream &o, const Bundle &b, const Dump &d, const std::vector<uint32_t> &lanes, const SimConfig &cfg);
