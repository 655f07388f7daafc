"""FEXP2/FLOG2/FSIN/FCOS: accuracy against numpy float64 (the documented bounds), exact cases,
special values, the constant tables, and a scalar re-implementation of doc/transcendental.md
(plain Python integers, written from the doc) that must match the vectorised golden bit for bit."""
import math
import zlib

import numpy as np
import pytest

from tinytpu import gen
from tinytpu.golden import transcendental as T

QNAN, PINF, NINF, ONE = 0x7FC00000, 0x7F800000, 0xFF800000, 0x3F800000

def f(bits): return np.asarray(bits, dtype=np.uint32).view(np.float32)
def b32(x): return np.asarray(x, dtype=np.float32).view(np.uint32)
def d(bits): return f(bits).astype(np.float64)

@pytest.fixture
def rng(request): return np.random.default_rng(zlib.crc32(request.node.name.encode()))

def rand_bits(rng, n): return rng.integers(0, 1 << 32, n, dtype=np.uint64).astype(np.uint32)

# ---------------------------------------------------------------------------------------------
# the documented algorithms, step by step, on Python integers (one lane at a time)
def bitlen(p): return p.bit_length()

def ROUND(neg, P, X):
  if P == 0:
    return 0
  n = bitlen(P)
  E = n - 1 + X + 127
  Ee = max(E, 1)
  sh = n - 24 + (Ee - E)
  if sh <= 0:
    q = P << -sh
  else:
    shc = min(sh, 63)
    q, rem, half = P >> shc, P & ((1 << shc) - 1), 1 << (shc - 1)
    q += rem > half or (rem == half and q & 1)
  r = ((Ee - 1) << 23) + q
  if E > 254 or r >= 0x7F800000:
    r = 0x7F800000
  return r | (neg << 31)

def fields(x): return x >> 31, (x >> 23) & 0xFF, x & 0x7FFFFF

def ref_exp2(x):
  s, e, m = fields(x)
  if e == 255 and m:
    return QNAN
  if e >= 135:
    return 0 if s else PINF
  M = m | (1 << 23) if e else m
  sh = max(e, 1) - 118
  A = M << sh if sh >= 0 else M >> min(-sh, 63)
  Xq = -A if s else A
  i, fr = Xq >> 32, Xq & 0xFFFFFFFF
  h = T.EXP2_C[6]
  for k in range(5, -1, -1):
    h = T.EXP2_C[k] + ((h * fr) >> 32)
  return ROUND(0, h, i - 30)

def ref_log2(x):
  s, e, m = fields(x)
  if e == 255 and m:
    return QNAN
  if s and (e or m):
    return QNAN
  if not e and not m:
    return NINF
  if e == 255:
    return PINF
  if e:
    M, E = m | (1 << 23), e - 127
  else:
    k = 24 - bitlen(m)
    M, E = m << k, -126 - k
  j = (M >> 18) & 31
  z = (M * T.LOG2_RECIP[j] - (1 << 54)) >> 17
  assert 0 <= z < 1 << 32
  h = T.LOG2_C[3]
  for k in (2, 1, 0):
    h = T.LOG2_C[k] + ((h * z) >> 37)
  lg = (h * z) >> 27
  L = E * (1 << 40) + T.LOG2_TAB[j] + lg
  return ROUND(int(L < 0), abs(L), -40)

def ref_sincos(x, cos):
  s, e, m = fields(x)
  if e == 255:
    return QNAN
  if e < 115:
    return ONE if cos else x
  M = m | (1 << 23)
  W = (T.TWO_OVER_PI >> (280 - e)) % (1 << 96)
  W2, W1, W0 = W >> 64, (W >> 32) & 0xFFFFFFFF, W & 0xFFFFFFFF
  Y = (((M * W2) << 32) + M * W1 + ((M * W0) >> 32)) % (1 << 64)
  assert Y == ((M * W) >> 32) % (1 << 64)
  if cos:
    Y = (Y + (1 << 62)) % (1 << 64)
  Yr = (Y + (1 << 61)) % (1 << 64)
  q, t = Yr >> 62, (Yr % (1 << 62)) - (1 << 61)
  a = abs(t)
  a32 = a >> 30
  u = (a32 * a32) >> 32
  hs = T.SIN_C[4]
  for k in (3, 2, 1, 0):
    hs = T.SIN_C[k] + ((hs * u) >> 32)
  la = bitlen(a)
  a31 = (a << (63 - la)) >> 32 if a else 0
  hc = T.COS_C[4]
  for k in (3, 2, 1, 0):
    hc = T.COS_C[k] + ((hc * u) >> 32)
  P, X, neg = [(a31 * hs, la - 123, t < 0), (hc, -30, False), (a31 * hs, la - 123, not t < 0), (hc, -30, True)][q]
  assert P < 1 << 62
  if not cos:
    neg ^= bool(s)
  return ROUND(int(neg), P, X)

