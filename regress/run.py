"""Running jobs: `run_job` runs one (a subprocess from the repository root, its output in
<out>/logs/<job>.log, pytest's JUnit XML in <out>/junit/<job>.xml, the kit's functional coverage
documents in its own folder <out>/coverage/<job>/ through TINYTPU_COVERAGE_DIR); `run` is the
in-process runner (RUNNER=local: a thread per job slot), regress/farm.py the Dask one. Both feed
a `Progress`: the live progress line, the coverage merge and a callback per finished job."""
from __future__ import annotations

import concurrent.futures as cf
import contextlib
import json
import os
import pathlib
import re
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time

from tinytpu.regress import plan, report
from tinytpu.regress.plan import ROOT

# what a remote worker is sent of the submitting environment (a local cluster inherits all of it)
FORWARD = ("VERILATOR_ROOT",)
FORWARD_PREFIX = ("TINYTPU_",)


def forward_env(environ=os.environ) -> dict:
  return {k: v for k, v in environ.items() if k in FORWARD or k.startswith(FORWARD_PREFIX)}


def safe(jid: str) -> str: return re.sub(r"[^\w.-]", "_", jid)


def _seed_of(text: str) -> str | None:
  m = re.search(r"TINYTPU_SEED=(\d+)", text) or re.search(r"seed[= ](\d+)", text)
  return m[1] if m else None


def _env(job: dict, out: pathlib.Path, python: str, extra: dict | None, covdir: pathlib.Path) -> dict:
  env = plan.job_env(job, str(out), extra)
  env["TINYTPU_COVERAGE_DIR"] = str(covdir)
  # the job's tools first: the venv of the worker's python, then Verilator (as the Makefile sets PATH)
  path = [str(pathlib.Path(python).parent)] + ([str(pathlib.Path(env["VERILATOR_ROOT"]) / "bin")] if env.get("VERILATOR_ROOT") else [])
  env["PATH"] = os.pathsep.join(path + [env.get("PATH", "")])
  return env


def run_job(job: dict, out: pathlib.Path | str, python: str | None = None, root: pathlib.Path | str | None = None,
            extra: dict | None = None) -> dict:
  """Run one job from the checkout `root` (default: this one) and return its result; also what a
  Dask worker runs, so `root` and `out` must be paths the worker sees (a shared file system)."""
  out, root = pathlib.Path(out), pathlib.Path(root or ROOT)
  if not (root / "regress" / "lists").is_dir():
    raise FileNotFoundError(f"no TinyTPU checkout at {root} on {socket.gethostname()}: the workers run the jobs in the "
                            "submitting checkout, so it must be at the same path there (a shared file system, doc/regress.md)")
  python = python or sys.executable
  log, xml, covdir = out / "logs" / f"{safe(job['id'])}.log", out / "junit" / f"{safe(job['id'])}.xml", out / "coverage" / safe(job["id"])
  log.parent.mkdir(parents=True, exist_ok=True); xml.parent.mkdir(parents=True, exist_ok=True)
  shutil.rmtree(covdir, ignore_errors=True)
  cmd = plan.command(job, python, str(out))
  if job["kind"] == "pytest": cmd += [f"--junitxml={xml}"]
  t0 = time.time()
  with log.open("w") as f:
    f.write("$ " + plan.reproduce(job) + "\n\n"); f.flush()
    rc = subprocess.run(cmd, cwd=root, env=_env(job, out, python, extra, covdir), stdout=f, stderr=subprocess.STDOUT).returncode
  secs = time.time() - t0
  text = log.read_text(errors="replace")
  tail = "\n".join(text.splitlines()[-40:])
  cases = report.read_junit(xml, root) if job["kind"] == "pytest" else []
  if job["kind"] == "cmd":
    cases = [{"node": job["id"], "time": secs, "status": "pass" if rc == 0 else "fail", "message": "" if rc == 0 else tail}]
  elif rc != 0 and not any(c["status"] == "fail" for c in cases):  # crashed, or nothing ran
    cases.append({"node": job["id"], "time": secs, "status": "fail", "message": f"pytest exited {rc}" + (" (no tests selected)" if rc == 5 else "") + "\n" + tail})
  failed = [c["node"] for c in cases if c["status"] == "fail" and "::" in c["node"]]
  docs = []
  for p in sorted(covdir.glob("*.json")) if covdir.is_dir() else []:
    try: docs.append(json.loads(p.read_text()))
    except (OSError, ValueError) as e:
      cases.append({"node": f"{job['id']}::{p.name}", "time": 0.0, "status": "fail", "message": f"unreadable coverage document {p}: {e}"})
  res = {**job, "status": "pass" if rc == 0 and not any(c["status"] == "fail" for c in cases) else "fail", "rc": rc, "seconds": secs,
         "cases": cases, "host": socket.gethostname(), "log": str(log.relative_to(root) if log.is_relative_to(root) else log),
         "reproduce": plan.reproduce(job, failed or None), "coverage_docs": docs}
  if rc != 0 and job["kind"] == "pytest" and failed:
    seed = next((s for c in cases if c["status"] == "fail" and (s := _seed_of(c["message"]))), None) or job["env"].get("TINYTPU_SEED")
    env = "".join(f"{k}={shlex.quote(v)} " for k, v in job["env"].items() if k != "TINYTPU_SEED")
    res["waves"] = f"{env}.venv/bin/python -m tinytpu.regress waves --test {shlex.quote(failed[0])}" + (f" --seed {seed}" if seed else "")
  return res


