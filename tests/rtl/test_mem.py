"""VMEM, PSUM and VRF unit envs (tb/mem) at N = 4 and N = 8."""
import pytest

from tinytpu.tb import kit
from tinytpu.tb.mem import sources as mem_sources


@pytest.mark.parametrize("unit,params", [
  ("vmem", {"N": 4, "TILES": 1024}), ("vmem", {"N": 8, "TILES": 64}),
  ("psum", {"N": 4, "TILES": 64}), ("psum", {"N": 8, "TILES": 8}),
  ("vrf", {"N": 4}), ("vrf", {"N": 8}),
])
def test_mem(unit, params):
  kit.build_and_run(unit, mem_sources(unit), "tinytpu.tb.mem.tests", params, extra_env={"TINYTPU_UNIT": unit})
