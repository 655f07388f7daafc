"""Golden reference of the MXU (architecture.md §4.5): int8 x int8 products, int32 wrapping sums.

`weights(tile)` is what MLW latches; `mmul(psum_old, acts, w, acc)` is what one MMUL writes into
its T PSUM tiles."""
from __future__ import annotations

import numpy as np

def weights(tile: np.ndarray) -> np.ndarray:
  """W[k][n] = int8 of the low 8 bits of lane [k][n] of an N x N uint32 tile."""
  return tile.astype(np.int8)  # C cast: keeps the low 8 bits

def mmul(psum_old: np.ndarray, acts: np.ndarray, w: np.ndarray, acc) -> np.ndarray:
  """out[t][r][n] = (acc ? psum_old[t][r][n] : 0) + sum_k int8(acts[t][r][k]) * w[k][n], int32 wrap.
  psum_old and acts are uint32 (T, N, N) (psum_old unused when acc = 0), w is int8 (N, N)."""
  # |sum| <= 16 * 128 * 128 < 2^31, so int32 products and sums are exact; the add wraps in uint32
  prod = np.matmul(acts.astype(np.int8).astype(np.int32), w.astype(np.int32)).view(np.uint32)
  return prod + psum_old if acc else prod
