"""The lowering's tables and value helpers: which instruction implements each tinygrad ALU op per
operand class, the narrow-int wraps, scalar (SXU) forms, tile reductions, constant encodings, the
supported lane dtypes and the lowering's size limits."""
from __future__ import annotations

import struct
from typing import Any

from tinygrad.dtype import DType, dtypes
from tinygrad.uop.ops import Ops, UOp

from tinytpu import isa
from tinytpu.config import DEFAULT

# the largest LOOPI count (its immhi field); longer loops take their count from a register
LOOPI_MAX = isa.operand_range(isa.BY_MNEMONIC["LOOPI"].operands[0], DEFAULT.N)[1]

# lane-loop unrolling: kernels of at most UNROLL_FULL tiles have no loop; UNROLL_BUDGET bounds the
# unrolled body (in UOps) so programs stay far below the instruction memory
UNROLL_FULL, UNROLL_BUDGET = 16, 640
UNROLL_REDUCE = 16  # reduce loops of at most this many steps are unrolled
HOIST_MAX = 4  # constant tiles kept in registers across the lane loop (more would spill)


def _bits(v, dt: DType) -> int:
  """The 32-bit lane pattern of a constant of dtype dt."""
  if dt == dtypes.bfloat16:  # the fp32 pattern of the value rounded to bf16, as tinygrad rounds it
    from tinygrad.dtype import float_to_bf16
    return struct.unpack("<I", struct.pack("<f", float_to_bf16(float(v))))[0]
  if dtypes.is_float(dt):
    return struct.unpack("<I", struct.pack("<f", float(v)))[0]
  if dt == dtypes.bool:
    return int(bool(v))
  return int(v) & 0xFFFFFFFF


def _imm(v, dt: DType) -> int:
  """A constant as a signed 32-bit immediate (VFILL/LI take int32)."""
  b = _bits(v, dt)
  return b - (1 << 32) if b >> 31 else b


def _narrow(dt: DType) -> str | None:
  """The instruction that wraps an int32 lane result to a narrow integer dtype."""
  return {dtypes.int8: "VSEXT8", dtypes.uint8: "VZEXT8", dtypes.int16: "VSEXT16", dtypes.uint16: "VZEXT16",
          dtypes.bool: None}.get(dt)


# bfloat16: one per lane, held as the fp32 bit pattern of its value (low 16 bits 0), so loads, stores,
# gathers and float ops need nothing special; a bf16 result is rounded (RNE) with VF2BF16 + VBF162F
SUPPORTED_DTYPES = (dtypes.int32, dtypes.uint32, dtypes.float32, dtypes.bool, dtypes.int8, dtypes.uint8, dtypes.int16, dtypes.uint16,
                    dtypes.bfloat16)


def unsupported(u: UOp, why: str) -> NotImplementedError:
  return NotImplementedError(f"TINYTPU cannot lower {u.op} ({u.dtype}): {why}")


