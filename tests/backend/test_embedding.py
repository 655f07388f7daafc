"""tinygrad's nn.Embedding on the SparseCore (backend/embedding.py, doc/backend.md "Embeddings"):
lookups whose rows are whole tiles run as EMB.CFG + EMB.BAG/EMB.FBAG behind a launch guard, on a
single-core device and on either chip core (the chip's SparseCore on node 3); an index outside the
table or rows that are not whole tiles run the generic program, with tinygrad's semantics (a row of
zeros for an index out of range)."""
import numpy as np
import pytest

import tinytpu  # noqa: F401  registers the device
from tinygrad import Tensor, nn
from tinytpu import isa
from tinytpu.backend import chiplaunch, runner
from tinytpu.backend.device import backend_config

EMB_OPS = {isa.OP["EMBBAG"], isa.OP["EMBBAGF"]}
OP_FIELD = isa.FIELDS["op"]


@pytest.fixture
def programs(monkeypatch):
  """The programs every single-core launch runs (golden or RTL)."""
  seen = []
  real = runner.run

  def spy(b, name="kernel"):
    seen.append(b.program)
    return real(b, name)
  monkeypatch.setattr(runner, "run", spy)
  return seen


def _uses_sparsecore(programs) -> bool:
  lo, width = OP_FIELD[0], OP_FIELD[1]
  return any((w >> lo) & ((1 << width) - 1) in EMB_OPS for p in programs for w in p)


def _lookup(table: np.ndarray, idx: np.ndarray, device="TINYTPU") -> np.ndarray:
  emb = nn.Embedding(*table.shape)
  emb.weight = Tensor(table, device=device).realize()
  return emb(Tensor(idx, device=device)).numpy()


def _expected(table, idx):
  ok = (idx >= 0) & (idx < len(table))
  return np.where(ok[..., None], table[np.clip(idx, 0, len(table) - 1)], 0).astype(table.dtype)


@pytest.mark.parametrize("dtype,V,D,shape", [(np.float32, 64, 16, (5,)), (np.int32, 100, 32, (3, 7)), (np.float32, 30, 256, (2, 4))])
def test_embedding_runs_on_the_sparsecore(programs, dtype, V, D, shape):
  rng = np.random.default_rng(V)
  table = (rng.standard_normal((V, D)) * 100).astype(dtype)
  idx = rng.integers(0, V, shape).astype(np.int32)
  got = _lookup(table, idx)
  np.testing.assert_array_equal(got, table[idx])
  assert _uses_sparsecore(programs[-1:])


def test_many_bags_in_several_commands(programs):
  """More than 255 lookups: commands of 240 bags (their index lists start on a tile); more than
  2^15 output tiles: the destination register is rebased (16-bit offsets)."""
  rng = np.random.default_rng(1)
  table = rng.standard_normal((17, 16)).astype(np.float32)
  idx = rng.integers(0, 17, 33_000).astype(np.int32)
  np.testing.assert_array_equal(_lookup(table, idx), table[idx])
  assert _uses_sparsecore(programs[-1:])


def test_index_outside_the_table_runs_the_generic_program(programs):
  rng = np.random.default_rng(2)
  table = rng.standard_normal((20, 16)).astype(np.float32)
  idx = np.array([3, -1, 19, 20, 7, 1 << 30], dtype=np.int32)
  np.testing.assert_array_equal(_lookup(table, idx), _expected(table, idx))
  np.testing.assert_array_equal(_lookup(table, idx, "PYTHON"), _expected(table, idx))  # tinygrad's own semantics
  assert not _uses_sparsecore(programs[-1:])


def test_rows_that_are_not_whole_tiles_run_the_generic_program(programs):
  table = np.arange(12 * 10, dtype=np.float32).reshape(12, 10)
  idx = np.array([0, 11, 5], dtype=np.int32)
  np.testing.assert_array_equal(_lookup(table, idx), table[idx])
  assert not _uses_sparsecore(programs)


def test_chip_cores_use_the_sparsecore(monkeypatch):
  """The chip has the SparseCore on node 3 (doc/chip.md): on TINYTPU:1 and TINYTPU:0 of the chip the
  guard picks the EMB.BAG program; an index outside the table still runs the generic one. On the
  golden chip even under make test's TINYTPU_TEST_SIM=both (the RTL run is the nightly test below)."""
  monkeypatch.setenv("TINYTPU_CHIP", "1")
  monkeypatch.setenv("TINYTPU_SIM", "golden")
  bundles = []
  real = runner.run_chip
  monkeypatch.setattr(runner, "run_chip", lambda items: (bundles.append([b.program for b, _ in items.values()]), real(items))[1])
  table = np.arange(40 * 16, dtype=np.int32).reshape(40, 16)
  idx = np.array([39, 0, 4], dtype=np.int32)
  for dev in ("TINYTPU:1", "TINYTPU:0"):
    np.testing.assert_array_equal(_lookup(table, idx, dev), table[idx])
    chiplaunch.flush()
    assert bundles and _uses_sparsecore(bundles[-1]), dev
  bad = np.array([3, 40], dtype=np.int32)
  np.testing.assert_array_equal(_lookup(table, bad, "TINYTPU:1"), _expected(table, bad))
  chiplaunch.flush()
  assert not _uses_sparsecore(bundles[-1])


