"""tinygrad's nn.Embedding on the SparseCore (backend/embedding.py, doc/backend.md "Embeddings"):
lookups whose rows are whole tiles run as EMB.CFG + EMB.BAG/EMB.FBAG behind a launch guard; an
index outside the table, a chip core (no SparseCore on the chip) or rows that are not whole tiles
run the generic program, with tinygrad's semantics (a row of zeros for an index out of range)."""
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
  assert not _uses_sparsecore(programs[-1:])


def test_rows_that_are_not_whole_tiles_run_the_generic_program(programs):
  table = np.arange(12 * 10, dtype=np.float32).reshape(12, 10)
  idx = np.array([0, 11, 5], dtype=np.int32)
  np.testing.assert_array_equal(_lookup(table, idx), table[idx])
  assert not _uses_sparsecore(programs)


def test_chip_cores_run_the_generic_program(monkeypatch):
  """The chip has no SparseCore on its nodes: on TINYTPU:1 the guard picks the generic program."""
  bundles = []
  real = runner.run_chip
  monkeypatch.setattr(runner, "run_chip", lambda items: (bundles.extend(b for b, _ in items.values()), real(items))[1])
  table = np.arange(40 * 16, dtype=np.int32).reshape(40, 16)
  idx = np.array([39, 0, 4], dtype=np.int32)
  np.testing.assert_array_equal(_lookup(table, idx, "TINYTPU:1"), table[idx])
  chiplaunch.flush()
  assert bundles and not _uses_sparsecore([b.program for b in bundles])


def test_embedding_on_the_rtl(monkeypatch, programs):
  monkeypatch.setenv("TINYTPU_SIM", "both")
  rng = np.random.default_rng(3)
  table = rng.integers(-1000, 1000, (50, 32)).astype(np.int32)
  idx = rng.integers(0, 50, 300).astype(np.int32)
  np.testing.assert_array_equal(_lookup(table, idx), table[idx])
  assert _uses_sparsecore(programs[-1:]) and backend_config().lanes == 16
