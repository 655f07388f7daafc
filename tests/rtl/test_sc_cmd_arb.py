"""The SparseCore command arbiter (rtl/sc_cmd_arb.sv) alone in its pyuvm env (tb/sc_cmd_arb):
core models that send lookups whenever the SXU's contract allows, a SparseCore model with random
job lengths, the contract checked every cycle. Two cores as on the chip; three in the nightly
(the round robin's wrap)."""
import pytest

from tinytpu.tb import kit
from tinytpu.tools import RTL

SOURCES = [RTL / "sc_cmd_arb.sv"]
TESTS = "ScArbRandom,ScArbContention,ScArbSparse,ScArbBrokenModel"


def test_sc_cmd_arb_unit_default():
  kit.build_and_run("sc_cmd_arb", SOURCES, "tinytpu.tb.sc_cmd_arb.tests", {"CORES": 2}, testcase=TESTS)


@pytest.mark.nightly
@pytest.mark.parametrize("cores", [3, 4])
def test_sc_cmd_arb_unit_nightly(cores):
  kit.build_and_run("sc_cmd_arb", SOURCES, "tinytpu.tb.sc_cmd_arb.tests", {"CORES": cores}, testcase=TESTS, seed=kit.seed_from_env(),
                    extra_env={"TINYTPU_SCARB_SCALE": "4"})
