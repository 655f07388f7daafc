"""The programs of the differential fuzzer (tinytpu/fuzz.py): what one is, how it runs on a device,
how two runs are compared.

A `Program` is `Input`s (dtype, shape, declared value range, data seed) and `Op`s (kind, argument
names, parameters); the last op is the output. `build` renders each op as one line of tinygrad code
for the shapes and value bounds it meets, so one description runs on any device, prints as a
standalone reproducer (`fuzz.snippet`) and stays valid while `fuzz.shrink` drops ops, sizes and values.

Comparison (doc/fuzz.md has the rules): ints and bools exactly. Every fp32 value carries a bound d on
how far two correct implementations may drift apart: 0 for inputs and correctly rounded ops of d = 0
values (those match bit for bit); raised by muls tinygrad may fuse (MULACC, a * (1/b) -> a / b),
transcendentals (4 * 2^-24), sums/cumsums/matmuls/convs of K terms (K * term drift + 2 K^2 2^-24 max|term|),
propagated through the value intervals. An fp output passes within 2 * d, NaNs at the same places.
Compares, argmax/argmin and fp -> int/bool casts only see d = 0 values, so drift never flips them.

Outcomes of `check`: ok; unsupported (TINYTPU raised NotImplementedError: counted, not a failure);
fail (a wrong value or any other TINYTPU exception); invalid (PYTHON itself failed)."""
from __future__ import annotations

import functools
import math
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
def tinygrad_api():
  from tinygrad import Tensor, dtypes
  from tinytpu.backend.device import register
  register()  # the TINYTPU device (idempotent)
  return Tensor, dtypes


def _dtname(dt) -> str:
  _, dtypes = tinygrad_api()
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
  Tensor, dtypes = tinygrad_api()
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
  Tensor, dtypes = tinygrad_api()
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


def error_line(e: BaseException) -> str:
  s = str(e).strip().splitlines()
  return f"{type(e).__name__}: {s[0] if s else ''}"[:300]


def check(prog: Program, fault: str | None = None) -> Outcome:
  try:
    t, v, _ = build(prog, "PYTHON")
    ref = t.numpy()
  except Exception as e:  # noqa: BLE001  the reference failing is not TINYTPU's failure
    return Outcome("invalid", "PYTHON: " + error_line(e))
  try:
    got = build(prog, "TINYTPU", fault)[0].numpy()
  except NotImplementedError as e:
    return Outcome("unsupported", error_line(e))
  except Exception as e:  # noqa: BLE001  any other TINYTPU exception is a failure
    return Outcome("fail", error_line(e), ("error", type(e).__name__))
  if not (msg := compare(got, ref, tolerance(v))):
    return Outcome("ok")
  try:  # a second opinion: PYTHON with every op its own kernel (tinygrad's fusion has bugs of its own)
    if bad := compare(build(prog, "PYTHON", split=True)[0].numpy(), ref, tolerance(v), ("PYTHON op by op", "PYTHON fused")):
      return Outcome("invalid", f"PYTHON fused and op by op differ: {bad}; TINYTPU: {msg}")
  except Exception as e:  # noqa: BLE001
    return Outcome("invalid", "PYTHON op by op: " + error_line(e))
  return Outcome("fail", "mismatch: " + msg, ("mismatch",))
