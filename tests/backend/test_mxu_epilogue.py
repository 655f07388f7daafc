"""Fused PSUM epilogues (backend/epilogue.py): an int8 GEMM's or convolution's `+ bias` and ReLU
drained from PSUM through PEPI.B / PEPI.BR, exact against numpy; chains that must keep the SIMT
epilogue; the RTL against the golden model (TINYTPU_SIM=both); the listing checked for the PEPI
(so a fusion that silently stopped happening fails here)."""
import numpy as np
import pytest

import tinytpu  # noqa: F401  registers the device
from tinygrad import Tensor, dtypes
from tinytpu.backend import epilogue, listing

D = "TINYTPU"


@pytest.fixture
def fused(monkeypatch, fresh_programs):
  """(mnemonics of the fused epilogues, listings) of every kernel rendered in the test."""
  seen = {"epis": [], "asm": [], "streamed": []}
  plan, render = epilogue.Epilogue.plan_epilogues, listing.render
  def spy_plan(self):
    plan(self)
    seen["epis"] += [(e.mnemonic, "psum" if e.area is None else "area") for e in self.epis.values()]
    seen["streamed"].append(self.mstream is not None)
  def spy_render(name, k):
    text = render(name, k)
    seen["asm"].append(text)
    return text
  monkeypatch.setattr(epilogue.Epilogue, "plan_epilogues", spy_plan)
  monkeypatch.setattr(listing, "render", spy_render)
  return seen


def _pepi(seen, mn: str) -> int:
  return sum(ln.split()[0] == mn for text in seen["asm"] for ln in text.splitlines() if ln.strip() and not ln.startswith(("#", ".")))


def _wrap(x):
  """int32 wrap of exact integers."""
  return (np.asarray(x, dtype=np.int64) + 2**31) % 2**32 - 2**31


def _t(a):
  return Tensor(np.ascontiguousarray(a).astype(np.int32), device=D)


def _gemm(rng, M, K, Nc):
  return rng.integers(-128, 128, (M, K)), rng.integers(-128, 128, (K, Nc))


# (M, K, Nc): Nc = N (= 4) puts each lane tile on its result tile (PEPI in the lane loop), the others
# gather their results from the result area (PEPI in the prologue's drain, a bias tile per column block)
SHAPES = [((32, 64, 4), "psum"), ((16, 32, 8), "area"), ((24, 40, 10), "area"), ((64, 48, 16), "area")]


@pytest.mark.parametrize("relu", [False, True], ids=["bias", "bias_relu"])
@pytest.mark.parametrize("shape,path", SHAPES, ids=[f"{m}x{k}x{n}" for (m, k, n), _ in SHAPES])
def test_gemm_bias_fused_exact(shape, path, relu, fused):
  rng = np.random.default_rng(sum(shape))
  a, w = _gemm(rng, *shape)
  b = rng.integers(-20000, 20000, shape[2])
  y = _t(a) @ _t(w) + _t(b)
  out = (y.relu() if relu else y).numpy()
  ref = a @ w + b
  np.testing.assert_array_equal(out, np.maximum(ref, 0) if relu else ref)
  mn = "PEPI.BR" if relu else "PEPI.B"
  assert fused["epis"] == [(mn, path)]
  assert _pepi(fused, mn) >= 1 and _pepi(fused, "PEPI.B" if relu else "PEPI.BR") == 0


def test_int32_wrap_of_the_bias_add(fused):
  """tinygrad's int32 add wraps; so does PEPI's (biases near INT_MAX/INT_MIN)."""
  rng = np.random.default_rng(3)
  a, w = _gemm(rng, 16, 32, 8)
  b = np.array([2**31 - 1, -2**31, 2**31 - 5000, -2**31 + 7, 0, 1, -1, 2**30], dtype=np.int64)
  out = (_t(a) @ _t(w) + _t(b)).relu().numpy()
  ref = _wrap(a @ w + b)
  np.testing.assert_array_equal(out, np.maximum(ref, 0))
  assert fused["epis"] == [("PEPI.BR", "area")]


