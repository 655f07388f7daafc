"""Streaming a reduce loop (a mixin of Lowering): buffers whose every lane tile reads a long run
per lane (a row-wise sum of long rows: `x[g * S + r]`, tinygrad's first stage of a large sum; a
row-wise dot product `x[g * S + r] * y[g * S' + r]`, einsum's `ij...,ij...->ij`) are brought in
by blocks of the reduce range instead of by chunks of the lane loop.

A lane g = t * L + j (lane j of lane tile t) reads the row starting at element `A * t + s * j + B`
(A whole tiles; `x[g * S + r]` is A = S * L, s = S; a weight gradient's `x[i * S + r]
* dy[o * S + r]` has s = S, A = 0 for x and s = 0, A = S for dy, whose row every lane shares).
Per lane tile and per block of Rb steps of the reduce range r, a buffer's window is its rows (L
rows, or one when s = 0) of T tiles: `c_r * Rb / L`, one more when rows start mid-tile. Rows s / L
whole tiles apart (and B at a tile) are one DMA.IN with DMA.CFG rows; otherwise lane j's row starts
(B + s * j) mod L elements into its tile, the lanes fall into m = L / gcd(s, L) classes (j mod m)
whose rows are whole tiles apart, one 2-D DMA each, and a lane finds its row's offset in a table
tile (`RPart.table`: j * T * L + its shift). Rb is the largest block that fits; when it does not
divide the extent (rows of 1000 fp32 have no divisor of whole tiles) the last block is shorter.
Two copies: block k + 1 streams in while block k is reduced. A lane reads its row through a
per-copy index tile `j * T * L` (0 when the row is shared) and a scalar base `c_r * r + rebase`
(the rebase register: copy offset minus `c_r * k * Rb`). Lanes past G (clamped to G - 1) read
the row of G - 1: their stores of its value are exact. Every streamed buffer of the kernel shares the range and the
block size (their blocks switch copies together); each has its own row, rebase and copy
registers. The loop variable runs on across blocks (its induction registers too): block k's
inner loop is steps k * Rb .. (k + 1) * Rb - 1 of the original loop."""
from __future__ import annotations

import dataclasses
import math

import numpy as np
from tinygrad.dtype import dtypes
from tinygrad.uop.ops import Ops, UOp

from tinytpu.backend.optable import _cint
from tinytpu.backend.records import Const
from tinytpu.backend.stream import SPILL_RESERVE, HbmAddr
from tinytpu.backend.vcode import SR, VT, Mem


