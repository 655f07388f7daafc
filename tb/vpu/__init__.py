"""The VPU's pyuvm environment (env.py) and tests (tests.py); tb/fp drives the same VPU build."""
from tinytpu.tools import RTL


def sources() -> list:
  """The VPU's source list (one list, so tests/rtl/test_vpu.py and test_fp.py share one build)."""
  return sorted(RTL.glob("fp32_*.sv")) + [RTL / f for f in ("vpu_fp_reduce.sv", "vpu_int_lane.sv", "vpu_int_reduce.sv", "vpu.sv")]
