"""MXU unit env (tb/mxu) at N = 4, 8 and 16 (N = 16 kept short)."""
import pytest

from tinytpu.tb import kit
from tinytpu.tools import RTL, ROOT

SOURCES = [RTL / "fp32_pkg.sv", RTL / "mxu_pe.sv", RTL / "mxu_array.sv", RTL / "mxu.sv", RTL / "vmem.sv", RTL / "psum.sv", ROOT / "tb/mxu/mxu_tb.sv"]
ALL = "MxuDirected,MxuWeightSwap,MxuRangeErrors,MxuRandom,MxuGemm,MxuBrokenModel,MxuTrace,MxuBf16Directed"


@pytest.mark.parametrize("n,tests", [(4, ALL), (8, ALL), (16, "MxuWeightSwap,MxuRangeErrors")])
def test_mxu(n, tests):
  params = {"N": n, "VMEM_TILES": 256 if n < 16 else 64, "PSUM_TILES": 256 if n < 16 else 16}
  kit.build_and_run("mxu_tb", SOURCES, "tinytpu.tb.mxu.tests", params, testcase=tests)
