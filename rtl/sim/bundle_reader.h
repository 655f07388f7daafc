// Bundle v1/v2 reader of the co-simulation: the same records, checks, order of checks and
// `error line L: <why>` messages as tinytpu/bundle.py (+ the directive checks of tinytpu/asm.py
// it goes through). Version 2 (doc/bundle.md) reads `hbmbin` regions from the bundle's `binfile`
// and writes `dump hbm` lanes into its `resultfile`. `asm` records are the Python assembler's job: tinytpu.cosim turns them into
// `inst` records line for line before a bundle reaches this binary.
#pragma once
#include <cstdint>
#include <map>
#include <memory>
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
// lanes.data() / lanes.size(): owned for `hbm` text records, a read-only view of the mapped side
// file for v2 `hbmbin` records (no copy; the mapping lives as long as a copy of the region)
struct Lanes {
  std::vector<uint32_t> own;
  std::shared_ptr<void> map;       // the mapping behind view
  const uint32_t *view = nullptr;
  size_t n = 0;                    // lanes of view
  const uint32_t *data() const { return view ? view : own.data(); }
  size_t size() const { return view ? n : own.size(); }
  const uint32_t *begin() const { return data(); }
  const uint32_t *end() const { return data() + size(); }
  uint32_t operator[](size_t i) const { return data()[i]; }
};
struct HbmRegion { long long addr, count; Lanes lanes; };

struct Bundle {
  std::vector<Tile> vmem, psum;
  std::vector<std::pair<int, uint32_t>> sregs;
  std::vector<uint64_t> program;
  std::vector<Dump> dumps;
  std::vector<HbmRegion> hbm;
  long long max_cycles = 0;
  int version = 1;         // the header's format version
  std::string resultfile;  // v2 `resultfile`: where write_hbm_dump() puts the lanes ("" = text lines)
};

// throws BundleError
Bundle parse_bundle(const std::string &text, const SimConfig &cfg);

// the result line of one `dump hbm` (lanes: d.count*N*N values) in the bundle's format: a text line
// `hbm <addr> <count> <values>`, as format_result; with a v2 `resultfile`, the lanes go to that file
// (raw little-endian uint32, the hbm dumps one after the other in dump order: d must be one of
// b.dumps, written in that order) and the line is `hbm <addr> <count> @<byte offset>`. A result file
// that cannot be written ends the process with exit code 3 and a message on stderr.
void write_hbm_dump(std::ostream &o, const Bundle &b, const Dump &d, const std::vector<uint32_t> &lanes, const SimConfig &cfg);
