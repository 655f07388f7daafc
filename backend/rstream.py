"""Streaming a reduce loop (a mixin of Lowering): a buffer whose every lane tile reads a long run
per lane (a row-wise sum of long rows: `x[g * S + r]`, tinygrad's first stage of a large sum) is
brought in by blocks of the reduce range instead of by chunks of the lane loop.

Per lane tile and per block of Rb steps of the reduce range r, the window is L rows (one per lane:
HBM tile `(S * g + c) / L`, rows S / L tiles apart) of `c_r * Rb / L` tiles: one DMA.IN with
DMA.CFG rows = L. Two copies: block k + 1 streams in while block k is reduced. A lane reads its
row through a per-copy index tile `(g - g_tile) * T * L` and a scalar base `c_r * r + rebase`
(the rebase register: copy offset minus `c_r * k * Rb`). Lanes past G (clamped to G - 1) read the
row of G - 1, so tails are exact. The loop variable runs on across blocks (its induction
registers too): block k's inner loop is steps k * Rb .. (k + 1) * Rb - 1 of the original loop."""
from __future__ import annotations

import dataclasses

import numpy as np
from tinygrad.dtype import dtypes
from tinygrad.uop.ops import Ops, UOp

from tinytpu.backend.optable import LOOPI_MAX, _cint
from tinytpu.backend.records import Const, OpenLoop, SReg
from tinytpu.backend.stream import LAST_SKIP, SPILL_RESERVE, HbmAddr
from tinytpu.backend.vcode import SR, VT, Label, Mem


@dataclasses.dataclass
class RStream:
  slot: int
  rng: UOp
  c_r: int        # the reduce range's coefficient in the index
  S: int          # elements between the rows of consecutive g
  off: int        # HBM tile of g = 0's row at r = 0 (within the buffer)
  const: int = 0  # the smallest constant term of the buffer's indices (the others are within c_r of it)
  Rb: int = 0     # reduce steps per block
  T: int = 0      # tiles per row of a block
  base: int = 0   # VMEM tile of copy 0 (copy 1 follows at base + L * T)


