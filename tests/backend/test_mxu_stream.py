"""GEMMs whose operands do not fit in VMEM run on the MXU with the operands streaming from HBM by K
blocks (backend/mxu_stream.py), at the architecture's VMEM (1024 tiles): exact against numpy, the
RTL against the golden model (TINYTPU_SIM=both), every way an operand reaches the staging copies
(rows, kb windows, resident), implicit-GEMM convolutions (separable im2col tables), and the int8
range check."""
import numpy as np
import pytest

import tinytpu  # noqa: F401  registers the device
from tinygrad import Tensor
from tinytpu.backend import mxu_stream, runner


@pytest.fixture
def streamed(monkeypatch, request):
  """The operand modes of every streamed GEMM lowered in the test. Unless the test is marked
  `cheapest`, the planner takes the first plan that fits in the order it lists them (own
  orientation, then transposed; row chunks, column chunks, band windows), not the cheapest by
  its estimate, so each case keeps exercising the operand modes its table names."""
  if request.node.get_closest_marker("cheapest") is None:
    monkeypatch.setattr(mxu_stream.MxuStream, "_plan_cycles", lambda self, p: 0)
  seen = []
  plan = mxu_stream.MxuStream.adopt_mxu_stream
  def spy(self, forms, uses):
    ok = plan(self, forms, uses)
    if ok:
      p = self.mstream
      seen.append((p.A.mode, p.B.mode, p.mc, p.nc, p.A.ktable is not None, p.B.ktable is not None, p.mask,
                   bool(p.A.gated or p.B.gated), p.A.classes, p.B.classes))
    return ok
  monkeypatch.setattr(mxu_stream.MxuStream, "adopt_mxu_stream", spy)
  return seen


def _i8(rng, *shape):
  return rng.integers(-128, 128, shape).astype(np.int8)


# (M, K, Nc, layout): "ab" both row-major, "aT" A given transposed (K x M), "bT" B given transposed (Nc x K)
CASES = [
  ((64, 64, 64, "ab"), ("rows", "kb")),
  ((128, 96, 32, "ab"), ("rows", "kb")),       # several chunks
  ((96, 128, 10, "ab"), ("rows", "resident")),  # columns not a multiple of N: B whole in VMEM
  ((64, 48, 64, "aT"), ("kb", "kb")),           # A contiguous along m: block kb's N rows' bounding box, like B
  ((64, 80, 48, "bT"), ("rows", "rows")),       # B contiguous along k: one tile per weight row
  ((64, 32, 48, "bT"), ("rows", "resident")),   # ... and small: whole in VMEM
  ((1, 400, 120, "bT"), ("resident", "rows")),  # a matrix-vector layer: padding rows, one chunk
  ((1, 400, 120, "ab"), ("resident", "kb")),
  ((100, 64, 64, "ab"), ("resident", "kb")),    # rows not a multiple of the chunk's: the last chunk padded
  # ... and the results not whole lane tiles: the last tile's lanes past G must not store (they
  # read the padding rows' results; their clamped address is the last real element's)
  ((1030, 8, 4, "ab"), ("resident", "resident")),
  # K not a multiple of L: rows not whole tiles apart, in classes that are (two tiles per row and
  # block: 300 = 18.75 tiles, 4 classes; 1000 = 62.5 tiles, 2), A's rows and a Linear weight's
  ((64, 300, 64, "ab"), ("rows", "kb")),
  ((16, 1000, 100, "ab"), ("rows", "kb")),
  ((36, 1000, 40, "bT"), ("rows", "rows")),  # nn.Linear(1000, 40) on a batch of 36: neither operand fits whole
  # a transposed A whose row groups are not whole lane tiles (116 rows: chunks of 4): its kb windows
  # start inside a tile (one tile more, the gather base adds the shift)
  ((116, 436, 56, "aT"), ("kb", "kb")),
  # K odd: rows of three tiles (409 = 25.6 tiles, 16 classes), the last block's lanes past K read
  # past the buffers (A's masked to zero); B's kb windows shifted; 125 rows: padding rows in the last chunk
  ((125, 409, 174, "ab"), ("rows", "kb")),
  ((133, 201, 27, "aT"), ("kb", "kb")),
  ((97, 803, 106, "bT"), ("rows", "rows")),  # column chunks of a Linear weight in 16 classes, the last one partial
  # nn.Linear(1177, 150) on 11 rows (refused before): transposed, the weight's rows in row groups and
  # one column chunk of all 11 inputs, whose 150 x 12 lanes are not whole lane tiles
  ((11, 1177, 150, "bT"), ("rows", "rows")),
]