# ALU op -> instruction, by operand class: (int, uint, float). None: not an instruction of that class.
_ALU: dict[Ops, tuple[str | None, str | None, str | None]] = {
  Ops.ADD: ("VADD", "VADD", "VFADD"), Ops.SUB: ("VSUB", "VSUB", "VFSUB"), Ops.MUL: ("VMUL", "VMUL", "VFMUL"),
  Ops.CDIV: ("VCDIV", None, None), Ops.CMOD: ("VCMOD", None, None), Ops.FDIV: (None, None, "VFDIV"),
  Ops.MAX: ("VMAX", "VMAXU", "VFMAX"), Ops.CMPLT: ("VCMPLT", "VCMPLTU", "VFCMPLT"),
  Ops.CMPNE: ("VCMPNE", "VCMPNE", "VFCMPNE"), Ops.CMPEQ: ("VCMPEQ", "VCMPEQ", "VFCMPEQ"),
  Ops.AND: ("VAND", "VAND", None), Ops.OR: ("VOR", "VOR", None), Ops.XOR: ("VXOR", "VXOR", None),
  Ops.SHL: ("VSHL", "VSHL", None), Ops.SHR: ("VSRA", "VSHR", None),
  Ops.NEG: ("VNEG", "VNEG", "VFNEG"), Ops.RECIPROCAL: (None, None, "VFRECIP"), Ops.SQRT: (None, None, "VFSQRT"),
  Ops.EXP2: (None, None, "VFEXP2"), Ops.LOG2: (None, None, "VFLOG2"), Ops.SIN: (None, None, "VFSIN"),
  Ops.TRUNC: (None, None, "VFTRUNC"), Ops.MULACC: ("VMAC", "VMAC", "VFMAC"),
}
# ops whose int result must be re-wrapped for narrow dtypes
_WRAPS = {Ops.ADD, Ops.SUB, Ops.MUL, Ops.SHL, Ops.NEG, Ops.MULACC, Ops.CDIV, Ops.CMOD}
# scalar (SXU) versions of int ops on uniform values
_SALU = {Ops.ADD: "SADD", Ops.SUB: "SSUB", Ops.MUL: "SMUL", Ops.AND: "SAND", Ops.OR: "SOR", Ops.XOR: "SXOR", Ops.SHL: "SSHL"}
# supported ops for tinygrad's decompositions (the renderer's code_for_op keys)
NATIVE_OPS = tuple(_ALU) + (Ops.WHERE,)
# the tile reduction that finishes a lane-parallel reduce loop, by update op and dtype
_TILE_REDUCE = {(Ops.ADD, dtypes.int32): "VSUM_TILE", (Ops.ADD, dtypes.uint32): "VSUM_TILE", (Ops.ADD, dtypes.float32): "VFSUM_TILE",
                (Ops.MAX, dtypes.int32): "VMAX_TILE", (Ops.MAX, dtypes.float32): "VFMAX_TILE"}


def _cint(u: UOp) -> int | None:
  """The value of an int constant (possibly behind a CAST), else None."""
  while u.op is Ops.CAST:
    u = u.src[0]
  return int(u.arg) if u.op is Ops.CONST else None


def _min_of(u: UOp) -> tuple[UOp, int] | None:
  """(x, k) when u is tinygrad's int32 minimum `~max(~x, ~k)` (XOR with -1 around a MAX with a
  constant): bitwise NOT reverses the signed order, so it is min(x, k) exactly. The inner XOR and
  MAX, when nothing else reads them, are dead afterwards (lower.py's DCE); handlers.alu emits the VMIN."""
  def inv(v: UOp) -> UOp | None:
    if v.op is not Ops.XOR or v.dtype != dtypes.int32:
      return None
    a, b = v.src
    return a if _cint(b) == -1 else b if _cint(a) == -1 else None
  if (mx := inv(u)) is None or mx.op is not Ops.MAX or mx.dtype != dtypes.int32:
    return None
  a, b = mx.src
  x, c = (a, b) if _cint(b) is not None else (b, a)
  if _cint(c) is None or (y := inv(x)) is None or y.dtype != dtypes.int32:
    return None
  return y, ~_cint(c)


def _fold_int(v, dt: DType) -> int:
  """C conversion of a constant to an int dtype (wrapping). Beyond any 64-bit value, a weakint is
  tinygrad's stand-in for -inf/+inf (the identity of a max/min reduce, -2**789): it saturates to the
  dtype's extreme, which is the identity tinygrad means there."""
  if abs(int(v)) >= 1 << 64:
    return int(dt.min if v < 0 else dt.max)
  v = int(v) & ((1 << (8 * dt.itemsize)) - 1)
  return v - (1 << (8 * dt.itemsize)) if dtypes.is_int(dt) and not dtypes.is_unsigned(dt) and v >> (8 * dt.itemsize - 1) else v


def _cls(dt: DType) -> int:
  dt = dt
  if dtypes.is_float(dt):
    return 2
  return 1 if dt in (dtypes.uint32, dtypes.uint8, dtypes.uint16, dtypes.bool) else 0


def _fold(op: Ops, dt: DType, vals: list) -> Any:
  from tinygrad.uop.ops import exec_alu
  return exec_alu(op, dt, vals)
