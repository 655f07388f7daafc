"""`python -m tinytpu.regress`: the regression runner (doc/regress.md).

  python -m tinytpu.regress [--list nightly] [--shard i/k] [-j 2] [--out DIR] [--dry-run] [--only GLOB]
                            [--runner dask|local] [--scheduler local|tcp://host:port|slurm|lsf|pbs] [--seed S]
                            [--record [PART]]
  python -m tinytpu.regress merge DIR1 DIR2 ... --out DIR [--record [PART]]
  python -m tinytpu.regress waves --test NODE [--seed S]
Exit status 1 on any failed job, functional coverage below the list's goal, or a benchmark more
than 10% slower in cycles than in the previous report."""
from __future__ import annotations

import argparse
import fnmatch
import gzip
import json
import os
import pathlib
import re
import shutil
import subprocess
import sys
import time

from tinytpu.regress import codecov, farm, plan, report, run
from tinytpu.regress.plan import ROOT

REPORTS = ROOT / "regress" / "reports"
RECORDS = ROOT / "regress" / "records"  # committed: a part of a nightly outlives the machine that ran it


def record_part(part: str) -> str:
  """--record's argument: a folder name (checked before the run, not after hours of it)."""
  if "/" in part or part.startswith("."): raise argparse.ArgumentTypeError(f"--record {part!r}: want a folder name")
  return part


def record(out: pathlib.Path, res: dict, part: str, records: pathlib.Path | None = None) -> pathlib.Path:
  """Copy what `merge` reads of the report in `out` (results.json, summary.md, the merged coverage
  gzipped) to <records>/<date>-<commit>/<part>/, to be committed (regress/reports/ is not)."""
  if not part or "/" in part or part.startswith("."): raise ValueError(f"--record {part!r}: want a folder name")
  dest = (records or RECORDS) / f"{res['started'][:10]}-{res['commit']}" / part
  dest.mkdir(parents=True, exist_ok=True)
  for name in ("results.json", "summary.md"): shutil.copyfile(out / name, dest / name)
  (dest / "coverage.dat.gz").unlink(missing_ok=True)
  if (out / "coverage.dat").exists():
    with (out / "coverage.dat").open("rb") as src, gzip.open(dest / "coverage.dat.gz", "wb") as dst: shutil.copyfileobj(src, dst)
  return dest


def _shard(s: str) -> tuple[int, int]:
  m = re.fullmatch(r"(\d+)/(\d+)", s)
  if not m or not 1 <= int(m[1]) <= int(m[2]): raise argparse.ArgumentTypeError(f"--shard wants i/k with 1 <= i <= k, not {s!r}")
  return int(m[1]), int(m[2])


def _have_distributed() -> bool:
  try:
    import distributed  # noqa: F401
    return True
  except ImportError:
    return False


def codecov_fields(points: dict, nfiles: int, floor: dict | None) -> dict:
  """The report's code coverage: the summary, and the floor's verdict (a list with a floor and no
  coverage data at all fails too)."""
  mods = codecov.by_module(points) if points else {}
  problems = codecov.floor_problems(mods, floor, codecov.rtl_modules(ROOT)) if floor else []
  return {"code_coverage": codecov.markdown(codecov.summary(points), nfiles, mods, floor) if points else None,
          "code_coverage_problems": problems}


def _finish(res: dict, out: pathlib.Path, tsv: str | None, part: str | None = None) -> int:
  why = report.write(out, res)
  if tsv and not res.get("shard"): report.append_tsv(pathlib.Path(tsv), res)
  print(f"report: {out / 'summary.md'} (junit.xml, results.json)")
  if part is not None: print(f"recorded in {record(out, res, part or out.name)} (commit it)")
  print("FAIL: " + "; ".join(why) if why else "PASS")
  return 1 if why else 0


