"""Self-test of the verification kit (tb/kit) on its tiny ALU DUT, and its driven-inputs check."""
import pytest

from tinytpu.tb import kit
from tinytpu.tb.kit import inputs
from tinytpu.tools import ROOT


def test_kit_selftest():
  xml = kit.build_and_run("kit_alu", [ROOT / "tb/kit/selftest/kit_alu.sv"], "tinytpu.tb.kit.selftest.tests")
  # KitUndrivenInput failed as it must, and for the reason it must: the forgotten b_i, nothing else
  assert "KitUndrivenInput: the bench never drives input(s) b_i of kit_alu" in (xml.parent / "sim.log").read_text()


def test_runs_of_one_testcase_take_turns(monkeypatch):
  """Two processes of one checkout running the same top and testcase share its run folder; the
  second waits for the first instead of unlinking its results.xml (the nightly at 36cbc04 lost
  rtl-codecov:005 so, to :006 running kit_alu too)."""
  import fcntl
  import threading
  from tinytpu.tb.kit import runner
  src = [ROOT / "tb/kit/selftest/kit_alu.sv"]
  tdir = kit.build("kit_alu", src) / "run" / "KitRandom"
  tdir.mkdir(parents=True, exist_ok=True)
  waiting, done = threading.Event(), []
  monkeypatch.setattr(runner, "_waiting_for", lambda d: waiting.set())
  run = threading.Thread(target=lambda: done.append(kit.build_and_run("kit_alu", src, "tinytpu.tb.kit.selftest.tests", testcase="KitRandom")))
  with open(tdir.parent / f"{tdir.name}.lock", "w") as lock:  # another process's run, in progress
    fcntl.flock(lock, fcntl.LOCK_EX)
    run.start()
    assert waiting.wait(120), "build_and_run did not wait for the run folder's lock"
    assert not done and run.is_alive()
  run.join(120)
  assert done and done[0].exists()


def test_a_coverage_build_writes_a_file_per_simulation_into_the_job(monkeypatch, tmp_path):
  """In a regression job (TINYTPU_COVERAGE_DIR) each simulation of a --coverage build writes its own
  coverage file into the job's folder: two runs of one testcase are two files, none overwritten."""
  from tinytpu.regress import codecov
  monkeypatch.setenv("TINYTPU_BUILD_ARGS", "--coverage")
  monkeypatch.setenv("TINYTPU_COVERAGE_DIR", str(tmp_path / "coverage" / "job"))
  for seed in (1, 2):
    kit.build_and_run("kit_alu", [ROOT / "tb/kit/selftest/kit_alu.sv"], "tinytpu.tb.kit.selftest.tests", seed=seed)
  dats = codecov.collect(tmp_path)
  assert len(dats) == 2 and all(f.name.startswith("kit_alu-") for f in dats), dats
  assert codecov.by_module(codecov.merge(dats))["kit_alu"]["line"][0] > 0


def test_top_inputs_lists_required_inputs(tmp_path):
  """Types (logic, enums, packed dims), defaults (optional) and comments as rtl/ writes them."""
  sv = tmp_path / "m.sv"
  sv.write_text("module other (input logic z_i);\nendmodule\n"
                "module m\n  import tinytpu_pkg::*;\n#(parameter int N = 4) (\n"
                "  input  logic               clk_i,\n  input  logic [N-1:0][31:0] a_i,  // data\n"
                "  input  vpu_fn_e            fn_i,\n  input  logic               opt_i = 1'b0,\n"
                "  output logic               y_o\n);\nendmodule\n")
  assert inputs.top_inputs("m", [sv]) == ["clk_i", "a_i", "fn_i"]
  with pytest.raises(ValueError, match="no source declares module nope"):
    inputs.top_inputs("nope", [sv])


def test_every_unit_toplevel_has_inputs():
  """The check is on something: psum's and the core's inputs are found (mxu_fp_i was the one the
  mem env forgot, the core's HBM/network/SparseCore ports the ones the core env did)."""
  assert "mxu_fp_i" in inputs.top_inputs("psum", [ROOT / "rtl/psum.sv"])
  core = inputs.top_inputs("tensorcore", [ROOT / "rtl/tensorcore.sv"])
  assert {"hbm_rsp_valid_i", "sig_rx_valid_i", "emb_chk_valid_i"} <= set(core)


def test_rerun_command_names_the_test_or_the_process(monkeypatch):
  """A failure's rerun line: the pytest node under pytest, else this process's own command line
  (a `python -m` module keeps its -m), never a placeholder."""
  import sys
  import types
  from tinytpu.tb.kit import runner
  monkeypatch.setenv("PYTEST_CURRENT_TEST", "tests/rtl/test_x.py::test_y[4] (call)")
  assert runner.rerun_command(7, "T") == "TINYTPU_SEED=7 TINYTPU_WAVES=1 TINYTPU_TESTCASE=T .venv/bin/pytest -p no:cacheprovider -n 0 'tests/rtl/test_x.py::test_y[4]'"
  monkeypatch.delenv("PYTEST_CURRENT_TEST")
  main = types.ModuleType("__main__")
  main.__spec__ = types.SimpleNamespace(name="tinytpu.mutate")
  monkeypatch.setitem(sys.modules, "__main__", main)
  monkeypatch.setattr(sys, "argv", ["/x/tinytpu/mutate.py", "--file", "vpu.sv"])
  assert runner.rerun_command(7) == "TINYTPU_SEED=7 TINYTPU_WAVES=1 .venv/bin/python -m tinytpu.mutate --file vpu.sv"
  main.__spec__ = None
  assert runner.rerun_command(7).endswith(".venv/bin/python /x/tinytpu/mutate.py --file vpu.sv")
