"""Lowering of tinygrad's linearised UOps to TinyTPU assembly (TASM).

Execution model, SIMT over lanes: the kernel's output (global) ranges are flattened into one index
`g` spread over the N*N lanes of a tile, and an SXU loop walks the tiles of `g`. Every lane runs the
kernel body for its own `g`: reduce ranges become SXU loops with a scalar loop variable, each ALU
UOp becomes one VPU instruction over the whole tile, loads and stores become `VLD`/`VST` when the
address is `g` plus a tile-aligned uniform offset and element gathers/scatters otherwise. Lanes
past the end of `g` are clamped to the last element, so they recompute and rewrite exactly what
that element's lane writes. Values live in virtual tiles that a linear-scan allocator maps onto
the 16 vector registers, spilling to VMEM scratch tiles when needed.

Memory layout of one kernel (all in VMEM tiles): the buffers in slot order, each tile-aligned, then
a constant pool (the lane-index tile), then the spill area."""
from __future__ import annotations

import dataclasses
import math
import re
import struct
from typing import Any

from tinygrad.dtype import AddrSpace, DType, dtypes
from tinygrad.uop.ops import AxisType, Ops, UOp

from tinytpu import isa
from tinytpu.backend import loops
from tinytpu.backend.peephole import optimize
from tinytpu.backend.schedule import schedule
from tinytpu.backend.vcode import VT, sregs, vdef, vreads, vts
from tinytpu.config import DEFAULT, Config

# the largest LOOPI count (its immhi field); longer loops take their count from a register
LOOPI_MAX = isa.operand_range(isa.BY_MNEMONIC["LOOPI"].operands[0], DEFAULT.N)[1]

# lane-loop unrolling: kernels of at most UNROLL_FULL tiles have no loop; UNROLL_BUDGET bounds the
# unrolled body (in UOps) so programs stay far below the instruction memory
UNROLL_FULL, UNROLL_BUDGET = 16, 640
UNROLL_REDUCE = 16  # reduce loops of at most this many steps are unrolled
HOIST_MAX = 4  # constant tiles kept in registers across the lane loop (more would spill)

# ---------------------------------------------------------------------------------------------
# values


@dataclasses.dataclass(frozen=True)
class Const:
  val: Any
  dtype: DType


@dataclasses.dataclass(frozen=True)
class SReg:
  reg: int


@dataclasses.dataclass
class Buf:
  slot: int
  dtype: DType
  size: int
  base: int  # first element address in VMEM (a multiple of N*N)


@dataclasses.dataclass(frozen=True)
class Addr:
  buf: Any   # Buf, or a tuple of VTs for a register array
  idx: UOp
  gate: UOp | None


@dataclasses.dataclass
class Kernel:
  """What the runtime needs besides the program: buffer layout and the scalar arguments."""
  asm: str
  bufs: list[Buf]
  written: list[int]            # slots the kernel stores to
  var_regs: list[tuple[int, str, int]]  # (slot, variable name, scalar register) preloaded from `vals`, in slot order
  vmem_tiles: int               # tiles used, constant pool and spill area included
  const_tiles: dict[int, list[int]]  # VMEM tile -> lane values to preload
  N: int
  int8_checks: list = dataclasses.field(default_factory=list)  # (slot, element indices) MXU operands that must hold int8 values
  executed: int | None = None   # instructions it retires (spills aside), None for symbolic loop counts


@dataclasses.dataclass
class Dot:
  """A dot-product reduce run on the MXU: for every lane (m, n), acc = sum over k of
  A[fa(m) + a_off[k]] * B[fb(n) + b_off[k]], m and n flattening the lane ranges of A's and B's index."""
  top: UOp                      # the chain (no reduce range) or the accumulator STORE (reduce range)
  acc: tuple | None             # (register buffer, element) the reduce accumulates into
  a: Buf
  b: Buf
  mlanes: list                  # [(lane range, extent, coefficient in A's index)], outer first
  nlanes: list
  a_off: list[int]
  b_off: list[int]
  X: int = 0                    # VMEM tiles: K blocks ([mb] activation tiles, then [nb] weight tiles)
  S: int = 0                    # result tiles [nb][mb]
  T: int = 0                    # lane table: per lane of the kernel, its result element
  direct: dict = dataclasses.field(default_factory=dict)  # block tile -> buffer tile read in place (not staged)
  in_psum: bool = False         # lane tile t is PSUM tile t: read with PLD, no copy or lane table

  @property
  def dims(self) -> tuple[int, int, int]:
    return math.prod(e for _, e, _ in self.mlanes), len(self.a_off), math.prod(e for _, e, _ in self.nlanes)


def _flat_offsets(lanes: list) -> "Any":
  """fa(m) for every flattened m over (range, extent, coefficient) lanes, outer first."""
  import numpy as np
  f = np.zeros(1, dtype=np.int64)
  for _, e, c in lanes:
    f = (f[:, None] + c * np.arange(e)[None, :]).ravel()
  return f


def _bits(v, dt: DType) -> int:
  """The 32-bit lane pattern of a constant of dtype dt."""
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


SUPPORTED_DTYPES = (dtypes.int32, dtypes.uint32, dtypes.float32, dtypes.bool, dtypes.int8, dtypes.uint8, dtypes.int16, dtypes.uint16)


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


def _fold_int(v, dt: DType) -> int:
  """C conversion of a constant to an int dtype (wrapping)."""
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


# ---------------------------------------------------------------------------------------------
def output_nests(uops: list[UOp]) -> list[list[UOp]]:
  """The kernel split at its top-level output (lane) loop nests, one UOp list per nest, in order.
  tinygrad puts several independent nests in one kernel (gradients); each part keeps the UOps
  outside every nest (parameters, constants, register buffers) and its own nest, and each store
  outside the nests goes to exactly one part (the next nest's), so no effect runs twice."""
  spans, start, open_ = [], None, set()
  for i, u in enumerate(uops):
    if u.op is Ops.RANGE and u.arg[-1] not in (AxisType.REDUCE, AxisType.GROUP_REDUCE, AxisType.UNROLL) and start is None:
      start, open_ = i, {u}
    elif start is not None and u.op is Ops.RANGE:
      open_.add(u)
    elif start is not None and u.op is Ops.END and u.src[1] in open_:
      open_.discard(u.src[1])
      if not open_:
        spans.append((start, i))
        start = None
  if len(spans) < 2:
    return [uops]
  owner = {}  # position -> part, for the UOps inside a nest and the outside stores
  for k, (s, e) in enumerate(spans):
    owner.update({i: k for i in range(s, e + 1)})
  for i, u in enumerate(uops):
    if i not in owner and u.op in (Ops.STORE, Ops.IF, Ops.ENDIF, Ops.END):
      owner[i] = next((k for k, (s, _) in enumerate(spans) if s > i), len(spans) - 1)
  return [[u for i, u in enumerate(uops) if owner.get(i, k) == k] for k in range(len(spans))]


class OutOfScalarRegisters(NotImplementedError):
  pass


def lower_kernel(uops: list[UOp], cfg: Config) -> Kernel:
  """Lower a linearised kernel: each output nest in turn (output_nests), one program. A kernel that
  runs out of scalar registers is lowered again frugally: no induction registers (addresses are
  computed in temporaries) and no partially unrolled reduce loops (no per-copy step registers)."""
  try:
    return _lower_parts(list(uops), cfg, frugal=False)
  except OutOfScalarRegisters:
    return _lower_parts(list(uops), cfg, frugal=True)


def _lower_parts(uops: list[UOp], cfg: Config, frugal: bool) -> Kernel:
  parts, first, codes, low = output_nests(uops), None, [], None
  for k, part in enumerate(parts):
    low = Lowering(part, cfg, first_tile=first, prefix=f"P{k}_" if len(parts) > 1 else "", frugal=frugal)
    code = low.emit()
    codes += code[:-1] if k < len(parts) - 1 else code  # one HALT, at the end
    first = low.spill_base  # the next part's tables and staging tiles come after this part's
    if k:
      low.written |= prev.written
      low.int8_checks = prev.int8_checks + low.int8_checks
      low.mxu_tables = {**prev.mxu_tables, **low.mxu_tables}
    prev = low
  return low.finish(codes)


