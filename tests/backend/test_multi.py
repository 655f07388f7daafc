"""tinygrad multi-device on the two-core chip (doc/chip.md, backend/runner.py): `TINYTPU:1` runs its
kernels as core 1 of the chip, a sharded computation matches numpy and the one-device result, and
a device beyond the chip's cores is an error naming it. On the golden model by default (the
backend's switch, tests/backend/conftest.py); the RTL run is nightly (a chip build for the backend's
VMEM size)."""
import numpy as np
import pytest

import tinytpu  # noqa: F401  registers the device
from tinygrad import Device, Tensor
from tinytpu.backend import runner

DEVS = ("TINYTPU:0", "TINYTPU:1")


def _sharded_matmul_add():
  rng = np.random.default_rng(3)
  a = rng.integers(-50, 50, size=(8, 8)).astype(np.int32)
  b = rng.integers(-50, 50, size=(8, 8)).astype(np.int32)
  before = runner.CHIP_RUNS[1]
  got = (Tensor(a).shard(DEVS, axis=0) @ Tensor(b).to(DEVS) + 1).numpy()
  one = (Tensor(a, device="TINYTPU") @ Tensor(b, device="TINYTPU") + 1).numpy()
  np.testing.assert_array_equal(got, a.astype(np.int64) @ b + 1)
  np.testing.assert_array_equal(got, one)
  assert runner.CHIP_RUNS[1] > before  # core 1's half ran on the chip


def test_sharded_matmul_on_two_chip_cores():
  _sharded_matmul_add()


@pytest.mark.nightly
def test_sharded_matmul_on_two_chip_cores_rtl(monkeypatch):
  monkeypatch.setenv("TINYTPU_SIM", "rtl")
  _sharded_matmul_add()


def test_third_device_is_refused():
  with pytest.raises(RuntimeError, match=r"TINYTPU:2: the TinyTPU chip has 2 cores \(TINYTPU:0, TINYTPU:1\)"):
    Device["TINYTPU:2"]
