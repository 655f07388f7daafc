"""Float matmuls on the MXU's bf16 mode (MMUL.BF16, doc/backend.md): bfloat16 buffers always (their
products are exact in fp32), float32 buffers only with TINYTPU_MATMUL=bf16 (operands truncated to
bf16); the default keeps float32 exact on the VPU. The RTL against the golden model
(TINYTPU_SIM=both), the values against torch / a truncated-operand float64 reference."""
import numpy as np
import pytest
import torch

import tinytpu  # noqa: F401  registers the device
from tinygrad import Tensor, dtypes


def _trunc(x: np.ndarray) -> np.ndarray:
  return (x.view(np.uint32) & 0xFFFF0000).view(np.float32)


def _bf16_pair(rng, M, K, Nc):
  a = rng.standard_normal((M, K)).astype(np.float32)
  b = rng.standard_normal((K, Nc)).astype(np.float32)
  ta = Tensor(a, device="TINYTPU").cast(dtypes.bfloat16).realize()
  tb = Tensor(b, device="TINYTPU").cast(dtypes.bfloat16).realize()
  return a, b, ta, tb


@pytest.mark.parametrize("M,K,Nc", [(16, 32, 16), (20, 36, 12)])
def test_bfloat16_matmul_on_the_mxu(M, K, Nc, sources, fresh_programs, monkeypatch):
  monkeypatch.setenv("TINYTPU_SIM", "both")
  a, b, ta, tb = _bf16_pair(np.random.default_rng(M + K), M, K, Nc)
  out = (ta @ tb).cast(dtypes.float32).numpy()
  ref = (torch.tensor(a).bfloat16().float() @ torch.tensor(b).bfloat16().float()).bfloat16().float().numpy()
  # exact bf16 products, fp32 sums in the MXU's order, one bf16 rounding: at most one bf16 ulp from torch
  np.testing.assert_allclose(out, ref, rtol=2 ** -7, atol=1e-6)
  assert any("MMUL.BF16" in s for s in sources)


def test_bfloat16_matmul_streamed_from_hbm(vmem_1024, sources, monkeypatch):
  """At the architecture's VMEM the bf16 GEMM streams its operands (backend/mxu_stream.py) in the bf16 mode."""
  monkeypatch.setenv("TINYTPU_SIM", "both")
  a, b, ta, tb = _bf16_pair(np.random.default_rng(3), 64, 64, 64)
  out = (ta @ tb).cast(dtypes.float32).numpy()
  ref = (torch.tensor(a).bfloat16().float() @ torch.tensor(b).bfloat16().float()).bfloat16().float().numpy()
  np.testing.assert_allclose(out, ref, rtol=2 ** -7, atol=1e-6)
  assert any("MMUL.BF16" in s and "DMA.CFG" in s for s in sources)


def _f32_pair():
  rng = np.random.default_rng(7)
  return rng.standard_normal((16, 48)).astype(np.float32), rng.standard_normal((48, 20)).astype(np.float32)


def test_float32_matmul_stays_exact_by_default(sources, fresh_programs, monkeypatch):
  monkeypatch.setenv("TINYTPU_SIM", "both")
  a, b = _f32_pair()
  exact = (Tensor(a, device="TINYTPU") @ Tensor(b, device="TINYTPU")).numpy()
  np.testing.assert_allclose(exact, a.astype(np.float64) @ b, rtol=1e-5, atol=1e-5)
  assert sources and not any("MMUL" in s for s in sources)


def test_float32_matmul_opt_in(sources, fresh_programs, monkeypatch):
  """TINYTPU_MATMUL=bf16: float32 operands truncated to bf16 on the MXU (fp32 sums)."""
  monkeypatch.setenv("TINYTPU_SIM", "both")
  monkeypatch.setenv("TINYTPU_MATMUL", "bf16")
  a, b = _f32_pair()
  fast = (Tensor(a, device="TINYTPU") @ Tensor(b, device="TINYTPU")).numpy()
  np.testing.assert_allclose(fast, _trunc(a).astype(np.float64) @ _trunc(b), rtol=1e-5, atol=1e-5)
  assert any("MMUL.BF16" in s for s in sources)
  assert np.abs(fast - a.astype(np.float64) @ b).max() > 1e-3  # it really is the bf16 product, not the exact one


def test_matmul_mode_must_be_known(fresh_programs, monkeypatch):
  monkeypatch.setenv("TINYTPU_MATMUL", "fp8")
  with pytest.raises(Exception, match="TINYTPU_MATMUL='fp8': expected exact or bf16"):
    (Tensor(np.ones((4, 8), np.float32), device="TINYTPU") @ Tensor(np.ones((8, 4), np.float32), device="TINYTPU")).numpy()
