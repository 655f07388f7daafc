"""Golden reference of the SparseCore's embedding-bag lookups EMB.BAG / EMB.FBAG
(doc/sparsecore.md): rows of a table in HBM gathered by an index list in HBM and sum-pooled per bag
into HBM.

Choices the architecture leaves open, made here (the RTL, rtl/sparsecore.sv, makes the same ones):
- a table row is `width` whole tiles (a row of E elements is ceil(E / (N*N)) tiles, padded); row r
  is HBM tiles tbase + r*width .. + width-1;
- the index list is int32 lanes in HBM, element e = lane e mod N*N of tile idx + e div N*N; bag b
  uses elements b*bag .. b*bag + bag-1 (every bag has the EMB.CFG bag size);
- bag b's pooled row goes to HBM tiles dst + b*width .. + width-1;
- int32: lane-wise sums mod 2^32 (the order cannot matter);
- fp32: a fixed order, a left fold over the bag: s = row x_0, then s = s + row x_j for j = 1, 2, ..
  (every add an IEEE binary32 add with RNE, subnormals kept, a NaN result canonical 0x7FC00000: the
  VPU's FADD, golden/fpops.py). Starting from the first row (not from +0) keeps a bag of one row
  bit-exact, -0 included;
- checks, before anything is written (a trapping lookup writes nothing): the table, index-list and
  destination ranges against HBM (hbm_out_of_range), then every index of the list against
  [0, rows) (emb_index_out_of_range; an index is a signed int32, so a negative one is out of range);
- the destination must not overlap the table or the index list (hbm_out_of_range, checked with
  the ranges): so every read sees the HBM of the issue and the order of the writes cannot matter
  (the RTL reads later bags' rows while earlier bags' sums are still on their way)."""
from __future__ import annotations

import numpy as np

from tinytpu.golden.fpops import OPS as FP

_FADD = FP["FADD"]


class EmbTrap(Exception):
  def __init__(self, trap: str): self.trap = trap


def index_tiles(bags: int, bag: int, N: int) -> int:
  """HBM tiles of an index list of bags*bag int32 elements."""
  return -(-(bags * bag) // (N * N))


def check(hbm_tiles: int, N: int, tbase: int, rows: int, width: int, bag: int, bags: int, idx: int, dst: int) -> None:
  """The range checks of an EMB.BAG, in the order of doc/sparsecore.md; raises EmbTrap."""
  boxes = ((tbase, rows * width), (idx, index_tiles(bags, bag, N)), (dst, bags * width))
  for lo, n in boxes:
    if lo < 0 or lo + n > hbm_tiles: raise EmbTrap("hbm_out_of_range")
  for lo, n in boxes[:2]:  # the destination against the table and the index list
    if n and lo < dst + bags * width and dst < lo + n: raise EmbTrap("hbm_out_of_range")


def bag_lookup(hbm, N: int, tbase: int, rows: int, width: int, bag: int, bags: int, idx: int, dst: int, fp: bool) -> None:
  """Run one EMB.BAG on a golden HBM store (golden/hbm.py) after `check` passed: raises EmbTrap for
  an index out of range (having written nothing), else writes every bag."""
  x = hbm.read(idx, index_tiles(bags, bag, N)).reshape(-1)[:bags * bag].view(np.int32).astype(np.int64)
  if x.size and (x.min() < 0 or x.max() >= rows): raise EmbTrap("emb_index_out_of_range")
  for b in range(bags):
    acc = None
    for j in range(bag):
      row = hbm.read(tbase + int(x[b * bag + j]) * width, width)
      if acc is None: acc = row
      elif fp: acc = _FADD(acc, row)
      else: acc = (acc.astype(np.uint64) + row).astype(np.uint32)
    hbm.write(dst + b * width, acc)


def reference(table: np.ndarray, indices: np.ndarray, bag: int, fp: bool) -> np.ndarray:
  """An independent numpy formulation for tests: table (rows, E) of int32 or float32, indices (bags*bag,)
  -> (bags, E) sums per bag (fp32: the left fold in index order, numpy float32 adds)."""
  g = table[indices.reshape(-1, bag)]          # (bags, bag, E)
  if not fp: return (g.astype(np.int64).sum(1) & 0xFFFFFFFF).astype(np.uint32).view(np.int32)
  acc = g[:, 0].copy()
  with np.errstate(all="ignore"):
    for j in range(1, bag): acc = (acc + g[:, j]).astype(np.float32)
  return acc
