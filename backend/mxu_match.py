"""Recognising dot-product reduces that run on the MXU (a mixin of Lowering): int products of two
global buffers whose indices are affine in disjoint lane ranges and the reduce range."""
from __future__ import annotations

import itertools
import operator
import os

import numpy as np

from tinygrad.dtype import dtypes
from tinygrad.uop.ops import Ops, UOp

from tinytpu.backend.optable import _cint
from tinytpu.backend.records import Const, Dot


# the gate ops a staged load may have (evaluated at compile time over the ranges' values)
_GATE_OPS = {Ops.ADD: operator.add, Ops.SUB: operator.sub, Ops.MUL: operator.mul, Ops.MULACC: lambda a, b, c: a * b + c,
             Ops.CMPLT: operator.lt, Ops.CMPNE: operator.ne, Ops.CMPEQ: operator.eq, Ops.AND: operator.and_,
             Ops.OR: operator.or_, Ops.XOR: operator.xor, Ops.NEG: operator.neg}


def _flat_values(lanes: list) -> dict:
  """range -> its value at every flattened index of (range, extent) lanes, outer first."""
  total = 1
  for _, e in lanes:
    total *= e
  out, inner = {}, total
  for r, e in lanes:
    inner //= e
    out[r] = (np.arange(total) // inner) % e
  return out


def matmul_mode() -> str:
  """TINYTPU_MATMUL: "exact" (the default: float32 products stay on the VPU, exact fp32) or "bf16"
  (float32 matmuls on the MXU's bf16 mode: operands truncated to bf16, fp32 sums in the MXU's
  order). bfloat16 buffers use the bf16 mode either way (their products are exact in fp32)."""
  v = os.environ.get("TINYTPU_MATMUL", "exact")
  if v not in ("exact", "bf16"):
    raise ValueError(f"TINYTPU_MATMUL={v!r}: expected exact or bf16")
  return v


class MxuMatch:
  def operand(self, x: UOp):
    """A product operand: a LOAD of a global buffer (through widening int CASTs, or a bfloat16 ->
    float32 CAST) -> (Buf, index, gate or None), else None. Int buffers run as int8 (MMUL), bfloat16
    buffers (and float32 ones with TINYTPU_MATMUL=bf16) as bf16 (MMUL.BF16). A gated load (a padded
    convolution's window) must read 0 where its gate is false."""
    while x.op is Ops.CAST and dtypes.is_int(x.dtype) and dtypes.is_int(x.src[0].dtype) and x.src[0].dtype.itemsize <= x.dtype.itemsize:
      x = x.src[0]
    if x.op is Ops.CAST and x.dtype == dtypes.float32 and x.src[0].dtype == dtypes.bfloat16:
      x = x.src[0]
    if x.op is not Ops.LOAD or x.src[0].op is not Ops.INDEX or len(x.src[0].src) != 2:
      return None
    gate = None
    if len(x.src) == 3:
      if _cint(x.src[1]) != 0:
        return None
      gate = x.src[2]
    elif len(x.src) != 1:
      return None
    buf, idx = x.src[0].src
    ok = buf in self.bufs and (dtypes.is_int(buf.dtype) or buf.dtype == dtypes.bfloat16 or
                               buf.dtype == dtypes.float32 and self.matmul == "bf16")
    return (self.bufs[buf], idx, gate) if ok else None

  def gate_values(self, g: UOp, env: dict):
    """g evaluated over numpy arrays of range values (env: range -> array), or None when g uses
    anything else (then the load is not staged for the MXU)."""
    if g in env:
      return env[g]
    if g.op is Ops.CONST:
      return g.arg
    if g.op is Ops.RANGE and isinstance(v := self.vals.get(g), Const):
      return int(v.val)
    if g.op is Ops.CAST and (dtypes.is_int(g.dtype) or g.dtype == dtypes.bool):
      v = self.gate_values(g.src[0], env)
      return None if v is None else (v != 0) if g.dtype == dtypes.bool else v
    fn = _GATE_OPS.get(g.op)
    if fn is None:
      return None
    vs = [self.gate_values(s, env) for s in g.src]
    return None if any(v is None for v in vs) else fn(*vs)

  def chain(self, v: UOp) -> tuple[list, list]:
    """v as a sum: (product terms [(x, y)], other summands)."""
    terms, rest = [], []
    def go(u):
      if u.op is Ops.CAST and u.dtype == dtypes.float32 and u.src[0].op is Ops.MUL and u.src[0].dtype == dtypes.bfloat16:
        # tinygrad's bfloat16 matmul: acc += float(a * b) with the product rounded to bf16; the MXU's
        # bf16 x bf16 product is exact in fp32 (more accurate, documented in doc/backend.md)
        terms.append((u.src[0].src[0], u.src[0].src[1]))
      elif u.dtype not in (dtypes.int32, dtypes.uint32, dtypes.float32):
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

  def make_dot(self, top: UOp, terms: list, rngs: list[UOp], acc=None) -> Dot | None:
    """A Dot when every term is A[affine(M-like lanes, rngs)] * B[affine(N-like lanes, rngs)], else
    None. rngs is the reduce nest (outer first; several for a convolution's cin, kh, kw): K runs
    over all their combinations, outer ranges slowest."""
    exts = [_cint(r.src[0]) for r in rngs]
    if None in exts or not terms:
      return None
    sides, offs, gates = None, [], []
    for x, y in terms:
      ox, oy = self.operand(x), self.operand(y)
      if ox is None or oy is None:
        return None
      forms = []
      for buf, idx, _ in (ox, oy):
        f = self.lin(idx, split=True)
        if f is None or any(all(t is not r for r in rngs) for _, t in f[2]):
          return None
        steps = [sum(c for c, t in f[2] if t is r) for r in rngs]
        forms.append((buf, {r: c for r, c in f[0].items() if c}, f[1], steps))
      if sides is None:
        sides = [(f[0], f[1]) for f in forms]
      if [(f[0], f[1]) for f in forms] == sides[::-1]:
        forms, ox, oy = forms[::-1], oy, ox
      elif [(f[0], f[1]) for f in forms] != sides:
        return None
      offs.append((forms[0][2], forms[0][3], forms[1][2], forms[1][3]))
      gates.append((ox[2], oy[2]))
    (a, ca), (b, cb) = sides
    # a lane range divided by c in one index (a grouped conv's group, out channel // c) is two keys:
    # (r, c) = r // c and (r, c, "mod") = r % c; where the range appears whole it is c * the first + the second
    splits = {k[0]: k[1] for k in [*ca, *cb] if isinstance(k, tuple)}
    if len(splits) != len({k for k in [*ca, *cb] if isinstance(k, tuple)}):
      return None  # one range divided by two constants
    for co in (ca, cb):
      for r, c in splits.items():
        if r in co:
          k = co.pop(r)
          co[(r, c)] = co.get((r, c), 0) + k * c
          co[(r, c, "mod")] = co.get((r, c, "mod"), 0) + k
    keys = [kk for r, e in zip(self.lane_ranges, self.extents)
            for kk in ([((r, splits[r]), e // splits[r]), ((r, splits[r], "mod"), splits[r])] if r in splits else [(r, e)])]
    # a lane key in both indices (a batched matmul's batch, a grouped conv's group) is a batch:
    # one GEMM per value, each with its own K blocks and result area
    mlanes = [(r, e, ca.get(r, 0)) for r, e in keys if r not in cb]
    nlanes = [(r, e, cb[r]) for r, e in keys if r in cb and r not in ca]
    batch = [(r, e, ca[r], cb[r]) for r, e in keys if r in cb and r in ca]
    if all(e == 1 for _, e, _ in mlanes + nlanes):
      return None  # one output element per GEMM (a dot product of two vectors): the VPU's reduce is the better unit
    ks = list(itertools.product(*(range(e) for e in exts)))
    a_off = [oa + sum(c * i for c, i in zip(sa, k)) for k in ks for oa, sa, _, _ in offs]
    b_off = [ob + sum(c * i for c, i in zip(sb, k)) for k in ks for _, _, ob, sb in offs]
    masks = []
    for side, lanes in ((0, mlanes), (1, nlanes)):
      if all(g[side] is None for g in gates):
        masks.append(None)
        continue
      # per (lane element, k) of this side: lanes flattened outer first, k as a_off/b_off run
      lane_env = _flat_values([(r, e) for r, e, _ in lanes])
      for r, c in splits.items():  # a split range whole, where both its keys are this side's
        if (r, c) in lane_env and (r, c, "mod") in lane_env:
          lane_env[r] = lane_env[(r, c)] * c + lane_env[(r, c, "mod")]
      k_env = {r: np.repeat(np.array([k[i] for k in ks]), len(terms)) for i, r in enumerate(rngs)}
      env = {**{r: v[:, None] for r, v in lane_env.items()}, **{r: v[None, :] for r, v in k_env.items()}}
      shape = (len(next(iter(lane_env.values()))) if lane_env else 1, len(ks) * len(terms))
      mask = np.ones(shape, dtype=bool)
      for t, g in enumerate(gates):
        if g[side] is None:
          continue
        v = self.gate_values(g[side], env)
        if v is None:  # e.g. a gate on the other side's lanes: not stageable on this side
          return None
        mask[:, t::len(terms)] &= np.broadcast_to(np.asarray(v, dtype=bool), shape)[:, t::len(terms)]
      masks.append(mask if side == 0 else mask.T)
    fp = [dtypes.is_float(buf.dtype) for buf in (a, b)]
    if fp[0] != fp[1] or fp[0] != dtypes.is_float(top.dtype if top.op is not Ops.STORE else top.src[1].dtype):
      return None  # int and float operands or sums mixed: not one MXU mode
    return Dot(top, acc, a, b, mlanes, nlanes, a_off, b_off, a_mask=masks[0], b_mask=masks[1], batch=batch,
               mode="bf16" if fp[0] else "int8")

  def find_dots(self):
    """Dot-product reduces to run on the MXU: reduce nests (one loop, or a convolution's cin/kh/kw
    loops with the accumulator updated in the innermost) whose every accumulator update is a sum of
    int products (possibly unrolled), or such sums fully unrolled by tinygrad (no loop left)."""
    self.dots: list[Dot] = []
    self.matmul = matmul_mode()
    self.init_tables, self.int8_checks = {}, []  # init_tables: VMEM tile -> lanes the bundle preloads (MXU, epilogue and row tables)
    self.skip: set[UOp] = set()   # UOps replaced by the MXU prologue
    self.dot_at: dict[UOp, list[Dot]] = {}  # where a Dot's result enters the lane loop
    self.epis, self.epi_at = {}, {}  # fused PSUM epilogues (epilogue.py, planned with the MXU prologue)
    if self.symbolic:
      return
    pos = {u: i for i, u in enumerate(self.uops)}
    reg_of = self.reg_of
    for end in self.uops:
      if end.op is not Ops.END or (rng := end.src[1]) in self.lane_ranges or rng not in pos:
        continue
      body = self.uops[pos[rng] + 1:pos[end]]
      nest = [rng] + [u for u in body if u.op is Ops.RANGE]
      if any(u in self.skip for u in body) or any(r in self.lane_ranges for r in nest) or \
          {u.src[1] for u in body if u.op is Ops.END} != set(nest[1:]):
        continue
      stores = [u for u in body if u.op is Ops.STORE]
      dots = []
      for st in stores:
        acc = reg_of(st.src[0]) if st.src[0].op is Ops.INDEX else None
        terms, rest = self.chain(st.src[1])
        if acc is None or acc[1] is None or len(st.src) != 2 or len(rest) != 1 or rest[0].op is not Ops.LOAD \
            or reg_of(rest[0].src[0]) != acc or (d := self.make_dot(st, terms, nest, acc)) is None:
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
        if dots and all(u in seen or u.op is Ops.CONST or (u.op is Ops.END and u.src[1] in nest) for u in body):
          self.dots += dots
          self.skip.update(body + [rng, end])
          self.dot_at[rng] = dots
    covered: set[UOp] = set()
    for u in reversed(self.uops):  # fully unrolled sums: the largest chains first
      if u in self.skip or u in covered or u.op not in (Ops.ADD, Ops.MULACC):
        continue
      terms, rest = self.chain(u)
      if len(terms) < 2 or rest or (d := self.make_dot(u, terms, [])) is None:
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
    self.layout_dots()