def no_result(job: dict, status: str, message: str, seconds: float = 0.0) -> dict:
  """The result of a job that did not finish: `fail` (the runner failed on it), `lost` (its worker
  died or vanished), `cancelled` (Ctrl-C)."""
  return {**job, "status": status, "rc": None, "seconds": seconds, "log": "-", "reproduce": plan.reproduce(job), "coverage_docs": [],
          "cases": [{"node": job["id"], "time": seconds, "status": "fail" if status != "cancelled" else "skip", "message": message}]}


def kill_descendants(procs=None) -> None:
  """Kill `procs` (default: every process this one started, recursively): what a Ctrl-C leaves of
  the jobs' process trees."""
  try:
    import psutil
    procs = psutil.Process().children(recursive=True) if procs is None else procs
  except Exception: return
  for q in procs:
    try: q.kill()
    except Exception: pass


def descendants() -> list:
  try:
    import psutil
    return psutil.Process().children(recursive=True)
  except Exception: return []


class Progress:
  """What every runner does as a job finishes: merge its coverage documents, keep its result, call
  `on_result(results so far)`, and print (a live line on a terminal, else one line per job)."""
  def __init__(self, jobs: list[dict], quiet: bool = False, on_result=None, label: str = ""):
    self.jobs, self.quiet, self.on_result, self.label = jobs, quiet, on_result, label
    self.start, self.results, self.cov, self.files, self.runner = time.time(), {}, {}, 0, "local"
    self.mutants: list[dict] = []  # the mutation jobs' mutants, in the order they finished
    self.total_cost = sum(x["cost"] for x in jobs) or 1
    self.tty = sys.stderr.isatty() and not quiet

  def line(self) -> str:
    el, dc = time.time() - self.start, sum(r["cost"] for r in self.results.values())
    eta = f"ETA {report._fmt_s(el / dc * (self.total_cost - dc))}" if dc else "ETA ?"
    bad = sum(r["status"] != "pass" for r in self.results.values())
    return f"[regress{self.label}] {len(self.results)}/{len(self.jobs)} done · {bad} failed · {report._fmt_s(el)} elapsed · {eta}"

  def done(self, r: dict) -> None:
    docs = r.pop("coverage_docs", [])
    self.mutants += [m for d in docs if d.get("kind") == "mutation" for m in d["mutants"]]  # tinytpu.mutate.write_document
    docs = [d for d in docs if d.get("kind") != "mutation"]
    for d in docs: report.add_coverage(self.cov, d)
    self.files += len(docs)
    r["coverage_units"] = sorted({d["unit"] for d in docs})
    self.results[r["id"]] = r
    if not self.quiet:
      msg = f"{r['status'].upper():4s} {r['id']} ({r['seconds']:.0f} s{', ' + r['host'] if r.get('host') and self.label else ''})"
      sys.stderr.write(("\r\033[K" + msg + "\n") if self.tty else (msg + " · " + self.line() + "\n"))
    if self.on_result: self.on_result(self)
    self.tick()

  def tick(self) -> None:
    if self.tty: sys.stderr.write("\r\033[K" + self.line()); sys.stderr.flush()

  def ordered(self, partial: bool = False) -> list[dict]:
    return [self.results[x["id"]] for x in self.jobs if x["id"] in self.results or not partial]

  def finish(self, leftover: str | None = None) -> list[dict]:
    """Every job's result in list order; jobs without one get status `leftover` (a Ctrl-C)."""
    for x in self.jobs:
      if x["id"] not in self.results and leftover: self.results[x["id"]] = {**no_result(x, leftover, f"not run: {leftover}"), "coverage_units": []}
    if self.tty: sys.stderr.write("\n")
    return self.ordered()


