"""Running jobs in parallel: one subprocess per job (from the repository root), its output in
<out>/logs/<job>.log, pytest's JUnit XML in <out>/junit/<job>.xml, a live progress line, and the
kit's functional coverage documents (build/coverage/*.json) gathered as the jobs write them."""
from __future__ import annotations

import concurrent.futures as cf
import json
import pathlib
import re
import shlex
import subprocess
import sys
import time

from tinytpu.regress import plan, report
from tinytpu.regress.plan import ROOT

COVERAGE = ROOT / "build" / "coverage"


class CoverageWatch:
  """Each version of each coverage document written since the run started is merged exactly once
  (the kit rewrites build/coverage/<unit>_<config>_<test>.json on every run of a test, so a
  document is taken as soon as a job that may have written it ends)."""
  def __init__(self, start: float, folder: pathlib.Path = COVERAGE):
    self.start, self.folder, self.seen, self.cov, self.files = start, folder, set(), {}, 0

  def scan(self) -> None:
    for p in sorted(self.folder.glob("*.json")) if self.folder.exists() else []:
      try: st = p.stat()
      except OSError: continue
      if st.st_mtime < self.start or (p.name, st.st_mtime_ns) in self.seen: continue
      try: doc = json.loads(p.read_text())
      except (OSError, ValueError): continue  # being written: taken at the next scan
      self.seen.add((p.name, st.st_mtime_ns))
      report.add_coverage(self.cov, doc); self.files += 1


def _safe(jid: str) -> str: return re.sub(r"[^\w.-]", "_", jid)


def _seed_of(text: str) -> str | None:
  m = re.search(r"TINYTPU_SEED=(\d+)", text) or re.search(r"seed[= ](\d+)", text)
  return m[1] if m else None


def run_job(job: dict, out: pathlib.Path, python: str | None = None) -> dict:
  log, xml = out / "logs" / f"{_safe(job['id'])}.log", out / "junit" / f"{_safe(job['id'])}.xml"
  log.parent.mkdir(parents=True, exist_ok=True); xml.parent.mkdir(parents=True, exist_ok=True)
  cmd = plan.command(job, python, str(out))
  if job["kind"] == "pytest": cmd += [f"--junitxml={xml}"]
  t0 = time.time()
  with log.open("w") as f:
    f.write("$ " + plan.reproduce(job) + "\n\n"); f.flush()
    rc = subprocess.run(cmd, cwd=ROOT, env=plan.job_env(job, str(out)), stdout=f, stderr=subprocess.STDOUT).returncode
  secs = time.time() - t0
  text = log.read_text(errors="replace")
  tail = "\n".join(text.splitlines()[-40:])
  cases = report.read_junit(xml) if job["kind"] == "pytest" else []
  if job["kind"] == "cmd":
    cases = [{"node": job["id"], "time": secs, "status": "pass" if rc == 0 else "fail", "message": "" if rc == 0 else tail}]
  elif rc != 0 and not any(c["status"] == "fail" for c in cases):  # crashed, or nothing ran
    cases.append({"node": job["id"], "time": secs, "status": "fail", "message": f"pytest exited {rc}" + (" (no tests selected)" if rc == 5 else "") + "\n" + tail})
  failed = [c["node"] for c in cases if c["status"] == "fail" and "::" in c["node"]]
  res = {**job, "status": "pass" if rc == 0 else "fail", "rc": rc, "seconds": secs, "cases": cases,
         "log": str(log.relative_to(ROOT) if log.is_relative_to(ROOT) else log), "reproduce": plan.reproduce(job, failed or None)}
  if rc != 0 and job["kind"] == "pytest" and failed:
    seed = next((s for c in cases if c["status"] == "fail" and (s := _seed_of(c["message"]))), None) or job["env"].get("TINYTPU_SEED")
    env = "".join(f"{k}={shlex.quote(v)} " for k, v in job["env"].items() if k != "TINYTPU_SEED")
    res["waves"] = f"{env}.venv/bin/python -m tinytpu.regress waves --test {shlex.quote(failed[0])}" + (f" --seed {seed}" if seed else "")
  return res


def _fmt(s: float) -> str: return report._fmt_s(s)


def run(jobs: list[dict], out: pathlib.Path, j: int = 2, python: str | None = None, quiet: bool = False) -> tuple[list[dict], CoverageWatch]:
  """Run `jobs` with `j` in parallel; returns their results in list order and the coverage gathered."""
  start = time.time()
  watch = CoverageWatch(start - 1)
  total_cost = sum(x["cost"] for x in jobs) or 1
  done, results, tty = [], {}, sys.stderr.isatty() and not quiet

  def line() -> str:
    el = time.time() - start
    dc = sum(x["cost"] for x in done)
    eta = f"ETA {_fmt(el / dc * (total_cost - dc))}" if dc else "ETA ?"
    return (f"[regress] {len(done)}/{len(jobs)} done · {sum(r['status'] != 'pass' for r in results.values())} failed · "
            f"{_fmt(el)} elapsed · {eta}")

  with cf.ThreadPoolExecutor(max_workers=max(1, j)) as ex:
    futs = {ex.submit(run_job, x, out, python): x for x in jobs}
    pending = set(futs)
    while pending:
      fin, pending = cf.wait(pending, timeout=2, return_when=cf.FIRST_COMPLETED)
      for f in fin:
        x = futs[f]
        try: r = f.result()
        except Exception as e:  # the runner itself failed on this job: report it, keep going
          r = {**x, "status": "fail", "rc": None, "seconds": 0.0, "log": "-", "reproduce": plan.reproduce(x),
               "cases": [{"node": x["id"], "time": 0.0, "status": "fail", "message": f"{type(e).__name__}: {e}"}]}
        results[x["id"]] = r; done.append(x)
        watch.scan()
        if not quiet:
          msg = f"{r['status'].upper():4s} {x['id']} ({r['seconds']:.0f} s)"
          if tty: sys.stderr.write("\r\033[K" + msg + "\n")
          else: sys.stderr.write(msg + " · " + line() + "\n")
      if tty: sys.stderr.write("\r\033[K" + line())
      sys.stderr.flush()
  if tty: sys.stderr.write("\n")
  watch.scan()
  return [results[x["id"]] for x in jobs], watch
