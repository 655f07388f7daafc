"""Row windows by blocks (a mixin of Lowering): a buffer read row by row whose rows do not fit in
VMEM even for one lane tile streams them by blocks of its range's loop.

An fp32 `(4, 784) @ (784, 100)` on the VPU reads `W[k * 100 + n]`: per lane tile one row of W per
value of k, 784 rows of 2 tiles, more than a 1024-tile VMEM holds. A convolution's weight gradient
reads `x[b * 65536 + ci * 4096 + (oy + ky) * 64 + ox + kx]`: per value of oy one row (the lanes'
ky, kx and the inner loop's ox), inside a loop over the images b. rowwin.block_rows finds the
rows (the innermost reduce range r with a term c * r, c >= L); the terms of the loops around r's
(`outer`, b above) are known when r's loop starts.

The row window keeps the lane chunker's start (a step or a table, windows.py) but holds Rb rows,
two copies: r's loop becomes a block loop around a loop of Rb steps (fewer in a last, partial
block), and block k + 1's rows (one 2-D DMA per class of rows, rowwin.row_layout) stream in while
block k is reduced. Block k starts at element E = L * (chunk start) + outer terms + c * k * Rb of
the buffer: its rows come from HBM tile E // L on, and sit E mod L elements into the copy's rows.
When that shift can be other than 0 (an outer coefficient or c * Rb not whole tiles) the rows
take up to L - 1 elements more (one more tile, sometimes).

An access keeps the row form (stream.row_form: r's coefficient is the row pitch `P * L + c mod L`)
and the window's element base; its register is the window's pointer

    copy * tiles * L - (chunk start - chunk 0's start) * L + E mod L + pitch * (r - k * Rb)

stepped by the pitch with the loop variable and moved at every block's end. The outer terms are
in the pointer, the other uniform terms in the access. Every lane tile of a chunk reads its blocks
again: the planner tries chunks of a few lane tiles, with and without blocked lanes (lanes.py),
and takes the plan of least estimated cost."""
from __future__ import annotations

import numpy as np
from tinygrad.dtype import dtypes
from tinygrad.uop.ops import UOp

from tinytpu.backend.optable import _cint
from tinytpu.backend.records import Const
from tinytpu.backend.rowwin import ROW_TILES_MAX, ROWS_MAX, row_layout
from tinytpu.backend.stream import CHUNK_MAX, SPILL_RESERVE, HbmAddr
from tinytpu.backend.vcode import SR, Mem
from tinytpu.backend.windows import Window, lane_count, table_tiles

ROWBLOCK_CHUNKS = 4  # chunk sizes tried per lane layout (the smallest: every lane tile reads every block again)
DMA_OFF_MAX = (1 << 15) - 1  # VMEM offsets of the DMAs: 16-bit immediates


