"""RTL unit tests: each test builds (or reuses) a Verilator model and runs a pyuvm test in it.
Reproduce a failure with the command it prints (TINYTPU_SEED=... TINYTPU_WAVES=1 ...)."""
import shutil

import pytest


def pytest_collection_modifyitems(config, items):
  if shutil.which("g++") is None:
    skip = pytest.mark.skip(reason="RTL tests need g++ to build Verilator models")
    for it in items:
      if "tests/rtl/" in str(it.fspath): it.add_marker(skip)
