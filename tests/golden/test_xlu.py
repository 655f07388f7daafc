"""golden/xlu.py against per-lane Python formulations of architecture.md §4.4.

Seeded: TINYTPU_SEED=<n> reproduces a run (the seed is in every failure message)."""
import os

import numpy as np
import pytest

from tinytpu import isa
from tinytpu.golden import xlu

SEED = int(os.environ.get("TINYTPU_SEED", "20240601"))
print(f"test_xlu seed {SEED}")
M = 0xFFFFFFFF
SHAPES = [(4, 4), (8, 8), (16, 16), (3, 4, 4), (2, 8, 8)]

def rand_tile(rng, shape): return rng.integers(0, 1 << 32, shape, dtype=np.uint32)

def per_tile(a, f):
  """Apply f(tile as nested lists, tile index) to every N x N tile of a batched array."""
  n = a.shape[-1]
  tiles = a.reshape(-1, n, n).tolist()
  return np.array([f(t, i) for i, t in enumerate(tiles)], np.uint32).reshape(a.shape)

def ks(n):  # every rotation in [-2N-1, 2N+1], plus huge and register-like (unsigned) amounts
  return list(range(-2 * n - 1, 2 * n + 2)) + [(1 << 31) - 1, -(1 << 31), M, M - 2, 1 << 20]

def _check(got, want, what):
  assert got.dtype == np.uint32 and got.shape == want.shape, f"{what}: {got.dtype} {got.shape}"
  assert np.array_equal(got, want), f"{what} (seed {SEED})\ngot\n{got}\nwant\n{want}"

