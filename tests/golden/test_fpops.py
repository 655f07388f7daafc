"""The fp32 VPU reference functions against independent formulations.

Correctly rounded ops are checked against float64 arithmetic rounded once to float32 (exact for
+ - * / sqrt on fp32 operands, since 53 >= 2*24 + 2); the rest against per-lane Python code."""
import math
import zlib

import numpy as np
import pytest

from tinytpu import isa
from tinytpu.golden import fpops, transcendental

QNAN = 0x7FC00000
FP_FNS = """FADD FSUB FMUL FDIV FRECIP FSQRT FNEG FABS FSIGN FMAX FMIN FTRUNC FCMPLT FCMPEQ FCMPNE I2F U2F F2I
  F2BF16 BF162F FEXP2 FLOG2 FSIN FCOS FARGMAX_ROW FARGMIN_ROW FROTPAIR FMAC""".split()
FP_FNS += [f"{k}_{s}" for k in ("FSUM", "FMAX", "FMIN", "FPROD") for s in ("ROW", "COL", "TILE")]

SPECIAL = [0x00000000, 0x80000000, 0x00000001, 0x80000001, 0x007FFFFF, 0x807FFFFF, 0x00800000, 0x80800000,
           0x3F800000, 0xBF800000, 0x3F000000, 0xBF000000, 0x3FC00000, 0x40000000, 0x7F7FFFFF, 0xFF7FFFFF,
           0x7F800000, 0xFF800000, 0x7FC00000, 0xFFC00000, 0x7FC12345, 0x7F800001, 0x4B000000, 0x4B000001,
           0x4F000000, 0xCF000000, 0xCF000001, 0x4EFFFFFF, 0xCEFFFFFF, 0x33800000, 0x34000000, 0x3F800001,
           0x3F7FFFFF, 0x45800000, 0x00400000, 0x80400000, 0x3F808000, 0x3F818000, 0x4F800000]

def f(bits): return np.asarray(bits, dtype=np.uint32).view(np.float32)
def b32(x): return np.asarray(x, dtype=np.float32).view(np.uint32)

def operands(rng, shape):
  """fp32 bit patterns drawn by class: specials, subnormals, normals near 1, any normal, any bits."""
  n = int(np.prod(shape))
  cls = rng.integers(0, 5, n)
  sign = rng.integers(0, 2, n).astype(np.uint32) << 31
  mant = rng.integers(0, 1 << 23, n).astype(np.uint32)
  out = np.asarray(SPECIAL, dtype=np.uint32)[rng.integers(0, len(SPECIAL), n)]
  out = np.where(cls == 1, sign | mant, out)                                                         # subnormal
  out = np.where(cls == 2, sign | (rng.integers(120, 135, n).astype(np.uint32) << 23) | mant, out)   # near 1
  out = np.where(cls == 3, sign | (rng.integers(1, 255, n).astype(np.uint32) << 23) | mant, out)     # any normal
  out = np.where(cls == 4, rng.integers(0, 1 << 32, n, dtype=np.uint64).astype(np.uint32), out)     # any bits
  return out.reshape(shape)

def tie_pairs(rng, n):
  """(a, b) with a + b exactly halfway between two floats: b = ±half an ulp of a (or 3 halves)."""
  e = rng.integers(30, 250, n).astype(np.uint32)
  a = (rng.integers(0, 2, n).astype(np.uint32) << 31) | (e << 23) | rng.integers(0, 1 << 23, n).astype(np.uint32)
  b = ((e - 24) << 23) | (rng.integers(0, 2, n).astype(np.uint32) << 31)
  b = np.where(rng.integers(0, 2, n) == 1, b + (1 << 22), b)  # 1.5 * half ulp: 3/4 ulp, not a tie
  return a, b

def assert_same(got, exp, canon=True):
  got, exp = np.asarray(got, dtype=np.uint32), np.asarray(exp, dtype=np.uint32)
  assert got.shape == exp.shape and got.dtype == np.uint32
  gn, en = np.isnan(f(got)), np.isnan(f(exp))
  bad = (gn != en) | (~gn & (got != exp))
  if canon:
    bad |= gn & (got != QNAN)
  if bad.any():
    i = np.argwhere(bad)[0]
    raise AssertionError(f"{int(bad.sum())} mismatches, first at {tuple(i)}: got {got[tuple(i)]:#010x} expected {exp[tuple(i)]:#010x}")

