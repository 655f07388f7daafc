"""FEXP2, FLOG2, FSIN and FCOS as integer-only algorithms that the RTL implements step by step.

Every step is an integer add/sub, a multiply with at most a 64-bit product, a shift, a compare, a
count of leading zeros or a look-up in a small constant table, so the SystemVerilog datapath can
reproduce the golden result bit for bit. doc/transcendental.md describes each step, its bit widths
and the measured accuracy. The tables and coefficients are exported in `SV_CONSTANTS`, which
`python -m tinytpu gen` writes into rtl/tinytpu_pkg.sv.

Inputs and outputs are uint32 arrays of raw fp32 bits, any shape; lanes are processed in parallel
with int64/uint64 numpy arithmetic (products that may wrap are done in uint64, mod 2^64)."""
from __future__ import annotations

import decimal

import numpy as np

U32, I64, U64 = np.uint32, np.int64, np.uint64
QNAN, PINF, NINF, ONE = 0x7FC00000, 0x7F800000, 0xFF800000, 0x3F800000

# ---------------------------------------------------------------------------------------------
# constants. Polynomial coefficients are Q30 integers from a least-squares fit on Chebyshev nodes
# (fixed here, not refitted at import, so every machine gets the same numbers).

# 2^f ~ sum EXP2_C[k] f^k / 2^30 on [0, 1): c0 = 1 exactly (integer x is exact) and the
# coefficients sum to exactly 2 (so the truncating Horner sum stays below 2^31).
EXP2_C = [1073741824, 744260959, 257944464, 59575764, 10391439, 1336166, 233032]
# log2(1 + z) ~ z * sum LOG2_C[k] z^k / 2^30 on [0, 1/32)
LOG2_C = [1549081985, -774534897, 515770462, -364570103]
# sin(pi/2 t) ~ t * sum SIN_C[k] u^k / 2^30, cos(pi/2 t) ~ sum COS_C[k] u^k / 2^30, u = t^2, |t| <= 1/2
SIN_C = [1686629713, -693598665, 85569239, -5026360, 169673]
COS_C = [1073741824, -1324675872, 272375288, -22398637, 970831]

LOG2_BITS = 5  # top mantissa bits that index the log2 tables