@pytest.mark.parametrize("case,modes", CASES, ids=[f"{m}x{k}x{n}-{f}" for (m, k, n, f), _ in CASES])
def test_streamed_gemm_exact_and_rtl_matches_golden(case, modes, vmem_1024, streamed, monkeypatch):
  M, K, Nc, form = case
  monkeypatch.setenv("TINYTPU_SIM", "both")
  rng = np.random.default_rng(M * 7 + K * 3 + Nc)
  a, b = _i8(rng, M, K), _i8(rng, K, Nc)
  ta = Tensor(np.ascontiguousarray(a.T), device="TINYTPU").T if form == "aT" else Tensor(a, device="TINYTPU")
  tb = Tensor(np.ascontiguousarray(b.T), device="TINYTPU").T if form == "bT" else Tensor(b, device="TINYTPU")
  runner.reset_stats()
  out = (ta.cast("int32") @ tb.cast("int32")).numpy()
  np.testing.assert_array_equal(out, a.astype(np.int64) @ b.astype(np.int64))
  assert streamed and streamed[-1][:2] == modes, streamed


@pytest.mark.parametrize("view,classes", [("rows", 4), ("cols", 16)])
def test_rows_of_a_view_start_inside_a_tile(view, classes, vmem_1024, streamed, monkeypatch):
  """A as a view: rows 2.. of a (66, 300) matrix (its first element 600 = 37.5 tiles in: every
  class's two-tile windows start half a tile further), or columns 2.. of a (64, 303) one (rows 303
  elements apart in 16 classes, a base of 2: a class starting 15 elements into its tile and a
  block 14 further reach a third tile, so each row takes three; K = 301 is not a multiple of N
  either). Exact, RTL == golden."""
  monkeypatch.setenv("TINYTPU_SIM", "both")
  rng = np.random.default_rng(31)
  if view == "rows":
    a = _i8(rng, 66, 300)
    ta, ref = Tensor(a, device="TINYTPU")[2:], a[2:]
  else:
    a = _i8(rng, 64, 303)
    ta, ref = Tensor(a, device="TINYTPU")[:, 2:], a[:, 2:]
  b = _i8(rng, ref.shape[1], 64)
  out = (ta.cast("int32") @ Tensor(b, device="TINYTPU").cast("int32")).numpy()
  np.testing.assert_array_equal(out, ref.astype(np.int64) @ b.astype(np.int64))
  assert streamed and streamed[-1][0] == "rows" and streamed[-1][8] == classes, streamed


@pytest.mark.cheapest
@pytest.mark.parametrize("case,modes", [((100, 64, 64, "ab"), ("kb", "rows")), ((1, 400, 120, "ab"), ("kb", "rows"))],
                         ids=["100x64x64-ab", "1x400x120-ab"])
def test_planner_takes_the_cheapest_plan_that_fits(case, modes, vmem_1024, streamed, monkeypatch):
  """Plans are tried by estimated cycles: 100 rows run transposed (64 rows of 100 columns: no
  padded chunk; listed order: A resident with a padded last chunk), exact, RTL == golden; so does
  the matrix-vector layer (LeNet's fc1: one MLW and an MMUL of 30 tiles per block instead of 30
  pairs; its one chunk of 120 results is not whole lane tiles, the weights stream by kb windows)."""
  M, K, Nc, form = case
  monkeypatch.setenv("TINYTPU_SIM", "both")
  rng = np.random.default_rng(M + K + Nc)
  a, b = _i8(rng, M, K), _i8(rng, K, Nc)
  ta = Tensor(np.ascontiguousarray(a.T), device="TINYTPU").T if form == "aT" else Tensor(a, device="TINYTPU")
  out = (ta.cast("int32") @ Tensor(b, device="TINYTPU").cast("int32")).numpy()
  np.testing.assert_array_equal(out, a.astype(np.int64) @ b.astype(np.int64))
  assert streamed and streamed[-1][:2] == modes, streamed


