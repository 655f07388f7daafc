"""golden/intops.py against per-lane Python-int formulations written straight from doc/isa.md.

Seeded: TINYTPU_SEED=<n> reproduces a run (the seed is in every failure message)."""
import functools
import itertools
import operator
import os

import numpy as np
import pytest

from tinytpu import isa
from tinytpu.golden import intops

SEED = int(os.environ.get("TINYTPU_SEED", "20240601"))
print(f"test_intops seed {SEED}")
M = 0xFFFFFFFF
INT_MIN, INT_MAX = -(1 << 31), (1 << 31) - 1

def s32(x): x &= M; return x - (1 << 32) if x >> 31 else x
def s8(x): x &= 0xFF; return x - 256 if x >> 7 else x
def clamp(x, lo, hi): return lo if x < lo else hi if x > hi else x

# ---- scalar references: unsigned 32-bit ints in, unsigned 32-bit int out
def cdiv(a, b):
  x, y = s32(a), s32(b)
  if y == 0: return 0
  q = abs(x) // abs(y)
  return (-q if (x < 0) != (y < 0) else q) & M

def cmod(a, b):
  x, y = s32(a), s32(b)
  return a if y == 0 else (x - s32(cdiv(a, b)) * y) & M

def rot(a, s): s &= 31; return ((a << s) | (a >> (32 - s))) & M

def p8(f):  # lift a per-byte function of signed bytes to a lane; f returns any int (low 8 bits kept)
  def g(a, b, c):
    return sum((f(s8(a >> 8 * i), s8(b >> 8 * i)) & 0xFF) << 8 * i for i in range(4))
  return g

REF = {
  "ADD": lambda a, b, c: (a + b) & M,
  "SUB": lambda a, b, c: (a - b) & M,
  "MUL": lambda a, b, c: (s32(a) * s32(b)) & M,
  "CDIV": lambda a, b, c: cdiv(a, b),
  "CMOD": lambda a, b, c: cmod(a, b),
  "NEG": lambda a, b, c: -s32(a) & M,
  "ABS": lambda a, b, c: abs(s32(a)) & M,
  "SIGN": lambda a, b, c: (0 if a == 0 else -1 if s32(a) < 0 else 1) & M,
  "RELU": lambda a, b, c: a if s32(a) > 0 else 0,
  "MAX": lambda a, b, c: a if s32(a) >= s32(b) else b,
  "MIN": lambda a, b, c: a if s32(a) <= s32(b) else b,
  "MAXU": lambda a, b, c: max(a, b),
  "MINU": lambda a, b, c: min(a, b),
  "SATADD": lambda a, b, c: clamp(s32(a) + s32(b), INT_MIN, INT_MAX) & M,
  "SATSUB": lambda a, b, c: clamp(s32(a) - s32(b), INT_MIN, INT_MAX) & M,
  "ABSDIFF": lambda a, b, c: min(abs(s32(a) - s32(b)), INT_MAX),
  "CMPLT": lambda a, b, c: int(s32(a) < s32(b)),
  "CMPLTU": lambda a, b, c: int(a < b),
  "CMPEQ": lambda a, b, c: int(a == b),
  "CMPNE": lambda a, b, c: int(a != b),
  "AND": lambda a, b, c: a & b,
  "OR": lambda a, b, c: a | b,
  "XOR": lambda a, b, c: a ^ b,
  "NOT": lambda a, b, c: M - a,
  "SHL": lambda a, b, c: (a << (b & 31)) & M,
  "SHR": lambda a, b, c: a >> (b & 31),
  "SRA": lambda a, b, c: (s32(a) >> (b & 31)) & M,
  "ROTL": lambda a, b, c: rot(a, b),
  "ROTR": lambda a, b, c: rot(a, 32 - (b & 31)),
  "CLZ": lambda a, b, c: 32 - a.bit_length(),
  "CTZ": lambda a, b, c: 32 if a == 0 else (a & -a).bit_length() - 1,
  "POPCNT": lambda a, b, c: bin(a).count("1"),
  "BREV8": lambda a, b, c: int.from_bytes(a.to_bytes(4, "little"), "big"),
  "SEXT8": lambda a, b, c: s8(a) & M,
  "SEXT16": lambda a, b, c: (((a & 0xFFFF) ^ 0x8000) - 0x8000) & M,
  "ZEXT8": lambda a, b, c: a % 256,
  "ZEXT16": lambda a, b, c: a % 65536,
  "P8ADD": p8(lambda x, y: clamp(x + y, -128, 127)),
  "P8SUB": p8(lambda x, y: clamp(x - y, -128, 127)),
  "P8MAX": p8(max),
  "P8MIN": p8(min),
  "P8NEG": p8(lambda x, y: min(-x, 127)),
  "P8RELU": p8(lambda x, y: max(x, 0)),
  "P8ABS": p8(lambda x, y: min(abs(x), 127)),
  "P8SIGN": p8(lambda x, y: (x > 0) - (x < 0)),
  "P8CMPLT": p8(lambda x, y: 0xFF if x < y else 0),
  "P8CMPEQ": p8(lambda x, y: 0xFF if x == y else 0),
  "P8MULLO": p8(lambda x, y: x * y),
  "P8MULHI": p8(lambda x, y: ((x * y) & 0xFFFF) >> 8),
  "P8ABSDIFF": p8(lambda x, y: min(abs(x - y), 127)),
  "SEL": lambda a, b, c: a if c else b,
  "MAC": lambda a, b, c: (a * b + c) & M,
}
LANEWISE = sorted(REF)

