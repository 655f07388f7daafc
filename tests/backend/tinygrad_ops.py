"""tinygrad's own op suite, test/backend/test_ops.py, on TINYTPU: where its files are, how a run is
made, and how the outcome is judged against the manifest of expected failures
(test_ops_manifest.toml). Used by test_tinygrad_ops.py and test_autoload.py; doc/backend.md has
the overview.

The files are tinygrad's, unmodified, kept outside the repository (TINYGRAD_TESTS_DIR, or
shared/tinygrad-tests next to the repository or next to the repository it was cloned from); every
run copies them to build/tinygrad-tests/ and runs them there with DEV=TINYTPU, torch as the
reference, and the device coming from the installed start-up hook (no `-p tinytpu`)."""
from __future__ import annotations

import dataclasses
import json
import os
import pathlib
import signal
import subprocess
import time
import sys
import tomllib
import urllib.parse

ROOT = pathlib.Path(__file__).resolve().parents[2]
COPY = ROOT / "build" / "tinygrad-tests"
FILES = ("LICENSE", "test/__init__.py", "test/helpers.py", "test/backend/__init__.py", "test/backend/test_ops.py")
TEST_FILE = "test/backend/test_ops.py"
MANIFEST = pathlib.Path(__file__).with_name("test_ops_manifest.toml")
# "timeout": slow, not wrong (a run near the per-test timeout on the golden model): it may pass or
# time out in either phase, and any other failure is a disagreement
MODES = ("forward", "backward", "both", "timeout")

# The only acceptable skips: tinygrad's own guards as they evaluate on TINYTPU. Any other skip
# (a missing module, a new guard, an environment switch such as SKIP_SLOW_TEST) fails the run.
ALLOWED_SKIPS = {
  # device guards
  "not precise enough when emulating": "test_matmul_half_precision: TINYTPU has no float16",
  "DEVECTORIZE=0 only for LLVM": "test_strided_conv2d_simple_vec: tinygrad's CPU/LLVM only",
  # unconditional in tinygrad's file
  "not supported": "test_pow_zero_tensor",
  "very slow": "test_large_input_conv2d",
  "slow": "test_simple_grouped_conv2d, test_medium_grouped_conv2d",
  "redundant: bs/cout are loop dims, kernel×cin sweep covered by test_conv2d": "test_conv2d_bs_4_cin_3",
  "redundant: cin=1 covered by test_conv2d_bs_1_cin_1": "test_conv2d_bs_4_cin_1",
  "this test is broken #862": "test_multinomial",
}


def _origin(root: pathlib.Path) -> pathlib.Path | None:
  """The folder this repository was cloned from, when origin is a local path (CI clones /work/main)."""
  try:
    r = subprocess.run(["git", "-C", str(root), "remote", "get-url", "origin"], capture_output=True, text=True, timeout=30)
  except (OSError, subprocess.TimeoutExpired):
    return None
  url = r.stdout.strip()
  if r.returncode or not url:
    return None
  url = urllib.parse.unquote(url.removeprefix("file://")) if url.startswith("file://") else url
  p = pathlib.Path(url) if os.path.isabs(url) else root / url
  return p.resolve() if p.is_dir() else None  # https://..., host:path: not a folder here


def _candidates(root: pathlib.Path) -> list[tuple[str, pathlib.Path]]:
  if env := os.environ.get("TINYGRAD_TESTS_DIR"):
    return [("TINYGRAD_TESTS_DIR", pathlib.Path(env))]  # said explicitly: nothing else is guessed
  out = [("next to the repository", root.parent / "shared" / "tinygrad-tests")]
  if (origin := _origin(root)) is not None:
    out.append((f"next to the clone's origin {origin}", origin.parent / "shared" / "tinygrad-tests"))
  return out


