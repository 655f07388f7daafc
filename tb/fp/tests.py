"""pyuvm tests of the VPU's fp32 datapath (the fp32_pkg functions as rtl/vpu.sv calls them: the
fp_lane class in every lane, vpu_fp_reduce for the fp_tile class), driven through the VPU itself
with the VPU env's agents, scoreboard and timing probe (tb/vpu/env.py).

Expected values come from the golden model (tinytpu.golden.fpops, numpy float32); every NaN must be
the canonical 0x7FC00000 (FNEG, FABS and BF162F keep payloads): the scoreboard is strict here. The
functions are the fp classes of the ISA table (isa.VPU_CLASS). Tests:
- FpKnown: hand-checked answers (ties, underflow, saturation, bf16), independent of numpy.
- FpDirected: every lane-wise op on all pairs of a list of special values, tie and cancellation
  cases, and the reductions on special tiles.
- FpRandom: constrained-random tiles from weighted fp32 operand classes for every op, with
  functional coverage of op x operand class (and op x result class) that must reach 95%.
- FpBrokenModel: a one-bit-wrong model must fail (proves the scoreboard bites).
The transcendentals (FEXP2, FLOG2, FSIN, FCOS) are checked bit for bit against golden/transcendental.py,
with their own directed values (boundaries, powers of two, near-multiples of pi/2) and operand classes."""
from __future__ import annotations

import math
import random

import numpy as np
import pyuvm
from pyuvm import uvm_sequence

from tinytpu import isa
from tinytpu.golden.fpops import OPS
from tinytpu.tb import kit
from tinytpu.tb.vpu import env as V

LANE_FNS = V.fns_of("fp_lane")
TILE_FNS = V.fns_of("fp_tile")
ALL_FNS = LANE_FNS + TILE_FNS
TRANS_FNS = [f for f in LANE_FNS if V.GROUP[f] == "transcendental"]
INT_IN = {"I2F", "U2F"}                          # operand a is an integer
ROUNDED = ["FADD", "FSUB", "FMUL", "FDIV", "FMAC"]  # ops whose results can land in every class
ARITY = dict(isa.VPU_ARITY)
M32 = 0xFFFFFFFF
_missing = [f for f in ALL_FNS if f not in OPS]
if _missing:
  raise RuntimeError(f"golden/fpops.py lacks fp functions of the ISA table: {' '.join(_missing)}")

# ---- operands
F = kit.f2b
SPECIAL = [0x00000000, 0x80000000, 0x00000001, 0x80000001, 0x007FFFFF, 0x807FFFFF, 0x00800000, 0x80800000,
           0x00400000, F(1.0), F(-1.0), F(1.5), F(-2.5), F(2.0), F(0.5), F(3.0), 0x3F800001, 0x3F7FFFFF,
           0x7F7FFFFF, 0xFF7FFFFF, 0x7F000000, 0x7F800000, 0xFF800000, 0x7FC00000, 0xFFC00001, 0x7FC12345,
           0x7F800001, 0x4B000000, 0x4AFFFFFF, 0x4F000000, 0xCF000000, 0x4EFFFFFF, 0xCF000001, 0x33800000,
           0x34000000, F(1e-20), F(-7.25), F(100.5)]
INT_SPECIAL = [0, 1, M32, 0x80000000, 0x7FFFFFFF, 0x80000001, 16777216, 16777217, 16777219, (-16777217) & M32,
               0x7FFFFFC0, 0x7FFFFFBF, 0xFFFFFF80, 33554435, 0xFFFFFFFF - 5, 12345]

# extra fp32 classes beyond the kit's: tiny magnitudes (products underflow), huge ones (overflow)
def _fp(lo, hi): return lambda r: (r.getrandbits(1) << 31) | (r.randint(lo, hi) << 23) | r.getrandbits(23)
FP32X = {**kit.FP32, "tiny": (2, _fp(1, 60)), "huge": (2, _fp(190, 254))}
FINITE = ["normal", "one", "near_tie", "zero", "subnormal"]
FP_RESULT_BINS = kit.FP32_BINS

