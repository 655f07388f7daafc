"""The TensorCore under its pyuvm env (tb/core): programs through the load ports, every dump,
status, trap, pc and retired count checked against the golden interpreter."""
from tinytpu.tb import kit
from tinytpu.tools import RTL

SOURCES = sorted(p for p in RTL.glob("*.sv") if p.name != "tinytpu_pkg.sv")


def test_core():
  params = {"N": 4, "VMEM_TILES": 64, "PSUM_TILES": 8, "IMEM_WORDS": 256}
  kit.build_and_run("tensorcore", SOURCES, "tinytpu.tb.core.tests", params, testcase="CorePrograms,CoreBrokenModel")
