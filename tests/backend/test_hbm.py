"""Buffers in HBM: whole-buffer DMA for kernels that fit in VMEM, chunked double-buffered streaming
for larger ones (backend/stream.py), the HBM allocator's refusal of a buffer larger than HBM."""
import re

import numpy as np
import pytest

import tinytpu  # noqa: F401  registers the device
from tinygrad import Tensor
from tinytpu.backend import device, runner


def _chunked(src: str) -> bool:
  return re.search(r"DMA\.IN \[s[1-9]\d* \+ \d+\]", src) is not None  # a DMA.IN into the other window copy


def test_small_kernel_dmas_whole_buffers(sources):
  a = np.arange(100, dtype=np.int32)
  np.testing.assert_array_equal((Tensor(a, device="TINYTPU") * 3 + 1).numpy(), a * 3 + 1)
  src = next(s for s in sources if "DMA.OUT" in s)
  assert "DMA.IN" in src and "# hbm slot=" in src and " read" in src and " written" in src
  assert not _chunked(src)


def test_add_1m_int32_streams(sources, vmem_1024):
  n = 1 << 20
  runner.reset_stats()
  x = Tensor(np.arange(n, dtype=np.int32), device="TINYTPU")
  np.testing.assert_array_equal((x + 1).numpy(), np.arange(n, dtype=np.int32) + 1)
  big = [s for s in sources if _chunked(s)]
  assert big, "the 1M-element kernel streams"
  # double buffering: chunk 0 into copy 0 before the loop, each next chunk into the other copy
  # (a register base) before the current one computes, the written window out after it
  src = big[-1]
  loop = src.index("LOOP ")
  assert re.search(r"DMA\.IN \[s0 \+ \d+\]", src[:loop]) and _chunked(src[loop:]) and "DMA.OUT" in src[loop:]


def test_chunked_elementwise_with_tails(vmem_1024):
  n = 100003  # not a multiple of a tile nor of a chunk
  a, b = np.arange(n, dtype=np.int32), (np.arange(n, dtype=np.int32) * 7) % 1001
  np.testing.assert_array_equal((Tensor(a, device="TINYTPU") * 3 + Tensor(b, device="TINYTPU")).numpy(), a * 3 + b)
  f = np.random.default_rng(0).standard_normal(n).astype(np.float32)
  np.testing.assert_allclose((Tensor(f, device="TINYTPU").exp2() * 2).numpy(), np.exp2(f) * 2, rtol=1e-5)


def test_chunked_reduction_with_tails(sources, vmem_1024):
  a = np.arange(5003 * 33, dtype=np.int32).reshape(5003, 33) % 977
  np.testing.assert_array_equal(Tensor(a, device="TINYTPU").sum(axis=1).numpy(), a.sum(axis=1))
  f = np.random.default_rng(1).standard_normal((3001, 21)).astype(np.float32)
  np.testing.assert_allclose(Tensor(f, device="TINYTPU").max(axis=1).numpy(), f.max(axis=1))
  assert any(_chunked(s) for s in sources)


def test_chunked_broadcast_operand_is_loaded_once(vmem_1024):
  a = np.arange(4099 * 17, dtype=np.int32).reshape(4099, 17)
  b = np.arange(17, dtype=np.int32) * 5
  np.testing.assert_array_equal((Tensor(a, device="TINYTPU") - Tensor(b, device="TINYTPU")).numpy(), a - b)


def test_buffer_larger_than_hbm_is_refused(monkeypatch):
  monkeypatch.setenv("TINYTPU_BACKEND_CONFIG", f"{device.BACKEND_DEFAULT} HBM_TILES=1024")
  with pytest.raises(MemoryError, match=r"20000 dtypes.int elements \(80000 bytes\) needs 1250 HBM tiles; the HBM has 1024 tiles"):
    Tensor(np.arange(20000, dtype=np.int32), device="TINYTPU").realize()


