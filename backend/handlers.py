"""Per-UOp lowering (a mixin of Lowering): a handler per UOp kind, ALU ops through the op table,
loads and stores (their addresses in address.py), masks, casts."""
from __future__ import annotations

import struct
from typing import Any

from tinygrad.dtype import AddrSpace, dtypes
from tinygrad.uop.ops import Ops, UOp

from tinytpu.backend.vcode import VT, Label, SR
from tinytpu.backend.optable import (_ALU, _SALU, _WRAPS, LOOPI_MAX, SUPPORTED_DTYPES, _bits, _cls, _fold, _fold_int, _imm, _min_of,
                                     _narrow, unsupported)
from tinytpu.backend.records import Addr, Const, OpenLoop, SReg


_ORDERED = {Ops.MAX, Ops.CMPLT, Ops.CDIV, Ops.CMOD, Ops.SHR}  # ops whose result depends on more than the low 32 bits


class Handlers:
  def lower_uop(self, u: UOp):
    """Lower one UOp through its handler (HANDLERS, or the ALU table)."""
    if u in self.epi_at:  # epilogue.py: bias/ReLU fused into the dot product's PSUM drain
      return self.lower_epi(u)
    if (h := HANDLERS.get(u.op)) is not None:
      return h(self, u)
    if u.op in _ALU:
      self.vals[u] = self.alu(u)
      return
    raise unsupported(u, "no TinyTPU lowering for this UOp")

  def _nothing(self, u: UOp):
    pass

  def _const(self, u: UOp):
    self.vals[u] = Const(u.arg, u.dtype)

  def _param(self, u: UOp):
    if u.arg.addrspace == AddrSpace.GLOBAL:
      self.vals[u] = self.bufs[u]
    elif u not in self.vals:  # kernel variables were given their registers up front
      raise unsupported(u, f"parameter in address space {u.arg.addrspace}")

  def _buffer(self, u: UOp):
    if u.arg.addrspace != AddrSpace.REG:
      raise unsupported(u, f"a buffer in address space {u.arg.addrspace}")
    self.vals[u] = tuple(VT(f"acc{i}") for i in range(int(u.src[0].arg if u.src[0].op is Ops.CONST else u.src[0].src[0].arg)))

  def _after(self, u: UOp):
    self.vals[u] = self.value(u.src[0])

  def _index(self, u: UOp):
    self.vals[u] = Addr(self.value(u.src[0]), u.src[1], u.src[2] if len(u.src) > 2 else None)

  def _range(self, u: UOp):
    if u in self.lane_ranges:
      self.vals[u] = self.lane_range_tile(u)
      return
    if self.rs_range(u) or self.rb_range(u):  # rstream.py / rowblock.py: the reduce loop whose buffers stream by blocks
      return
    ext = u.src[0]
    var = self.sreg("loop variable", temp=False)
    end = self.label()
    start = len(self.code)
    self.ins("LI", SR(var), 0)
    step = self.partial[u][1] if u in self.partial else 1
    if ext.op is Ops.CONST or (ext.op is Ops.CAST and ext.src[0].op is Ops.CONST):
      n = int(ext.arg if ext.op is Ops.CONST else ext.src[0].arg) // step
      if n > LOOPI_MAX:
        c = self.sreg("loop count")
        self.ins("LI", SR(c), n)
        self.ins("LOOP", SR(c), end)
      else:
        self.ins("LOOPI", n, end)
    else:
      self.ins("LOOP", SR(self.scalar_expr(ext)), end)
    self.loops.append(OpenLoop(u, end, var, start, step=step))
    self.vals[u] = SReg(var)

  def _end(self, u: UOp):
    rng = u.src[1]
    if rng in self.lane_ranges or rng in self.lane_reduces or rng in self.unrolled:
      return
    if not self.loops or self.loops[-1].rng is not rng:
      raise unsupported(u, "END of a range that is not the innermost open loop")
    lp = self.loops.pop()
    end, var, step = lp.end, lp.var, lp.step
    for c, r in lp.derived.items():
      self.ins("SADDI", SR(r), SR(r), c * step)
    for r, c in lp.stepped:
      self.ins("SADDI", SR(r), SR(r), c * step)
    self.ins("SADDI", SR(var), SR(var), step)
    self.code.append(Label(end))
    if self.rstream is not None and rng is self.rstream.rng:
      self.rs_end()  # rstream.py: the block loop around it (the variable and its induction registers run on)
    self.rb_end(rng)  # rowblock.py: likewise for rows by blocks
    for r in lp.derived.values():
      self.release(r)
    self.release(var)

  def _load(self, u: UOp):
    a = self.value(u.src[0])
    if isinstance(a.buf, tuple):
      if not any(x.op is Ops.STORE and x.src[0].op is Ops.INDEX and self.reg_of(x.src[0]) == self.reg_of(u.src[0]) for x in self.uops):
        # tinygrad 0.14 folds a reduce whose update becomes a constant (max(acc, uint max)) into a
        # loop with no store at all, leaving this read of a register nothing writes
        raise unsupported(u, "it reads a register accumulator that no UOp of the kernel writes (tinygrad folded the reduce's update away)")
      self.vals[u] = a.buf[self.const_index(a.idx)]
      return
    if u.dtype not in SUPPORTED_DTYPES:
      raise unsupported(u, "dtype")
    gate = u.src[2] if len(u.src) > 2 else a.gate  # LOAD(INDEX, alt, gate): gated-off lanes read alt
    kind, where, base = self.address(a, self.mask_of(gate), load=True, gate=gate)
    t = VT("ld")
    if kind == "tile":
      self.ins("VLD", t, where)
    else:
      self.ins("VGATHER", t, *self.clamp_gather(a.buf, a.idx, where, base))
    if gate is not None:
      alt = self.tile(self.value(u.src[1]), u.dtype) if len(u.src) > 1 else self.tile(Const(0, u.dtype), u.dtype)
      out = VT("gated")
      self.ins("VSEL", out, self.tile(self.value(gate), dtypes.bool), t, alt)
      t = out
    self.vals[u] = t

  def _store(self, u: UOp):
    a = self.value(u.src[0])
    val = self.value(u.src[1])
    if isinstance(a.buf, tuple):
      return self._store_register(u, a, val)
    self.written.add(a.buf.slot)
    gate = self.mask_of(u.src[2] if len(u.src) > 2 else a.gate)
    v = self.tile(val, u.src[1].dtype)
    kind, where, base = self.address(a, gate)
    if kind == "tile":
      self.ins("VST", v, where)
    else:
      self.ins("VSCATTER", v, where, self.all_of(gate, self.valid) or self.ones, base)

  def _store_register(self, u: UOp, a: Addr, val: Any):
    dst = a.buf[self.const_index(a.idx)]
    self.zeroed.pop(dst, None)
    keep = self.mask_of(u.src[2] if len(u.src) > 2 else None, self.red.mask if self.red else None)
    if keep is not None:  # lanes gated off (or past a lane reduce's extent) keep their value
      self.ins("VSEL", dst, keep, self.tile(val, u.src[1].dtype), dst)
    elif isinstance(val, Const):
      self.ins("VFILL", dst, _imm(val.val, val.dtype))
      if self.code[-1].ops[-1] == 0:  # a Dot accumulating into it next replaces the fill
        self.zeroed[dst] = self.code[-1]
    else:
      self.ins("VMOV", dst, self.tile(val, u.src[1].dtype))

  def _if(self, u: UOp):  # SIMT: the block runs in every lane, its stores masked by the condition
    self.ifs.append(u.src[0])

  def _endif(self, u: UOp):
    self.ifs.pop()

  def _cast(self, u: UOp):
    self.vals[u] = self.cast(u)

  def _where(self, u: UOp):
    c, a, b = (self.value(s) for s in u.src)
    if isinstance(c, Const):
      self.vals[u] = a if c.val else b
      return
    t = VT("sel")
    self.ins("VSEL", t, self.tile(c, dtypes.bool), self.tile(a, u.dtype), self.tile(b, u.dtype))
    self.vals[u] = t

  def mask_of(self, gate: UOp | None, *tiles: VT | None) -> VT | None:
    """The lanes an access may touch: its gate AND every open IF's condition AND the given mask
    tiles; None when all lanes may. A constant-true condition drops out."""
    parts: list[VT] = list(tiles)
    for g in ([gate] if gate is not None else []) + self.ifs:
      v = self.value(g)
      if not (isinstance(v, Const) and v.val):
        parts.append(self.tile(v, dtypes.bool))
    return self.all_of(*parts)

  def all_of(self, *tiles: VT | None) -> VT | None:
    """The AND of the mask tiles that are not None (None if none are)."""
    parts = [t for t in tiles if t is not None]
    if not parts:
      return None
    m = parts[0]
    for p in parts[1:]:
      nm = VT("mask")
      self.ins("VAND", nm, m, p)
      m = nm
    return m

  def const_index(self, idx: UOp) -> int:
    if idx.op is Ops.CONST:
      return int(idx.arg)
    if idx.op is Ops.CAST and idx.src[0].op is Ops.CONST:
      return int(idx.src[0].arg)
    raise unsupported(idx, "dynamic index into a register array")

  def alu(self, u: UOp) -> Any:
    srcs = [self.value(s) for s in u.src]
    dt = u.dtype
    src_dt = u.src[0].dtype
    if dt not in SUPPORTED_DTYPES or src_dt not in SUPPORTED_DTYPES:
      raise unsupported(u, f"dtype {dt if dt not in SUPPORTED_DTYPES else src_dt} has no 32-bit lane form")
    if u.op in _ORDERED and src_dt == dtypes.int32:
      for x in u.src:
        if x.op is Ops.CAST and x.src[0].dtype == dtypes.uint32 and isinstance(vmax := x.src[0].vmax, int) and vmax > (1 << 31) - 1:
          # tinygrad emulates int64 as int32 on this device: its max/compare of an int64 value made
          # from a uint32 (up to 2^32 - 1) becomes a signed int32 op on the wrapped value (the fuzzer,
          # seed 20261204 index 142: cummin of a uint32 tensor)
          raise unsupported(u, f"{u.op.name} of a uint32 value (up to {vmax}) cast to int32: tinygrad's int64 emulated in 32 bits "
                               "(the wrapped value would order wrongly)")
    if all(isinstance(s, Const) for s in srcs):
      return Const(_fold(u.op, dt, [s.val for s in srcs]), dt)
    if u.op in _SALU and dtypes.is_int(dt) and dt.itemsize == 4 and all(isinstance(s, (Const, SReg)) for s in srcs):
      r = self.sreg("uniform arithmetic", temp=False)
      self.ins(_SALU[u.op], SR(r), *(SR(self.scalar(s)) for s in srcs))
      return SReg(r)
    if (m := _min_of(u)) is not None:  # tinygrad's int32 min(x, k): ~max(~x, ~k), one VMIN
      t = VT("min")
      self.ins("VMIN", t, self.tile(self.value(m[0]), src_dt), self.tile(Const(m[1], dt), src_dt))
      return t
    mn = _ALU[u.op][_cls(src_dt)]
    if mn is None and u.op in (Ops.CDIV, Ops.CMOD) and src_dt in (dtypes.uint8, dtypes.uint16):
      mn = _ALU[u.op][0]  # zero-extended lanes are non-negative int32: the signed division is exact
    if mn is None and u.op in (Ops.CDIV, Ops.CMOD) and src_dt == dtypes.uint32:
      return self.udiv32(u, *(self.tile(s, src_dt) for s in srcs))
    if u.op is Ops.MAX and mn == "VMAX" and any(isinstance(x, Const) and x.val == 0 for x in srcs):
      t = VT("relu")  # max(x, 0) of an int32
      self.ins("VRELU", t, self.tile(next(x for x in srcs if not (isinstance(x, Const) and x.val == 0)), src_dt))
      return t
    if mn is None:
      raise unsupported(u, f"no {u.op.name} instruction for {src_dt}")
    t = VT(u.op.name.lower())
    self.ins(mn, t, *(self.tile(s, src_dt) for s in srcs))
    if u.op is Ops.TRUNC and not dtypes.is_float(dt):
      return srcs[0]
    if u.op in _WRAPS and (w := _narrow(dt)) is not None:
      self.ins(w, t, t)
    if dt == dtypes.bfloat16:
      self.round_bf16(t)
    return t

  def round_bf16(self, t: VT):
    """A bf16 result: its fp32 value rounded to bf16 (RNE) and back, exact in fp32."""
    self.ins("VF2BF16", t, t)
    self.ins("VBF162F", t, t)

  def udiv32(self, u: UOp, a: VT, b: VT) -> VT:
    """uint32 a / b (or a % b) from the signed divider: a >> 1 is a non-negative int32, so
    q0 = ((a >> 1) / b) << 1 is exact for b < 2^31 and at most one short (a - q0 * b < 2b); a
    divisor of 2^31 or more (negative as int32) divides at most once. x / 0 = 0 and x % 0 = x, as
    tinygrad's cdiv/cmod and VCDIV/VCMOD."""
    one, zero = self.tile(Const(1, dtypes.int32), dtypes.int32), self.tile(Const(0, dtypes.int32), dtypes.int32)
    q, r, c = VT("udiv_q"), VT("udiv_r"), VT("udiv_c")
    self.ins("VSHR", q, a, one)
    self.ins("VCDIV", q, q, b)
    self.ins("VSHL", q, q, one)
    self.ins("VMUL", r, q, b)
    self.ins("VSUB", r, a, r)
    self.ins("VCMPLTU", c, r, b)
    self.ins("VXOR", c, c, one)        # r >= b: one more
    self.ins("VADD", q, q, c)
    self.ins("VCMPLTU", c, a, b)
    self.ins("VXOR", c, c, one)        # the quotient by a divisor >= 2^31: a >= b
    self.ins("VCMPLT", r, b, zero)
    self.ins("VSEL", q, r, c, q)
    self.ins("VCMPEQ", c, b, zero)
    self.ins("VSEL", q, c, zero, q)
    if u.op is Ops.CDIV:
      return q
    self.ins("VMUL", r, q, b)
    self.ins("VSUB", r, a, r)
    return r

  def cast(self, u: UOp) -> Any:
    src, dt, sdt = self.value(u.src[0]), u.dtype, u.src[0].dtype
    if isinstance(src, Const) and u.op is Ops.CAST:
      if dt not in SUPPORTED_DTYPES:
        raise unsupported(u, f"constant of dtype {dt}")
      return Const(bool(src.val) if dt == dtypes.bool else float(src.val) if dtypes.is_float(dt) else _fold_int(src.val, dt), dt)
    if dt not in SUPPORTED_DTYPES or sdt not in SUPPORTED_DTYPES:
      raise unsupported(u, f"cast {sdt} -> {dt}: only 32-bit lane dtypes (int32, uint32, float32, bool, int8/16, uint8/16, bfloat16)")
    if isinstance(src, Const):
      if u.op is Ops.BITCAST:
        return Const(struct.unpack("<f" if dtypes.is_float(dt) else "<I", struct.pack("<I", _bits(src.val, sdt)))[0], dt)
      return Const(src.val if not dtypes.is_int(dt) else int(src.val), dt) if dt != dtypes.bool else Const(bool(src.val), dt)
    if u.op is Ops.BITCAST and dtypes.bfloat16 in (dt, sdt) and dt != sdt:
      raise unsupported(u, f"bitcast {sdt} -> {dt}: bfloat16 lanes hold fp32 patterns")
    if u.op is Ops.BITCAST or dt == sdt:
      return src
    if isinstance(src, SReg) and dtypes.is_int(dt) and dtypes.is_int(sdt) and dt.itemsize == 4 and sdt.itemsize == 4:
      return src
    x = self.tile(src, sdt)
    t = VT("cast")
    if dt == dtypes.bool:
      self.ins("VFCMPNE" if dtypes.is_float(sdt) else "VCMPNE", t, x, self.tile(Const(0, sdt), sdt))
    elif dtypes.is_float(dt) and dtypes.is_float(sdt):  # bf16 <-> fp32: exact one way, rounded the other
      if dt != dtypes.bfloat16:
        return x
      self.ins("VMOV", t, x)
      self.round_bf16(t)
    elif dtypes.is_float(dt):
      self.ins("VU2F" if _cls(sdt) == 1 and sdt != dtypes.bool else "VI2F", t, x)
      if dt == dtypes.bfloat16:
        self.round_bf16(t)
    elif dtypes.is_float(sdt):
      self.ins("VF2I", t, x)
      if (w := _narrow(dt)) is not None:
        self.ins(w, t, t)
    else:
      w = _narrow(dt)
      if w is None or (dt.itemsize >= sdt.itemsize and dtypes.is_unsigned(dt) == dtypes.is_unsigned(sdt)) or sdt == dtypes.bool:
        return x
      self.ins(w, t, x)
    return t


# UOp -> handler (ALU ops go through optable._ALU); like a renderer's code_for_op, one entry per kind
HANDLERS = {
  **{op: Handlers._nothing for op in (Ops.SINK, Ops.GROUP, Ops.NOOP, Ops.BARRIER, Ops.STACK)},
  Ops.CONST: Handlers._const, Ops.PARAM: Handlers._param, Ops.BUFFER: Handlers._buffer, Ops.AFTER: Handlers._after,
  Ops.INDEX: Handlers._index, Ops.RANGE: Handlers._range, Ops.END: Handlers._end, Ops.LOAD: Handlers._load,
  Ops.STORE: Handlers._store, Ops.IF: Handlers._if, Ops.ENDIF: Handlers._endif, Ops.CAST: Handlers._cast,
  Ops.BITCAST: Handlers._cast, Ops.WHERE: Handlers._where,
}
