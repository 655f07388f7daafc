"""The VPU (rtl/vpu.sv) under its pyuvm env (tb/vpu): directed edge cases of every function,
write-back collisions, constrained-random with coverage, and a must-fail check of the scoreboard."""
import os

import pytest

from tinytpu.tb import kit
from tinytpu.tb.vpu import sources as _sources


@pytest.mark.parametrize("n", [4, 8])
def test_vpu(n):
  kit.build_and_run("vpu", _sources(), "tinytpu.tb.vpu.tests", params={"N": n, "TAG_W": 8})


@pytest.mark.skipif(not os.environ.get("TINYTPU_VPU_N16"), reason="set TINYTPU_VPU_N16=1: at N = 16 the 256 fp32 lanes "
                    "make a ~126 MB C++ model that takes over an hour to compile")
def test_vpu_n16():
  # N = 16 briefly: directed edge cases and a short random stream
  kit.build_and_run("vpu", _sources(), "tinytpu.tb.vpu.tests", params={"N": 16, "TAG_W": 8},
                    testcase="VpuDirected,VpuRandom")


def test_vpu_assertion_fires():
  # an undefined function code offered to the VPU fires vpu.sv's FnDefined assertion: the test must
  # fail, and the failure must quote the assertion
  with pytest.raises(AssertionError, match=r"ASSERT FAILED FnDefined"):
    kit.build_and_run("vpu", _sources(), "tinytpu.tb.vpu.assert_tests", params={"N": 4, "TAG_W": 8}, testcase="VpuUndefinedFn")
