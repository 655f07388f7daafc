"""The chip's NoC endpoints (rtl/noc_core_ep.sv, noc_hbm_ep.sv, noc_sc_ep.sv) alone in their pyuvm
env (tb/noc_ep): random valid/ready timing on every port, junk on every field whose valid is low,
the contracts checked every cycle. With ASSERT_WELLFORMED = 0 malformed packets (which no legal
chip input makes) reach them at random times: the sticky err_o rises the cycle after and the flit
is dropped; with the default the assertion fires. Chip parameters from tinytpu.config at N = 4;
nightly: HBM_LATENCY = 29 (another buffer DEPTH), more traffic, other seeds."""
import pytest

from tinytpu.config import CHIP_CORES, CHIP_HBM_NODE, DEFAULT
from tinytpu.tb import kit
from tinytpu.tools import RTL

N = 4  # the chip's default tile (DEFAULT.N), kept small whatever the configuration
LEGAL = {"noc_core_ep": "CoreRandom,CoreContention", "noc_hbm_ep": "HbmRandom,HbmFull", "noc_sc_ep": "ScRandom"}
BROKEN = {"noc_core_ep": "CoreBrokenModel", "noc_hbm_ep": "HbmBrokenModel", "noc_sc_ep": "ScBrokenModel"}
MALFORMED = {"noc_core_ep": "CoreMalformed", "noc_hbm_ep": "HbmMalformed", "noc_sc_ep": "ScMalformed"}
FIRES = [("noc_core_ep", "CoreMalformedFires", "OnlySignalsToCores"), ("noc_hbm_ep", "HbmMalformedFires", "NoSignalToHbm"),
         ("noc_sc_ep", "ScFiresRequestFlit", "NothingToSparseCore"), ("noc_sc_ep", "ScFiresOtherNode", "AnswersFromHbm"),
         ("noc_sc_ep", "ScFiresNothingInFlight", "AnswerHasRequest")]


def params(top: str, latency: int = DEFAULT.HBM_LATENCY, **kw) -> dict:
  p = {"noc_core_ep": {"N": N, "CORES": CHIP_CORES, "HBM_NODE": CHIP_HBM_NODE}, "noc_hbm_ep": {"N": N, "HBM_LATENCY": latency},
       "noc_sc_ep": {"N": N, "HBM_NODE": CHIP_HBM_NODE}}[top]
  return {**p, **kw}


def run(top: str, tests: str, **kw):
  extra = kw.pop("extra_env", None)
  seed = kw.pop("seed", None)
  kit.build_and_run(top, [RTL / f"{top}.sv"], "tinytpu.tb.noc_ep.tests", params(top, **kw), testcase=tests, seed=seed, extra_env=extra)


@pytest.mark.parametrize("top", list(LEGAL))
def test_noc_ep_legal(top):
  """Legal traffic on the chip's build (assertions on): every output each cycle, err_o 0; the broken model must fail."""
  run(top, LEGAL[top] + "," + BROKEN[top])


@pytest.mark.parametrize("top", list(LEGAL))
def test_noc_ep_malformed(top):
  """ASSERT_WELLFORMED = 0: legal traffic again, then each malformed kind in its own phase."""
  run(top, LEGAL[top] + "," + MALFORMED[top], ASSERT_WELLFORMED=0)


@pytest.mark.parametrize("top,test,name", FIRES, ids=[f"{f[0]}-{f[2]}" for f in FIRES])
def test_noc_ep_assertion_fires(top, test, name):
  with pytest.raises(AssertionError, match=rf"ASSERT FAILED {name}"):
    run(top, test)


@pytest.mark.nightly
@pytest.mark.parametrize("wellformed", [1, 0])
@pytest.mark.parametrize("top", list(LEGAL))
def test_noc_ep_nightly(top, wellformed):
  """HBM_LATENCY = 29 (DEPTH 64 instead of 128), four times the traffic, the run's seed + 1."""
  tests = LEGAL[top] + ("" if wellformed else "," + MALFORMED[top])
  run(top, tests, latency=29, ASSERT_WELLFORMED=wellformed, seed=kit.seed_from_env() + 1, extra_env={"TINYTPU_NOCEP_SCALE": "4"})
