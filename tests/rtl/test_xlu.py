"""The XLU (rtl/xlu.sv) under its pyuvm env (tb/xlu): directed edge cases of every function,
constrained-random with coverage, and a must-fail check of the scoreboard."""
import pytest

from tinytpu.tb import kit
from tinytpu.tools import RTL


@pytest.mark.parametrize("n", [4, 8, 16])
def test_xlu(n):
  kit.build_and_run("xlu", [RTL / "xlu.sv"], "tinytpu.tb.xlu.tests", params={"N": n, "TAG_W": 8})
