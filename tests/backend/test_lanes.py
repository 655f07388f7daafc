"""Blocked lanes (backend/lanes.py) at the architecture's 1024 VMEM tiles: kernels whose lane tiles
would straddle an outer lane range (output blocks that are not whole tiles) run with every block
padded to whole tiles; exact against numpy / torch, the RTL against golden."""
import re

import numpy as np
import pytest

import tinytpu  # noqa: F401  registers the device
from tinygrad import Tensor
from tinygrad.helpers import Context
from tinytpu.backend import lanes, stream

D = "TINYTPU"


@pytest.fixture
def blocks(monkeypatch):
  """(kernel name, (B, Bp)) of every kernel lowered with blocked lanes."""
  seen = []
  orig = lanes.BlockedLanes.plan_blocked
  def spy(self, uses, forms):
    ok = orig(self, uses, forms)
    if ok:
      seen.append((self.name, self.block))
    return ok
  monkeypatch.setattr(lanes.BlockedLanes, "plan_blocked", spy)
  return seen


def test_einsum_blocks_of_1001_outputs(blocks, vmem_1024, monkeypatch):
  """tinygrad's test_einsum `pqrs,tuqvr->pstuv` (r_3_10_77_13_5_8): every 1001 outputs read all of b
  (2503 tiles); a lane tile holding the end of one block and the start of the next read both ends
  of it. Blocks of 1008 lanes: b comes in by table windows of a 63-chunk period."""
  monkeypatch.setenv("TINYTPU_SIM", "both")
  rng = np.random.default_rng(12)
  a, b = rng.standard_normal((3, 5, 8, 10)).astype(np.float32), rng.standard_normal((11, 7, 5, 13, 8)).astype(np.float32)
  with Context(PARALLEL=0):
    got = Tensor.einsum("pqrs,tuqvr->pstuv", Tensor(a, device=D), Tensor(b, device=D)).numpy()
  np.testing.assert_allclose(got, np.einsum("pqrs,tuqvr->pstuv", a.astype(np.float64), b), rtol=1e-4, atol=1e-4)
  assert set(blocks) == {("r_3_10_77_13_5_8", (1001, 1008))}  # (13, 16) would pad 3 lanes in 16