class Lowering:
  def __init__(self, uops: list[UOp], cfg: Config, first_tile: int | None = None, prefix: str = "", frugal: bool = False):
    self.uops, self.cfg, self.L, self.frugal = uops, cfg, cfg.N * cfg.N, frugal
    sink = next((u for u in uops if u.op is Ops.SINK), None)
    self.name = re.sub(r"\x1b\[[0-9;]*m", "", getattr(sink.arg, "name", "kernel")) if sink is not None and sink.arg is not None else "kernel"
    self.first_tile, self.prefix = first_tile, prefix  # where this part's VMEM tables start (None: after the constant pool)
    self.code: list[tuple] = []    # ("ins", mnemonic, operands...) | ("label", name)
    self.vals: dict[UOp, Any] = {}
    self.labels = 0
    self.free_sregs = list(range(cfg.SREGS - 1, 0, -1))  # s0 reads 0
    self.loops: list[list] = []  # open reduce loops: [range, end label, var sreg, position of its LI, {c: sreg = c * var}, step, copy]
    self.red = None
    self.valid = None  # lanes below G, when lanes past G do not repeat lane G-1
    self.temps: list[int] = []
    self.ifs: list[UOp] = []  # conditions of the open IF blocks

  # --- emission helpers
  def ins(self, mn: str, *ops):
    self.code.append(("ins", mn, *ops))

  def label(self) -> str:
    self.labels += 1
    return f"{self.prefix}L{self.labels}"

  def sreg(self, why: str, temp: bool = True) -> int:
    """A free scalar register; temporaries are released after the current UOp is lowered."""
    if not self.free_sregs:
      raise OutOfScalarRegisters(f"TINYTPU kernel {self.name}: out of scalar registers ({why}); the kernel has too many nested loops or variables"
                                 + (" even without induction registers and unrolled reduce steps" if self.frugal else ""))
    r = self.free_sregs.pop()
    if temp:
      self.temps.append(r)
    return r

  def release(self, r: int):
    self.free_sregs.append(r)

  def tile(self, v: Any, dt: DType) -> VT:
    """Any value as a tile register."""
    if isinstance(v, VT):
      return v
    if isinstance(v, SReg):
      t = VT("splat")
      self.ins("VSPLAT", t, f"s{v.reg}")
      return t
    if isinstance(v, Const):
      bits = _imm(v.val, v.dtype)
      if getattr(self, "in_body", False) and (bits in self.hoisted or len(self.hoisted) < HOIST_MAX):
        return self.hoisted.setdefault(bits, VT("c"))  # filled once, before the lane loop
      t = VT("c")
      self.ins("VFILL", t, bits)
      return t
    raise TypeError(v)

  def scalar(self, v: Any) -> int:
    """A uniform int value in a scalar register (s0 for 0)."""
    if isinstance(v, SReg):
      return v.reg
    assert isinstance(v, Const)
    if v.val == 0:
      return 0
    r = self.sreg("constant")
    self.ins("LI", f"s{r}", _imm(v.val, v.dtype))
    return r

  # --- analysis
  def analyse(self):
    u0 = self.uops
    self.lane_ranges: list[UOp] = []
    closed = False  # an output range has ended: a later one would be a sibling nest, not nested
    for u in u0:
      if u.op is Ops.RANGE and u.arg[-1] not in (AxisType.REDUCE, AxisType.GROUP_REDUCE, AxisType.UNROLL):
        # an output range opened late in the nest (after reduces that do not depend on it) is still
        # one more lane dimension: in SIMT every lane computes the work in front of it too
        if closed:
          raise unsupported(u, "sibling output loop nests inside one output loop (only top-level nests are split)")
        self.lane_ranges.append(u)
      elif u.op is Ops.END and u.src[1] in self.lane_ranges:
        closed = True
    # extents are ints, or uniform UOps for symbolic shapes (then G and the strides live in scalar registers)
    self.extents = [e if (e := _cint(r.src[0])) is not None else r.src[0] for r in self.lane_ranges]
    self.symbolic = any(not isinstance(e, int) for e in self.extents)
    self.G = math.prod(self.extents) if not self.symbolic else None
    self.strides = [math.prod(self.extents[i + 1:]) for i in range(len(self.extents))] if not self.symbolic else None
    self.bufs: dict[UOp, Buf] = {}
    base = 0
    for u in u0:
      if u.op is Ops.PARAM and u.arg.addrspace == AddrSpace.GLOBAL:
        dt = u.dtype
        if dt not in SUPPORTED_DTYPES:
          raise unsupported(u, f"buffer dtype {dt} (lanes are 32 bits: int32, uint32, float32, bool and narrow ints only)")
        size = _cint(u.src[0])
        self.bufs[u] = Buf(u.arg.slot, dt, size, base)
        base += -(-size // self.L) * self.L
    self.const_base = base  # lane-index tile
    if self.first_tile is None:
      self.first_tile = base // self.L + 1
    self.spill_base = self.first_tile
    # an address computed from loaded data: lanes past G must then hold real (clamped) values
    self.data_addr = any(u.op is Ops.INDEX and len(u.src) > 1 and any(x.op is Ops.LOAD for x in u.src[1].toposort()) for u in u0)
    self.lane_reduces = {}
    self.find_dots()
    self.find_lane_reduces()
    self.find_unrolled()

  def lin(self, u: UOp):
    """u as an affine form over lane ranges: ({lane range: coef}, const, [(coef, uniform uop)]), or None."""
    if u.op is Ops.CONST:
      return {}, int(u.arg), []
    if u.op is Ops.CAST and dtypes.is_int(u.dtype):
      return self.lin(u.src[0])
    if u in self.lane_ranges or u in self.lane_reduces:
      return {u: 1}, 0, []
    if u.op is Ops.RANGE and isinstance(v := self.vals.get(u), Const):  # an unrolled reduce step
      return {}, int(v.val), []
    if u.op in (Ops.ADD, Ops.SUB):
      a, b = self.lin(u.src[0]), self.lin(u.src[1])
      if a is None or b is None:
        return None
      s = 1 if u.op is Ops.ADD else -1
      co = dict(a[0])
      for k, v in b[0].items():
        co[k] = co.get(k, 0) + s * v
      return co, a[1] + s * b[1], a[2] + [(s * c, t) for c, t in b[2]]
    if u.op is Ops.MULACC and (c := _cint(u.src[1])) is not None:  # x*c + y (tinygrad's index arithmetic)
      a, b = self.lin(u.src[0]), self.lin(u.src[2])
      if a is None or b is None:
        return None
      co = {k: v * c for k, v in a[0].items()}
      for k, v in b[0].items():
        co[k] = co.get(k, 0) + v
      return co, a[1] * c + b[1], [(cc * c, t) for cc, t in a[2]] + b[2]
    if u.op is Ops.SHL and (c := _cint(u.src[1])) is not None and 0 <= c < 31:
      a = self.lin(u.src[0])
      return None if a is None else ({k: v << c for k, v in a[0].items()}, a[1] << c, [(cc << c, t) for cc, t in a[2]])
    if u.op is Ops.MUL:
      for x, y in ((u.src[0], u.src[1]), (u.src[1], u.src[0])):
        if y.op is Ops.CONST or (y.op is Ops.CAST and y.src[0].op is Ops.CONST):
          a, c = self.lin(x), int(y.arg if y.op is Ops.CONST else y.src[0].arg)
          if a is None:
            return None
          return {k: v * c for k, v in a[0].items()}, a[1] * c, [(cc * c, t) for cc, t in a[2]]
    if self.is_uniform(u):
      return {}, 0, [(1, u)]
    return None

  def is_uniform(self, u: UOp) -> bool:
    """A scalar (SXU) computable int value: constants, reduce loop variables, kernel variables and
    int ADD/SUB/MUL/... of those."""
    if u.op is Ops.CONST:
      return True
    if u.op is Ops.RANGE:
      return u not in self.lane_ranges and u not in self.lane_reduces
    if u.op is Ops.PARAM and u.arg.addrspace == AddrSpace.ALU:
      return True
    if u.op is Ops.CAST and dtypes.is_int(u.dtype) and dtypes.is_int(u.src[0].dtype):
      return self.is_uniform(u.src[0])
    if u.op in _SALU and dtypes.is_int(u.dtype):
      return all(self.is_uniform(s) for s in u.src)
    return False

  # --- int8 matmuls on the MXU: recognising dot-product reduces
  def operand(self, x: UOp):
    """A product operand: a LOAD of a global buffer (through widening int CASTs) -> (Buf, index), else None."""
    while x.op is Ops.CAST and dtypes.is_int(x.dtype) and dtypes.is_int(x.src[0].dtype) and x.src[0].dtype.itemsize <= x.dtype.itemsize:
      x = x.src[0]
    if x.op is not Ops.LOAD or len(x.src) != 1 or x.src[0].op is not Ops.INDEX or len(x.src[0].src) != 2:
      return None
    buf, idx = x.src[0].src
    return (self.bufs[buf], idx) if buf in self.bufs and dtypes.is_int(buf.dtype) else None

  def chain(self, v: UOp) -> tuple[list, list]:
    """v as a sum: (product terms [(x, y)], other summands)."""
    terms, rest = [], []
    def go(u):
      if u.dtype not in (dtypes.int32, dtypes.uint32):
        rest.append(u)
      elif u.op is Ops.MULACC:
        terms.append((u.src[0], u.src[1]))
        go(u.src[2])
      elif u.op is Ops.ADD:
        go(u.src[0])
        go(u.src[1])
      elif u.op is Ops.MUL:
        terms.append((u.src[0], u.src[1]))
      else:
        rest.append(u)
    go(v)
    return terms, rest

  def make_dot(self, top: UOp, terms: list, rng: UOp | None, acc=None) -> Dot | None:
    """A Dot when every term is A[affine(M-like lanes, rng)] * B[affine(N-like lanes, rng)], else None."""
    ext = _cint(rng.src[0]) if rng is not None else 1
    if ext is None or not terms:
      return None
    sides, offs = None, []
    for x, y in terms:
      ox, oy = self.operand(x), self.operand(y)
      if ox is None or oy is None:
        return None
      forms = []
      for buf, idx in (ox, oy):
        f = self.lin(idx)
        if f is None or any(t is not rng for _, t in f[2]):
          return None
        forms.append((buf, {r: c for r, c in f[0].items() if c}, f[1], sum(c for c, _ in f[2])))
      if sides is None:
        if forms[0][1].keys() & forms[1][1].keys():
          return None
        sides = [(f[0], f[1]) for f in forms]
      if [(f[0], f[1]) for f in forms] == sides[::-1]:
        forms = forms[::-1]
      elif [(f[0], f[1]) for f in forms] != sides:
        return None
      offs.append((forms[0][2], forms[0][3], forms[1][2], forms[1][3]))
    (a, ca), (b, cb) = sides
    mlanes = [(r, e, ca.get(r, 0)) for r, e in zip(self.lane_ranges, self.extents) if r not in cb]
    nlanes = [(r, e, cb[r]) for r, e in zip(self.lane_ranges, self.extents) if r in cb]
    a_off = [oa + sa * r for r in range(ext) for oa, sa, _, _ in offs]
    b_off = [ob + sb * r for r in range(ext) for _, _, ob, sb in offs]
    return Dot(top, acc, a, b, mlanes, nlanes, a_off, b_off)

  @staticmethod
  def reg_of(idx: UOp) -> tuple[UOp, int | None] | None:
    """(register buffer, element) an INDEX addresses, or None for memory."""
    buf = idx.src[0]
    while buf.op is Ops.AFTER:
      buf = buf.src[0]
    return (buf, _cint(idx.src[1])) if buf.op is Ops.BUFFER and len(idx.src) == 2 else None

  def find_unrolled(self):
    """Innermost reduce loops of at most UNROLL_REDUCE steps whose copies stay within the budget are
    unrolled; longer ones run U steps per iteration (U dividing the extent) so that the long-latency
    work of several steps is in flight at once."""
    self.unrolled: dict[UOp, int] = {}  # range -> position of its END
    self.partial: dict[UOp, tuple[int, int]] = {}  # longer ones: range -> (position of its END, copies per iteration)
    pos = {u: i for i, u in enumerate(self.uops)}
    for end in self.uops:
      if end.op is not Ops.END or (rng := end.src[1]) not in pos or rng in self.lane_ranges or rng in self.skip \
          or rng in self.lane_reduces or (R := _cint(rng.src[0])) is None:
        continue
      body = self.uops[pos[rng] + 1:pos[end]]
      if any(u.op is Ops.RANGE for u in body):
        continue
      if R <= UNROLL_REDUCE and R * len(body) <= UNROLL_BUDGET // 4:
        self.unrolled[rng] = pos[end]
      elif self.frugal:
        continue
      elif (U := next((U for U in (8, 4, 2) if R % U == 0 and U * len(body) <= UNROLL_BUDGET // 4), None)) is not None:
        self.partial[rng] = (pos[end], U)

  def find_lane_reduces(self):
    """Full reductions (one output element) whose reduce loop can run across the lanes: L elements
    per step into lane-wise partial accumulators, then one tile reduction. Each accumulator update
    in the loop must be acc = acc + x or max(acc, x) with nothing else reading a register."""
    self.lane_reduces: dict[UOp, tuple[int, int, dict]] = {}  # range -> (END position, extent, {acc: tile reduction})
    if self.symbolic or self.G != 1:
      return
    pos = {u: i for i, u in enumerate(self.uops)}
    is_reg_load = lambda u: u.op is Ops.LOAD and u.src[0].op is Ops.INDEX and self.reg_of(u.src[0]) is not None
    for end in self.uops:
      if end.op is not Ops.END or (rng := end.src[1]) not in pos or rng in self.skip or (R := _cint(rng.src[0])) is None or R < 2:
        continue
      body = self.uops[pos[rng] + 1:pos[end]]
      if any(u.op in (Ops.RANGE, Ops.END) for u in body):
        continue
      accs, updates = {}, set()
      for st in (u for u in body if u.op is Ops.STORE):
        acc = self.reg_of(st.src[0]) if st.src[0].op is Ops.INDEX else None
        v = st.src[1]
        mine = [x for x in v.src if is_reg_load(x) and self.reg_of(x.src[0]) == acc]
        mn = _TILE_REDUCE.get((v.op, v.dtype))
        if acc is None or acc[1] is None or len(st.src) != 2 or mn is None or len(mine) != 1:
          break
        accs[acc], updates = mn, updates | {mine[0]}
      else:
        # the tile reduction at END is right only if each accumulator starts this very loop: an
        # accumulator that an enclosing loop carries across several runs of it (a reduce of a
        # reduce fused into one kernel) would be tile-reduced once per run, then added to
        if accs and not any(is_reg_load(u) and u not in updates for u in body) and \
            all(self.starts_fresh(acc, pos[rng]) for acc in accs):
          self.lane_reduces[rng] = (pos[end], R, accs)

  def starts_fresh(self, acc: tuple, at: int) -> bool:
    """The register accumulator acc is (re)initialised after the last loop opened before position at."""
    depth = 0
    for u in reversed(self.uops[:at]):
      if u.op is Ops.STORE and u.src[0].op is Ops.INDEX and self.reg_of(u.src[0]) == acc:
        return depth <= 0
      if u.op is Ops.RANGE:
        depth += 1
      elif u.op is Ops.END:
        depth -= 1
    return False

  def find_dots(self):
    """Dot-product reduces to run on the MXU: reduce loops whose every accumulator update is a sum of
    int products (possibly unrolled), or such sums fully unrolled by tinygrad (no loop left)."""
    self.dots: list[Dot] = []
    self.mxu_tables, self.int8_checks = {}, []
    self.skip: set[UOp] = set()   # UOps replaced by the MXU prologue
    self.dot_at: dict[UOp, list[Dot]] = {}  # where a Dot's result enters the lane loop
    if self.symbolic:
      return
    pos = {u: i for i, u in enumerate(self.uops)}
    reg_of = self.reg_of
    for end in self.uops:
      if end.op is not Ops.END or (rng := end.src[1]) in self.lane_ranges or rng not in pos:
        continue
      body = self.uops[pos[rng] + 1:pos[end]]
      stores = [u for u in body if u.op is Ops.STORE]
      dots = []
      for st in stores:
        acc = reg_of(st.src[0]) if st.src[0].op is Ops.INDEX else None
        terms, rest = self.chain(st.src[1])
        if acc is None or acc[1] is None or len(st.src) != 2 or len(rest) != 1 or rest[0].op is not Ops.LOAD \
            or reg_of(rest[0].src[0]) != acc or (d := self.make_dot(st, terms, rng, acc)) is None:
          break
        dots.append(d)
      else:
        inside, seen, stack = set(body), set(), list(stores)
        while stack:  # everything in the loop must feed the accumulators
          u = stack.pop()
          if u in seen or u not in inside:
            continue
          seen.add(u)
          stack.extend(u.src)
        if dots and all(u in seen or u.op is Ops.CONST for u in body):
          self.dots += dots
          self.skip.update(body + [rng, end])
          self.dot_at[rng] = dots
    covered: set[UOp] = set()
    for u in reversed(self.uops):  # fully unrolled sums: the largest chains first
      if u in self.skip or u in covered or u.op not in (Ops.ADD, Ops.MULACC):
        continue
      terms, rest = self.chain(u)
      if len(terms) < 2 or rest or (d := self.make_dot(u, terms, None)) is None:
        continue
      self.dots.append(d)
      self.dot_at[u] = [d]
      stack = [u]
      while stack:
        c = stack.pop()
        if c.op in (Ops.ADD, Ops.MULACC, Ops.MUL) and c not in covered:
          covered.add(c)
          stack.extend(c.src[2:] if c.op is Ops.MULACC else c.src if c.op is Ops.ADD else [])
    if not self.dots:
      return
    # layout after the constant pool, per Dot: its K blocks (each the Mt activation tiles [mb] of [m][k]
    # then the Nt weight tiles [nb] of [k][n], staged in place from preloaded index tables), then
    # every Dot's result area ([nb][mb] tiles of [m][n]) and its lane table (per lane of the kernel,
    # the element of the result area that lane reads)
    import numpy as np
    L, N = self.L, self.cfg.N
    t = self.first_tile
    tables: dict[int, list[int]] = {}
    for d in self.dots:
      M, K, Nc = d.dims
      Mt, Kt, Nt = -(-M // N), -(-K // N), -(-Nc // N)
      d.X = t
      t += Kt * (Mt + Nt)
      fa, fb = _flat_offsets(d.mlanes), _flat_offsets(d.nlanes)
      # element indices to gather in place: padding lanes read the constant pool's zero (lane 0 of the lane-index tile)
      ea = np.full((Mt * N, Kt * N), self.const_base, dtype=np.int64)
      ea[:M, :K] = d.a.base + fa[:, None] + np.array(d.a_off)[None, :]
      eb = np.full((Kt * N, Nt * N), self.const_base, dtype=np.int64)
      eb[:K, :Nc] = d.b.base + np.array(d.b_off)[:, None] + fb[None, :]
      xa = ea.reshape(Mt, N, Kt, N).transpose(2, 0, 1, 3).reshape(Kt, Mt, L)  # [kb][mb] tiles of [m][k]
      wb = eb.reshape(Kt, N, Nt, N).transpose(0, 2, 1, 3).reshape(Kt, Nt, L)  # [kb][nb] tiles of [k][n]
      # with one K block, operand tiles already laid out in a buffer are read there, not staged
      # (lanes of padding rows m >= M or columns n >= Nc only reach unused results)
      lane = np.arange(L)
      d.direct = {}
      if Kt == 1:
        for i, (row, ok) in enumerate([(r, lane // N < M - mb * N) for mb, r in enumerate(xa[0])] +
                                      [(r, lane % N < Nc - nb * N) for nb, r in enumerate(wb[0])]):
          base = row[ok][0] - lane[ok][0]
          if base % L == 0 and (row[ok] == base + lane[ok]).all():
            d.direct[i] = base // L
        if any(mb not in d.direct or d.direct[mb] != d.direct[0] + mb for mb in range(Mt)):  # MMUL reads Mt tiles in a row
          d.direct = {i: a for i, a in d.direct.items() if i >= Mt}
      for i, row in enumerate(np.concatenate([xa, wb], axis=1).reshape(-1, L)):
        if i not in d.direct:
          tables[d.X + i] = row.tolist()
      for buf, e in ((d.a, ea[:M, :K]), (d.b, eb[:K, :Nc])):
        if buf.dtype != dtypes.int8:
          self.int8_checks.append((buf.slot, np.unique(e) - buf.base))
    g_all = np.arange(-(-self.G // L) * L)
    g = np.minimum(g_all, self.G - 1)  # padding lanes repeat the last lane
    rv = {r: (g // s) % e for r, s, e in zip(self.lane_ranges, self.strides, self.extents)}
    def flat(lanes):
      f = np.zeros_like(g)
      for r, e, _ in lanes:
        f = f * e + rv[r]
      return f
    for d in self.dots:
      M, K, Nc = d.dims
      Mt, Nt = -(-M // N), -(-Nc // N)
      m, n = flat(d.mlanes), flat(d.nlanes)
      rows = (((n // N) * Mt + m // N) * L + (m % N) * N + n % N).reshape(-1, L)
      # lane tile t reads result tile t as it is (lanes past G are don't-care unless values become addresses):
      # the lane loop loads it from PSUM, no copy, no gather
      d.in_psum = Mt * Nt <= self.cfg.PSUM_TILES and Mt <= 255 and not self.data_addr and \
        all((r == q * L + lane)[g_all[q * L:(q + 1) * L] < self.G].all() for q, r in enumerate(rows))
      d.S, d.T = t, t + Mt * Nt
      if not d.in_psum:
        t = d.T + len(rows)
        for i, row in enumerate(rows):
          tables[d.T + i] = (row + d.S * L).tolist()
    if t + 16 > self.cfg.VMEM_TILES:  # no room for the staging tiles (and some spill space): keep the VPU loops
      self.dots, self.skip, self.dot_at, self.int8_checks = [], set(), {}, []
      return
    self.mxu_tables = tables
    self.spill_base = t

  def mxu_prologue(self):
    """Run every Dot on the MXU: stage its K blocks in place (VLD index table, VGATHER, VST), then for
    each group of PSUM-resident result tiles and each K block, MLW + MMUL per weight tile column
    with acc from the second block on, and copy the group's PSUM tiles to the result area. While
    the first group runs block kb, the SXU stages block kb+1 between the MMULs (the MXU reads VMEM
    on its own port; the tiles it owns only grow upwards, so the next block is never one of them)."""
    N, P = self.cfg.N, self.cfg.PSUM_TILES
    def counted(n: int, body):
      """body() n times in an SXU loop (none for n == 1)."""
      if n <= 0:
        return
      if n == 1:
        return body()
      end = self.label()
      if n > LOOPI_MAX:
        r = self.sreg("MXU loop count", temp=False)
        self.ins("LI", f"s{r}", n)
        self.ins("LOOP", f"s{r}", end)
        self.release(r)  # LOOP reads its count once, on entry
      else:
        self.ins("LOOPI", n, end)
      body()
      self.code.append(("label", end))
    def stage(p: int, tiles: list[int]):
      for i in range(0, len(tiles), 4):  # in fours: the loads' and gathers' latencies overlap
        vs = [(VT("stage"), f"[s{p} + {o}]") for o in tiles[i:i + 4]]
        for v, a in vs:
          self.ins("VLD", v, a)
        for v, _ in vs:
          self.ins("VGATHER", v, v, "[s0 + 0]")
        for v, a in vs:
          self.ins("VST", v, a)
    for d in self.dots:
      M, K, Nc = d.dims
      Mt, Kt, Nt = -(-M // N), -(-K // N), -(-Nc // N)
      B = Mt + Nt  # tiles per K block
      px, pc = self.sreg("MXU block pointer", temp=False), self.sreg("MXU copy pointer", temp=False)
      at = lambda i: f"[s0 + {d.direct[i]}]" if i in d.direct else f"[s{px} + {i}]"
      self.ins("LI", f"s{px}", d.X)
      stage(px, [i for i in range(B) if i not in d.direct])
      mc = min(Mt, 255, P)
      first = True
      for m0 in range(0, Mt, mc):
        mc = min(mc, Mt - m0)
        for n0 in range(0, Nt, P // mc):
          nn = min(P // mc, Nt - n0)
          def block(acc: int, staging: bool):
            """One K block at [px]: MLW + MMUL per column; staging block px + B in between."""
            todo = list(range(B, 2 * B)) if staging else []
            per = -(-len(todo) // nn)
            for j in range(nn):
              self.ins("MLW", at(Mt + n0 + j))
              self.ins("MMUL", f"[s0 + {j * mc}]", at(m0), mc, acc)
              stage(px, todo[j * per:(j + 1) * per])
            self.ins("SADDI", f"s{px}", f"s{px}", B)
          self.ins("LI", f"s{px}", d.X)
          block(0, first and Kt > 1)
          if first:
            counted(Kt - 2, lambda: block(1, True))
            counted(min(Kt - 1, 1), lambda: block(1, False))
          else:
            counted(Kt - 1, lambda: block(1, False))
          first = False
          if d.in_psum:
            continue
          # PSUM tile j*mc + i -> result tile (n0 + j)*Mt + m0 + i, in fours
          self.ins("LI", f"s{pc}", 0)
          self.ins("LI", f"s{px}", d.S + n0 * Mt + m0)
          def copy(cnt: int):
            vs = [VT("psum") for _ in range(cnt)]
            for i, v in enumerate(vs):
              self.ins("PLD", v, f"[s{pc} + {i}]")
            for i, v in enumerate(vs):
              self.ins("VST", v, f"[s{px} + {i}]")
          for j in range(nn if mc < Mt else 1):
            cnt = mc if mc < Mt else nn * mc
            counted(cnt // 4, lambda: (copy(4), self.ins("SADDI", f"s{pc}", f"s{pc}", 4), self.ins("SADDI", f"s{px}", f"s{px}", 4)))
            if cnt % 4:
              copy(cnt % 4)
              self.ins("SADDI", f"s{pc}", f"s{pc}", cnt % 4)
              self.ins("SADDI", f"s{px}", f"s{px}", cnt % 4)
            if mc < Mt:
              self.ins("SADDI", f"s{px}", f"s{px}", Mt - mc)
      self.release(px)
      self.release(pc)
      self.mxu_regs += [px, pc]

  def dot_value(self, d: Dot, out: VT | None = None) -> VT:
    """The Dot's result for every lane: a gather from its result area through its lane table."""
    idx, out = VT("dotidx"), out or VT("dot")
    if d.in_psum:
      self.ins("PLD", out, f"[s{self.s_t} + {self.t_off}]")
      return out
    self.ins("VLD", idx, f"[s{self.s_t} + {d.T + self.t_off}]")
    self.ins("VGATHER", out, idx, "[s0 + 0]")
    return out

  # --- lowering
  def value(self, u: UOp) -> Any:
    if u not in self.vals:
      raise unsupported(u, "value used before it is defined")
    return self.vals[u]

  def lower(self) -> Kernel:
    return self.finish(self.emit())

  def finish(self, code: list[tuple]) -> Kernel:
    """Schedule and allocate the virtual code; the kernel record for the runtime."""
    code = schedule(optimize(loops.legalise(code, self.name)), NPHYS)
    text, spills, weights = allocate(code, self.spill_base)
    bufs = sorted(self.bufs.values(), key=lambda b: b.slot)
    return Kernel(text, bufs, sorted(self.written), self.var_regs, self.spill_base + spills,
                  {self.const_base // self.L: list(range(self.L)), **self.mxu_tables}, self.cfg.N, self.int8_checks,
                  loops.executed(code, weights))

  def emit(self) -> list[tuple]:
    """The kernel as virtual code (VT registers, physical scalar registers), ending in HALT."""
    self.analyse()
    L, cfg = self.L, self.cfg
    self.var_regs: list[tuple[int, str, int]] = []
    for u in self.uops:  # kernel variables first: symbolic extents need them before the lane loop
      if u.op is Ops.PARAM and u.arg.addrspace == AddrSpace.ALU:
        r = self.sreg("kernel variable", temp=False)
        self.var_regs.append((u.arg.slot, u.arg.name, r))
        self.vals[u] = SReg(r)
    self.var_regs.sort()  # tinygrad passes `vals` in slot order
    if self.symbolic:
      self.lower_symbolic_extents()
    tiles_g = -(-self.G // L) if not self.symbolic else None
    U, iters = self.unroll(tiles_g)
    looping = self.symbolic or iters > 1
    self.s_g0 = self.sreg("lane base", temp=False) if looping else 0
    self.s_t = self.sreg("lane tile", temp=False) if looping else 0
    self.mxu_regs: list[int] = []
    if self.dots:  # first: the MXU's latency overlaps everything after it
      self.mxu_prologue()
      self.skip |= self.dead()
    self.iota = VT("iota")
    self.ins("VLD", self.iota, f"[s0 + {self.const_base // L}]")
    self.ones = VT("ones")
    self.ins("VFILL", self.ones, 1)
    if looping:
      self.ins("LI", f"s{self.s_g0}", 0)
      self.ins("LI", f"s{self.s_t}", 0)
    self.hoist_at, self.hoisted = len(self.code), {}
    lane_end = self.label()
    if self.symbolic:
      self.ins("LOOP", f"s{self.s_count}", lane_end)
    elif iters > LOOPI_MAX:
      r = self.sreg("lane loop count", temp=False)
      self.ins("LI", f"s{r}", iters)
      self.ins("LOOP", f"s{r}", lane_end)
      self.release(r)  # LOOP reads its count once, on entry
    elif looping:
      self.ins("LOOPI", iters, lane_end)
    g0 = self.iota
    if looping:
      g0 = VT("g")
      self.ins("VSPLAT", g0, f"s{self.s_g0}")
      self.ins("VADD", g0, g0, self.iota)
    self.written: set[int] = set()
    g = g0
    self.in_body = True  # constants used in here are filled once, in front of the lane loop
    for c in range(U):  # U copies of the body per iteration: tile s_t + c
      self.t_off = c
      if c:  # each copy's lanes from the previous copy's: one constant (L) for all of them
        g, prev = VT("g"), g
        self.ins("VADD", g, prev, self.tile(Const(L, dtypes.int32), dtypes.int32))
      self.g = g
      if self.symbolic:
        lim = VT("glim")
        self.ins("VSPLAT", lim, f"s{self.s_G}")
        self.ins("VSUB", lim, lim, self.ones)
        self.ins("VMIN", self.g, self.g, lim)
      elif self.G % L and (looping or c == U - 1):
        clamped = VT("g")
        self.ins("VMIN", clamped, self.g, self.tile(Const(self.G - 1, dtypes.int32), dtypes.int32))
        if any(d.in_psum for d in self.dots):  # PSUM results differ past G: scatters write the real lanes only
          self.valid = VT("valid")
          self.ins("VCMPLT", self.valid, self.g, self.tile(Const(self.G, dtypes.int32), dtypes.int32))
        self.g = clamped
      self.lower_body()
      self.valid = None
    if looping:
      self.ins("SADDI", f"s{self.s_t}", f"s{self.s_t}", U)
      self.ins("SADDI", f"s{self.s_g0}", f"s{self.s_g0}", U * L)
    self.code.append(("label", lane_end))
    self.ins("HALT")
    self.code[self.hoist_at:self.hoist_at] = [("ins", "VFILL", t, bits) for bits, t in self.hoisted.items()]
    return _drop_unused(_dce(self.code), [self.s_g0, self.s_t] + self.mxu_regs)

  def unroll(self, tiles: int | None) -> tuple[int, int]:
    """(copies of the body per lane-loop iteration, iterations). Small kernels are unrolled
    completely, larger ones by up to 8 so that the loop's two pointer updates are amortised; the
    copies share hoisted constants and leave room for the SXU to pair loads/stores with ALU ops."""
    if tiles is None:
      return 1, 1
    size = sum(1 for u in self.uops if u.op not in (Ops.CONST, Ops.PARAM, Ops.SINK, Ops.INDEX, Ops.NOOP))
    if tiles <= UNROLL_FULL and tiles * size <= UNROLL_BUDGET:
      return tiles, 1
    for U in (8, 4, 2):
      if tiles % U == 0 and U * size <= UNROLL_BUDGET:
        return U, tiles // U
    return 1, tiles

  def lower_body(self):
    """One copy of the kernel body for the lane tile s_t + t_off."""
    last_use = self.last_uses()
    dies: dict[int, list[UOp]] = {}
    for u, j in last_use.items():
      dies.setdefault(j, []).append(u)
    self.zeroed: dict[VT, tuple] = {}  # register accumulators last filled with 0 -> that VFILL
    self.red = None  # inside a lane-parallel reduce: (range, tile pointer reg, tile offset, lane mask or None)
    self.affine: dict[tuple, VT] = {}  # lane_affine's tiles of this copy
    j = 0
    while j < len(self.uops):
      if self.uops[j] in self.lane_reduces:
        j = self.lower_lane_reduce(j, dies)
      elif self.uops[j] in self.unrolled:
        j = self.lower_unrolled(j, dies)
      elif self.uops[j] in self.partial:
        j = self.lower_partial(j, dies)
      else:
        self.lower_at(j, dies)
        j += 1
    if self.loops:
      raise unsupported(self.loops[-1][0], "a loop without END")

  def lower_at(self, j: int, dies: dict[int, list[UOp]]):
    """Lower UOp j, then free the temporaries and the scalar registers whose last use it was."""
    u = self.uops[j]
    if u in self.dot_at:
      if u.op is Ops.RANGE:  # the reduce loop is replaced: acc += the MXU's result
        for d in self.dot_at[u]:
          acc = self.value(d.acc[0])[d.acc[1]]
          if (fill := self.zeroed.pop(acc, None)) is not None:  # acc = 0 + dot: gather straight into acc
            self.code = [c for c in self.code if c is not fill]  # that very fill (an equal one may exist)
            self.dot_value(d, acc)
          else:
            self.ins("VADD", acc, acc, self.dot_value(d))
      else:
        self.vals[u] = self.dot_value(self.dot_at[u][0])
    elif u not in self.skip:
      self.lower_uop(u)
    for r in self.temps:
      self.release(r)
    self.temps = []
    for d in dies.get(j, []):
      v = self.vals.get(d)
      if isinstance(v, SReg) and d.op is not Ops.RANGE and not (d.op is Ops.PARAM):
        self.release(v.reg)

  def lower_unrolled(self, j: int, dies: dict[int, list[UOp]]) -> int:
    """A short innermost reduce loop as straight-line copies of its body, the range a constant in
    each (folded into addresses), in the loop's order (fp sums round exactly as the loop would)."""
    rng, e = self.uops[j], self.unrolled[self.uops[j]]
    for i in range(_cint(rng.src[0])):
      self.vals[rng] = Const(i, dtypes.int32)
      for k in range(j + 1, e):
        self.lower_at(k, dies)
    self.lower_at(e, dies)
    return e + 1

  def lower_partial(self, j: int, dies: dict[int, list[UOp]]) -> int:
    """A long reduce loop with U copies of its body per iteration, in the loop's order: copy c has
    r = var + c (addresses fold c in; the loop variable and its induction registers step by U)."""
    rng = self.uops[j]
    e, U = self.partial[rng]
    self.lower_at(j, dies)
    lp, steps = self.loops[-1], []
    for c in range(U):
      lp[6] = c
      if c:
        steps.append(r := self.sreg("unrolled step", temp=False))
        self.ins("SADDI", f"s{r}", f"s{lp[2]}", c)
      self.vals[rng] = SReg(steps[-1] if c else lp[2])
      for k in range(j + 1, e):
        self.lower_at(k, dies)
    for r in steps:
      self.release(r)
    self.lower_at(e, dies)
    return e + 1

  def lower_lane_reduce(self, j: int, dies: dict[int, list[UOp]]) -> int:
    """The reduce loop at j across the lanes (find_lane_reduces): element r of step c in lane r - c*L,
    steps unrolled up to UNROLL_FULL, lanes past the extent masked out of the updates. Returns the
    position after its END."""
    rng = self.uops[j]
    e, R, accs = self.lane_reduces[rng]
    L, c = self.L, lambda v: self.tile(Const(v, dtypes.int32), dtypes.int32)
    steps = -(-R // L)
    looped = steps > UNROLL_FULL
    if looped:
      pt, pe = self.sreg("reduce tile", temp=False), self.sreg("reduce element", temp=False)
      self.ins("LI", f"s{pt}", 0)
      self.ins("LI", f"s{pe}", 0)
      end = self.label()
      if steps > LOOPI_MAX:
        n = self.sreg("reduce count", temp=False)
        self.ins("LI", f"s{n}", steps)
        self.ins("LOOP", f"s{n}", end)
        self.release(n)
      else:
        self.ins("LOOPI", steps, end)
    for step in range(1 if looped else steps):
      r = self.iota
      if looped:
        r = VT("r")
        self.ins("VSPLAT", r, f"s{pe}")
        self.ins("VADD", r, r, self.iota)
      elif step:
        r = VT("r")
        self.ins("VADD", r, self.iota, c(step * L))
      mask = None
      if R % L and (looped or step == steps - 1):
        mask, rc = VT("rmask"), VT("r")
        self.ins("VCMPLT", mask, r, c(R))
        self.ins("VMIN", rc, r, c(R - 1))
        r = rc
      self.vals[rng] = r
      self.red = (rng, pt if looped else 0, 0 if looped else step, mask)
      for k in range(j + 1, e):
        self.lower_at(k, dies)
    self.red = None
    if looped:
      self.ins("SADDI", f"s{pt}", f"s{pt}", 1)
      self.ins("SADDI", f"s{pe}", f"s{pe}", L)
      self.code.append(("label", end))
      self.release(pt)
      self.release(pe)
    for (buf, i), mn in accs.items():
      acc = self.value(buf)[i]
      self.ins(mn, acc, acc)
    self.lower_at(e, dies)
    return e + 1

  def dead(self) -> set[UOp]:
    """Pure UOps only the replaced dot products used (their loads and index arithmetic)."""
    pure = set(_ALU) | {Ops.LOAD, Ops.INDEX, Ops.CAST, Ops.BITCAST, Ops.WHERE, Ops.CONST}
    needed: set[UOp] = set()
    stack = [u for u in self.uops if u.op not in pure and u not in self.skip]
    while stack:
      u = stack.pop()
      if u in needed:
        continue
      needed.add(u)
      if u not in self.dot_at:
        stack.extend(u.src)
    return {u for u in self.uops if u.op in pure and u not in needed}

  def last_uses(self) -> dict[UOp, int]:
    """Index of the last UOp reading each value; a value read inside a loop it was defined outside
    of lives until that loop's END (it is read again next iteration)."""
    pos = {u: i for i, u in enumerate(self.uops)}
    spans = [(pos[u.src[1]], i) for i, u in enumerate(self.uops) if u.op is Ops.END and u.src[1] in pos]
    last: dict[UOp, int] = {}
    for j, u in enumerate(self.uops):
      for sidx in u.src:
        if sidx not in pos:
          continue
        i, eff = pos[sidx], j
        for s, e in spans:
          if i < s < j <= e:
            eff = max(eff, e)
        last[sidx] = max(last.get(sidx, -1), eff)
    return last

  def lower_symbolic_extents(self):
    """G, the strides and the lane-loop count in scalar registers (kept for the whole kernel)."""
    L = self.L
    ext = [self.scalar_expr(e) if not isinstance(e, int) else self.scalar(Const(e, dtypes.int32)) for e in self.extents]
    self.s_strides = []
    acc = 0
    for r in reversed(ext):
      self.s_strides.insert(0, acc)  # 0 stands for a stride of 1
      if acc == 0:
        acc = r
      else:
        nxt = self.sreg("symbolic stride")
        self.ins("SMUL", f"s{nxt}", f"s{acc}", f"s{r}")
        acc = nxt
    self.s_G, self.s_ext = acc, ext
    self.s_count = self.sreg("lane loop count")
    self.ins("SADDI", f"s{self.s_count}", f"s{acc}", L - 1)
    self.ins("SSRA", f"s{self.s_count}", f"s{self.s_count}", f"s{self.scalar(Const(L.bit_length() - 1, dtypes.int32))}")
    self.temps = []  # these registers live for the whole kernel

  def lane_range_tile(self, r: UOp) -> VT:
    i = self.lane_ranges.index(r)
    if self.symbolic:
      t, src = VT(f"r{i}"), self.g
      if self.s_strides[i]:
        sp = VT("stride")
        self.ins("VSPLAT", sp, f"s{self.s_strides[i]}")
        self.ins("VCDIV", t, src, sp)
        src = t
      if i > 0:
        ep = VT("extent")
        self.ins("VSPLAT", ep, f"s{self.s_ext[i]}")
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
      self.ins(_SALU[u.op], f"s{r}", f"s{a}", f"s{b}")
      return r
    raise unsupported(u, "uniform address term")

  def address(self, a: Addr, mask: VT | None = None) -> tuple[str, Any]:
    """("tile", "[sX + imm]", None) for a contiguous aligned access, else ("elem", index tile, "[sX + imm]" element base).
    Lanes off in mask (the access's gate and the open IFs) may hold any index: they address element 0."""
    buf: Buf = a.buf
    L = self.L
    form = self.lin(a.idx) if mask is None else None
    if self.red and form is not None and form[0].get(self.red[0]) == 1 and form[1] % L == 0 and not form[2] \
        and all(k in self.lane_ranges for k in form[0] if k is not self.red[0]):
      # L consecutive elements of a lane-parallel reduce (the lane ranges are 0: one output element)
      return "tile", f"[s{self.red[1]} + {(buf.base + form[1]) // L + self.red[2]}]", None
    if form is not None and not self.symbolic and self.G % L == 0 and all(form[0].get(r, 0) == s for r, s in zip(self.lane_ranges, self.strides)) \
        and form[1] % L == 0 and all(c % L == 0 for c, _ in form[2]):
      # element g + const + sum(c * t) -> tile (g0 / L) + const / L + sum(c / L * t)
      if not form[2]:
        return "tile", f"[s{self.s_t} + {(buf.base + form[1]) // L + self.t_off}]", None
      reg = self.sreg("tile address")
      self.ins("SADDI", f"s{reg}", f"s{self.s_t}", 0)
      for c, t in form[2]:
        tr = self.scalar_expr(t)
        k = self.scalar(Const(c // L, dtypes.int32))
        tmp = self.sreg("address term")
        self.ins("SMUL", f"s{tmp}", f"s{tr}", f"s{k}")
        self.ins("SADD", f"s{reg}", f"s{reg}", f"s{tmp}")
      return "tile", f"[s{reg} + {(buf.base + form[1]) // L + self.t_off}]", None
    if form is not None:
      # the lane part in an index tile (loop invariant, shared), the constant and uniform terms in the
      # gather's base register and immediate
      idx = self.lane_affine(form[0])
      if not form[2]:
        return "elem", idx, f"[s0 + {buf.base + form[1]}]"
      if len(form[2]) == 1 and form[2][0][0] == 1:
        return "elem", idx, f"[s{self.scalar_expr(form[2][0][1])} + {buf.base + form[1]}]"
      if len(form[2]) == 1 and (ind := self.induction(*form[2][0])) is not None:
        return "elem", idx, f"[s{ind[0]} + {buf.base + form[1] + ind[1]}]"
      reg = self.sreg("gather base")
      self.ins("LI", f"s{reg}", 0)
      for c, t in form[2]:
        tmp = self.sreg("address term")
        self.ins("SMUL", f"s{tmp}", f"s{self.scalar_expr(t)}", f"s{self.scalar(Const(c, dtypes.int32))}")
        self.ins("SADD", f"s{reg}", f"s{reg}", f"s{tmp}")
      return "elem", idx, f"[s{reg} + {buf.base + form[1]}]"
    idx = self.tile(self.value(a.idx), dtypes.int32)
    if mask is not None:
      # lanes whose gate is off read element 0 of the buffer instead of an invalid address
      safe = VT("addr")
      self.ins("VSEL", safe, mask, idx, self.tile(Const(0, dtypes.int32), dtypes.int32))
      idx = safe
    return "elem", idx, f"[s0 + {buf.base}]"

  def induction(self, c: int, r: UOp) -> tuple[int, int] | None:
    """(register, immediate) with c * r = register + immediate for an open reduce loop's r: the
    register (c * the loop variable) is set before the loop and stepped at its end."""
    for i, lp in enumerate(self.loops):
      if lp[0] is r:
        if c not in lp[4] and self.frugal:
          return None  # the address is computed in temporaries instead
        if c not in lp[4]:
          lp[4][c] = reg = self.sreg("induction variable", temp=False)
          self.code.insert(lp[3] + 1, ("ins", "LI", f"s{reg}", 0))
          for inner in self.loops[i + 1:]:
            inner[3] += 1
        return lp[4][c], c * lp[6]
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

  def lower_uop(self, u: UOp):
    op = u.op
    if op in (Ops.SINK, Ops.GROUP, Ops.NOOP, Ops.BARRIER, Ops.STACK):
      return
    if op is Ops.CONST:
      self.vals[u] = Const(u.arg, u.dtype)
      return
    if op is Ops.PARAM:
      if u.arg.addrspace == AddrSpace.GLOBAL:
        self.vals[u] = self.bufs[u]
      elif u not in self.vals:
        raise unsupported(u, f"parameter in address space {u.arg.addrspace}")
      return
    if op is Ops.BUFFER and u.arg.addrspace == AddrSpace.REG:
      self.vals[u] = tuple(VT(f"acc{i}") for i in range(int(u.src[0].arg if u.src[0].op is Ops.CONST else u.src[0].src[0].arg)))
      return
    if op is Ops.AFTER:
      self.vals[u] = self.value(u.src[0])
      return
    if op is Ops.INDEX:
      buf = self.value(u.src[0])
      gate = u.src[2] if len(u.src) > 2 else None
      self.vals[u] = Addr(buf, u.src[1], gate)
      return
    if op is Ops.RANGE:
      if u in self.lane_ranges:
        self.vals[u] = self.lane_range_tile(u)
        return
      ext = u.src[0]
      var = self.sreg("loop variable", temp=False)
      end = self.label()
      start = len(self.code)
      self.ins("LI", f"s{var}", 0)
      step = self.partial[u][1] if u in self.partial else 1
      if ext.op is Ops.CONST or (ext.op is Ops.CAST and ext.src[0].op is Ops.CONST):
        n = int(ext.arg if ext.op is Ops.CONST else ext.src[0].arg) // step
        if n > LOOPI_MAX:
          c = self.sreg("loop count")
          self.ins("LI", f"s{c}", n)
          self.ins("LOOP", f"s{c}", end)
        else:
          self.ins("LOOPI", n, end)
      else:
        self.ins("LOOP", f"s{self.scalar_expr(ext)}", end)
      self.loops.append([u, end, var, start, {}, step, 0])
      self.vals[u] = SReg(var)
      return
    if op is Ops.END:
      rng = u.src[1]
      if rng in self.lane_ranges or rng in self.lane_reduces or rng in self.unrolled:
        return
      if not self.loops or self.loops[-1][0] is not rng:
        raise unsupported(u, "END of a range that is not the innermost open loop")
      _, end, var, _, derived, step, _ = self.loops.pop()
      for c, r in derived.items():
        self.ins("SADDI", f"s{r}", f"s{r}", c * step)
        self.release(r)
      self.ins("SADDI", f"s{var}", f"s{var}", step)
      self.code.append(("label", end))
      self.release(var)
      return
    if op is Ops.LOAD:
      a = self.value(u.src[0])
      if isinstance(a.buf, tuple):
        self.vals[u] = a.buf[self.const_index(a.idx)]
        return
      if u.dtype not in SUPPORTED_DTYPES:
        raise unsupported(u, "dtype")
      gate = u.src[2] if len(u.src) > 2 else a.gate  # LOAD(INDEX, alt, gate): gated-off lanes read alt
      kind, where, base = self.address(a, self.mask_of(gate))
      t = VT("ld")
      if kind == "tile":
        self.ins("VLD", t, where)
      else:
        self.ins("VGATHER", t, where, base)
      if gate is not None:
        alt = self.tile(self.value(u.src[1]), u.dtype) if len(u.src) > 1 else self.tile(Const(0, u.dtype), u.dtype)
        out = VT("gated")
        self.ins("VSEL", out, self.tile(self.value(gate), dtypes.bool), t, alt)
        t = out
      self.vals[u] = t
      return
    if op is Ops.STORE:
      a = self.value(u.src[0])
      val = self.value(u.src[1])
      if isinstance(a.buf, tuple):
        dst = a.buf[self.const_index(a.idx)]
        self.zeroed.pop(dst, None)
        keep = self.mask_of(u.src[2] if len(u.src) > 2 else None, self.red[3] if self.red else None)
        if keep is not None:  # lanes gated off (or past a lane reduce's extent) keep their value
          self.ins("VSEL", dst, keep, self.tile(val, u.src[1].dtype), dst)
          return
        if isinstance(val, Const):
          self.ins("VFILL", dst, _imm(val.val, val.dtype))
          if self.code[-1][-1] == 0:  # a Dot accumulating into it next replaces the fill
            self.zeroed[dst] = self.code[-1]
        else:
          self.ins("VMOV", dst, self.tile(val, u.src[1].dtype))
        return
      self.written.add(a.buf.slot)
      gate = self.mask_of(u.src[2] if len(u.src) > 2 else a.gate)
      v = self.tile(val, u.src[1].dtype)
      kind, where, base = self.address(a, gate)
      if kind == "tile":
        self.ins("VST", v, where)
      else:
        self.ins("VSCATTER", v, where, self.all_of(gate, self.valid) or self.ones, base)
      return
    if op is Ops.IF:  # SIMT: the block runs in every lane, its stores masked by the condition
      self.ifs.append(u.src[0])
      return
    if op is Ops.ENDIF:
      self.ifs.pop()
      return
    if op is Ops.CAST or op is Ops.BITCAST:
      self.vals[u] = self.cast(u)
      return
    if op is Ops.WHERE:
      c, a, b = (self.value(s) for s in u.src)
      if isinstance(c, Const):
        self.vals[u] = a if c.val else b
        return
      t = VT("sel")
      self.ins("VSEL", t, self.tile(c, dtypes.bool), self.tile(a, u.dtype), self.tile(b, u.dtype))
      self.vals[u] = t
      return
    if op in _ALU:
      self.vals[u] = self.alu(u)
      return
    raise unsupported(u, "no TinyTPU lowering for this UOp")

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
    if all(isinstance(s, Const) for s in srcs):
      return Const(_fold(u.op, dt, [s.val for s in srcs]), dt)
    if u.op in _SALU and dtypes.is_int(dt) and dt.itemsize == 4 and all(isinstance(s, (Const, SReg)) for s in srcs):
      r = self.sreg("uniform arithmetic", temp=False)
      self.ins(_SALU[u.op], f"s{r}", *(f"s{self.scalar(s)}" for s in srcs))
      return SReg(r)
    mn = _ALU[u.op][_cls(src_dt)]
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
    return t

  def cast(self, u: UOp) -> Any:
    src, dt, sdt = self.value(u.src[0]), u.dtype, u.src[0].dtype
    if isinstance(src, Const) and u.op is Ops.CAST:
      if dt not in SUPPORTED_DTYPES:
        raise unsupported(u, f"constant of dtype {dt}")
      return Const(bool(src.val) if dt == dtypes.bool else float(src.val) if dtypes.is_float(dt) else _fold_int(src.val, dt), dt)
    if dt not in SUPPORTED_DTYPES or sdt not in SUPPORTED_DTYPES:
      raise unsupported(u, f"cast {sdt} -> {dt}: only 32-bit lane dtypes (int32, uint32, float32, bool, int8/16, uint8/16)")
    if isinstance(src, Const):
      if u.op is Ops.BITCAST:
        return Const(struct.unpack("<f" if dtypes.is_float(dt) else "<I", struct.pack("<I", _bits(src.val, sdt)))[0], dt)
      return Const(src.val if not dtypes.is_int(dt) else int(src.val), dt) if dt != dtypes.bool else Const(bool(src.val), dt)
    if u.op is Ops.BITCAST or dt == sdt:
      return src
    if isinstance(src, SReg) and dtypes.is_int(dt) and dtypes.is_int(sdt) and dt.itemsize == 4 and sdt.itemsize == 4:
      return src
    x = self.tile(src, sdt)
    t = VT("cast")
    if dt == dtypes.bool:
      self.ins("VFCMPNE" if dtypes.is_float(sdt) else "VCMPNE", t, x, self.tile(Const(0, sdt), sdt))
    elif dtypes.is_float(dt):
      self.ins("VU2F" if _cls(sdt) == 1 and sdt != dtypes.bool else "VI2F", t, x)
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


# ---------------------------------------------------------------------------------------------
# register allocation: linear scan over the instruction list, loop-aware, spilling to VMEM


def _dce(code: list[tuple]) -> list[tuple]:
  """Drop vector instructions whose result no side effect (store, scatter, extract) ever needs."""
  live: set[VT] = set()
  for c in code:
    if vdef(c) is None:
      live.update(vts(c))
  changed = True
  while changed:
    changed = False
    for c in code:
      if (d := vdef(c)) is not None and d in live and not live.issuperset(srcs := vreads(c)):
        live.update(srcs)
        changed = True
  return [c for c in code if (d := vdef(c)) is None or d in live]


def _drop_unused(code: list[tuple], regs: list[int]) -> list[tuple]:
  """Drop the LI/SADDI bookkeeping of pointer registers nothing else reads any more."""
  for r in regs:
    if not r:
      continue
    own = lambda c: c[0] == "ins" and c[1] in ("LI", "SADDI") and c[2] == f"s{r}"
    if not any(c[0] == "ins" and not own(c) and any(r in sregs(o) for o in c[2:]) for c in code):
      code = [c for c in code if not own(c)]
  return code


SCRATCH = 3  # physical registers kept for reloading spilled operands
NPHYS = DEFAULT.VREGS - SCRATCH


def allocate(code: list[tuple], spill_base: int) -> tuple[str, int]:
  # loop extents in instruction indices: LOOP/LOOPI at i ... label at j
  label_at = {c[1]: i for i, c in enumerate(code) if c[0] == "label"}
  spans = loops.loop_spans(code) + loops.branch_loops(code)
  first: dict[VT, int] = {}
  last: dict[VT, int] = {}
  for i, c in enumerate(code):
    if c[0] != "ins":
      continue
    for v in vts(c):
      first.setdefault(v, i)
      last[v] = i
  # a value live into a loop stays live for the whole loop (it is read again next iteration)
  changed = True
  while changed:
    changed = False
    for s, e in spans:
      for v in first:
        if first[v] < s < last[v] <= e:
          if last[v] < e:
            last[v], changed = e, True
  order = sorted(first, key=lambda v: first[v])
  phys: dict[VT, int] = {}
  spill: dict[VT, int] = {}
  active: list[VT] = []
  free = list(range(NPHYS))
  for v in order:
    start = first[v]
    for a in list(active):
      if last[a] < start:
        active.remove(a)
        free.append(phys[a])
    if free:
      phys[v] = free.pop()
      active.append(v)
      continue
    victim = max(active + [v], key=lambda x: last[x])
    if victim is v:
      spill[v] = len(spill)
    else:
      phys[v] = phys.pop(victim)
      spill[victim] = len(spill)
      active.remove(victim)
      active.append(v)
  out, weights = [], []  # weights: instructions each virtual one became (spill reloads and stores included)
  for c in code:
    if c[0] == "label":
      out.append(f"{c[1]}:")
      weights.append(0)
      continue
    mn, ops = c[1], list(c[2:])
    pre, post = [], []
    dst_first = mn not in ("VST", "VSCATTER") and ops and isinstance(ops[0], VT)
    srcs = [o for k, o in enumerate(ops) if isinstance(o, VT) and not (k == 0 and dst_first)]
    mapping: dict[VT, int] = {}
    scratch = list(range(NPHYS, DEFAULT.VREGS))
    for o in srcs:  # spilled sources are reloaded into scratch registers
      if o not in phys and o not in mapping:
        mapping[o] = scratch.pop(0)
        pre.append(f"VLD v{mapping[o]}, [s0 + {spill_base + spill[o]}]")
    if dst_first and ops[0] not in phys:  # a spilled result is computed in scratch (sources are read first) and stored
      d = ops[0]
      if d not in mapping:
        mapping[d] = scratch.pop(0) if scratch else NPHYS
      post.append(f"VST v{mapping[d]}, [s0 + {spill_base + spill[d]}]")
    text_ops = [f"v{phys[o]}" if isinstance(o, VT) and o in phys else f"v{mapping[o]}" if isinstance(o, VT) else str(o) for o in ops]
    out += pre + [f"  {mn} {', '.join(text_ops)}".rstrip()] + post
    weights.append(1 + len(pre) + len(post))
  return "\n".join(out) + "\n", len(spill), weights