def r32(x64):
  with np.errstate(all="ignore"):
    return b32(np.asarray(x64, dtype=np.float64).astype(np.float32))

def d(bits):
  with np.errstate(invalid="ignore"):  # signalling NaN operands
    return f(bits).astype(np.float64)

def per_lane(fn, *arrs):
  flat = [np.asarray(a, dtype=np.uint32).ravel() for a in arrs]
  return np.array([fn(*(int(x[i]) for x in flat)) & 0xFFFFFFFF for i in range(flat[0].size)], dtype=np.uint32).reshape(arrs[0].shape)

def fval(u): return float(f(np.uint32(u)))
def isnan(u): return math.isnan(fval(u))

@pytest.fixture
def rng(request): return np.random.default_rng(zlib.crc32(request.node.name.encode()))

SHAPES = [(3, 4, 4), (2, 8, 8), (16, 16)]

# ---------------------------------------------------------------------------------------------
def test_registry_covers_every_fp_function():
  assert set(FP_FNS) <= set(fpops.OPS), set(FP_FNS) - set(fpops.OPS)
  assert set(fpops.OPS) <= set(isa.VPU_FNS), set(fpops.OPS) - set(isa.VPU_FNS)

def test_outputs_are_new_uint32_arrays_and_inputs_untouched(rng):
  for name, op in fpops.OPS.items():
    a, b, c = (operands(rng, (2, 4, 4)) for _ in range(3))
    keep = [x.copy() for x in (a, b, c)]
    r = op(a, b, c)
    assert r.dtype == np.uint32 and r.shape == a.shape, name
    assert not np.shares_memory(r, a) and not np.shares_memory(r, b), name
    for x, k in zip((a, b, c), keep):
      assert np.array_equal(x, k), name

BIN = {"FADD": np.add, "FSUB": np.subtract, "FMUL": np.multiply, "FDIV": np.divide}

@pytest.mark.parametrize("name", list(BIN))
@pytest.mark.parametrize("shape", SHAPES)
def test_binary_correctly_rounded(name, shape, rng):
  a, b = operands(rng, shape), operands(rng, shape)
  with np.errstate(all="ignore"):
    exp = r32(BIN[name](d(a), d(b)))
  assert_same(fpops.OPS[name](a, b, None), exp)

def test_every_special_pair():
  s = np.asarray(SPECIAL, dtype=np.uint32)
  a, b = np.meshgrid(s, s)
  a, b = a.reshape(-1, 1, len(s)), b.reshape(-1, 1, len(s))  # any (..., rows, cols) shape works
  with np.errstate(all="ignore"):
    for name, fn in BIN.items():
      assert_same(fpops.OPS[name](a, b, None), r32(fn(d(a), d(b))))
    assert_same(fpops.OPS["FMAC"](a, b, a), r32(d(r32(d(a) * d(b))) + d(a)))

@pytest.mark.parametrize("name", ["FADD", "FSUB"])
def test_add_rounding_ties(name, rng):
  a, b = tie_pairs(rng, 4096)
  a, b = a.reshape(-1, 8, 8), b.reshape(-1, 8, 8)
  with np.errstate(all="ignore"):
    assert_same(fpops.OPS[name](a, b, None), r32(BIN[name](d(a), d(b))))
  # hand-checked: 1 + 2^-24 ties to 1 (even), (1 + 2^-23) + 2^-24 ties up to 1 + 2^-22
  one, half_ulp = np.full((4, 4), 0x3F800000, np.uint32), np.full((4, 4), 0x33800000, np.uint32)
  assert (fpops.OPS["FADD"](one, half_ulp, None) == 0x3F800000).all()
  assert (fpops.OPS["FADD"](one + 1, half_ulp, None) == 0x3F800002).all()

def test_mul_ties_and_subnormal_products():
  # (1 + 2^-12)^2 = 1 + 2^-11 + 2^-24: a tie, to even (1 + 2^-11); 2^-75 * 2^-75 rounds to 0; 2^-74 * 2^-75 = 2^-149
  a = np.array([[0x3F800800, 0x1A000000, 0x1A800000, 0x00000003]], np.uint32)
  b = np.array([[0x3F800800, 0x1A000000, 0x1A000000, 0x3F000000]], np.uint32)  # 3 * 2^-149 * 0.5: tie -> 2 * 2^-149
  assert fpops.OPS["FMUL"](a, b, None).tolist() == [[0x3F801000, 0, 1, 2]]

