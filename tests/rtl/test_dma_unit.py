"""The DMA engine (rtl/dma.sv) alone in its pyuvm env (tb/dma): Python HBM and VMEM models on its
ports, a sequential-semantics scoreboard, coverage; at the default configuration's latency and at
a short one (a tag FIFO of 4). The co-simulated engine inside the core is tests/rtl/test_dma.py.
Nightly: more commands, other latencies and tile sizes."""
import pytest

from tinytpu.config import DEFAULT
from tinytpu.tb import kit
from tinytpu.tools import RTL

SOURCES = [RTL / "tinytpu_pkg.sv", RTL / "dma.sv"]  # the package: the queue depth (isa.DMA_QDEPTH)
TESTS = "DmaTiming,DmaRandom,DmaBackpressure,DmaSlowHbm,DmaChains,DmaHbmNeverAnswers,DmaBrokenModel"


def test_dma_unit_default():
  kit.build_and_run("dma", SOURCES, "tinytpu.tb.dma.tests", {"N": DEFAULT.N, "HBM_LATENCY": DEFAULT.HBM_LATENCY}, testcase=TESTS)


# other sizes and latencies (each a build of its own) run in the nightly: N = 2 with a one-cycle HBM
# (the smallest FIFOs), N = 8, a deeper queue, N = 16
@pytest.mark.nightly
@pytest.mark.parametrize("params", [{"N": 2, "HBM_LATENCY": 1}, {"N": 8, "HBM_LATENCY": 37}, {"N": 4, "HBM_LATENCY": 3, "QDEPTH": 8},
                                    {"N": 16, "HBM_LATENCY": 100}])
def test_dma_unit_nightly(params):
  kit.build_and_run("dma", SOURCES, "tinytpu.tb.dma.tests", params, testcase=TESTS, seed=kit.seed_from_env(),
                    extra_env={"TINYTPU_DMA_SCALE": "4"})
