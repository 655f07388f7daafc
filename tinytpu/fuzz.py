"""Differential fuzzer: seeded random tinygrad programs on TINYTPU against tinygrad's PYTHON device.

A `Program` is `Input`s (dtype, shape, declared value range, data seed) and `Op`s (kind, argument
names, parameters); the last op is the output. `build` renders each op as one line of tinygrad code
for the shapes and value bounds it meets, so one description runs on any device, prints as a
standalone reproducer (`snippet`) and stays valid while `shrink` drops ops, sizes and values.

Comparison (doc/fuzz.md has the rules): ints and bools exactly. Every fp32 value carries a bound d on
how far two correct implementations may drift apart: 0 for inputs and correctly rounded ops of d = 0
values (those match bit for bit); raised by muls tinygrad may fuse (MULACC, a * (1/b) -> a / b),
transcendentals (4 * 2^-24), sums/cumsums/matmuls/convs of K terms (K * term drift + 2 K^2 2^-24 max|term|),
propagated through the value intervals. An fp output passes within 2 * d, NaNs at the same places.
Compares, argmax/argmin and fp -> int/bool casts only see d = 0 values, so drift never flips them.

Outcomes: ok; unsupported (TINYTPU raised NotImplementedError: counted, not a failure); fail (a
wrong value or any other TINYTPU exception: shrunk and reported); invalid (PYTHON itself failed).

  python -m tinytpu fuzz [--seeds N] [--seed S] [--index I] [--sim golden|rtl|both]

TINYTPU_FUZZ_FAULT=kind plants a fault to test the fuzzer: on TINYTPU that op kind returns its
value plus one (bools negated)."""
from __future__ import annotations

import argparse
import collections
import dataclasses
import datetime
import functools
import math
import os
import re
import sys
import time
from dataclasses import dataclass, field

import numpy as np

DTYPES = ("int32", "uint32", "float32", "bool", "int8", "uint8", "int16", "uint16")
RANGE = {"int32": (-2**31, 2**31 - 1), "uint32": (0, 2**32 - 1), "int8": (-128, 127), "uint8": (0, 255),
         "int16": (-2**15, 2**15 - 1), "uint16": (0, 2**16 - 1), "bool": (0, 1)}
INTS = tuple(RANGE)[:-1]
EPS = 2.0 ** -24   # fp32 unit roundoff
MAG = 1e12         # no fp value beyond this is generated (no overflow to inf)
MAX_NUMEL = 3000   # elements of one value (PYTHON runs every element through Python)


class Invalid(Exception):
  """The op does not apply here (shape, dtype or value bounds)."""


@dataclass(frozen=True)
class Input:
  name: str
  dtype: str
  shape: tuple
  lo: float           # declared value range: the bounds analysis uses it, simplification stays inside
  hi: float
  seed: int
  const: float | None = None   # every element this value (a shrinking step)
  grid: float = 0.0            # fp: values on multiples of grid (exact sums, ties)
  pool: tuple = ()             # ints: values drawn from these (range edges, 0, +-1)

  def gen_code(self) -> str:
    npdt, sh, r = _npdt(self.dtype), tuple(self.shape), f"np.random.default_rng({self.seed})"
    if self.const is not None:
      c = f"np.full({sh}, {lit(self.const, self.dtype)}, {npdt})"
    elif self.pool:
      c = f"{r}.choice(np.array({list(self.pool)!r}, np.int64), {sh}).astype({npdt})"
    elif self.dtype == "float32":
      u = f"{r}.uniform({self.lo!r}, {self.hi!r}, {sh})"
      c = f"(np.round({u} / {self.grid!r}) * {self.grid!r}).astype(np.float32)" if self.grid else f"{u}.astype(np.float32)"
    else:
      c = f"{r}.integers({int(self.lo)}, {int(self.hi) + 1}, {sh}).astype({npdt})"
    return c if sh else f"np.asarray({c})"

  def data(self) -> np.ndarray:
    return eval(self.gen_code(), {"np": np})

  def code(self) -> str:  # small arrays as literals: a reproducer that reads on its own
    if math.prod(self.shape) > 48 or self.const is not None:
      return self.gen_code()
    return f"np.array({self.data().tolist()!r}, {_npdt(self.dtype)})"


@dataclass(frozen=True)
class Op:
  out: str
  kind: str
  args: tuple      # value names
  p: tuple = ()    # kind-specific parameters