@pytest.mark.parametrize("shape", SHAPES)
def test_unary_correctly_rounded(shape, rng):
  a = operands(rng, shape)
  with np.errstate(all="ignore"):
    assert_same(fpops.OPS["FRECIP"](a, None, None), r32(1.0 / d(a)))
    assert_same(fpops.OPS["FSQRT"](a, None, None), r32(np.sqrt(d(a))))
  assert (fpops.OPS["FSQRT"](np.full((4, 4), 0x80000000, np.uint32)) == 0x80000000).all()  # sqrt(-0) = -0
  assert (fpops.OPS["FRECIP"](np.full((4, 4), 0x80000000, np.uint32)) == 0xFF800000).all()  # 1/-0 = -inf

@pytest.mark.parametrize("shape", SHAPES)
def test_fmac_two_roundings(shape, rng):
  a, b, c = operands(rng, shape), operands(rng, shape), operands(rng, shape)
  with np.errstate(all="ignore"):
    exp = r32(d(r32(d(a) * d(b))) + d(c))
  assert_same(fpops.OPS["FMAC"](a, b, c), exp)
  # a fused multiply-add would give 2^-46 here: (1 + 2^-23)^2 - (1 + 2^-22) is 2^-46 exactly
  a = np.full((4, 4), 0x3F800001, np.uint32)
  assert (fpops.OPS["FMAC"](a, a, np.full((4, 4), 0xBF800002, np.uint32)) == 0).all()

def test_sign_and_bit_ops(rng):
  a = operands(rng, (4, 8, 8))
  assert_same(fpops.OPS["FNEG"](a, None, None), per_lane(lambda x: x ^ (1 << 31), a), canon=False)
  assert_same(fpops.OPS["FABS"](a, None, None), per_lane(lambda x: x & 0x7FFFFFFF, a), canon=False)
  # NaN payloads are kept by these bit operations
  assert fpops.OPS["FNEG"](np.array([[0x7FC12345]], np.uint32)).tolist() == [[0xFFC12345]]
  assert fpops.OPS["FABS"](np.array([[0xFFC12345]], np.uint32)).tolist() == [[0x7FC12345]]

  def sign(x):
    v = fval(x)
    return QNAN if math.isnan(v) else 0x3F800000 if v > 0 else 0xBF800000 if v < 0 else x
  assert_same(fpops.OPS["FSIGN"](a, None, None), per_lane(sign, a))

def test_ftrunc(rng):
  a = operands(rng, (4, 8, 8))

  def trunc(x):  # by the bits: clear the fraction bits below the binary point
    e = (x >> 23) & 0xFF
    if e == 255:
      return QNAN if x & 0x7FFFFF else x
    if e < 127:
      return x & 0x80000000
    return x if e >= 150 else x & ~((1 << (150 - e)) - 1)
  assert_same(fpops.OPS["FTRUNC"](a, None, None), per_lane(trunc, a))

def test_fmax_fmin(rng):
  a, b = operands(rng, (4, 8, 8)), operands(rng, (4, 8, 8))
  b = np.where(rng.integers(0, 4, a.shape) == 0, a ^ 0x80000000, b)  # plenty of ±0 and ±x pairs

  def mx(x, y, take_max):
    if isnan(x) or isnan(y):
      return QNAN
    vx, vy = fval(x), fval(y)
    if vx == vy:  # only ±0 pairs can differ: max prefers +0, min prefers -0
      neg = (x >> 31) & (y >> 31) if take_max else (x >> 31) | (y >> 31)
      return x if (x >> 31) == neg else y
    return x if (vx > vy) == take_max else y
  assert_same(fpops.OPS["FMAX"](a, b, None), per_lane(lambda x, y: mx(x, y, True), a, b))
  assert_same(fpops.OPS["FMIN"](a, b, None), per_lane(lambda x, y: mx(x, y, False), a, b))
  z, nz = np.zeros((4, 4), np.uint32), np.full((4, 4), 0x80000000, np.uint32)
  assert (fpops.OPS["FMAX"](nz, z, None) == 0).all() and (fpops.OPS["FMAX"](z, nz, None) == 0).all()
  assert (fpops.OPS["FMIN"](nz, z, None) == 0x80000000).all() and (fpops.OPS["FMIN"](z, nz, None) == 0x80000000).all()

