"""A pyuvm test that makes one of rtl/vpu.sv's assertions fire: an op offered with a function code
the ISA table does not define (FnDefined). The assertion stops the simulation, so this test runs
alone (tests/rtl/test_vpu.py::test_vpu_assertion_fires expects the failure and its message)."""
import pyuvm
from cocotb.triggers import FallingEdge

from tinytpu import isa
from tinytpu.tb import kit


@pyuvm.test()
class VpuUndefinedFn(kit.BaseTest):
  env_cls = kit.Env  # no monitors: they would not know the undefined function either
  timeout_us = 100

  async def body(self):
    d = self.env.dut
    await FallingEdge(d.clk_i)
    d.fn_i.value = len(isa.VPU_FNS)  # one past the last function
    d.valid_i.value = 1
    await FallingEdge(d.clk_i)
    d.valid_i.value = 0
    for _ in range(4): await FallingEdge(d.clk_i)