def cmd_run(argv: list[str]) -> int:
  ap = argparse.ArgumentParser(prog="python -m tinytpu.regress", description="run a regression list and write a report")
  ap.add_argument("--list", default="nightly", help="a list name in regress/lists (smoke, nightly) or a .toml path")
  ap.add_argument("--shard", type=_shard, help="i/k: run only the i-th of k deterministic slices")
  ap.add_argument("-j", "--jobs", type=int, default=int(os.environ.get("JOBS", "2")), help="jobs in parallel (default 2)")
  ap.add_argument("--out", help="report directory (default regress/reports/<date>-<time>[-shard-i-of-k])")
  ap.add_argument("--tsv", default=str(ROOT / "results.tsv"), help="append one row here (not for a shard)")
  ap.add_argument("--no-tsv", dest="tsv", action="store_const", const=None)
  ap.add_argument("--baseline", help="a report directory to compare the benchmarks with (default: the previous report)")
  ap.add_argument("--dry-run", action="store_true", help="print the jobs and their commands, run nothing")
  ap.add_argument("--only", action="append", metavar="GLOB", help="run only the jobs whose id matches (e.g. 'isa:*'; repeatable)")
  ap.add_argument("--runner", choices=("dask", "local"), default=os.environ.get("RUNNER") or "dask",
                  help="dask: through a Dask cluster (default); local: threads of this process (RUNNER=)")
  ap.add_argument("--scheduler", default=os.environ.get("SCHEDULER"),
                  help="the Dask cluster: local (default), tcp://host:port, slurm, lsf or pbs (SCHEDULER=; doc/regress.md)")
  ap.add_argument("--seed", default=os.environ.get("SEED"), help="the night's seed (SEED=; default: the date as YYYYMMDD)")
  ap.add_argument("--record", nargs="?", const="", metavar="PART", type=record_part,
                  help="also copy the report (results.json, summary.md, coverage.dat.gz) to regress/records/<date>-<commit>/PART "
                       "(default PART: shard-i-of-k, else the report folder's name), to commit")
  a = ap.parse_args(argv)
  lst = plan.load(a.list)
  night, night_from = plan.night_seed(a.seed)
  jobs = plan.expand(lst, night=night)
  if bad := plan.unmatched_costs(lst, jobs): ap.error(f"list {lst['name']}: costs entries that match no job: {', '.join(bad)}")
  mine = plan.shard(jobs, *a.shard) if a.shard else jobs
  if a.only: mine = [x for x in mine if any(fnmatch.fnmatchcase(x["id"], g) for g in a.only)]
  if a.dry_run:
    for x in mine: print(f"{x['id']:20s} {x['unit']:12s} {x['layer']:8s} {x['config']:14s} {plan.reproduce(x)}")
    print(f"{len(mine)} of {len(jobs)} jobs")
    return 0
  tag = f"-shard-{a.shard[0]}-of-{a.shard[1]}" if a.shard else ""
  out = pathlib.Path(a.out) if a.out else REPORTS / (time.strftime("%Y-%m-%d-%H%M%S") + tag)
  out = out.resolve()
  started, t0 = report.now(), time.time()
  print(f"[regress] list {lst['name']}: {len(mine)} of {len(jobs)} jobs, -j {a.jobs}, night seed {night} ({night_from}), "
        f"report in {out}", file=sys.stderr)
  head = {"list": lst["name"], "shard": f"{a.shard[0]}/{a.shard[1]}" if a.shard else None, "started": started,
          "commit": report.git_commit(), "j": a.jobs, "all_jobs": [x["id"] for x in jobs], "coverage_goal": lst.get("coverage_goal"),
          "coverage_units": lst.get("coverage_units"), "code_coverage_floor": lst.get("code_coverage_floor"),
          "mutation_goal": lst.get("mutation_goal"), "seed": night, "seed_from": night_from, "reseed": bool(lst.get("reseed")),
          "seed_offset": plan.seed_offset(night) if lst.get("reseed") else 0, "runner": a.runner, "only": a.only}

  def partial(p: run.Progress) -> None:  # the report so far, rewritten as each job ends
    report.write(out, {**head, "runner": p.runner, "partial": len(mine), "seconds": time.time() - t0, "jobs": p.ordered(partial=True), "coverage": p.cov,
                       "coverage_files": p.files, "mutants": p.mutants, "bench": None, "bench_prev": None, "bench_prev_from": None})
  if a.runner == "dask" and not _have_distributed():
    print("[regress] distributed is not installed (`make venv` installs dask[distributed]): running the jobs here (RUNNER=local)", file=sys.stderr)
    a.runner = head["runner"] = "local"
  try:
    if a.runner == "local":
      results, prog = run.run(mine, out, a.jobs, on_result=partial)
    else:
      results, prog, head["runner"] = farm.run(mine, out, a.jobs, a.scheduler, on_result=partial)
  except farm.FarmError as e:
    print(f"regress: {e}", file=sys.stderr)
    return 2
  dats = codecov.collect(out)
  points = codecov.merge(dats)
  if points:
    codecov.write_dat(points, out / "coverage.dat")
  prev, prev_from = report.previous_bench(out) if not a.baseline else (json.loads((pathlib.Path(a.baseline) / "results.json").read_text()).get("bench"), a.baseline)
  bench = out / "bench.json"
  res = {**head, "seconds": time.time() - t0, "jobs": results, "coverage": prog.cov, "coverage_files": prog.files, "mutants": prog.mutants,
         "bench": json.loads(bench.read_text()) if bench.exists() else None,
         "bench_prev": prev, "bench_prev_from": prev_from,
         **codecov_fields(points, len(dats), lst.get("code_coverage_floor"))}
  part = a.record if a.record is None or a.record else (tag.lstrip("-") or out.name)
  if any(r["status"] == "cancelled" for r in results):
    _finish(res, out, None, part)
    print("interrupted: the jobs not run are marked cancelled in the report", file=sys.stderr)
    return 130
  return _finish(res, out, a.tsv, part)