def find_tests_dir(root: pathlib.Path = ROOT) -> pathlib.Path:
  """The folder holding tinygrad's test/backend/test_ops.py and test/helpers.py, or LookupError
  saying where it looked and how to point at it."""
  tried = []
  for how, d in _candidates(root):
    if all((d / f).is_file() for f in FILES if f != "LICENSE"):
      return d
    tried.append(f"  {how}: {d}")
  raise LookupError("tinygrad's test files (test/backend/test_ops.py, test/helpers.py) not found; looked at\n" + "\n".join(tried) +
                    "\nset TINYGRAD_TESTS_DIR to the folder that holds them (on this project's machines: .../shared/tinygrad-tests)")


def copy_tests(src: pathlib.Path | None = None) -> pathlib.Path:
  """Copy the files into build/tinygrad-tests/ (each replaced atomically: concurrent runs share the
  folder) with a pytest.ini that keeps the repository's pytest configuration out."""
  src = src or find_tests_dir()
  files = {f: (src / f).read_bytes() for f in FILES if (src / f).exists()}
  files["pytest.ini"] = b"[pytest]\n# copied from %s by tests/backend/tinygrad_ops.py; regenerated every run\n" % str(src).encode()
  for name, data in files.items():
    dst = COPY / name
    dst.parent.mkdir(parents=True, exist_ok=True)
    if dst.exists() and dst.read_bytes() == data:
      continue
    tmp = dst.with_name(f".{dst.name}.{os.getpid()}")
    tmp.write_bytes(data)
    os.replace(tmp, dst)
  return COPY


def node(name: str) -> str:
  """`TestOps::test_add` -> the pytest node id in the copy."""
  return f"{TEST_FILE}::{name}"


@dataclasses.dataclass
class Run:
  results: dict[str, dict]  # short id (TestOps::test_add) -> record from tinygrad_ops_report
  returncode: int
  output: str
  seconds: float


def run_ops(selection: list[str] | None = None, *, workers: int = 2, per_test_timeout: int = 600, timeout: int = 3600,
            env: dict[str, str] | None = None, report: str = "ops-report.json") -> Run:
  """Run test_ops (all of it, or the short ids in `selection`) in the copy; DEV=TINYTPU, the
  TINYTPU_SIM of this process, FORWARD_ONLY passed through."""
  cwd = copy_tests()
  out = cwd / report
  out.unlink(missing_ok=True)
  e = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}  # an outer xdist worker's variables
  e.update(DEV="TINYTPU", PYTHONPATH=os.pathsep.join([str(pathlib.Path(__file__).parent), *filter(None, [os.environ.get("PYTHONPATH")])]))
  e.update(env or {})
  cmd = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-p", "tinygrad_ops_report", f"--ops-report={out}",
         "-n", str(workers), f"--timeout={per_test_timeout}", "-q", "-rN", "--color=no"]
  cmd += [node(s) for s in selection] if selection is not None else [TEST_FILE]
  t0 = time.monotonic()
  # its own process group: on a timeout the xdist workers go too, not just the controller
  p = subprocess.Popen(cmd, cwd=cwd, env=e, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True)
  try:
    text, _ = p.communicate(timeout=timeout)
  except subprocess.TimeoutExpired:
    os.killpg(p.pid, signal.SIGKILL)
    text = p.communicate()[0] + f"\n(killed after {timeout} s)"
  seconds = time.monotonic() - t0
  if out.exists():
    results = json.loads(out.read_text())
  else:  # killed part-way: what finished
    lines = (pathlib.Path(f"{out}.progress").read_text() if pathlib.Path(f"{out}.progress").exists() else "").splitlines()
    results = {k: v for line in lines for k, v in json.loads(line).items()}
  short = {k.removeprefix(f"{TEST_FILE}::"): v for k, v in results.items()}
  return Run(short, p.returncode, text[-8000:], seconds)


def load_manifest(path: pathlib.Path = MANIFEST) -> dict[str, dict]:
  """test id -> {mode, reason}; malformed entries raise ValueError."""
  entries = tomllib.loads(path.read_text()).get("fail", [])
  out = {}
  for e in entries:
    test, mode, reason = e.get("test"), e.get("mode"), e.get("reason")
    if not test or mode not in MODES or not reason or set(e) - {"test", "mode", "reason"}:
      raise ValueError(f"{path.name}: bad entry {e} (needs test, mode in {MODES}, reason)")
    if test in out:
      raise ValueError(f"{path.name}: {test} listed twice")
    out[test] = {"mode": mode, "reason": reason}
  return out