def test_per_element_bias(fused):
  """A bias per output element: fused where the lane tile is the result tile (the lane loop's own
  bias tile), SIMT where results are gathered (no per-column bias tile exists)."""
  rng = np.random.default_rng(4)
  for (M, K, Nc), want in (((32, 16, 4), [("PEPI.BR", "psum")]), ((16, 16, 8), [])):
    fused["epis"].clear()
    a, w = _gemm(rng, M, K, Nc)
    b = rng.integers(-5000, 5000, (M, Nc))
    out = (_t(a) @ _t(w) + _t(b)).relu().numpy()
    np.testing.assert_array_equal(out, np.maximum(a @ w + b, 0))
    assert fused["epis"] == want


def test_bias_of_one_element_broadcast_to_every_result(fused):
  """A bias buffer of one element added to every result (the fuzzer's `(a @ b) + c` with c of
  shape (1,)): its index has no lane term, the same value in every column. It crashed the bias
  planner (an int where it expected an array of elements); now it fuses as a column bias."""
  rng = np.random.default_rng(6)
  for M, K, Nc in ((2, 2, 1), (32, 16, 8)):
    fused["epis"].clear()
    a, w = _gemm(rng, M, K, Nc)
    b = rng.integers(-5000, 5000, (1,))
    np.testing.assert_array_equal((_t(a) @ _t(w) + _t(b)).numpy(), a @ w + b)
    assert fused["epis"] and all(m == "PEPI.B" for m, _ in fused["epis"]), fused["epis"]


def _conv(rng, B, C, H, O, k):
  x, w = rng.integers(-128, 128, (B, C, H, H)), rng.integers(-128, 128, (O, C, k, k))
  return x, w


def _np_conv(x, w, pad):
  B, C, H, _ = x.shape
  O, _, k, _ = w.shape
  p = np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad)))
  Ho = H + 2 * pad - k + 1
  cols = np.stack([p[:, :, i:i + Ho, j:j + Ho] for i in range(k) for j in range(k)], axis=2)  # B, C, k*k, Ho, Ho
  return np.einsum("bckhw,ock->bohw", cols, w.reshape(O, C, k * k))


@pytest.mark.parametrize("pad", [0, 1])
def test_conv_bias_relu_fused_exact(pad, fused):
  rng = np.random.default_rng(5 + pad)
  x, w = _conv(rng, 2, 3, 6, 8, 3)
  b = rng.integers(-30000, 30000, 8)
  out = (_t(x).conv2d(_t(w), padding=pad) + _t(b.reshape(1, -1, 1, 1))).relu().numpy()
  np.testing.assert_array_equal(out, np.maximum(_np_conv(x, w, pad) + b.reshape(1, -1, 1, 1), 0))
  assert fused["epis"] == [("PEPI.BR", "area")]
  assert _pepi(fused, "PEPI.BR") >= 1


@pytest.fixture
def guards(monkeypatch):
  """The outcome of every launch guard of a requantising drain (epilogue.requant_holds)."""
  seen = []
  holds = epilogue.requant_holds
  def spy(g, host):
    ok = holds(g, host)
    seen.append(ok)
    return ok
  monkeypatch.setattr(epilogue, "requant_holds", spy)
  return seen


