// hbm_store: the sparse tile store behind rtl/hbm.sv (see hbm_store.h) and its DPI-C functions.
#include "hbm_store.h"

#include <algorithm>
#include <cstring>

#include "svdpi.h"

void HbmStore::configure(int n, long long tiles) {
  lanes_ = n * n;
  tiles_ = tiles;
  clear();
}

void HbmStore::clear() { pages_.clear(); }

uint32_t *HbmStore::page(long long p, bool create) const {
  auto it = pages_.find(p);
  if (it != pages_.end()) return it->second.get();
  if (!create) return nullptr;
  auto *mem = new uint32_t[(size_t)(PAGE * lanes_)]();  // value-initialised: an unwritten tile reads 0
  pages_.emplace(p, std::unique_ptr<uint32_t[]>(mem));
  return mem;
}

bool HbmStore::read(long long addr, uint32_t *out) const {
  if (addr < 0 || addr >= tiles_) {
    std::fill(out, out + lanes_, 0u);
    return false;
  }
  const uint32_t *pg = page(addr / PAGE, false);
  if (!pg) std::fill(out, out + lanes_, 0u);
  else std::memcpy(out, pg + (addr % PAGE) * lanes_, sizeof(uint32_t) * lanes_);
  return true;
}

bool HbmStore::write(long long addr, const uint32_t *in) {
  if (addr < 0 || addr >= tiles_) return false;
  std::memcpy(page(addr / PAGE, true) + (addr % PAGE) * lanes_, in, sizeof(uint32_t) * lanes_);
  return true;
}

void HbmStore::write_region(long long addr, long long count, const uint32_t *in) {
  // page by page: one copy per page touched
  for (long long t = addr; t < addr + count;) {
    long long p = t / PAGE, o = t % PAGE, n = std::min(PAGE - o, addr + count - t);
    std::memcpy(page(p, true) + o * lanes_, in + (t - addr) * lanes_, sizeof(uint32_t) * n * lanes_);
    t += n;
  }
}

void HbmStore::read_region(long long addr, long long count, uint32_t *out) const {
  for (long long t = addr; t < addr + count;) {
    long long p = t / PAGE, o = t % PAGE, n = std::min(PAGE - o, addr + count - t);
    const uint32_t *pg = page(p, false);
    if (pg) std::memcpy(out + (t - addr) * lanes_, pg + o * lanes_, sizeof(uint32_t) * n * lanes_);
    else std::fill(out + (t - addr) * lanes_, out + (t - addr + n) * lanes_, 0u);
    t += n;
  }
}

HbmStore &hbm_store() {
  static HbmStore s;
  return s;
}

// ---------------------------------------------------------------------------------------------
// DPI-C (rtl/hbm.sv): a tile travels as a packed 8192-bit vector (N <= 16: 256 lanes), lane l in
// 32-bit word l; the return value is 0 for an address outside the store (hbm.sv flags it)
extern "C" int tt_hbm_read(long long addr, svBitVecVal *data) {
  return hbm_store().read(addr, reinterpret_cast<uint32_t *>(data)) ? 1 : 0;
}
extern "C" int tt_hbm_write(long long addr, const svBitVecVal *data) {
  return hbm_store().write(addr, reinterpret_cast<const uint32_t *>(data)) ? 1 : 0;
}
