"""Golden reference functions of the fp32 VPU ops.

`OPS[name](a, b, c)` for the fp32 VPU function names of `isa.VPU_FNS`: a, b, c are uint32 arrays of
shape (..., N, N) holding raw fp32 lane bits; unused operands are ignored (they may be None). Every
function returns a new uint32 array. Correctly rounded ops are numpy float32 arithmetic (IEEE RNE,
subnormals kept); every NaN they produce is canonicalised to 0x7FC00000. FNEG, FABS and BF162F
are bit operations and keep NaN payloads. Exact semantics: doc/isa.md, and doc/transcendental.md
for FEXP2/FLOG2/FSIN/FCOS."""
from __future__ import annotations

from typing import Callable

import numpy as np

from tinytpu.golden import transcendental

u32, i32, i64, f32, f64 = np.uint32, np.int32, np.int64, np.float32, np.float64
QNAN = u32(0x7FC00000)
SIGN = u32(0x80000000)

def _f(x: np.ndarray) -> np.ndarray: return x.view(f32)

def _bits(r: np.ndarray) -> np.ndarray:
  r = np.asarray(r, dtype=f32)
  return np.where(r != r, QNAN, r.view(u32))  # canonical NaN

def _fp(fn: Callable) -> Callable:
  """Run a float32 formula without numpy's overflow/invalid warnings and canonicalise NaNs."""
  def op(a, b=None, c=None):
    with np.errstate(all="ignore"):
      return _bits(fn(a, b, c))
  return op

def _bool(x: np.ndarray) -> np.ndarray: return x.astype(u32)

# ---- max/min: NaN-propagating; equal values can only differ as ±0, where max takes +0 and min -0
def fmax(a, b, c=None):
  x, y = _f(a), _f(b)
  r = np.where(x > y, a, np.where(x < y, b, a & b))
  return np.where((x != x) | (y != y), QNAN, r)

def fmin(a, b, c=None):
  x, y = _f(a), _f(b)
  r = np.where(x < y, a, np.where(x > y, b, a | b))
  return np.where((x != x) | (y != y), QNAN, r)

def fsign(a, b=None, c=None):
  x = _f(a)
  r = np.where(x > 0, u32(0x3F800000), np.where(x < 0, u32(0xBF800000), a))  # ±0 stays
  return np.where(x != x, QNAN, r)

def f2i(a, b=None, c=None):
  nan = (a & ~SIGN) > 0x7F800000
  x = _f(np.where(nan, u32(0), a)).astype(f64)  # exact (no signalling NaN reaches the cast); NaN gives 0
  return np.clip(np.trunc(x), -2.0**31, 2.0**31 - 1).astype(i64).astype(u32)

def f2bf16(a, b=None, c=None):
  r = (a + (u32(0x7FFF) + ((a >> 16) & 1))) >> 16  # RNE on the low 16 bits; a carry rounds up to inf
  return np.where(_f(a) != _f(a), u32(0x7FC0), r)

# ---- reductions: the pairwise tree of doc/isa.md (neighbours first, level by level)
def _tree(op: Callable, x: np.ndarray) -> np.ndarray:
  """Reduce the last axis pairwise: x0 op x1, x2 op x3, ..., then again; an odd last element passes up."""
  while x.shape[-1] > 1:
    n = x.shape[-1] & ~1
    y = op(x[..., 0:n:2], x[..., 1:n:2])
    x = np.concatenate([y, x[..., n:]], axis=-1) if x.shape[-1] & 1 else y
  return x

def _key(a: np.ndarray) -> np.ndarray:
  """Order-preserving int32 key of fp32 bits (-0 just below +0); its own inverse."""
  return a ^ ((a.view(i32) >> 31).view(u32) >> 1)

_AXES = {"ROW": -1, "COL": -2, "TILE": (-2, -1)}

