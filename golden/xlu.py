"""Golden reference functions of the XLU (cross-lane unit), architecture.md §4.4.

Tiles are uint32 arrays of shape (..., N, N); every function returns a new array. Rotation
amounts are any Python/numpy int taken mod N (a scalar register's unsigned bits give the same
result as its signed value, since N divides 2^32)."""
from __future__ import annotations

from typing import Callable

import numpy as np

def _rot(a: np.ndarray, k, axis: int) -> np.ndarray:
  k = int(k) % a.shape[axis]
  # out[i] = a[(i + k) mod N]: the tail from k, then the head
  return np.concatenate((a[..., k:, :], a[..., :k, :]) if axis == -2 else (a[..., k:], a[..., :k]), axis=axis)

def xrot(a: np.ndarray, k) -> np.ndarray:
  """vd[r][c] = va[r][(c + k) mod N]"""
  return _rot(a, k, -1)

def xsrot(a: np.ndarray, k) -> np.ndarray:
  """vd[r][c] = va[(r + k) mod N][c]"""
  return _rot(a, k, -2)

def xbcol(a: np.ndarray, c0: int) -> np.ndarray:
  """vd[r][c] = va[r][c0]"""
  return np.broadcast_to(a[..., :, c0:c0 + 1], a.shape).copy()

def xbrow(a: np.ndarray, r0: int) -> np.ndarray:
  """vd[r][c] = va[r0][c]"""
  return np.broadcast_to(a[..., r0:r0 + 1, :], a.shape).copy()

def xbscalar(a: np.ndarray, r0: int, c0: int) -> np.ndarray:
  """every lane = va[r0][c0]"""
  return np.broadcast_to(a[..., r0:r0 + 1, c0:c0 + 1], a.shape).copy()

def xtrans(a: np.ndarray) -> np.ndarray:
  """vd[r][c] = va[c][r]"""
  return np.ascontiguousarray(np.swapaxes(a, -1, -2))

def xshuf(a: np.ndarray, idx: np.ndarray) -> np.ndarray:
  """vd[r][c] = va[i div N][i mod N] with i = idx[r][c] mod N*N (idx as unsigned lane bits)"""
  n = a.shape[-1]
  flat = a.reshape(*a.shape[:-2], n * n)
  i = (idx.astype(np.uint32, copy=False) % np.uint32(n * n)).reshape(*idx.shape[:-2], n * n)
  return np.take_along_axis(flat, i.astype(np.intp), axis=-1).reshape(a.shape)

# uniform signature for the interpreter: f(a, vi, k, r0, c0); XROTS/XSROTS get k from a register
OPS: dict[str, Callable] = {
  "XROT": lambda a, vi, k, r0, c0: xrot(a, k),
  "XROTS": lambda a, vi, k, r0, c0: xrot(a, k),
  "XSROT": lambda a, vi, k, r0, c0: xsrot(a, k),
  "XSROTS": lambda a, vi, k, r0, c0: xsrot(a, k),
  "XBCOL": lambda a, vi, k, r0, c0: xbcol(a, c0),
  "XBROW": lambda a, vi, k, r0, c0: xbrow(a, r0),
  "XBSCALAR": lambda a, vi, k, r0, c0: xbscalar(a, r0, c0),
  "XTRANS": lambda a, vi, k, r0, c0: xtrans(a),
  "XSHUF": lambda a, vi, k, r0, c0: xshuf(a, vi),
}