def test_sum_1m_streams_by_reduce_blocks(sources, vmem_1024):
  """(Tensor(np.arange(1 << 20)) + 1).sum() at 1024 VMEM tiles: tinygrad splits it into r_256_4096,
  whose every output tile reads 4096 tiles of its input: that buffer streams by blocks of the reduce
  loop (rstream.py), 16 rows a DMA, two copies."""
  from tinygrad.helpers import Context
  with Context(PARALLEL=0):  # compiled in this process, where the spy sees the listings
    got = (Tensor(np.arange(1 << 20), device="TINYTPU") + 1).sum().numpy()
  assert int(got) == int((np.arange(1 << 20, dtype=np.int64) + 1).sum())
  src = next(s for s in sources if "r_256_4096" in s.splitlines()[0])
  assert re.search(r"DMA\.CFG s\d+, 16, \d+", src) and _chunked(src)


def test_long_rows_stream_by_reduce_blocks_with_tails(vmem_1024):
  a = np.arange(37 * 5008, dtype=np.int32).reshape(37, 5008) % 1013  # 37 rows: a partial lane tile
  np.testing.assert_array_equal(Tensor(a, device="TINYTPU").sum(axis=1).numpy(), a.sum(axis=1))
  f = np.random.default_rng(2).standard_normal((19, 30016)).astype(np.float32)
  np.testing.assert_array_equal(Tensor(f, device="TINYTPU").max(axis=1).numpy(), f.max(axis=1))


def test_row_dot_of_two_long_row_buffers_streams_both_by_reduce_blocks(sources, vmem_1024):
  """A row-wise dot product `(a * b[:, ::2]).sum(1)`: both operands' rows are long (every output
  tile reads 5008 and 10016 tiles), so both stream by blocks of the one reduce loop, with their own
  row strides, coefficients (1 and 2: twice the tiles per row) and copies (rstream.py)."""
  from tinygrad.helpers import Context
  rng = np.random.default_rng(5)
  a = rng.integers(-1000, 1000, (37, 5008), dtype=np.int32)
  b = rng.integers(-1000, 1000, (37, 2 * 5008), dtype=np.int32)
  with Context(PARALLEL=0):
    got = (Tensor(a, device="TINYTPU") * Tensor(b, device="TINYTPU")[:, ::2]).sum(axis=1).numpy()
  np.testing.assert_array_equal(got, (a * b[:, ::2]).sum(axis=1))
  src = next(s for s in sources if s.splitlines()[0].startswith("# kernel r_37_5008") or "r_37_5008" in s.splitlines()[0])
  assert len(re.findall(r"DMA\.CFG s\d+, 16, \d+", src)) >= 4, "two parts, each a first and a next block"


def test_weight_gradient_shape_streams_a_shared_row_and_a_row_per_lane(sources, vmem_1024):
  """`x @ y.T` over long rows (tinygrad's test_simple_conv2d_1x1_m4 backward, r_16_16_1024): a lane
  tile is one row of x, shared by its lanes (one DMA row per block), and 16 rows of y, one per lane
  (rstream.py A / s forms). float32 of small integers: every order of the sums is exact."""
  from tinygrad.helpers import Context
  rng = np.random.default_rng(7)
  x = rng.integers(-8, 9, (21, 4096)).astype(np.float32)  # 21 rows: 21 lane tiles, A = 4096
  y = rng.integers(-8, 9, (16, 4096)).astype(np.float32)
  with Context(PARALLEL=0):
    got = (Tensor(x, device="TINYTPU") @ Tensor(y, device="TINYTPU").T).numpy()
  np.testing.assert_array_equal(got, x @ y.T)
  src = next(s for s in sources if "4096" in s.splitlines()[0])
  assert re.search(r"DMA\.CFG s\d+, 16, \d+", src) and _chunked(src)