@pytest.mark.parametrize("shape", SHAPES)
def test_rotations(shape):
  rng = np.random.default_rng([SEED, 1, *shape])
  a = rand_tile(rng, shape)
  n = shape[-1]
  for k in ks(n):
    # Python's % is the mathematical mod for negative k; an unsigned register value equals its
    # signed value mod N because N divides 2^32
    want_rot = per_tile(a, lambda t, _: [[t[r][(c + k) % n] for c in range(n)] for r in range(n)])
    want_srot = per_tile(a, lambda t, _: [[t[(r + k) % n][c] for c in range(n)] for r in range(n)])
    _check(xlu.xrot(a, k), want_rot, f"xrot k={k}")
    _check(xlu.xsrot(a, k), want_srot, f"xsrot k={k}")
    _check(xlu.xrot(a, np.uint32(k & M)), want_rot, f"xrot k={k & M:#x} unsigned")
    _check(xlu.OPS["XROT"](a, None, k, 0, 0), want_rot, f"OPS XROT k={k}")
    _check(xlu.OPS["XROTS"](a, None, k, 0, 0), want_rot, f"OPS XROTS k={k}")
    _check(xlu.OPS["XSROT"](a, None, k, 0, 0), want_srot, f"OPS XSROT k={k}")
    _check(xlu.OPS["XSROTS"](a, None, k, 0, 0), want_srot, f"OPS XSROTS k={k}")
  # rotating by 1 N times is the identity, by N/2 twice too
  x = a
  for _ in range(n): x = xlu.xrot(x, 1)
  _check(x, a, "xrot by 1, N times")
  _check(xlu.xsrot(xlu.xsrot(a, n // 2), -n // 2), a, "xsrot there and back")

@pytest.mark.parametrize("shape", SHAPES)
def test_broadcasts(shape):
  rng = np.random.default_rng([SEED, 2, *shape])
  a = rand_tile(rng, shape)
  n = shape[-1]
  for i in range(n):
    want_col = per_tile(a, lambda t, _: [[t[r][i]] * n for r in range(n)])
    want_row = per_tile(a, lambda t, _: [list(t[i]) for _ in range(n)])
    _check(xlu.xbcol(a, i), want_col, f"xbcol c0={i}")
    _check(xlu.xbrow(a, i), want_row, f"xbrow r0={i}")
    _check(xlu.OPS["XBCOL"](a, None, 0, 0, i), want_col, f"OPS XBCOL c0={i}")
    _check(xlu.OPS["XBROW"](a, None, 0, i, 0), want_row, f"OPS XBROW r0={i}")
    for j in (0, n - 1 - i, i):
      want = per_tile(a, lambda t, _: [[t[i][j]] * n for _ in range(n)])
      _check(xlu.xbscalar(a, i, j), want, f"xbscalar r0={i} c0={j}")
      _check(xlu.OPS["XBSCALAR"](a, None, 0, i, j), want, f"OPS XBSCALAR r0={i} c0={j}")

@pytest.mark.parametrize("shape", SHAPES)
def test_transpose(shape):
  rng = np.random.default_rng([SEED, 3, *shape])
  a = rand_tile(rng, shape)
  n = shape[-1]
  want = per_tile(a, lambda t, _: [[t[c][r] for c in range(n)] for r in range(n)])
  got = xlu.xtrans(a)
  _check(got, want, "xtrans")
  assert got.flags.c_contiguous
  _check(xlu.OPS["XTRANS"](a, None, 0, 0, 0), want, "OPS XTRANS")
  _check(xlu.xtrans(got), a, "xtrans twice")

@pytest.mark.parametrize("shape", SHAPES)
def test_shuffle(shape):
  rng = np.random.default_rng([SEED, 4, *shape])
  a = rand_tile(rng, shape)
  n = shape[-1]
  idx_tiles = [
    rand_tile(rng, shape),                                           # any 32-bit index: mod N*N
    rng.integers(0, n * n, shape, dtype=np.uint32),                  # in range
    np.broadcast_to((np.arange(n * n, dtype=np.uint32)[::-1]).reshape(n, n), shape).copy(),  # flip
    (np.broadcast_to(np.arange(n * n, dtype=np.int64).reshape(n, n), shape) - n * n).astype(np.uint32),  # negative as int32
    np.full(shape, M, np.uint32),                                    # 0xFFFFFFFF mod N*N = N*N - 1
  ]
  for vi in idx_tiles:
    flat_idx = vi.reshape(-1, n, n).tolist()
    want = per_tile(a, lambda t, ti: [[t[(flat_idx[ti][r][c] % (n * n)) // n][(flat_idx[ti][r][c] % (n * n)) % n]
                                       for c in range(n)] for r in range(n)])
    _check(xlu.xshuf(a, vi), want, f"xshuf idx={vi.ravel()[:8]}...")
    _check(xlu.OPS["XSHUF"](a, vi, 0, 0, 0), want, "OPS XSHUF")
  # the identity permutation and a transpose written as a shuffle
  ident = np.broadcast_to(np.arange(n * n, dtype=np.uint32).reshape(n, n), shape).copy()
  _check(xlu.xshuf(a, ident), a, "xshuf identity")
  _check(xlu.xshuf(a, np.ascontiguousarray(np.swapaxes(ident, -1, -2))), xlu.xtrans(a), "xshuf as transpose")

def test_ops_cover_isa_and_leave_inputs_alone():
  assert set(xlu.OPS) == set(isa.XLU_FNS)
  rng = np.random.default_rng([SEED, 5])
  a = rand_tile(rng, (2, 4, 4))
  vi = rand_tile(rng, (2, 4, 4))
  keep_a, keep_vi = a.copy(), vi.copy()
  for name, f in xlu.OPS.items():
    for k in (0, 3):  # k = 0 / r0 = c0 = 0 must still return a fresh array
      out = f(a, vi, k, k, k)
      assert out.dtype == np.uint32 and out.shape == a.shape, name
      assert not np.shares_memory(out, a) and not np.shares_memory(out, vi), f"{name} shares memory with an input"
    assert np.array_equal(a, keep_a) and np.array_equal(vi, keep_vi), f"{name} mutated an input"
