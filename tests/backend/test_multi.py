"""tinygrad multi-device on the two-core chip (doc/chip.md, backend/chiplaunch.py): `TINYTPU:1` is
core 1 of the chip, `TINYTPU` (`TINYTPU:0`) core 0 with TINYTPU_CHIP=1. A sharded kernel's two
halves run in one chip launch, a copy between the cores runs on the chip (DMA over the NoC), a
data-parallel training step (gradients all-reduced by tinygrad's copies) matches numpy and the
one-device step, kernels that depend on a pending launch see its results, and a device beyond the
chip's cores is an error naming it. On the golden model by default (the backend's switch,
tests/backend/conftest.py); the RTL runs are nightly (a chip build for the backend's VMEM size)."""
import os
import subprocess
import sys

import numpy as np
import pytest

import tinytpu  # noqa: F401  registers the device
from tinygrad import Context, Device, Tensor, dtypes, nn
from tinytpu import asm
from tinytpu.backend import chiplaunch, runner
from tinytpu.backend.device import backend_config
from tinytpu.config import Config
from tinytpu.golden import interp
from tinytpu.records import Bundle

DEVS = ("TINYTPU:0", "TINYTPU:1")


@pytest.fixture(autouse=True)
def golden_chip(monkeypatch):
  """The golden chip even under `make test`'s TINYTPU_TEST_SIM=both: the RTL runs (test_*_rtl, which
  set TINYTPU_SIM themselves) need a chip build of the backend's VMEM size and are nightly."""
  monkeypatch.setenv("TINYTPU_SIM", "golden")


@pytest.fixture
def chip(monkeypatch):
  """TINYTPU is core 0 of the chip for this test (read at each launch)."""
  chiplaunch.flush()
  monkeypatch.setenv("TINYTPU_CHIP", "1")
  yield
  chiplaunch.flush()


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


def test_sharded_kernel_runs_both_halves_in_one_launch(chip):
  rng = np.random.default_rng(4)
  a, b = rng.integers(-128, 128, (16, 12)).astype(np.int8), rng.integers(-128, 128, (12, 8)).astype(np.int8)
  x, w = Tensor(a).cast(dtypes.int32).shard(DEVS, axis=0).realize(), Tensor(b).cast(dtypes.int32).to(DEVS).realize()
  chiplaunch.flush()
  before, runs = dict(chiplaunch.LAUNCHES), list(runner.CHIP_RUNS)
  y = (x @ w).realize()
  chiplaunch.flush()
  assert chiplaunch.LAUNCHES["launches"] - before["launches"] == 1 and chiplaunch.LAUNCHES["paired"] - before["paired"] == 1
  assert [r - s for r, s in zip(runner.CHIP_RUNS, runs)] == [1, 1]
  np.testing.assert_array_equal(y.numpy(), a.astype(np.int64) @ b)


@pytest.mark.parametrize("dtype,values", [(np.int8, np.arange(-18, 19)), (np.float32, np.linspace(-3, 7, 45)), (np.bool_, np.arange(21) % 3 == 0),
                                          (np.int32, np.arange(1000) * 7919 - 3_000_000)])
def test_copy_between_cores_runs_on_the_chip(chip, dtype, values):
  """Byte-exact for every dtype and size (odd sizes: the last tile partly padding), both directions."""
  host = values.astype(dtype)
  before = chiplaunch.LAUNCHES["copies"]
  on1 = Tensor(host, device="TINYTPU:1").realize()
  back = on1.to("TINYTPU").realize().to("TINYTPU:1").realize()
  np.testing.assert_array_equal(back.numpy(), host)
  assert chiplaunch.LAUNCHES["copies"] - before == 2


def test_kernels_see_the_pending_launch_they_depend_on(chip):
  """A kernel reading what a pending item of its own core writes, and a kernel of the other core
  reading it through a copy, run after it (each takes its inputs when it joins a launch)."""
  x = Tensor(np.arange(40, dtype=np.int32), device="TINYTPU").realize()
  a = (x + 1).realize()           # pending on core 0
  b = (a * 2).realize()           # core 0 again: runs after a
  c = (b.to("TINYTPU:1") - 3).realize()
  np.testing.assert_array_equal(c.numpy(), (np.arange(40) + 1) * 2 - 3)
  np.testing.assert_array_equal(a.numpy(), np.arange(40) + 1)


def test_synchronize_runs_the_pending_launch(chip):
  x = Tensor(np.arange(16, dtype=np.int32), device="TINYTPU:1").realize()
  chiplaunch.flush()
  y = (x * 3).realize()
  assert chiplaunch.PENDING  # waiting for core 0's kernel, or a reader
  Device["TINYTPU:1"].synchronize()
  assert not chiplaunch.PENDING
  np.testing.assert_array_equal(y.numpy(), np.arange(16) * 3)


