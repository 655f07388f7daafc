import os

import pytest


@pytest.fixture(autouse=True)
def tinytpu_sim(monkeypatch):
  """Backend tests run on TINYTPU_TEST_SIM (default: golden) so one switch moves the suite to the RTL."""
  monkeypatch.setenv("TINYTPU_SIM", os.environ.get("TINYTPU_TEST_SIM", "golden"))
  monkeypatch.setenv("TINYTPU_KEEP", "")


@pytest.fixture
def fresh_programs(monkeypatch):
  """Kernels rendered and compiled afresh inside the test, in this process (no compile pool), and not
  reused elsewhere: for tests that change what the renderer reads (TINYTPU_BACKEND_CONFIG,
  TINYTPU_MATMUL)."""
  import tinygrad.codegen
  import tinygrad.schedule
  from tinygrad.engine import realize
  from tinygrad.helpers import Context
  fresh = {}
  monkeypatch.setattr(realize, "to_program_cache", fresh)
  monkeypatch.setattr(tinygrad.codegen, "to_program_cache", fresh)
  monkeypatch.setattr(realize, "runtime_cache", {})
  monkeypatch.setattr(tinygrad.schedule, "schedule_cache", {})
  with Context(PARALLEL=0):  # compile here: the compile pool's processes keep the environment they started with
    yield


def use_backend_config(monkeypatch, spec: str):
  """Lower and compile for the core `spec` names for the rest of the test (TINYTPU_BACKEND_CONFIG)."""
  from tinygrad import Device
  from tinytpu.backend import device
  # the devices exist before the variable changes: one created under it would keep this renderer
  # after the test (monkeypatch would restore the value it found, already this one)
  devs = [Device[name] for name in ("TINYTPU", "CPU")]  # without clang the CPU name is a TinyTPU core too
  for dev in devs:
    getattr(dev, "renderer", None)  # built on first use: now, under the default configuration
  monkeypatch.setenv("TINYTPU_BACKEND_CONFIG", spec)
  for dev in devs:
    if isinstance(dev, device.TinyTPUDevice):
      monkeypatch.setattr(dev.renderer, "cfg", device.backend_config())


@pytest.fixture
def vmem_1024(monkeypatch, fresh_programs):
  """The architecture's VMEM (1024 tiles), whatever TINYTPU_BACKEND_CONFIG the run has: the renderer
  lowers for it, the compiler checks against it."""
  use_backend_config(monkeypatch, "VMEM_TILES=1024 PSUM_TILES=256")


# a VMEM that holds every operand of the tests that use it: the resident layout's forms (the
# transposed matrix-vector MXU schedule, the fused PEPI epilogues) that the streamed plans lack
RESIDENT_VMEM = "VMEM_TILES=32768 PSUM_TILES=256"


@pytest.fixture
def vmem_resident(monkeypatch, fresh_programs):
  """A 2 MB VMEM (32768 tiles at N = 4): the operands stay resident, for tests of that layout's forms."""
  use_backend_config(monkeypatch, RESIDENT_VMEM)


@pytest.fixture
def sources(monkeypatch):
  """The TASM listing of every kernel compiled in the test, in order."""
  from tinytpu.backend import device
  seen = []
  compile_ = device.TinyTPUCompiler.compile
  def spy(self, src):
    seen.append(src)
    return compile_(self, src)
  monkeypatch.setattr(device.TinyTPUCompiler, "compile", spy)
  return seen