def test_compares(rng):
  a, b = operands(rng, (4, 8, 8)), operands(rng, (4, 8, 8))
  b = np.where(rng.integers(0, 4, a.shape) == 0, a, b)
  b = np.where(rng.integers(0, 8, a.shape) == 0, a ^ 0x80000000, b)
  for name, cmp in (("FCMPLT", lambda x, y: x < y), ("FCMPEQ", lambda x, y: x == y), ("FCMPNE", lambda x, y: x != y)):
    assert np.array_equal(fpops.OPS[name](a, b, None), per_lane(lambda x, y: int(cmp(fval(x), fval(y))), a, b)), name
  z, nz, nan = (np.full((4, 4), v, np.uint32) for v in (0, 0x80000000, QNAN))
  assert (fpops.OPS["FCMPEQ"](z, nz, None) == 1).all() and (fpops.OPS["FCMPLT"](nz, z, None) == 0).all()
  assert (fpops.OPS["FCMPNE"](nan, nan, None) == 1).all() and (fpops.OPS["FCMPEQ"](nan, nan, None) == 0).all()

# ---- conversions
INT_EDGES = [0, 1, -1, 2**24, 2**24 + 1, 2**24 + 3, -(2**24 + 1), 2**25 + 2, 2**25 + 6, 2**31 - 1, -2**31, -2**31 + 1,
             2**31 - 64, 2**31 - 65, 2**31 - 192, 16777217 * 3, 0x7FFFFF80, 0x7FFFFFC0]

def test_i2f_u2f(rng):
  a = np.concatenate([np.array(INT_EDGES, np.int64).astype(np.uint32),
                      rng.integers(0, 1 << 32, 1024 - len(INT_EDGES) - 4, dtype=np.uint64).astype(np.uint32),
                      np.array([0xFFFFFFFF, 0xFFFFFF7F, 0xFFFFFF80, 0x80000080], np.uint32)]).reshape(-1, 4, 4)
  sgn = lambda x: x - (1 << 32) if x >> 31 else x
  assert_same(fpops.OPS["I2F"](a, None, None), per_lane(lambda x: int(b32(np.float32(float(sgn(x))))), a))
  assert_same(fpops.OPS["U2F"](a, None, None), per_lane(lambda x: int(b32(np.float32(float(x)))), a))
  assert fpops.OPS["I2F"](np.array([[2**24 + 1, 2**24 + 3]], np.uint32)).tolist() == [[0x4B800000, 0x4B800002]]

def test_f2i_saturation_and_nan(rng):
  edges = [0x4F000000, 0xCF000000, 0xCF000001, 0x4EFFFFFF, 0xCEFFFFFF, 0x7F800000, 0xFF800000, 0x7FC00000,
           0xFFC00000, 0x7F7FFFFF, 0xFF7FFFFF, 0x3F7FFFFF, 0xBF7FFFFF, 0x80000000, 0xC0200000, 0x40600000, 1]
  a = np.concatenate([np.array(edges, np.uint32), operands(rng, (1007,))]).reshape(-1, 4, 4)

  def f2i(x):
    v = fval(x)
    if math.isnan(v):
      return 0
    return max(-2**31, min(2**31 - 1, int(v))) if math.isfinite(v) else (2**31 - 1 if v > 0 else -2**31)
  assert np.array_equal(fpops.OPS["F2I"](a, None, None), per_lane(f2i, a))
  got = fpops.OPS["F2I"](np.array([[0x4F000000, 0xCF000000, 0xCF000001, 0x4EFFFFFF, 0x7FC00000, 0xC0200000]], np.uint32))
  assert got.tolist() == [[0x7FFFFFFF, 0x80000000, 0x80000000, 0x7FFFFF80, 0, 0xFFFFFFFE]]

def _value(bits: int) -> float:
  """Value of a non-NaN bit pattern, reading exponent 255 as an ordinary (unbounded) exponent."""
  e, m = (bits >> 23) & 0xFF, bits & 0x7FFFFF
  v = math.ldexp(m, -149) if e == 0 else math.ldexp((1 << 23) | m, e - 150)
  return -v if bits >> 31 else v