def observed_mode(rec: dict) -> str:
  phases = set(rec["phases"])
  return "both" if phases == {"forward", "backward"} else phases.pop() if phases else "forward"


def judge(run: Run, manifest: dict[str, dict], selection: list[str] | None, forward_only: bool = False) -> list[str]:
  """Every way the run disagrees with the manifest, one line each (empty: as expected).

  - a failure or error not in the manifest;
  - a manifest test that passed (stale: remove the entry) or fails in another phase than its mode;
    a `timeout` entry that fails other than by the per-test timeout;
  - a skip whose reason is not in ALLOWED_SKIPS;
  - a selected test with no result, a manifest test that does not exist (full runs), pytest not
    finishing normally.
  With FORWARD_ONLY=1 the gradient checks do not run: `backward` entries are expected to pass and
  no mode can be checked."""
  problems = []
  res = run.results
  if run.returncode not in (0, 1) or not res:
    problems.append(f"pytest did not finish normally (exit {run.returncode}):\n{run.output}")
  wanted = selection if selection is not None else list(res)
  for t in wanted:
    if t not in res:
      problems.append(f"{t}: no result (not collected: renamed or removed upstream?)")
  expected = {t: e for t, e in manifest.items() if not (forward_only and e["mode"] == "backward")}
  for t in wanted:
    rec = res.get(t)
    if rec is None:
      continue
    entry = expected.get(t)
    if rec["outcome"] == "skipped":
      if rec["skip"] not in ALLOWED_SKIPS:
        problems.append(f"{t}: skipped for a reason that is not one of tinygrad's own guards: {rec['skip']!r}")
      elif t in manifest:
        problems.append(f"{t}: in the manifest but skipped ({rec['skip']!r}): remove the entry")
    elif rec["outcome"] in ("failed", "error"):
      if entry is None:
        if t in manifest:
          problems.append(f"{t}: fails with FORWARD_ONLY=1 though its manifest mode is backward: make it forward ({rec['message']})")
        else:
          problems.append(f"{t}: unexpected {'failure' if rec['outcome'] == 'failed' else 'error'} ({observed_mode(rec)}): {rec['message']}")
      elif entry["mode"] == "timeout":
        if "Timeout" not in rec["message"]:
          problems.append(f"{t}: listed as too slow, but fails otherwise ({observed_mode(rec)}): {rec['message']}")
      elif not forward_only and observed_mode(rec) != entry["mode"]:
        problems.append(f"{t}: fails in mode {observed_mode(rec)}, the manifest says {entry['mode']}: update the entry ({rec['message']})")
    elif entry is not None and entry["mode"] != "timeout":
      problems.append(f"{t}: passes now: remove it from {MANIFEST.name} (was: {entry['reason']})")
  if selection is None:
    for t in manifest:
      if t not in res:
        problems.append(f"{t}: in {MANIFEST.name} but not a test of {TEST_FILE}: remove the entry")
  return problems


def summary(run: Run) -> str:
  counts: dict[str, int] = {}
  for rec in run.results.values():
    counts[rec["outcome"]] = counts.get(rec["outcome"], 0) + 1
  return ", ".join(f"{n} {k}" for k, n in sorted(counts.items())) + f" in {run.seconds:.0f} s"


def manifest_table(manifest: dict[str, dict]) -> str:
  rows = [f"| `{t}` | {e['mode']} | {e['reason']} |" for t, e in sorted(manifest.items())]
  return "\n".join(["| test | mode | missing primitive / reason |", "|---|---|---|", *rows])


if __name__ == "__main__":  # python -m tests.backend.tinygrad_ops: the manifest as a Markdown table
  print(manifest_table(load_manifest()))
