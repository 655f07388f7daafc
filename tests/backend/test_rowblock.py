"""Row windows by blocks (backend/rowblock.py) at the architecture's 1024 VMEM tiles: kernels whose
rows for one lane tile exceed VMEM (fp32 matmuls with long reduce ranges on the VPU, convolutions
with many input channels) stream the rows by blocks of their range's loop; exact against a
sequential float32 sum / torch, the RTL against golden."""
import numpy as np
import pytest

import tinytpu  # noqa: F401  registers the device
from tinygrad import Tensor
from tinygrad.helpers import Context
from tinytpu.backend import rowblock, rowwin
from tinytpu.backend.windows import Window

D = "TINYTPU"


@pytest.fixture
def row_blocks(monkeypatch):
  """(kernel, blocked lanes, [(slot, rows per block, rows)]) of every kernel planned with rows by blocks."""
  seen = []
  orig = rowblock.RowBlocks.plan_row_blocks
  def spy(self, uses, forms):
    ok = orig(self, uses, forms)
    if ok:
      seen.append((self.name, self.block, [(w.slot, w.block, w.rows) for w in self.windows.values() if w.block]))
    return ok
  monkeypatch.setattr(rowblock.RowBlocks, "plan_row_blocks", spy)
  return seen


def _sequential_matmul(a: np.ndarray, b: np.ndarray) -> np.ndarray:
  """float32 a @ b summed in k order, the product and the sum each rounded: tinygrad's reduce order
  (the resident plan's result too)."""
  acc = np.zeros((a.shape[0], b.shape[1]), dtype=np.float32)
  for k in range(a.shape[1]):
    acc = acc + a[:, k:k + 1] * b[k:k + 1, :]
  return acc


@pytest.mark.parametrize("m,k,n,lanes", [(4, 784, 100, (100, 112)), (2, 1024, 128, None)])
def test_fp32_matmul_whose_weights_exceed_vmem_streams_rows_by_blocks(row_blocks, vmem_1024, monkeypatch, m, k, n, lanes):
  """`(4, 784) @ (784, 100)` (an MNIST layer) on the VPU: per lane tile 784 rows of the weights, 2
  tiles each in 4 classes, more than VMEM; they come in blocks of k (the loop over k a block loop
  around the block's steps), double buffered. The output is the sequential float32 sum, bit for
  bit, on the RTL as on the golden model."""
  monkeypatch.setenv("TINYTPU_SIM", "both")
  rng = np.random.default_rng(21)
  a, b = rng.standard_normal((m, k)).astype(np.float32), rng.standard_normal((k, n)).astype(np.float32)
  with Context(PARALLEL=0):
    got = (Tensor(a, device=D) @ Tensor(b, device=D)).numpy()
  assert (got == _sequential_matmul(a, b)).all()
  assert len({(name, blk) for name, blk, _ in row_blocks}) == 1
  name, blk, ws = row_blocks[-1]
  assert blk == lanes
  slot, Rb, R = ws[0]
  assert R == k and Rb < k and [s for s, _, _ in ws] == [2]  # the weights (slot 2) by blocks, not whole


def test_two_buffers_by_blocks_of_one_loop(row_blocks, vmem_1024, monkeypatch):
  """`x.T @ y` of (600, 40) and (600, 36) fp32: r_40_36_600 reads both x[k * 40 + i] and y[k * 36 + j]
  as rows of k, two windows by blocks of the same loop (80 rows: 600 = 7 * 80 + 40), each with its
  own registers through the block loop (a window's temporaries at the block's end once took the
  other's registers). The sequential float32 sum, bit for bit, the RTL as golden."""
  monkeypatch.setenv("TINYTPU_SIM", "both")
  rng = np.random.default_rng(26)
  x, y = rng.standard_normal((600, 40)).astype(np.float32), rng.standard_normal((600, 36)).astype(np.float32)
  with Context(PARALLEL=0):
    got = (Tensor(x, device=D).T @ Tensor(y, device=D)).numpy()
  assert (got == _sequential_matmul(np.ascontiguousarray(x.T), y)).all()
  name, _, ws = row_blocks[-1]
  assert name == "r_40_36_600" and sorted(s for s, _, _ in ws) == [1, 2] and all(R == 600 and 600 % Rb for _, Rb, R in ws)