def test_cnn_layers_requantise_in_the_drain(fused, guards, vmem_resident):
  """The CNN demo's network (random int8 weights): both convolutions drain through PEPI.BRQ (their
  guards hold), the head through PEPI.B; exact with the demo's numpy int8 model. In a VMEM that holds
  its operands: the resident layout's drains (the streamed plans': the test after next)."""
  from tinytpu import demo_cnn
  q = demo_cnn.random_quantnet(1)
  x = np.random.default_rng(6).integers(0, 17, (16, 64))  # 16 images: more row tiles than the head's 3 column tiles (not run transposed)
  out = demo_cnn.tinytpu_model(q)(x).numpy()
  np.testing.assert_array_equal(out, demo_cnn.logits_numpy(q, x))
  # each convolution: the fused program and its fallback (bias and ReLU fused, the requantisation SIMT)
  assert sorted(fused["epis"]) == [("PEPI.B", "area")] + [("PEPI.BR", "area")] * 2 + [("PEPI.BRQ", "area")] * 2
  assert _pepi(fused, "PEPI.BRQ") >= 2 and guards == [True, True]


def _tinygrad_requant(acc, b, m, r, s):
  """tinygrad's int32 arithmetic of min((max(acc + b, 0) * m + r) >> s, 127)."""
  a = np.maximum(_wrap(acc + b), 0)
  return np.minimum(_wrap(a * m + r) >> s, 127)


def _requant_layer(rng, m, r, s, pad=1, B=2, H=6, C=4):
  x, w = _conv(rng, B, C, H, 8, 3)
  b = rng.integers(-3000, 3000, 8)
  ch = lambda v: _t(np.asarray(v).reshape(1, -1, 1, 1))  # noqa: E731
  a = (_t(x).conv2d(_t(w), padding=pad) + ch(b)).relu()
  out = ((a * ch(m) + ch(r)) >> ch(s)).minimum(127).numpy()
  c = lambda v: np.asarray(v).reshape(1, -1, 1, 1)  # noqa: E731
  return out, _tinygrad_requant(_np_conv(x, w, pad), c(b), c(m), c(r), c(s))


def test_requantising_conv_exact_when_the_guard_holds(fused, guards):
  rng = np.random.default_rng(11)
  s = rng.integers(8, 14, 8)
  out, ref = _requant_layer(rng, rng.integers(0, 1 << 8, 8), 1 << (s - 1), s)
  np.testing.assert_array_equal(out, ref)
  assert fused["epis"] == [("PEPI.BRQ", "area"), ("PEPI.BR", "area")] and guards == [True]
  # the listing carries the guard and the fallback program through the compiled record's JSON
  from tinytpu.backend.device import backend_config
  text = next(t for t in fused["asm"] if listing.FALLBACK in t)
  c = listing.compile_listing(text, backend_config())
  back = listing.Compiled.from_bytes(c.to_bytes())
  assert len(back.guards) == 1 and back.guards == c.guards
  alt = listing.Compiled.from_bytes(back.fallback.encode())
  assert alt.fallback is None and alt.words != back.words and alt.bufs == back.bufs


@pytest.mark.parametrize("why", ["rounding constant not 2^(s-1)", "negative multiplier", "multiply wraps in int32", "shift 0"])
def test_requantising_conv_falls_back_when_the_guard_fails(why, fused, guards):
  """Values for which PEPI.BRQ would differ from tinygrad's int32 chain: the launch runs the SIMT
  program (exact), never the fused one."""
  rng = np.random.default_rng(12)
  s = rng.integers(8, 14, 8)
  m, r = rng.integers(0, 1 << 8, 8), 1 << (s - 1)
  if why.startswith("rounding"):
    r = r + 1
  elif why.startswith("negative"):
    m = -m
  elif why.startswith("multiply"):
    m = np.full(8, 1 << 20)
  else:
    s, r = np.zeros(8, np.int64), np.zeros(8, np.int64)
  out, ref = _requant_layer(rng, m, r, s)
  np.testing.assert_array_equal(out, ref)
  assert fused["epis"] == [("PEPI.BRQ", "area"), ("PEPI.BR", "area")]  # the fused program and its fallback
  assert guards == [False]