def _reduction(kind: str, scope: str) -> Callable:
  ax = _AXES[scope]
  if kind in ("FMAX", "FMIN"):
    # exact max/min are associative and commutative, so no tree order can show: reduce the keys
    def red(a, b=None, c=None):
      k = _key(a).view(i32)
      r = _key((k.max if kind == "FMAX" else k.min)(axis=ax, keepdims=True).view(u32))
      return np.broadcast_to(np.where(((a & ~SIGN) > 0x7F800000).any(axis=ax, keepdims=True), QNAN, r), a.shape).copy()
    return red
  op = np.add if kind == "FSUM" else np.multiply
  def red(a, b=None, c=None):
    x = _f(a)
    with np.errstate(all="ignore"):  # a NaN stays NaN up the tree: canonicalise once at the end
      if scope == "ROW": r = _tree(op, x)
      elif scope == "COL": r = np.swapaxes(_tree(op, np.swapaxes(x, -1, -2)), -1, -2)
      else: r = _tree(op, np.swapaxes(_tree(op, x), -1, -2))  # rows, then the row results
    return np.broadcast_to(_bits(r), a.shape).copy()
  return red

def _farg(f: Callable) -> Callable:
  # numpy's argmax/argmin return the first extreme index and treat the first NaN as the extreme
  return lambda a, b=None, c=None: np.broadcast_to(f(_f(a), axis=-1, keepdims=True), a.shape).astype(u32)

def frotpair(a, b, c=None):
  x0, x1, co, si = _f(a[..., 0::2]), _f(a[..., 1::2]), _f(b[..., 0::2]), _f(b[..., 1::2])
  out = np.empty(np.broadcast_shapes(a.shape, b.shape), f32)
  with np.errstate(all="ignore"):
    out[..., 0::2] = x0 * co - x1 * si  # float32: each product and the sum rounded
    out[..., 1::2] = x0 * si + x1 * co
  return _bits(out)

def _tr(fn: Callable) -> Callable: return lambda a, b=None, c=None: fn(a)

OPS: dict[str, Callable] = {
  # fp32 arithmetic
  "FADD": _fp(lambda a, b, c: _f(a) + _f(b)),
  "FSUB": _fp(lambda a, b, c: _f(a) - _f(b)),
  "FMUL": _fp(lambda a, b, c: _f(a) * _f(b)),
  "FDIV": _fp(lambda a, b, c: _f(a) / _f(b)),
  "FRECIP": _fp(lambda a, b, c: f32(1) / _f(a)),
  "FSQRT": _fp(lambda a, b, c: np.sqrt(_f(a))),
  "FNEG": lambda a, b=None, c=None: a ^ SIGN,
  "FABS": lambda a, b=None, c=None: a & ~SIGN,
  "FSIGN": fsign,
  "FMAX": fmax,
  "FMIN": fmin,
  "FTRUNC": _fp(lambda a, b, c: np.trunc(_f(a))),
  # fp32 compare (NaN compares false, except !=)
  "FCMPLT": lambda a, b, c=None: _bool(_f(a) < _f(b)),
  "FCMPEQ": lambda a, b, c=None: _bool(_f(a) == _f(b)),
  "FCMPNE": lambda a, b, c=None: _bool(_f(a) != _f(b)),
  # conversions
  "I2F": lambda a, b=None, c=None: a.view(i32).astype(f32).view(u32),
  "U2F": lambda a, b=None, c=None: a.astype(f32).view(u32),
  "F2I": f2i,
  "F2BF16": f2bf16,
  "BF162F": lambda a, b=None, c=None: (a & 0xFFFF) << 16,
  # transcendental (integer algorithms, see doc/transcendental.md)
  "FEXP2": _tr(transcendental.exp2),
  "FLOG2": _tr(transcendental.log2),
  "FSIN": _tr(transcendental.sin),
  "FCOS": _tr(transcendental.cos),
  # pair rotate and ternary
  "FROTPAIR": frotpair,
  "FMAC": _fp(lambda a, b, c: _f(a) * _f(b) + _f(c)),
  # reductions
  **{f"{k}_{s}": _reduction(k, s) for k in ("FSUM", "FMAX", "FMIN", "FPROD") for s in ("ROW", "COL", "TILE")},
  "FARGMAX_ROW": _farg(np.argmax),
  "FARGMIN_ROW": _farg(np.argmin),
}
