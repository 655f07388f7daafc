"""Regression lists (regress/lists/<name>.toml) expanded into jobs, and deterministic shards.

A list is a TOML file of [[group]] tables (format in doc/regress.md). A group expands into jobs:
  pytest groups: one job, one per file (split = "file"), one per collected node (split = "node"),
  or k jobs of interleaved nodes (split = k);
  cmd groups: one job, or ceil(seeds / chunk) jobs each running `chunk` seeds from its `{seed}`.
The expansion depends only on the list, the collected test ids and the night's seed, so every
machine of a farm computes the same jobs and `shard(jobs, i, k)` picks the same slice (job ids do
not depend on the seed). A list with `reseed = true` (the nightly) moves every group's seeds by
`seed_offset(night)`: the night's seed is SEED= if given, else the date (YYYYMMDD)."""
from __future__ import annotations

import datetime
import os
import pathlib
import shlex
import subprocess
import sys
import tomllib

ROOT = pathlib.Path(__file__).resolve().parent.parent
LISTS = pathlib.Path(__file__).resolve().parent / "lists"
LAYERS = ("unit", "core", "cosim", "backend", "golden", "random", "bench")
KEYS = {"name", "unit", "layer", "config", "pytest", "cmd", "mark", "split", "env", "cost", "costs", "seeds", "chunk", "seed_base"}
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
    costs = {"cost": g.get("cost", 1), **g.get("costs", {})}
    if bad := [k for k, v in costs.items() if isinstance(v, bool) or not isinstance(v, (int, float)) or v <= 0]:
      raise ValueError(f"{where}: cost must be a positive number of minutes: {bad}")
  return lst


def night_seed(seed: int | str | None = None, today: datetime.date | None = None) -> tuple[int, str]:
  """(the night's seed, where it came from): `seed` (SEED=) if given, else the date as YYYYMMDD."""
  if seed not in (None, ""): return int(seed), "SEED"
  d = today or datetime.date.today()
  return int(d.strftime("%Y%m%d")), f"the date {d.isoformat()}"


def seed_offset(night: int) -> int:
  """What a reseeded list adds to every seed: (the night's day number mod 2000) * 10**6, the day
  number being the date's ordinal when `night` reads as YYYYMMDD, else `night` itself. So 2000
  nights in a row run disjoint seeds (no group spans 10**6 seeds), every seed stays below 2**31
  (Verilator's +verilator+seed+ is an int), and SEED=0 runs the list's own seed_base seeds."""
  try: day = datetime.datetime.strptime(str(night), "%Y%m%d").date().toordinal()
  except ValueError: day = night
  return day % 2000 * 10**6


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


def expand(lst: dict, collect=collect, night: int | None = None) -> list[dict]:
  """Every job of the list, in list order. A job: id, group, unit, layer, config, seeds, seed (the
  first), seeded (whether it uses {seed}), cost, kind (pytest|cmd), args (pytest arguments or the
  command), env (with {seed} placeholders filled; {python} and {out} are filled at run time).
  `night`: the night's seed; a list with `reseed = true` moves its seeds by seed_offset(night)."""
  jobs, off = [], seed_offset(night) if lst.get("reseed") and night is not None else 0
  for g in lst.get("group", []):
    base, chunk, seeds = g.get("seed_base", 1) + off, g.get("chunk"), g.get("seeds", 1)
    seeded = "{seed}" in g.get("cmd", "") or any("{seed}" in v for v in g.get("env", {}).values())
    # a reseeded list seeds every pytest job: the kit's environments (and the golden tests) take
    # TINYTPU_SEED, else they draw a random seed that no SEED= reproduces
    kit_seed = lst.get("reseed") and "cmd" not in g and "TINYTPU_SEED" not in g.get("env", {})
    seeded = seeded or bool(kit_seed)
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
      if kit_seed: env["TINYTPU_SEED"] = str(seed)
      if night is not None:  # tests that draw their own seed from the date (the fuzzer) take the night's
        env.setdefault("TINYTPU_NIGHT_SEED", str(night))
      jobs.append({"id": f"{g['name']}:{i:03d}", "group": g["name"], **tags, "seeds": nseeds, "seed": seed, "seeded": seeded,
                   "cost": job_cost(g, args), "kind": kind, "args": args, "env": env})
  return jobs


def job_cost(g: dict, args: list[str]) -> float:
  """A job's cost: the group's `cost`, or from its `costs` table ({text: minutes}) the entry whose
  text its arguments contain, the longest such text if several do (a group whose jobs differ a lot,
  as one mutation job per RTL file: 2 to 45 minutes)."""
  line = " ".join(args)
  hits = [k for k in g.get("costs", {}) if k in line]
  return g["costs"][max(hits, key=len)] if hits else g.get("cost", 1)


def unmatched_costs(lst: dict, jobs: list[dict]) -> list[str]:
  """`group: entry` for each `costs` entry that prices no job of its group (a misspelt or removed
  file would leave its job at the group's cost without a word); the runner refuses such a list."""
  args = {}
  for j in jobs: args.setdefault(j["group"], []).append(" ".join(j["args"]))
  return [f"{g['name']}: {k}" for g in lst.get("group", []) for k in g.get("costs", {})
          if not any(k in a for a in args.get(g["name"], []))]


def longest_first(jobs: list[dict]) -> list[dict]:
  """`jobs` by decreasing `cost`, list order among equals: the order they are started in (and dealt
  to shards), so the longest job does not start last and hold a one-slot run up after the rest."""
  return [j for _, j in sorted(enumerate(jobs), key=lambda nj: (-nj[1]["cost"], nj[0]))]


def shard(jobs: list[dict], i: int, k: int) -> list[dict]:
  """Shard i of k (1-based): jobs dealt longest first to the least loaded shard (ties: the lower
  shard, then list order), so shards take about the same time; list order kept inside a shard."""
  if not 1 <= i <= k: raise ValueError(f"shard {i}/{k}: need 1 <= i <= k")
  load, owner = [0.0] * k, {}
  for j in longest_first(jobs):
    s = min(range(k), key=lambda s: (load[s], s))
    load[s] += j["cost"]; owner[id(j)] = s
  return [j for j in jobs if owner[id(j)] == i - 1]


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


def job_env(job: dict, out: str, extra: dict | None = None) -> dict:
  """The environment of a job: this process's, then `extra` (what the submitting process forwards
  to a remote worker), then the job's own."""
  env = dict(os.environ)
  env.update(extra or {})
  env.update({k: _fill(v, out=out) for k, v in job["env"].items()})
  env.setdefault("PYTHONUNBUFFERED", "1")
  return env