# ---- whole-tile references (nested Python lists of unsigned ints, one N x N tile)
def _rows(t): return t
def _cols(t): return [list(col) for col in zip(*t)]

def red_ref(kind, scope, t):
  n = len(t)
  f = {"SUM": lambda v: sum(v) & M, "PROD": lambda v: functools.reduce(operator.mul, v, 1) & M,
       "MAX": lambda v: max(v, key=s32), "MIN": lambda v: min(v, key=s32)}[kind]
  if scope == "ROW": return [[f(row)] * n for row in t]
  if scope == "COL": return [list(r) for r in zip(*[[f(col)] * n for col in _cols(t)])]
  return [[f([x for row in t for x in row])] * n for _ in range(n)]

def arg_ref(kind, t):
  out = []
  for row in t:
    sv = [s32(x) for x in row]
    best = max(sv) if kind == "MAX" else min(sv)
    out.append([next(i for i, v in enumerate(sv) if v == best)] * len(row))
  return out

def irotpair_ref(ta, tb):
  out = []
  for ra, rb in zip(ta, tb):
    row = []
    for p in range(0, len(ra), 2):
      x0, x1, co, si = ra[p], ra[p + 1], rb[p], rb[p + 1]
      row += [(x0 * co - x1 * si) & M, (x0 * si + x1 * co) & M]
    out.append(row)
  return out

TILEWISE = {f"{k}_{s}": functools.partial(lambda k, s, a, b: red_ref(k, s, a), k, s)
            for k in ("SUM", "MAX", "MIN", "PROD") for s in ("ROW", "COL", "TILE")}
TILEWISE["ARGMAX_ROW"] = lambda a, b: arg_ref("MAX", a)
TILEWISE["ARGMIN_ROW"] = lambda a, b: arg_ref("MIN", a)
TILEWISE["IROTPAIR"] = irotpair_ref

# ---- operands
EDGE = [x & M for x in (0, 1, -1, 2, INT_MIN, INT_MAX, INT_MIN + 1, INT_MAX - 1, 31, 32, 33, 63, 0x7F, 0x80, 0xFF,
                         0x7FFF, 0x8000, 0xFFFF, 0x80808080, 0x7F7F7F7F, 0x017F80FF, 0x00FF0180, 3, -7, 0x12345678)]