def test_padded_conv_reads_its_gated_input_rows_by_blocks(row_blocks, vmem_1024, monkeypatch):
  """A 3x3 fp32 convolution of 256 input channels with padding 1: its input reads are gated (the
  padding), per lane tile one row per input channel (256 rows, 1024 tiles: more than VMEM). The rows
  come by blocks; the gated-off lanes' addresses stay inside the rows and the gate selects 0."""
  import torch
  monkeypatch.setenv("TINYTPU_SIM", "both")
  rng = np.random.default_rng(22)
  x, w = rng.standard_normal((1, 256, 8, 8)).astype(np.float32), rng.standard_normal((2, 256, 3, 3)).astype(np.float32)
  with Context(PARALLEL=0):
    got = Tensor(x, device=D).conv2d(Tensor(w, device=D), padding=1).numpy()
  exp = torch.nn.functional.conv2d(torch.from_numpy(x).double(), torch.from_numpy(w).double(), padding=1).numpy()
  np.testing.assert_allclose(got, exp, rtol=1e-4, atol=1e-4)
  assert {name for name, _, _ in row_blocks} == {"r_2_8_8_256_3_3"}
  assert all(ws for _, _, ws in row_blocks)


def test_conv_weight_gradient_streams_rows_inside_the_image_loop(row_blocks, vmem_1024, monkeypatch):
  """tinygrad's test_large_input_conv2d weight gradient, on 2 images: r_2_16_5_2_2_60_63 reads
  x[b, ci, oy + ky, ox + kx] per lane tile (blocked lanes: one ci, the lanes ky and kx) as a row per
  value of oy inside the loop over the images b (its term moves the rows' HBM address per image),
  in blocks of 24 rows: 60 = 24 + 24 + 12, the last block shorter."""
  import torch
  monkeypatch.setenv("TINYTPU_SIM", "both")
  rng = np.random.default_rng(24)
  x, w = rng.standard_normal((2, 16, 64, 64)).astype(np.float32), rng.standard_normal((2, 16, 5, 2)).astype(np.float32)
  with Context(PARALLEL=0):
    gw = Tensor(x, device=D).conv2d(tw := Tensor(w, device=D)).sum().gradient(tw)[0].numpy()
  xt, wt = torch.from_numpy(x).double(), torch.from_numpy(w).double().requires_grad_()
  torch.nn.functional.conv2d(xt, wt).sum().backward()
  np.testing.assert_allclose(gw, wt.grad.numpy(), rtol=1e-5, atol=1e-3)
  name, lanes, ws = row_blocks[-1]
  assert name == "r_2_16_5_2_2_60_63" and lanes == (10, 16)
  assert [(R, 60 % Rb != 0) for _, Rb, R in ws] == [(60, True)]


def test_rows_shifted_into_their_tiles_by_an_outer_loop(row_blocks, vmem_1024, monkeypatch):
  """x (3, 2, 301, 100) summed over axes 0 and 2: r_2_100_3_301 reads x[b * 60200 + j * 30100 + k * 100 + n],
  rows of k inside the loop over b, whose term is not whole tiles (60200 = 3762.5 tiles): every
  image's rows start half a tile further in, and blocks of k (301 rows, not a multiple of the
  classes' period 4) start inside a tile too; the rows have room for the shift. The sum in order,
  bit for bit."""
  monkeypatch.setenv("TINYTPU_SIM", "both")
  x = np.random.default_rng(25).standard_normal((3, 2, 301, 100)).astype(np.float32)
  with Context(PARALLEL=0):
    got = Tensor(x, device=D).sum((0, 2)).numpy()
  exp = np.zeros((2, 100), dtype=np.float32)
  for b in range(3):
    for k in range(301):
      exp = exp + x[b, :, k, :]
  assert (got == exp).all()
  name, _, ws = row_blocks[-1]
  (slot, Rb, R), = ws
  assert name == "r_2_100_3_301" and R == 301 and Rb % 4 and 301 % Rb


