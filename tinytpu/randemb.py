"""SparseCore programs (doc/sparsecore.md): a builder of EMB.BAG bundles (tests, the co-sim and the
bench) and the EMB items of the random program generator (tinytpu/randprog.py, doc/random.md).

`bag_bundle` places a table, an index list and a destination in HBM and runs one lookup
(`EMB.CFG`, `EMB.BAG[.F32]`, `EMB.WAIT`), dumping the destination.

A random EMB item (EmbItems.emb_item) works inside the program's HBM window (tinytpu/randdma.py):
it builds an index tile in a vector register from random lanes masked to [0, rows) (rows a power of
two; a program whose trap on purpose is `emb_oob` (tinytpu/randreach.py) sometimes skips the mask, so an index is out of
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
               tbase: int = 0, idx: int | None = None, dst: int | None = None, extra: str = "", max_cycles: int | None = None,
               pad: int = 0) -> Bundle:
  """One EMB.BAG over `table` ((rows, width, N, N) uint32 tiles at HBM `tbase`) with `indices`
  (int32, a multiple of `bag` long, at HBM `idx`, default after the table), bags pooled to `dst`
  (default after the index list), which is dumped. `extra`: TASM placed before the lookup; `pad`:
  the last index tile's lanes past the list (not indices: never checked, never read)."""
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
  lanes = np.full(itiles * L, pad & 0xFFFFFFFF, np.uint32)
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
RATE = 0.25           # EMB items per DMA item (every one in an emb_oob program; their own random stream: the DMA programs stay as they were otherwise)
OOB_RATE = 0.8        # EMB items out of range in a program whose trap on purpose is emb_oob (tinytpu/randreach.py)


class EmbItems:
  """Mixed into randprog._Gen (uses emb_rng, N, w(), vp, sp, vw, hbm0, trap_kind; randdma.HW).
  Every choice comes from emb_rng, so the rest of a program is the one it was before EMB items."""

  def emb_extra(self) -> list:
    """After a DMA item: an EMB item now and then."""
    if not self.emb:  # randprog._Gen(emb=False): a core without a SparseCore
      return []
    rate = RATE if self.trap_kind != "emb_oob" else 1.0
    return self.emb_item() if self.emb_rng.random() < rate else []

  def emb_item(self) -> list:
    from tinytpu.randdma import HW
    r = self.emb_rng
    if r.random() < .15:
      return [Op([self.w("EMB.WAIT")], "embwait")]
    rows, width = int(r.choice(ROWS)), int(r.integers(1, MAX_W + 1))
    bag, bags = int(r.integers(1, MAX_BAG + 1)), int(r.integers(1, MAX_BAGS + 1))
    bags = min(bags, self.N * self.N)
    bag = min(bag, self.N * self.N // bags)  # one index tile
    oob = self.trap_kind == "emb_oob" and r.random() < OOB_RATE
    # the window: table, index tile and destination, packed in a random order from a random start
    sizes = {"t": rows * width, "i": 1, "d": bags * width}
    start = self.hbm0 + int(r.integers(0, HW - sum(sizes.values()) + 1))
    pos = {}
    for k in r.permutation(["t", "i", "d"]):
      pos[str(k)] = start
      start += sizes[str(k)]
    if oob and r.random() < .25:
      pos["d"] = pos["t"] + int(r.integers(0, sizes["t"]))   # the destination on the table: hbm_out_of_range
    vi, vm = (int(x) for x in r.choice(self.vp, size=2, replace=False))
    ta, ti = (int(x) for x in r.choice(self.sp, size=2, replace=False))
    words = []
    if not oob:  # unmasked on purpose: random lanes, an index out of range
      words += [self.w("VFILL", vd=vm, imm=rows - 1), self.w("VAND", vd=vi, va=vi, vb=vm)]
    vt = int(r.integers(0, self.vw))
    words += [self.w("VST", vs=vi, addr=vt, addr_base=0), self.w("DMA.CFG", hstride=0, rows=1, vstride=0),
              self.w("LI", sd=ti, imm=pos["i"]), self.w("DMA.OUT", dst=0, dst_base=ti, src=vt, src_base=0, T=1),
              self.w("LI", sd=ta, imm=pos["t"]), self.w("LI", sd=vm_s(self, ta, ti), imm=rows)]
    words += [self.w("EMB.CFG", tbase=ta, rows=vm_s(self, ta, ti), width=width, bag=bag), self.w("LI", sd=ta, imm=pos["d"] - 1)]
    mn = "EMB.FBAG" if r.random() < .5 else "EMB.BAG"
    words.append(self.w(mn, dst=1, dst_base=ta, idx=0, idx_base=ti, B=bags))
    return [Op(words, "emb")]


def vm_s(g, ta: int, ti: int) -> int:
  """A third scalar register of the pool for the row count (the pool has at least 3)."""
  return next(x for x in g.sp if x not in (ta, ti))