def test_chains_that_do_not_fuse(fused):
  """Every one of these keeps PLD and the SIMT epilogue, and is exact."""
  rng = np.random.default_rng(7)
  a, w = _gemm(rng, 16, 32, 8)
  b = rng.integers(-5000, 5000, 8)
  A, W, B = _t(a), _t(w), _t(b)
  cases = [
    ("relu, then bias", lambda: ((A @ W).relu() + B), np.maximum(a @ w, 0) + b),
    ("the raw result used twice", lambda: ((A @ W + B) * (A @ W)), _wrap((a @ w + b) * (a @ w))),
    ("a float epilogue", lambda: ((A @ W).cast(dtypes.float32) + B.cast(dtypes.float32) * 0.5), (a @ w + 0.5 * b).astype(np.float32)),
    ("a uint32 bias", lambda: ((A @ W).cast(dtypes.uint32) + B.cast(dtypes.uint32)), ((a @ w + b) % 2**32).astype(np.uint32)),
  ]
  for why, f, ref in cases:
    fused["epis"].clear()
    np.testing.assert_array_equal(f().numpy(), ref, err_msg=why)
    assert fused["epis"] == [], why


def test_bias_then_something_else_fuses_the_bias_only(fused):
  rng = np.random.default_rng(8)
  a, w = _gemm(rng, 16, 32, 8)
  b = rng.integers(-5000, 5000, 8)
  out = ((_t(a) @ _t(w) + _t(b)) * 3 - 7).numpy()
  np.testing.assert_array_equal(out, (a @ w + b) * 3 - 7)
  assert fused["epis"] == [("PEPI.B", "area")]


@pytest.mark.parametrize("what", ["gemm_psum", "gemm_area", "conv", "row_block"])
def test_rtl_matches_golden(what, fused, monkeypatch):
  monkeypatch.setenv("TINYTPU_SIM", "both")
  rng = np.random.default_rng(9)
  if what == "conv":
    x, w = _conv(rng, 1, 4, 6, 8, 3)
    b = rng.integers(-30000, 30000, 8)
    out = (_t(x).conv2d(_t(w), padding=1) + _t(b.reshape(1, -1, 1, 1))).relu().numpy()
    ref = np.maximum(_np_conv(x, w, 1) + b.reshape(1, -1, 1, 1), 0)
  elif what == "row_block":  # a matrix-vector layer (run transposed): its bias per row block
    a, w = _gemm(rng, 2, 64, 32)
    b = rng.integers(-30000, 30000, 32)
    out = (_t(a) @ _t(w) + _t(b)).relu().numpy()
    ref = np.maximum(a @ w + b, 0)
  else:
    a, w = _gemm(rng, 32, 48, 4 if what == "gemm_psum" else 12)
    b = rng.integers(-30000, 30000, w.shape[1])
    out = (_t(a) @ _t(w) + _t(b)).relu().numpy()
    ref = np.maximum(a @ w + b, 0)
  np.testing.assert_array_equal(out, ref)
  assert fused["epis"] == [("PEPI.BR", "psum" if what == "gemm_psum" else "area")]


def test_rtl_matches_golden_requantising(fused, guards, monkeypatch):
  monkeypatch.setenv("TINYTPU_SIM", "both")
  rng = np.random.default_rng(13)
  s = rng.integers(6, 12, 8)
  out, ref = _requant_layer(rng, rng.integers(0, 1 << 9, 8), 1 << (s - 1), s, pad=0)
  np.testing.assert_array_equal(out, ref)
  assert guards == [True]


@pytest.mark.parametrize("shape,rowbias", [((16, 32, 8), True), ((2, 64, 32), False), ((1, 400, 120), False)],
                         ids=["row_bias", "matrix_vector", "matrix_vector_1x400x120"])