PYTHON_CASES = {  # rows by blocks against tinygrad's own UOp semantics (the PYTHON device)
  "padded_conv_256ch": (lambda x, w: x.conv2d(w, padding=1), [(1, 256, 8, 8), (2, 256, 3, 3)], "r_2_8_8_256_3_3"),
  "rows_shifted_by_an_outer_loop": (lambda x: x.sum((0, 2)), [(3, 2, 301, 100)], "r_2_100_3_301"),
}


@pytest.mark.parametrize("case", list(PYTHON_CASES))
def test_rows_by_blocks_equal_tinygrads_python_device(case, row_blocks, vmem_1024):
  f, shapes, kernel = PYTHON_CASES[case]
  rng = np.random.default_rng(27)
  xs = [rng.standard_normal(s).astype(np.float32) for s in shapes]
  with Context(PARALLEL=0):
    got = f(*(Tensor(x, device=D) for x in xs)).numpy()
  exp = f(*(Tensor(x, device="PYTHON") for x in xs)).numpy()
  assert got.shape == exp.shape
  np.testing.assert_allclose(got, exp, rtol=1e-4, atol=1e-4)  # PYTHON runs tinygrad's upcast kernels: another fp32 sum order
  assert kernel in {name for name, _, ws in row_blocks if ws}


def test_kernels_whose_rows_fit_are_not_blocked(row_blocks, vmem_1024):
  """Rows by blocks are the last resort: a matmul whose rows fit keeps its plan."""
  rng = np.random.default_rng(23)
  a, b = rng.standard_normal((1, 256)).astype(np.float32), rng.standard_normal((256, 250)).astype(np.float32)
  np.testing.assert_allclose((Tensor(a, device=D) @ Tensor(b, device=D)).numpy(), a.astype(np.float64) @ b, rtol=1e-4, atol=1e-4)
  assert row_blocks == []


@pytest.mark.parametrize("c", [16, 100, 250, 36, 7 * 16 + 8])
def test_block_geometry_is_the_row_classes_of_fewer_rows(c):
  """A block of Rb rows has rowwin._row_classes' layout for Rb rows; when blocks can start inside a
  tile (Rb not a multiple of the classes' period, or an outer term not whole tiles) the rows have
  room for the shift: every element a block reads lies inside its row's tiles."""
  L, R, span = 16, 240, 40
  m = L // int(np.gcd(c % L, L)) if c % L else 1
  for outer in ((), ((24, None),)):
    w = Window(slot=0, tiles=0, rows=R, rcoef=c, span=span, outer=outer)
    for Rb in (m, 2 * m, 3 * m + 1, 7, R):
      P, classes, tiles, hs, vs = rowblock.block_geometry(w, Rb, L)
      shifted = bool(outer) or (c * Rb) % L != 0
      assert (P, classes, tiles) == rowwin.row_layout(c, span + (L - 1 if shifted else 0), Rb, L)[:3]
      for d in range(L if shifted else 1):  # the block's shift into its first tile
        for i in range(Rb):  # row i's elements d + c * i .. + span, from the class's HBM tile on
          h, v, _ = classes[i % m]
          first = h + (i // m) * hs
          assert first * L <= d + c * i and d + c * i + span < (first + P) * L
          # the element's place in the copy is the pitch's affine form (stream.row_form)
          assert (v + (i // m) * vs) * L + (c * i - first * L) + d == (P * L + c % L) * i + d


def test_an_index_with_one_range_in_two_terms_is_refused():
  """lin() keeps an index's uniform terms apart: a range in two of them has no single row stride, so
  its rows are not taken by blocks (a dict of the terms would keep one coefficient and read the
  wrong rows)."""
  r, q = object(), object()
  assert rowwin.terms_by_range([(64, r), (4, q)]) == {r: 64, q: 4}
  assert rowwin.terms_by_range([(64, r), (4, q), (16, r)]) is None
