"""Addresses (a mixin of Lowering): a load's or store's index as a whole tile, or as a gather's
index tile and element base; lane-affine index tiles, uniform address terms in scalar registers,
loop inductions, and the clamp that keeps a partly gated gather inside its buffer."""
from __future__ import annotations

from typing import Any

from tinygrad.dtype import dtypes
from tinygrad.uop.ops import Ops, UOp
from tinygrad.uop.symbolic import parse_valid

from tinytpu.backend.optable import _SALU, unsupported
from tinytpu.backend.records import Addr, Buf, Const, SReg
from tinytpu.backend.vcode import VT, Ins, Mem, SR, sregs


def _unfused(u: UOp, memo: dict) -> UOp:
  """u with every MULACC (our renderer's fused a * b + c, which tinygrad gives no bounds: the whole
  int32 range) written back as MUL and ADD, whose bounds tinygrad knows."""
  if u not in memo:
    src = tuple(_unfused(s, memo) for s in u.src)
    memo[u] = src[0] * src[1] + src[2] if u.op is Ops.MULACC else u.replace(src=src) if src != u.src else u
  return memo[u]


def _inside(idx: UOp, size: int, gate: UOp | None = None) -> bool:
  """Whether tinygrad's bounds of an index prove every value of it inside a buffer of size elements
  on the lanes where gate holds: each `X < c` / `X >= c` clause of the gate first narrows X to a
  variable of those bounds (a pad's `x[i * 9 + k]` under `i < 9 & k < 9` stays inside a 9 x 9
  buffer though i and k run to 15). A clause of another form bounds nothing: that costs a clamp."""
  memo: dict = {}
  idx = _unfused(idx, memo)
  if gate is not None:
    bounds: dict[UOp, list] = {}
    for clause in gate.split_uop(Ops.AND):
      if (p := parse_valid(clause)) is None:
        continue
      x, upper, c = p
      x = _unfused(x, memo)
      lo, hi = bounds.setdefault(x, [x.vmin, x.vmax])
      bounds[x] = [lo, min(hi, c)] if upper else [max(lo, c), hi]
    if any(lo > hi for lo, hi in bounds.values()):
      return True  # the gate never holds: every lane is off and addresses element 0
    idx = idx.substitute({x: UOp.variable(f"given{i}", lo, hi, x.dtype, param=True) for i, (x, (lo, hi)) in enumerate(bounds.items())})
  return isinstance(idx.vmin, int) and isinstance(idx.vmax, int) and 0 <= idx.vmin and idx.vmax < size