@pytest.mark.cheapest
def test_last_column_chunk_may_be_partial(vmem_1024, streamed, monkeypatch):
  """LeNet's conv1 (6 channels of 28 x 28, 5 x 5, padding 2): transposed, PSUM cannot hold 196
  position tiles times two weight columns, so a chunk is 4 channels (one column) of every position
  and the second chunk has 2: its padding columns read past the resident weights, the lane loop
  clamps their lanes. Exact against tinygrad's PYTHON device, RTL == golden."""
  monkeypatch.setenv("TINYTPU_SIM", "both")
  rng = np.random.default_rng(28)
  x, w = _i8(rng, 1, 1, 28, 28), _i8(rng, 6, 1, 5, 5)
  out = Tensor(x, device="TINYTPU").cast("int32").conv2d(Tensor(w, device="TINYTPU").cast("int32"), padding=2).numpy()
  py = Tensor(x, device="PYTHON").cast("int32").conv2d(Tensor(w, device="PYTHON").cast("int32"), padding=2).numpy()
  np.testing.assert_array_equal(out, py)
  np.testing.assert_array_equal(out, _conv_ref(x, w, 1, 2))
  assert streamed and {(s[0], s[1], s[2], s[3], s[4], s[7]) for s in streamed} == {("resident", "resident", 196, 2, True, True)}, streamed


def test_plans_are_sorted_by_estimated_cycles(vmem_1024):
  """The estimate the order uses: per block the larger of the MXU's rows (plus an MLW's wait per
  weight column) and the staging instructions."""
  from types import SimpleNamespace as NS
  plan = NS(d=NS(dims=(64, 64, 64)), mc=16, nt=16, ng=1, nc=1, C=256, A=NS(gated={}), B=NS(gated={}))
  low = mxu_stream.MxuStream.__new__(mxu_stream.MxuStream)
  low.cfg = NS(N=4)
  assert mxu_stream.MxuStream._plan_cycles(low, plan) == 16 * 16 * (16 * 4 + 4) + 2 * 256 + 2 * 256
  few_columns = NS(**{**vars(plan), "nt": 1, "mc": 16})
  assert mxu_stream.MxuStream._plan_cycles(low, few_columns) < mxu_stream.MxuStream._plan_cycles(low, plan)


def test_streamed_gemm_mac_utilisation_at_the_architecture_vmem(vmem_1024, streamed, monkeypatch):
  """256 x 128 x 256 from HBM on the RTL: most cycles are the MXU's (the bench's gemm_256x256x256
  reaches 0.90; this smaller one bounds the per-chunk overheads)."""
  monkeypatch.setenv("TINYTPU_SIM", "rtl")
  rng = np.random.default_rng(5)
  a, b = _i8(rng, 256, 128), _i8(rng, 128, 256)
  runner.reset_stats()
  out = (Tensor(a, device="TINYTPU").cast("int32") @ Tensor(b, device="TINYTPU").cast("int32")).numpy()
  np.testing.assert_array_equal(out, a.astype(np.int64) @ b.astype(np.int64))
  assert streamed and runner.STATS["kernels"] == 1
  util = 256 * 128 * 256 / 16 / runner.STATS["cycles"]
  assert util > 0.85, (util, runner.STATS)  # measured 0.877


def test_streamed_gemm_refuses_values_outside_int8(vmem_1024, streamed):
  a = np.ones((64, 64), dtype=np.int32)
  a[7, 9] = 300
  with pytest.raises(ValueError, match="outside int8"):
    (Tensor(a, device="TINYTPU") @ Tensor(np.ones((64, 64), dtype=np.int32), device="TINYTPU")).numpy()
  assert streamed


def _conv_ref(x, w, stride=1, pad=0):
  """int64 cross-correlation (what tinygrad's conv2d computes), by im2col."""
  x = np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad)))
  n, ci, h, wd = x.shape
  co, _, kh, kw = w.shape
  oh, ow = (h - kh) // stride + 1, (wd - kw) // stride + 1
  cols = np.stack([x[:, :, i:i + stride * oh:stride, j:j + stride * ow:stride] for i in range(kh) for j in range(kw)], axis=2)
  cols = cols.reshape(n, ci * kh * kw, oh * ow).astype(np.int64)  # k = (ci, i, j), ci slowest as in w
  return (w.reshape(co, -1).astype(np.int64) @ cols).reshape(n, co, oh, ow)