@dataclass
class Program:
  inputs: list = field(default_factory=list)
  ops: list = field(default_factory=list)

  def pruned(self) -> Program:
    """Only what the output (the last op) depends on."""
    need, ops = {self.ops[-1].out}, []
    for o in reversed(self.ops):
      if o.out in need:
        ops.append(o)
        need.update(o.args)
    return Program([x for x in self.inputs if x.name in need], ops[::-1])

  def measure(self) -> tuple:  # what shrinking makes smaller
    return (len(self.ops), sum(math.prod(x.shape) for x in self.inputs), sum(len(x.shape) for x in self.inputs),
            sum(x.dtype not in ("int32", "float32") for x in self.inputs), sum(x.const is None for x in self.inputs),
            sum(float(x.hi) - float(x.lo) for x in self.inputs if x.const is None))


@dataclass(frozen=True)
class Val:
  """What the bounds analysis knows of a value."""
  dtype: str
  shape: tuple
  lo: float
  hi: float
  d: float = 0.0   # fp drift bound
  p: float = 0.0   # drift if an arithmetic consumer fuses or reassociates with it (MULACC, add chains)
  q: float = 0.0   # drift if a mul fuses with it (a * (1/b) -> a / b)

  @property
  def fp(self) -> bool: return self.dtype == "float32"
  @property
  def mag(self) -> float: return max(abs(self.lo), abs(self.hi))


def _npdt(dt: str) -> str: return "np.bool_" if dt == "bool" else f"np.{dt}"


def lit(c, dtype: str) -> str:
  if dtype == "bool": return repr(bool(c))
  return repr(float(np.float32(c))) if dtype == "float32" or isinstance(c, float) else str(int(c))


@functools.cache
def _tg():
  from tinygrad import Tensor, dtypes
  from tinytpu.backend.device import register
  register()  # the TINYTPU device (idempotent)
  return Tensor, dtypes


def _dtname(dt) -> str:
  _, dtypes = _tg()
  names = {getattr(dtypes, n): n for n in DTYPES} | {dtypes.weakfloat: "float32", dtypes.weakint: "int32"}
  if dt not in names: raise Invalid(f"dtype {dt}")
  return names[dt]


def fit(lo, hi, dt: str) -> tuple:
  """An int interval that leaves its dtype wraps around: all of the dtype."""
  if dt not in RANGE: return float(lo), float(hi)
  tlo, thi = RANGE[dt]
  return (int(lo), int(hi)) if tlo <= lo and hi <= thi else (tlo, thi)


def corners(f, a: Val, b: Val) -> tuple:
  vs = [f(x, y) for x in (a.lo, a.hi) for y in (b.lo, b.hi)]
  return min(vs), max(vs)


def _axes(ax, nd: int) -> tuple:
  if ax is None: return tuple(range(nd))
  ax = (ax,) if isinstance(ax, int) else ax
  if not nd or any(not -nd <= a < nd for a in ax): raise Invalid("axis")
  return tuple(sorted({a % nd for a in ax}))


def _sumdrift(d: float, p: float, k: int, tmag: float) -> tuple:
  """(d, p) of an fp sum of k terms of magnitude <= tmag, each off by d (+ p if fused): any two summation orders
  differ by at most d. One term is no sum: tinygrad drops the reduce, and the term's pending fusion stays."""
  return (d, p) if k == 1 else (k * (d + p) + 2 * k * EPS * k * tmag, 0.0)


BIN = {"add": "{} + {}", "sub": "{} - {}", "mul": "{} * {}", "max": "{}.maximum({})", "min": "{}.minimum({})",
       "lt": "{} < {}", "eq": "{} == {}", "ne": "{} != {}", "and": "{} & {}", "or": "{} | {}", "xor": "{} ^ {}"}
ARITH = {"add": lambda x, y: x + y, "sub": lambda x, y: x - y, "mul": lambda x, y: x * y, "max": max, "min": min}
FPUN = {"exp2": ".exp2()", "log2": ".log2()", "sqrt": ".sqrt()", "recip": ".reciprocal()", "sin": ".sin()"}
INTOP = {"shl": "<<", "shr": ">>", "idiv": "//", "mod": "%"}
REDUCE = {"sum": "sum", "rmax": "max", "rmin": "min"}  # op kind -> Tensor method (max/min are the binary ops)
CUM = ("cumsum", "cummax", "cummin", "cumprod")