@pytest.mark.parametrize("shape,perm", [((512, 512), (1, 0)), ((37, 1024), (1, 0)), ((64, 33, 64), (2, 1, 0)), ((256, 8, 96), (1, 2, 0))])
def test_transposes_read_lane_rows(sources, vmem_1024, shape, perm):
  """A transpose larger than VMEM: each output tile reads one element of 16 input rows, so the
  input comes in by lane-row windows (windows.py): a row per value of the lane range the rows
  follow, one 2-D DMA per chunk, the rows `row_tiles` apart in VMEM."""
  from tinygrad.helpers import Context
  a = np.random.default_rng(8).standard_normal(shape).astype(np.float32)
  with Context(PARALLEL=0):
    got = Tensor(a, device="TINYTPU").permute(*perm).contiguous().numpy()
  np.testing.assert_array_equal(got, a.transpose(perm))
  src = next(s for s in sources if s.splitlines()[0].split()[2].startswith("E_"))
  assert re.search(r"DMA\.CFG s\d+, (\d+), \d+", src) and _chunked(src)
  assert max(int(r) for r in re.findall(r"DMA\.CFG s\d+, (\d+), \d+", src)) >= 16, "a row per output lane of a chunk"


@pytest.mark.parametrize("shape,perm,sim", [((3, 45, 585), (1, 0, 2), "both"), ((37, 1000), (1, 0), "golden")])
def test_transposes_whose_rows_are_not_whole_tiles_read_lane_rows(sources, vmem_1024, monkeypatch, shape, perm, sim):
  """Lane rows whose stride is not whole tiles (tinygrad's test_cat transposes a (3, 45, 585) buffer:
  rows 26325 elements apart): the rows fall in classes whose starts are whole tiles apart, a 2-D copy
  each (rowwin._row_classes), and the access's coefficient of the lane range becomes P * L + c % L."""
  from tinygrad.helpers import Context
  monkeypatch.setenv("TINYTPU_SIM", sim)
  a = np.random.default_rng(10).standard_normal(shape).astype(np.float32)
  with Context(PARALLEL=0):
    got = Tensor(a, device="TINYTPU").permute(*perm).contiguous().numpy()
  np.testing.assert_array_equal(got, a.transpose(perm))
  src = next(s for s in sources if s.splitlines()[0].split()[2].startswith("E_"))
  assert _chunked(src) and len(re.findall(r"DMA\.CFG s[1-9]\d*, \d+, [1-9]\d*", src)) >= 2, "a 2-D copy per class of rows"


