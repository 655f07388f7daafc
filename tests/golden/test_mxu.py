"""golden/mxu.py against a Python-int triple loop of architecture.md §4.5.

Seeded: TINYTPU_SEED=<n> reproduces a run (the seed is in every failure message)."""
import os

import numpy as np
import pytest

from tinytpu.golden import mxu

SEED = int(os.environ.get("TINYTPU_SEED", "20240601"))
print(f"test_mxu seed {SEED}")
M = 0xFFFFFFFF

def i8(x): return ((x & 0xFF) ^ 0x80) - 0x80

def mmul_ref(old, acts, wtile, acc):
  """Nested lists: old/acts (T, N, N) unsigned lanes, wtile (N, N) unsigned lanes (as in VMEM)."""
  n = len(wtile)
  out = []
  for t in range(len(acts)):
    out.append([[((old[t][r][c] if acc else 0) + sum(i8(acts[t][r][k]) * i8(wtile[k][c]) for k in range(n))) & M
                 for c in range(n)] for r in range(n)])
  return out

def lanes(rng, shape, kind):
  if kind == "int8": return (rng.integers(-128, 128, shape) & M).astype(np.uint32)
  if kind == "extreme": return (rng.choice([-128, 127, -1, 0, 1], shape) & M).astype(np.uint32)
  return rng.integers(0, 1 << 32, shape, dtype=np.uint32)  # out of int8 range: only the low 8 bits count

@pytest.mark.parametrize("n", [4, 8, 16])
def test_weights(n):
  rng = np.random.default_rng([SEED, 1, n])
  for kind in ("int8", "extreme", "wide"):
    tile = lanes(rng, (n, n), kind)
    w = mxu.weights(tile)
    assert w.dtype == np.int8 and w.shape == (n, n)
    assert w.tolist() == [[i8(x) for x in row] for row in tile.tolist()], f"{kind} (seed {SEED})"
  edge = np.array([0, 0x7F, 0x80, 0xFF, 0x100, 0x17F, 0x180, M, 0x80000000, 0x7FFFFFFF, 1, 0xFFFFFF01, 0x12345678, 0xAB, 0x55, 2], np.uint32)
  w = mxu.weights(np.resize(edge, (n, n)))
  assert w.ravel()[:16].tolist() == [0, 127, -128, -1, 0, 127, -128, -1, 0, -1, 1, 1, 0x78, -85, 0x55, 2]

@pytest.mark.parametrize("n", [4, 8, 16])
@pytest.mark.parametrize("T", [1, 2, 3, 4, 5])
def test_mmul_random(n, T):
  rng = np.random.default_rng([SEED, 2, n, T])
  for akind, wkind in (("int8", "int8"), ("extreme", "extreme"), ("wide", "wide"), ("int8", "wide")):
    acts = lanes(rng, (T, n, n), akind)
    wtile = lanes(rng, (n, n), wkind)
    old = rng.integers(0, 1 << 32, (T, n, n), dtype=np.uint32)
    keep = (acts.copy(), old.copy())
    for acc in (0, 1):
      got = mxu.mmul(old, acts, mxu.weights(wtile), acc)
      assert got.dtype == np.uint32 and got.shape == (T, n, n)
      want = mmul_ref(old.tolist(), acts.tolist(), wtile.tolist(), acc)
      assert got.tolist() == want, f"n={n} T={T} acts={akind} w={wkind} acc={acc} (seed {SEED})"
      assert not np.shares_memory(got, old) and not np.shares_memory(got, acts)
    assert np.array_equal(acts, keep[0]) and np.array_equal(old, keep[1]), "mmul mutated an input"

@pytest.mark.parametrize("n", [4, 8, 16])
def test_mmul_wraps_large_accumulators(n):
  rng = np.random.default_rng([SEED, 3, n])
  T = 3
  # all products at their maximum (-128 * -128) on top of accumulators at INT_MAX / INT_MIN / -1
  acts = np.full((T, n, n), 0x80, np.uint32)
  w = mxu.weights(np.full((n, n), 0xFFFFFF80, np.uint32))
  old = np.stack([np.full((n, n), v & M, np.uint32) for v in ((1 << 31) - 1, -(1 << 31), -1)])
  got = mxu.mmul(old, acts, w, 1)
  s = n * 128 * 128
  assert got[:, 0, 0].tolist() == [((1 << 31) - 1 + s) & M, (-(1 << 31) + s) & M, (s - 1) & M]
  assert got.view(np.int32)[0, 0, 0] < 0, "INT_MAX + positive must wrap negative"
  # and the most negative sums (-128 * 127) pushing INT_MIN over
  acts = np.full((T, n, n), 0x7F, np.uint32)
  got = mxu.mmul(old, acts, w, 1)
  assert got.view(np.int32)[1, 0, 0] > 0, "INT_MIN + negative must wrap positive"
  # chains of accumulating MMULs equal one Python sum, wrapped once at the end
  acc_state = rng.integers(0, 1 << 32, (T, n, n), dtype=np.uint32)
  total = [[[x for x in row] for row in tile] for tile in acc_state.tolist()]
  for _ in range(4):
    a = lanes(rng, (T, n, n), "wide")
    wt = lanes(rng, (n, n), "extreme")
    acc_state = mxu.mmul(acc_state, a, mxu.weights(wt), 1)
    total = mmul_ref(total, a.tolist(), wt.tolist(), 1)
  assert acc_state.tolist() == total, f"accumulation chain (seed {SEED})"

def test_mmul_identity_and_acc0_ignores_old():
  n, T = 4, 2
  acts = (np.arange(T * n * n).reshape(T, n, n) - 16 & M).astype(np.uint32)
  eye = mxu.weights(np.eye(n, dtype=np.uint32))
  garbage = np.full((T, n, n), 0xDEADBEEF, np.uint32)
  got = mxu.mmul(garbage, acts, eye, 0)
  assert got.view(np.int32).tolist() == [[[i8(x) for x in row] for row in t] for t in acts.tolist()]
  got = mxu.mmul(garbage, acts, eye, 1)
  assert got.tolist() == [[[(0xDEADBEEF + i8(x)) & M for x in row] for row in t] for t in acts.tolist()]
