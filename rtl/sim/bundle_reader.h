// Bundle v1 reader of the co-simulation: the same records, checks, order of checks and
// `error line L: <why>` messages as tinytpu/bundle.py (+ the directive checks of tinytpu/asm.py
// it goes through). `asm` records are the Python assembler's job: tinytpu.cosim turns them into
// `inst` records line for line before a bundle reaches this binary.
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <vector>

struct SimConfig { int N, VMEM_TILES, PSUM_TILES, IMEM_WORDS; };

struct BundleError {
  int line;
  std::string why;
};

struct Tile { int addr; std::vector<uint32_t> lanes; };
struct Dump { std::string kind; long long addr, count; };

struct Bundle {
  std::vector<Tile> vmem, psum;
  std::vector<std::pair<int, uint32_t>> sregs;
  std::vector<uint64_t> program;
  std::vector<Dump> dumps;
  long long max_cycles = 0;
};

// throws BundleError
Bundle parse_bundle(const std::string &text, const SimConfig &cfg);
