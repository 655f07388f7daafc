"""Golden reference functions of the integer VPU ops (every VPU function that is not fp32).

`OPS[name](a, b, c)` for the VPU function names of `isa.VPU_FNS`: a, b, c are uint32 arrays of
shape (..., N, N) holding raw lane bits; unused operands are ignored (they may be None). Every
function returns a new uint32 array and never mutates its inputs. Exact semantics: doc/isa.md.
These run inside the interpreter's inner loop, so each is a handful of numpy calls on views."""
from __future__ import annotations

import sys
from typing import Callable

import numpy as np

assert sys.byteorder == "little", "the packed-int8 ops view a lane's bytes in host order"

u32, i32, i64, i16, i8 = np.uint32, np.int32, np.int64, np.int16, np.int8
INT_MIN, INT_MAX = -(1 << 31), (1 << 31) - 1

def _s(x: np.ndarray) -> np.ndarray: return x.view(i32)  # signed view of the lane bits
def _u(x: np.ndarray) -> np.ndarray: return x.view(u32)
def _bool(x: np.ndarray) -> np.ndarray: return x.astype(u32)  # compare result -> 1/0 lanes

# ---- int32 arithmetic
def _cdiv_parts(a, b):
  # C-style (truncating) quotient and remainder in int64, so INT_MIN / -1 is just 2^31 (wraps below)
  x, y = _s(a).astype(i64), _s(b).astype(i64)
  z = y == 0
  ys = np.where(z, 1, y)
  r = np.fmod(x, ys)
  return x, z, ys, r