# ---- transcendental operands
# the float nearest a multiple of pi/2 for 24 exponents (|t| < 2^-26 after range reduction: the
# hardest cancellations), from an exhaustive search over every significand of every exponent >= 115
HARD_TRIG = [0x6F79BE45, 0x50A3E87F, 0x6FF9BE45, 0x5123E87F, 0x437CE5F1, 0x7079BE45, 0x6A1976F1, 0x53B146A6,
             0x65898498, 0x51A3E87F, 0x43FCE5F1, 0x77584625, 0x4C2332E9, 0x4096CBE4, 0x6C55DA58, 0x70F9BE45,
             0x6A9976F1, 0x5C07BCD0, 0x543146A6, 0x66098498, 0x5223E87F, 0x474D246F, 0x723FA09A, 0x447CE5F1]


def _near_axis(r: random.Random) -> int:
  """The float nearest k * pi/2 (k up to 2^20), a few ulps either way."""
  k = r.randint(1, 1 << r.randint(1, 20)) * r.choice((1, -1))
  return max(0, F(k * math.pi / 2) + r.randint(-2, 2))


def _pm(r: random.Random, lo: float, hi: float) -> int: return F(r.uniform(lo, hi))


TRANS_X = {**FP32X,
  "exp2_range": (6, _fp(100, 134)),                    # |x| < 256: the main exp2 path
  "exp2_edge": (3, lambda r: _pm(r, *r.choice(((-151.0, -125.0), (126.0, 129.0), (-256.5, -254.0), (254.0, 256.5))))),
  "int_valued": (2, lambda r: F(float(r.randint(-300, 300)))),
  "positive": (3, lambda r: r.randint(1, 254) << 23 | r.getrandbits(23)),
  "near_one": (2, lambda r: F(1.0) + r.randint(-4096, 4096)),
  "pow2": (2, lambda r: r.randint(1, 254) << 23 if r.random() < 0.8 else 1 << r.randint(0, 22)),
  "near_axis": (4, _near_axis),
  "large": (2, _fp(134, 190)),
  "hard": (1, lambda r: r.choice(HARD_TRIG) ^ (r.getrandbits(1) << 31)),
}

TRANS_REGIONS = {
  "FEXP2": ["nan", "inf", "tiny", "integer", "normal_result", "subnormal_result", "underflow", "overflow"],
  "FLOG2": ["nan", "negative", "zero", "inf", "subnormal", "pow2", "near_one", "normal"],
  "FSIN": ["nan", "inf", "tiny", "small", "near_axis", "medium", "large"],
}
TRANS_REGIONS["FCOS"] = TRANS_REGIONS["FSIN"]


def trans_region(fn: str, x: int) -> str:
  """The input region of a transcendental operand: where the algorithm takes a different path."""
  e, m, v = (x >> 23) & 0xFF, x & 0x7FFFFF, kit.b2f(x)
  if e == 0xFF: return "nan" if m else ("negative" if fn == "FLOG2" and x >> 31 else "inf")
  if fn == "FEXP2":
    if abs(v) < 2.0 ** -32: return "tiny"
    if v >= 128: return "overflow"
    if v <= -150: return "underflow"
    if v == int(v): return "integer"
    return "subnormal_result" if v < -126 else "normal_result"
  if fn == "FLOG2":
    if e == 0 and m == 0: return "zero"
    if x >> 31: return "negative"
    if e == 0: return "subnormal"
    if m == 0: return "pow2"
    return "near_one" if abs(v - 1) < 2.0 ** -10 else "normal"
  if e < 115: return "tiny"
  if abs(v) < math.pi / 4: return "small"
  if 1 <= abs(v) < 2 ** 20 and abs(v * 2 / math.pi - round(v * 2 / math.pi)) < 2.0 ** -12: return "near_axis"
  return "medium" if abs(v) < 1024 else "large"


