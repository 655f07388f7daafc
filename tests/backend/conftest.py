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
