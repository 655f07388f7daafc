"""The VPU's fp32 datapath (rtl/fp32_pkg.sv as rtl/vpu.sv calls it, vpu_fp_reduce) under its pyuvm
env (tb/fp), driven through the VPU itself (the same build as tests/rtl/test_vpu.py): hand-checked
answers, directed special-value pairs, constrained-random with coverage, and a must-fail check of
the scoreboard, at N = 4 (every fp function) and N = 8 (the tile-wide ones). The transcendentals
(FEXP2, FLOG2, FSIN, FCOS) are compared bit for bit with golden/transcendental.py."""
import pytest

from tinytpu.tb import kit
from tinytpu.tb.vpu import sources

# an explicit test list: the run directory is named after it, apart from test_vpu's on the same build
TESTS = "FpKnown,FpDirected,FpRandom,FpBrokenModel"


@pytest.mark.parametrize("n", [4, 8])
def test_fp(n):
  kit.build_and_run("vpu", sources(), "tinytpu.tb.fp.tests", params={"N": n, "TAG_W": 8}, testcase=TESTS)