def trans_directed() -> list[int]:
  """Boundaries of every transcendental: exp2 overflow/underflow/subnormal edges and integers, log2
  powers of two (subnormal ones too) and the table interval edges, sin/cos near multiples of pi/2,
  the |x| < 2^-12 threshold and huge |x|. Each value is also tried negated."""
  vals = [F(float(i)) for i in range(-160, 161)]
  for b in (-152, -151, -150, -149, -148, -127, -126, -125, 127, 128, 129, 255, 256, 257):
    vals += [F(float(b)) + d for d in (-1, 1)]
  vals += [0x2F800000, 0x2F7FFFFF, 0x2F800001, 0x2F000000, 0x437FFFFF, 0x43800000, 0x43000000, 0x42FFFFFF]
  vals += [(e << 23) for e in range(1, 255)] + [1 << k for k in range(23)]
  vals += [F(1.0 + j / 32) + d for j in range(32) for d in (-1, 0, 1)]
  vals += [F(k * math.pi / 2) + d for k in range(1, 65) for d in (-1, 0, 1)]
  vals += [F(k * math.pi / 2) for k in (1000, 12345, 1 << 20, 1 << 22, 3 << 22)]
  vals += HARD_TRIG + [0x39800000, 0x397FFFFF, 0x39800001, 0x39000000, 0x7F7FFFFF, 0x7F000000, 0x5F000000]
  return vals + [v ^ 0x80000000 for v in vals]


def is_nan(x: int) -> bool: return ((x >> 23) & 0xFF) == 0xFF and (x & 0x7FFFFF) != 0


def golden(fn: str, a, b, c) -> np.ndarray:
  return np.asarray(OPS[fn](a.copy(), b.copy(), c.copy()), dtype=np.uint32)


class FpScoreboard(V.VpuScoreboard):
  """The VPU scoreboard (results matched by due cycle), with the fp golden model, canonical NaNs
  required, and a deliberately wrong model for FpBrokenModel."""
  strict_nan = True
  broken = False
  def predict(self, req):
    exp = golden(req.fn, req.a, req.b, req.c)
    if self.broken: exp = exp ^ np.uint32(1)
    return {"result": exp, "tag": req.tag}


class FpCoverage(kit.CoverageCollector):
  unit = "fp"
  def define(self, cov):
    cov.cross("op_x_a", [f for f in ALL_FNS if f not in INT_IN], kit.FP32_BINS)
    cov.cross("op_x_b", [f for f in LANE_FNS if ARITY[f] >= 2] + ["FROTPAIR"], kit.FP32_BINS)
    cov.cross("i2f_x_a", sorted(INT_IN), kit.INT32_BINS)
    cov.cross("op_x_result", ROUNDED, FP_RESULT_BINS)
    cov.bins("trans_x_region", [(f, r) for f in TRANS_FNS for r in TRANS_REGIONS[f]])

  def sample(self, req):
    fn = req.fn
    for x in np.ravel(req.a):
      if fn in INT_IN: self.cov.hit("i2f_x_a", (fn, kit.classify_int32(int(x))))
      else: self.cov.hit("op_x_a", (fn, kit.classify_fp32(int(x))))
      if fn in TRANS_FNS: self.cov.hit("trans_x_region", (fn, trans_region(fn, int(x))))
    if ARITY[fn] >= 2 and fn not in TILE_FNS or fn == "FROTPAIR":
      for x in np.ravel(req.b): self.cov.hit("op_x_b", (fn, kit.classify_fp32(int(x))))
    if fn in ROUNDED:
      for x in np.ravel(golden(fn, req.a, req.b, req.c)): self.cov.hit("op_x_result", (fn, kit.classify_fp32(int(x))))

  def stall(self, lat, blocker): pass  # write-back collisions are the VPU env's coverage


class FpEnv(V.VpuEnv):
  sb_cls = FpScoreboard
  cov_cls = FpCoverage

  def build_phase(self):
    super().build_phase()
    self.sb.broken = getattr(self.parent, "broken", False)


def n_of() -> int: return int(kit.params().get("N", 4))
# the lanes do not depend on N: they are checked at N = 4, larger N check the tile functions only
def lanes_on() -> bool: return n_of() == 4


def tiles(vals: list[int], n: int) -> list[np.ndarray]:
  """Cut a list of lane values into N x N tiles (the last one padded with 1.0)."""
  L = n * n
  vals = vals + [F(1.0)] * (-len(vals) % L)
  return [np.array(vals[i:i + L], dtype=np.uint32).reshape(n, n) for i in range(0, len(vals), L)]


class ReqSeq(uvm_sequence):
  """Sends prepared (fn, a, b, c) requests to the VPU, back to back (each tagged with its index)."""
  def __init__(self, name, reqs):
    super().__init__(name); self.reqs = reqs
  async def body(self):
    for i, (fn, a, b, c) in enumerate(self.reqs):
      it = V.VpuReq(f"req{i}", fn=fn, a=a, b=b, c=c, tag=i & 0xFF, delay=0)
      await self.start_item(it)
      await self.finish_item(it)


