"""SparseCore unit env (tb/sparsecore): rtl/sparsecore.sv against the golden (golden/sparsecore.py)
behind a Python HBM model with random back-pressure and latencies, at N = 4 and N = 2."""
import pytest

from tinytpu.tb import kit
from tinytpu.tools import RTL

SOURCES = [RTL / "fp32_pkg.sv", RTL / "sparsecore.sv"]
ALL = "ScDirected,ScRandom,ScBrokenModel"


@pytest.mark.parametrize("params", [{"N": 4, "HBM_LATENCY": 16, "HBM_TILES": 1 << 16}, {"N": 2, "HBM_LATENCY": 5, "HBM_TILES": 1 << 16}],
                         ids=["N4", "N2"])
def test_sparsecore(params):
  kit.build_and_run("sparsecore", SOURCES, "tinytpu.tb.sparsecore.tests", params, testcase=ALL)