def test_f2bf16_rne_and_bf162f(rng):
  a = operands(rng, (2048,))
  low = rng.choice(np.array([0x8000, 0x7FFF, 0x8001, 0x0000, 0xFFFF], np.uint32), 2048)
  a = np.where(rng.integers(0, 2, 2048) == 1, (a & 0xFFFF0000) | low, a).reshape(-1, 8, 8)  # many exact ties

  def bf16(x):  # the nearer of the two bf16 neighbours, ties to the even one, by exact value
    if isnan(x):
      return 0x7FC0
    if (x & 0x7FFFFFFF) >= 0x7F800000:
      return x >> 16
    lo = x & 0xFFFF0000
    hi = lo + 0x10000
    dl, dh = abs(_value(x) - _value(lo)), abs(_value(hi) - _value(x))
    pick = lo if dl < dh or (dl == dh and not (lo >> 16) & 1) else hi
    return pick >> 16
  assert np.array_equal(fpops.OPS["F2BF16"](a, None, None), per_lane(bf16, a))
  ties = np.array([[0x3F808000, 0x3F818000, 0x7F7F8000, 0xFF7FFFFF, 0x7FC00001, 0x00008000]], np.uint32)
  assert fpops.OPS["F2BF16"](ties).tolist() == [[0x3F80, 0x3F82, 0x7F80, 0xFF80, 0x7FC0, 0x0000]]
  raw = rng.integers(0, 1 << 32, (4, 4, 4), dtype=np.uint64).astype(np.uint32)
  assert np.array_equal(fpops.OPS["BF162F"](raw, None, None), per_lane(lambda x: (x & 0xFFFF) * 65536, raw))

def test_transcendentals_registered():
  x = b32(np.array([[0.0, 1.0, -2.0, 3.0]], np.float32))
  for name, fn in (("FEXP2", transcendental.exp2), ("FLOG2", transcendental.log2), ("FSIN", transcendental.sin), ("FCOS", transcendental.cos)):
    assert np.array_equal(fpops.OPS[name](x, None, None), fn(x)), name
  assert fpops.OPS["FEXP2"](x).tolist() == [[0x3F800000, 0x40000000, 0x3E800000, 0x41000000]]

# ---- pair rotate
@pytest.mark.parametrize("shape", [(3, 4, 4), (8, 8)])
def test_frotpair(shape, rng):
  a, b = operands(rng, shape), operands(rng, shape)
  b = np.where(rng.integers(0, 2, shape) == 1, b32(np.float32(rng.uniform(-1, 1, shape))), b)
  fa, fb = a.reshape(-1), b.reshape(-1)
  exp = np.zeros_like(fa)
  with np.errstate(all="ignore"):
    for p in range(0, fa.size, 2):  # pairs never cross a row: N is even
      x0, x1, co, si = (d(np.uint32(v)) for v in (fa[p], fa[p + 1], fb[p], fb[p + 1]))
      exp[p] = r32(d(r32(x0 * co)) - d(r32(x1 * si)))
      exp[p + 1] = r32(d(r32(x0 * si)) + d(r32(x1 * co)))
  assert_same(fpops.OPS["FROTPAIR"](a, b, None), exp.reshape(shape))

def test_frotpair_rounds_each_product():
  # x0 = c = 1 + 2^-23, x1 = 1 + 2^-22, s = 1: x0*c rounds to 1 + 2^-22 (exactly 2^-46 more), so out[0] = +0;
  # out[1] = x0*s + x1*c = (1 + 2^-23) + (1 + 2^-22 + 2^-23 rounded to 1 + 2^-21) = 2 + 2^-22 + 2^-23 -> 2 + 2^-22
  a = np.tile(np.array([0x3F800001, 0x3F800002], np.uint32), (4, 2))
  b = np.tile(np.array([0x3F800001, 0x3F800000], np.uint32), (4, 2))
  out = fpops.OPS["FROTPAIR"](a, b, None)
  assert (out[:, 0::2] == 0).all() and (out[:, 1::2] == int(b32(np.float32(np.float32(1 + 2**-23) + np.float32(1 + 2**-21))))).all()

# ---- reductions: a recursive halving tree over Python lists (the same tree as doc/isa.md's
# level-by-level neighbour pairing when N is a power of two)
def _rtree(xs, op):
  if len(xs) == 1:
    return xs[0]
  h = len(xs) // 2
  return op(_rtree(xs[:h], op), _rtree(xs[h:], op))