def _fpun(k: str, a: Val) -> tuple:
  """A transcendental, sqrt or reciprocal behind the guard that keeps it in its domain: code, bounds."""
  g, lo, hi, d = "{}" if a.fp else "{}.cast(dtypes.float32)", float(a.lo), float(a.hi), a.d + a.p
  if lo <= -2.0 ** 31 and k in ("log2", "recip", "sqrt"):
    # tinygrad moves abs across the cast of an int (abs(float(x)) -> float(abs(x))), where abs(INT_MIN)
    # wraps to INT_MIN: the domain guard below would give log2 a negative value (seed 20261206 index 1728)
    raise Invalid("abs of INT_MIN")
  if k in ("log2", "recip") and not (lo >= 0.25 or (k == "recip" and hi <= -0.25)):
    g, lo, hi = f"({g}.abs() + 0.5)", (0.0 if lo < 0 < hi else min(abs(lo), abs(hi))) + 0.5, a.mag + 0.5
  elif k == "sqrt" and lo < 0:
    g, lo, hi = f"{g}.abs()", 0.0 if hi > 0 else -hi, a.mag
  elif k in ("exp2", "sin") and a.mag > (20 if k == "exp2" else 100):
    b = 16 if k == "exp2" else 50
    g, lo, hi = f"{g}.clip({-b}, {b})", max(lo, -b), min(hi, b)
  code = g + FPUN[k]
  if k == "exp2":
    return code, (2.0 ** lo, 2.0 ** hi, 2.0 ** hi * (math.log(2) * d * (1 + d) + 4 * EPS))
  if k == "log2":
    r = (math.log2(lo), math.log2(hi))
    return code, (*r, d / (lo * math.log(2)) + 4 * EPS * max(1.0, abs(r[0]), abs(r[1])))
  if k == "sin":
    return code, (-1.0, 1.0, d + 4 * EPS)
  if k == "sqrt":
    r = (math.sqrt(lo), math.sqrt(hi))
    return code, (*r, d and min(math.sqrt(d), d / (2 * math.sqrt(lo)) if lo > 0 else math.inf) + 2 * EPS * r[1])
  m = min(abs(lo), abs(hi))  # reciprocal: lo > 0 or hi < 0 here
  return code, (1 / hi, 1 / lo, d and d / m ** 2 + 2 * EPS / m, 0.0, 2 * EPS / m)


def _dot(a: Val, b: Val, k: int, cast: bool) -> tuple:
  """Bounds of a k-term dot product (matmul, conv)."""
  if not (a.fp or b.fp):
    if cast and (a.lo < -128 or a.hi > 127 or b.lo < -128 or b.hi > 127):
      raise Invalid("the MXU multiplies int8: operands in the int8 range")
    tl, th = corners(ARITH["mul"], a, b) if cast else fit(*corners(ARITH["mul"], a, b), a.dtype)
    return k * tl, k * th
  tl, th = corners(ARITH["mul"], a, b)
  tm, td = max(abs(tl), abs(th)), a.d * b.mag + b.d * a.mag + a.d * b.d
  return k * tl, k * th, *_sumdrift(td and td + 2 * EPS * tm, EPS * tm, k, tm)