# (cin, size, cout, k, stride, padding, nhwc) -> (A separable, B separable, A masked past K, gated tiles)
CONVS = [
  # the bench's conv_int8_8x16x16_k3: one chunk of all 196 positions x 16 channels, the windows as A
  ((8, 16, 16, 3, 1, 0, False), (True, False, False, False)),
  # 256 positions x 32 channels need 512 PSUM tiles in one chunk: transposed, the weights as A
  ((4, 18, 32, 3, 1, 0, False), (False, True, False, False)),
  ((6, 14, 16, 5, 1, 0, False), (True, False, True, False)),   # LeNet's conv2: K = 150, not a multiple of N
  ((12, 21, 8, 3, 2, 0, False), (True, False, False, False)),  # strided windows
  ((8, 16, 16, 3, 1, 0, True), (True, False, False, False)),   # NHWC output (m-major)
  # padded: the border tiles ANDed with their gate masks (the own orientation's layout does not fit)
  ((8, 16, 16, 3, 1, 1, False), (False, True, False, True)),
  ((4, 18, 32, 3, 1, 1, False), (False, True, False, True)),
  ((6, 14, 16, 5, 1, 2, False), (False, True, True, True)),    # padded, and K = 150
]


@pytest.mark.parametrize("case,sep", CONVS, ids=[f"{c}x{s}x{s}-{o}k{k}s{st}p{pd}{'-nhwc' if f else ''}" for (c, s, o, k, st, pd, f), _ in CONVS])
def test_streamed_conv_exact_and_rtl_matches_golden(case, sep, vmem_1024, streamed, monkeypatch):
  """A convolution whose full im2col tables do not fit in 1024 tiles: the windows are gathered
  through F(position) + G(k) tables (a lane part per tile, a k part per block), exact, RTL == golden."""
  ci, size, co, k, stride, pad, nhwc = case
  monkeypatch.setenv("TINYTPU_SIM", "both")
  rng = np.random.default_rng(ci * 100 + size)
  x, w = _i8(rng, 1, ci, size, size), _i8(rng, co, ci, k, k)
  out = Tensor(x, device="TINYTPU").cast("int32").conv2d(Tensor(w, device="TINYTPU").cast("int32"), stride=stride, padding=pad)
  out = out.permute(0, 2, 3, 1).contiguous() if nhwc else out
  ref = _conv_ref(x, w, stride, pad)
  np.testing.assert_array_equal(out.numpy(), ref.transpose(0, 2, 3, 1) if nhwc else ref)
  assert streamed and streamed[-1][:2] == ("resident", "resident") and streamed[-1][4:8] == sep, streamed


def test_streamed_batched_padded_conv_chunks_by_whole_images(vmem_1024, streamed, monkeypatch):
  """A batch of padded images (cnn_digits' layers): the lanes run (image, out channel, position),
  neither m- nor n-major, so a chunk is whole images; the windows' gates repeat per image."""
  monkeypatch.setenv("TINYTPU_SIM", "both")
  rng = np.random.default_rng(11)
  x, w = _i8(rng, 16, 2, 8, 8), _i8(rng, 8, 2, 3, 3)
  out = Tensor(x, device="TINYTPU").cast("int32").conv2d(Tensor(w, device="TINYTPU").cast("int32"), padding=1)
  got = out.numpy()
  np.testing.assert_array_equal(got, _conv_ref(x, w, 1, 1))
  # and what tinygrad itself computes (its PYTHON device: the UOp semantics, padding included)
  py = Tensor(x, device="PYTHON").cast("int32").conv2d(Tensor(w, device="PYTHON").cast("int32"), padding=1).numpy()
  np.testing.assert_array_equal(got, py)
  (a_mode, b_mode, mc, nc, sep_a, sep_b, _, gated, _, _), = streamed
  assert (a_mode, sep_a, gated) == ("resident", True, True) and nc > 1 and (mc * 4) % 64 == 0, streamed