def test_bias_per_row_block(shape, rowbias, fused, vmem_resident):
  """A bias per output row (or a matrix-vector layer's per-channel bias when the GEMM runs
  transposed: its channels are the rows then) drains with a bias tile per row block (the resident
  layout's fused drain: 1x400x120's weights do not fit in 1024 tiles)."""
  rng = np.random.default_rng(sum(shape))
  a, w = _gemm(rng, *shape)
  b = rng.integers(-20000, 20000, (shape[0], 1) if rowbias else shape[2])
  out = (_t(a) @ _t(w) + _t(b)).relu().numpy()
  np.testing.assert_array_equal(out, np.maximum(a @ w + b, 0))
  assert fused["epis"] == [("PEPI.BR", "area")]


# at the architecture's 1024 VMEM tiles a batch of 32 12x12 images (an output of 2304 tiles)
# streams through the MXU (mxu_stream.py); its drain applies the epilogue the same way
@pytest.mark.parametrize("holds", [True, False], ids=["guard_holds", "shift_0"])
def test_streamed_conv_requantises_in_the_drain(holds, fused, guards, vmem_1024, monkeypatch):
  """A streamed convolution's chunks drain PSUM through PEPI.BRQ, a bias and parameter tile per
  block column of output channels; when the launch guard fails the fallback program (bias and ReLU
  fused, the requantisation SIMT) runs. Exact with tinygrad's int32 chain, the RTL as golden."""
  monkeypatch.setenv("TINYTPU_SIM", "both")
  rng = np.random.default_rng(14)
  s = rng.integers(6, 12, 8) if holds else np.zeros(8, np.int64)
  r = 1 << s - 1 if holds else np.zeros(8, np.int64)
  out, ref = _requant_layer(rng, rng.integers(0, 1 << 9, 8), r, s, B=32, H=12, C=1)
  np.testing.assert_array_equal(out, ref)
  assert fused["streamed"] == [True, True] and guards == [holds]
  assert fused["epis"] == [("PEPI.BRQ", "area"), ("PEPI.BR", "area")]
  assert _pepi(fused, "PEPI.BRQ") >= 2  # one per block column of the 8 channels (N = 4)


def test_streamed_requantising_conv_equals_tinygrads_python_device(fused, guards, vmem_1024):
  """The streamed PEPI.BRQ drain against tinygrad's own UOp semantics: the same program on the
  `PYTHON` device, element for element (16 images of 12x12: an output of 1152 tiles streams)."""
  rng = np.random.default_rng(15)
  x, w = _conv(rng, 16, 1, 12, 8, 3)
  b, m, s = rng.integers(-3000, 3000, 8), rng.integers(0, 1 << 9, 8), rng.integers(6, 12, 8)

  def layer(dev):
    t = lambda v: Tensor(np.ascontiguousarray(v).astype(np.int32), device=dev)  # noqa: E731
    ch = lambda v: t(np.asarray(v).reshape(1, -1, 1, 1))  # noqa: E731
    a = (t(x).conv2d(t(w), padding=1) + ch(b)).relu()
    return ((a * ch(m) + ch(1 << (s - 1))) >> ch(s)).minimum(127).numpy()
  np.testing.assert_array_equal(layer(D), layer("PYTHON"))
  assert fused["streamed"][0] is True and guards == [True]
  assert ("PEPI.BRQ", "area") in fused["epis"]


def test_cnn_layers_requantise_in_the_streamed_drain(fused, guards, vmem_1024):
  """The CNN demo's network on 64 images at 1024 tiles (the bench's cnn_digits): both convolutions
  stream and drain through PEPI.BRQ; exact with the demo's numpy int8 model."""
  from tinytpu import demo_cnn
  q = demo_cnn.random_quantnet(2)
  x = np.random.default_rng(7).integers(0, 17, (64, 64))
  np.testing.assert_array_equal(demo_cnn.tinytpu_model(q)(x).numpy(), demo_cnn.logits_numpy(q, x))
  brq = [st for st, (mn, _) in zip(fused["streamed"], fused["epis"]) if mn == "PEPI.BRQ"]
  assert brq == [True, True] and guards == [True, True]