def render(op: Op, ins: list) -> tuple:
  """One op's tinygrad code (`{}` for each argument) and its raw bounds (lo, hi[, d, p, q]) before wrapping."""
  k, a = op.kind, ins[0]
  sh, nd = list(a.shape), len(a.shape)
  same = (a.lo, a.hi, a.d, a.p, a.q)
  if k in BIN or k == "where":
    w = k == "where"
    if w and a.dtype != "bool": raise Invalid("where needs a bool condition")
    x = ins[1] if w else a
    c = op.p[0] if len(ins) < 2 + w else None
    b = ins[1 + w] if c is None else Val("float32" if isinstance(c, float) else x.dtype, (), c, c)
    code = ("{}.where({}, {})" if w else BIN[k]).format(*["{}"] * (1 + w), "{}" if c is None else lit(c, x.dtype))
    if w: return code, (min(x.lo, b.lo), max(x.hi, b.hi), max(x.d, b.d), max(x.p, b.p), max(x.q, b.q))
    if k in ("lt", "eq", "ne"):
      if a.d or b.d: raise Invalid("fp compare of drifting values")
      return code, (0, 1)
    if k in ("and", "or", "xor"):
      if a.fp or b.fp: raise Invalid("bitwise fp")
      if a.lo < 0 or b.lo < 0: return code, (-2**64, 2**64)
      return code, (0, min(a.hi, b.hi) if k == "and" else 2 ** int(max(a.hi, b.hi)).bit_length() - 1)
    lo, hi = corners(ARITH[k], a, b)
    m = max(abs(lo), abs(hi))
    if k in ("add", "sub"):
      dd = a.d + b.d + a.p + b.p  # tinygrad may reassociate a chain of adds per device: the add's own p
      return code, (lo, hi, dd and dd + 2 * EPS * m, 2 * EPS * (a.mag + b.mag) if a.fp or b.fp else 0.0)
    if k == "mul":
      dd = (a.d + a.p + a.q) * b.mag + (b.d + b.p + b.q) * a.mag + a.d * b.d  # (x*c)*y -> (x*y)*c, a*(1/b) -> a/b
      return code, (lo, hi, dd and dd + 2 * EPS * m, EPS * m if a.fp or b.fp else 0.0)
    return code, (lo, hi, max(a.d, b.d))
  if k == "neg": return "-{}", (-a.hi, -a.lo, a.d, a.p, a.q)
  if k == "abs":  # an int32's abs(INT_MIN) wraps to INT_MIN (also after a cast: tinygrad moves abs across it)
    lo = -2 ** 31 if a.lo <= -2 ** 31 else 0 if a.lo < 0 < a.hi else min(abs(a.lo), abs(a.hi))
    return "{}.abs()", (lo, a.mag, a.d, a.p)
  if k in FPUN: return _fpun(k, a)
  if k in INTOP:
    c = op.p[0]
    if a.dtype not in INTS or (k in ("idiv", "mod") and (c == 0 or c < 0 and a.dtype.startswith("u"))): raise Invalid("int op")
    f = {"shl": lambda x: x * 2 ** c, "shr": lambda x: x >> c, "idiv": lambda x: x // c}.get(k)
    return f"{{}} {INTOP[k]} {c}", (min(f(a.lo), f(a.hi)), max(f(a.lo), f(a.hi))) if f else (0, c - 1) if c > 0 else (c + 1, 0)
  if k == "cast":
    dt = op.p[0]
    code = f"{{}}.cast(dtypes.{dt})"
    if not a.fp or dt == "float32": return code, (0, 1) if dt == "bool" else (a.lo, a.hi)
    if a.d: raise Invalid("cast of a drifting fp value")
    if dt == "bool": return code, (0, 1)
    tlo, thi = {"int32": (-2e9, 2e9), "uint32": (0, 4e9)}.get(dt, RANGE[dt])
    if a.lo <= tlo - 1 or a.hi >= thi + 1:  # fp -> int out of range is undefined: clip first
      return f"{{}}.clip({tlo}, {thi}).cast(dtypes.{dt})", (math.trunc(max(a.lo, tlo)), math.trunc(min(a.hi, thi)))
    return code, (math.trunc(a.lo), math.trunc(a.hi))
  if k in REDUCE or k in ("argmax", "argmin"):
    ax, keep = op.p
    kk = math.prod(a.shape[i] for i in _axes(ax, nd))
    code = f"{{}}.{REDUCE.get(k, k)}({'' if ax is None else f'axis={ax!r}, '}keepdim={keep})"
    if k in REDUCE: return code, (kk * a.lo, kk * a.hi, *_sumdrift(a.d, a.p, kk, a.mag)) if k == "sum" else (a.lo, a.hi, a.d, a.p if kk == 1 else 0.0)
    if a.d or not (ax is None or isinstance(ax, int)): raise Invalid("argmax of drifting fp values, or of several axes")
    return code, (0, kk - 1)
  if k in CUM:
    kk = a.shape[_axes(op.p[0], nd)[0]]
    code = f"{{}}.{k}({op.p[0]})" + ("[0]" if k in ("cummax", "cummin") else "")
    if k == "cumsum": return code, (min(a.lo, kk * a.lo), max(a.hi, kk * a.hi), *_sumdrift(a.d, a.p, kk, a.mag))
    if k == "cummax" or k == "cummin": return code, (a.lo, a.hi, a.d, a.p if kk == 1 else 0.0)
    if a.d: raise Invalid("cumprod of drifting fp values")
    m = math.inf if kk * math.log2(max(2.0, a.mag)) > 900 else max(1.0, a.mag) ** kk
    return code, (-m, m, 2 * kk * EPS * m)
  if k == "permute":
    if sorted(op.p[0]) != list(range(nd)): raise Invalid("permute")
    return f"{{}}.permute{tuple(op.p[0])!r}", same
  if k == "flip": return f"{{}}.flip({_axes(op.p[0], nd)!r})", same
  if k == "pad":
    pads, v = op.p
    if len(pads) != nd: raise Invalid("pad")
    return f"{{}}.pad({tuple(pads)!r}" + (f", value={lit(v, a.dtype)})" if v else ")"), (min(a.lo, v), max(a.hi, v), a.d, a.p, a.q)
  if k == "shrink":
    if len(op.p[0]) != nd: raise Invalid("shrink")
    sl = []
    for n, (s, e, st) in zip(sh, op.p[0]):  # clamped to the sizes met, so it survives shrinking
      s = min(s, n - 1); e = min(max(e, s + 1), n)
      sl.append(":" if (s, e, st) == (0, n, 1) else f"{s or ''}:{e if e < n else ''}" + (f":{st}" if st > 1 else ""))
    return "{}[" + ", ".join(sl) + "]", same
  if k == "expand":
    pos, n = op.p
    if pos > nd: raise Invalid("expand")
    return f"{{}}.unsqueeze({pos}).expand{tuple(sh[:pos] + [n] + sh[pos:])!r}", same
  if k == "reshape":
    merge, i, f = op.p[0] == "merge", op.p[1], op.p[2]
    if i + merge >= nd: raise Invalid("reshape")
    f = max(x for x in range(1, f + 1) if sh[i] % x == 0)
    new = sh[:i] + ([sh[i] * sh[i + 1]] + sh[i + 2:] if merge else [f, sh[i] // f] + sh[i + 1:])
    return f"{{}}.reshape({tuple(new)!r})", same
  b = ins[1]
  if k == "cat": return f"{{}}.cat({{}}, dim={op.p[0]})", (min(a.lo, b.lo), max(a.hi, b.hi), max(a.d, b.d), max(a.p, b.p), max(a.q, b.q))
  if k in ("gather", "index"):
    dim = op.p[0]
    if b.dtype != "int32" or dim >= nd: raise Invalid("index")
    n = sh[dim]
    idx = "{}" if (0 if k == "gather" else -n) <= b.lo and b.hi < n else f"({{}} % {n})"  # keeps shrunk indices in range
    return (f"{{}}.gather({dim}, {idx})" if k == "gather" else "{}[" + ":, " * dim + idx + "]"), same
  if k in ("matmul", "conv"):
    mode = op.p[0]
    cast = ".cast(dtypes.int32)" if mode == "cast" else ""
    if k == "matmul":
      code, kk = "{}.matmul({}, dtype=dtypes.int32)" if mode == "acc" else f"{{}}{cast} @ {{}}{cast}", sh[-1] if nd else 1
    else:
      code, kk = f"{{}}{cast}.conv2d({{}}{cast}, stride={op.p[1]}, padding={op.p[2]})", math.prod(b.shape[1:])
    return code, _dot(a, b, kk, mode == "cast")
  raise Invalid(f"unknown op kind {k}")


def step(op: Op, env: dict, vals: dict, fault: str | None = None):
  """One op built lazily: its tensor, its Val, its line of code (a fault changes the tensor only)."""
  Tensor, dtypes = _tg()
  code, r = render(op, [vals[n] for n in op.args])
  lo, hi, d, p, q = (*r, 0.0, 0.0, 0.0)[:5]
  code = code.format(*op.args)
  t = eval(code, {"Tensor": Tensor, "dtypes": dtypes}, env)
  if fault == op.kind:
    t = t.logical_not() if t.dtype == dtypes.bool else t + 1
  dt = _dtname(t.dtype)
  if math.prod(t.shape) > MAX_NUMEL: raise Invalid("too large")
  lo, hi = fit(lo, hi, dt)
  fp = dt == "float32"
  if fp and not max(abs(lo), abs(hi), d) < MAG: raise Invalid("fp magnitude")
  return t, Val(dt, tuple(t.shape), lo, hi, *((d, p, q) if fp else ())), code


def build(prog: Program, device: str, fault: str | None = None, empty: bool = False, split: bool = False):
  """The program on a device (lazy, or each op realised on its own with split): the output tensor, its Val, the op lines."""
  Tensor, dtypes = _tg()
  env, vals, lines = {}, {}, []
  for x in prog.inputs:
    env[x.name] = Tensor.empty(*x.shape, dtype=getattr(dtypes, x.dtype), device=device) if empty else Tensor(x.data(), device=device)
    vals[x.name] = Val(x.dtype, tuple(x.shape), x.lo, x.hi)
  for op in prog.ops:
    env[op.out], vals[op.out], code = step(op, env, vals, fault)
    lines.append(f"{op.out} = {code}")
    if split:
      env[op.out] = env[op.out].realize()
  return env[prog.ops[-1].out], vals[prog.ops[-1].out], lines


def tolerance(v: Val) -> float:
  return 2 * v.d if v.fp else 0.0


def compare(got: np.ndarray, ref: np.ndarray, tol: float, names=("TINYTPU", "PYTHON")) -> str | None:
  if got.shape != ref.shape or got.dtype != ref.dtype:
    return f"shape/dtype {got.shape} {got.dtype}, {names[1]} {ref.shape} {ref.dtype}"
  bad = got != ref
  if ref.dtype == np.float32:
    nan = np.isnan(ref)
    bad = (np.isnan(got) != nan) | (~nan & bad & ~(np.abs(got.astype(np.float64) - ref) <= tol))
  if not bad.any(): return None
  i = tuple(int(j) for j in np.argwhere(bad)[0]) if bad.ndim else ()
  return f"{int(bad.sum())}/{bad.size} elements differ (tolerance {tol:.3g}), first at {i}: {names[0]} {got[i]!r}, {names[1]} {ref[i]!r}"


@dataclass
class Outcome:
  kind: str        # ok, unsupported, fail, invalid
  msg: str = ""
  sig: tuple = ()  # what a shrunk program must still show


def _line(e: BaseException) -> str:
  s = str(e).strip().splitlines()
  return f"{type(e).__name__}: {s[0] if s else ''}"[:300]


def check(prog: Program, fault: str | None = None) -> Outcome:
  try:
    t, v, _ = build(prog, "PYTHON")
    ref = t.numpy()
  except Exception as e:  # noqa: BLE001  the reference failing is not TINYTPU's failure
    return Outcome("invalid", "PYTHON: " + _line(e))
  try:
    got = build(prog, "TINYTPU", fault)[0].numpy()
  except NotImplementedError as e:
    return Outcome("unsupported", _line(e))
  except Exception as e:  # noqa: BLE001  any other TINYTPU exception is a failure
    return Outcome("fail", _line(e), ("error", type(e).__name__))
  if not (msg := compare(got, ref, tolerance(v))):
    return Outcome("ok")
  try:  # a second opinion: PYTHON with every op its own kernel (tinygrad's fusion has bugs of its own)
    if bad := compare(build(prog, "PYTHON", split=True)[0].numpy(), ref, tolerance(v), ("PYTHON op by op", "PYTHON fused")):
      return Outcome("invalid", f"PYTHON fused and op by op differ: {bad}; TINYTPU: {msg}")
  except Exception as e:  # noqa: BLE001
    return Outcome("invalid", "PYTHON op by op: " + _line(e))
  return Outcome("fail", "mismatch: " + msg, ("mismatch",))


# ---- the generator

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
    Tensor, dtypes = _tg()
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


# ---- shrinking, reproducers, the driver

def _sized(prog: Program, f) -> Program:
  """Every input dim (and expand size) n replaced by f(input index, dim, n)."""
  ins = [dataclasses.replace(x, shape=tuple(f(i, j, n) for j, n in enumerate(x.shape))) for i, x in enumerate(prog.inputs)]
  return Program(ins, [dataclasses.replace(o, p=(o.p[0], f(-1, -1, o.p[1]))) if o.kind == "expand" else o for o in prog.ops])


def _simpler(x: Input):
  for c in ((False, True) if x.dtype == "bool" else (0, 1, x.lo)):
    if x.lo <= c <= x.hi and x.const != c:
      yield dataclasses.replace(x, const=c, pool=())
  fp = x.dtype == "float32"
  lo, hi = max(x.lo, -1 if fp else -2), min(x.hi, 1 if fp else 2)
  if x.const is None and lo <= hi and (lo, hi) != (x.lo, x.hi):
    yield dataclasses.replace(x, lo=type(x.lo)(lo), hi=type(x.hi)(hi), pool=(), grid=1.0 if fp else 0.0)
  if x.shape and x.shape[0] == 1:  # a leading 1 is implicit in broadcasting
    yield dataclasses.replace(x, shape=x.shape[1:])
  if x.dtype not in ("int32", "float32"):  # the plainest dtype
    yield dataclasses.replace(x, dtype="int32", lo=max(int(x.lo), -2**31), hi=min(int(x.hi), 2**31 - 1), pool=())


def candidates(prog: Program):
  """Simpler programs, the biggest steps first: an earlier output, an op bypassed, smaller sizes, simpler inputs."""
  ops, ins = prog.ops, prog.inputs
  for j in range(len(ops) - 1):
    yield Program(ins, ops[:j + 1]).pruned()
  for i, o in enumerate(ops[:-1]):
    for a in o.args:
      yield Program(ins, [dataclasses.replace(u, args=tuple(a if x == o.out else x for x in u.args)) for u in ops[:i] + ops[i + 1:]]).pruned()
  for n in sorted({n for x in ins for n in x.shape if n > 1}, reverse=True):
    for m in sorted({1, 2, n // 2, n - 1}):
      if m < n:
        yield _sized(prog, lambda i, j, k, n=n, m=m: m if k == n else k)
  for xi, x in enumerate(ins):
    for dj, n in enumerate(x.shape):
      for m in sorted({1, n // 2, n - 1} - {0, n}):
        yield _sized(prog, lambda i, j, k, xi=xi, dj=dj, m=m: m if (i, j) == (xi, dj) else k)
  for xi, x in enumerate(ins):
    for y in _simpler(x):
      yield Program(ins[:xi] + [y] + ins[xi + 1:], ops)


def shrink(prog: Program, bad, budget: int = 400, seconds: float = 240.0) -> tuple:
  """Greedy shrinking while bad(program) holds: (the smallest program found, runs)."""
  runs, t0, progress = 0, time.time(), True
  while progress:
    progress = False
    for cand in candidates(prog):
      if runs >= budget or time.time() - t0 > seconds: return prog, runs
      if cand.measure() < prog.measure():
        runs += 1
        if bad(cand):
          prog, progress = cand, True
          break
  return prog, runs


def snippet(prog: Program) -> str:
  """A standalone Python script: the program on TINYTPU and on PYTHON, compared."""
  _, v, lines = build(prog, "PYTHON", empty=True)
  tol = tolerance(v)
  return "\n".join(["import numpy as np", "import tinytpu  # noqa: F401  registers the TINYTPU device", "from tinygrad import Tensor, dtypes",
                    "", "def program(dev):", *[f"  {x.name} = Tensor({x.code()}, device=dev)" for x in prog.inputs],
                    *[f"  {ln}" for ln in lines], f"  return {prog.ops[-1].out}.numpy()", "",
                    'got, ref = program("TINYTPU"), program("PYTHON")', 'print("TINYTPU", got.tolist())', 'print("PYTHON ", ref.tolist())',
                    f"np.testing.assert_allclose(got, ref, rtol=0, atol={tol!r})" if tol else "np.testing.assert_array_equal(got, ref)"]) + "\n"


def repro(seed: int, index: int) -> str:
  return f"python -m tinytpu fuzz --seed {seed} --index {index}"


def report(seed: int, index: int, prog: Program, o: Outcome, fault: str | None = None, do_shrink: bool = True, seconds: float = 240.0) -> str:
  """A failure: what differs, the shrunk program, the command that reproduces it, the standalone snippet."""
  lines, small = [f"FAIL seed {seed} index {index}: {o.msg}"], prog
  if do_shrink:
    small, runs = shrink(prog, lambda p: (c := check(p, fault)).kind == "fail" and c.sig == o.sig, seconds=seconds)
    lines.append(f"  shrunk in {runs} runs: {len(prog.ops)} -> {len(small.ops)} ops, {prog.measure()[1]} -> {small.measure()[1]} "
                 f"input elements: {check(small, fault).msg}")
  lines += [f"  reproduce: {repro(seed, index)}", "  ---- reproducer" + (" (shrunk)" if do_shrink else "") + " ----"]
  return "\n".join(lines + ["  " + ln for ln in snippet(small).splitlines()] + ["  ----"])


@dataclass
class Summary:
  seed: int
  programs: int = 0
  failures: list = field(default_factory=list)      # (index, outcome, report)
  unsupported: collections.Counter = field(default_factory=collections.Counter)
  invalid: list = field(default_factory=list)       # (index, message)

  def line(self) -> str:
    return f"fuzz: {self.programs} programs, {len(self.failures)} mismatches, {sum(self.unsupported.values())} unsupported, seed {self.seed}"


def fuzz(seed: int, count: int, start: int = 0, fault: str | None = None, max_shrinks: int = 10, shrink_seconds: float = 240.0,
         out=sys.stdout) -> Summary:
  """Programs start .. start+count-1 of seed, each compared; failures reported (the first max_shrinks shrunk)."""
  fault = fault or os.environ.get("TINYTPU_FUZZ_FAULT") or None
  s, t0 = Summary(seed), time.time()
  for i in range(start, start + count):
    try:
      prog = generate(seed, i)
    except Exception as e:  # noqa: BLE001  a generator bug: reported, the run goes on
      prog, o = None, Outcome("invalid", "generator: " + _line(e))
    else:
      o = check(prog, fault)
    s.programs += 1
    out.write({"ok": ".", "unsupported": "u", "invalid": "?", "fail": "F"}[o.kind])
    if o.kind == "unsupported":
      s.unsupported[re.sub(r"\b\d+\b", "N", re.sub(r"\x1b\[[0-9;]*m", "", o.msg))[:140]] += 1
    elif o.kind == "invalid":
      s.invalid.append((i, o.msg))
    elif o.kind == "fail":
      s.failures.append((i, o, report(seed, i, prog, o, fault, len(s.failures) < max_shrinks, shrink_seconds)))
      out.write("\n" + s.failures[-1][2] + "\n")
    if (i - start + 1) % 50 == 0 or i == start + count - 1:
      out.write(f" {i - start + 1}/{count} {time.time() - t0:.0f}s\n")
    out.flush()
  for msg, n in s.unsupported.most_common():
    out.write(f"  unsupported x{n}: {msg}\n")
  for i, msg in s.invalid:
    out.write(f"  reference failed (not counted), index {i}: {msg}\n")
  for i, o, _ in s.failures:
    out.write(f"  FAIL index {i}: {o.msg[:160]}  ({repro(seed, i)})\n")
  out.write(s.line() + "\n")
  return s


def today_seed() -> int:
  """The night's seed under `make regress` (TINYTPU_NIGHT_SEED: SEED= or the date the run
  started, so every shard of a night draws the same programs), else today's date as YYYYMMDD."""
  night = os.environ.get("TINYTPU_NIGHT_SEED")
  return int(night) if night else int(datetime.date.today().strftime("%Y%m%d"))


def main(argv: list[str] | None = None) -> int:
  ap = argparse.ArgumentParser(prog="python -m tinytpu fuzz", description="random tinygrad programs: TINYTPU against tinygrad's PYTHON device")
  ap.add_argument("--seeds", type=int, default=100, help="number of programs (default 100)")
  ap.add_argument("--seed", type=int, default=None, help="seed (default: today's date as YYYYMMDD)")
  ap.add_argument("--index", type=int, default=None, help="run only program INDEX of the seed")
  ap.add_argument("--sim", choices=("golden", "rtl", "both"), default=None, help="TINYTPU_SIM for the TINYTPU side")
  ap.add_argument("--max-shrinks", type=int, default=10, help="shrink only the first N failures (default 10)")
  ap.add_argument("--print", action="store_true", help="print each program as a standalone snippet first")
  a = ap.parse_args(argv)
  if a.sim:
    os.environ["TINYTPU_SIM"] = a.sim
  seed = today_seed() if a.seed is None else a.seed
  start, count = (a.index, 1) if a.index is not None else (0, a.seeds)
  print(f"fuzz: seed {seed}, programs {start}..{start + count - 1}, TINYTPU_SIM={os.environ.get('TINYTPU_SIM', 'rtl')}", flush=True)
  for i in range(start, start + count) if a.print else ():
    print(f"# program {i}\n{snippet(generate(seed, i))}")
  return 1 if fuzz(seed, count, start, max_shrinks=a.max_shrinks).failures else 0
