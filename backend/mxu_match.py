"""Recognising dot-product reduces that run on the MXU (a mixin of Lowering): int products of two
global buffers whose indices are affine in disjoint lane ranges and the reduce range."""
from __future__ import annotations


from tinygrad.dtype import dtypes
from tinygrad.uop.ops import Ops, UOp

from tinytpu.backend.optable import _cint
from tinytpu.backend.records import Dot


class MxuMatch:
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
    self.layout_dots()
