"""tinygrad programs on the TINYTPU device, compared with numpy on the same data."""
import numpy as np
import pytest

import tinytpu  # noqa: F401  registers the device
from tinytpu import asm
from tinygrad import Tensor, dtypes

D = "TINYTPU"
rng = np.random.default_rng(1234)
I = rng.integers(-1000, 1000, (7, 13)).astype(np.int32)
J = rng.integers(-1000, 1000, (13,)).astype(np.int32)
F = rng.standard_normal((6, 11)).astype(np.float32)
G = rng.standard_normal((6, 11)).astype(np.float32)
A8 = rng.integers(-128, 128, (5, 9)).astype(np.int8)
B8 = rng.integers(-128, 128, (9, 6)).astype(np.int8)


def T(x):
  return Tensor(x, device=D)


CASES = {
  # elementwise int32 and broadcasting
  "add_bcast": (lambda: T(I) + T(J), lambda: I + J),
  "int_chain": (lambda: ((T(I) * 3 - T(J)) // 7) % 5, lambda: ((I * 3 - J) // 7) % 5),
  "int_bits": (lambda: (T(I) & 0xF0) | (T(I) << 2) ^ (T(I) >> 3), lambda: (I & 0xF0) | (I << 2) ^ (I >> 3)),
  "max_min": (lambda: T(I).maximum(T(J)).minimum(500), lambda: np.minimum(np.maximum(I, J), 500)),
  "where": (lambda: (T(I) > 0).where(T(I), T(J)), lambda: np.where(I > 0, I, J)),
  "cmp": (lambda: (T(I) < T(J)).cast(dtypes.int32) + (T(I) == 3).cast(dtypes.int32), lambda: (I < J).astype(np.int32) + (I == 3)),
  # elementwise fp32
  "fp_chain": (lambda: T(F) * T(G) + T(F) / 3 - 1.5, lambda: F * G + F / np.float32(3) - np.float32(1.5)),
  "fp_unary": (lambda: T(F).abs().sqrt() + T(F).neg().relu(), lambda: np.sqrt(np.abs(F)) + np.maximum(-F, 0)),
  "exp_log": (lambda: T(F).exp() + (T(F).abs() + 1).log(), lambda: np.exp(F) + np.log(np.abs(F) + 1)),
  "sin": (lambda: T(F).sin(), lambda: np.sin(F)),
  "recip": (lambda: 1 / (T(F).abs() + 0.5), lambda: 1 / (np.abs(F) + np.float32(0.5))),
  # casts and narrow ints
  "f2i": (lambda: (T(F) * 100).cast(dtypes.int32), lambda: (F * 100).astype(np.int32)),
  "i2f": (lambda: T(I).cast(dtypes.float32) / 7, lambda: I.astype(np.float32) / np.float32(7)),
  "int8_wrap": (lambda: T(A8) * 3 + 100, lambda: (A8 * np.int8(3) + np.int8(100)).astype(np.int8)),
  "to_int8": (lambda: T(I).cast(dtypes.int8), lambda: I.astype(np.int8)),
  "uint8": (lambda: T(I).cast(dtypes.uint8).cast(dtypes.int32) + 1, lambda: I.astype(np.uint8).astype(np.int32) + 1),
  "bool": (lambda: (T(I) > 0) & (T(J) < 0), lambda: (I > 0) & (J < 0)),
  # reductions over every axis
  "sum_all": (lambda: T(I).sum(), lambda: I.sum()),
  "sum_rows": (lambda: T(I).sum(axis=1), lambda: I.sum(1)),
  "sum_cols": (lambda: T(I).sum(axis=0), lambda: I.sum(0)),
  "max_rows": (lambda: T(I).max(axis=1), lambda: I.max(1)),
  "min_cols": (lambda: T(I).min(axis=0), lambda: I.min(0)),
  "fsum": (lambda: T(F).sum(axis=1), lambda: F.sum(1)),
  "fmean": (lambda: T(F).mean(), lambda: F.mean()),
  "argmax": (lambda: T(I).argmax(axis=1), lambda: I.argmax(1)),
  "argmin_f": (lambda: T(F).argmin(axis=0), lambda: F.argmin(0)),
  # movement
  "transpose": (lambda: T(I).T + 1, lambda: I.T + 1),
  "permute3": (lambda: T(I.reshape(7, 13, 1)).permute(2, 1, 0) * 2, lambda: I.reshape(7, 13, 1).transpose(2, 1, 0) * 2),
  "flip": (lambda: T(I).flip(1), lambda: I[:, ::-1]),
  "pad": (lambda: T(I).pad(((1, 2), (3, 0))), lambda: np.pad(I, ((1, 2), (3, 0)))),
  "shrink": (lambda: T(F)[1:5, 2:9:3] * 2, lambda: F[1:5, 2:9:3] * 2),
  "expand": (lambda: T(J).reshape(1, 13).expand(4, 13) + 0, lambda: np.broadcast_to(J, (4, 13))),
  "reshape": (lambda: T(I).reshape(13, 7) + 0, lambda: I.reshape(13, 7)),
  "cat": (lambda: T(I).cat(T(I) * 2, dim=0), lambda: np.concatenate([I, I * 2])),
  # matmuls and models
  "matmul_int": (lambda: T(A8).cast(dtypes.int32) @ T(B8).cast(dtypes.int32), lambda: A8.astype(np.int32) @ B8.astype(np.int32)),
  "matmul_fp": (lambda: T(F) @ T(G).T, lambda: F @ G.T),
  "softmax": (lambda: T(F).softmax(1), lambda: np.exp(F - F.max(1, keepdims=True)) / np.exp(F - F.max(1, keepdims=True)).sum(1, keepdims=True)),
  "layernorm": (lambda: T(F).layernorm(axis=1), lambda: (F - F.mean(1, keepdims=True)) / np.sqrt(F.var(1, keepdims=True) + 1e-5)),
}
# fp32 results that go through approximate instructions or a different summation order
RTOL = {"exp_log": 1e-5, "sin": 1e-5, "fsum": 1e-5, "fmean": 1e-5, "matmul_fp": 1e-5, "softmax": 1e-5, "layernorm": 1e-4}


@pytest.mark.parametrize("name", list(CASES))
def test_kernel(name):
  f, ref = CASES[name]
  got, exp = f().numpy(), np.asarray(ref())
  assert got.shape == exp.shape, (got.shape, exp.shape)
  if np.issubdtype(exp.dtype, np.floating):
    np.testing.assert_allclose(got, exp, rtol=RTOL.get(name, 1e-6), atol=RTOL.get(name, 1e-6) * 10)  # tinygrad itself reassociates (x/3 -> x*(1/3))
  else:
    np.testing.assert_array_equal(got, exp)


def test_elementwise_thousands():
  x = rng.integers(-2**20, 2**20, 3001).astype(np.int32)
  y = rng.standard_normal(3001).astype(np.float32)
  np.testing.assert_array_equal((T(x) * 7 + (T(x) >> 2)).numpy(), x * 7 + (x >> 2))
  np.testing.assert_array_equal((T(y) * 2 - T(y) * T(y)).numpy(), y * 2 - y * y)


def test_int8_mlp():
  x = rng.integers(-128, 128, (12, 20)).astype(np.int8)
  w1, b1 = rng.integers(-128, 128, (20, 16)).astype(np.int8), rng.integers(-500, 500, 16).astype(np.int32)
  w2 = rng.integers(-128, 128, (16, 5)).astype(np.int8)
  h = ((T(x).cast(dtypes.int32) @ T(w1).cast(dtypes.int32) + T(b1)).relu() >> 8).minimum(127)
  out = (h @ T(w2).cast(dtypes.int32)).argmax(1).numpy()
  hn = np.minimum(np.maximum(x.astype(np.int32) @ w1.astype(np.int32) + b1, 0) >> 8, 127)
  np.testing.assert_array_equal(out, (hn @ w2.astype(np.int32)).argmax(1))


def test_conv2d():
  x = rng.standard_normal((1, 2, 6, 6)).astype(np.float32)
  w = rng.standard_normal((3, 2, 3, 3)).astype(np.float32)
  got = T(x).conv2d(T(w)).numpy()
  exp = np.zeros((1, 3, 4, 4), np.float32)
  for o in range(3):
    for i in range(4):
      for j in range(4):
        exp[0, o, i, j] = (x[0, :, i:i + 3, j:j + 3] * w[o]).sum()
  np.testing.assert_allclose(got, exp, rtol=1e-5, atol=1e-5)


def test_unsupported_dtype_names_uop():
  # the UOp, its dtype, why, and which kernel of the schedule
  with pytest.raises(NotImplementedError, match=r"TINYTPU cannot lower Ops.PARAM \(dtypes.double\): buffer dtype .*\(kernel r_4\)"):
    Tensor(np.ones(4), device=D, dtype=dtypes.float64).sum().numpy()


# int8 matmuls on the MXU (the dot-product reduce is recognised; tails are padded)
def _mxu_kernels(f):
  """Run f, return (result, number of launched kernels that use the MXU)."""
  from tinytpu.backend import device
  seen = []
  orig = device.TinyTPUProgram.__call__
  def spy(self, *a, **kw):
    seen.append(any(asm.disassemble([w], self.kernel.N).startswith("MMUL") for w in self.kernel.words))
    return orig(self, *a, **kw)
  device.TinyTPUProgram.__call__ = spy
  try:
    return f(), sum(seen)
  finally:
    device.TinyTPUProgram.__call__ = orig


# (72, 20, 72): more result tiles than PSUM holds (two column groups); (1030, 8, 4): more row tiles
# than one MMUL takes; (4, 1040, 4): more K blocks than LOOPI counts
@pytest.mark.parametrize("m,k,n", [(1, 4, 4), (5, 9, 6), (17, 33, 5), (64, 64, 64), (72, 20, 72), (1030, 8, 4), (4, 1040, 4)])
@pytest.mark.parametrize("src", ["int8", "int32"])
def test_mxu_matmul(m, k, n, src):
  a = rng.integers(-128, 128, (m, k)).astype(np.int8)
  b = rng.integers(-128, 128, (k, n)).astype(np.int8)
  if src == "int8":
    got, used = _mxu_kernels(lambda: (T(a).cast(dtypes.int32) @ T(b).cast(dtypes.int32)).numpy())
  else:
    got, used = _mxu_kernels(lambda: (T(a.astype(np.int32)) @ T(b.astype(np.int32))).numpy())
  np.testing.assert_array_equal(got, a.astype(np.int32) @ b.astype(np.int32))
  assert used == 1


def test_mxu_epilogue():
  x = rng.integers(-128, 128, (7, 20)).astype(np.int8)
  w = rng.integers(-128, 128, (20, 9)).astype(np.int8)
  bias = rng.integers(-3000, 3000, 9).astype(np.int32)
  got, used = _mxu_kernels(lambda: ((T(x).cast(dtypes.int32) @ T(w).cast(dtypes.int32) + T(bias)).relu() >> 4).numpy())
  np.testing.assert_array_equal(got, np.maximum(x.astype(np.int32) @ w.astype(np.int32) + bias, 0) >> 4)
  assert used >= 1


@pytest.mark.parametrize("kind", ["transposed_a", "transposed_b", "batched"])
def test_mxu_layouts(kind):
  a = rng.integers(-128, 128, (3, 6, 10)).astype(np.int8)
  b = rng.integers(-128, 128, (3, 10, 5)).astype(np.int8)
  i32 = lambda x: T(x).cast(dtypes.int32)
  if kind == "transposed_a":
    f, exp = lambda: (i32(a[0].T.copy()).T @ i32(b[0])).numpy(), a[0].astype(np.int32) @ b[0]
  elif kind == "transposed_b":
    f, exp = lambda: (i32(a[0]) @ i32(b[0].T.copy()).T).numpy(), a[0].astype(np.int32) @ b[0]
  else:  # the batch range is in both operands' index: one GEMM per batch value
    f, exp = lambda: (i32(a) @ i32(b)).numpy(), np.matmul(a.astype(np.int32), b.astype(np.int32))
  got, used = _mxu_kernels(f)
  np.testing.assert_array_equal(got, exp)
  assert used == 1


# convolutions on the MXU: cin, kh, kw reduce together (an implicit GEMM staged through index tables),
# padding is a gated load that reads the zero, a batch/depthwise channel is one GEMM per value;
# a grouped conv's group is co // cout_per_group: the out-channel range splits into group (a batch) and channel
CONVS = {
  "conv2d": (lambda x, w: x.conv2d(w), (1, 3, 9, 9), (5, 3, 3, 3), True),
  "batch2": (lambda x, w: x.conv2d(w), (2, 3, 7, 8), (4, 3, 3, 2), True),
  "stride2": (lambda x, w: x.conv2d(w, stride=2), (1, 4, 9, 9), (6, 4, 3, 3), True),
  "dilation2": (lambda x, w: x.conv2d(w, dilation=2), (1, 2, 9, 9), (3, 2, 3, 3), True),
  "padding1": (lambda x, w: x.conv2d(w, padding=1), (1, 3, 6, 6), (4, 3, 3, 3), True),
  "padding_asym": (lambda x, w: x.conv2d(w, padding=(2, 0, 1, 1)), (2, 2, 5, 7), (3, 2, 2, 3), True),
  "conv1d": (lambda x, w: x.conv2d(w), (1, 4, 20), (8, 4, 5), True),
  "depthwise": (lambda x, w: x.conv2d(w, groups=4, padding=1), (1, 4, 8, 8), (4, 1, 3, 3), True),
  "groups2": (lambda x, w: x.conv2d(w, groups=2), (1, 4, 8, 8), (6, 2, 3, 3), True),
  "groups3_pad": (lambda x, w: x.conv2d(w, groups=3, padding=1), (2, 6, 5, 5), (9, 2, 3, 3), True),
}


@pytest.mark.parametrize("name", CONVS)
def test_mxu_conv(name):
  f, xs, ws, on_mxu = CONVS[name]
  x, w = rng.integers(-128, 128, xs).astype(np.int8), rng.integers(-128, 128, ws).astype(np.int8)
  run = lambda dev: f(Tensor(x, device=dev).cast(dtypes.int32), Tensor(w, device=dev).cast(dtypes.int32)).numpy()
  got, used = _mxu_kernels(lambda: run(D))
  np.testing.assert_array_equal(got, run("PYTHON"))
  assert used == (1 if on_mxu else 0)


# matrix-vector products (one M tile, several N tiles) run transposed (layout.py: C^T = B^T A^T, the
# few rows become the stationary weights): exact either way, and fewer MLWs in the program
TRANSPOSED = {
  "matvec": (lambda a, b: a @ b, (1, 400), (400, 120)),
  "thin": (lambda a, b: a @ b, (3, 20), (20, 37)),
  "two_row_tiles": (lambda a, b: a @ b, (8, 40), (40, 24)),  # Mt = 2 < Nt = 6 (a small batch: mlp_784_128_10)
  "small_batch_bias_relu": (lambda a, b: (a @ b + 7).relu(), (16, 200), (200, 28)),  # saves 300 pairs: over the fused epilogue
  "bf16": (lambda a, b: a.cast(dtypes.bfloat16).realize() @ b.cast(dtypes.bfloat16).realize(), (1, 24), (24, 9)),
  "batched": (lambda a, b: a @ b, (2, 2, 9), (2, 9, 13)),
  "conv_padded": (lambda x, w: x.conv2d(w, padding=1), (1, 3, 2, 2), (20, 3, 3, 3)),
  "conv_1x1_out": (lambda x, w: x.conv2d(w), (1, 2, 3, 3), (9, 2, 3, 3)),
}


def _mlws(f):
  """Run f, return (result, MLWs in the program text of every MXU kernel it launched)."""
  from tinytpu.backend import device
  counts = []
  orig = device.TinyTPUProgram.__call__
  def spy(self, *a, **kw):
    if n := sum(asm.disassemble([w], self.kernel.N).startswith("MLW") for w in self.kernel.words):
      counts.append(n)
    return orig(self, *a, **kw)
  device.TinyTPUProgram.__call__ = spy
  try:
    return f(), counts
  finally:
    device.TinyTPUProgram.__call__ = orig


@pytest.mark.parametrize("name", TRANSPOSED)
def test_mxu_transposed(name, vmem_resident, monkeypatch):
  """The resident layout's transposed schedule (the streamed plans choose their orientation by cost,
  tests/backend/test_mxu_stream.py): a VMEM that holds the 400x120 matrix-vector operands."""
  from tinygrad.engine import realize
  from tinytpu.backend import layout
  f, xs, ws = TRANSPOSED[name]
  x, w = rng.integers(-128, 128, xs).astype(np.int8), rng.integers(-128, 128, ws).astype(np.int8)
  run = lambda dev: f(Tensor(x, device=dev).cast(dtypes.int32), Tensor(w, device=dev).cast(dtypes.int32)).numpy()
  if name == "bf16":  # MMUL.BF16 sums exactly in fp32 (these integer sums are exact), one rounding to bf16 (PYTHON rounds each partial sum)
    import torch
    exp = torch.tensor(x.astype(np.float32) @ w.astype(np.float32)).bfloat16().float().numpy()
    run_ = run
    run = lambda dev: run_(dev).astype(np.float32)  # noqa: E731
  else:
    exp = run("PYTHON")
  got, on = _mlws(lambda: run(D))
  np.testing.assert_array_equal(got, exp)
  monkeypatch.setattr(layout, "worth_transposing", lambda d, N: False)
  realize.to_program_cache.clear()  # fresh_programs' cache: render the kernel again
  got, off = _mlws(lambda: run(D))
  np.testing.assert_array_equal(got, exp)
  assert len(on) == len(off) == 1 and on[0] < off[0], (on, off)


def test_mxu_operand_range():
  a = rng.integers(-128, 128, (5, 9)).astype(np.int32)
  b = rng.integers(-128, 128, (9, 6)).astype(np.int32)
  b[3, 2] = 300
  with pytest.raises(ValueError, match=r"matmul operand buffer \d \(dtypes.int, 54 elements\) holds values in \[-?\d+, 300\]"):
    (T(a) @ T(b)).numpy()


# full reductions run across the lanes (lane-parallel partial accumulators, then a tile reduction):
# extents below, at and past one tile, not a multiple of it, and past the unrolled steps (a loop)
@pytest.mark.parametrize("n", [2, 15, 16, 20, 300])
def test_full_reductions(n):
  a = rng.integers(-1000, 1000, n).astype(np.int32)
  f = rng.standard_normal(n).astype(np.float32)
  assert T(a).sum().item() == a.sum()
  assert T(a).max().item() == a.max()
  assert T(a).min().item() == a.min()
  assert (T(a) * 3 + 1).sum().item() == (a * 3 + 1).sum()
  np.testing.assert_allclose(T(f).sum().item(), f.sum(), rtol=1e-5, atol=1e-5)
  assert T(f).max().item() == f.max()
  np.testing.assert_allclose(T(f).mean().item(), f.mean(), rtol=1e-5, atol=1e-6)


# axis reductions: short reduce loops are unrolled (the step folded into gather offsets), long ones
# run several steps per iteration (20, 40) or loop step by step (17), with strided induction
# registers; rows and columns, ints and floats
@pytest.mark.parametrize("shape", [(8, 8), (5, 17), (3, 40), (20, 3), (40, 3)])
@pytest.mark.parametrize("axis", [0, 1])
def test_axis_reductions(shape, axis):
  a = rng.integers(-1000, 1000, shape).astype(np.int32)
  f = rng.standard_normal(shape).astype(np.float32)
  np.testing.assert_array_equal(T(a).sum(axis=axis).numpy(), a.sum(axis=axis))
  np.testing.assert_array_equal(T(a).max(axis=axis).numpy(), a.max(axis=axis))
  np.testing.assert_allclose(T(f).sum(axis=axis).numpy(), f.sum(axis=axis), rtol=1e-5, atol=1e-5)
  np.testing.assert_allclose(T(f).softmax(axis).numpy(), np.exp(f - f.max(axis, keepdims=True)) / np.exp(f - f.max(axis, keepdims=True)).sum(axis, keepdims=True), rtol=1e-5, atol=1e-6)
