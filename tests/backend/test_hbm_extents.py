"""Every HBM tile a kernel's DMAs touch lies inside the extent its launch declares for some buffer:
[tile - lo, tile + tiles + hi) with `over` = (lo, hi) from the listing (backend/listing.py BufInfo).
The launch places a buffer by that extent (backend/hbm.py `place`: its own range when the guard
holds it, else a temporary range with the room), so an undeclared overrun reads or writes another
buffer's tiles, or past the HBM's end, whenever the guard is small (a nearly full HBM). The golden
model's HBM is audited here whatever the guards are: a plan whose `over` is too small fails even
where the guard would have hidden it today."""
import numpy as np
import pytest

import tinytpu  # noqa: F401  registers the device
from tinygrad import Tensor
from tinytpu.backend import hbm as hbm_alloc
from tinytpu.golden import hbm as golden_hbm


@pytest.fixture
def audit(monkeypatch):
  """The launches' extents and every golden HBM access after each placement; `check()` raises on
  an access outside every extent of its launch."""
  launches: list[dict] = []
  place = hbm_alloc.HbmAllocator.place

  def placing(self, name, infos, bufs, L, temps):
    out = place(self, name, infos, bufs, L, temps)
    ext = [(info.slot, out[info.slot] - info.over[0], out[info.slot] + -(-info.size // L) + info.over[1]) for info in infos]
    launches.append({"name": name, "extents": ext, "touched": []})
    return out

  def touch(kind):
    orig = getattr(golden_hbm.HBM, kind)
    def wrapped(self, addr, *a):
      n = a[0] if kind == "read" else len(a[0])
      if launches: launches[-1]["touched"].append((kind, addr, n))
      return orig(self, addr, *a)
    monkeypatch.setattr(golden_hbm.HBM, kind, wrapped)

  monkeypatch.setattr(hbm_alloc.HbmAllocator, "place", placing)
  touch("read"); touch("write")

  def check():
    assert launches and any(ln["touched"] for ln in launches), "no launch was placed or touched the golden HBM: nothing was audited"
    for ln in launches:
      for kind, addr, n in ln["touched"]:
        for t in range(addr, addr + n):
          if not any(lo <= t < hi for _, lo, hi in ln["extents"]):
            raise AssertionError(f"kernel {ln['name']}: an HBM {kind} of tile {t} (of {addr}..{addr + n - 1}) lies outside every "
                                 f"buffer's declared extent {[(s, lo, hi) for s, lo, hi in ln['extents']]}")
    return launches
  return check


def _i8(rng, *shape):
  return rng.integers(-128, 128, shape).astype(np.int8)


# streamed GEMMs whose DMAs read past an operand: padding rows of a matrix-vector layer, K's last
# block, rows in classes (tests/backend/test_mxu_stream.py's cases)
@pytest.mark.parametrize("M,K,Nc,layout", [(1, 400, 120, "bT"), (64, 300, 64, "ab"), (36, 1000, 40, "bT"), (100, 64, 64, "ab")])
def test_streamed_gemm_dmas_stay_in_their_declared_extents(audit, M, K, Nc, layout):
  rng = np.random.default_rng(M + K + Nc)
  a = _i8(rng, K, M) if layout == "aT" else _i8(rng, M, K)
  b = _i8(rng, Nc, K) if layout == "bT" else _i8(rng, K, Nc)
  ta, tb = Tensor(a, device="TINYTPU"), Tensor(b, device="TINYTPU")
  ta = ta.T if layout == "aT" else ta
  tb = tb.T if layout == "bT" else tb
  got = ta.cast("int32").dot(tb.cast("int32")).numpy()
  an = (a.T if layout == "aT" else a).astype(np.int32)
  bn = (b.T if layout == "bT" else b).astype(np.int32)
  np.testing.assert_array_equal(got, an @ bn)
  audit()


def test_chunked_kernels_dmas_stay_in_their_declared_extents(audit):
  """Lane chunks with a tail (their last DMAs run past the buffer) and a long-row reduce by blocks."""
  a = np.arange(4099 * 17, dtype=np.int32).reshape(4099, 17)
  np.testing.assert_array_equal((Tensor(a, device="TINYTPU") * 3 + 1).numpy(), a * 3 + 1)
  r = np.arange(37 * 5008, dtype=np.int32).reshape(37, 5008) % 1013
  np.testing.assert_array_equal(Tensor(r, device="TINYTPU").sum(axis=1).numpy(), r.sum(axis=1))
  audit()


def test_rows_and_table_windows_stay_in_their_declared_extents(audit):
  """An fp32 matmul whose weights exceed VMEM per output tile (rows by blocks, backend/rowblock.py),
  a concatenation read through table windows, a transpose through lane rows and an fp32 matmul
  whose weights come by row windows (backend/windows.py)."""
  rng = np.random.default_rng(5)
  x, w = rng.standard_normal((4, 784)).astype(np.float32), rng.standard_normal((784, 100)).astype(np.float32)
  got = (Tensor(x, device="TINYTPU") @ Tensor(w, device="TINYTPU")).numpy()
  np.testing.assert_allclose(got, x @ w, rtol=1e-4, atol=1e-4)
  p, q = np.arange(3 * 26325, dtype=np.int32).reshape(3, 26325), np.arange(3 * 7, dtype=np.int32).reshape(3, 7)
  np.testing.assert_array_equal(Tensor(p, device="TINYTPU").cat(Tensor(q, device="TINYTPU"), dim=1).numpy(), np.concatenate([p, q], 1))
  t = rng.standard_normal((37, 1024)).astype(np.float32)
  np.testing.assert_array_equal(Tensor(t, device="TINYTPU").T.contiguous().numpy(), t.T)
  a, b = rng.standard_normal((8, 256)).astype(np.float32), rng.standard_normal((256, 256)).astype(np.float32)
  np.testing.assert_allclose((Tensor(a, device="TINYTPU") @ Tensor(b, device="TINYTPU")).numpy(), a.astype(np.float64) @ b, rtol=1e-4, atol=1e-4)
  audit()


def test_row_windows_past_the_buffer_stay_in_their_declared_extents(audit):
  """An fp32 matmul whose weights are the last 264 columns of a (64, 272) buffer, read by row windows
  (backend/windows.py): the last row's window runs a tile past the buffer's end, which its `over`
  must declare (the planned extents of the other shapes here end inside their buffers)."""
  rng = np.random.default_rng(6)
  big, a = rng.standard_normal((64, 272)).astype(np.float32), rng.standard_normal((8, 64)).astype(np.float32)
  got = (Tensor(a, device="TINYTPU") @ Tensor(big, device="TINYTPU")[:, 8:]).numpy()
  np.testing.assert_allclose(got, a.astype(np.float64) @ big[:, 8:], rtol=1e-4, atol=1e-4)
  audit()