class ReduceStream:
  def plan_reduce_stream(self, uses: dict, forms: dict) -> bool:
    """Stream one read-only buffer by reduce blocks when the rest of the kernel fits whole."""
    L, V = self.L, self.cfg.VMEM_TILES
    if self.symbolic or self.lane_reduces or self.prefix or self.dots:
      return False
    g = np.arange(self.G, dtype=np.int64)
    rv = {r: (g // s) % e if i else g // s for i, (r, s, e) in enumerate(zip(self.lane_ranges, self.strides, self.extents))}
    cands = []
    for slot, e in uses.items():
      fs = forms.get(slot)
      if e["written"] or not fs:
        continue
      f0 = fs[0]
      k0 = min(f[1] for f in fs)
      same = lambda f: 0 <= f[1] - k0 < max(1, f0[2][0][0] if f0[2] else 1) and len(f[2]) == len(f0[2]) == 1 and f[2][0][0] == f0[2][0][0] and f[2][0][1] is f0[2][0][1] \
        and len(f[0]) == len(f0[0]) and all(k2 is k and c2 == c for (k, c), (k2, c2) in zip(f0[0].items(), f[0].items()))  # noqa: E731
      if not all(same(f) for f in fs) or any(k not in rv for k in f0[0]):
        continue
      c_r, rng = f0[2][0]
      if rng.op is not Ops.RANGE or rng in self.lane_ranges or _cint(rng.src[0]) is None or c_r <= 0:
        continue
      lane = np.zeros(self.G, dtype=np.int64)
      for k, c in f0[0].items():
        lane += c * rv[k]
      S = int(lane[1] - lane[0]) if self.G > 1 else L
      base = int(lane[0]) + k0
      if S <= 0 or S % L or base % L or base < 0 or not (lane == lane[0] + S * g).all():
        continue
      cands.append(RStream(slot, rng, c_r, S, base // L, k0))
    if len(cands) != 1:
      return False
    rs = cands[0]
    R = _cint(rs.rng.src[0])
    U = self.partial[rs.rng][1] if rs.rng in self.partial else 1
    if rs.rng in self.unrolled:
      return False
    fixed = sum(w.tiles for s, w in self.windows.items() if s != rs.slot)
    divisors = {d for i in range(1, int(R ** 0.5) + 1) if R % i == 0 for d in (i, R // i)}
    for Rb in sorted(divisors, reverse=True):
      T = rs.c_r * Rb // L
      if Rb % U or (rs.c_r * Rb) % L or not 1 <= T <= 255:
        continue
      if fixed + 2 * L * T + 1 + SPILL_RESERVE <= V:
        rs.Rb, rs.T = Rb, T
        break
    else:
      return False
    t = 0
    for s, w in self.windows.items():
      if s != rs.slot:
        w.base, t = t, t + w.tiles
    w = self.windows[rs.slot]
    size_t = w.tiles
    rs.base, w.base, w.tiles, w.resident = t, t, 2 * L * rs.T, False
    t += 2 * L * rs.T
    last = rs.off + rs.S // L * (-(-self.G // L) * L - 1) + rs.c_r * R // L
    w.over = (0, max(0, last - size_t))
    for b in self.bufs.values():
      b.base = self.windows[b.slot].base * L
    self.const_base = t * L
    self.first_tile = self.spill_base = t + 1
    self.rstream = rs
    return True

  def rs_range(self, u: UOp) -> bool:
    """The streamed reduce range's RANGE: the block loop around the original loop; False for others."""
    rs = getattr(self, "rstream", None)
    if rs is None or u is not rs.rng:
      return False
    L = self.L
    var = self.sreg("loop variable", temp=False)
    end, outer = self.label(), self.label()
    start = len(self.code)
    self.ins("LI", SR(var), 0)
    step = self.partial[u][1] if u in self.partial else 1
    h, rb, cp, left = (self.sreg(w, temp=False) for w in ("stream row", "stream rebase", "stream copy", "stream blocks"))
    self.rs_regs = (h, rb, cp, left)
    self.ins("LI", SR(h), HbmAddr(rs.slot, rs.off + rs.S * self.t_off))
    if self.s_g0:
      k = self.sreg("row stride")
      self.ins("LI", SR(k), rs.S // L)
      self.ins("SMUL", SR(k), SR(self.s_g0), SR(k))
      self.ins("SADD", SR(h), SR(h), SR(k))
    for r in (rb, cp):
      self.ins("LI", SR(r), 0)
    nb = _cint(u.src[0]) // rs.Rb
    self.ins("LI", SR(left), nb - 1)
    c = lambda v: self.tile(Const(v, dtypes.int32), dtypes.int32)  # noqa: E731
    row, sp = VT("row"), VT("g0")
    self.ins("VSPLAT", sp, SR(self.s_g0))
    self.ins("VSUB", row, self.g, sp)
    if self.t_off:
      self.ins("VSUB", row, row, c(self.t_off * L))
    self.ins("VMUL", row, row, c(rs.T * L))
    self.rs_row = row
    self.rs_block(0, h, 0)
    self.ins("LOOPI" if nb <= LOOPI_MAX else "LOOP", nb if nb <= LOOPI_MAX else SR(self.scalar(Const(nb, dtypes.int32))), outer)
    skip = self.label() + LAST_SKIP
    self.ins("BEQ", SR(left), SR(0), skip)
    v, hn = self.sreg("other copy"), self.sreg("next row")
    self.ins("LI", SR(v), L * rs.T)
    self.ins("SSUB", SR(v), SR(v), SR(cp))
    self.ins("SADDI", SR(hn), SR(h), rs.T)
    self.rs_block(v, hn, rs.base)
    self.code.append(Label(skip))
    n = rs.Rb // step
    if n > LOOPI_MAX:
      cnt = self.sreg("loop count")
      self.ins("LI", SR(cnt), n)
      self.ins("LOOP", SR(cnt), end)
    else:
      self.ins("LOOPI", n, end)
    self.loops.append(OpenLoop(u, end, var, start, step=step))
    self.rs_outer = outer
    self.vals[u] = SReg(var)
    return True

  def rs_block(self, vreg: int, hreg: int, voff: int | None = None):
    """One block's L rows into the copy at [vreg + voff]."""
    rs = self.rstream
    st = self.sreg("row stride")
    self.ins("LI", SR(st), rs.S // self.L)
    self.ins("DMA.CFG", SR(st), self.L, rs.T)
    self.ins("DMA.IN", Mem(vreg, rs.base if voff is None or not vreg else voff), Mem(hreg, 0), rs.T)
    self.ins("DMA.CFG", SR(0), 1, 0)

  def rs_end(self):
    """After the inner loop's END: the next block's registers, the block loop's end."""
    rs, L = self.rstream, self.L
    h, rb, cp, left = self.rs_regs
    new, d = self.sreg("next copy"), self.sreg("copy delta")
    self.ins("SADDI", SR(h), SR(h), rs.T)
    self.ins("LI", SR(new), L * rs.T)
    self.ins("SSUB", SR(new), SR(new), SR(cp))
    self.ins("SSUB", SR(d), SR(new), SR(cp))
    k = self.sreg("shift")
    self.ins("LI", SR(k), L.bit_length() - 1)
    self.ins("SSHL", SR(d), SR(d), SR(k))
    self.ins("SADD", SR(rb), SR(rb), SR(d))
    self.ins("SADDI", SR(rb), SR(rb), -rs.c_r * rs.Rb)
    self.ins("SADDI", SR(cp), SR(new), 0)
    self.ins("SADDI", SR(left), SR(left), -1)
    self.code.append(Label(self.rs_outer))
    for r in self.rs_regs:
      self.release(r)
    self.rs_row = None

  def rs_address(self, buf, form) -> tuple:
    """A gather of the streamed buffer: its row index tile, base c_r * r + rebase."""
    rs = getattr(self, "rstream", None)
    _, rb, _, _ = self.rs_regs if getattr(self, "rs_row", None) is not None else (0, 0, 0, 0)
    c_r, r = form[2][0] if form is not None and form[2] else (None, None)
    if r is not rs.rng or not rb:
      raise NotImplementedError(f"TINYTPU kernel {self.name}: a streamed reduce buffer read outside its reduce loop")
    t = self.sreg("streamed address")
    d = form[1] - rs.const  # within the row: 0 <= d < c_r
    if c_r == 1:
      self.ins("SADD", SR(t), SR(self.scalar_expr(r)), SR(rb))
      return "elem", self.rs_row, Mem(t, buf.base + d)
    if (ind := self.induction(c_r, r)) is not None:
      self.ins("SADD", SR(t), SR(ind[0]), SR(rb))
      return "elem", self.rs_row, Mem(t, buf.base + d + ind[1])
    k = self.sreg("address term")
    self.ins("LI", SR(k), c_r)
    self.ins("SMUL", SR(t), SR(self.scalar_expr(r)), SR(k))
    self.ins("SADD", SR(t), SR(t), SR(rb))
    return "elem", self.rs_row, Mem(t, buf.base + d)
