"""Row windows by blocks (a mixin of Lowering): a row window (rowwin.py) whose rows do not fit in
VMEM even for one lane tile streams them by blocks of its range's loop.

An fp32 `(4, 784) @ (784, 100)` on the VPU reads `W[k * 100 + n]`: per lane tile one row of W per
value of k, 784 rows of 2 tiles, more than a 1024-tile VMEM holds. Its row window keeps the lane
chunker's start (a step or a table, windows.py) but holds Rb rows, two copies: the loop over k
becomes a block loop around a loop of Rb steps, and block b + 1's rows (one 2-D DMA per class of
rows, as the chunk's would be) stream in while block b is reduced. Rb divides the range's extent
and is a multiple of the classes' period m = L / gcd(c, L) (every block's classes then sit at the
same offsets, c * Rb / L whole tiles further into HBM) and of the loop's unroll step.

An access keeps the row window's form (stream.row_form: the row term's coefficient is the row pitch
`size = P * L + c mod L`) and the window's element base; its rebase is the block register

    copy * tiles * L - (chunk start - chunk 0's start) * L - size * Rb * b

which the block loop steps (the copy flips, b counts). The loop variable and its induction registers
run on across blocks, as rstream.py's do. Every lane tile of a chunk reads its blocks again: the
planner tries chunks of one lane tile first (the narrowest rows) and with blocked lanes
(lanes.py), where no lane tile straddles two output rows, and takes the plan of least estimated
cost."""
from __future__ import annotations

import math

import numpy as np
from tinygrad.dtype import dtypes
from tinygrad.uop.ops import UOp

from tinytpu.backend.optable import LOOPI_MAX, _cint
from tinytpu.backend.records import Const, OpenLoop, SReg
from tinytpu.backend.stream import CHUNK_MAX, LAST_SKIP, SPILL_RESERVE, HbmAddr
from tinytpu.backend.vcode import SR, Label, Mem
from tinytpu.backend.windows import Window, lane_count, table_tiles

ROWBLOCK_CHUNKS = 4  # chunk sizes tried per lane layout (the smallest: every lane tile reads every block again)
DMA_ROWS_MAX, DMA_OFF_MAX = 65535, (1 << 15) - 1


