"""The SparseCore (EMB.BAG, EMB.FBAG, EMB.WAIT, EMB.CFG; doc/sparsecore.md) on the RTL co-simulation
against the golden interpreter: bag sizes 1 .. 40 (index lists over several tiles, a partial last
tile), row widths 1 .. EMB_W_MAX, repeated indices, int32 wrap and fp32 specials, lookups next to
DMAs in both orders (the interlock), back-to-back lookups, the traps with their pcs (every HBM range
and an out-of-range index, nothing written), and a slow narrow HBM (back-pressure on the
SparseCore's requests and the arbiter)."""
import numpy as np
import pytest

from tinytpu import asm, bundle, cosim, isa, randemb
from tinytpu.config import DEFAULT, Config
from tinytpu.golden import interp

N = DEFAULT.N
RNG = np.random.default_rng(20261203)
SLOW = Config(HBM_LATENCY=37, HBM_BW_NUM=1, HBM_BW_DEN=3)


@pytest.fixture(scope="module", autouse=True)
def _built():
  cosim.build(DEFAULT)


def check(b: bundle.Bundle, cfg=DEFAULT) -> bundle.Result:
  rtl, gold = cosim.run_bundle(b, cfg), interp.run(b)
  diffs = bundle.diff_results(rtl, gold)
  assert not diffs, "RTL != golden:\n  " + "\n  ".join(diffs[:10]) + "\n" + bundle.format_result(rtl)[:3000]
  return rtl


def table(rows, width, fp, cfg=DEFAULT):
  L = cfg.N * cfg.N
  if fp:
    t = RNG.standard_normal((rows, width * L)).astype(np.float32)
    m = RNG.random(t.shape) < .03
    t[m] = RNG.choice(np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1e-45, 3.4e38], np.float32), m.sum())
    return t.view(np.uint32).reshape(rows, width, cfg.N, cfg.N)
  return RNG.integers(0, 1 << 32, (rows, width, cfg.N, cfg.N), dtype=np.uint64).astype(np.uint32)


@pytest.mark.parametrize("fp", [False, True])
@pytest.mark.parametrize("width,bag,bags", [(1, 1, 1), (1, 16, 4), (4, 16, 8), (3, 5, 7), (2, 40, 3), (isa.EMB_W_MAX, 3, 2), (1, 1, 255)])
def test_lookup_matches_golden(fp, width, bag, bags):
  rows = int(RNG.integers(1, 50))
  ind = RNG.integers(0, rows, bags * bag)
  if bag > 2: ind[1::3] = ind[0]  # repeated indices
  r = check(randemb.bag_bundle(table(rows, width, fp), ind, bag, fp, tbase=int(RNG.integers(0, 1000))))
  assert r.status == "ok"


@pytest.mark.parametrize("n", [1, N * N - 1, N * N + 3])
def test_lanes_past_the_index_list_are_not_indices(n):
  """The last index tile's lanes past the list hold values outside the table: no trap, the bags
  equal golden (a mutant checking one lane too many, sparsecore.sv's index check, survived the
  random lockstep: its index tiles were zero-padded)."""
  t = table(9, 1, False)
  r = check(randemb.bag_bundle(t, RNG.integers(0, 9, n), 1, False, tbase=100, pad=0x7FFFFFFF))
  assert r.status == "ok"


def test_back_to_back_and_next_to_dma():
  """Two lookups in a row, a DMA.OUT of a new index tile right before the second (the lookup waits
  for it), a DMA.IN of the pooled rows right after (it waits for the SparseCore)."""
  t = table(20, 2, False)
  ind = RNG.integers(0, 20, 32)
  extra = """
  LI s1, 0
  LI s2, 20
  EMB.CFG s1, s2, 2, 8
  LI s5, 500
  EMB.BAG [s5 + 0], [s0 + 40], 4
  VLD v1, [s0 + 0]
  DMA.OUT [s0 + 41], [s0 + 0], 1
  EMB.FBAG [s5 + 8], [s0 + 41], 2
  DMA.IN [s0 + 10], [s5 + 0], 12
  """
  b = randemb.bag_bundle(t, ind, 16, False, extra=extra, dst=600)
  b.vmem[0] = (RNG.integers(0, 20, (N, N))).astype(np.uint32)
  b.dumps += [("vmem", 10, 12), ("hbm", 500, 12)]
  check(b)


# a one-cycle HBM is a co-sim build of its own: nightly (the slow one shares test_dma's build)
@pytest.mark.parametrize("cfg", [SLOW, pytest.param(Config(HBM_LATENCY=1), marks=pytest.mark.nightly)], ids=["slow", "latency1"])
def test_other_hbm_timing(cfg):
  cosim.build(cfg)
  for fp in (False, True):
    t = table(30, 3, fp, cfg)
    check(randemb.bag_bundle(t, RNG.integers(0, 30, 48), 6, fp, cfg), cfg)


@pytest.mark.parametrize("text,trap,pc", [
  ("LI s1, 1048570\nLI s2, 7\nEMB.CFG s1, s2, 1, 2\nEMB.BAG [s0 + 100], [s0 + 50], 1", "hbm_out_of_range", 3),
  ("LI s1, 10\nLI s2, 7\nEMB.CFG s1, s2, 1, 2\nEMB.BAG [s0 + 12], [s0 + 50], 1", "hbm_out_of_range", 3),
  ("LI s1, 10\nLI s2, 7\nEMB.CFG s1, s2, 1, 16\nLI s3, 1048575\nEMB.BAG [s0 + 100], [s3 + 0], 2", "hbm_out_of_range", 4),
  ("LI s1, 10\nLI s2, 7\nEMB.CFG s1, s2, 2, 16\nLI s3, 1048573\nEMB.FBAG [s3 + 0], [s0 + 50], 2", "hbm_out_of_range", 4),
  ("LI s1, 10\nLI s2, 7\nEMB.CFG s1, s2, 1, 16\nEMB.BAG [s0 + 51], [s0 + 50], 2", "hbm_out_of_range", 3),
  ("LI s1, 10\nLI s2, 7\nEMB.CFG s1, s2, 1, 3\nEMB.BAG [s0 + 100], [s0 + 50], 5\nVFILL v1, 3\nVST v1, [s0 + 0]", "emb_index_out_of_range", 3),
  ("EMB.BAG [s0 + 100], [s0 + 50], 1", "emb_index_out_of_range", 0),
])
def test_traps(text, trap, pc):
  src = text + "\nHALT\n.hbm 50 " + " ".join(str(int(x)) for x in [1, 2, 3, 4, 5, 6, 0, 1, 2, 3, 4, 5, 6, 7, 0, 1]) + \
    "\n.hbm 51 " + " ".join(["1"] * 16) + "\n.dump hbm 100 4\n.dump vmem 0 1\n"
  r = check(asm.assemble_bundle(src))
  assert (r.status, r.trap, r.pc) == ("trap", trap, pc)


def test_random_mixes():
  for it in range(6):
    fp = bool(it % 2)
    rows, width, bag = int(RNG.integers(1, 64)), int(RNG.integers(1, 5)), int(RNG.integers(1, 20))
    bags = int(RNG.integers(1, 12))
    ind = RNG.integers(0, rows, bags * bag)
    check(randemb.bag_bundle(table(rows, width, fp), ind, bag, fp, tbase=int(RNG.integers(0, 1 << 19))))