# ---- hand-checked answers: (fn, a, b, c, expected) with no numpy involved
KNOWN = [
  ("FADD", 0x3F800000, 0x33800000, 0, 0x3F800000),  # 1 + 2^-24: a tie, stays at the even 1.0
  ("FADD", 0x3F800001, 0x33800000, 0, 0x3F800002),  # (1 + ulp) + half ulp: tie up to even
  ("FADD", 0x3F800000, 0x33800001, 0, 0x3F800001),  # just above the tie
  ("FSUB", 0x3F800000, 0x3F800000, 0, 0x00000000),  # exact cancellation is +0
  ("FADD", 0x80000000, 0x80000000, 0, 0x80000000),  # -0 + -0 = -0
  ("FADD", 0x00800000, 0x80000001, 0, 0x007FFFFF),  # min normal - min subnormal = max subnormal
  ("FADD", 0x7F7FFFFF, 0x73000000, 0, 0x7F800000),  # max + half ulp: tie rounds to even = overflow
  ("FADD", 0x7F7FFFFF, 0x72FFFFFF, 0, 0x7F7FFFFF),
  ("FADD", 0x7F800000, 0xFF800000, 0, 0x7FC00000),  # inf - inf
  ("FMUL", 0x00000001, 0x3F000000, 0, 0x00000000),  # min subnormal / 2: tie to even 0
  ("FMUL", 0x00000003, 0x3F000000, 0, 0x00000002),  # 1.5 min subnormal: tie to even 2
  ("FMUL", 0x80000001, 0x3F400000, 0, 0x80000001),  # 0.75: rounds up
  ("FMUL", 0x00800000, 0x3F000000, 0, 0x00400000),  # min normal / 2: exact subnormal
  ("FMUL", 0x7F7FFFFF, 0x40000000, 0, 0x7F800000),  # overflow
  ("FMUL", 0x7F800000, 0x00000000, 0, 0x7FC00000),  # inf * 0
  ("FMUL", 0x3F800001, 0x3F800001, 0, 0x3F800002),  # (1+u)^2 = 1 + 2u + u^2: rounds down
  ("FDIV", 0x3F800000, 0x40400000, 0, 0x3EAAAAAB),  # 1/3
  ("FDIV", 0x40000000, 0x40400000, 0, 0x3F2AAAAB),  # 2/3
  ("FDIV", 0x00000001, 0x40000000, 0, 0x00000000),  # min subnormal / 2: tie to even 0
  ("FDIV", 0x00000003, 0x40000000, 0, 0x00000002),
  ("FDIV", 0x3F800000, 0x00000000, 0, 0x7F800000),
  ("FDIV", 0xBF800000, 0x00000000, 0, 0xFF800000),
  ("FDIV", 0x00000000, 0x00000000, 0, 0x7FC00000),
  ("FDIV", 0x7F7FFFFF, 0x00000001, 0, 0x7F800000),
  ("FDIV", 0x00000001, 0x7F7FFFFF, 0, 0x00000000),
  ("FRECIP", 0x00000000, 0, 0, 0x7F800000),
  ("FRECIP", 0x80000000, 0, 0, 0xFF800000),
  ("FRECIP", 0x00200000, 0, 0, 0x7F800000),  # 1 / 2^-128 = 2^128 overflows
  ("FRECIP", 0x7F000000, 0, 0, 0x00400000),  # 1 / 2^127 = 2^-127, subnormal
  ("FSQRT", 0x40000000, 0, 0, 0x3FB504F3),   # sqrt(2)
  ("FSQRT", 0x00000001, 0, 0, 0x1A3504F3),   # sqrt(2^-149) = 2^-74.5
  ("FSQRT", 0x80000000, 0, 0, 0x80000000),
  ("FSQRT", 0xBF800000, 0, 0, 0x7FC00000),
  ("FSQRT", 0x7F800000, 0, 0, 0x7F800000),
  ("FMAX", 0x80000000, 0x00000000, 0, 0x00000000),
  ("FMAX", 0x00000000, 0x80000000, 0, 0x00000000),
  ("FMIN", 0x00000000, 0x80000000, 0, 0x80000000),
  ("FMAX", 0x3F800000, 0x7FC12345, 0, 0x7FC00000),
  ("FCMPLT", 0x80000000, 0x00000000, 0, 0),
  ("FCMPEQ", 0x80000000, 0x00000000, 0, 1),
  ("FCMPNE", 0x7FC00000, 0x7FC00000, 0, 1),
  ("FCMPLT", 0xFF800000, 0x80000001, 0, 1),
  ("FTRUNC", 0xBF7FFFFF, 0, 0, 0x80000000),  # -0.99... -> -0
  ("FTRUNC", 0x40700000, 0, 0, 0x40400000),  # 3.75 -> 3
  ("FTRUNC", 0x4B000001, 0, 0, 0x4B000001),
  ("FSIGN", 0x80000000, 0, 0, 0x80000000),
  ("FSIGN", 0x00000001, 0, 0, 0x3F800000),
  ("FNEG", 0x7FC12345, 0, 0, 0xFFC12345),    # payload kept
  ("I2F", 16777217, 0, 0, 0x4B800000),       # 2^24 + 1: tie to even 2^24
  ("I2F", 16777219, 0, 0, 0x4B800002),       # 2^24 + 3: tie to even 2^24 + 4
  ("I2F", 0x80000000, 0, 0, 0xCF000000),
  ("I2F", 0x7FFFFFFF, 0, 0, 0x4F000000),
  ("U2F", 0xFFFFFFFF, 0, 0, 0x4F800000),
  ("U2F", 0x80000000, 0, 0, 0x4F000000),
  ("F2I", 0x4F000000, 0, 0, 0x7FFFFFFF),     # 2^31 saturates
  ("F2I", 0xCF000000, 0, 0, 0x80000000),
  ("F2I", 0xCF000001, 0, 0, 0x80000000),
  ("F2I", 0x4EFFFFFF, 0, 0, 0x7FFFFF80),
  ("F2I", 0xC0700000, 0, 0, 0xFFFFFFFD),     # -3.75 -> -3
  ("F2I", 0x7FC00000, 0, 0, 0),
  ("F2I", 0xFF800000, 0, 0, 0x80000000),
  ("F2BF16", 0x3F808000, 0, 0, 0x3F80),      # tie to even (down)
  ("F2BF16", 0x3F818000, 0, 0, 0x3F82),      # tie to even (up)
  ("F2BF16", 0x3F808001, 0, 0, 0x3F81),
  ("F2BF16", 0x7F7FFFFF, 0, 0, 0x7F80),      # rounds up to inf
  ("F2BF16", 0xFFC12345, 0, 0, 0x7FC0),
  ("BF162F", 0xABCD3F80, 0, 0, 0x3F800000),  # high bits ignored
  ("FMAC", 0x3F800001, 0x3F800001, 0xBF800000, 0x34800000),  # two roundings: (1+2u) - 1 = 2u, not 2u + u^2
  # transcendentals: exact answers (doc/transcendental.md "Consequences") and the special cases
  ("FEXP2", 0x00000000, 0, 0, 0x3F800000),   # 2^0 = 1
  ("FEXP2", 0x80000000, 0, 0, 0x3F800000),
  ("FEXP2", 0x3F800000, 0, 0, 0x40000000),   # 2^1
  ("FEXP2", 0xBF800000, 0, 0, 0x3F000000),   # 2^-1
  ("FEXP2", 0x41200000, 0, 0, 0x44800000),   # 2^10 = 1024
  ("FEXP2", 0x42FE0000, 0, 0, 0x7F000000),   # 2^127
  ("FEXP2", 0x43000000, 0, 0, 0x7F800000),   # 2^128 overflows
  ("FEXP2", 0xC2FC0000, 0, 0, 0x00800000),   # 2^-126: min normal
  ("FEXP2", 0xC2FE0000, 0, 0, 0x00400000),   # 2^-127: exact subnormal
  ("FEXP2", 0xC3150000, 0, 0, 0x00000001),   # 2^-149: min subnormal
  ("FEXP2", 0xC3160000, 0, 0, 0x00000000),   # 2^-150: a tie, rounds to even 0
  ("FEXP2", 0x437FFFFF, 0, 0, 0x7F800000),   # 255.99998
  ("FEXP2", 0xC37FFFFF, 0, 0, 0x00000000),
  ("FEXP2", 0x7F800000, 0, 0, 0x7F800000),
  ("FEXP2", 0xFF800000, 0, 0, 0x00000000),
  ("FEXP2", 0x7FC12345, 0, 0, 0x7FC00000),
  ("FEXP2", 0x1E3CE508, 0, 0, 0x3F800000),   # 1e-20: 1.0
  ("FLOG2", 0x3F800000, 0, 0, 0x00000000),   # log2(1) = +0
  ("FLOG2", 0x41000000, 0, 0, 0x40400000),   # log2(8) = 3
  ("FLOG2", 0x3E800000, 0, 0, 0xC0000000),   # log2(0.25) = -2
  ("FLOG2", 0x7F000000, 0, 0, 0x42FE0000),   # log2(2^127) = 127
  ("FLOG2", 0x00000001, 0, 0, 0xC3150000),   # log2(2^-149) = -149
  ("FLOG2", 0x00400000, 0, 0, 0xC2FE0000),   # log2(2^-127) = -127
  ("FLOG2", 0x00000000, 0, 0, 0xFF800000),
  ("FLOG2", 0x80000000, 0, 0, 0xFF800000),
  ("FLOG2", 0xBF800000, 0, 0, 0x7FC00000),
  ("FLOG2", 0x80000001, 0, 0, 0x7FC00000),
  ("FLOG2", 0x7F800000, 0, 0, 0x7F800000),
  ("FLOG2", 0xFF800000, 0, 0, 0x7FC00000),
  ("FLOG2", 0xFFC00001, 0, 0, 0x7FC00000),
  ("FSIN", 0x00000000, 0, 0, 0x00000000),
  ("FSIN", 0x80000000, 0, 0, 0x80000000),
  ("FSIN", 0x80000001, 0, 0, 0x80000001),    # |x| < 2^-12: sin x = x
  ("FSIN", 0x397FFFFF, 0, 0, 0x397FFFFF),
  ("FSIN", 0x3FC90FDB, 0, 0, 0x3F800000),    # sin(pi/2) = 1
  ("FSIN", 0x7F800000, 0, 0, 0x7FC00000),
  ("FSIN", 0xFFC00000, 0, 0, 0x7FC00000),
  ("FCOS", 0x00000000, 0, 0, 0x3F800000),
  ("FCOS", 0x80000001, 0, 0, 0x3F800000),
  ("FCOS", 0x40490FDB, 0, 0, 0xBF800000),    # cos(pi) = -1
  ("FCOS", 0xFF800000, 0, 0, 0x7FC00000),
]


