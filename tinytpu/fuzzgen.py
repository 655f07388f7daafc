"""The differential fuzzer's generator (tinytpu/fuzz.py): program `index` of `seed` is inputs and a
chain of ops (tinytpu/fuzzprog.py), each op kept only if it builds on PYTHON for the shapes, dtypes
and value bounds it meets."""
from __future__ import annotations

import math

import numpy as np

from tinytpu.fuzzprog import CUM, DTYPES, FPUN, INTOP, INTS, RANGE, REDUCE, Input, Op, Program, Val, step, tinygrad_api


def broadcastable(a: tuple, b: tuple) -> bool:
  return all(x == y or 1 in (x, y) for x, y in zip(a[::-1], b[::-1]))


class Gen:
  """Program `index` of `seed`: inputs and a chain of ops, each op kept only if it builds on PYTHON."""
  def __init__(self, seed: int, index: int):
    self.rng = np.random.default_rng([seed, index])
    self.prog, self.env, self.vals = Program(), {}, {}

  def r(self, a: int, b: int | None = None) -> int: return int(self.rng.integers(a, b) if b is not None else self.rng.integers(a))
  def pick(self, xs): return xs[self.r(len(xs))]
  def coin(self, p: float) -> bool: return bool(self.rng.random() < p)
  def size(self) -> int: return self.r(1, 10) if self.coin(0.9) else self.r(10, 41)
  def dtype(self) -> str: return self.pick(("int32", "int32", "float32", "float32") + DTYPES)

  def shape(self, nd: int | None = None) -> tuple:
    s = [self.size() for _ in range(self.pick((1, 2, 2, 3, 3, 4)) if nd is None else nd)]
    while math.prod(s) > 600:
      s[s.index(max(s))] //= 2
    return tuple(s)

  def input(self, dtype: str, shape: tuple, lo=None, hi=None) -> str:
    grid, pool, (tlo, thi) = 0.0, (), RANGE.get(dtype, (None, None))
    if lo is None and dtype == "float32":
      (lo, hi), grid = self.pick(((-4.0, 4.0), (-4.0, 4.0), (-100.0, 100.0), (0.5, 2.0), (-1.0, 1.0))), self.pick((0.0, 0.0, 0.25, 1.0))
    elif lo is None:
      lo, hi = self.pick(((-9, 9), (0, 100), (tlo, thi), (-128, 127), (tlo, thi)))
      lo, hi = max(lo, tlo), min(hi, thi)
      if (lo, hi) == (tlo, thi) and self.coin(0.4):
        pool = tuple(sorted({min(max(e, tlo), thi) for e in (tlo, tlo + 1, thi - 1, thi, 0, 1, -1, 2, 7, -100)}))
    x = Input(f"a{len(self.prog.inputs)}", dtype, tuple(shape), lo, hi, self.r(2**31), None, grid, pool)
    Tensor, dtypes = tinygrad_api()
    self.prog.inputs.append(x)
    self.env[x.name] = Tensor.empty(*x.shape, dtype=getattr(dtypes, dtype), device="PYTHON")
    self.vals[x.name] = Val(dtype, x.shape, lo, hi)
    return x.name

  def op(self, kind: str, args: tuple, *p) -> str | None:
    o = Op(f"v{len(self.prog.ops)}", kind, tuple(args), p)
    try:
      t, v, _ = step(o, self.env, self.vals)
    except Exception:  # noqa: BLE001  does not apply here (Invalid, or tinygrad refuses the shapes)
      return None
    self.env[o.out], self.vals[o.out] = t, v
    self.prog.ops.append(o)
    return o.out

  def val(self, pred=lambda v: True) -> str | None:
    """A value for the next op, mostly the newest (so ops chain)."""
    ok = [n for n, v in self.vals.items() if pred(v)]
    return None if not ok else ok[-1] if self.coin(0.75) else self.pick(ok)

  def const(self, dt: str):
    if dt == "float32": return self.pick((0.5, -1.5, 2.0, 3.0, -0.25, 0.1, 7.0, -3.0, 1e-3))
    if dt == "bool": return self.pick((True, False))
    tlo, thi = RANGE[dt]
    return min(max(self.pick((1, 2, 3, -1, -7, 5, 100, 127, -128, 255, 1000, -1000, tlo, thi)), tlo), thi)

  def partner(self, v: Val) -> tuple:
    """The second operand: (args, params) for a constant, a broadcastable value or a new input."""
    r = self.rng.random()
    if r < 0.35: return (), (self.const(v.dtype),)
    ok = [n for n, w in self.vals.items() if broadcastable(w.shape, v.shape)]
    if r < 0.6 and ok: return (self.pick(ok),), ()
    sh = [1 if self.coin(0.25) else n for n in v.shape][self.r(len(v.shape) + 1) if self.coin(0.2) else 0:]
    return (self.input(v.dtype if self.coin(0.7) else self.dtype(), tuple(sh)),), ()

  def f_binary(self):
    x = self.val()
    v = self.vals[x]
    kinds = ("add", "sub", "mul", "max", "min") + ("and", "or", "xor") * (0 if v.fp else 2 if v.dtype == "bool" else 1)
    args, p = self.partner(v)
    return self.op(self.pick(kinds), (x,) + args, *p)

  def f_unary(self):
    x = self.val(lambda v: v.dtype != "bool")
    return x and self.op(self.pick(("neg", "abs") + tuple(FPUN)), (x,))

  def f_compare(self):
    x = self.val(lambda v: not v.d)
    if x is None: return None
    args, p = self.partner(self.vals[x])
    return self.op(self.pick(("lt", "eq", "ne")), (x,) + args, *p)

  def f_where(self):
    c = (self.val(lambda v: v.dtype == "bool") if self.coin(0.5) else None) or self.f_compare()
    x = self.val(lambda v: v.dtype != "bool" or self.coin(0.3))
    if c is None or x is None: return None
    args, p = self.partner(self.vals[x])
    return self.op("where", (c, x) + args, *p)

  def f_int(self):
    x = self.val(lambda v: v.dtype in INTS)
    k = self.pick(tuple(INTOP))
    return x and self.op(k, (x,), self.pick((1, 2, 3, 4, 7) if k in ("shl", "shr") else (2, 3, 5, 7, 16, 100, -3, -7)))

  def f_cast(self):
    x = self.val()
    return self.op("cast", (x,), self.pick([d for d in DTYPES if d != self.vals[x].dtype]))

  def axes(self, nd: int, one: bool = False):
    if nd == 0 or self.coin(0.2): return None
    if one or self.coin(0.4): return self.r(nd) - (nd if self.coin(0.2) else 0)
    return tuple(sorted(int(a) for a in self.rng.choice(nd, self.r(1, nd + 1), replace=False)))

  def f_reduce(self, x: str | None = None):
    x = x or self.val()
    return self.op(self.pick(tuple(REDUCE)), (x,), self.axes(len(self.vals[x].shape)), self.coin(0.4))

  def f_nested(self):
    return (r := self.f_reduce()) and self.f_reduce(r)

  def f_arg(self):
    x = self.val(lambda v: v.dtype != "bool" and not v.d)
    return x and self.op(self.pick(("argmax", "argmin")), (x,), self.axes(len(self.vals[x].shape), one=True), self.coin(0.3))

  def f_cum(self):
    x = self.val(lambda v: len(v.shape) > 0)
    return x and self.op(self.pick(("cumsum",) * 4 + CUM), (x,), self.r(len(self.vals[x].shape)))

  def f_move(self):
    x = self.val()
    sh = self.vals[x].shape
    nd, k = len(sh), self.pick(("permute", "flip", "pad", "shrink", "expand", "reshape", "cat"))
    if nd == 0 and k != "expand": return None
    if k == "permute": return self.op(k, (x,), tuple(int(i) for i in self.rng.permutation(nd)))
    if k == "flip": return self.op(k, (x,), self.axes(nd) if self.coin(0.7) else 0)
    if k == "pad": return self.op(k, (x,), tuple((self.pick((0, 0, 1, 2, 3)), self.pick((0, 0, 1, 2))) for _ in sh), self.pick((0, 0, 1)))
    if k == "shrink": return self.op(k, (x,), tuple((s := self.r(n), self.r(s + 1, n + 1), self.pick((1, 1, 1, 2, 3))) for n in sh))
    if k == "expand": return self.op(k, (x,), self.r(nd + 1), self.r(2, 6))
    if k == "reshape": return self.op(k, (x,), self.pick(("merge", "split")), self.r(nd), self.r(2, 5))
    dim = self.r(nd)
    other = [n for n, w in self.vals.items() if n != x and len(w.shape) == nd and all(a == b for i, (a, b) in enumerate(zip(w.shape, sh)) if i != dim)]
    y = self.pick(other) if other and self.coin(0.5) else self.input(self.vals[x].dtype, tuple(self.r(1, 8) if i == dim else n for i, n in enumerate(sh)))
    return self.op("cat", (x, y), dim)

  def f_gather(self):
    x = self.val(lambda v: len(v.shape) > 0)
    if x is None: return None
    sh = self.vals[x].shape
    dim = self.r(len(sh))
    if self.coin(0.5):
      ix = self.input("int32", tuple(self.r(1, 10) if i == dim else self.r(1, n + 1) for i, n in enumerate(sh)), 0, sh[dim] - 1)
      return self.op("gather", (x, ix), dim)
    dim = min(dim, 1)
    return self.op("index", (x, self.input("int32", self.shape(self.pick((1, 1, 2))), -sh[dim], sh[dim] - 1)), dim)

  def operand(self, shape: tuple, mode: str) -> str:
    if mode == "fp": return self.input("float32", shape)
    dt = "int8" if mode != "cast" or self.coin(0.7) else self.pick(("int32", "int16"))
    return self.input(dt, shape, *((-128, 127) if self.coin(0.7) else (-9, 9)))

  def f_matmul(self):
    mode = self.pick(("cast", "cast", "acc", "fp", "fp"))
    a = self.val(lambda v: len(v.shape) == 2 and (v.fp if mode == "fp" else v.dtype in INTS and v.lo >= -128 and v.hi <= 127))
    if a is None or self.coin(0.7):
      a = self.operand(((self.r(1, 4),) if self.coin(0.2) else ()) + (self.size(), self.size()), mode)
    return self.op("matmul", (a, self.operand((self.vals[a].shape[-1], self.size()), mode)), mode)

  def f_conv(self):
    mode, cin = self.pick(("cast", "fp")), self.r(1, 4)
    x = self.operand((self.r(1, 3), cin, self.r(3, 10), self.r(3, 10)), mode)
    w = self.operand((self.r(1, 5), cin, self.r(1, 4), self.r(1, 4)), mode)
    return self.op("conv", (x, w), mode, self.pick((1, 1, 2)), self.pick((0, 0, 1)))

  FAMILIES = {"f_binary": 6, "f_unary": 3, "f_compare": 2, "f_where": 2, "f_int": 2, "f_cast": 3, "f_reduce": 4, "f_nested": 2,
              "f_arg": 1, "f_cum": 1.5, "f_move": 5, "f_gather": 1.5, "f_matmul": 1.5, "f_conv": 0.7}

  def program(self) -> Program:
    self.input(self.dtype(), self.shape())
    names, w = list(self.FAMILIES), np.array(list(self.FAMILIES.values()))
    want = self.pick((1, 2, 3, 4, 4, 5, 6, 8, 10, 12, 14))
    for _ in range(60):
      if len(self.prog.ops) >= want: break
      getattr(self, names[int(self.rng.choice(len(names), p=w / w.sum()))])()
    if not self.prog.ops:
      x = self.prog.inputs[0]
      self.op("xor" if x.dtype == "bool" else "add", (x.name,), True if x.dtype == "bool" else 1)
    return self.prog.pruned()


def generate(seed: int, index: int) -> Program:
  return Gen(seed, index).program()