class Addressing:
  def address(self, a: Addr, mask: VT | None = None, load: bool = False, gate: UOp | None = None) -> tuple[str, Any]:
    """("tile", Mem, None) for a contiguous aligned access, else ("elem", index tile, Mem element base).
    Lanes off in mask (the access's gate and the open IFs) may hold any index: they address element 0.
    A gated load's index is clamped into its buffer where its bounds given the load's gate may leave
    it (clamp_index); a store's never is: an out-of-range store traps rather than writing the
    buffer's edge."""
    buf: Buf = a.buf
    L = self.L
    if self.rstream is not None and self.rstream.part(buf.slot) is not None:
      return self.rs_address(buf, self.lin(a.idx))
    w = self.window(buf, a.idx)
    # rows by blocks read through a gate too: every lane's address is inside the rows (rowblock.py)
    form = self.row_form(buf, a.idx, self.lin(a.idx)) if mask is None or w is not None and w.block else None
    if form is None and getattr(self.window(buf, a.idx), "rows", 0):
      raise NotImplementedError(f"TINYTPU kernel {self.name}: buffer {buf.slot}'s row window is read by a gated access")
    if self.red and form is not None and form[0].get(self.red.rng) == 1 and form[1] % L == 0 and not form[2] \
        and all(k in self.lane_ranges for k in form[0] if k is not self.red.rng):
      # L consecutive elements of a lane-parallel reduce (the lane ranges are 0: one output element)
      return "tile", Mem(self.red.ptr, (buf.base + form[1]) // L + self.red.off), None
    if form is not None and w is not None and w.block:  # rowblock.py: rows by blocks
      return self.rb_address(w, form, self.ebase(buf, a.idx))
    eb, rb = self.ebase(buf, a.idx), self.rebase_reg(buf, a.idx)  # the window's element base and chunk register (stream.py)
    cb = self.copy_base(buf, a.idx)
    if form is not None and not self.symbolic and self.G % L == 0 and all(form[0].get(r, 0) == s for r, s in zip(self.lane_ranges, self.strides)) \
        and form[1] % L == 0 and all(c % L == 0 for c, _ in form[2]) and self.tile_ok(buf, a.idx):
      # element g + const + sum(c * t) -> tile (g0 / L) + const / L + sum(c / L * t)
      if not form[2]:
        return "tile", Mem(self.s_t, (eb + form[1]) // L + self.t_off), None
      reg = self.sreg("tile address")
      self.ins("SADDI", SR(reg), SR(self.s_t), 0)
      for c, t in form[2]:
        tr = self.scalar_expr(t)
        k = self.scalar(Const(c // L, dtypes.int32))
        tmp = self.sreg("address term")
        self.ins("SMUL", SR(tmp), SR(tr), SR(k))
        self.ins("SADD", SR(reg), SR(reg), SR(tmp))
      return "tile", Mem(reg, (eb + form[1]) // L + self.t_off), None
    if form is not None:
      # the lane part in an index tile (loop invariant, shared), the constant and uniform terms in the
      # gather's base register and immediate
      idx = self.lane_affine(form[0])
      if not form[2]:
        return "elem", idx, Mem(rb, eb + form[1])
      if len(form[2]) == 1 and form[2][0][0] == 1:
        return "elem", idx, self.rebased(self.scalar_expr(form[2][0][1]), eb + form[1], rb)
      if len(form[2]) == 1 and (ind := self.induction(*form[2][0])) is not None:
        return "elem", idx, self.rebased(ind[0], eb + form[1] + ind[1], rb)
      reg = self.sreg("gather base")
      self.ins("SADDI", SR(reg), SR(rb), 0)
      for c, t in form[2]:
        tmp = self.sreg("address term")
        self.ins("SMUL", SR(tmp), SR(self.scalar_expr(t)), SR(self.scalar(Const(c, dtypes.int32))))
        self.ins("SADD", SR(reg), SR(reg), SR(tmp))
      return "elem", idx, Mem(reg, eb + form[1])
    idx = self.tile(self.value(a.idx), dtypes.int32)
    if load and mask is not None and not _inside(a.idx, buf.size, gate):
      idx = self.clamp_index(idx, buf.size)
    if rb or eb != cb:  # a chunk's window: the index rebased in the tile, so gated-off lanes still address the window
      sp, moved = VT("rebase"), VT("addr")
      self.ins("VSPLAT", sp, SR(rb))
      self.ins("VADD", moved, idx, sp)
      if eb != cb:
        self.ins("VADD", moved, moved, self.tile(Const(eb - cb, dtypes.int32), dtypes.int32))
      idx = moved
    if mask is not None:
      # lanes whose gate is off read element 0 of the buffer instead of an invalid address
      safe = VT("addr")
      self.ins("VSEL", safe, mask, idx, self.tile(Const(0, dtypes.int32), dtypes.int32))
      idx = safe
    return "elem", idx, Mem(0, cb)

  def clamp_index(self, idx: VT, size: int) -> VT:
    """A gated access's index clamped into its buffer's elements. tinygrad simplifies a load that
    sits inside another gated load's index given that outer gate (uop_given_valid), so the inner
    load keeps only part of its own gate and runs, unused, where its index leaves the buffer
    (fuzz seed 20261207 index 4040); what those lanes read never reaches a result."""
    lo, hi = VT("addr"), VT("addr")
    self.ins("VMAX", lo, idx, self.tile(Const(0, dtypes.int32), dtypes.int32))
    self.ins("VMIN", hi, lo, self.tile(Const(size - 1, dtypes.int32), dtypes.int32))
    return hi

  def rebased(self, reg: int, off: int, rb: int) -> Mem:
    """[reg + off] plus a window's chunk register rb (0: none)."""
    if not rb or not reg:
      return Mem(reg or rb, off)
    t = self.sreg("rebased address")
    self.ins("SADD", SR(t), SR(reg), SR(rb))
    return Mem(t, off)

  def induction(self, c: int, r: UOp) -> tuple[int, int] | None:
    """(register, immediate) with c * r = register + immediate for an open reduce loop's r: the
    register (c * the loop variable) is set before the loop and stepped at its end."""
    for i, lp in enumerate(self.loops):
      if lp.rng is r:
        if c not in lp.derived and self.frugal:
          return None  # the address is computed in temporaries instead
        if c not in lp.derived:
          # the register is set at the loop's start, so it must be one that no code since then
          # touches (a register freed in between was used there: its new value would clobber it)
          used = {x for ins in self.code[lp.start:] if isinstance(ins, Ins) for o in ins.ops for x in sregs(o)}
          if (reg := next((x for x in reversed(self.free_sregs) if x not in used), None)) is None:
            return None
          self.free_sregs.remove(reg)
          lp.derived[c] = reg
          self.code.insert(lp.start + 1, Ins("LI", SR(reg), 0))
          for inner in self.loops[i + 1:]:
            inner.start += 1
        return lp.derived[c], c * lp.copy
    return None

  def lane_affine(self, co: dict) -> VT:
    """sum(c * r) over lane (and lane-parallel reduce) ranges r as a tile, shared within a body copy."""
    items = tuple((self.value(r), c) for r, c in co.items() if c)
    if items in self.affine:
      return self.affine[items]
    t = None
    for v, c in items:
      k = self.tile(Const(c, dtypes.int32), dtypes.int32)
      if t is None and c == 1:
        t = v
      elif t is None:
        t = VT("lane")
        self.ins("VMUL", t, v, k)
      else:
        nt = VT("lane")
        self.ins("VADD", nt, t, v) if c == 1 else self.ins("VMAC", nt, v, k, t)
        t = nt
    self.affine[items] = t = t if t is not None else self.tile(Const(0, dtypes.int32), dtypes.int32)
    return t

  def scalar_expr(self, u: UOp) -> int:
    """Lower a uniform int expression (not necessarily in the uop list) into a scalar register."""
    v = self.vals.get(u)
    if isinstance(v, (SReg, Const)):
      return self.scalar(v)
    if u.op is Ops.CONST:
      return self.scalar(Const(u.arg, dtypes.int32))
    if u.op is Ops.CAST:
      return self.scalar_expr(u.src[0])
    if u.op in _SALU:
      a, b = self.scalar_expr(u.src[0]), self.scalar_expr(u.src[1])
      r = self.sreg("address arithmetic")
      self.ins(_SALU[u.op], SR(r), SR(a), SR(b))
      return r
    raise unsupported(u, "uniform address term")

  def lane_range_tile(self, r: UOp) -> VT:
    i = self.lane_ranges.index(r)
    if self.symbolic:
      t, src = VT(f"r{i}"), self.g
      if self.s_strides[i]:
        sp = VT("stride")
        self.ins("VSPLAT", sp, SR(self.s_strides[i]))
        self.ins("VCDIV", t, src, sp)
        src = t
      if i > 0:
        ep = VT("extent")
        self.ins("VSPLAT", ep, SR(self.s_ext[i]))
        self.ins("VCMOD", t, src, ep)
      elif src is self.g:
        return self.g
      return t
    S, E = self.strides[i], self.extents[i]
    t = VT(f"r{i}")
    if S == 1 and E == self.G:
      self.ins("VMOV", t, self.g)
      return t
    src = self.g
    if S > 1:
      if S & (S - 1) == 0:
        self.ins("VSHR", t, src, self.tile(Const(S.bit_length() - 1, dtypes.int32), dtypes.int32))
      else:
        self.ins("VCDIV", t, src, self.tile(Const(S, dtypes.int32), dtypes.int32))
      src = t
    if E * S < self.G:
      if E & (E - 1) == 0:
        self.ins("VAND", t, src, self.tile(Const(E - 1, dtypes.int32), dtypes.int32))
      else:
        self.ins("VCMOD", t, src, self.tile(Const(E, dtypes.int32), dtypes.int32))
    elif src is self.g:
      self.ins("VMOV", t, self.g)
    return t