def block_geometry(w: Window, Rb: int, L: int) -> tuple[int, tuple] | None:
  """(copy tiles, classes) of Rb rows of a row window (rowwin._row_classes with Rb rows), or None
  when Rb is not a multiple of the classes' period."""
  c, P = w.rcoef, w.row_tiles
  m = L // math.gcd(c % L, L) if c % L else 1
  if Rb % m:
    return None
  D = P - c // L
  classes = tuple((h, v, -(-(Rb - i) // m)) for i, (h, v, _) in enumerate(w.classes[:m]))
  return (c * (Rb - 1)) // L + D * (Rb - 1) + P, classes


class RowBlocks:
  def plan_row_blocks(self, uses: dict, forms: dict) -> bool:
    """The cheapest chunk plan whose row windows, streamed by blocks of their range, fit; False when
    none does."""
    L, V = self.L, self.cfg.VMEM_TILES
    reads = {s: w.read for s, w in self.windows.items()}
    best = None
    for blk in [None] + self.block_candidates():
      self.block = blk
      if blk is not None:
        for w in self.windows.values():
          w.read = w.read or w.written  # blocked lanes' output: read-modify-write (lanes.py)
      T = lane_count(self) // L if blk is not None else -(-self.G // L)
      gp = np.arange(T * L, dtype=np.int64)
      sizes = sorted(self.block_chunks(blk[1]))[:ROWBLOCK_CHUNKS] if blk is not None else \
        [1 << k for k in range(ROWBLOCK_CHUNKS) if 1 << k <= min(T, CHUNK_MAX)]
      for C in sizes:
        nc = -(-T // C)
        if nc < 2:
          continue
        plan = self._windows(C, nc, forms, uses, gp, tables=True, rowblocks=True)
        sets = 1 if blk is not None or any(w.step and w.read and w.written and w.tiles > abs(w.step) for w in plan.values()) else 2
        got = self._block_rows(plan, nc, sets, V)
        if got is not None and (best is None or got < best[0]):
          best = (got, blk, plan, C, nc, sets)
      for s, w in self.windows.items():
        w.read = reads[s]
    self.block = None
    if best is None:
      return False
    _, self.block, plan, C, nc, sets = best
    if self.block is not None:
      for w in self.windows.values():
        w.read = w.read or w.written
    self._adopt(plan, C, nc, sets)
    return True

  def _block_rows(self, plan: dict, nc: int, sets: int, V: int) -> int | None:
    """Block the row windows of one range (the one whose rows take most VMEM) in place: the largest
    block that fits; the plan's estimated cycles, or None when no block fits."""
    L = self.L
    loops = {}
    for w in plan.values():
      r = w.rrange
      if w.rows and w.vstarts is None and not w.rfused and r is not None and r not in self.unrolled and _cint(r.src[0]) is not None \
          and r.vmin == 0:
        loops.setdefault(r, []).append(w)
    if not loops:
      return None
    rng, ws = max(loops.items(), key=lambda kv: sum(w.tiles for w in kv[1]))
    R = _cint(rng.src[0])
    U = self.partial[rng][1] if rng in self.partial else 1
    fixed = sum(w.tiles * (sets if w.streamed else 1) for w in plan.values() if all(w is not x for x in ws))
    fixed += table_tiles(plan, nc, L) + 1 + SPILL_RESERVE
    for Rb in sorted((d for d in range(1, R + 1) if R % d == 0), reverse=True):
      geos = [block_geometry(w, Rb, L) for w in ws]
      if Rb % U or any(g is None for g in geos) or any(n > DMA_ROWS_MAX for g in geos for _, _, n in g[1]):
        continue
      if fixed + 2 * sum(g[0] for g in geos) > V or fixed + 2 * sum(g[0] for g in geos) > DMA_OFF_MAX:
        continue
      for w, (tiles, classes) in zip(ws, geos):
        w.block, w.tiles, w.classes, w.resident = Rb, tiles, classes, False
      dma = sum(R * w.row_tiles for w in ws)  # per lane tile
      streamed = sum(w.tiles * nc for w in plan.values() if w.streamed)
      lane_tiles = lane_count(self) // L if self.block is not None else -(-self.G // L)
      return lane_tiles * (dma + self.cfg.HBM_LATENCY + R * 4) + streamed
    return None

  # --- the block loop ---------------------------------------------------------------------------
  def rb_windows(self, u: UOp) -> list[Window]:
    return [w for w in getattr(self, "windows", {}).values() if w.block and w.rrange is u] if getattr(self, "chunked", False) else []

  def rb_range(self, u: UOp) -> bool:
    """The RANGE of a row window's blocks: the block loop around a loop of Rb steps; False for others.
    Per window three registers live through the loop: the next block's HBM tile, the rebase and
    the other copy's offset; the prefetch needs one temporary, so induction registers of the loop
    (set at the variable's LI, after block 0's DMAs) still find a register."""
    ws = self.rb_windows(u)
    if not ws:
      return False
    L, Rb = self.L, ws[0].block
    nb = _cint(u.src[0]) // Rb
    left = self.sreg("row blocks left", temp=False)
    self.ins("LI", SR(left), nb - 1)
    if not hasattr(self, "rb_regs"):
      self.rb_regs = {}
    for w in ws:
      h, rb, oc = (self.sreg(why, temp=False) for why in ("row block HBM address", "row block pointer", "row block other copy"))
      t = self.chunk_offset(w, False)  # the chunk's start minus chunk 0's, in tiles
      self.ins("LI", SR(h), HbmAddr(w.slot, w.lo))
      self.ins("SADD", SR(h), SR(h), SR(t))
      k = self.sreg("shift")
      self.ins("LI", SR(k), L.bit_length() - 1)
      self.ins("SSHL", SR(rb), SR(t), SR(k))
      self.ins("SSUB", SR(rb), SR(0), SR(rb))
      self.ins("LI", SR(oc), w.tiles)
      self.row_dmas(w, 0, h)
      self.ins("SADDI", SR(h), SR(h), w.rcoef * Rb // L)
      self.free_temps()
      self.rb_regs[id(w)] = (h, rb, oc)
    var = self.sreg("loop variable", temp=False)
    end, outer = self.label(), self.label()
    start = len(self.code)
    self.ins("LI", SR(var), 0)
    step = self.partial[u][1] if u in self.partial else 1
    self.ins("LOOPI" if nb <= LOOPI_MAX else "LOOP", nb if nb <= LOOPI_MAX else SR(self.scalar(Const(nb, dtypes.int32))), outer)
    skip = self.label() + LAST_SKIP
    self.ins("BEQ", SR(left), SR(0), skip)
    for w in ws:  # the next block into the other copy
      h, _, oc = self.rb_regs[id(w)]
      self.row_dmas(w, oc, h)
    self.free_temps()
    self.code.append(Label(skip))
    n = Rb // step
    if n > LOOPI_MAX:
      cnt = self.sreg("loop count")
      self.ins("LI", SR(cnt), n)
      self.ins("LOOP", SR(cnt), end)
    else:
      self.ins("LOOPI", n, end)
    size = lambda w: w.row_tiles * L + w.rcoef % L  # noqa: E731  (the row pitch, stream.row_form)
    self.loops.append(OpenLoop(u, end, var, start, step=step, stepped=[(self.rb_regs[id(w)][1], size(w)) for w in ws]))
    self.rb_open = (ws, left, outer)
    self.vals[u] = SReg(var)
    return True

  def rb_address(self, w: Window, form, eb: int) -> tuple:
    """A read of a row window by blocks: the lane part in an index tile, the row term and the rebase
    in the window's pointer (rebase + pitch * the loop variable), the rest in the immediate."""
    regs = getattr(self, "rb_regs", {}).get(id(w))
    lp = next((lp for lp in self.loops if lp.rng is w.rrange), None)
    if regs is None or lp is None:
      raise NotImplementedError(f"TINYTPU kernel {self.name}: buffer {w.slot}'s rows by blocks read outside the loop of their range")
    size = w.row_tiles * self.L + w.rcoef % self.L
    rest = [(c, t) for c, t in form[2] if not (t is w.rrange and c == size)]
    if len(rest) != len(form[2]) - 1:
      raise AssertionError(f"TINYTPU kernel {self.name}: a row-block access has no {size} * range term")
    base = regs[1]
    if rest:
      base = self.sreg("gather base")
      self.ins("SADDI", SR(base), SR(regs[1]), 0)
      for c, t in rest:
        tmp = self.sreg("address term")
        self.ins("SMUL", SR(tmp), SR(self.scalar_expr(t)), SR(self.scalar(Const(c, dtypes.int32))))
        self.ins("SADD", SR(base), SR(base), SR(tmp))
    return "elem", self.lane_affine(form[0]), Mem(base, eb + form[1] + size * lp.copy)

  def rb_end(self, u: UOp) -> bool:
    """After the inner loop's END: every window's next block (HBM rows, copy, rebase), the block
    loop's end; False when u is not a block loop's range."""
    if not self.rb_windows(u):
      return False
    ws, left, outer = self.rb_open
    L = self.L
    k = self.sreg("shift")
    self.ins("LI", SR(k), L.bit_length() - 1)
    for w in ws:
      h, rb, oc = self.rb_regs.pop(id(w))
      size = w.row_tiles * L + w.rcoef % L
      d = self.sreg("copy delta")  # the rebase moves by (other copy - this copy) * L = (2 * oc - tiles) * L
      self.ins("SADD", SR(d), SR(oc), SR(oc))
      self.ins("SADDI", SR(d), SR(d), -w.tiles)
      self.ins("SSHL", SR(d), SR(d), SR(k))
      self.ins("SADD", SR(rb), SR(rb), SR(d))
      self.ins("SADDI", SR(rb), SR(rb), -size * w.block)
      self.ins("LI", SR(d), w.tiles)
      self.ins("SSUB", SR(oc), SR(d), SR(oc))
      self.ins("SADDI", SR(h), SR(h), w.rcoef * w.block // L)
      for r in (h, rb, oc):
        self.release(r)
    self.ins("SADDI", SR(left), SR(left), -1)
    self.code.append(Label(outer))
    self.release(left)
    self.rb_open = None
    return True
