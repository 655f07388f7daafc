"""Golden reference of the MXU (architecture.md §4.5, doc/isa.md MLW / MMUL / MMUL.BF16).

`weights(tile)` is the int8 view of the tile MLW latches (the interpreter keeps the whole tile);
`mmul(psum_old, acts, w, acc)` is what one MMUL writes into its T PSUM tiles, `mmul_bf16(psum_old,
acts, wtile, acc)` what one MMUL.BF16 writes: bf16 operands (a lane's high 16 bits; its low 16
bits are ignored), fp32 products and sums, in the array's order: s = x0*w0, then s = s + xk*wk
for k = 1..N-1, then PSUM + s when acc = 1. Every op is an IEEE fp32 op (RNE, subnormals kept), as
numpy's float32; a NaN result is the canonical 0x7FC00000."""
from __future__ import annotations

import numpy as np

QNAN = np.uint32(0x7FC00000)

def weights(tile: np.ndarray) -> np.ndarray:
  """W[k][n] = int8 of the low 8 bits of lane [k][n] of an N x N uint32 tile."""
  return tile.astype(np.int8)  # C cast: keeps the low 8 bits

def mmul(psum_old: np.ndarray, acts: np.ndarray, w: np.ndarray, acc) -> np.ndarray:
  """out[t][r][n] = (acc ? psum_old[t][r][n] : 0) + sum_k int8(acts[t][r][k]) * w[k][n], int32 wrap.
  psum_old and acts are uint32 (T, N, N) (psum_old unused when acc = 0), w is int8 (N, N)."""
  # |sum| <= 16 * 128 * 128 < 2^31, so int32 products and sums are exact; the add wraps in uint32
  prod = np.matmul(acts.astype(np.int8).astype(np.int32), w.astype(np.int32)).view(np.uint32)
  return prod + psum_old if acc else prod

def bf16(lanes: np.ndarray) -> np.ndarray:
  """The bf16 operand of uint32 lanes as float32: the high 16 bits, the low 16 bits cleared."""
  return (np.asarray(lanes, np.uint32) & np.uint32(0xFFFF0000)).view(np.float32)

def mmul_bf16(psum_old: np.ndarray, acts: np.ndarray, wtile: np.ndarray, acc) -> np.ndarray:
  """out[t][r][n] = (acc ? psum_old[t][r][n] + s : s), s = x[0]*w[0][n] + x[1]*w[1][n] + ... left
  to right, x = bf16(acts[t][r]), w = bf16(wtile): fp32 bits, uint32 (T, N, N). wtile is the raw
  uint32 tile of the last MLW."""
  x, w = bf16(acts), bf16(wtile)
  with np.errstate(all="ignore"):
    s = x[..., :, 0:1] * w[0]        # s[t][r][n] = x[t][r][0] * w[0][n], one fp32 rounding
    for k in range(1, w.shape[0]):
      s = s + x[..., :, k:k + 1] * w[k]
    if acc:
      s = psum_old.view(np.float32) + s
  return np.where(s != s, QNAN, s.view(np.uint32))
