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
a constant pool (the lane-index tile), then the spill area.

The lowering is a set of passes over one Lowering object, one module each:
- analysis.py: output ranges, buffer layout, affine index forms, unrolled and lane-parallel reduces;
- mxu_match.py / layout.py / mxu_sched.py: dot products for the MXU, their VMEM tables, their schedule;
- handlers.py: the per-UOp handlers (HANDLERS, like a renderer's code_for_op); address.py: addressing;
- rlane.py: reduces across the lanes;
- this module: the driver (output nests, the lane loop, reduce-loop unrolling);
then peephole.py, loops.py (loop depth), schedule.py, spill.py (scalar spilling, when needed), regalloc.py (allocation) and listing.py (the
TASM listing the renderer returns)."""
from __future__ import annotations

import dataclasses
import re
from typing import Any

from tinygrad.dtype import AddrSpace, DType, dtypes
from tinygrad.uop.ops import AxisType, Ops, UOp

from tinytpu.backend import embedding, loops
from tinytpu.backend.address import Addressing
from tinytpu.backend.analysis import Analysis
from tinytpu.backend.blockloop import BlockLoops
from tinytpu.backend.handlers import Handlers
from tinytpu.backend.lanes import BlockedLanes
from tinytpu.backend.layout import Layout
from tinytpu.backend.mxu_match import MxuMatch
from tinytpu.backend.mxu_sched import MxuSchedule
from tinytpu.backend.optable import HOIST_MAX, LOOPI_MAX, UNROLL_BUDGET, UNROLL_FULL, _cint, _imm, unsupported
from tinytpu.backend.peephole import optimize
from tinytpu.backend.records import Const, Kernel, LaneReduce, OpenLoop, SReg
from tinytpu.backend.regalloc import NPHYS, _dce, _drop_unused, allocate
from tinytpu.backend.schedule import schedule
from tinytpu.backend.spill import reallocate
from tinytpu.backend.rowblock import RowBlocks
from tinytpu.backend.rstream import ReduceStream
from tinytpu.backend.rblock import ReduceBlocks
from tinytpu.backend.rlane import ReduceLanes
from tinytpu.backend.stream import Stream
from tinytpu.backend.windows import lane_count
from tinytpu.backend.mxu_stream import MxuStream
from tinytpu.backend.vcode import VT, Ins, Label, Mem, SR
from tinytpu.config import Config


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
  runs out of scalar registers (or has none left to count a loop nested deeper than the SXU's stack
  in branches, loops.legalise) is lowered again frugally: no induction registers (addresses are
  computed in temporaries) and no partially unrolled reduce loops (no per-copy step registers);
  one that still does is lowered frugally a third time with its scalar registers spilled (spill.py)."""
  if (m := embedding.match(uops, cfg)) is not None:  # a SparseCore lookup, behind its launch guard (embedding.py)
    k = embedding.lower(m, cfg, _kernel_name(uops))
    k.guards = [embedding.guard(m)]
    try:
      k.fallback = _lower_any(uops, cfg, requant=False)
    except NotImplementedError as e:  # e.g. a table larger than VMEM: the launch refuses what the SparseCore cannot run
      k.guards[0]["no_fallback"] = str(e)
    return k
  k = _lower_any(uops, cfg, requant=True)
  if k.guards:  # PEPI.BRQ drains equal tinygrad's int32 requantisation only for some values: the launch chooses (epilogue.py)
    k.fallback = _lower_any(uops, cfg, requant=False)
  return k


def _kernel_name(uops: list[UOp]) -> str:
  sink = next((u for u in uops if u.op is Ops.SINK), None)
  return re.sub(r"\x1b\[[0-9;]*m", "", getattr(sink.arg, "name", "kernel")) if sink is not None and sink.arg is not None else "kernel"


def _lower_any(uops: list[UOp], cfg: Config, requant: bool) -> Kernel:
  for frugal, spill in ((False, False), (True, False), (True, True)):
    try:
      return _lower_parts(list(uops), cfg, frugal=frugal, requant=requant, spill=spill)
    except (OutOfScalarRegisters, loops.NoLoopCounter):  # a loop nested deeper than the SXU's stack needs a free register to count it
      if spill:
        raise


def _lower_parts(uops: list[UOp], cfg: Config, frugal: bool, requant: bool = False, spill: bool = False) -> Kernel:
  parts, first, codes, low, prev, windows = output_nests(uops), None, [], None, None, {}
  for k, part in enumerate(parts):
    low = Lowering(part, cfg, first_tile=first, prefix=f"P{k}_" if len(parts) > 1 else "", frugal=frugal, spill=spill)
    low.requant = requant
    code = low.emit()
    codes += code[:-1] if k < len(parts) - 1 else code  # one HALT, at the end
    first = low.spill_base  # the next part's tables and staging tiles come after this part's
    if prev is not None:
      low.written |= prev.written
      low.int8_checks = prev.int8_checks + low.int8_checks
      low.guards = prev.guards + low.guards
      low.init_tables = {**prev.init_tables, **low.init_tables}
    prev = low
    windows = {s: dataclasses.replace(w, read=w.read or windows[s].read, written=w.written or windows[s].written) if s in windows else w
               for s, w in low.windows.items()} if k else dict(low.windows)
  for s in low.written:  # every buffer a store writes goes out (and is dumped)
    if s in windows and not windows[s].written:
      raise NotImplementedError(f"TINYTPU kernel {low.name}: buffer {s} is stored to but its window is not written back (a store the HBM plan missed)")
  low.windows = windows
  # HBM residency: the buffers the kernel reads (or writes partially) come in whole in front of the
  # program, the ones it writes go out after it; a chunked kernel's streamed windows move in its loop
  codes = low.resident_dma(list(windows.values()), False) + codes[:-1] + low.resident_dma(list(windows.values()), True) + codes[-1:]
  k = low.finish(codes)
  k.guards = low.guards
  return k


class Lowering(Analysis, MxuMatch, Layout, MxuSchedule, MxuStream, Handlers, Addressing, Stream, ReduceStream, ReduceBlocks, ReduceLanes,
               BlockedLanes, RowBlocks, BlockLoops):
  def __init__(self, uops: list[UOp], cfg: Config, first_tile: int | None = None, prefix: str = "", frugal: bool = False,
               spill: bool = False):
    self.uops, self.cfg, self.L, self.frugal, self.spill = uops, cfg, cfg.N * cfg.N, frugal, spill
    self.virtual = cfg.SREGS  # spill: the next name past the physical registers (spill.py maps them)
    self.name = _kernel_name(uops)
    self.first_tile, self.prefix = first_tile, prefix  # where this part's VMEM tables start (None: after the constant pool)
    self.code: list = []    # Ins | Label
    self.vals: dict[UOp, Any] = {}
    self.labels = 0
    self.free_sregs = list(range(cfg.SREGS - 1, 0, -1))  # s0 reads 0
    self.loops: list[OpenLoop] = []  # open reduce loops, innermost last
    self.red = None
    self.valid = None  # lanes below G, when lanes past G do not repeat lane G-1
    self.temps: list[int] = []
    self.ifs: list[UOp] = []  # conditions of the open IF blocks
    self.rstream = None  # rstream.py: the buffers streamed by reduce blocks
    self.rblocks = None  # rblock.py: a full reduction's buffers streamed by blocks
    self.mstream = None  # mxu_stream.py: the dot product whose operands stream from HBM
    self.rb_regs: dict = {}  # rowblock.py: per window by blocks, its registers while its block loop is open
    self.rb_open = None      # rowblock.py: the open block loop (windows, left counter, outer terms)
    self.chunk_tables: dict = {}  # stream.py: the chunk tables of a chunked lane loop (VMEM init tiles)
    self.requant, self.guards = False, []  # epilogue.py: PEPI.BRQ drains allowed (behind launch guards)

  def ins(self, mn: str, *ops):
    self.code.append(Ins(mn, *ops))

  def label(self) -> str:
    self.labels += 1
    return f"{self.prefix}L{self.labels}"

  def sreg(self, why: str, temp: bool = True) -> int:
    """A free scalar register; temporaries are released after the current UOp is lowered."""
    if not self.free_sregs and self.spill:
      self.free_sregs.append(self.virtual)
      self.virtual += 1
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
      self.ins("VSPLAT", t, SR(v.reg))
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
    self.ins("LI", SR(r), _imm(v.val, v.dtype))
    return r

  def value(self, u: UOp) -> Any:
    if u not in self.vals:
      raise unsupported(u, "value used before it is defined")
    return self.vals[u]

  def lower(self) -> Kernel:
    return self.finish(self.emit())

  def finish(self, code: list[tuple]) -> Kernel:
    """Schedule and allocate the virtual code; the kernel record for the runtime."""
    code = schedule(optimize(loops.legalise(code, self.name, virtual=self.spill)), NPHYS)
    scalar, origin = reallocate(code, {r for _, _, r in self.var_regs}, self.name) if self.spill else (code, None)
    text, spills, weights = allocate(scalar, self.spill_base)
    if origin is not None:  # the retired-instruction count per instruction of `code`, its spill code included
      weights, w = [0] * len(code), weights
      for k, i in enumerate(origin):
        weights[i] += w[k]
    bufs = sorted(self.bufs.values(), key=lambda b: b.slot)
    return Kernel(text, bufs, sorted(self.written), self.var_regs, self.spill_base + spills,
                  {self.const_base // self.L: list(range(self.L)), **self.init_tables, **self.chunk_tables}, self.cfg.N, self.int8_checks,
                  loops.executed(code, weights), self.windows)

  def emit(self) -> list[tuple]:
    """The kernel as virtual code (VT registers, physical scalar registers), ending in HALT."""
    self.analyse()
    L = self.L
    self.var_regs: list[tuple[int, str, int]] = []
    for u in self.uops:  # kernel variables first: symbolic extents need them before the lane loop
      if u.op is Ops.PARAM and u.arg.addrspace == AddrSpace.ALU:
        r = self.sreg("kernel variable", temp=False)
        self.var_regs.append((u.arg.slot, u.arg.name, r))
        self.vals[u] = SReg(r)
    self.var_regs.sort()  # tinygrad passes `vals` in slot order
    if self.symbolic:
      self.lower_symbolic_extents()
    tiles_g = (self.C if self.chunked else -(-self.G // L)) if not self.symbolic else None
    U, iters = self.unroll(tiles_g)
    looping = self.symbolic or iters > 1 or self.chunked
    self.s_g0 = self.sreg("lane base", temp=False) if looping else 0
    self.s_t = self.sreg("lane tile", temp=False) if looping else 0
    self.mxu_regs: list[int] = []
    if self.mstream:
      self.mxu_stream_prologue()
      self.skip |= self.dead()
    elif self.dots:  # first: the MXU's latency overlaps everything after it
      self.mxu_prologue()
      self.skip |= self.dead()
    self.iota = VT("iota")
    self.ins("VLD", self.iota, Mem(0, self.const_base // L))
    self.ones = VT("ones")
    self.ins("VFILL", self.ones, 1)
    if looping:
      self.ins("LI", SR(self.s_g0), 0)
      self.ins("LI", SR(self.s_t), 0)
    if self.chunked:  # stream.py: chunk 0's windows in, the window registers
      self.chunk_regs()
    self.hoist_at, self.hoisted = len(self.code), {}
    if self.chunked:  # the chunk loop: the lane loop over C tiles, the lane tile counting within the window copy
      chunks_end = self.label()
      r = self.sreg("chunk loop count")
      self.ins("LI", SR(r), self.nc)
      self.ins("LOOP", SR(r), chunks_end)
      self.free_temps()
      if self.sets == 2:
        self.prefetch()
      if self.mstream:  # this chunk's rows of the GEMM, into area D
        self.mxu_chunk()
      self.ins("SADDI", SR(self.s_t), SR(self.s_set), 0)
    lane_end = self.label()
    if self.symbolic:
      self.ins("LOOP", SR(self.s_count), lane_end)
    elif iters > LOOPI_MAX:
      r = self.sreg("lane loop count", temp=False)
      self.ins("LI", SR(r), iters)
      self.ins("LOOP", SR(r), lane_end)
      self.release(r)  # LOOP reads its count once, on entry
    elif looping:
      self.ins("LOOPI", iters, lane_end)
    g0 = self.iota
    if looping:
      g0 = VT("g")
      self.ins("VSPLAT", g0, SR(self.s_g0))
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
        self.ins("VSPLAT", lim, SR(self.s_G))
        self.ins("VSUB", lim, lim, self.ones)
        self.ins("VMIN", self.g, self.g, lim)
      elif self.block:  # lanes.py: the lanes stand for the blocks' outputs
        if self.nc * self.C * L > lane_count(self) and (looping or c == U - 1):
          clamped = VT("g")
          self.ins("VMIN", clamped, self.g, self.tile(Const(lane_count(self) - 1, dtypes.int32), dtypes.int32))
          self.g = clamped
        self.g = self.block_lanes(self.g)
      elif (self.G % L or (self.chunked and self.nc * self.C * L > self.G)) and (looping or c == U - 1):
        clamped = VT("g")
        self.ins("VMIN", clamped, self.g, self.tile(Const(self.G - 1, dtypes.int32), dtypes.int32))
        # PSUM results, and a streamed GEMM's area D (a padded last chunk's rows), differ past G:
        # scatters write the real lanes only
        if self.mstream or any(d.in_psum for d in self.dots):
          self.valid = VT("valid")
          self.ins("VCMPLT", self.valid, self.g, self.tile(Const(self.G, dtypes.int32), dtypes.int32))
        self.g = clamped
      self.lower_body()
      self.valid = None
    if looping:
      self.ins("SADDI", SR(self.s_t), SR(self.s_t), U)
      self.ins("SADDI", SR(self.s_g0), SR(self.s_g0), U * L)
    self.code.append(Label(lane_end))
    if self.chunked:
      self.chunk_end()
      self.code.append(Label(chunks_end))
    self.ins("HALT")
    self.code[self.hoist_at:self.hoist_at] = [Ins("VFILL", t, bits) for bits, t in self.hoisted.items()]
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
    self.red: LaneReduce | None = None  # inside a lane-parallel reduce
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
      raise unsupported(self.loops[-1].rng, "a loop without END")

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
            self.ins("VFADD" if d.mode == "bf16" else "VADD", acc, acc, self.dot_value(d))
      else:
        self.vals[u] = self.dot_value(self.dot_at[u][0])
    elif u not in self.skip:
      self.lower_uop(u)
    for r in self.temps:
      self.release(r)
    self.temps = []
    for d in dies.get(j, []):
      v = self.vals.get(d)
      if isinstance(v, SReg) and d.op is not Ops.RANGE and d.op is not Ops.PARAM:
        self.release(v.reg)

  def lower_unrolled(self, j: int, dies: dict[int, list[UOp]]) -> int:
    """A short innermost reduce loop as straight-line copies of its body, the range a constant in
    each (folded into addresses), in the loop's order (fp sums round exactly as the loop would)."""
    rng, e = self.uops[j], self.unrolled[self.uops[j]]
    for i in range(_cint(rng.src[0])):
      self.vals[rng] = Const(i, dtypes.int32)
      k = j + 1
      while k < e:  # an unrolled nest: its inner loops unrolled in each copy
        if self.uops[k] in self.unrolled:
          k = self.lower_unrolled(k, dies)
        else:
          self.lower_at(k, dies)
          k += 1
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
      lp.copy = c
      if c:
        steps.append(r := self.sreg("unrolled step", temp=False))
        self.ins("SADDI", SR(r), SR(lp.var), c)
      self.vals[rng] = SReg(steps[-1] if c else lp.var)
      for k in range(j + 1, e):
        self.lower_at(k, dies)
    for r in steps:
      self.release(r)
    self.lower_at(e, dies)
    return e + 1

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
        self.ins("SMUL", SR(nxt), SR(acc), SR(r))
        acc = nxt
    self.s_G, self.s_ext = acc, ext
    self.s_count = self.sreg("lane loop count")
    self.ins("SADDI", SR(self.s_count), SR(acc), L - 1)
    self.ins("SSRA", SR(self.s_count), SR(self.s_count), SR(self.scalar(Const(L.bit_length() - 1, dtypes.int32))))
    self.temps = []  # these registers live for the whole kernel
