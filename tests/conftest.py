"""Test tiers: `make test` runs the smoke list (`-m "not nightly"`), `make regress` everything.

Everything that builds a Verilator model at N = 8 or N = 16 is nightly: the smoke list runs every
unit, the co-simulation and the random streams at N = 4."""
import pytest


def _n_of(item) -> int | None:
  cs = getattr(item, "callspec", None)
  if cs is not None:
    for k, v in cs.params.items():
      if k in ("n", "N") and isinstance(v, int):
        return v
      if isinstance(v, dict) and isinstance(v.get("N"), int):
        return v["N"]
  for n in (8, 16):
    if item.name.endswith(f"_n{n}"):
      return n
  return None


def pytest_configure(config):
  config.addinivalue_line("markers", "nightly: part of the nightly regression only (make regress), not of make test")
  config.addinivalue_line("markers", "cheapest: a streamed-GEMM test that keeps the planner's cost order (tests/backend/test_mxu_stream.py)")
  config.addinivalue_line("markers", "long_job: one test long enough for a regression job of its own (the nightly's test-ops group)")


def pytest_collection_modifyitems(config, items):
  for it in items:
    builds_rtl = any(p in str(it.fspath) for p in ("tests/rtl/", "test_cosim.py", "test_random.py"))
    if builds_rtl and (_n_of(it) or 4) != 4:
      it.add_marker(pytest.mark.nightly)