def cdiv(a, b, c=None):
  x, z, ys, r = _cdiv_parts(a, b)
  return np.where(z, 0, (x - r) // ys).astype(u32)  # x / 0 = 0; INT_MIN / -1 = 2^31 -> INT_MIN

def cmod(a, b, c=None):
  x, z, _, r = _cdiv_parts(a, b)
  return np.where(z, x, r).astype(u32)  # x % 0 = x

def _sat32(x64): return np.clip(x64, INT_MIN, INT_MAX).astype(u32)

def satadd(a, b, c=None): return _sat32(_s(a).astype(i64) + _s(b))
def satsub(a, b, c=None): return _sat32(_s(a).astype(i64) - _s(b))
def absdiff(a, b, c=None): return np.minimum(np.abs(_s(a).astype(i64) - _s(b)), INT_MAX).astype(u32)

# ---- bits
def _popcnt(a): return np.bitwise_count(a).astype(u32)

def rotl(a, b, c=None):
  s = b & 31
  return (a << s) | (a >> ((32 - s) & 31))  # s = 0: both halves are a itself

def rotr(a, b, c=None):
  s = b & 31
  return (a >> s) | (a << ((32 - s) & 31))

def clz(a, b=None, c=None):
  # frexp of the exact float64 gives the bit length as the exponent (0 for a = 0)
  return (32 - np.frexp(a.astype(np.float64))[1]).astype(u32)

def ctz(a, b=None, c=None):
  return _popcnt(~a & (a - u32(1)))  # ones below the lowest set bit; a = 0 gives 32

# ---- packed int8: 4 signed bytes per lane, byte i = bits [8i+7:8i] (little-endian host view)
def _b(x): return np.ascontiguousarray(x).view(i8)
def _w(x): return _b(x).astype(i16)  # bytes widened so sums and products are exact
def _pack(bytes8): return np.ascontiguousarray(bytes8, dtype=i8).view(u32)
def _sat8(x16): return _pack(np.clip(x16, -128, 127))
def _mask8(m): return _pack(-m.view(i8))  # bool per byte -> 0xFF / 0x00

def _p8mul(a, b): return _w(a) * _w(b)  # exact 16-bit signed products

def irotpair(a, b, c=None):
  x0, x1, co, si = a[..., 0::2], a[..., 1::2], b[..., 0::2], b[..., 1::2]
  out = np.empty(np.broadcast_shapes(a.shape, b.shape), u32)
  out[..., 0::2] = x0 * co - x1 * si
  out[..., 1::2] = x0 * si + x1 * co
  return out

# ---- reductions: ROW keeps the last axis, COL the second to last, TILE both; results broadcast
_AXES = {"ROW": -1, "COL": -2, "TILE": (-2, -1)}
def _bcast(r, a): return np.broadcast_to(r, a.shape).astype(u32)

def _reduction(kind: str, scope: str) -> Callable:
  ax = _AXES[scope]
  if kind == "SUM": return lambda a, b=None, c=None: _bcast(np.sum(a, axis=ax, dtype=u32, keepdims=True), a)
  if kind == "PROD": return lambda a, b=None, c=None: _bcast(np.prod(a, axis=ax, dtype=u32, keepdims=True), a)
  f = np.max if kind == "MAX" else np.min
  return lambda a, b=None, c=None: _bcast(f(_s(a), axis=ax, keepdims=True).view(u32), a)

def _arg(f): return lambda a, b=None, c=None: _bcast(f(_s(a), axis=-1, keepdims=True), a)

OPS: dict[str, Callable] = {
  # int32 arithmetic
  "ADD": lambda a, b, c=None: a + b,
  "SUB": lambda a, b, c=None: a - b,
  "MUL": lambda a, b, c=None: a * b,
  "CDIV": cdiv,
  "CMOD": cmod,
  "NEG": lambda a, b=None, c=None: np.negative(a),
  "ABS": lambda a, b=None, c=None: _u(np.abs(_s(a))),
  "SIGN": lambda a, b=None, c=None: _u(np.sign(_s(a))),
  "RELU": lambda a, b=None, c=None: _u(np.maximum(_s(a), 0)),
  "MAX": lambda a, b, c=None: _u(np.maximum(_s(a), _s(b))),
  "MIN": lambda a, b, c=None: _u(np.minimum(_s(a), _s(b))),
  "MAXU": lambda a, b, c=None: np.maximum(a, b),
  "MINU": lambda a, b, c=None: np.minimum(a, b),
  "SATADD": satadd,
  "SATSUB": satsub,
  "ABSDIFF": absdiff,
  # int32 compare
  "CMPLT": lambda a, b, c=None: _bool(_s(a) < _s(b)),
  "CMPLTU": lambda a, b, c=None: _bool(a < b),
  "CMPEQ": lambda a, b, c=None: _bool(a == b),
  "CMPNE": lambda a, b, c=None: _bool(a != b),
  # bits
  "AND": lambda a, b, c=None: a & b,
  "OR": lambda a, b, c=None: a | b,
  "XOR": lambda a, b, c=None: a ^ b,
  "NOT": lambda a, b=None, c=None: ~a,
  "SHL": lambda a, b, c=None: a << (b & 31),
  "SHR": lambda a, b, c=None: a >> (b & 31),
  "SRA": lambda a, b, c=None: _u(_s(a) >> _s(b & 31)),
  "ROTL": rotl,
  "ROTR": rotr,
  "CLZ": clz,
  "CTZ": ctz,
  "POPCNT": lambda a, b=None, c=None: _popcnt(a),
  "BREV8": lambda a, b=None, c=None: a.byteswap(),
  # narrow ints
  "SEXT8": lambda a, b=None, c=None: _u(_s(a << 24) >> 24),
  "SEXT16": lambda a, b=None, c=None: _u(_s(a << 16) >> 16),
  "ZEXT8": lambda a, b=None, c=None: a & 0xFF,
  "ZEXT16": lambda a, b=None, c=None: a & 0xFFFF,
  # packed int8
  "P8ADD": lambda a, b, c=None: _sat8(_w(a) + _w(b)),
  "P8SUB": lambda a, b, c=None: _sat8(_w(a) - _w(b)),
  "P8MAX": lambda a, b, c=None: _pack(np.maximum(_b(a), _b(b))),
  "P8MIN": lambda a, b, c=None: _pack(np.minimum(_b(a), _b(b))),
  "P8NEG": lambda a, b=None, c=None: _sat8(-_w(a)),
  "P8RELU": lambda a, b=None, c=None: _pack(np.maximum(_b(a), 0)),
  "P8ABS": lambda a, b=None, c=None: _sat8(np.abs(_w(a))),
  "P8SIGN": lambda a, b=None, c=None: _pack(np.sign(_b(a))),
  "P8CMPLT": lambda a, b, c=None: _mask8(_b(a) < _b(b)),
  "P8CMPEQ": lambda a, b, c=None: _mask8(_b(a) == _b(b)),
  "P8MULLO": lambda a, b, c=None: _pack(_p8mul(a, b).astype(i8)),
  "P8MULHI": lambda a, b, c=None: _pack((_p8mul(a, b) >> 8).astype(i8)),
  "P8ABSDIFF": lambda a, b, c=None: _sat8(np.abs(_w(a) - _w(b))),
  # pair rotate and ternary
  "IROTPAIR": irotpair,
  "SEL": lambda a, b, c: np.where(c != 0, a, b),
  "MAC": lambda a, b, c: a * b + c,
  # reductions
  **{f"{k}_{s}": _reduction(k, s) for k in ("SUM", "MAX", "MIN", "PROD") for s in ("ROW", "COL", "TILE")},
  "ARGMAX_ROW": _arg(np.argmax),
  "ARGMIN_ROW": _arg(np.argmin),
}
