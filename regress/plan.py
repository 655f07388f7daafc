"""Regression lists (regress/lists/<name>.toml) expanded into jobs, and deterministic shards.

A list is a TOML file of [[group]] tables (format in doc/regress.md). A group expands into jobs:
  pytest groups: one job, one per file (split = "file"), one per collected node (split = "node"),
  or k jobs of interleaved nodes (split = k);
  cmd groups: one job, or ceil(seeds / chunk) jobs each running `chunk` seeds from its `{seed}`.
The expansion depends only on the list and the collected test ids, so every machine of a farm
computes the same jobs and `shard(jobs, i, k)` picks the same slice."""
from __future__ import annotations

import os
import pathlib
import shlex
import subprocess
import sys
import tomllib

ROOT = pathlib.Path(__file__).resolve().parent.parent
LISTS = pathlib.Path(__file__).resolve().parent / "lists"
LAYERS = ("unit", "core", "cosim", "backend", "golden", "random", "bench")
KEYS = {"name", "unit", "layer", "config", "pytest", "cmd", "mark", "split", "env", "cost", "seeds", "chunk", "seed_base"}
PYTEST = ["-m", "pytest", "-p", "no:cacheprovider", "-n", "0"]


def load(name: str) -> dict:
  """A list by name (regress/lists/<name>.toml) or path; checks every group's keys."""
  p = pathlib.Path(name)
  if not p.suffix: p = LISTS / f"{name}.toml"
  lst = tomllib.loads(p.read_text())
  lst.setdefault("name", p.stem)
  names = set()
  for g in lst.get("group", []):
    where = f"{p}: group {g.get('name', '?')}"
    if bad := set(g) - KEYS: raise ValueError(f"{where}: unknown keys {sorted(bad)}")
    if "name" not in g or g["name"] in names: raise ValueError(f"{where}: missing or repeated name")
    names.add(g["name"])
    if ("pytest" in g) == ("cmd" in g): raise ValueError(f"{where}: give exactly one of pytest, cmd")
    if g.get("layer") not in LAYERS: raise ValueError(f"{where}: layer must be one of {LAYERS}")
    split = g.get("split", "none")
    if not (split in ("none", "file", "node") or (isinstance(split, int) and split > 0)):
      raise ValueError(f"{where}: split must be none, file, node or a positive count")
  return lst


def collect(paths: list[str], mark: str | None) -> list[str]:
  """pytest's node ids for `paths` (and -m `mark`), in pytest's order."""
  cmd = [sys.executable, *PYTEST, "--collect-only", *(["-m", mark] if mark else []), *paths]
  r = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
  if r.returncode not in (0, 5):  # 5: nothing selected
    raise RuntimeError(f"collection failed: {' '.join(cmd)}\n{r.stdout[-3000:]}{r.stderr[-3000:]}")
  return [l.strip() for l in r.stdout.splitlines() if "::" in l and not l.startswith(" ")]


def _files(paths: list[str]) -> list[str]:
  out = []
  for p in paths:
    q = ROOT / p
    out += sorted(str(f.relative_to(ROOT)) for f in q.rglob("test_*.py")) if q.is_dir() else [p]
  return out


def _fill(s: str, **kw) -> str:
  for k, v in kw.items(): s = s.replace("{" + k + "}", str(v))
  return s


def expand(lst: dict, collect=collect) -> list[dict]:
  """Every job of the list, in list order. A job: id, group, unit, layer, config, seeds, cost,
  kind (pytest|cmd), args (pytest arguments or the command), env (with {seed} placeholders filled;
  {python} and {out} are filled at run time)."""
  jobs = []
  for g in lst.get("group", []):
    base, chunk, seeds = g.get("seed_base", 1), g.get("chunk"), g.get("seeds", 1)
    tags = {k: g.get(k, "-") for k in ("unit", "layer", "config")}
    if "cmd" in g:
      n = -(-seeds // chunk) if chunk else 1
      parts = [(base + i * (chunk or 0), min(chunk, seeds - i * chunk) if chunk else seeds) for i in range(n)]
      units = [("cmd", shlex.split(_fill(g["cmd"], seed=s, chunk=c)), s, c) for s, c in parts]
    else:
      split, mark = g.get("split", "none"), g.get("mark")
      if split == "none": sel = [g["pytest"]]
      elif split == "file": sel = [[f] for f in _files(g["pytest"])]
      else:
        nodes = collect(g["pytest"], mark)
        sel = [[n] for n in nodes] if split == "node" else [nodes[i::split] for i in range(min(split, len(nodes)))]
      units = [("pytest", [*(["-m", mark] if mark else []), *s], base + i, seeds) for i, s in enumerate(sel)]
    for i, (kind, args, seed, nseeds) in enumerate(units):
      env = {k: _fill(v, seed=seed, chunk=nseeds) for k, v in g.get("env", {}).items()}
      jobs.append({"id": f"{g['name']}:{i:03d}", "group": g["name"], **tags, "seeds": nseeds, "seed": seed,
                   "cost": g.get("cost", 1), "kind": kind, "args": args, "env": env})
  return jobs


def shard(jobs: list[dict], i: int, k: int) -> list[dict]:
  """Shard i of k (1-based): jobs dealt longest first to the least loaded shard (ties: the lower
  shard, then list order), so shards take about the same time; list order kept inside a shard."""
  if not 1 <= i <= k: raise ValueError(f"shard {i}/{k}: need 1 <= i <= k")
  load, owner = [0.0] * k, {}
  for n, j in sorted(enumerate(jobs), key=lambda nj: (-nj[1]["cost"], nj[0])):
    s = min(range(k), key=lambda s: (load[s], s))
    load[s] += j["cost"]; owner[n] = s
  return [j for n, j in enumerate(jobs) if owner[n] == i - 1]


def command(job: dict, python: str | None = None, out: str = "build/regress") -> list[str]:
  """The argv of a job."""
  py = python or sys.executable
  if job["kind"] == "cmd": return [_fill(a, python=py, out=out) for a in job["args"]]
  return [py, *PYTEST, *job["args"]]


def reproduce(job: dict, nodes: list[str] | None = None) -> str:
  """A shell command (run from the repository root) that reruns a job, or only its failed `nodes`."""
  env = " ".join(f"{k}={shlex.quote(v)}" for k, v in job["env"].items())
  if job["kind"] == "cmd":
    argv = [_fill(a, python=".venv/bin/python", out="build/regress") for a in job["args"]]
  else:
    args = job["args"]
    if nodes: args = (args[:2] if args and args[0] == "-m" else []) + nodes
    argv = [".venv/bin/pytest", "-p", "no:cacheprovider", "-n", "0", *args]
  return (env + " " if env else "") + " ".join(shlex.quote(a) for a in argv)


def job_env(job: dict, out: str) -> dict:
  env = dict(os.environ)
  env.update({k: _fill(v, out=out) for k, v in job["env"].items()})
  env.setdefault("PYTHONUNBUFFERED", "1")
  return env
