"""Code coverage of the co-sim binaries (tinytpu.cosim.coverage_build, doc/regress.md): with
TINYTPU_BUILD_ARGS=--coverage the co-sim is built with Verilator line, toggle and user coverage in a
folder of its own, and every process writes its coverage.dat: in a regression job into the job's
folder, where regress/codecov.collect finds a run's own files.
The build itself is nightly (group cosim-codecov); the plumbing is checked here."""
import os
import pathlib

import pytest

from tinytpu import cosim, tools
from tinytpu.regress import codecov

BUNDLE = ("tinytpu-bundle 1 N=4 VMEM_TILES=1024 PSUM_TILES=64\nasm LI s1, 5\nasm VSPLAT v1, s1\nasm VST v1, [s0 + 3]\n"
          "asm LI s2, 200\nasm DMA.OUT [s2 + 0], [s0 + 3], 1\nasm DMA.IN [s0 + 9], [s2 + 0], 1\nasm HALT\ndump vmem 9 1\nrun 10000\n")


def test_coverage_arguments(monkeypatch, tmp_path):
  monkeypatch.setattr(cosim, "COVERAGE_RUNS", tmp_path)
  monkeypatch.delenv("TINYTPU_COVERAGE_DIR", raising=False)  # outside a regression job
  monkeypatch.setenv("TINYTPU_BUILD_ARGS", "--coverage -DFOO")
  assert tools.build_args_from_env() == tools.COVERAGE_ARGS + ["-DFOO"]  # no expression coverage (tools.COVERAGE_ARGS)
  assert cosim.coverage_build()
  env = cosim.sim_env()
  path = env["TINYTPU_COSIM_COVERAGE"]
  assert path.startswith(str(tmp_path / f"{os.getpid()}-")) and path.endswith("coverage.dat")
  assert cosim.sim_env()["TINYTPU_COSIM_COVERAGE"] != path  # one file per process
  monkeypatch.setenv("TINYTPU_BUILD_ARGS", "")
  assert cosim.sim_env() is None and not cosim.coverage_build()


def test_in_a_regression_job_each_process_writes_into_the_job(monkeypatch, tmp_path):
  # the job's own folder (the runner's TINYTPU_COVERAGE_DIR), a file per process; collect finds a
  # run's files and nothing else (another run's build/ files are not this run's coverage)
  monkeypatch.setenv("TINYTPU_BUILD_ARGS", "--coverage")
  monkeypatch.setenv("TINYTPU_COVERAGE_DIR", str(tmp_path / "coverage" / "a_000"))
  paths = [cosim.sim_env()["TINYTPU_COSIM_COVERAGE"] for _ in range(2)]
  assert paths[0] != paths[1] and all(p.startswith(str(tmp_path / "coverage" / "a_000" / "codecov" / "cosim-")) for p in paths)
  for p in paths: open(p, "w").write("# SystemC::Coverage-3\n")
  (tmp_path / "build" / "cosim-cov" / "1-0").mkdir(parents=True)
  (tmp_path / "build" / "cosim-cov" / "1-0" / "coverage.dat").write_text("# SystemC::Coverage-3\n")
  assert [str(p) for p in codecov.collect(tmp_path)] == sorted(paths)
  monkeypatch.setenv("TINYTPU_BUILD_ARGS", "")
  assert tools.code_coverage_file("x") is None  # no coverage build: nothing to write


def test_parameterised_modules_count_as_the_module():
  """Verilator names a module instantiated with non-default parameters `<module>__<params>`."""
  key = lambda mod, line: f"\x01page\x02v_line/{mod}\x01l\x02{line}"  # noqa: E731
  mods = codecov.by_module({key("sxu__H100000", 1): 1, key("sxu", 2): 0, key("dma__Q4", 3): 2})
  assert mods == {"sxu": {"line": [1, 2]}, "dma": {"line": [1, 1]}}


def test_instances_and_configurations_of_one_source_point_fold():
  """A point is covered when any instance or parameterisation runs it (Verilator keeps one per
  instance `h` and per `<module>__<params>`); a toggle bit that only N = 16 has is a point of its own."""
  key = lambda mod, h, o, page="v_line": f"\x01f\x02/a/rtl/vpu.sv\x01l\x027\x01n\x025\x01page\x02{page}/{mod}\x01o\x02{o}\x01h\x02{h}"  # noqa: E731
  points = {key("vpu", "TOP.a.u0", "case"): 0, key("vpu__N16", "TOP.b", "case"): 3, key("vpu", "TOP.a.u1", "case"): 0,
            key("vpu", "TOP.a.u0", "x[3]:0->1", "v_toggle"): 1, key("vpu__N16", "TOP.b", "x[3]:0->1", "v_toggle"): 0,
            key("vpu__N16", "TOP.b", "x[15]:0->1", "v_toggle"): 0}
  assert codecov.by_module(points) == {"vpu": {"line": [1, 1], "toggle": [1, 2]}}
  assert (codecov.summary(points)["line"]["hit"], codecov.summary(points)["line"]["total"]) == (1, 1)


@pytest.mark.nightly
def test_coverage_build_writes_every_module(monkeypatch):
  """A --coverage co-sim run (one process, and the server) writes points of sim_top and of what it
  instantiates."""
  monkeypatch.setenv("TINYTPU_BUILD_ARGS", "--coverage")
  job = os.environ.get("TINYTPU_COVERAGE_DIR")  # in a regression job the files go there (and count for the night)
  files = lambda: set(pathlib.Path(job, "codecov").glob("cosim-*.dat") if job else cosim.COVERAGE_RUNS.glob("*/coverage.dat"))  # noqa: E731
  before = files()
  r = cosim.run_bundle(BUNDLE)
  assert r.status == "ok" and (r.dumps[0][2] == 5).all()
  new = [p for p in files() if p not in before]
  assert len(new) == 1
  mods = codecov.by_module(codecov.merge(new))
  assert {"sim_top", "tensorcore", "sxu", "dma", "hbm", "hbm_arb", "sparsecore"} <= set(mods), sorted(mods)
