"""The TensorCore under its pyuvm env (tb/core): programs through the load ports, every dump,
status, trap, pc and retired count checked against the golden interpreter."""
import pytest

from tinytpu import tools
from tinytpu.tb import kit
from tinytpu.tools import RTL

SOURCES = sorted(p for p in RTL.glob("*.sv") if p.name != "tinytpu_pkg.sv")


def test_core():
  params = {"N": 4, "VMEM_TILES": 64, "PSUM_TILES": 8, "IMEM_WORDS": 256}
  kit.build_and_run("tensorcore", SOURCES, "tinytpu.tb.core.tests", params, testcase="CorePrograms,CoreBrokenModel")


@pytest.mark.nightly
def test_core_err_assertion():
  # a planted fault in a throw-away copy of rtl/ (VMEM flags every core read as out of range, as if
  # the SXU had let a bad address through) must fire tensorcore's NoCoreVmemErr and fail the run
  plant = tools.BUILD / "planted" / "vmem_rd_err"
  plant.mkdir(parents=True, exist_ok=True)
  for p in SOURCES: (plant / p.name).write_text(p.read_text())
  vmem, old = plant / "vmem.sv", "rd_err_o   <= rd_req_i && !rd_ok;"
  assert old in vmem.read_text(), "the plant point is gone from rtl/vmem.sv"
  vmem.write_text(vmem.read_text().replace(old, "rd_err_o   <= rd_req_i;"))
  params = {"N": 4, "VMEM_TILES": 64, "PSUM_TILES": 8, "IMEM_WORDS": 256}
  with pytest.raises(AssertionError, match="ASSERT FAILED NoCoreVmemErr"):
    kit.build_and_run("tensorcore", sorted(plant.glob("*.sv")), "tinytpu.tb.core.tests", params, testcase="CorePrograms")
