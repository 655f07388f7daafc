"""SparseCore programs (doc/sparsecore.md): a builder of EMB.BAG bundles (tests, the co-sim and the
bench) and the EMB items of the random program generator (tinytpu/randprog.py, doc/random.md).

`bag_bundle` places a table, an index list and a destination in HBM and runs one lookup
(`EMB.CFG`, `EMB.BAG[.F32]`, `EMB.WAIT`), dumping the destination.

A random EMB item (EmbItems.emb_item) works inside the program's HBM window (tinytpu/randdma.py):
it builds an index tile in a vector register from random lanes masked to [0, rows) (rows a power of
two; a program whose trap on purpose is `emb_oob` sometimes skips the mask, so an index is out of
range), stores it to VMEM, copies it to the window with DMA.OUT (so the SparseCore's interlock with
the DMA engine is exercised), sets the table with EMB.CFG and runs EMB.BAG or EMB.FBAG on the
window's random tiles as the table, with the destination elsewhere in the window (overlapping the
table or the index list now and then in such a program: hbm_out_of_range)."""
from __future__ import annotations

import numpy as np

from tinytpu import asm
from tinytpu.config import DEFAULT, Config
from tinytpu.randtree import Op
from tinytpu.records import Bundle


def bag_bundle(table: np.ndarray, indices: np.ndarray, bag: int, fp: bool, config: Config = DEFAULT,
               tbase: int = 0, idx: int | None = None, dst: int | None = None, extra: str = "", max_cycles: int | None = None) -> Bundle:
  """One EMB.BAG over `table` ((rows, width, N, N) uint32 tiles at HBM `tbase`) with `indices`
  (int32, a multiple of `bag` long, at HBM `idx`, default after the table), bags pooled to `dst`
  (default after the index list), which is dumped. `extra`: TASM placed before the lookup."""
  rows, width = table.shape[:2]
  L = config.N * config.N
  ind = np.asarray(indices, np.int64)
  bags = len(ind) // bag
  assert bags * bag == len(ind) and 1 <= bags <= 255
  itiles = -(-len(ind) // L)
  idx = tbase + rows * width if idx is None else idx
  dst = idx + itiles if dst is None else dst
  text = f"""{extra}
  LI s1, {tbase}
  LI s2, {rows}
  EMB.CFG s1, s2, {width}, {bag}
  LI s3, {idx}
  LI s4, {dst}
  {'EMB.FBAG' if fp else 'EMB.BAG'} [s4 + 0], [s3 + 0], {bags}
  EMB.WAIT
  HALT
"""
  b = asm.assemble_bundle(text, config)
  lanes = np.zeros(itiles * L, np.uint32)
  lanes[:len(ind)] = (ind & 0xFFFFFFFF).astype(np.uint32)
  regions = [(tbase, table.reshape(rows * width, config.N, config.N).astype(np.uint32)), (idx, lanes.reshape(itiles, config.N, config.N))]
  b.hbm = sorted(regions, key=lambda x: x[0])
  b.dumps.append(("hbm", dst, bags * width))
  if max_cycles is not None: b.max_cycles = max_cycles
  return b


ROWS = (2, 4, 8)      # table rows of a random item (powers of two: the index mask)
MAX_W = 2             # row width in tiles
MAX_BAG = 6
MAX_BAGS = 3
OOB_RATE = 0.3        # EMB items out of range in a program whose trap on purpose is emb_oob


class EmbItems:
  """Mixed into randprog._Gen (uses rng, N, config, s(), w(), vw, hbm0, trap_kind, sp; randdma.HW)."""

  def emb_item(self, f: str) -> list:
    from tinytpu.randdma import HW
    if f == "embwait":
      return [Op([self.w("EMB.WAIT")], "embwait")]
    r, L = self.rng, self.N * self.N
    rows, width = int(r.choice(ROWS)), int(r.integers(1, MAX_W + 1))
    bag, bags = int(r.integers(1, MAX_BAG + 1)), int(r.integers(1, MAX_BAGS + 1))
    while bags * bag > L: bag = max(1, bag - 1) if bags == 1 else bag; bags = max(1, bags - 1)
    oob = self.trap_kind == "emb_oob" and r.random() < OOB_RATE
    # window layout: table, index tile, destination, disjoint (unless oob: an overlap now and then)
    tsize, dsize = rows * width, bags * width
    slack = HW - tsize - 1 - dsize
    order = r.permutation(3)
    sizes, base, pos = (tsize, 1, dsize), self.hbm0 + int(r.integers(0, slack + 1)) if slack > 0 else self.hbm0, {}
    gap = lambda: int(r.integers(0, max(0, HW - (base - self.hbm0) - tsize - 1 - dsize) // 3 + 1))
    for k in order:
      base += gap()
      pos[int(k)] = base
      base += sizes[int(k)]
    tb, ib, db = pos[0], pos[1], pos[2]
    if oob and r.random() < .4:
      db = tb + int(r.integers(0, tsize))   # the destination on the table: hbm_out_of_range
    words = []
    # the index tile: random lanes of a register masked to [0, rows) (unmasked on purpose when oob)
    vi, vm = (int(x) for x in r.choice(16, size=2, replace=False))
    if not (oob and r.random() < .5):
      words += [self.w("VFILL", vd=vm, imm=rows - 1), self.w("VAND", vd=vi, va=vi, vb=vm)]
    vt = int(r.integers(0, self.vw))
    ta, ti, tr = (int(x) for x in r.choice(self.sp, size=3, replace=False))
    words += [self.w("VST", vs=vi, addr=vt, addr_base=0), self.w("DMA.CFG", hstride=0, rows=1, vstride=0)]
    words += [self.w("LI", sd=ti, imm=ib), self.w("DMA.OUT", dst=0, dst_base=ti, src=vt, src_base=0, T=1)]
    words += [self.w("LI", sd=ta, imm=tb), self.w("LI", sd=tr, imm=rows), self.w("EMB.CFG", tbase=ta, rows=tr, width=width, bag=bag)]
    words += [self.w("LI", sd=ta, imm=db - 1)]
    mn = "EMB.FBAG" if r.random() < .5 else "EMB.BAG"
    words.append(self.w(mn, dst=1, dst_base=ta, idx=0, idx_base=ti, B=bags))
    return [Op(words, "emb")]
