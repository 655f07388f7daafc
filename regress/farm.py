"""Dispatching the regression's jobs through Dask distributed (doc/regress.md, "Clusters and farms").

  SCHEDULER unset or "local"      a LocalCluster on this machine: JOBS single-threaded worker processes
  SCHEDULER=tcp://host:port       an existing Dask scheduler (its workers run the jobs)
  SCHEDULER=slurm|lsf|pbs         dask-jobqueue (the `farm` extra): batch jobs of CORES worker
                                  processes each, ceil(JOBS / CORES) of them, options from the
                                  environment: QUEUE ACCOUNT WALLTIME CORES MEMORY JOB_EXTRA PROLOGUE INTERFACE

The job is the unit: one Dask task per job, run by `run.run_job` on a worker in the submitting
checkout (its path is sent along: a farm needs the checkout and the venv on a shared file system),
submitted longest `cost` first as worker threads free up, so a worker only ever holds the job it runs.
Results come back as each job finishes; a job whose worker dies is reported `lost` (not rerun:
`RETRIES` reruns, default 0), as are the jobs left when no worker has been seen for
`NO_WORKERS_TIMEOUT` seconds (default 600); Ctrl-C cancels what is left and closes the cluster."""
from __future__ import annotations

import contextlib
import logging
import math
import os
import pathlib
import sys
import time
import uuid

from tinytpu.regress import run as runmod
from tinytpu.regress import plan
from tinytpu.regress.plan import ROOT

JOBQUEUE = {"slurm": "SLURMCluster", "lsf": "LSFCluster", "pbs": "PBSCluster"}


class FarmError(RuntimeError):
  """A scheduler that cannot be used as given (bad SCHEDULER, missing dask-jobqueue or distributed)."""


def parse_scheduler(s: str | None) -> tuple[str, str | None]:
  """("local", None) | ("address", "tcp://host:port") | ("jobqueue", "slurm"|"lsf"|"pbs")."""
  s = (s or "").strip()
  if s in ("", "local"): return "local", None
  if s.lower() in JOBQUEUE: return "jobqueue", s.lower()
  if "://" in s:
    proto, _, rest = s.partition("://")
    host, _, port = rest.rpartition(":")
    if proto in ("tcp", "tls", "ucx", "ws", "wss", "inproc") and host and port.isdigit(): return "address", s
  raise FarmError(f"SCHEDULER={s!r}: want local, tcp://host:port (an existing Dask scheduler) or one of {', '.join(JOBQUEUE)} (dask-jobqueue)")


def jobqueue_kwargs(kind: str, jobs: int, out: pathlib.Path, env=os.environ, retries: int = 0) -> tuple[dict, int]:
  """The cluster class's keyword arguments from the environment, and how many batch jobs to ask for
  (each runs CORES single-threaded workers, so ceil(JOBS / CORES) of them give JOBS job slots)."""
  cores = int(env.get("CORES") or 2)
  kw: dict = {"cores": cores, "processes": cores, "memory": env.get("MEMORY") or "8GB",
              "walltime": env.get("WALLTIME") or ("02:00" if kind == "lsf" else "02:00:00"),
              "job_name": "tinytpu-regress", "log_directory": str(out / "farm-logs"), "python": sys.executable,
              "scheduler_options": {"allowed_failures": retries}}
  if env.get("QUEUE"): kw["queue"] = env["QUEUE"]
  if env.get("ACCOUNT"): kw["project" if kind == "lsf" else "account"] = env["ACCOUNT"]
  if env.get("JOB_EXTRA"): kw["job_extra_directives"] = [d.strip() for d in env["JOB_EXTRA"].split(";") if d.strip()]
  prologue = [f"cd {ROOT}"] + [l.strip() for l in (env.get("PROLOGUE") or "").split(";") if l.strip()]
  kw["job_script_prologue"] = prologue
  if env.get("INTERFACE"): kw["interface"] = env["INTERFACE"]
  return kw, max(1, math.ceil(jobs / cores))


def _distributed():
  try:
    import distributed
    return distributed
  except ImportError as e:
    raise FarmError(f"the Dask runner needs dask[distributed] ({e}): `make venv` installs it, or run with RUNNER=local") from e


def connect(scheduler: str | None, jobs: int, out: pathlib.Path, env=os.environ, retries: int = 0):
  """(client, cluster or None, a description for the report)."""
  distributed = _distributed()
  kind, arg = parse_scheduler(scheduler)
  if kind == "address":
    return distributed.Client(arg, timeout="30s"), None, f"dask scheduler {arg}"
  if kind == "local":
    # the scheduler's HTTP server (and dashboard, with bokeh) on a free port: several runs at once do not collide
    cluster = distributed.LocalCluster(n_workers=max(1, jobs), threads_per_worker=1, processes=True, dashboard_address=":0",
                                       scheduler_kwargs={"allowed_failures": retries}, silence_logs=40)
    return distributed.Client(cluster), cluster, f"dask local cluster, {max(1, jobs)} workers"
  try:
    import dask_jobqueue
  except ImportError as e:
    raise FarmError(f"SCHEDULER={arg} needs dask-jobqueue, which is not installed ({e}): "
                    f"`.venv/bin/pip install -e '.[farm]'` (or `pip install dask-jobqueue`) in the checkout's venv") from e
  kw, n = jobqueue_kwargs(arg, jobs, out, env, retries)
  (out / "farm-logs").mkdir(parents=True, exist_ok=True)
  cluster = getattr(dask_jobqueue, JOBQUEUE[arg])(**kw)
  cluster.scale(jobs=n)
  return distributed.Client(cluster), cluster, f"dask-jobqueue {JOBQUEUE[arg]}, {n} batch jobs x {kw['cores']} workers"