def operands(rng, shape):
  """Lanes drawn from weighted classes: zero, +-1, small, large, INT_MIN/MAX, packed-byte extremes,
  shift amounts, uniform random."""
  n = int(np.prod(shape))
  cls = rng.choice(8, size=n, p=[.08, .1, .16, .12, .08, .12, .09, .25])
  small = rng.integers(-20, 21, n)
  large = rng.integers(1 << 29, 1 << 31, n) * rng.choice([-1, 1], n)
  byts = rng.choice([0, 1, 0x7F, 0x80, 0xFF, 0x81, 0x40, 0xC0], size=(n, 4)) @ (1 << 8 * np.arange(4))
  shifts = rng.choice([0, 1, 31, 32, 33, -1, 64, -32], n)
  rnd = rng.integers(0, 1 << 32, n)
  vals = np.select([cls == 0, cls == 1, cls == 2, cls == 3, cls == 4, cls == 5, cls == 6],
                   [0, rng.choice([1, -1], n), small, large, rng.choice([INT_MIN, INT_MAX], n), byts, shifts], rnd)
  return (vals.astype(np.int64) & M).astype(np.uint32).reshape(shape)

def edge_operands():
  """Every (a, b) pair of EDGE values, with c cycling through EDGE, packed into (T, 4, 4) tiles."""
  pairs = list(itertools.product(EDGE, EDGE))
  pairs += [(0, 0)] * (-len(pairs) % 16)
  a = np.array([p[0] for p in pairs], np.uint32).reshape(-1, 4, 4)
  b = np.array([p[1] for p in pairs], np.uint32).reshape(-1, 4, 4)
  c = np.array([EDGE[i % len(EDGE)] if i % 3 else 0 for i in range(len(pairs))], np.uint32).reshape(-1, 4, 4)
  return a, b, c

SHAPES = [(4, 4), (8, 8), (16, 16), (3, 4, 4), (2, 8, 8), (2, 2, 16, 16)]

def _check_lanewise(name, a, b, c, what):
  out = intops.OPS[name](a, b, c)
  assert out.dtype == np.uint32 and out.shape == a.shape, f"{name}: got {out.dtype} {out.shape}"
  ref = REF[name]
  for i, (x, y, z, got) in enumerate(zip(a.ravel().tolist(), b.ravel().tolist(), c.ravel().tolist(), out.ravel().tolist())):
    want = ref(x, y, z)
    assert got == want, f"{name} {what} lane {i}: a={x:#010x} b={y:#010x} c={z:#010x}: got {got:#010x} want {want:#010x} (seed {SEED})"

# ---- tests
def test_registry_covers_every_int_function():
  fp = lambda n: n.startswith("F") or n in ("I2F", "U2F", "F2I", "F2BF16", "BF162F")
  want = {n for n in isa.VPU_FNS if not fp(n)}
  assert want <= set(intops.OPS), f"missing: {sorted(want - set(intops.OPS))}"
  assert set(intops.OPS) <= set(isa.VPU_FNS), f"not VPU functions: {sorted(set(intops.OPS) - set(isa.VPU_FNS))}"
  # and this test file has an independent reference for every one of them
  assert want == set(REF) | set(TILEWISE), sorted(want ^ (set(REF) | set(TILEWISE)))

@pytest.mark.parametrize("name", LANEWISE)
def test_lanewise_edges(name):
  _check_lanewise(name, *edge_operands(), "edge")

@pytest.mark.parametrize("name", LANEWISE)
def test_lanewise_random(name):
  rng = np.random.default_rng([SEED, isa.VPU_FNS[name]])
  for shape in SHAPES:
    a, b, c = (operands(rng, shape) for _ in range(3))
    _check_lanewise(name, a, b, c, f"random {shape}")

def _tiles(x): return x.reshape(-1, x.shape[-2], x.shape[-1])

@pytest.mark.parametrize("name", sorted(TILEWISE))
def test_tilewise(name):
  rng = np.random.default_rng([SEED, isa.VPU_FNS[name]])
  cases = [(operands(rng, s), operands(rng, s)) for s in SHAPES]
  cases.append(edge_operands()[:2])
  # ties (first index wins for argmax/argmin), and a product that wraps
  cases.append(((np.array([[[5, 5, 1, 5], [-1, -1, -1, -1], [0, INT_MIN, INT_MIN, 0], [INT_MAX, 0, INT_MAX, 0]]]) & M).astype(np.uint32),
                np.full((1, 4, 4), 3, np.uint32)))
  cases.append((np.full((1, 4, 4), 0x10001, np.uint32), np.full((1, 4, 4), M, np.uint32)))
  for a, b in cases:
    out = intops.OPS[name](a, b, None)
    assert out.dtype == np.uint32 and out.shape == a.shape
    for ta, tb, to in zip(_tiles(a).tolist(), _tiles(b).tolist(), _tiles(out).tolist()):
      assert to == TILEWISE[name](ta, tb), f"{name} shape {a.shape}: a={ta} b={tb} got {to} (seed {SEED})"