def _rop(kind):
  def add(x, y): return int(r32(d(np.uint32(x)) + d(np.uint32(y))))
  def mul(x, y):
    with np.errstate(invalid="ignore"):
      return int(r32(d(np.uint32(x)) * d(np.uint32(y))))
  def ext(x, y, take_max):
    if isnan(x) or isnan(y):
      return QNAN
    if fval(x) == fval(y):
      return x & y if take_max else x | y
    return x if (fval(x) > fval(y)) == take_max else y
  return {"FSUM": add, "FPROD": mul, "FMAX": lambda x, y: ext(x, y, True), "FMIN": lambda x, y: ext(x, y, False)}[kind]

def _ref_reduce(a, kind, scope):
  op, out = _rop(kind), np.zeros_like(a)
  for idx in np.ndindex(a.shape[:-2]):
    t = [[int(v) for v in row] for row in a[idx]]
    n = len(t)
    if scope == "ROW":
      out[idx] = [[_rtree(row, op)] * n for row in t]
    elif scope == "COL":
      cols = [_rtree([t[r][c] for r in range(n)], op) for c in range(n)]
      out[idx] = [cols] * n
    else:
      out[idx] = _rtree([_rtree(row, op) for row in t], op)
  return out

@pytest.mark.parametrize("kind", ["FSUM", "FPROD", "FMAX", "FMIN"])
@pytest.mark.parametrize("scope", ["ROW", "COL", "TILE"])
@pytest.mark.parametrize("N", [4, 8, 16])
def test_reductions(kind, scope, N, rng):
  a = operands(rng, (2, N, N))
  if kind in ("FSUM", "FPROD"):  # mostly finite, moderate values so the order shows in the rounding
    keep = rng.integers(0, 8, a.shape) == 0
    scale = 1e3 if kind == "FSUM" else 1.5
    a = np.where(keep, a, b32(np.float32(rng.uniform(-scale, scale, a.shape))))
  else:
    a = np.where(rng.integers(0, 6, a.shape) == 0, a, a & 0x807FFFFF)  # keep NaNs rarer: some rows NaN-free
  assert_same(fpops.OPS[f"{kind}_{scope}"](a, None, None), _ref_reduce(a, kind, scope))

def test_fsum_order_is_the_tree():
  # fp32 1e8 + 1 = 1e8: the tree (1e8 + 1) + (-1e8 + 1) gives 0, a left-to-right sum would give 1
  row = b32(np.array([1e8, 1.0, -1e8, 1.0], np.float32))
  a = np.tile(row, (4, 1))
  assert (fpops.OPS["FSUM_ROW"](a, None, None) == 0).all()
  row = b32(np.array([1e8, -1e8, 1.0, 1.0], np.float32))
  assert (fpops.OPS["FSUM_ROW"](np.tile(row, (4, 1)), None, None) == 0x40000000).all()
  assert (fpops.OPS["FSUM_COL"](np.tile(row, (4, 1)).T.copy(), None, None) == 0x40000000).all()

def test_fargmax_fargmin(rng):
  a = operands(rng, (3, 8, 8))
  a = np.where(rng.integers(0, 3, a.shape) == 0, a[..., :1], a)  # repeated values: first index wins
  a = np.where(rng.integers(0, 5, a.shape) == 0, a, a & 0x807FFFFF)

  def ref(row, take_max):
    best = None
    for i, x in enumerate(row):
      if isnan(x):
        return i  # the first NaN counts as the extreme
      if best is None or (fval(x) > fval(row[best]) if take_max else fval(x) < fval(row[best])):
        best = i
    return best
  for name, tm in (("FARGMAX_ROW", True), ("FARGMIN_ROW", False)):
    exp = np.zeros_like(a)
    for idx in np.ndindex(a.shape[:-1]):
      exp[idx] = ref([int(v) for v in a[idx]], tm)
    assert np.array_equal(fpops.OPS[name](a, None, None), exp), name
  z = np.array([[0x80000000, 0, 0x80000000, 0]], np.uint32)  # -0 == +0: the first index
  assert fpops.OPS["FARGMAX_ROW"](z).tolist() == [[0, 0, 0, 0]]
