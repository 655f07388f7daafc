"""Analysis of a kernel's linearised UOps before lowering (a mixin of Lowering): the output (lane)
ranges and the buffer layout, affine index forms, uniform values, which reduce loops are unrolled
or run across the lanes, value lifetimes."""
from __future__ import annotations

import math

from tinygrad.dtype import AddrSpace, dtypes
from tinygrad.uop.ops import AxisType, Ops, UOp

from tinytpu.backend.optable import _ALU, _SALU, _TILE_REDUCE, SUPPORTED_DTYPES, UNROLL_BUDGET, UNROLL_REDUCE, _cint, unsupported
from tinytpu.backend.records import Buf, Const


class Analysis:
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
          raise unsupported(u, f"buffer dtype {dt} (lanes are 32 bits: int32, uint32, float32, bool, narrow ints and bfloat16 only)")
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
    self.plan_stream()  # stream.py: resident windows, or the lane loop's chunks through VMEM

  def lin(self, u: UOp, split: bool = False):
    """u as an affine form over lane ranges: ({lane range: coef}, const, [(coef, uniform uop)]), or None.
    split: a lane range divided by a constant that divides its extent is a key of its own,
    (range, c) (the MXU matcher's grouped convolutions: group = out channel // channels per group)."""
    lin = lambda x: self.lin(x, split)  # noqa: E731
    if u.op is Ops.CONST:
      return {}, int(u.arg), []
    if u.op is Ops.CAST and dtypes.is_int(u.dtype):
      return lin(u.src[0])
    if split and u.op is Ops.CDIV and u.src[0] in self.lane_ranges and (c := _cint(u.src[1])) is not None and c > 1 \
        and self.extents[self.lane_ranges.index(u.src[0])] % c == 0:
      return {(u.src[0], c): 1}, 0, []
    if u in self.lane_ranges or u in self.lane_reduces:
      return {u: 1}, 0, []
    if u.op is Ops.RANGE and isinstance(v := self.vals.get(u), Const):  # an unrolled reduce step
      return {}, int(v.val), []
    if u.op in (Ops.ADD, Ops.SUB):
      a, b = lin(u.src[0]), lin(u.src[1])
      if a is None or b is None:
        return None
      s = 1 if u.op is Ops.ADD else -1
      co = dict(a[0])
      for k, v in b[0].items():
        co[k] = co.get(k, 0) + s * v
      return co, a[1] + s * b[1], a[2] + [(s * c, t) for c, t in b[2]]
    if u.op is Ops.MULACC and (c := _cint(u.src[1])) is not None:  # x*c + y (tinygrad's index arithmetic)
      a, b = lin(u.src[0]), lin(u.src[2])
      if a is None or b is None:
        return None
      co = {k: v * c for k, v in a[0].items()}
      for k, v in b[0].items():
        co[k] = co.get(k, 0) + v
      return co, a[1] * c + b[1], [(cc * c, t) for cc, t in a[2]] + b[2]
    if u.op is Ops.SHL and (c := _cint(u.src[1])) is not None and 0 <= c < 31:
      a = lin(u.src[0])
      return None if a is None else ({k: v << c for k, v in a[0].items()}, a[1] << c, [(cc << c, t) for cc, t in a[2]])
    if u.op is Ops.MUL:
      for x, y in ((u.src[0], u.src[1]), (u.src[1], u.src[0])):
        if y.op is Ops.CONST or (y.op is Ops.CAST and y.src[0].op is Ops.CONST):
          a, c = lin(x), int(y.arg if y.op is Ops.CONST else y.src[0].arg)
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
      inner = [u for u in body if u.op is Ops.RANGE]
      if inner:
        # a short nest (a max-pool's 2x2 window): unrolled whole when its inner loops are and all
        # its steps stay within the same bounds (END positions are inner first, so they are known)
        steps = R * math.prod(_cint(u.src[0]) for u in inner) if all(u in self.unrolled for u in inner) else None
        if steps is not None and steps <= UNROLL_REDUCE and steps * len(body) <= UNROLL_BUDGET // 4:
          self.unrolled[rng] = pos[end]
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