def cmd_merge(argv: list[str]) -> int:
  ap = argparse.ArgumentParser(prog="python -m tinytpu.regress merge", description="join shard reports into one")
  ap.add_argument("dirs", nargs="+")
  ap.add_argument("--out", required=True)
  ap.add_argument("--tsv", default=str(ROOT / "results.tsv"))
  ap.add_argument("--no-tsv", dest="tsv", action="store_const", const=None)
  ap.add_argument("--record", nargs="?", const="merged", metavar="PART", type=record_part, help="also copy the merged report to regress/records (default PART: merged)")
  a = ap.parse_args(argv)
  out = pathlib.Path(a.out).resolve()
  res = report.merge([pathlib.Path(d) for d in a.dirs], out)
  return _finish(res, out, a.tsv, a.record)


def cmd_waves(argv: list[str]) -> int:
  ap = argparse.ArgumentParser(prog="python -m tinytpu.regress waves", description="rerun one test with waveform tracing")
  ap.add_argument("--test", required=True, help="a pytest node id, e.g. 'tests/rtl/test_mxu.py::test_mxu[4-MxuRandom]'")
  ap.add_argument("--seed", help="TINYTPU_SEED for the rerun")
  a = ap.parse_args(argv)
  env = {**os.environ, "TINYTPU_WAVES": "1", **({"TINYTPU_SEED": str(a.seed)} if a.seed else {})}
  t0 = time.time()
  cmd = [sys.executable, *plan.PYTEST, "-s", a.test]
  print("$ " + ("TINYTPU_SEED=" + str(a.seed) + " " if a.seed else "") + "TINYTPU_WAVES=1 " + " ".join(cmd), flush=True)
  p = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True)
  text = p.stdout + p.stderr
  sys.stdout.write(text[-6000:])
  # the kit prints where it wrote the waves; else the newest waveform written during the rerun
  found = re.findall(r"waves(?: then in|:) (\S+\.(?:fst|vcd))", text)
  if not found:
    new = [f for ext in ("fst", "vcd") for f in (ROOT / "build").rglob(f"*.{ext}") if f.stat().st_mtime >= t0]
    found = [str(max(new, key=lambda f: f.stat().st_mtime))] if new else []
  print(f"\nwaves: {found[-1]}" if found else "\nno waveform was written (a golden-only test, or the test does not trace)")
  return p.returncode


def main(argv: list[str] | None = None) -> int:
  argv = sys.argv[1:] if argv is None else argv
  if argv[:1] == ["merge"]: return cmd_merge(argv[1:])
  if argv[:1] == ["waves"]: return cmd_waves(argv[1:])
  return cmd_run(argv)


if __name__ == "__main__":
  sys.exit(main())