REFS = {"exp2": ref_exp2, "log2": ref_log2, "sin": lambda x: ref_sincos(x, False), "cos": lambda x: ref_sincos(x, True)}
SPECIALS = [0, 0x80000000, 1, 0x80000001, 0x007FFFFF, 0x00800000, 0x3F800000, 0xBF800000, 0x7F7FFFFF, 0xFF7FFFFF,
            PINF, NINF, QNAN, 0xFFC00000, 0x7F800001, 0x43000000, 0x42FFFFFF, 0xC3160000, 0xC3150000, 0xC2FC0000,
            0x3A800000, 0x3A7FFFFF, 0x40490FDB, 0x3FC90FDB, 0x4B800000, 0x5F000000, 0x44800000]

@pytest.mark.parametrize("name", list(REFS))
def test_golden_matches_the_documented_algorithm(name, rng):
  fn = getattr(T, name)
  x = np.concatenate([np.array(SPECIALS, np.uint32), rand_bits(rng, 1500),
                      b32(rng.uniform(-300, 300, 1000).astype(np.float32)),
                      b32((rng.uniform(0.5, 2, 1000) * 2.0 ** rng.integers(-30, 30, 1000)).astype(np.float32))])
  x = x[: x.size // 16 * 16].reshape(-1, 4, 4)
  got = fn(x)
  assert got.dtype == np.uint32 and got.shape == x.shape
  for xi, gi in zip(x.ravel().tolist(), got.ravel().tolist()):
    assert gi == REFS[name](xi), f"{name}({xi:#010x}): golden {gi:#010x}, doc {REFS[name](xi):#010x}"

# ---------------------------------------------------------------------------------------------
# accuracy (bounds from doc/transcendental.md)
def test_exp2_relative_error(rng):
  x = np.concatenate([np.linspace(-126, 127, 600_001, dtype=np.float32), rng.uniform(-126, 128, 300_000).astype(np.float32),
                      rng.uniform(-1, 1, 100_000).astype(np.float32), np.nextafter(np.float32(128), np.float32(0), dtype=np.float32)[None]])
  x = x[(x >= -126) & (x < 128)]
  r, ref = d(T.exp2(b32(x))), np.exp2(x.astype(np.float64))
  assert np.isfinite(r).all()
  assert np.max(np.abs(r / ref - 1)) <= 2 ** -23.5

def test_exp2_subnormal_results():
  x = np.linspace(-150, -126, 400_001, dtype=np.float32)
  r, ref = d(T.exp2(b32(x))), np.exp2(x.astype(np.float64))
  assert np.all(np.abs(r - ref) <= 2.0 ** -150 + ref * 2 ** -23.5)

def test_exp2_exact_at_integers():
  k = np.arange(-200, 200)
  got = T.exp2(b32(k.astype(np.float32)))
  exp = [0 if v <= -150 else PINF if v >= 128 else (1 << (v + 149)) if v < -126 else (v + 127) << 23 for v in k.tolist()]
  assert got.tolist() == exp

def test_exp2_specials_and_edges():
  cases = {0: ONE, 0x80000000: ONE, 1: ONE, 0x80000001: ONE, PINF: PINF, NINF: 0, 0x43000000: PINF,  # 128
           0xC3160000: 0,           # -150: a tie between 0 and 2^-149, to even
           0xC315FFFF: 1,           # just above -150: 2^-149
           0xC3150000: 1,           # -149
           0x7F7FFFFF: PINF, 0xFF7FFFFF: 0}
  for xi, want in cases.items():
    assert int(T.exp2(np.array([xi], np.uint32))[0]) == want, hex(xi)
  top = float(d(T.exp2(np.array([0x42FFFFFF], np.uint32)))[0])  # 2^(128 - 2^-17) is still finite
  assert math.isfinite(top) and abs(top / 2 ** (128 - 2 ** -17) - 1) < 2 ** -23
  for nan in (QNAN, 0xFFC00000, 0x7F800001):
    assert int(T.exp2(np.array([nan], np.uint32))[0]) == QNAN

def test_log2_error(rng):
  # every 13th mantissa of [0.5, 2) (the region around 1), random mantissas at every exponent, subnormals
  mant = np.arange(1 << 23, dtype=np.uint32)[::13]
  x = np.concatenate([(126 << 23) | mant, (127 << 23) | mant,
                      (rng.integers(1, 255, 300_000).astype(np.uint32) << 23) | rand_bits(rng, 300_000) >> 9,
                      rng.integers(1, 1 << 23, 100_000).astype(np.uint32)])
  r, ref = d(T.log2(x)), np.log2(d(x))
  err = np.abs(r - ref)
  half_ulp = np.spacing(np.abs(r).astype(np.float32)).astype(np.float64) / 2
  assert np.all(err <= half_ulp + 2 ** -33)
  inside = (d(x) > 2.0 ** -16) & (d(x) < 2.0 ** 16)  # where fp32 can hold the architecture's 2^-20
  assert np.max(err[inside]) <= 2 ** -20

def test_log2_exact_at_powers_of_two():
  k = np.arange(-149, 128)
  x = np.where(k < -126, 1 << (k + 149), (k + 127) << 23).astype(np.uint32)
  assert np.array_equal(T.log2(x), b32(k.astype(np.float32)))
  assert int(T.log2(np.array([ONE], np.uint32))[0]) == 0  # +0

def test_log2_specials():
  cases = {0: NINF, 0x80000000: NINF, PINF: PINF, NINF: QNAN, 0xBF800000: QNAN, 0x80000001: QNAN, 0xFF7FFFFF: QNAN,
           QNAN: QNAN, 0xFFC00000: QNAN, 0x7F800001: QNAN, 1: b32(np.float32(-149.0))}
  for xi, want in cases.items():
    assert int(T.log2(np.array([xi], np.uint32))[0]) == int(want), hex(xi)

@pytest.mark.parametrize("name", ["sin", "cos"])
def test_sincos_abs_error(name, rng):
  x = np.concatenate([np.linspace(-1024, 1024, 800_001, dtype=np.float32), rng.uniform(-8, 8, 200_000).astype(np.float32),
                      (rng.uniform(-1, 1, 300_000) * 2.0 ** rng.integers(-12, 128, 300_000)).astype(np.float32)])
  r, ref = d(getattr(T, name)(b32(x))), getattr(np, name)(x.astype(np.float64))
  assert np.max(np.abs(r - ref)) <= 2 ** -24
  assert np.all(np.abs(r) <= 1)

def test_sin_small_arguments(rng):
  x = (2.0 ** rng.uniform(-12, 0, 200_000)).astype(np.float32)
  x = np.concatenate([x, -x])
  r, ref = d(T.sin(b32(x))), np.sin(x.astype(np.float64))
  assert np.max(np.abs(r / ref - 1)) <= 2 ** -23
  tiny = np.concatenate([rand_bits(rng, 10_000) & 0x807FFFFF, (rng.integers(1, 115, 10_000).astype(np.uint32) << 23) | rand_bits(rng, 10_000) >> 9])
  assert np.array_equal(T.sin(tiny), tiny)  # |x| < 2^-12: sin x = x, correctly rounded
  assert (T.cos(tiny) == ONE).all()
  assert np.array_equal(b32(np.sin(d(tiny)).astype(np.float32)), tiny)  # which is the correctly rounded value

def test_sincos_symmetry(rng):
  x = rand_bits(rng, 50_000) & 0x7FFFFFFF
  x = x[(x >> 23) < 255]
  assert np.array_equal(T.sin(x | 0x80000000), T.sin(x) ^ 0x80000000)
  assert np.array_equal(T.cos(x | 0x80000000), T.cos(x))

def test_sincos_specials():
  for xi, s, c in ((0, 0, ONE), (0x80000000, 0x80000000, ONE), (1, 1, ONE), (PINF, QNAN, QNAN), (NINF, QNAN, QNAN),
                   (QNAN, QNAN, QNAN), (0xFFC00000, QNAN, QNAN), (0x7F800001, QNAN, QNAN)):
    x = np.array([xi], np.uint32)
    assert (int(T.sin(x)[0]), int(T.cos(x)[0])) == (s, c), hex(xi)
  # sin(pi/2 in fp32) rounds to 1.0, cos(pi) to -1.0; sin(fp32 pi) = 8.74e-8 (pi - fp32 pi), not 0
  assert int(T.sin(np.array([0x3FC90FDB], np.uint32))[0]) == ONE
  assert int(T.cos(np.array([0x40490FDB], np.uint32))[0]) == 0xBF800000
  assert abs(float(f(T.sin(np.array([0x40490FDB], np.uint32)))[0]) - math.sin(float(f(np.uint32(0x40490FDB))))) < 2 ** -40

def test_vectorised_over_leading_dims(rng):
  x = b32(rng.uniform(-10, 10, (3, 2, 8, 8)).astype(np.float32))
  for fn in (T.exp2, T.log2, T.sin, T.cos):
    got = fn(x)
    assert got.shape == x.shape and got.dtype == np.uint32
    assert np.array_equal(got[1, 0], fn(x[1, 0].copy()))

# ---------------------------------------------------------------------------------------------
# constants
def test_constants():
  names = [n for n, _, _ in T.SV_CONSTANTS]
  assert len(set(names)) == len(names)
  for name, bits, val in T.SV_CONSTANTS:
    for v in (val if isinstance(val, list) else [val]):
      assert -(1 << (bits - 1)) <= v < (1 << bits), name
  assert T.EXP2_C[0] == 1 << 30 and sum(T.EXP2_C) == 1 << 31 and min(T.EXP2_C) > 0
  assert T.COS_C[0] == 1 << 30
  assert T.LOG2_RECIP[0] == 1 << 31 and T.LOG2_TAB[0] == 0
  for j, r in enumerate(T.LOG2_RECIP):  # smallest r with r * (1 + j/32) >= 2^31
    assert r * (32 + j) >= 1 << 36 > (r - 1) * (32 + j)
    assert abs(T.LOG2_TAB[j] - (31 - math.log2(r)) * 2 ** 40) < 0.6  # rounded; float64 log2 is good to ~2^-47 here
  assert T.TWO_OVER_PI >> (T.TPI_BITS - 1) == 1  # 2/pi = 0.101000101...b: bit k=1 is set
  assert abs(T.TWO_OVER_PI / 2 ** T.TPI_BITS - 2 / math.pi) < 2 ** -52
  # against an independent known expansion of 2/pi (fdlibm's 24-bit chunks)
  assert T.TWO_OVER_PI >> (T.TPI_BITS - 192) == int("A2F9836E4E441529FC2757D1F534DDC0DB6295993C439041", 16)
  # polynomial fits: each coefficient set alone is within its bound on a fine grid (float64)
  fr = np.linspace(0, 1, 100_001)
  assert np.max(np.abs(np.polyval(np.array(T.EXP2_C[::-1]) / 2 ** 30, fr) / 2 ** fr - 1)) < 2 ** -27
  t = np.linspace(0, 0.5, 100_001)
  assert np.max(np.abs(t * np.polyval(np.array(T.SIN_C[::-1]) / 2 ** 30, t * t) - np.sin(np.pi / 2 * t))) < 2 ** -29
  assert np.max(np.abs(np.polyval(np.array(T.COS_C[::-1]) / 2 ** 30, t * t) - np.cos(np.pi / 2 * t))) < 2 ** -29
  z = np.linspace(0, 1 / 32, 100_001)
  assert np.max(np.abs(z * np.polyval(np.array(T.LOG2_C[::-1]) / 2 ** 30, z) - np.log2(1 + z))) < 2 ** -33

def test_constants_in_the_sv_package():
  pkg = gen.sv_package()
  for name, bits, val in T.SV_CONSTANTS:
    if isinstance(val, list):
      assert f"localparam logic [{bits - 1}:0] {name} [{len(val)}]" in pkg, name
    else:
      assert f"localparam logic [{bits - 1}:0] {name} = {bits}'h{val:x};" in pkg, name
  assert gen.PKG_PATH.read_text() == pkg, "rtl/tinytpu_pkg.sv is stale: run python -m tinytpu gen"