def known_reqs(n: int) -> list[tuple]:
  reqs = []
  for fn, a, b, c, _ in KNOWN:
    t = lambda v: np.full((n, n), v, dtype=np.uint32)
    reqs.append((fn, t(a), t(b), t(c)))
  return reqs


def check_known_golden():
  """The golden model must agree with the hand-checked answers too."""
  for fn, a, b, c, exp in KNOWN:
    t = lambda v: np.full((1, 1), v, dtype=np.uint32)
    got = int(golden(fn, t(a), t(b), t(c))[0, 0])
    assert got == exp, f"golden {fn}(0x{a:08x}, 0x{b:08x}, 0x{c:08x}) = 0x{got:08x}, hand-checked 0x{exp:08x}"


def directed_reqs(n: int, rng: random.Random) -> list[tuple]:
  reqs = []
  for fn in LANE_FNS:
    if fn in INT_IN:
      for a in tiles(INT_SPECIAL, n): reqs.append((fn, a, a, a))
    elif ARITY[fn] == 1:
      for a in tiles(SPECIAL, n): reqs.append((fn, a, a, a))
    elif fn in TRANS_FNS:
      for a in tiles(SPECIAL + trans_directed(), n): reqs.append((fn, a, a, a))
    else:  # every ordered pair of specials; FMAC adds a special c
      pairs = [(x, y) for x in SPECIAL for y in SPECIAL]
      aa, bb = tiles([p[0] for p in pairs], n), tiles([p[1] for p in pairs], n)
      cc = tiles([rng.choice(SPECIAL) for _ in pairs], n)
      reqs += [(fn, a, b, c) for a, b, c in zip(aa, bb, cc)]
  # cancellation: x - (x +- a few ulps) and x + (-x +- ulps), across exponents
  xs = [rng.getrandbits(32) & 0x7FFFFFFF for _ in range(4 * n * n)]
  xs = [x if (x >> 23) < 0xFF else x & 0x3FFFFFFF for x in xs]
  ys = [max(0, x + rng.randint(-3, 3)) for x in xs]
  for a, b in zip(tiles(xs, n), tiles(ys, n)):
    reqs += [("FSUB", a, b, b), ("FADD", a, b ^ np.uint32(0x80000000), b)]
  # reductions, argmax and FROTPAIR on special tiles and on tiles with a lone special
  for fn in TILE_FNS:
    for a, b in zip(tiles(SPECIAL, n), tiles(SPECIAL[::-1], n)):
      reqs.append((fn, a, b, b))
    for v in (0x7FC00000, 0x7F800000, 0xFF800000, 0x80000000, 0x00000001):
      a = np.full((n, n), F(1.0), dtype=np.uint32); a[rng.randrange(n), rng.randrange(n)] = v
      reqs.append((fn, a, a, a))
  for fn in ("FARGMAX_ROW", "FARGMIN_ROW"):  # ties and signed zeros: first index wins
    a = np.array([rng.choice((0, 0x80000000, F(2.0), F(-2.0))) for _ in range(n * n)], dtype=np.uint32).reshape(n, n)
    reqs.append((fn, a, a, a))
  return reqs