@pytest.mark.parametrize("m,k,n", [(3, 128, 200), (5, 64, 300)])
def test_fp32_matmul_rows_not_whole_tiles_block_by_output_row(blocks, sources, vmem_1024, m, k, n):
  """(m, k) @ (k, n) on the VPU with n not whole tiles: an output row per block, so no lane tile reads
  two rows' worth of the weights' columns; the weights by row classes (200: 2 classes, 300: 4)."""
  rng = np.random.default_rng(13)
  a, b = rng.standard_normal((m, k)).astype(np.float32), rng.standard_normal((k, n)).astype(np.float32)
  with Context(PARALLEL=0):
    got = (Tensor(a, device=D) @ Tensor(b, device=D)).numpy()
  np.testing.assert_allclose(got, a.astype(np.float64) @ b, rtol=1e-4, atol=1e-4)
  assert {blk for _, blk in blocks} == {(n, -(-n // 16) * 16)}
  src = next(s for s in sources if s.splitlines()[0].split()[2].startswith("r_"))
  assert "VSCATTER" in src and not re.search(r"^\s*VST ", src, re.M), "the blocked lanes are not the output's tiles"


def test_conv_whose_output_planes_are_not_whole_tiles(blocks, vmem_1024, monkeypatch):
  """tinygrad's test_large_input_conv2d shape, smaller: a 5x2 fp32 convolution of a (2, 8, 40, 40)
  input (1600 tiles) into 36 x 39 planes (1404 outputs, not whole tiles): a tile straddling two
  output channels read two bands of every input plane; blocked by output plane it reads one.
  The output's chunks share a tile at every plane boundary (read back, written in order)."""
  import torch
  monkeypatch.setenv("TINYTPU_SIM", "both")
  rng = np.random.default_rng(14)
  x, w = rng.standard_normal((2, 8, 40, 40)).astype(np.float32), rng.standard_normal((3, 8, 5, 2)).astype(np.float32)
  with Context(PARALLEL=0):
    got = Tensor(x, device=D).conv2d(Tensor(w, device=D)).numpy()
  exp = torch.nn.functional.conv2d(torch.from_numpy(x).double(), torch.from_numpy(w).double()).numpy()
  np.testing.assert_allclose(got, exp, rtol=1e-4, atol=1e-4)
  assert {blk for _, blk in blocks} == {(1404, 1408)}  # (39, 48): 9 padding lanes per row


def test_kernels_that_fit_are_not_blocked(blocks, vmem_1024):
  """Blocked lanes are the last resort: a kernel whose plain chunks fit keeps them."""
  rng = np.random.default_rng(15)
  a, b = rng.standard_normal((3, 20)).astype(np.float32), rng.standard_normal((20, 100)).astype(np.float32)
  np.testing.assert_allclose((Tensor(a, device=D) @ Tensor(b, device=D)).numpy(), a.astype(np.float64) @ b, rtol=1e-4, atol=1e-4)
  assert blocks == []


def test_block_candidates_innermost_first_and_padding_bounded():
  """(B, Bp) per split of the lane ranges, the least padding first; B whole tiles or padded past
  BLOCK_PAD_MAX x is no candidate."""
  class K(lanes.BlockedLanes):
    L = 16
    extents = [4, 6, 60, 63]
  assert K().block_candidates() == [(22680, 22688), (3780, 3792), (63, 64)]
  K.extents = [7, 3, 16]
  assert K().block_candidates() == []  # 16 and 48 are whole tiles
  K.extents = [9, 5]
  assert K().block_candidates() == []  # 5 outputs in 16 lanes: more than 2x padding


def test_block_chunks_stay_in_a_block_or_take_whole_blocks():
  """A chunk of a blocked layout divides a block's tiles or is whole blocks (never straddling a
  block boundary), at most CHUNK_MAX tiles."""
  class K(lanes.BlockedLanes):
    L = 16
  assert K().block_chunks(16 * 63) == [1008, 504, 252, 126, 63, 21, 9, 7, 3, 1]
  assert max(K().block_chunks(16 * 1500)) <= stream.CHUNK_MAX and 1500 not in K().block_chunks(16 * 1500)


def test_batched_matmul_gradient_reads_450_rows_through_blocks(blocks, vmem_1024, monkeypatch):
  """tinygrad's test_broadcastdot backward: y's gradient r_45_65_450 reads x (10, 45, 65) as 450 rows
  65 elements apart for every output; blocked by output row (65 -> 80 lanes), x by row classes
  (928 tiles) and the output through a table window whose starts repeat every 16 blocks (80 chunks:
  its last windows reach into the guard rather than moving back, which would break the period)."""
  monkeypatch.setenv("TINYTPU_SIM", "both")
  rng = np.random.default_rng(16)
  x, y = rng.standard_normal((10, 45, 65)).astype(np.float32), rng.standard_normal((65, 45)).astype(np.float32)
  with Context(PARALLEL=0):
    tx, ty = Tensor(x, device=D), Tensor(y, device=D)
    gx, gy = (tx @ ty).sum().gradient(tx, ty)
    Tensor.realize(gx, gy)
  np.testing.assert_allclose(gy.numpy(), np.broadcast_to(x.astype(np.float64).sum((0, 1))[:, None], (65, 45)), rtol=1e-4, atol=1e-3)
  np.testing.assert_allclose(gx.numpy(), np.broadcast_to(y.astype(np.float64).sum(1), (10, 45, 65)), rtol=1e-4, atol=1e-4)
  assert ("r_45_65_450", (65, 80)) in blocks