@dataclasses.dataclass
class RPart:
  """One buffer streamed by reduce blocks."""
  slot: int
  c_r: int        # the reduce range's coefficient in the index
  s: int          # elements between the rows of consecutive lanes of a lane tile (0: one shared row)
  A: int          # elements between the first rows of consecutive lane tiles
  off: int        # HBM tile of g = 0's row at r = 0 (within the buffer)
  const: int = 0  # the smallest constant term of the buffer's indices (the others are within c_r of it)
  shift: int = 0  # g = 0's row starts this many elements into its tile (rows not whole tiles apart: classes)
  T: int = 0      # tiles per row of a block
  base: int = 0   # VMEM tile of copy 0 (copy 1 follows at base + rows * T)
  table: int = 0  # classes: VMEM tile of the lanes' row offsets in a copy (lane j: j * T * L + its shift)
  regs: tuple = ()  # while the block loop is open: row, rebase and copy registers, the row index tile

  def rows(self, L: int) -> int:
    return L if self.s else 1

  def period(self, L: int) -> int:
    """Lanes per class: lane j's row starts (shift + j * s) mod L into its tile, which repeats every
    m = L / gcd(s, L) lanes (1: rows whole tiles apart and g = 0's at a tile's start)."""
    return L // math.gcd(self.s % L, L) if self.s % L else 1

  def lane_rows(self, L: int) -> list[tuple[int, int]]:
    """(HBM tile from g = 0's, shift into it) of every lane's row."""
    return [((self.shift + j * self.s) // L, (self.shift + j * self.s) % L) for j in range(self.rows(L))]

  def classes(self, L: int) -> list[tuple[int, int, int]]:
    """One 2-D DMA per class of lanes (j mod m): (HBM tile offset, VMEM row, rows); rows s * m / L
    tiles apart in HBM, m rows of T tiles apart in VMEM."""
    m, rows = self.period(L), self.lane_rows(L)
    return [(rows[i][0], i, -(-(self.rows(L) - i) // m)) for i in range(min(m, self.rows(L)))]


@dataclasses.dataclass
class RStream:
  rng: UOp
  parts: list[RPart]
  Rb: int = 0     # reduce steps per block

  def part(self, slot: int) -> RPart | None:
    return next((p for p in self.parts if p.slot == slot), None)


class ReduceStream:
  def _rs_part(self, slot: int, fs: list, rv: dict, g) -> tuple[UOp, RPart] | None:
    """The buffer's reduce range and its rows, when every index of it is `lane part + c_r * r + k`
    with the lane part `A * t + s * j` (rows whole tiles apart) and the constants within one step of r."""
    L = self.L
    f0 = fs[0]
    k0 = min(f[1] for f in fs)
    same = lambda f: 0 <= f[1] - k0 < max(1, f0[2][0][0] if f0[2] else 1) and len(f[2]) == len(f0[2]) == 1 and f[2][0][0] == f0[2][0][0] and f[2][0][1] is f0[2][0][1] \
      and len(f[0]) == len(f0[0]) and all(k2 is k and c2 == c for (k, c), (k2, c2) in zip(f0[0].items(), f[0].items()))  # noqa: E731
    if not all(same(f) for f in fs) or any(k not in rv for k in f0[0]):
      return None
    c_r, rng = f0[2][0]
    if rng.op is not Ops.RANGE or rng in self.lane_ranges or _cint(rng.src[0]) is None or c_r <= 0:
      return None
    lane = np.zeros(self.G, dtype=np.int64)
    for k, c in f0[0].items():
      lane += c * rv[k]
    sj = int(lane[1] - lane[0]) if self.G > 1 else 0
    A = int(lane[L] - lane[0]) if self.G > L else 0
    base = int(lane[0]) + k0
    if sj < 0 or A < 0 or A % L or base < 0 or not (lane == lane[0] + A * (g // L) + sj * (g % L)).all():
      return None
    return rng, RPart(slot, c_r, sj, A, base // L, k0, shift=base % L)

  def plan_reduce_stream(self, uses: dict, forms: dict) -> bool:
    """Stream the read-only buffers of one reduce range by its blocks when the rest of the kernel
    fits whole."""
    L = self.L
    if self.symbolic or self.lane_reduces or self.prefix or self.dots:
      return False
    g = np.arange(self.G, dtype=np.int64)
    rv = {r: (g // s) % e if i else g // s for i, (r, s, e) in enumerate(zip(self.lane_ranges, self.strides, self.extents))}
    groups: dict = {}
    for slot, e in uses.items():
      if not e["written"] and forms.get(slot) and (c := self._rs_part(slot, forms[slot], rv, g)) is not None:
        groups.setdefault(c[0], []).append(c[1])
    # the range whose buffers are largest first: the others' buffers stay whole
    order = sorted(groups.items(), key=lambda kv: -sum(self.windows[p.slot].tiles for p in kv[1]))
    for rng, parts in order:
      if (rs := self._rs_blocks(rng, parts)) is not None:
        break
    else:
      return False
    t = 0
    for s, w in self.windows.items():
      if rs.part(s) is None:
        w.base, t = t, t + w.tiles
    R = _cint(rng.src[0])
    for p in rs.parts:
      w = self.windows[p.slot]
      size_t = w.tiles
      n = p.rows(L) * p.T
      p.base, w.base, w.tiles, w.resident = t, t, 2 * n, False
      t += 2 * n
      # the last block of the last lane tile's rows (a shorter last block's DMA still moves Rb steps)
      last = p.off + p.A // L * (-(-self.G // L) - 1) + max(h for h, _ in p.lane_rows(L)) + p.c_r * (-(-R // rs.Rb) - 1) * rs.Rb // L + p.T
      w.over = (0, max(0, last - size_t))
    for p in rs.parts:
      if p.s and (p.period(L) > 1 or p.shift):  # the lanes' row offsets: not j * T * L
        p.table, t = t, t + 1
        self.init_tables[p.table] = [j * p.T * L + sh for j, (_, sh) in enumerate(p.lane_rows(L))] + [0] * (L - p.rows(L))
    for b in self.bufs.values():
      b.base = self.windows[b.slot].base * L
    self.const_base = t * L
    self.first_tile = self.spill_base = t + 1
    self.rstream = rs
    return True

  def _rs_blocks(self, rng: UOp, parts: list[RPart]) -> RStream | None:
    """The largest block of the range (a divisor of its extent, whole tiles per row for every part)
    whose two copies of every part fit beside the kernel's other buffers."""
    L, V = self.L, self.cfg.VMEM_TILES
    R = _cint(rng.src[0])
    U = self.partial[rng][1] if rng in self.partial else 1
    if rng in self.unrolled:
      return None
    slots = {p.slot for p in parts}
    fixed = sum(w.tiles for s, w in self.windows.items() if s not in slots)
    tables = sum(1 for p in parts if p.s and (p.period(L) > 1 or p.shift))
    # the largest block that fits (a last, shorter one when it does not divide R: 1000 elements of
    # fp32 have no divisor of whole tiles)
    for Rb in range(R, 0, -1):
      # a row's block from its shift into the first tile (the same every block: c_r * Rb whole tiles)
      Ts = [-(-(max(sh for _, sh in p.lane_rows(L)) + p.c_r * Rb) // L) for p in parts]
      if Rb % U or any((p.c_r * Rb) % L or not 1 <= T <= 255 for p, T in zip(parts, Ts)):
        continue
      if fixed + 2 * sum(p.rows(L) * T for p, T in zip(parts, Ts)) + tables + 1 + SPILL_RESERVE <= V:
        for p, T in zip(parts, Ts):
          p.T = T
        return RStream(rng, parts, Rb)
    return None

  def rs_range(self, u: UOp) -> bool:
    """The streamed reduce range's RANGE: the block loop around the original loop; False for others."""
    rs = self.rstream
    if rs is None or u is not rs.rng:
      return False
    L, R = self.L, _cint(u.src[0])
    left = self.block_left(-(-R // rs.Rb))
    c = lambda v: self.tile(Const(v, dtypes.int32), dtypes.int32)  # noqa: E731
    rows: dict = {}  # T -> the lanes' row offsets in a copy
    for p in rs.parts:
      h, rb, cp = (self.sreg(w, temp=False) for w in ("stream row", "stream rebase", "stream copy"))
      self.ins("LI", SR(h), HbmAddr(p.slot, p.off + p.A // L * self.t_off))
      if self.s_g0 and p.A:  # + A / L tiles per lane tile before this one (s_g0 / L of them)
        k, q = self.sreg("row stride"), self.sreg("lane tile")
        self.ins("LI", SR(k), L.bit_length() - 1)
        self.ins("SSRA", SR(q), SR(self.s_g0), SR(k))
        self.ins("LI", SR(k), p.A // L)
        self.ins("SMUL", SR(k), SR(q), SR(k))
        self.ins("SADD", SR(h), SR(h), SR(k))
      for r in (rb, cp):
        self.ins("LI", SR(r), 0)
      key = (p.T, p.table) if p.s else ("one row", p.shift)
      if key not in rows:
        rows[key] = c(p.shift) if not p.s else VT(f"row{len(rows)}")  # the lanes' one row: shift elements into its first tile
        if p.s:  # lane j's row; lanes past G are clamped to G - 1 (self.g), read its row and store its value
          sp = VT("g0")
          self.ins("VSPLAT", sp, SR(self.s_g0))
          self.ins("VSUB", rows[key], self.g, sp)
          if self.t_off:
            self.ins("VSUB", rows[key], rows[key], c(self.t_off * L))
          if p.table:  # rows in classes: lane j's offset from the table
            self.ins("VGATHER", rows[key], rows[key], Mem(0, p.table * L))
          else:
            self.ins("VMUL", rows[key], rows[key], c(p.T * L))
      p.regs = (h, rb, cp, rows[key])
      self.rs_block(p, 0, h, 0)
    self.rs_left = left

    def prefetch():
      for p in rs.parts:
        h, _, cp, _ = p.regs
        v, hn = self.sreg("other copy"), self.sreg("next row")
        self.ins("LI", SR(v), p.rows(L) * p.T)
        self.ins("SSUB", SR(v), SR(v), SR(cp))
        self.ins("SADDI", SR(hn), SR(h), p.c_r * rs.Rb // L)  # the next block: c_r * Rb whole tiles on (T may hold one more)
        self.rs_block(p, v, hn, p.base)
    self.rs_outer = self.block_loop_open(u, left, R, rs.Rb, prefetch)
    return True

  def rs_block(self, p: RPart, vreg: int, hreg: int, voff: int | None = None):
    """One block's L rows of a part into the copy at [vreg + voff]."""
    b = p.base if voff is None or not vreg else voff
    if not p.s:  # the lanes' one row
      self.ins("DMA.IN", Mem(vreg, b), Mem(hreg, 0), p.T)
      return
    L, m = self.L, p.period(self.L)
    st = self.sreg("row stride")
    self.ins("LI", SR(st), p.s * m // L)
    for hoff, row, n in p.classes(L):  # one 2-D copy per class of lanes (one when rows are whole tiles apart)
      self.ins("DMA.CFG", SR(st), n, m * p.T)
      self.ins("DMA.IN", Mem(vreg, b + row * p.T), Mem(hreg, hoff), p.T)
    self.ins("DMA.CFG", SR(0), 1, 0)

  def rs_end(self):
    """After the inner loop's END: the next block's registers, the block loop's end."""
    rs, L = self.rstream, self.L
    k = self.sreg("shift")
    self.ins("LI", SR(k), L.bit_length() - 1)
    for p in rs.parts:
      h, rb, cp, _ = p.regs
      new, d = self.sreg("next copy"), self.sreg("copy delta")
      self.ins("SADDI", SR(h), SR(h), p.c_r * rs.Rb // L)
      self.ins("LI", SR(new), p.rows(L) * p.T)
      self.ins("SSUB", SR(new), SR(new), SR(cp))
      self.ins("SSUB", SR(d), SR(new), SR(cp))
      self.ins("SSHL", SR(d), SR(d), SR(k))
      self.ins("SADD", SR(rb), SR(rb), SR(d))
      self.ins("SADDI", SR(rb), SR(rb), -p.c_r * rs.Rb)
      self.ins("SADDI", SR(cp), SR(new), 0)
    self.block_loop_close(self.rs_left, self.rs_outer)
    for p in rs.parts:
      for r in p.regs[:3]:
        self.release(r)
      p.regs = ()

  def rs_address(self, buf, form) -> tuple:
    """A gather of a streamed buffer: its row index tile, base c_r * r + rebase."""
    rs = self.rstream
    p = rs.part(buf.slot)
    c_r, r = form[2][0] if form is not None and form[2] else (None, None)
    if r is not rs.rng or not p.regs:
      raise NotImplementedError(f"TINYTPU kernel {self.name}: a streamed reduce buffer read outside its reduce loop")
    _, rb, _, row = p.regs
    t = self.sreg("streamed address")
    d = form[1] - p.const  # within the row: 0 <= d < c_r
    if c_r == 1:
      self.ins("SADD", SR(t), SR(self.scalar_expr(r)), SR(rb))
      return "elem", row, Mem(t, buf.base + d)
    if (ind := self.induction(c_r, r)) is not None:
      self.ins("SADD", SR(t), SR(ind[0]), SR(rb))
      return "elem", row, Mem(t, buf.base + d + ind[1])
    k = self.sreg("address term")
    self.ins("LI", SR(k), c_r)
    self.ins("SMUL", SR(t), SR(self.scalar_expr(r)), SR(k))
    self.ins("SADD", SR(t), SR(t), SR(rb))
    return "elem", row, Mem(t, buf.base + d)