@pytest.mark.parametrize("name", sorted(intops.OPS))
def test_no_mutation_fresh_result_and_views(name):
  rng = np.random.default_rng([SEED, 7, isa.VPU_FNS[name]])
  big = [operands(rng, (2, 8, 8)) for _ in range(3)]
  keep = [x.copy() for x in big]
  out = intops.OPS[name](*big)
  for x, k in zip(big, keep):
    assert np.array_equal(x, k), f"{name} mutated an input"
    assert not np.shares_memory(out, x), f"{name} returned memory shared with an input"
  # strided and transposed views give the same result as contiguous copies
  views = [np.swapaxes(x, -1, -2)[:, ::2, ::2] for x in big]
  got = intops.OPS[name](*views)
  assert np.array_equal(got, intops.OPS[name](*[np.ascontiguousarray(v) for v in views])), name

def test_directed_values():
  # spot checks written out by hand from doc/isa.md
  u = lambda v: np.tile(np.array([x & M for x in v], np.uint32), (4, 1))  # one row, repeated
  op = lambda n, a, b=(0, 0, 0, 0): intops.OPS[n](u(a), u(b), u((0, 0, 0, 0)))[0].tolist()
  assert op("CDIV", (7, -7, INT_MIN, 5), (2, 2, -1, 0)) == [3, -3 & M, INT_MIN & M, 0]
  assert op("CMOD", (7, -7, INT_MIN, 5), (2, 2, -1, 0)) == [1, -1 & M, 0, 5]
  assert op("SHL", (1, 1, 1, 1), (0, 31, 32, 33)) == [1, 1 << 31, 1, 2]
  assert op("SRA", (INT_MIN, INT_MIN, -1, 8), (31, -1, 32, 33)) == [M, M, M, 4]
  assert op("ROTL", (0x80000001,) * 4, (0, 1, 32, 33)) == [0x80000001, 3, 0x80000001, 3]
  assert op("ROTR", (0x80000001,) * 4, (0, 1, 32, -1)) == [0x80000001, 0xC0000000, 0x80000001, 3]
  assert op("CLZ", (0, 1, M, 0x00010000)) == [32, 31, 0, 15]
  assert op("CTZ", (0, 1, INT_MIN, 0x00010000)) == [32, 0, 31, 16]
  assert op("SATADD", (INT_MAX, INT_MIN, -1, 5), (1, -1, INT_MIN, -6)) == [INT_MAX, INT_MIN & M, INT_MIN & M, M]
  assert op("ABSDIFF", (INT_MAX, INT_MIN, -1, 5), (INT_MIN, INT_MAX, INT_MIN, 5)) == [INT_MAX, INT_MAX, INT_MAX, 0]
  assert op("NEG", (INT_MIN, 1, 0, -1)) == [INT_MIN & M, M, 0, 1]
  assert op("ABS", (INT_MIN, -1, 0, 1)) == [INT_MIN & M, 1, 0, 1]
  assert op("P8ADD", (0x7F80017F,) * 4, (0x01FF01FF,) * 4)[0] == 0x7F80027E
  assert op("P8NEG", (0x7F800100,) * 4)[0] == 0x817FFF00
  assert op("P8MULHI", (0x80807F80,) * 4, (0x80017F7F,) * 4)[0] == 0x40FF3FC0
  assert op("P8ABSDIFF", (0x7F800000,) * 4, (0x807F0000,) * 4)[0] == 0x7F7F0000
  assert op("BREV8", (0x12345678, 0, 0xFF, M)) == [0x78563412, 0, 0xFF000000, M]