def _log2_tables() -> tuple[list[int], list[int]]:
  # LOG2_RECIP[j] = ceil(2^31 / (1 + j/32)): m * r >= 1 on the whole interval, so z >= 0.
  # LOG2_TAB[j] = round(-log2(LOG2_RECIP[j] / 2^31) * 2^40), exact decimal arithmetic.
  recip = [-(-(1 << (31 + LOG2_BITS)) // ((1 << LOG2_BITS) + j)) for j in range(1 << LOG2_BITS)]
  ctx = decimal.Context(prec=60)
  ln2 = ctx.ln(decimal.Decimal(2))
  tab = [int(((31 * ln2 - ctx.ln(decimal.Decimal(r))) / ln2 * (1 << 40)).to_integral_value(decimal.ROUND_HALF_EVEN, ctx))
         for r in recip]
  return recip, tab


def _two_over_pi(bits: int) -> int:
  """floor(2/pi * 2^bits), from Machin's formula pi = 16 atan(1/5) - 4 atan(1/239) in big integers."""
  g = bits + 64  # guard bits

  def atan_inv(n: int) -> int:  # atan(1/n) * 2^g
    total, term, k, sign = 0, (1 << g) // n, 1, 1
    while term:
      total += sign * (term // k)
      term //= n * n
      k, sign = k + 2, -sign
    return total
  pi = 16 * atan_inv(5) - 4 * atan_inv(239)  # pi * 2^g, error a few units
  return (1 << (bits + 1 + g)) // pi


LOG2_RECIP, LOG2_TAB = _log2_tables()
TPI_BITS = 224  # 2/pi bits k = 1..224 (bit k weighs 2^-k) as one integer; the RTL shifts a window out
TWO_OVER_PI = _two_over_pi(TPI_BITS)
TRIG_MIN_EXP = 115  # biased exponent below which (|x| < 2^-12) sin x = x and cos x = 1

SV_CONSTANTS: list[tuple[str, int, int | list[int]]] = [
  ("EXP2_C", 32, EXP2_C),
  ("LOG2_RECIP", 32, LOG2_RECIP),
  ("LOG2_TAB", 40, LOG2_TAB),
  ("LOG2_C", 32, LOG2_C),
  ("SIN_C", 32, SIN_C),
  ("COS_C", 32, COS_C),
  ("TWO_OVER_PI", TPI_BITS, TWO_OVER_PI),
]

# the 96-bit window of 2/pi bits k0+1 .. k0+96 (k0 = e - 152) for every biased exponent e, as three
# 32-bit limbs: window = TWO_OVER_PI >> (280 - e), low 96 bits (bits k <= 0 are zero)
_WIN = np.zeros((3, 256), dtype=U64)
for _e in range(TRIG_MIN_EXP, 255):
  _w = (TWO_OVER_PI >> (280 - _e)) & ((1 << 96) - 1)
  for _k in range(3):
    _WIN[_k, _e] = (_w >> (32 * _k)) & 0xFFFFFFFF


# ---------------------------------------------------------------------------------------------
# shared steps
def _split(x):
  x = np.asarray(x, dtype=U32)
  return (x >> 31).astype(I64), ((x >> 23) & 0xFF).astype(I64), (x & 0x7FFFFF).astype(I64)


def _bitlen(p):
  """64 - clz64(p) for 0 <= p < 2^63 (int64): bit length, 0 for p = 0."""
  n = np.frexp(p.astype(np.float64))[1].astype(I64)  # may be one too large after rounding up
  return n - ((p > 0) & ((p >> np.maximum(n - 1, 0)) == 0))


def _to_f32(neg, p, x):
  """Round p * 2^x (0 <= p < 2^62, int64) to fp32 bits with RNE: subnormals, overflow to inf, p = 0 gives +0."""
  n = _bitlen(p)
  e = n - 1 + x + 127                     # biased exponent of the leading bit
  ee = np.maximum(e, 1)                   # subnormal: exponent field 0, grid 2^-149
  sh = n - 24 + (ee - e)                  # bits to drop (negative: shift left)
  shr = np.clip(sh, 1, 63)
  q = p >> shr
  rem, half = p & ((1 << shr) - 1), 1 << (shr - 1)
  q = q + ((rem > half) | ((rem == half) & ((q & 1) == 1)))
  q = np.where(sh <= 0, p << np.clip(-sh, 0, 63), q)
  bits = ((ee - 1) << 23) + q             # q carries the hidden bit into the exponent field
  bits = np.where((e > 254) | (bits >= PINF), PINF, bits)
  bits = np.where(p == 0, 0, bits | (neg.astype(I64) << 31))
  return bits.astype(U32)


def _horner(coefs, z, shift):
  """h = c[k] + ((h * z) >> shift), from the highest coefficient down (floor shifts)."""
  acc = np.full_like(z, coefs[-1])
  for c in coefs[-2::-1]:
    acc = c + ((acc * z) >> shift)
  return acc


# ---------------------------------------------------------------------------------------------
def exp2(x):
  s, e, m = _split(x)
  mant = np.where(e > 0, m | (1 << 23), m)
  sh = np.maximum(e, 1) - 118             # |x| * 2^32 = mant << sh
  mag = np.where(sh >= 0, mant << np.clip(sh, 0, 16), mant >> np.clip(-sh, 0, 63))
  xq = np.where(s == 1, -mag, mag)        # x in Q32, |x| < 2^8 (truncated toward zero)
  i, f = xq >> 32, xq & 0xFFFFFFFF        # x = i + f, f in [0, 1)
  p = _horner(EXP2_C, f, 32)        # 2^f in Q30, in [2^30, 2^31)
  out = _to_f32(np.zeros_like(s), p, i - 30)
  out = np.where(e >= 135, np.where(s == 1, 0, PINF), out)  # |x| >= 256 and ±inf: underflow / overflow
  return np.where((e == 255) & (m != 0), QNAN, out).astype(U32)


def log2(x):
  s, e, m = _split(x)
  sub = e == 0
  k = np.where(sub, 24 - _bitlen(m), 0)   # normalise subnormals
  mant = np.where(sub, m << k, m | (1 << 23))  # [2^23, 2^24): Q23 mantissa in [1, 2)
  ex = np.where(sub, -126 - k, e - 127)
  j = (mant >> (23 - LOG2_BITS)) & ((1 << LOG2_BITS) - 1)
  r = np.asarray(LOG2_RECIP, dtype=I64)[j]
  z = (mant * r - (1 << 54)) >> 17        # m * r - 1 in Q37, in [0, 2^32)
  h = _horner(LOG2_C, z, 37)              # Q30, log2(1 + z) / z
  lg = (h * z) >> 27                      # log2(1 + z) in Q40
  total = (ex << 40) + np.asarray(LOG2_TAB, dtype=I64)[j] + lg
  out = _to_f32(total < 0, np.abs(total), np.full_like(total, -40))
  out = np.where((e == 0) & (m == 0), NINF, out)
  out = np.where((s == 1) & ((e != 0) | (m != 0)), QNAN, out)   # negative (incl -inf): NaN
  out = np.where((s == 0) & (e == 255), np.where(m == 0, PINF, QNAN), out)
  out = np.where((s == 1) & (e == 255) & (m != 0), QNAN, out)
  return out.astype(U32)


def _sincos(x, cos: bool):
  s, e, m = _split(x)
  big = e >= TRIG_MIN_EXP
  ec = np.where(big & (e < 255), e, TRIG_MIN_EXP)
  mant = (m | (1 << 23)).astype(U64)
  w0, w1, w2 = _WIN[0][ec], _WIN[1][ec], _WIN[2][ec]
  # y = |x| * 2/pi mod 4 in Q62, as (mant * window) >> 32 mod 2^64, from three 24x32 products
  y = ((mant * w2) << U64(32)) + mant * w1 + ((mant * w0) >> U64(32))
  if cos:
    y = y + U64(1 << 62)                  # cos x = sin(x + pi/2)
  yr = y + U64(1 << 61)
  q = (yr >> U64(62)).astype(I64)         # nearest quadrant
  t = (yr & U64((1 << 62) - 1)).astype(I64) - (1 << 61)  # y - q in Q62, [-1/2, 1/2)
  a = np.abs(t)
  a32 = a >> 30
  u = (a32 * a32) >> 32                   # t^2 in Q32
  hs = _horner(SIN_C, u, 32)        # Q30, sin(pi/2 t) / t
  la = _bitlen(a)
  a31 = (a << np.clip(63 - la, 0, 63)) >> 32  # top 31 bits of |t|, [2^30, 2^31)
  hc = _horner(COS_C, u, 32)        # Q30, cos(pi/2 t)
  odd = (q & 1) == 1
  p = np.where(odd, hc, a31 * hs)
  ex = np.where(odd, -30, la - 123)
  neg = np.where(odd, q == 3, (t < 0) ^ (q == 2))
  if not cos:
    neg = neg ^ (s == 1)
  out = _to_f32(neg, p, ex)
  tiny = np.asarray(x, dtype=U32) if not cos else np.full(s.shape, ONE, dtype=U32)
  out = np.where(big, out, tiny)
  return np.where(e == 255, QNAN, out).astype(U32)  # ±inf and NaN


def sin(x): return _sincos(x, False)
def cos(x): return _sincos(x, True)