def block_geometry(w: Window, Rb: int, L: int) -> tuple | None:
  """A block of Rb rows of a window to block: (row tiles, classes, copy tiles, HBM and VMEM class
  strides), with room for a shift into the first tile when blocks or outer terms can start
  inside one; None when a row or a class is too long for a DMA."""
  c = w.rcoef
  m = L // int(np.gcd(c % L, L)) if c % L else 1
  shifted = any(cc % L for cc, _ in w.outer) or (c * Rb) % L and -(-w.rows // Rb) > 1
  geo = row_layout(c, w.span + (L - 1 if shifted else 0), Rb, L)
  if geo[0] > ROW_TILES_MAX or -(-Rb // m) > ROWS_MAX:
    return None
  return geo


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
    """Block the rows of one range (the one whose rows take most VMEM) in place: the largest block
    that fits; the plan's estimated cycles, or None when none fits (or a window has rows of another
    range: one block loop per kernel)."""
    L = self.L
    ws = [w for w in plan.values() if w.span >= 0]
    if not ws or len({id(w.rrange) for w in ws}) > 1:
      return None
    rng = ws[0].rrange
    R = _cint(rng.src[0])
    U = self.partial[rng][1] if rng in self.partial else 1
    fixed = sum(w.tiles * (sets if w.streamed else 1) for w in plan.values() if w.span < 0)
    fixed += table_tiles(plan, nc, L) + 1 + SPILL_RESERVE
    for Rb in range(R - R % U, 0, -U):
      geos = [block_geometry(w, Rb, L) for w in ws]
      if any(g is None for g in geos):
        continue
      foot = fixed + 2 * sum(g[2] for g in geos)
      if foot > V or foot > DMA_OFF_MAX:
        continue
      nb = -(-R // Rb)
      for w, (P, classes, tiles, hs, vs) in zip(ws, geos):
        w.block, w.row_tiles, w.classes, w.tiles, w.rstride, w.vstride, w.resident = Rb, P, classes, tiles, hs, vs, False
        size_t = self.windows[w.slot].tiles
        starts = np.asarray(w.starts if w.starts is not None else [w.lo + w.step * k for k in range(nc)])
        top = sum(cc * t.vmax for cc, t in w.outer) + w.rcoef * (nb - 1) * Rb  # the last block's rows: Rb of them, past R too
        last = int(starts.max()) + top // L + max(h + (n - 1) * hs for h, _, n in classes) + P
        w.over = (max(0, -int(starts.min())), max(0, last - size_t))
      dma = sum(R * w.row_tiles for w in ws)  # per lane tile
      streamed = sum(w.tiles * nc for w in plan.values() if w.streamed)
      lane_tiles = lane_count(self) // L if self.block is not None else -(-self.G // L)
      return lane_tiles * (dma + nb * 8 + self.cfg.HBM_LATENCY + R * 4) + streamed
    return None

  # --- the block loop ---------------------------------------------------------------------------
  def rb_windows(self, u: UOp) -> list[Window]:
    return [w for w in self.windows.values() if w.block and w.rrange is u] if getattr(self, "chunked", False) else []

  def _rb_hbm(self, w: Window, E: int, ahead: int = 0) -> int:
    """A temporary holding the HBM tile of the block starting at element E (+ ahead) of the buffer."""
    h, k = self.sreg("row block HBM tile"), self.sreg("shift")
    if ahead:
      self.ins("SADDI", SR(h), SR(E), ahead)
      E = h
    self.ins("LI", SR(k), self.L.bit_length() - 1)
    self.ins("SSRA", SR(h), SR(E), SR(k))
    a = self.sreg("HBM address")
    self.ins("LI", SR(a), HbmAddr(w.slot, 0))
    self.ins("SADD", SR(h), SR(h), SR(a))
    return h

  def rb_range(self, u: UOp) -> bool:
    """The RANGE of a row window's blocks: the block loop around a loop of Rb steps; False for others.
    Per window three registers live through the loop: the block's first element E, the pointer and
    the other copy's offset."""
    ws = self.rb_windows(u)
    if not ws:
      return False
    L, Rb, R = self.L, ws[0].block, _cint(u.src[0])
    shift = L.bit_length() - 1
    left = self.block_left(-(-R // Rb))
    for w in ws:
      E, pw, oc = (self.sreg(why, temp=False) for why in ("row block element", "row block pointer", "row block other copy"))
      t = self.chunk_offset(w, False)  # the chunk's start minus chunk 0's, in tiles
      k = self.sreg("shift")
      self.ins("LI", SR(k), shift)
      self.ins("SSHL", SR(t), SR(t), SR(k))
      self.ins("LI", SR(E), w.lo * L)
      self.ins("SADD", SR(E), SR(E), SR(t))
      for cc, r in w.outer:  # the loops around: their terms move the rows
        v = self.value(r)
        if isinstance(v, Const):
          self.ins("SADDI", SR(E), SR(E), cc * int(v.val))
          continue
        p = self.sreg("outer term")
        self.ins("LI", SR(p), cc)
        self.ins("SMUL", SR(p), SR(v.reg), SR(p))
        self.ins("SADD", SR(E), SR(E), SR(p))
      self.ins("LI", SR(k), L - 1)
      self.ins("SAND", SR(pw), SR(E), SR(k))
      self.ins("SSUB", SR(pw), SR(pw), SR(t))
      self.ins("LI", SR(oc), w.tiles)
      self.row_dmas(w, 0, self._rb_hbm(w, E))
      self.free_temps()
      self.rb_regs[id(w)] = (E, pw, oc)

    def prefetch():
      for w in ws:  # the next block into the other copy
        E, _, oc = self.rb_regs[id(w)]
        self.row_dmas(w, oc, self._rb_hbm(w, E, w.rcoef * Rb))
    size = lambda w: w.row_tiles * L + w.rcoef % L  # noqa: E731  (the row pitch, stream.row_form)
    outer = self.block_loop_open(u, left, R, Rb, prefetch, stepped=[(self.rb_regs[id(w)][1], size(w)) for w in ws])
    self.rb_open = (ws, left, outer)
    return True

  def rb_address(self, w: Window, form, eb: int) -> tuple:
    """A read of a row window by blocks: the lane part in an index tile, the row term, the outer
    terms and the block's shift in the window's pointer, the other uniform terms added to it."""
    regs = self.rb_regs.get(id(w))
    lp = next((lp for lp in self.loops if lp.rng is w.rrange), None)
    if regs is None or lp is None:
      raise NotImplementedError(f"TINYTPU kernel {self.name}: buffer {w.slot}'s rows by blocks read outside the loop of their range")
    size = w.row_tiles * self.L + w.rcoef % self.L
    rest = [(c, t) for c, t in form[2] if not (t is w.rrange and c == size) and (c, t) not in w.outer]
    if len(rest) != len(form[2]) - 1 - len(w.outer):
      raise AssertionError(f"TINYTPU kernel {self.name}: a row-block access lacks its {size} * range term or an outer term")
    base, off = regs[1], eb + form[1] + size * lp.copy
    for c, t in rest:
      v = self.vals.get(t)
      if isinstance(v, Const):
        off += c * int(v.val)
        continue
      if c == 1:
        reg, imm = self.scalar_expr(t), 0
      elif (ind := self.induction(c, t)) is not None:
        reg, imm = ind
      else:
        reg, imm = self.sreg("address term"), 0
        self.ins("SMUL", SR(reg), SR(self.scalar_expr(t)), SR(self.scalar(Const(c, dtypes.int32))))
      nb = self.sreg("gather base")
      self.ins("SADD", SR(nb), SR(base), SR(reg))
      base, off = nb, off + imm
    return "elem", self.lane_affine(form[0]), Mem(base, off)

  def rb_end(self, u: UOp) -> bool:
    """After the inner loop's END: every window's next block (its element, pointer and copy), the
    block loop's end; False when u is not a block loop's range."""
    if not self.rb_windows(u):
      return False
    ws, left, outer = self.rb_open
    L = self.L
    k = self.sreg("shift")
    self.ins("LI", SR(k), L.bit_length() - 1)
    live = []
    for w in ws:
      E, pw, oc = self.rb_regs.pop(id(w))
      live += [E, pw, oc]
      size = w.row_tiles * L + w.rcoef % L
      h0, h1, d = self.sreg("block tile"), self.sreg("next block tile"), self.sreg("copy delta")
      self.ins("SSRA", SR(h0), SR(E), SR(k))
      self.ins("SADDI", SR(E), SR(E), w.rcoef * w.block)
      self.ins("SSRA", SR(h1), SR(E), SR(k))
      self.ins("SSUB", SR(h1), SR(h1), SR(h0))
      self.ins("SSHL", SR(h1), SR(h1), SR(k))
      self.ins("SSUB", SR(pw), SR(pw), SR(h1))  # the shift into the rows' first tile moves by c * Rb - L * (tiles moved)
      self.ins("SADD", SR(d), SR(oc), SR(oc))  # the copy: (2 * other - tiles) * L further
      self.ins("SADDI", SR(d), SR(d), -w.tiles)
      self.ins("SSHL", SR(d), SR(d), SR(k))
      self.ins("SADD", SR(pw), SR(pw), SR(d))
      self.ins("SADDI", SR(pw), SR(pw), (w.rcoef - size) * w.block)
      self.ins("LI", SR(d), w.tiles)
      self.ins("SSUB", SR(oc), SR(d), SR(oc))
    self.block_loop_close(left, outer)
    for r in live:  # live until the block loop ends: the next window's temporaries must not take them
      self.release(r)
    self.rb_open = None
    return True
