"""Blocked lanes (a mixin of Lowering): the lane loop over whole-tile blocks of the output, for
kernels whose lane tiles would straddle an outer lane range.

The lane loop normally walks the flattened output index g in tiles of L lanes. When the inner
lane ranges' product B is not a multiple of L, some tiles hold the end of one block of B outputs
and the start of the next (a convolution's output planes of 60 x 63, einsum's 1001-output blocks,
a batched matmul's rows of 100): their reads of a buffer that does not follow the outer range
cover two far-apart bands of it, and the chunk's window grows to the whole buffer. Blocked lanes
give every block Bp = ceil(B / L) * L lanes: lane g' stands for output

    g = (g' // Bp) * B + min(g' % Bp, B - 1)

so no tile straddles two blocks; a block's padding lanes repeat its last output (they compute the
same value and store it to the same element, like the clamped lanes past G). The lanes no longer
match the output's tiles, so every access gathers or scatters (Stream.tile_ok), and the output,
whose chunks share a tile at every block boundary, streams read-modify-write through a table
window, single buffered so that each chunk's DMA.IN follows the previous chunk's DMA.OUT
(windows.plan_windows, Stream.plan_stream)."""
from __future__ import annotations

import math

import numpy as np
from tinygrad.dtype import dtypes

from tinytpu.backend.records import Const
from tinytpu.backend.vcode import VT
from tinytpu.backend.stream import CHUNK_MAX, SPILL_RESERVE
from tinytpu.backend.windows import lane_count, table_tiles

BLOCK_PAD_MAX = 2  # padded lanes per real one at most (Bp / B): a block of fewer than L outputs is not worth it


class BlockedLanes:
  def block_candidates(self) -> list[tuple[int, int]]:
    """(B, Bp) for every split of the lane ranges into outer and inner ones whose inner product B is
    not whole tiles, the least padding (Bp / B) first, then the innermost."""
    L, out = self.L, []
    for k in range(len(self.extents) - 1, 0, -1):
      B = math.prod(self.extents[k:])
      Bp = -(-B // L) * L
      if B % L and Bp <= BLOCK_PAD_MAX * B:
        out.append((B, Bp))
    return sorted(out, key=lambda b: b[1] / b[0])

  def block_chunks(self, Bp: int) -> list[int]:
    """Chunk sizes (tiles) that keep chunks inside one block or make them whole blocks (up to
    CHUNK_MAX tiles), largest first."""
    Tb = Bp // self.L
    sizes = {d for d in range(1, Tb + 1) if Tb % d == 0}
    while (k := max(sizes) * 2) <= CHUNK_MAX and max(sizes) >= Tb:
      sizes.add(k)
    return sorted((C for C in sizes if C <= CHUNK_MAX), reverse=True)

  def block_lanes(self, gp: VT) -> VT:
    """The output index of every lane of tile register gp (blocked lanes): q = g' / Bp, r = g' - q * Bp
    clamped to B - 1, g = q * B + r."""
    B, Bp = self.block
    c = lambda v: self.tile(Const(v, dtypes.int32), dtypes.int32)  # noqa: E731
    q, r, g = VT("block"), VT("in block"), VT("g")
    if Bp & (Bp - 1) == 0:
      self.ins("VSHR", q, gp, c(Bp.bit_length() - 1))
      self.ins("VAND", r, gp, c(Bp - 1))
    else:
      self.ins("VCDIV", q, gp, c(Bp))
      self.ins("VMUL", r, q, c(Bp))
      self.ins("VSUB", r, gp, r)
    self.ins("VMIN", r, r, c(B - 1))
    self.ins("VMUL", g, q, c(B))
    self.ins("VADD", g, g, r)
    return g

  def plan_blocked(self, uses: dict, forms: dict) -> bool:
    """The first blocked layout whose chunks fit (single buffered: the written windows are read
    back, and a chunk's DMA.IN must follow the previous chunk's DMA.OUT); False when none does."""
    L, V = self.L, self.cfg.VMEM_TILES
    reads = {s: w.read for s, w in self.windows.items()}
    for blk in self.block_candidates():
      self.block = blk
      for w in self.windows.values():
        w.read = w.read or w.written  # read-modify-write: a block boundary's tile is two chunks'
      T = lane_count(self) // L
      gp = np.arange(T * L, dtype=np.int64)
      for C in self.block_chunks(blk[1]):
        if C >= T:
          continue  # one chunk: the kernel did not fit whole
        nc = -(-T // C)
        plan = self._windows(C, nc, forms, uses, gp, tables=True)
        if sum(w.tiles for w in plan.values()) + table_tiles(plan, nc, L) + 1 + SPILL_RESERVE <= V:
          self._adopt(plan, C, nc, 1)
          return True
      for s, w in self.windows.items():
        w.read = reads[s]
    self.block = None
    return False
