"""The memories' pyuvm environment (env.py) and tests (tests.py): VMEM, PSUM and the VRF, one unit per build."""
from tinytpu.tools import RTL


def sources(unit: str) -> list:
  """One memory's source list (shared by tests/rtl/test_mem.py and make mutate): PSUM accumulates
  MMUL.BF16 rows in fp32 (fp32_pkg)."""
  return ([RTL / "fp32_pkg.sv"] if unit == "psum" else []) + [RTL / f"{unit}.sv"]