def rand_tile(rng: random.Random, n: int, fn: str) -> np.ndarray:
  if fn in INT_IN: return kit.random_tile(rng, n, "int32")[0]
  if fn in TRANS_FNS: return kit.random_tile(rng, n, TRANS_X)[0]
  if fn in TILE_FNS and rng.random() < 0.6:
    return kit.random_tile(rng, n, FP32X, only=FINITE)[0]  # mostly finite: exercise rounding order
  return kit.random_tile(rng, n, FP32X)[0]


def random_reqs(n: int, rng: random.Random) -> list[tuple]:
  reqs = []
  per_lane = math.ceil(3000 / (n * n))  # a few thousand vectors per lane-wise op
  per_tile = math.ceil(1600 / (n * n))
  for fn in ALL_FNS:
    for _ in range(per_tile if fn in TILE_FNS else per_lane):
      reqs.append((fn, rand_tile(rng, n, fn), rand_tile(rng, n, fn), rand_tile(rng, n, fn)))
  rng.shuffle(reqs)
  return reqs


class FpBase(kit.BaseTest):
  env_cls = FpEnv
  timeout_us = 20_000
  def reqs(self, n: int) -> list[tuple]: raise NotImplementedError
  async def body(self):
    # at N > 4 only the tile-wide functions (the lanes do not depend on N)
    self.sent = [r for r in self.reqs(n_of()) if lanes_on() or r[0] in TILE_FNS]
    await ReqSeq("seq", self.sent).start(self.env.req.seqr)
  def check_phase(self):
    assert self.env.sb.checked == len(self.sent), f"scoreboard saw {self.env.sb.checked} of {len(self.sent)} responses"