def _mlp_step(devs=None):
  rng = np.random.default_rng(5)
  X, Y = rng.standard_normal((8, 6)).astype(np.float32), rng.standard_normal((8, 3)).astype(np.float32)
  W1, W2 = (rng.standard_normal((6, 5)) * 0.5).astype(np.float32), (rng.standard_normal((5, 3)) * 0.5).astype(np.float32)
  x, y, w1, w2 = (Tensor(v, device="TINYTPU") for v in (X, Y, W1, W2))
  if devs:
    x, y = x.shard(devs, axis=0), y.shard(devs, axis=0)  # data parallel: the batch split, the weights on both cores
    w1.to_(devs)
    w2.to_(devs)
  opt = nn.optim.SGD([w1, w2], lr=0.1)
  with Context(TRAINING=1):
    loss = ((x @ w1).relu() @ w2 - y).square().mean()
    opt.zero_grad()
    loss.backward()
    Tensor.realize(loss, *opt.schedule_step())
  h = X @ W1
  d = np.maximum(h, 0) @ W2 - Y
  g = 2 * d / d.size
  ref = (W1 - 0.1 * (X.T @ ((g @ W2.T) * (h > 0))), W2 - 0.1 * (np.maximum(h, 0).T @ g), (d * d).mean())
  return (w1.numpy(), w2.numpy(), loss.numpy()), ref


def _data_parallel_step():
  before = dict(chiplaunch.LAUNCHES)
  two, ref = _mlp_step(DEVS)
  one, _ = _mlp_step()
  for t, o, r in zip(two, one, ref):
    np.testing.assert_allclose(t, r, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(t, o, rtol=1e-5, atol=1e-6)
  # the gradients' all-reduce copied partial sums between the cores on the chip, and kernels paired
  assert chiplaunch.LAUNCHES["copies"] > before["copies"] and chiplaunch.LAUNCHES["paired"] > before["paired"]


def test_data_parallel_training_step_on_two_cores(chip):
  _data_parallel_step()


@pytest.mark.nightly
def test_data_parallel_training_step_on_two_cores_rtl(chip, monkeypatch):
  monkeypatch.setenv("TINYTPU_SIM", "both")
  _data_parallel_step()


def test_copy_program_moves_every_tile():
  """copy_program on the golden model: many 2-D commands, a remainder of rows and of tiles, and the
  16-bit offset rebase (more than 32767 tiles)."""
  cfg = Config.from_str("VMEM_TILES=1024")
  rng = np.random.default_rng(6)
  for src, dst, n in [(5, 40000, 1), (0, 3000, 2551), (100, 40100, 33_000)]:
    data = rng.integers(0, 1 << 32, (n, cfg.N, cfg.N), dtype=np.uint64).astype(np.uint32)
    b = Bundle(config=cfg, program=asm.assemble(chiplaunch.copy_program(src, dst, n, cfg), cfg.N), hbm=[(src, data)],
               dumps=[("hbm", dst, n)], max_cycles=10_000_000)
    r = interp.run(b)
    assert r.status == "ok", (n, r.status, r.trap)
    np.testing.assert_array_equal(r.dumps[0][2], data)


def test_pack_round_trips_bytes():
  cfg = backend_config()
  raw = np.random.default_rng(7).integers(0, 256, 1001, dtype=np.uint8)
  tiles = chiplaunch.pack(memoryview(raw.tobytes()), 1001, cfg)
  assert tiles.shape == (chiplaunch.packed_tiles(1001, cfg), cfg.N, cfg.N)
  np.testing.assert_array_equal(chiplaunch.unpack(tiles, 1001), raw)


def test_third_device_is_refused():
  with pytest.raises(RuntimeError, match=r"TINYTPU:2: the TinyTPU chip has 2 cores \(TINYTPU:0, TINYTPU:1\)"):
    Device["TINYTPU:2"]


def test_a_failing_launch_names_the_kernel_and_core_and_gives_back_its_ranges():
  """A trap in a chip launch raises KernelError with the kernel, its core and the pc, whichever call
  flushed; every item's temporary HBM ranges are given back (the next item too, if it never ran)."""
  cfg = backend_config()
  released = []

  def item(core, name, src):
    b = Bundle(config=cfg, program=asm.assemble(src, cfg.N), max_cycles=100_000)
    return chiplaunch.Item(core, name, b, [], lambda: [], [], [], lambda r: None, lambda: released.append(name))
  chiplaunch.flush()
  chiplaunch.submit(item(1, "bad", "LI s1, -5\nDMA.IN [s0 + 0], [s1 + 0], 1\nHALT\n"))
  with pytest.raises(runner.KernelError, match=r"TINYTPU kernel bad \(chip core 1\): trap hbm_out_of_range at pc=1"):
    chiplaunch.submit(item(1, "next", "HALT\n"))  # same core: flushes the bad one first
  assert released == ["bad", "next"] and not chiplaunch.PENDING and chiplaunch.SPACE.held == 0


def test_a_launch_failing_at_exit_fails_the_process(tmp_path):
  """A chip launch still pending when the script ends runs at exit; when it traps, the script's exit
  status is 1 and stderr names the kernel (not a silent 0)."""
  script = tmp_path / "pending.py"
  script.write_text("""
from tinytpu import asm
from tinytpu.backend import chiplaunch
from tinytpu.backend.device import backend_config
from tinytpu.records import Bundle
cfg = backend_config()
b = Bundle(config=cfg, program=asm.assemble("LI s1, -5\\nDMA.IN [s0 + 0], [s1 + 0], 1\\nHALT\\n", cfg.N), max_cycles=100_000)
chiplaunch.submit(chiplaunch.Item(1, "late", b, [], lambda: [], [], [], lambda r: None, lambda: None))
print("script done")
""")
  r = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, env={**os.environ, "TINYTPU_SIM": "golden"})
  assert r.returncode == 1 and "script done" in r.stdout, (r.returncode, r.stdout, r.stderr)
  assert "pending chip launch failed at exit: TINYTPU kernel late (chip core 1): trap hbm_out_of_range at pc=1" in r.stderr, r.stderr