@contextlib.contextmanager
def stop_on_signals():
  """SIGINT and SIGTERM set a flag that the dispatch loop checks at each step. A KeyboardInterrupt
  raised inside one of Dask distributed's blocking calls can be swallowed there (at acea427 a Ctrl-C
  let the run go on submitting jobs, six `lost`, until it was killed), and SIGTERM (`kill`) would
  otherwise end the run without a report. Yields the flag (a list: empty until a signal); the
  previous handlers come back afterwards. Outside the main thread (no handlers there) it stays empty."""
  stop: list[int] = []
  if threading.current_thread() is not threading.main_thread():
    yield stop
    return
  sigs = (signal.SIGINT, signal.SIGTERM)
  old = {s: signal.signal(s, lambda n, _frame: stop.append(n)) for s in sigs}
  try:
    yield stop
  finally:
    for s, h in old.items(): signal.signal(s, h)


def run(jobs: list[dict], out: pathlib.Path, j: int = 2, python: str | None = None, quiet: bool = False,
        on_result=None) -> tuple[list[dict], Progress]:
  """RUNNER=local: `jobs` with `j` in parallel in this process, started longest `cost` first;
  results in list order, and the Progress (coverage in .cov, .files documents)."""
  prog = Progress(jobs, quiet, on_result)
  ex = cf.ThreadPoolExecutor(max_workers=max(1, j))
  futs = {ex.submit(run_job, x, out, python): x for x in plan.longest_first(jobs)}
  pending = set(futs)
  try:
    with stop_on_signals() as stop:
      _wait_all(futs, pending, prog, stop)
  except KeyboardInterrupt:
    for f in futs: f.cancel()
    kill_descendants()
    ex.shutdown(wait=False, cancel_futures=True)
    return prog.finish("cancelled"), prog
  ex.shutdown()
  return prog.finish(), prog


def _wait_all(futs: dict, pending: set, prog: Progress, stop: list) -> None:
  """Record each job's result as it finishes; a signal (`stop`) raises KeyboardInterrupt."""
  order = {id(x): n for n, x in enumerate(prog.jobs)}
  while pending:
    if stop: raise KeyboardInterrupt
    fin, pending = cf.wait(pending, timeout=2, return_when=cf.FIRST_COMPLETED)
    for f in sorted(fin, key=lambda f: order[id(futs[f])]):  # jobs that finished together: reported in list order, not a set's
      x = futs[f]
      try: r = f.result()
      except Exception as e:  # the runner itself failed on this job: report it, keep going
        r = no_result(x, "fail", f"{type(e).__name__}: {e}")
      prog.done(r)
    prog.tick()
