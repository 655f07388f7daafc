"""golden/sparsecore.py (EMB.BAG, EMB.FBAG) against an independent numpy formulation, and the
EMB instructions through the interpreter: bag sizes, row widths, repeated indices, int and fp
(-0, subnormals, infinities, NaN), every trap with its pc, nothing written by a trapping lookup.

Seeded: TINYTPU_SEED=<n> reproduces a run (the seed is in every failure message)."""
import os

import numpy as np
import pytest

from tinytpu import asm, randemb
from tinytpu.config import DEFAULT, Config
from tinytpu.golden import interp, sparsecore

SEED = int(os.environ.get("TINYTPU_SEED", "20261202"))


def table_of(rng, rows, width, N, fp):
  E = width * N * N
  if fp:
    vals = rng.standard_normal((rows, E)).astype(np.float32) * np.float32(rng.choice([1e-3, 1.0, 1e30]))
    special = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1e-45, -1e-45, 3.4e38], np.float32)
    mask = rng.random((rows, E)) < .05
    vals[mask] = rng.choice(special, mask.sum())
    return vals
  return rng.choice([rng.integers(-1 << 31, 1 << 31, (rows, E)), rng.integers(-5, 6, (rows, E))]).astype(np.int32)


def run_lookup(table, ind, bag, fp, N=4, **kw):
  cfg = DEFAULT if N == DEFAULT.N else Config(N=N)
  rows, E = table.shape
  width = E // (N * N)
  tiles = table.view(np.uint32).reshape(rows, width, N, N)
  res = interp.run(randemb.bag_bundle(tiles, ind, bag, fp, cfg, **kw))
  return res


def expect(table, ind, bag, fp):
  want = sparsecore.reference(table, np.asarray(ind), bag, fp)
  return want.view(np.uint32)


def same(got, want, fp):
  """Bit equality, any NaN equal to the canonical NaN (the golden canonicalises, numpy may not)."""
  g, w = got.reshape(-1).view(np.uint32), want.reshape(-1).view(np.uint32)
  if fp:
    wn = np.isnan(w.view(np.float32))
    assert (g[wn] == 0x7FC00000).all()
    return np.array_equal(g[~wn], w[~wn])
  return np.array_equal(g, w)


@pytest.mark.parametrize("fp", [False, True])
@pytest.mark.parametrize("N", [2, 4, 8])
def test_bags_against_numpy(fp, N):
  rng = np.random.default_rng([SEED, N, fp])
  for it in range(12):
    rows, width = int(rng.integers(1, 40)), int(rng.integers(1, 5))
    bag, bags = int(rng.choice([1, 2, 3, 7, 16, 33])), int(rng.integers(1, 9))
    table = table_of(rng, rows, width, N, fp)
    ind = rng.integers(0, rows, bags * bag)
    if rng.random() < .5: ind[::2] = ind[0]  # repeated indices
    res = run_lookup(table, ind, bag, fp, N)
    assert res.status == "ok", (res, SEED)
    (_, _, got), = [d for d in res.dumps if d[0] == "hbm"]
    assert same(got, expect(table, ind, bag, fp), fp), f"N={N} fp={fp} it={it} seed {SEED}"


def test_fp_order_is_a_left_fold():
  # 1 + 2^-24 + 2^-24 in that order stays 1 (each add rounds), the other way round it would be 1 + 2^-23
  t = np.zeros((3, 16), np.float32)
  t[0], t[1], t[2] = 1.0, 2.0 ** -24, -0.0
  res = run_lookup(t, [0, 1, 1, 2, 2, 2], 3, True)
  got = res.dumps[-1][2].reshape(2, 16).view(np.float32)
  assert got[0, 0] == 1.0 and np.signbit(got[1, 0]), got  # -0 + -0 + -0 keeps its sign
  res = run_lookup(t, [1, 1, 0], 3, True)
  assert res.dumps[-1][2].reshape(-1).view(np.float32)[0] == np.float32(1.0) + np.float32(2.0 ** -23)


def test_int_wraps():
  t = np.full((2, 16), 0x7FFFFFFF, np.uint32).view(np.int32)
  res = run_lookup(t, [0, 1, 1], 3, False)
  assert (res.dumps[-1][2].reshape(-1).view(np.int32) == np.int32(0x7FFFFFFD)).all()


@pytest.mark.parametrize("bad", [-1, 10, 1 << 31, 0x7FFFFFFF])
def test_index_out_of_range_traps_and_writes_nothing(bad):
  t = np.arange(10 * 16, dtype=np.int32).reshape(10, 16)
  res = run_lookup(t, [1, 2, bad, 3], 2, False)
  assert (res.status, res.trap, res.pc) == ("trap", "emb_index_out_of_range", 5)
  assert not res.dumps[-1][2].any()


@pytest.mark.parametrize("tb,rows,idx,dst,B,why", [
  ((1 << 20) - 10, 11, 20, 40, 1, "table past the top"),
  (-1, 2, 20, 40, 1, "table below 0"),
  (0, 10, (1 << 20) - 1, 40, 2, "index list past the top (2 bags of 16: 2 tiles)"),
  (0, 10, -1, 40, 1, "index list below 0"),
  (0, 10, 20, (1 << 20) - 1, 2, "destination past the top"),
  (0, 10, 20, 5, 1, "destination on the table"),
  (0, 10, 20, 21, 2, "destination on the index list"),
])
def test_hbm_ranges_trap(tb, rows, idx, dst, B, why):
  text = f"LI s1, {tb}\nLI s2, {rows}\nEMB.CFG s1, s2, 1, 16\nLI s3, {idx}\nLI s4, {dst}\nEMB.BAG [s4 + 0], [s3 + 0], {B}\nHALT"
  res = interp.run(asm.assemble_bundle(text))
  assert (res.status, res.trap, res.pc) == ("trap", "hbm_out_of_range", 5), why


def test_cfg_defaults_and_reserved_fields():
  # after reset the table is (0, 0 rows, 1, 1): any lookup's index is out of range
  res = interp.run(asm.assemble_bundle("EMB.BAG [s0 + 8], [s0 + 4], 1\nHALT"))
  assert (res.trap, res.pc) == ("emb_index_out_of_range", 0)
  with pytest.raises(ValueError):
    asm.assemble("EMB.CFG s1, s2, 17, 1")   # wider than EMB_W_MAX
  with pytest.raises(ValueError):
    asm.assemble("EMB.BAG [s1 + 0], [s2 + 0], 0")
