// hbm_store: the co-simulation's HBM contents (doc/hbm.md), a sparse store of tiles. rtl/hbm.sv
// models the timing (latency, bandwidth, back-pressure) and calls the DPI-C functions below at the
// cycle it accepts a request, so reads and writes take effect in acceptance order; the C++ main
// preloads the bundle's regions and reads the dumps here directly (no simulated cycles).
//
// Pages of PAGE tiles are allocated on the first write into them; a tile never written reads
// zero, so a run pays only for the tiles it touches, whatever HBM_TILES is.
#pragma once
#include <cstdint>
#include <memory>
#include <unordered_map>
#include <vector>

class HbmStore {
 public:
  static constexpr long long PAGE = 1024;  // tiles per page (as golden/hbm.py)

  // n: the tile edge (a tile is n*n 32-bit lanes); tiles: the capacity
  void configure(int n, long long tiles);
  void clear();  // every tile reads zero again (between bundles)
  long long tiles() const { return tiles_; }
  int lanes() const { return lanes_; }
  // one tile (lanes() values); an address outside [0, tiles()) reads zero / writes nothing and
  // returns false
  bool read(long long addr, uint32_t *out) const;
  bool write(long long addr, const uint32_t *in);
  // count consecutive tiles (count*lanes() values, tile-major), the caller checked the range
  void write_region(long long addr, long long count, const uint32_t *in);
  void read_region(long long addr, long long count, uint32_t *out) const;
  size_t pages() const { return pages_.size(); }

 private:
  uint32_t *page(long long p, bool create) const;
  int lanes_ = 16;
  long long tiles_ = 0;
  mutable std::unordered_map<long long, std::unique_ptr<uint32_t[]>> pages_;
};

// the one store of the simulation (rtl/hbm.sv's DPI-C calls reach it)
HbmStore &hbm_store();
