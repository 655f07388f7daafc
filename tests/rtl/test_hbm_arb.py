"""The HBM arbiter (rtl/hbm_arb.sv) alone in its pyuvm env (tb/hbm_arb): two requesters in
contention, which sim_top's interlocks never allow, an HBM model with back-pressure and variable
latency, the contract checked every cycle. Nightly: more requests, other latencies and tile sizes."""
import pytest

from tinytpu.config import DEFAULT
from tinytpu.tb import kit
from tinytpu.tools import RTL

SOURCES = [RTL / "hbm_arb.sv"]
TESTS = "ArbRandom,ArbContention,ArbLone,ArbSlowHbm,ArbBrokenModel"


def test_hbm_arb_unit_default():
  kit.build_and_run("hbm_arb", SOURCES, "tinytpu.tb.hbm_arb.tests", {"N": DEFAULT.N, "LATENCY": DEFAULT.HBM_LATENCY}, testcase=TESTS)


# a one-cycle HBM (a source FIFO of 2 entries), a short one at N = 2, N = 16 with the default latency
@pytest.mark.nightly
@pytest.mark.parametrize("params", [{"N": 2, "LATENCY": 1}, {"N": 2, "LATENCY": 6}, {"N": 16, "LATENCY": 100}])
def test_hbm_arb_unit_nightly(params):
  kit.build_and_run("hbm_arb", SOURCES, "tinytpu.tb.hbm_arb.tests", params, testcase=TESTS, seed=kit.seed_from_env(),
                    extra_env={"TINYTPU_ARB_SCALE": "4"})