LOST = ("KilledWorker", "CommClosedError", "FutureCancelledError", "CancelledError")


def _failed(x: dict, e: BaseException, seconds: float, log: str = "-") -> dict:
  """A job whose task erred: `lost` when its worker died or went away, else `fail` (run_job raised)."""
  what = f"{type(e).__name__}: {e}"
  if type(e).__name__ in LOST:
    began = "" if log == "-" or pathlib.Path(log).exists() else "; it had not started (no log)"
    return {**runmod.no_result(x, "lost", f"lost: the worker running it died or went away{began} ({what})", seconds), "log": log}
  return runmod.no_result(x, "fail", what, seconds)


def _kill_workers(cluster) -> None:
  """A local cluster's worker processes and their jobs' process trees, killed outright before the
  cluster closes (remote jobs end with their workers or batch jobs)."""
  try:
    import psutil
    procs = []
    for n in getattr(cluster, "workers", {}).values():
      if (pid := getattr(n, "pid", None)):
        w = psutil.Process(pid); procs += [*w.children(recursive=True), w]
  except Exception: return
  runmod.kill_descendants(procs)


def run(jobs: list[dict], out: pathlib.Path, j: int = 2, scheduler: str | None = None, python: str | None = None,
        quiet: bool = False, on_result=None, env=os.environ, retries: int | None = None, no_workers_s: float | None = None,
        connection=None) -> tuple[list[dict], runmod.Progress, str]:
  """Run `jobs` on a Dask cluster; like run.run, plus the cluster's description. `connection`:
  an existing (client, cluster, description) to use instead of making one (tests)."""
  distributed = _distributed()
  retries = int(env.get("RETRIES") or 0) if retries is None else retries
  no_workers_s = float(env.get("NO_WORKERS_TIMEOUT") or 600) if no_workers_s is None else no_workers_s
  client, cluster, desc = connection or connect(scheduler, j, out, env, retries)
  prog = runmod.Progress(jobs, quiet, on_result, label=" " + desc.split(",")[0])
  prog.runner = desc
  if not quiet: print(f"[regress] {desc}", file=sys.stderr)
  kind = parse_scheduler(scheduler)[0] if connection is None else "local"
  started, futs, tag, fwd = {}, {}, uuid.uuid4().hex[:8], runmod.forward_env(env)
  queue = plan.longest_first(jobs)  # a job is submitted only when a worker thread is free for it, so a
  # worker holds just the job it runs and its death loses that one (the scheduler would otherwise
  # hand a worker several tasks at once, and count them all as killed with it)
  # with_results: each result is fetched as its job ends (a result left on a worker that dies would be recomputed)
  ac = distributed.as_completed([], with_results=True, raise_errors=False)
  try:
    with runmod.stop_on_signals() as stop:
      _dispatch(client, kind, queue, futs, started, ac, prog, out, python, tag, fwd, no_workers_s, stop)
  except KeyboardInterrupt:
    with contextlib.suppress(Exception): client.cancel([f for f, _ in futs.values()], force=True)
    logging.getLogger("distributed").setLevel(logging.CRITICAL)  # the closing cluster's complaints
    if kind == "local" and connection is None: _kill_workers(cluster)
    return prog.finish("cancelled"), prog, desc
  finally:
    if connection is None:
      with contextlib.suppress(Exception): client.close(timeout=10)
    if cluster is not None and connection is None:
      with contextlib.suppress(Exception): cluster.close(timeout=10)
  return prog.finish(), prog, desc


def _dispatch(client, kind, queue, futs, started, ac, prog, out, python, tag, fwd, no_workers_s, stop):
  """Submit the queue's jobs as worker threads free up and record each result; a signal (`stop`)
  raises KeyboardInterrupt at the next step, before anything more is submitted."""
  seen, idle_since, polled, slots = False, None, 0.0, 0
  while queue or futs:
    if stop: raise KeyboardInterrupt
    now = time.time()
    if now - polled > 1:
      polled, slots = now, sum(client.nthreads().values())
      if slots: seen, idle_since = True, None
      elif seen or kind == "address": idle_since = idle_since or now
    while queue and len(futs) < slots:
      x = queue.pop(0)
      f = client.submit(runmod.run_job, x, str(out), python, str(ROOT), fwd, key=f"regress-{x['id']}-{tag}", pure=False)
      futs[f.key] = (f, x); started[f.key] = time.time(); ac.add(f)
    if idle_since and no_workers_s and now - idle_since > no_workers_s:  # the watchdog: jobs left and no worker to run them
      client.cancel([f for f, _ in futs.values()])
      for x in [x for _, x in futs.values()] + queue:
        prog.done(runmod.no_result(x, "lost", f"lost: no Dask worker for {no_workers_s:.0f} s", now - idle_since))
      futs.clear(); queue.clear()
      break
    if not ac.has_ready():
      time.sleep(0.25); prog.tick(); continue
    for f, val in ac.next_batch(block=False):
      if stop: raise KeyboardInterrupt  # a result that a Ctrl-C itself failed is not a failure
      x, secs = futs.pop(f.key)[1], time.time() - started[f.key]
      if isinstance(val, dict): r = val
      elif isinstance(val, tuple): r = _failed(x, val[1], secs, str(out / "logs" / f"{runmod.safe(x['id'])}.log"))  # (type, exception, traceback)
      else: r = runmod.no_result(x, "lost", f"lost: the scheduler cancelled it ({val!r})", secs)
      prog.done(r)
      del f
    polled = 0.0  # a slot is free: look again at once
