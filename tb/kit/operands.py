"""Weighted operand classes: every random operand is drawn as (class name, value), so coverage can
count which classes each opcode saw. A class table maps name -> (weight, sampler(rng) -> int)."""
from __future__ import annotations

import random
import struct

M32 = 0xFFFFFFFF
INT_MIN, INT_MAX = 0x80000000, 0x7FFFFFFF


def f2b(x: float) -> int: return struct.unpack("<I", struct.pack("<f", x))[0]
def b2f(b: int) -> float: return struct.unpack("<f", struct.pack("<I", b & M32))[0]


def _signed(lo, hi): return lambda r: r.randint(lo, hi) & M32


INT32 = {
  "zero": (2, lambda r: 0),
  "one": (1, lambda r: 1),
  "minus_one": (1, lambda r: M32),
  "small": (3, _signed(-16, 16)),
  "medium": (1, lambda r: (r.choice((1, -1)) * r.randint(17, (1 << 24) - 1)) & M32),
  "large": (2, lambda r: (r.choice((1, -1)) * r.randint(1 << 24, (1 << 31) - 1)) & M32),
  "int_min": (1, lambda r: INT_MIN),
  "int_max": (1, lambda r: INT_MAX),
  "random": (4, lambda r: r.getrandbits(32)),
}

# int8 lanes as the MXU sees them: the upper 24 bits are ignored, so the "wide" class sets them
INT8 = {
  "zero": (2, lambda r: 0),
  "one": (1, lambda r: 1),
  "minus_one": (1, lambda r: M32),
  "small": (3, _signed(-8, 8)),
  "int8_min": (1, lambda r: 0xFFFFFF80),
  "int8_max": (1, lambda r: 0x7F),
  "random": (4, _signed(-128, 127)),
  "wide": (2, lambda r: r.getrandbits(32)),
}


def _fp(lo_exp, hi_exp):
  return lambda r: (r.getrandbits(1) << 31) | (r.randint(lo_exp, hi_exp) << 23) | r.getrandbits(23)


FP32 = {
  "zero": (2, lambda r: r.choice((0, 0x80000000))),
  "subnormal": (2, lambda r: (r.getrandbits(1) << 31) | r.randint(1, (1 << 23) - 1)),
  "normal": (6, _fp(100, 154)),
  "extreme": (1, _fp(1, 254)),
  "inf": (1, lambda r: r.choice((0x7F800000, 0xFF800000))),
  "qnan": (1, lambda r: 0x7FC00000 | r.getrandbits(22) | (r.getrandbits(1) << 31)),
  "one": (1, lambda r: r.choice((f2b(1.0), f2b(-1.0)))),
  # x.5 ulp style ties: a few low mantissa bits set/cleared around the rounding point
  "near_tie": (2, lambda r: (r.getrandbits(1) << 31) | (r.randint(120, 134) << 23) | (r.getrandbits(20) << 3) | r.choice((0x3, 0x4, 0x5))),
}

TABLES = {"int32": INT32, "int8": INT8, "fp32": FP32}


def draw(table: dict | str, rng: random.Random, only: list[str] | None = None) -> tuple[str, int]:
  """Pick a class by weight (restricted to `only` if given) and sample a value from it."""
  t = TABLES[table] if isinstance(table, str) else table
  names = [n for n in t if only is None or n in only]
  name = rng.choices(names, weights=[t[n][0] for n in names])[0]
  return name, t[name][1](rng)


INT32_BINS = ["zero", "one", "minus_one", "small", "medium", "large", "int_min", "int_max"]
FP32_BINS = ["zero", "subnormal", "normal", "inf", "qnan"]


def classify_int32(v: int) -> str:
  """The value class (one of INT32_BINS) of an observed int32, for coverage from monitors."""
  v &= M32
  s = v - (1 << 32) if v & 0x80000000 else v
  if v == 0: return "zero"
  if v == 1: return "one"
  if v == M32: return "minus_one"
  if v == INT_MIN: return "int_min"
  if v == INT_MAX: return "int_max"
  if -16 <= s <= 16: return "small"
  return "large" if abs(s) >= 1 << 24 else "medium"


INT8_BINS = ["zero", "one", "minus_one", "small", "int8_min", "int8_max", "random", "wide"]


def classify_int8(v: int) -> str:
  """The class (one of INT8_BINS) of a lane as the MXU sees it: its low 8 bits, and "wide" when
  the upper 24 bits are not the sign extension of those 8 (they must be ignored)."""
  v &= M32
  b = v & 0xFF
  s = b - 256 if b & 0x80 else b
  if (s & M32) != v: return "wide"
  if s == 0: return "zero"
  if s == 1: return "one"
  if s == -1: return "minus_one"
  if s == -128: return "int8_min"
  if s == 127: return "int8_max"
  return "small" if -8 <= s <= 8 else "random"


def classify_fp32(v: int) -> str:
  """The value class (one of FP32_BINS) of an observed fp32 bit pattern."""
  e, m = (v >> 23) & 0xFF, v & 0x7FFFFF
  if e == 0: return "zero" if m == 0 else "subnormal"
  if e == 0xFF: return "inf" if m == 0 else "qnan"
  return "normal"
