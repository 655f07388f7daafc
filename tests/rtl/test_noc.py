"""The on-chip network (rtl/noc.sv) in its pyuvm env (tb/noc): the default chip configuration
(NODES and LINK_LATENCY from tinytpu.config, one tile per flit) and a three-node ring with one-cycle
links and the destination assertion off (so the sticky bad_dst_o error path is observable), plus the
assertion firing on a packet to a missing node. Nightly: longer links, eight nodes, more seeds."""
import pytest

from tinytpu.config import DEFAULT
from tinytpu.tb import kit
from tinytpu.tools import RTL

SOURCES = [RTL / "noc_fifo.sv", RTL / "noc_router.sv", RTL / "noc.sv"]
RANDOM = "NocZeroLoad,NocUniform,NocHotspot,NocAllToOne,NocNeighbour,NocStress,NocSaturation,NocBrokenModel"
CHIP = DEFAULT.noc_params()


def test_noc_chip_config():
  kit.build_and_run("noc", SOURCES, "tinytpu.tb.noc.tests", CHIP, testcase=RANDOM)


def test_noc_bad_destination_sticky_error():
  # NODES = 3 leaves node ids 3..15 unused; PW = 64 keeps the build small
  kit.build_and_run("noc", SOURCES, "tinytpu.tb.noc.tests", {"NODES": 3, "LINK_LATENCY": 1, "PW": 64, "ASSERT_DST": 0}, testcase=RANDOM + ",NocBadDst")


def test_noc_bad_destination_assertion_fires():
  with pytest.raises(AssertionError, match=r"ASSERT FAILED InjDstExists"):
    kit.build_and_run("noc", SOURCES, "tinytpu.tb.noc.tests", CHIP, testcase="NocBadDstFires")


@pytest.mark.nightly
@pytest.mark.parametrize("params", [{"NODES": 4, "LINK_LATENCY": 4, "PW": 512}, {"NODES": 8, "LINK_LATENCY": 1, "PW": 128},
                                    {"NODES": 2, "LINK_LATENCY": 3, "PW": 32}, {"NODES": 4, "LINK_LATENCY": 1, "PW": 64, "INJ_STARVE": 1}])
@pytest.mark.parametrize("run", [0, 1])
def test_noc_nightly(params, run):
  """Longer random runs (TINYTPU_NOC_SCALE = 4 times the packets) at other ring sizes, link latencies
  and starvation limits, two seeds each (the run's seed + run)."""
  kit.build_and_run("noc", SOURCES, "tinytpu.tb.noc.tests", params, testcase=RANDOM, seed=kit.seed_from_env() + run, extra_env={"TINYTPU_NOC_SCALE": "4"})
