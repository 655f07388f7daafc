import os

import pytest


@pytest.fixture(autouse=True)
def tinytpu_sim(monkeypatch):
  """Backend tests run on TINYTPU_TEST_SIM (default: golden) so one switch moves the suite to the RTL."""
  monkeypatch.setenv("TINYTPU_SIM", os.environ.get("TINYTPU_TEST_SIM", "golden"))
  monkeypatch.setenv("TINYTPU_KEEP", "")