@pytest.mark.parametrize("m,k,n,sim", [(1, 256, 250, "both"), (1, 128, 200, "golden")])
def test_fp32_matmul_whose_weight_rows_are_not_whole_tiles_reads_row_classes(sources, vmem_1024, monkeypatch, m, k, n, sim):
  """A row window whose rows are 250 (200) elements apart: the rows fall in 8 (2) classes whose starts
  are whole tiles apart (windows._row_classes), one 2-D DMA per class per chunk into rows laid out so
  that the access stays affine; exact against numpy, the RTL against golden."""
  from tinygrad.helpers import Context
  monkeypatch.setenv("TINYTPU_SIM", sim)
  rng = np.random.default_rng(11)
  a, b = rng.standard_normal((m, k)).astype(np.float32), rng.standard_normal((k, n)).astype(np.float32)
  with Context(PARALLEL=0):
    got = (Tensor(a, device="TINYTPU") @ Tensor(b, device="TINYTPU")).numpy()
  np.testing.assert_allclose(got, a.astype(np.float64) @ b, rtol=1e-4, atol=1e-4)
  src = next(s for s in sources if s.splitlines()[0].split()[2].startswith("r_"))
  classes = 16 // np.gcd(n % 16, 16)
  cfgs = re.findall(r"DMA\.CFG s\d+, (\d+), \d+", src)
  assert _chunked(src) and cfgs.count(str(k // classes)) >= classes, cfgs


def test_lane_rows_of_a_kernel_too_large_for_read_masks(sources, vmem_1024, monkeypatch):
  """A kernel past read_masks' size limit (einsum's 3M-element gradient transposes, E_13824_224)
  still gets row windows: an ungated read is recognised from its UOps (windows._plain_read)."""
  from tinygrad.helpers import Context
  from tinytpu.backend import windows
  monkeypatch.setattr(windows, "MASK_LIMIT", 0)
  a = np.random.default_rng(9).standard_normal((512, 512)).astype(np.float32)
  with Context(PARALLEL=0):
    got = Tensor(a, device="TINYTPU").T.contiguous().numpy()
  np.testing.assert_array_equal(got, a.T)
  assert any(_chunked(s) and re.search(r"DMA\.CFG s\d+, 256, 1", s) for s in sources)


def test_chunk_table_of_a_lane_row_window_steps_each_start_by_its_own_period_step():
  """A lane-row window's table lanes: its HBM starts in lanes lane, lane + 1 and its VMEM-coordinate
  starts in lane + 2, lane + 3, each relative to chunk 0's and, in the period's last chunk, the next
  chunk's as that start's own step per period (windows.chunk_table; the chunk loop counts down)."""
  from tinytpu.backend.windows import Window, chunk_table, table_period
  w = Window(slot=1, tiles=16, starts=(5, 37, 9, 41, 13, 45), lo=5, vstarts=(5, 7, 6, 8, 7, 9), vlo=5, lane=2)
  assert table_period({1: w}, 6) == 2
  rows = chunk_table({1: w}, 6, 2, 16)
  assert rows[1][2:6] == [0, 32, 0, 2]   # chunk 0: its starts and chunk 1's
  assert rows[0][2:6] == [32, 4, 2, 1]   # chunk 1: the next chunk's as the step per period (HBM 4, VMEM 1)


def test_einsum_of_long_rows_at_1024_tiles(vmem_1024):
  """tinygrad's test_einsum_ellipsis shape `ij...,ij...->ij` (r_224_13824, two 193536-tile operands)."""
  rng = np.random.default_rng(6)
  a, b = (rng.standard_normal((32, 7, 24, 24, 24)).astype(np.float32) for _ in range(2))
  got = Tensor.einsum("ij...,ij...->ij", Tensor(a, device="TINYTPU"), Tensor(b, device="TINYTPU")).numpy()
  np.testing.assert_allclose(got, (a.astype(np.float64) * b).sum(axis=(2, 3, 4)), rtol=1e-4, atol=1e-3)


@pytest.mark.parametrize("shape", [(37, 5000), (256, 1000)])
def test_reduce_blocks_of_rows_that_start_mid_tile(shape, vmem_1024, monkeypatch):
  """Rows of 5000 (or 1000) elements start mid-tile (5000 % 16 = 8): neither a lane chunk (one output
  tile reads 5000 tiles) nor whole-tile rows fit; the rows stream by reduce blocks (rstream.py) in
  two classes of lanes (even lanes' rows start at a tile, odd ones' 8 elements in), each a 2-D DMA,
  the lanes reading their rows through a table of offsets; 5000 has no divisor of whole tiles, so
  the last block is shorter. Exact int32 sums, the RTL as golden."""
  from tinytpu.backend import rstream
  seen = []
  plan = rstream.ReduceStream.plan_reduce_stream
  def spy(self, uses, forms):
    ok = plan(self, uses, forms)
    if ok:
      seen.append([(p.period(self.L), R % self.rstream.Rb != 0) for p in self.rstream.parts for R in [shape[1]]])
    return ok
  monkeypatch.setattr(rstream.ReduceStream, "plan_reduce_stream", spy)
  monkeypatch.setenv("TINYTPU_SIM", "both")
  x = np.random.default_rng(7).integers(-1000, 1000, shape).astype(np.int32)
  np.testing.assert_array_equal(Tensor(x, device="TINYTPU").sum(axis=1).numpy(), x.sum(axis=1))
  assert seen == [[(2, True)]]


def test_sum_1m_streams_at_the_backend_default(sources):
  """At the default VMEM the same sum streams r_256_4096 by lane chunks (a 4096-tile window per output tile)."""
  from tinygrad.helpers import Context
  with Context(PARALLEL=0):
    got = (Tensor(np.arange(1 << 20), device="TINYTPU") + 3).sum().numpy()
  assert int(got) == int((np.arange(1 << 20, dtype=np.int64) + 3).sum())
  assert any(_chunked(s) for s in sources)


def test_arange_1m_int32_add_at_the_backend_default():
  """`Tensor.arange(1 << 20).int() + 1` as a user writes it (the arange on the default device)."""
  np.testing.assert_array_equal((Tensor.arange(1 << 20).int() + 1).to("TINYTPU").numpy(), np.arange(1 << 20, dtype=np.int32) + 1)


def test_dma_rows_are_one_command_when_a_divisor_allows():
  """A contiguous copy is one DMA command of equal rows when the tile count has a divisor in
  [DMA_T // 2, DMA_T] (each command pays the HBM latency: add_1M went from 0.88 to 0.96 of its
  bandwidth bound), else rows of DMA_T and a tail."""
  from tinytpu.backend.stream import DMA_T, _row_tiles
  assert _row_tiles(1024) == 128 and _row_tiles(1020) == 255 and _row_tiles(300) == 150
  assert _row_tiles(7) == 7 and _row_tiles(DMA_T) == DMA_T
  assert _row_tiles(257) == DMA_T  # prime: 255 + a tail of 2
  for n in range(1, 3000):
    t = _row_tiles(n)
    assert 1 <= t <= DMA_T and (n <= DMA_T and t == n or t > DMA_T // 2)


def test_runner_sends_large_buffers_as_bundle_v2(monkeypatch):
  """The backend's kernels reach the co-sim as bundle v2: a 64K-element buffer travels in a binary
  side file (`hbmbin`), not as text lines, and the answer is still right."""
  from tinytpu import cosim
  sent = []
  run = cosim.Server.run
  def spy(self, text):
    sent.append(text)
    return run(self, text)
  monkeypatch.setattr(cosim.Server, "run", spy)
  monkeypatch.setenv("TINYTPU_SIM", "rtl")
  a = np.arange(1 << 16, dtype=np.int32)
  out = (Tensor(a, device="TINYTPU") * 3).numpy()
  assert (out == a * 3).all()
  assert sent and any(t.startswith("tinytpu-bundle 2") and "hbmbin" in t and "binfile" in t for t in sent), [t[:80] for t in sent]
  assert all(len(t) < 1 << 16 for t in sent)  # no payload in the text


def test_cat_streams_its_sources_by_table_windows(sources, vmem_1024):
  """tinygrad's cat reads every source at every output lane and selects one with WHERE. A chunk that
  straddles two sources' parts touches both ends of each (the whole 1646-tile buffer by the bounding
  box): the windows count only the lanes whose read is selected, their chunks' starts are not
  arithmetic, so each chunk's start comes from a table (VEXTRACT), and the other lanes' gathers are
  clamped into VMEM (unclamped they address past it and trap)."""
  from tinygrad.helpers import Context
  rng = np.random.default_rng(3)
  xs = [rng.standard_normal((45, 65, 9)).astype(np.float32) for _ in range(3)]
  ts = [Tensor(x, device="TINYTPU") for x in xs]
  with Context(PARALLEL=0):
    for dim in (0, 1, 2):
      np.testing.assert_array_equal(ts[0].cat(ts[1], ts[2], dim=dim).numpy(), np.concatenate(xs, axis=dim))
  src = next(s for s in sources if "E_3_26325" in s.splitlines()[0])
  assert _chunked(src) and "VEXTRACT" in src and "VMIN" in src


def test_pool_rows_that_do_not_fill_tiles_stream_by_table_windows(sources, vmem_1024):
  """An average pool whose 42 outputs per plane straddle tiles: the input's windows per chunk do not
  move by a fixed step (r_64_3_14_3_2, a 1232-tile input)."""
  from tinygrad.helpers import Context
  x = np.random.default_rng(4).standard_normal((32, 2, 11, 28)).astype(np.float32)
  with Context(PARALLEL=0):
    got = Tensor(x, device="TINYTPU").avg_pool2d(kernel_size=(3, 2)).numpy()
  want = x[:, :, :9, :28].reshape(32, 2, 3, 3, 14, 2).mean(axis=(3, 5))
  np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
  src = next(s for s in sources if "r_64_3_14_3_2" in s.splitlines()[0])
  assert _chunked(src) and "VEXTRACT" in src


def test_padded_pool_windows_from_every_reduce_value(sources, vmem_1024):
  """A padded average pool's input index is a CMOD of lanes and reduce ranges under a gate of both
  (r_64_2_6_5_5, a 1232-tile input): not affine, so the windows evaluate the index and the gate per
  lane at each of the 25 window positions; the gated-off lanes address element 0 of the copy."""
  import torch
  from tinygrad.helpers import Context
  x = np.random.default_rng(5).standard_normal((32, 2, 11, 28)).astype(np.float32)
  with Context(PARALLEL=0):
    got = Tensor(x, device="TINYTPU").avg_pool2d(kernel_size=(5, 5), padding=1).numpy()
  want = torch.nn.functional.avg_pool2d(torch.from_numpy(x), kernel_size=(5, 5), padding=1).numpy()
  np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
  src = next(s for s in sources if "r_64_2_6_5_5" in s.splitlines()[0])
  assert _chunked(src) and "VEXTRACT" in src


def test_views_far_apart_in_one_buffer_get_a_window_each(sources, vmem_1024):
  """cat of three views of one 4936-tile buffer: one window would span two thirds of it, so each
  index of the buffer gets its own table window (and rebase register), merged guard."""
  from tinygrad.helpers import Context
  big = np.random.default_rng(6).standard_normal(3 * 26325).astype(np.float32)
  b = Tensor(big, device="TINYTPU").realize()
  parts = [b[k * 26325:(k + 1) * 26325].reshape(45, 65, 9) for k in range(3)]
  with Context(PARALLEL=0):
    got = parts[0].cat(parts[1], parts[2], dim=1).numpy()
  np.testing.assert_array_equal(got, np.concatenate([big[k * 26325:(k + 1) * 26325].reshape(45, 65, 9) for k in range(3)], axis=1))
  src = next(s for s in sources if "E_45_3_585" in s.splitlines()[0])
  assert _chunked(src) and src.count("VEXTRACT") >= 6  # three windows: this chunk's and the next one's start each


@pytest.mark.parametrize("m", [1, 8])
def test_fp32_matmul_reads_its_weights_by_row_windows(sources, vmem_1024, m):
  """An fp32 (m, 256) @ (256, 256) on the VPU: a lane tile reads 16 columns of every one of B's 256
  rows, 4081 tiles by the bounding box; a row window DMAs one tile per row (DMA.CFG rows = 256). At
  m = 8 the chunks' starts repeat per output row: a table of one period (16 chunks), its wrap a
  BNE, and A's start moves per period through a register of its own."""
  from tinygrad.helpers import Context
  rng = np.random.default_rng(7)
  a, b = rng.standard_normal((m, 256)).astype(np.float32), rng.standard_normal((256, 256)).astype(np.float32)
  with Context(PARALLEL=0):
    got = (Tensor(a, device="TINYTPU") @ Tensor(b, device="TINYTPU")).numpy()
  np.testing.assert_allclose(got, a.astype(np.float64) @ b, rtol=1e-4, atol=1e-4)
  src = next(s for s in sources if s.splitlines()[0].split()[2].startswith("r_"))
  assert _chunked(src) and re.search(r"DMA\.CFG s\d+, 256, 1\b", src)
  if m > 1:
    assert "BNE" in src and "VEXTRACT" in src


def test_fp32_conv_reads_its_input_by_channel_rows(sources, vmem_1024):
  """A 5x5 fp32 convolution of a 32x24x24 input (1152 tiles, tinygrad's test_tiny MNIST layer) on
  the VPU: each output tile reads every input channel; the row window holds one row per input
  channel (the band of its plane the tile's window covers). 400 outputs per channel: no tile
  straddles two channels (one that does would read two bands of every plane, 36 tiles a row)."""
  import torch
  from tinygrad.helpers import Context
  rng = np.random.default_rng(8)
  x, w = rng.standard_normal((1, 32, 24, 24)).astype(np.float32), rng.standard_normal((16, 32, 5, 5)).astype(np.float32)
  with Context(PARALLEL=0):
    got = Tensor(x, device="TINYTPU").conv2d(Tensor(w, device="TINYTPU")).numpy()
  np.testing.assert_allclose(got, torch.nn.functional.conv2d(torch.from_numpy(x), torch.from_numpy(w)).numpy(), rtol=1e-4, atol=1e-4)
  assert any(_chunked(s) and re.search(r"DMA\.CFG s\d+, 32, \d+", s) for s in sources)


@pytest.mark.parametrize("n", [16384, 30000 + 7])
def test_full_reduction_larger_than_vmem_streams_by_blocks(sources, vmem_1024, n):
  """A sum and a max of n elements to one value (test_ops' test_sum_full, r_16384: 1024 tiles and
  more than VMEM holds with the constant tile) read by blocks of 128 tiles through two copies, the
  extent's tail masked in the last block (rblock.py); the retired-instruction estimate still holds."""
  from tinygrad.helpers import Context
  from tinytpu.backend import runner
  a = np.random.default_rng(9).standard_normal(n).astype(np.float32)
  with Context(PARALLEL=0):
    got = Tensor(a, device="TINYTPU").sum().numpy()
    runner.reset_stats()
    m = Tensor((a * 100).astype(np.int32), device="TINYTPU").max().numpy()
  np.testing.assert_allclose(float(got), float(a.astype(np.float64).sum()), rtol=1e-4, atol=1e-3)
  assert int(m) == int((a * 100).astype(np.int32).max())
  src = [s for s in sources if s.splitlines()[0].split()[2] == f"r_{n}"][-1]  # the max's
  assert re.search(r"BEQ s\d+, s0, \S+_last", src) and "DMA.IN" in src.split("LOOP ")[1]
  assert int(re.search(r"executed=(\d+)", src).group(1)) == runner.STATS["instructions"]


@pytest.mark.parametrize("mode", ["nearest", "nearest-exact"])
def test_nearest_interpolation_windows_from_its_float_index(sources, vmem_1024, mode):
  """tinygrad's nearest-neighbour interpolation reads `x[i * 64 + int(6.4 * (float(j + 1) - 1))]`
  (E_384_10, a 1536-tile input): an index through float32 arithmetic, evaluated per lane in numpy's
  float32 (bit-exact with the VPU's) for the windows (test_ops' uint8 test_interpolate_nearest)."""
  import torch
  from tinygrad.helpers import Context
  x = np.random.default_rng(12).random((2, 3, 64, 64)).astype(np.float32)
  with Context(PARALLEL=0):
    got = (10 * Tensor(x, device="TINYTPU")).relu().cast("uint8").interpolate(size=(10, 10), mode=mode).numpy()
  want = torch.nn.functional.interpolate((10 * torch.from_numpy(x)).relu().type(torch.uint8), size=(10, 10), mode=mode).numpy()
  np.testing.assert_array_equal(got, want)
  assert any(_chunked(s) and "E_384_10" in s.splitlines()[0] for s in sources)