@pytest.mark.parametrize("co,pad", [(16, 0), (8, 1)])
def test_streamed_conv_input_larger_than_vmem_reads_band_windows(co, pad, vmem_1024, streamed, monkeypatch):
  """32 channels of 20 x 20 (800 tiles): not even the input fits beside the result, so each K
  block's window of it is DMA'd (two blocks ahead), the last ones moved back inside the buffer, and
  the chunks are whole output channels (every position: column chunks of the transposed GEMM),
  exact, RTL == golden; padded windows gated as when resident."""
  monkeypatch.setenv("TINYTPU_SIM", "both")
  rng = np.random.default_rng(co + pad)
  x, w = _i8(rng, 1, 32, 20, 20), _i8(rng, co, 32, 3, 3)
  out = Tensor(x, device="TINYTPU").cast("int32").conv2d(Tensor(w, device="TINYTPU").cast("int32"), padding=pad)
  np.testing.assert_array_equal(out.numpy(), _conv_ref(x, w, 1, pad))
  assert streamed and {(s[0], s[3] > 1, s[4], s[7]) for s in streamed} == {("band", True, True, pad > 0)}, streamed


def test_band_windows_stay_inside_their_buffer(vmem_1024, streamed, monkeypatch):
  """Every K block's band window, for every row group, ends inside the input buffer: the last
  blocks' starts are moved back (DMAs past the buffer would read the guard or, at the top of HBM,
  trap). The 32x20x20 input's last blocks would end past it by the bounding box alone."""
  from tinytpu.backend import mxu_plan
  seen = []
  band = mxu_plan.MxuPlan._band
  def spy(self, slot, tiles, tab, kt, step, groups):
    o = band(self, slot, tiles, tab, kt, step, groups)
    if o is not None:
      s = (int(tab.min()) + kt.min(axis=1)) // self.L
      seen.append((np.asarray(o.starts), o.win, step // self.L, groups, tiles, s))
    return o
  monkeypatch.setattr(mxu_plan.MxuPlan, "_band", spy)
  rng = np.random.default_rng(11)
  x, w = _i8(rng, 1, 32, 20, 20), _i8(rng, 16, 32, 3, 3)
  out = Tensor(x, device="TINYTPU").cast("int32").conv2d(Tensor(w, device="TINYTPU").cast("int32"))
  np.testing.assert_array_equal(out.numpy(), _conv_ref(x, w, 1, 0))
  assert seen
  for starts, win, st, groups, tiles, s in seen:
    assert (starts >= 0).all() and (starts + (groups - 1) * st + win <= tiles).all()
  assert any((s + (g - 1) * st + win > tiles).any() for _, win, st, g, tiles, s in seen)  # the clamp mattered


def test_streamed_conv_int8_range_check(vmem_1024, streamed):
  x = np.ones((1, 8, 16, 16), dtype=np.int32)
  x[0, 3, 5, 7] = -129
  with pytest.raises(ValueError, match="outside int8"):
    Tensor(x, device="TINYTPU").conv2d(Tensor(np.ones((16, 8, 3, 3), dtype=np.int32), device="TINYTPU")).numpy()
  assert streamed


@pytest.mark.parametrize("seed", [1, 2])
def test_random_gemms_stream_on_the_mxu(seed, vmem_1024, streamed, monkeypatch):
  """Random shapes (any M, K, Nc) of which an operand does not fit in VMEM, in the three layouts:
  exact against numpy on the golden model, and on the MXU (a streamed plan), never the VPU.
  Reproduce: the seed in the test id and the shape in the message."""
  monkeypatch.setenv("TINYTPU_SIM", "golden")
  rng = np.random.default_rng(seed)
  for _ in range(3):
    M, K, Nc = 0, 0, 0
    while M * K < 20000 and K * Nc < 20000:
      M, K, Nc = int(rng.integers(1, 200)), int(rng.integers(2, 1200)), int(rng.integers(1, 200))
    form = ["ab", "aT", "bT"][int(rng.integers(3))]
    a, b = _i8(rng, M, K), _i8(rng, K, Nc)
    ta = Tensor(np.ascontiguousarray(a.T), device="TINYTPU").T if form == "aT" else Tensor(a, device="TINYTPU")
    tb = Tensor(np.ascontiguousarray(b.T), device="TINYTPU").T if form == "bT" else Tensor(b, device="TINYTPU")
    before = len(streamed)
    out = (ta.cast("int32") @ tb.cast("int32")).numpy()
    np.testing.assert_array_equal(out, a.astype(np.int64) @ b.astype(np.int64), err_msg=f"seed {seed}: {(M, K, Nc, form)}")
    assert len(streamed) > before, (seed, (M, K, Nc, form))  # (lowered again when registers run out: once or more)