@pytest.mark.nightly
def test_chip_core_lookup_on_the_rtl(monkeypatch):
  """The same on the chip's RTL (rtl/chip.sv, the SparseCore on node 3) and golden, compared: a
  lookup on core 1 and a bag sum on core 0, one launch each. Nightly, as tests/backend/test_multi.py's
  RTL runs: about 2 s, but it needs a chip build of the backend's VMEM size (5 minutes) that nothing
  else in `make test` builds."""
  monkeypatch.setenv("TINYTPU_CHIP", "1")
  monkeypatch.setenv("TINYTPU_SIM", "both")
  rng = np.random.default_rng(5)
  table = rng.integers(-1000, 1000, (30, 16)).astype(np.int32)
  idx = rng.integers(0, 30, 20).astype(np.int32)
  np.testing.assert_array_equal(_lookup(table, idx, "TINYTPU:1"), table[idx])
  ftable = rng.standard_normal((30, 16)).astype(np.float32)
  bags = rng.integers(0, 30, (9, 3)).astype(np.int32)
  want = ftable[bags[:, 0]] + ftable[bags[:, 1]] + ftable[bags[:, 2]]
  np.testing.assert_array_equal(_bag_sums(ftable, bags, "TINYTPU:0"), want)
  chiplaunch.flush()


def test_embedding_on_the_rtl(monkeypatch, programs):
  monkeypatch.setenv("TINYTPU_SIM", "both")
  rng = np.random.default_rng(3)
  table = rng.integers(-1000, 1000, (50, 32)).astype(np.int32)
  idx = rng.integers(0, 50, 300).astype(np.int32)
  np.testing.assert_array_equal(_lookup(table, idx), table[idx])
  assert _uses_sparsecore(programs[-1:])
  ftable = rng.standard_normal((50, 16)).astype(np.float32)
  bags = rng.integers(0, 50, (260, 3)).astype(np.int32)
  want = ftable[bags[:, 0]] + ftable[bags[:, 1]] + ftable[bags[:, 2]]  # (0 + r0) + r1 + r2 == (r0 + r1) + r2
  np.testing.assert_array_equal(_bag_sums(ftable, bags), want)
  assert _uses_sparsecore(programs[-1:]) and backend_config().lanes == 16


def _bag_sums(table, idx, device="TINYTPU"):
  emb = nn.Embedding(*table.shape)
  emb.weight = Tensor(table, device=device).realize()
  return emb(Tensor(idx, device=device)).sum(-2).numpy()


@pytest.mark.parametrize("dtype,V,D,bags,J", [(np.int32, 40, 16, 7, 3), (np.float32, 64, 32, 300, 5), (np.float32, 9, 16, 1, 12),
                                              (np.int32, 500, 48, 260, 16)])
def test_bag_sums_run_on_the_sparsecore(programs, dtype, V, D, bags, J):
  """emb(idx).sum(-2): the gather under a reduce, one EMB.BAG/EMB.FBAG bag per output row, exact
  (int32 wraps; fp32 in index order, as tinygrad's accumulator adds them)."""
  rng = np.random.default_rng(J)
  big = np.iinfo(np.int32).max // 2
  table = rng.integers(-big, big, (V, D)).astype(dtype) if dtype == np.int32 else rng.standard_normal((V, D)).astype(dtype)
  idx = rng.integers(0, V, (bags, J)).astype(np.int32)
  got = _bag_sums(table, idx)
  np.testing.assert_array_equal(got, _bag_sums(table, idx, "PYTHON"))  # tinygrad's UOp semantics, bit for bit
  if dtype == np.int32:
    want = table[idx].astype(np.int64).sum(1).astype(np.int32)  # wraps like int32 adds
  else:
    want = np.zeros((bags, D), np.float32)
    for j in range(J):
      want = want + table[idx[:, j]]
  np.testing.assert_array_equal(got, want)
  assert _uses_sparsecore(programs[-1:])


def test_bag_sum_of_negative_zeros_keeps_tinygrads_sign(programs):
  """tinygrad's accumulator starts at +0.0, so a bag of -0.0 rows sums to +0.0: a table holding
  -0.0 runs the generic program (the SparseCore's fold starts from the first row)."""
  table = np.full((4, 16), -0.0, dtype=np.float32)
  table[1] = 1.5
  idx = np.array([[0, 2], [1, 3]], dtype=np.int32)
  got = _bag_sums(table, idx)
  assert not np.signbit(got[0]).any() and (got[1] == 1.5).all()
  assert not _uses_sparsecore(programs[-1:])


def test_bag_sum_with_an_index_outside_the_table(programs):
  table = np.arange(10 * 16, dtype=np.int32).reshape(10, 16)
  idx = np.array([[1, 10], [-5, 2]], dtype=np.int32)
  np.testing.assert_array_equal(_bag_sums(table, idx), np.array([table[1], table[2]]))
  assert not _uses_sparsecore(programs[-1:])


def test_table_larger_than_vmem_refuses_what_the_sparsecore_cannot_run(programs):
  """A table larger than VMEM has no generic program (its lane loop would touch every row): the
  SparseCore runs the lookup, and an index outside the table is an error naming why, not a number."""
  V = backend_config().VMEM_TILES // 4 + 8  # rows of four tiles (tinygrad splits a one-hot reduce of 2^15 rows or more)
  table = np.arange(V * 64, dtype=np.int32).reshape(V, 64)
  np.testing.assert_array_equal(_lookup(table, np.array([V - 1, 0, 7], dtype=np.int32)), table[[V - 1, 0, 7]])
  assert _uses_sparsecore(programs[-1:])
  with pytest.raises(RuntimeError, match=r"launch guard fails \(an index outside the table\) and the generic program cannot run: "):
    _lookup(table, np.array([V, 0], dtype=np.int32))


def test_launch_guards_have_a_kind_the_device_knows():
  from tinytpu.backend import device
  assert set(device.GUARD_KINDS) == {"requant", "sparsecore"}
  with pytest.raises(RuntimeError, match="launch guard of unknown kind 'bogus'"):
    device._guard_kind({"kind": "bogus"})
