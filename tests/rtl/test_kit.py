"""Self-test of the verification kit (tb/kit) on its tiny ALU DUT."""
from tinytpu.tb import kit
from tinytpu.tools import ROOT


def test_kit_selftest():
  kit.build_and_run("kit_alu", [ROOT / "tb/kit/selftest/kit_alu.sv"], "tinytpu.tb.kit.selftest.tests")
