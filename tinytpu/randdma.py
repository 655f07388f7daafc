"""DMA items of the random program generator (tinytpu/randprog.py, doc/random.md).

A program owns a window of HW HBM tiles, preloaded with random tiles and dumped at the end, placed
at the bottom of HBM, at its top (the last tile) or in between, so the full address range is
reached. A DMA item is one straight-line group: its shape (DMA.CFG, with the row stride from a
register), its two base registers and the copy, all chosen so that every row stays inside the
program's VMEM tiles [0, VW) and its HBM window; the copy aims at the tiles of the last MMUL
(which the MXU may still be reading) half the time, so DMA-vs-MXU interlocks are exercised. A few
items of a program whose trap on purpose is `dma_oob` (tinytpu/randreach.py) copy out of range:
the program then ends in hbm_out_of_range or vmem_out_of_range, and RTL and golden must agree on
the trap and its pc."""
from __future__ import annotations

import numpy as np

from tinytpu.randtree import Op

HW = 32               # HBM tiles a program owns
MAX_T = 5             # tiles per row
MAX_ROWS = 3
OOB_RATE = 0.3        # DMA items out of range in a program whose trap on purpose is dma_oob


def hbm_base(rng: np.random.Generator, hbm_tiles: int) -> int:
  """The first tile of the program's HBM window: bottom, top or a random place of the HBM."""
  k = int(rng.integers(0, 3))
  return 0 if k == 0 else hbm_tiles - HW if k == 1 else int(rng.integers(0, hbm_tiles - HW + 1))


class DmaItems:
  """Mixed into randprog._Gen (uses rng, N, config, s(), w(), hot, vw, hbm0, trap_kind)."""

  def dma_item(self, f: str) -> list:
    if f == "dmawait":
      return [Op([self.w("DMA.WAIT")], "dmawait")]
    r = self.rng
    out_dir = r.random() < .45
    T = int(r.integers(1, MAX_T + 1))
    rows = int(r.choice([1, 1, 2, 3][:MAX_ROWS + 1]))
    hs = int(r.integers(-6, 9)) if rows > 1 else int(r.integers(-2, 3))
    vs = int(r.integers(0, T + 3)) if rows > 1 else int(r.integers(0, 3))
    if (rows - 1) * vs + T > self.vw:
      rows = 1
    vspan = (rows - 1) * vs + T
    hlo, hspan = min(0, (rows - 1) * hs), abs((rows - 1) * hs) + T
    # the VMEM rows: often onto the tiles of the last MMUL
    if self.hot is not None and r.random() < .5:
      v = min(self.hot[0] + int(r.integers(0, self.hot[1])), self.vw - vspan)
    else:
      v = int(r.integers(0, self.vw - vspan + 1))
    h = self.hbm0 - hlo + int(r.integers(0, HW - hspan + 1))
    if self.trap_kind == "dma_oob" and r.random() < OOB_RATE:  # out of range on purpose: past VMEM's end or outside HBM
      if r.random() < .5:
        v = self.config.VMEM_TILES - int(r.integers(0, T)) if r.random() < .7 else -1
      else:
        h = (self.config.HBM_TILES - int(r.integers(0, T)) - (rows - 1) * max(hs, 0)) if r.random() < .5 else -1 - (rows - 1) * max(hs, 0)
    words = []
    if rows > 1 or r.random() < .7:  # else the shape in force: the last DMA.CFG of an earlier item may not have run
      t = self.s()
      words += [self.w("LI", sd=t, imm=hs), self.w("DMA.CFG", hstride=t, rows=rows, vstride=vs)]
    else:
      words += [self.w("DMA.CFG", hstride=0, rows=1, vstride=0)]
    bv, bh = (int(x) for x in r.choice(self.sp, size=2, replace=False))
    vb, voff = self._dma_base(bv, v, words)
    hb, hoff = self._dma_base(bh, h, words)
    if out_dir:
      words.append(self.w("DMA.OUT", dst=hoff, dst_base=hb, src=voff, src_base=vb, T=T))
    else:
      words.append(self.w("DMA.IN", dst=voff, dst_base=vb, src=hoff, src_base=hb, T=T))
    return [Op(words, "dmaout" if out_dir else "dmain")]

  def _dma_base(self, reg: int, addr: int, words: list) -> tuple[int, int]:
    """(base register, offset) reaching addr: s0 plus the address when it fits the 16-bit offset,
    else a register loaded with LI (the words are appended)."""
    if 0 <= addr < 1 << 15 and self.rng.random() < .4:
      return 0, addr
    off = int(self.rng.integers(-3, 4))
    words.append(self.w("LI", sd=reg, imm=addr - off))
    return reg, off
