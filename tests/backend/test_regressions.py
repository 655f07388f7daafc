"""Wrong answers found on TINYTPU, each pinned as a program compared with tinygrad's own `PYTHON`
device (the UOp-semantics reference): exact for ints, 1e-5 relative for fp."""
import numpy as np
import pytest

import tinytpu  # noqa: F401  registers the device
from tinygrad import Tensor, dtypes

rng = np.random.default_rng(7)
F444 = rng.standard_normal((4, 4, 4)).astype(np.float32)
I7813 = rng.integers(-100, 100, (7, 8, 1, 3)).astype(np.int32)
F56 = rng.random((5, 6)).astype(np.float32)
I_EXT = np.concatenate([[-2**31, 2**31 - 1, 127, 128, -128, -129, 0, -1], rng.integers(-2**31, 2**31 - 1, 56)]).astype(np.int32)
F456 = rng.random((4, 5, 6)).astype(np.float32)
F2241 = (rng.random((2, 2, 4, 1)) * 300).astype(np.float32)
GATHER_IDX = rng.integers(0, 2, (2, 2, 4, 1)).astype(np.int32)
F99 = rng.standard_normal((9, 9)).astype(np.float32)

# name -> program over Tensors (the same on both devices)
CASES = {
  # a reduce of a reduce fused into one kernel: the inner loop ran across the lanes and was
  # tile-reduced once per run of the enclosing loop (issue 12: -17460.4 instead of 4.27)
  "sum_twice_fp": (lambda t: t.sum((0, 2)).sum(), F444),
  "sum_keepdim_max_int": (lambda t: t.sum((0, 3), keepdim=True).max(), I7813),
  # tinygrad's int32 min(x, k) is ~max(~x, ~k): lowered to one VMIN (handlers._min_of)
  "min_clip_int32": (lambda t: t.minimum(127) + t.clip(-128, 127) * 3 + t.minimum(-2**31) - t.minimum(2**31 - 1), I_EXT),
  "sum_then_sum_int": (lambda t: t.sum(1).sum(), I7813),
  "max_of_sums_fp": (lambda t: t.sum(0).max(), F444),
  # Ops.IF blocks (gated stores): the block runs in every lane, stores masked by the condition
  "nonzero": (lambda t: (t > 0.5).nonzero(), F56),
  "masked_select": (lambda t: t.masked_select(t > 0.5), F56),
  "cummax_values": (lambda t: t.cummax(2)[0], F456),
  "cummax_indices": (lambda t: t.cummax(2)[1], F456),
  "cumprod": (lambda t: t.cumprod(1), F56),
  # unsigned narrow division: lanes are zero-extended, so the signed VCDIV/VCMOD are exact
  "uint8_div_mod": (lambda t: (t.cast(dtypes.uint8) // 7) + (t.cast(dtypes.uint8) % 5), I7813),
  "uint16_div": (lambda t: (t.cast(dtypes.uint16) * 300) // t.cast(dtypes.uint16).maximum(1), I7813),
  # uint32 division from the signed divider: dividends and divisors across the whole range, x / 0
  "uint32_div_mod": (lambda t: (t // (t.flip(0) * 2654435761 + 7)) + (t % (t.flip(0) * 40503)),
                     (np.arange(64, dtype=np.int64) * 67108859 + 3).astype(np.uint32)),
  "uint32_mod_zero": (lambda t: (t % t.flip(0)) + (t // t.flip(0)), np.array([0, 5, 2**31, 2**32 - 1, 0, 9, 4, 0], np.uint32)),
  # found by the fuzzer: a product summed to one element was taken for a 1x1 GEMM on the MXU, whose
  # int8 contract then refused int32 values (seed 20261202 index 3815)
  "dot_of_wide_ints": (lambda t: (t * t.reshape(1, 2, 1, 1)).sum(), np.array([[[675460599]], [[1823226897]]], np.int32)),
  # found by the fuzzer: an induction register was taken from a register freed inside its loop
  # (reduces over flipped, broadcast, strided and convolved views: issue 12's fuzz families 1-5)
  "flip_sum": (lambda t: t.flip(1).sum(), np.ones((2, 2), np.float32)),
  "bcast_sum": (lambda t: (t + Tensor(np.array([[[1, 10]], [[100, 1000]]], np.int32), device=t.device)).sum(), np.zeros((2, 2, 1), np.int32)),
  "uint16_flip_max": (lambda t: t.cast(dtypes.uint16).flip(0).max(), np.arange(20, dtype=np.int32) * 37),
  "conv_max": (lambda t: t.conv2d(Tensor(np.array([[[[-1], [-2]], [[1], [-2]], [[-2], [2]]]], np.int32), device=t.device)).max(),
               np.ones((1, 3, 3, 2), np.int32)),
  "slice_max_min": (lambda t: t[1:, 20:36:3].max(1).min(0), np.arange(120, dtype=np.int32).reshape(3, 40)),
  # a max reduce's identity is a weakint beyond any dtype (-2**789): it saturates, not wraps to 0
  "cummin_of_div": (lambda t: (t.cast(dtypes.int32) // 3).cummin(1)[0], np.zeros((1, 2), np.bool_)),
  "max_pool_indices": (lambda t: t.max_pool2d(kernel_size=(2, 2), return_indices=True)[1], F456),
  # found by the fuzzer: tinygrad gates the gather's index load only by part of its condition (the
  # rest is implied by the gate of the load whose index it feeds), so it ran where its index is -18
  # and trapped vmem_out_of_range (seed 20261207 index 4040; address.clamp_index)
  "gather_pad_min": (lambda t: (t.gather(1, Tensor(GATHER_IDX, device=t.device)).clip(0, 255).cast(dtypes.uint8)
                                .pad(((2, 0), (3, 0), (2, 2), (0, 2))).min(keepdim=True)), F2241),
  # found by the nightly's test_ops (test_small_gemm_padded): that clamp was put on every gated load
  # of the unrolled 16x16x16 kernel, whose indices are MULACCs that tinygrad gives no bounds, and the
  # program outgrew IMEM (the assembler stopped at listing line 4116 of 4096 words; 3201 lines without
  # the clamps); a load inside its buffer given its gate has none now
  "gemm_padded": (lambda t: t.pad(((0, 7), (0, 7))) @ t.T.pad(((0, 7), (0, 7))), F99),
}


# gradients realised together (as test_ops does): tinygrad fuses them into kernels with several
# output nests, or output ranges that open after the reduces (a padded 1x1 conv's weight gradient)
GRADS = {
  "padded_conv2d_1x1": (lambda x, w: x.conv2d(w, padding=2), [(4, 3, 11, 28), (4, 3, 1, 1)]),
  "conv2d_stride2": (lambda x, w: x.conv2d(w, stride=2), [(2, 3, 7, 8), (4, 3, 3, 3)]),
  "mul_bcast": (lambda x, y: (x * y).sum(0) + y, [(3, 4), (4,)]),
  # the gradient of an expand is a sum over every broadcast axis: nested reduces (issue 12's (1,1,1,1) gradient)
  "expand_1111": (lambda x: x.expand((4, 3, 2, 6)), [(1, 1, 1, 1)]),
}


@pytest.mark.parametrize("name", list(GRADS))
def test_gradients_against_python_device(name):
  f, shapes = GRADS[name]
  xs = [rng.standard_normal(s).astype(np.float32) for s in shapes]
  res = {}
  for dev in ("PYTHON", "TINYTPU"):
    ts = [Tensor(x, device=dev) for x in xs]
    grads = f(*ts).sum().gradient(*ts)
    Tensor.realize(*grads)
    res[dev] = [g.numpy() for g in grads]
  for got, exp in zip(res["TINYTPU"], res["PYTHON"]):
    np.testing.assert_allclose(got, exp, rtol=1e-4, atol=1e-4)


def run(dev, name):
  f, x = CASES[name]
  return f(Tensor(x, device=dev)).numpy()


@pytest.mark.parametrize("m,k,n", [(2, 2, 1), (32, 16, 8)])
def test_matmul_plus_a_one_element_buffer_against_python_device(m, k, n):
  """The fuzzer's program (seed 20261206 index 2280): an int matmul on the MXU plus a buffer of one
  element, which the bias planner took for an array and crashed on."""
  g = np.random.default_rng(m)
  a, b, c = g.integers(-100, 100, (m, k)), g.integers(-100, 100, (k, n)), g.integers(-5000, 5000, (1,))
  got, exp = ((Tensor(a.astype(np.int32), device=d) @ Tensor(b.astype(np.int32), device=d) + Tensor(c.astype(np.int32), device=d)).numpy()
              for d in ("TINYTPU", "PYTHON"))
  np.testing.assert_array_equal(got, exp)


def test_gather_index_load_with_a_partial_gate_against_numpy():
  """gather_pad_min's program summed instead: tinygrad's UOps load the gather's index out of bounds
  here too, which PYTHON refuses (IndexError: load out of bounds), so numpy is the oracle. A check
  of the values only: without the clamp this kernel's stray read lands inside VMEM and does not
  trap (gather_pad_min is the test that fails without it)."""
  got = (Tensor(F2241, device="TINYTPU").gather(1, Tensor(GATHER_IDX, device="TINYTPU")).clip(0, 255).cast(dtypes.uint8)
         .pad(((2, 0), (3, 0), (2, 2), (0, 2))).cast(dtypes.int32).sum((1, 3))).numpy()
  picked = np.take_along_axis(F2241, GATHER_IDX, axis=1).clip(0, 255).astype(np.uint8)
  exp = np.pad(picked, ((2, 0), (3, 0), (2, 2), (0, 2))).astype(np.int32).sum((1, 3))
  np.testing.assert_array_equal(got, exp)


def test_a_gated_index_is_bounded_by_its_gate():
  """address._inside, which decides whether a gated load's index needs the clamp: a pad's index
  i * 9 + k (a MULACC, which tinygrad gives the whole int32 range) is inside a 9 x 9 buffer only
  given both clauses of its gate, and a gate that never holds needs no clamp."""
  from tinygrad.uop.ops import Ops, UOp
  from tinytpu.backend.address import _inside
  i, k = UOp.range(16, 0, dtype=dtypes.int32), UOp.range(16, 1, dtype=dtypes.int32)
  idx = UOp(Ops.MULACC, dtypes.int32, (i, UOp.const(9, dtypes.int32), k))
  both = (i < 9) & (k < 9)
  assert idx.vmax == 2**31 - 1  # what the clamp used to be decided by
  assert _inside(idx, 81, both)
  assert not _inside(idx, 80, both)
  assert not _inside(idx, 81, i < 9)
  assert not _inside(idx, 81, None)
  assert not _inside(idx - 1, 81, both)  # the lower bound counts too
  assert _inside(idx - 1, 81, both & (i >= 1))
  assert _inside(idx, 4, (i < 9) & (i >= 10))


@pytest.mark.parametrize("name", list(CASES))
def test_against_python_device(name):
  got, exp = run("TINYTPU", name), run("PYTHON", name)
  assert got.shape == exp.shape
  if np.issubdtype(exp.dtype, np.floating):
    np.testing.assert_allclose(got, exp, rtol=1e-5, atol=1e-5)
  else:
    np.testing.assert_array_equal(got, exp)


# bfloat16 buffers: one per lane as fp32 patterns, every bf16 result rounded (RNE) as tinygrad's
# truncate does; compared bit for bit (as float32) with PYTHON
BF = (np.random.default_rng(3).standard_normal(300) * 100).astype(np.float32)
BF16 = {
  "add": lambda t: t.cast(dtypes.bfloat16) + t.flip(0).cast(dtypes.bfloat16),
  "mul_sum": lambda t: (t.cast(dtypes.bfloat16) * 0.37).sum(),
  "exp_div": lambda t: (t.cast(dtypes.bfloat16) / 300).exp() / 7,
  "round_trip": lambda t: (t.cast(dtypes.bfloat16) * 3).cast(dtypes.float32) + t,
  "max": lambda t: t.cast(dtypes.bfloat16).reshape(30, 10).max(1),
  "to_int": lambda t: (t.cast(dtypes.bfloat16) * 7).cast(dtypes.int32),
  "from_int": lambda t: (t.cast(dtypes.int32) * 100003).cast(dtypes.bfloat16),
  "stored": lambda t: t.cast(dtypes.bfloat16).contiguous().realize().reshape(15, 20).permute(1, 0) - 1,
}


@pytest.mark.parametrize("name", list(BF16))
def test_bfloat16_against_python_device(name):
  got, exp = (BF16[name](Tensor(BF, device=d)) for d in ("TINYTPU", "PYTHON"))
  assert got.dtype == exp.dtype
  np.testing.assert_array_equal(got.cast(dtypes.float32).numpy(), exp.cast(dtypes.float32).numpy())


def test_bfloat16_host_round_trip():
  x = np.array([1.0, -2.5, 3.140625, 1e30, -1e-30, 65280.0], np.float32)
  t = Tensor(x, device="TINYTPU").cast(dtypes.bfloat16).realize()
  np.testing.assert_array_equal(t.numpy().astype(np.float32), Tensor(x, device="PYTHON").cast(dtypes.bfloat16).numpy().astype(np.float32))


def test_folded_accumulator_is_refused():
  """tinygrad 0.14 folds max(acc, -x) of a uint into a reduce loop that never writes its
  accumulator; reading it would return whatever the register held, so the lowering refuses."""
  with pytest.raises(NotImplementedError, match=r"TINYTPU cannot lower Ops.LOAD \(dtypes.uint\): it reads a register accumulator that no UOp"):
    (-Tensor(np.ones(2, np.uint32), device="TINYTPU")).max().numpy()


def test_compile_errors_are_picklable():
  # tinygrad compiles in a process pool: an exception that does not survive pickling hangs the pool
  import pickle
  from tinytpu.asm import AsmError
  e = pickle.loads(pickle.dumps(AsmError(17, "vmem address 65536 out of range")))
  assert isinstance(e, AsmError) and (e.line, str(e)) == (17, "line 17: vmem address 65536 out of range")
  from tinytpu.records import BundleError
  e = pickle.loads(pickle.dumps(BundleError(3, "bad tile")))
  assert isinstance(e, BundleError) and (e.line, str(e)) == (3, "error line 3: bad tile")


def test_too_big_kernel_fails_through_the_compile_pool():
  # a kernel that cannot stream through VMEM is refused at compile time, in a pool worker (two
  # kernels in one schedule); the error reaches the user (each output reads two far-apart runs of
  # its row of 5000 elements: reduce blocks take one run per buffer, backend/rstream.py)
  import subprocess
  import sys
  prog = ("import numpy as np\nfrom tinygrad import Tensor\nx = Tensor(np.ones((37, 5000), np.int32), device='TINYTPU')\n"
          "Tensor.realize((x[:, :2500] * x[:, 2500:]).sum(1), (x[:, :2500] + x[:, 2500:]).max(1))")
  r = subprocess.run([sys.executable, "-c", prog], capture_output=True, text=True, timeout=300,
                     env={**__import__("os").environ, "PARALLEL": "2", "TINYTPU_SIM": "golden",
                          "TINYTPU_BACKEND_CONFIG": "VMEM_TILES=1024 PSUM_TILES=256"})
  assert r.returncode != 0 and "VMEM has 1024; missing: chunking the kernel's reduce loops" in r.stderr, r.stderr[-2000:]


def test_opt_policy_holds_in_the_compile_pool():
  # kernels are optimised in tinygrad's compile-pool processes: TinyTPU's policy (no upcasts) must
  # apply there too (without it the MLP's first layer left the MXU: 5x the cycles)
  import os
  import re
  import subprocess
  import sys
  # two kernels in one schedule: tinygrad compiles them in its pool (one alone compiles in-process)
  prog = ("import numpy as np\nfrom tinygrad import Tensor\n"
          "i8 = lambda *s: Tensor(np.ones(s, np.int8), device='TINYTPU').cast('int32').realize()\n"
          "x, w, b, w2 = i8(16, 784), i8(784, 128), i8(128), i8(128, 10)\n"
          "print((((x @ w + b).relu() >> 8) @ w2).numpy().sum())")
  r = subprocess.run([sys.executable, "-c", prog], capture_output=True, text=True, timeout=300,
                     env={**os.environ, "PARALLEL": "2", "DEBUG": "2", "TINYTPU_SIM": "golden"})
  out = re.sub(r"\x1b\[[0-9;]*m", "", r.stdout + r.stderr)
  assert r.returncode == 0, out[-2000:]
  names = set(re.findall(r"\*\*\* TINYTPU +\d+ +(r_[0-9_]+)", out))
  assert names == {"r_16_128_784", "r_16_10_128"}, names


def test_uint32_cummin_through_emulated_int64_is_refused():
  """The fuzzer, seed 20261204 index 142: tinygrad computes cummin of a uint32 tensor as an int64 max,
  which it emulates in int32 on this device (a signed max of the wrapped value): refused, not wrong."""
  a0 = Tensor(np.full((2, 2, 1, 1), 0, np.uint16), device="TINYTPU")
  with pytest.raises(NotImplementedError, match=r"MAX of a uint32 value \(up to 4294967295\) cast to int32: tinygrad's int64 emulated"):
    (a0 < 0).cast(dtypes.uint32).cummin(0)[0].numpy()


def test_prologue_of_five_buffers_with_a_large_one():
  """test_ops' test_nll_loss_3d_weight: a kernel reading five whole buffers, one of 256 tiles or more,
  divided by zero planning its HBM prologue (no room left in the DMA queue to split the large one)."""
  x = rng.integers(-100, 100, (64, 64)).astype(np.int32)  # int8 values: the row sums of products run on the MXU
  y, z, w, v = (rng.integers(-100, 100, 64).astype(np.int32) for _ in range(4))
  f = lambda a, b, c, d, e: (a * b).sum(1) + c * d - e  # noqa: E731
  got = f(*(Tensor(t, device="TINYTPU") for t in (x, y, z, w, v))).numpy()
  np.testing.assert_array_equal(got, f(*(Tensor(t, device="PYTHON") for t in (x, y, z, w, v))).numpy())


def test_linear_1177_to_150_on_eleven_rows_against_python_device(vmem_1024):
  """nn.Linear(1177, 150) on 11 rows, the random GEMM generator's shape that the streamed planner
  refused (a column chunk of every column that is not whole lane tiles): int8 inputs and weights
  widened to int32, compared with tinygrad's PYTHON device."""
  g = np.random.default_rng(1177)
  x, w = g.integers(-128, 128, (11, 1177)).astype(np.int8), g.integers(-128, 128, (150, 1177)).astype(np.int8)
  got, exp = ((Tensor(x, device=d).cast(dtypes.int32) @ Tensor(w, device=d).T.cast(dtypes.int32)).numpy()
              for d in ("TINYTPU", "PYTHON"))
  np.testing.assert_array_equal(got, exp)