@pyuvm.test()
class FpKnown(FpBase):
  def reqs(self, n):
    check_known_golden()
    return known_reqs(n)


@pyuvm.test()
class FpDirected(FpBase):
  def reqs(self, n): return directed_reqs(n, self.rng)


@pyuvm.test()
class FpRandom(FpBase):
  def reqs(self, n): return random_reqs(n, self.rng)
  def check_phase(self):
    super().check_phase()
    groups = self.env.cov.cov.groups
    for name, g in groups.items():
      self.logger.info(f"coverage {name}: {g.pct():.1f}%")
    if lanes_on(): pct = self.env.cov.cov.pct()
    else:  # only the tile-wide bins can be hit
      g = groups["op_x_a"]
      tile_bins = [k for k in g.hits if k.split("x")[0] in TILE_FNS]
      pct = 100.0 * sum(g.hits[k] >= g.goal for k in tile_bins) / len(tile_bins)
    assert pct >= 95.0, f"functional coverage {pct:.1f}% < 95%:\n{self.env.cov.cov.report()}"


@pyuvm.test(expect_fail=True)
class FpBrokenModel(FpBase):
  broken = True
  def reqs(self, n): return [(fn if lanes_on() else "FSUM_ROW", a, b, c) for fn, a, b, c in known_reqs(n)[:10]]
