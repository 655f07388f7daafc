"""The regression report: results.json (everything, the source of the rest), summary.md, junit.xml,
and one row of results.tsv. Functional coverage merges the kit's coverage documents (each job's
<out>/coverage/<job>/*.json) per unit (bins summed over every test, seed and configuration), each
unit held to the goal on its own (no pooling) and a unit the list expects without a document
failing; benchmarks compare with the previous report. `merge` joins shard reports into one."""
from __future__ import annotations

import json
import pathlib
import subprocess
import time
import xml.etree.ElementTree as ET

from tinytpu.regress.plan import ROOT

BENCH_TOLERANCE = 0.10  # a kernel taking more than 10% more cycles than in the previous report fails
CODE_COVERAGE_NOTE = ("Verilator line/toggle coverage: none in this run. It comes from the jobs that build the unit "
                      "environments with TINYTPU_BUILD_ARGS=--coverage (group `rtl-codecov` of the nightly list); see doc/regress.md.")


# ---- functional coverage
def add_coverage(acc: dict, doc: dict) -> dict:
  """Add one coverage document ({unit, config, groups: {name: {goal, hits, illegal}}}) into `acc`
  ({unit: {group: {goal, hits, illegal, configs}}}); bins are the union, hits are summed."""
  unit = acc.setdefault(doc["unit"], {})
  for name, g in doc["groups"].items():
    m = unit.setdefault(name, {"goal": g.get("goal", 1), "hits": {}, "illegal": {}, "configs": []})
    for kind in ("hits", "illegal"):
      for b, n in g.get(kind, {}).items(): m[kind][b] = m[kind].get(b, 0) + n
    for c in g.get("configs", [doc.get("config", "-")]):
      if c not in m["configs"]: m["configs"].append(c)
  return acc


def merge_coverage(covs: list[dict]) -> dict:
  """Merge already merged coverages (shards) into one."""
  acc: dict = {}
  for cov in covs:
    for unit, groups in cov.items(): add_coverage(acc, {"unit": unit, "config": "-", "groups": groups})
  return acc


def coverage_totals(groups: dict) -> tuple[int, int]:
  """(bins hit at least `goal` times, bins) over the groups of a unit (or of a dict of units, via coverage_pct)."""
  hit = sum(sum(n >= g["goal"] for n in g["hits"].values()) for g in groups.values())
  return hit, sum(len(g["hits"]) for g in groups.values())


def unit_pcts(cov: dict) -> dict[str, float]:
  """% of bins hit per unit: each unit on its own, never pooled."""
  return {u: 100.0 * h / t for u in sorted(cov) for h, t in [coverage_totals(cov[u])] if t}


def coverage_pct(cov: dict) -> float | None:
  """The lowest unit's % (what the goal holds every unit to), None without coverage."""
  p = unit_pcts(cov)
  return min(p.values()) if p else None


def coverage_problems(res: dict) -> list[str]:
  """Units below the goal, and units the list expects (`coverage_units`) of which no job wrote a document."""
  goal, cov, why = res.get("coverage_goal"), res.get("coverage", {}), []
  # an illegal bin is an event the coverage model says cannot happen: the design or the model is wrong, in any slice
  illegal = [f"{u}.{g} {b}={n}" for u, groups in cov.items() for g, d in groups.items() for b, n in d.get("illegal", {}).items()]
  if illegal: why.append("illegal coverage bins hit: " + ", ".join(illegal))
  if res.get("shard") or res.get("only"): return why  # a slice of the list: its merge / the whole list is held to them
  missing = [u for u in res.get("coverage_units") or [] if u not in cov]
  if missing: why.append(f"no coverage document from unit{'s' * (len(missing) > 1)} {', '.join(missing)}")
  if goal:
    low = {u: p for u, p in unit_pcts(cov).items() if p < goal}
    if not cov: why.append(f"no functional coverage collected (goal {goal}%)")
    elif low: why.append(f"functional coverage below the goal {goal}%: " + ", ".join(f"{u} {p:.1f}%" for u, p in low.items()))
  return why


# ---- mutation (tinytpu/mutate.py: the nightly's jobs write one document per RTL file)
def mutation_summary(mutants: list[dict]) -> dict:
  """Per file and in all, as tinytpu.mutate.summary: killed, survived (`equivalent`: a listed
  equivalent), stillborn; the score over the non-equivalent mutants."""
  per: dict = {}
  for m in mutants:
    s = per.setdefault(m["file"], {"killed": 0, "survived": 0, "equivalent": 0, "stillborn": 0})
    s[m["status"]] = s.get(m["status"], 0) + 1
    s["equivalent"] += m["status"] == "survived" and m.get("equivalent") is not None
  k, surv, eq = (sum(s[x] for s in per.values()) for x in ("killed", "survived", "equivalent"))
  return {"per_file": per, "killed": k, "survived": surv, "equivalent": eq, "score": k / (k + surv - eq) if k + surv - eq else None}


def mutation_problems(res: dict) -> list[str]:
  """The list's `mutation_goal` (% of non-equivalent mutants killed) missed, or an RTL file the
  mutation runner knows that no job reported (nothing measured is not a pass)."""
  goal = res.get("mutation_goal")
  if not goal or res.get("shard") or res.get("only"): return []
  ms = res.get("mutants") or []
  s, why = mutation_summary(ms), []
  known = {f for m in ms for f in m.get("files", [])}  # every document names the files the runner knows
  if not ms: why.append("mutation: no mutants reported (the list sets mutation_goal)")
  elif missing := sorted(known - set(s["per_file"])):
    why.append(f"mutation: no result for {', '.join(missing)}")
  if s["score"] is not None and 100 * s["score"] < goal:
    why.append(f"mutation score {100 * s['score']:.1f}% < goal {goal}% ({s['killed']}/{s['killed'] + s['survived'] - s['equivalent']} non-equivalent mutants killed)")
  return why


def mutation_md(res: dict) -> list[str]:
  ms = res.get("mutants") or []
  if not ms: return ["No mutants in this run (the nightly's `mutation` group, doc/mutation.md)."]
  s = mutation_summary(ms)
  stillborn = sum(x["stillborn"] for x in s["per_file"].values())
  if s["score"] is None: head = f"{len(ms)} mutants, none built"
  else:
    scored = s["killed"] + s["survived"] - s["equivalent"]
    head = (f"{len(ms)} mutants: score **{100 * s['score']:.1f}%** ({s['killed']} of {scored} non-equivalent killed; "
            f"{s['equivalent']} equivalent survivors, {stillborn} stillborn)")
  L = [head, "", "| file | killed | survived (equivalent) | stillborn |", "|---|---:|---:|---:|"]
  for f, c in sorted(s["per_file"].items()):
    L.append(f"| {f} | {c['killed']} | {c['survived']} ({c['equivalent']}) | {c['stillborn']} |")
  surv = [m for m in ms if m["status"] == "survived"]
  if surv:
    L += ["", "Survivors:", ""] + [f"- `{m['file']}:{m['line']}` `{m['before']}` -> `{m['after']}`: " + (m.get("equivalent") or "**not equivalent: a hole**") for m in surv]
  return L


# ---- benchmarks
def bench_changes(cur: dict | None, prev: dict | None) -> list[dict]:
  """Per kernel: cycles now and in the previous report, relative change, and whether it regressed."""
  if not cur: return []
  old = {k["name"]: k.get("cycles") for k in (prev or {}).get("kernels", [])}
  rows = []
  for k in cur.get("kernels", []):
    c, p = k.get("cycles"), old.get(k["name"])
    ch = (c - p) / p if c is not None and p else None
    rows.append({"name": k["name"], "cycles": c, "prev": p, "change": ch, "error": k.get("error"),
                 "regressed": ch is not None and ch > BENCH_TOLERANCE})
  return rows


# ---- the verdict
def verdict(res: dict) -> list[str]:
  """Why the run fails (empty: it passes)."""
  why = []
  bad = [j for j in res["jobs"] if j["status"] != "pass"]
  other = {s: sum(j["status"] == s for j in bad) for s in ("lost", "cancelled", "missing")}
  if bad: why.append(f"{len(bad)} of {len(res['jobs'])} jobs failed" + "".join(f" ({n} {s})" for s, n in other.items() if n))
  why += coverage_problems(res)
  if not res.get("shard") and not res.get("only"):  # a slice holds part of the points: its merge / the whole list is judged
    why += res.get("code_coverage_problems") or []
  why += mutation_problems(res)
  reg = [r["name"] for r in bench_changes(res.get("bench"), res.get("bench_prev")) if r["regressed"]]
  if reg: why.append(f"benchmarks more than {BENCH_TOLERANCE:.0%} slower in cycles: {', '.join(reg)}")
  return why


# ---- pytest's JUnit XML of one job
def node_id(classname: str, name: str, root: pathlib.Path = ROOT) -> str:
  """pytest node id from JUnit's classname ("tests.rtl.test_mxu[.Class]") and test name."""
  parts = classname.split(".")
  for i in range(len(parts), 0, -1):
    if (root / ("/".join(parts[:i]) + ".py")).exists():
      return "::".join(["/".join(parts[:i]) + ".py", *parts[i:], name])
  return f"{classname}::{name}"


def read_junit(path: pathlib.Path, root: pathlib.Path = ROOT) -> list[dict]:
  if not path.exists(): return []
  cases = []
  for tc in ET.parse(path).getroot().iter("testcase"):
    status, msg = "pass", ""
    for kind in ("failure", "error", "skipped"):
      if (e := tc.find(kind)) is not None:
        status = "skip" if kind == "skipped" else "fail"
        # the message first (the summary shows its first line), then as much of the traceback's end as fits
        head = (e.get("message") or "").strip()[:1000]
        msg = (head + "\n" + (e.text or "")[-(4000 - len(head)):]).strip()
        break
    cases.append({"node": node_id(tc.get("classname", ""), tc.get("name", "?"), root), "time": float(tc.get("time") or 0),
                  "status": status, "message": msg})
  return cases


# ---- writing
def _fmt_s(s: float) -> str:
  s = int(s); return f"{s // 3600}h{s // 60 % 60:02d}m" if s >= 3600 else f"{s // 60}m{s % 60:02d}s"


def summary_md(res: dict) -> str:
  why = verdict(res)
  jobs = res["jobs"]
  cases = [c for j in jobs for c in j["cases"]]
  count = lambda st: sum(c["status"] == st for c in cases)
  title = f"# Regression `{res['list']}`" + (f" shard {res['shard']}" if res.get("shard") else "") + (f" (only {', '.join(res['only'])})" if res.get("only") else "")
  if res.get("partial"): title += f" (in progress: {len(jobs)} of {res['partial']} jobs done)"
  seed = f" · night seed {res['seed']} ({res.get('seed_from')})" if res.get("seed") is not None else ""
  L = [title, "", f"{res['started']} · commit `{res['commit']}` · wall {_fmt_s(res['seconds'])} · -j {res.get('j', '?')} · "
       f"runner: {res.get('runner') or 'local'}{seed}", "",
       f"**{'FAIL' if why else 'PASS'}**" + (": " + "; ".join(why) if why else ""), "",
       f"jobs: {sum(j['status'] == 'pass' for j in jobs)}/{len(jobs)} passed · tests: {count('pass')} passed, "
       f"{count('fail')} failed, {count('skip')} skipped", ""]
  fails = [j for j in jobs if j["status"] != "pass"]
  if fails:
    L += ["## Failures", ""]
    for j in fails:
      how = {"lost": "LOST (its worker died or went away)", "cancelled": "cancelled", "missing": "missing (no shard reported it)"}.get(j["status"], f"exit {j['rc']}")
      L += [f"### {j['id']} ({j['unit']}, {j['layer']}, {j['config']})", "",
            f"{how} after {j['seconds']:.0f} s" + (f" on {j['host']}" if j.get("host") else "") + f"; log `{j['log']}`", ""]
      for c in [c for c in j["cases"] if c["status"] == "fail"][:10]:
        L += [f"- `{c['node']}`: " + (c["message"].splitlines() or ["?"])[0][:300]]
      L += ["", "reproduce:", "", "```sh", j["reproduce"], "```", ""]
      if j.get("waves"): L += ["with waves:", "", "```sh", j["waves"], "```", ""]
  L += ["## Jobs", "", "| job | unit | layer | config | seeds | result | tests (pass/fail/skip) | seconds | host |", "|---|---|---|---|---|---|---|---|---|"]
  for j in jobs:
    n = lambda st: sum(c["status"] == st for c in j["cases"])
    seeds = f"{j['seeds']} from {j['seed']}" if j.get("seeded") else str(j["seeds"])
    L.append(f"| {j['id']} | {j['unit']} | {j['layer']} | {j['config']} | {seeds} | {j['status'].upper()} | "
             f"{n('pass')}/{n('fail')}/{n('skip')} | {j['seconds']:.0f} | {j.get('host') or '-'} |")
  L += seeds_md(res)
  L += ["", "## Functional coverage", ""]
  cov, goal, want = res.get("coverage", {}), res.get("coverage_goal"), res.get("coverage_units") or []
  L.append(f"Per unit, never pooled: merged over {res.get('coverage_files', 0)} coverage documents"
           + (f"; every unit is held to the goal of {goal}% of bins" if goal else "")
           + (" (a shard: the goal applies to the merged report)" if res.get("shard") and goal else "")
           + (f" (only the jobs matching {', '.join(res['only'])}: the goal and the expected units apply to the whole list)" if res.get("only") else "")
           + (f"; the list expects documents from {', '.join(want)}" if want else "") + ".")
  L += ["", "| unit | bins hit | % | jobs with documents | configurations |", "|---|---|---|---|---|"]
  for unit in sorted(set(cov) | set(want)):
    if unit not in cov:
      L.append(f"| {unit} | - | **no document** | 0 | - |"); continue
    h, t = coverage_totals(cov[unit])
    cfgs = sorted({c for g in cov[unit].values() for c in g["configs"]})
    nj = sum(unit in j.get("coverage_units", []) for j in jobs)
    low = " **below the goal**" if goal and 100.0 * h / max(1, t) < goal else ""
    L.append(f"| {unit} | {h}/{t} | {100.0 * h / max(1, t):.1f}{low} | {nj} | {', '.join(cfgs)} |")
  for unit in sorted(cov):
    L += ["", f"<details><summary>{unit}: per-bin hits</summary>", ""]
    for name, g in cov[unit].items():
      h, t = coverage_totals({name: g})
      miss = [b for b, n in g["hits"].items() if n < g["goal"]]
      L.append(f"- **{name}** {h}/{t}" + (f", missing: {', '.join(miss)}" if miss else "")
               + (f", illegal: {', '.join(f'{b}={n}' for b, n in g['illegal'].items())}" if g["illegal"] else ""))
      L.append("  " + " ".join(f"`{b}`={n}" for b, n in g["hits"].items()))
    L += ["", "</details>"]
  L += ["", "## Code coverage", "", res.get("code_coverage") or CODE_COVERAGE_NOTE, "", "## Mutation", ""] + mutation_md(res) + ["", "## Benchmarks", ""]
  rows = bench_changes(res.get("bench"), res.get("bench_prev"))
  if not rows: L.append("not run in this list" if not res.get("bench") else "no kernels")
  else:
    b = res["bench"]
    L.append(f"previous report: {res.get('bench_prev_from') or 'none'}")
    L += ["", "| kernel | cycles | previous | change |", "|---|---|---|---|"]
    for r in rows:
      ch = f"{r['change']:+.1%}" + (" **regressed**" if r["regressed"] else "") if r["change"] is not None else "-"
      L.append(f"| {r['name']} | {r['cycles'] if r['cycles'] is not None else 'ERROR ' + str(r['error'])} | {r['prev'] or '-'} | {ch} |")
    g = lambda k, f: format(b[k], f) if b.get(k) is not None else "-"
    L += ["", f"geomean elems/cycle (first 11): {g('geomean_11', '.3f')} · exec geomean (6): {g('geomean_6_exec', '.3f')} · "
          f"co-sim {g('sim_cycles_per_s', ',.0f')} cycles/s · kernel overhead {g('kernel_overhead_ms', '.1f')} ms · "
          f"golden {g('golden_instr_per_s', ',.0f')} instr/s"]
  return "\n".join(L) + "\n"


def seeds_md(res: dict) -> list[str]:
  """The night's seed and, per group that takes seeds, the seeds its jobs ran."""
  if res.get("seed") is None: return []
  L = ["", "## Seeds", "", f"Night seed **{res['seed']}** ({res.get('seed_from')}). "
       + (f"The list reseeds every night: each group's seeds are its `seed_base` + {res.get('seed_offset', 0):,}; "
          f"`SEED={res['seed']}` reruns exactly these seeds." if res.get("reseed") else "The list does not reseed: its seeds are fixed.")]
  groups: dict = {}
  for j in res["jobs"]:
    if j.get("seeded"): groups.setdefault(j["group"], []).append(j)
  if groups:
    L += ["", "| group | jobs | seeds |", "|---|---|---|"]
    for g, js in groups.items():
      lo, hi = min(j["seed"] for j in js), max(j["seed"] + max(1, j["seeds"]) - 1 for j in js)
      L.append(f"| {g} | {len(js)} | {lo} .. {hi} |")
  return L


def junit_xml(res: dict) -> str:
  root = ET.Element("testsuites", name=f"tinytpu-regress-{res['list']}")
  for j in res["jobs"]:
    cs = j["cases"]
    ts = ET.SubElement(root, "testsuite", name=j["id"], tests=str(len(cs)), time=f"{j['seconds']:.2f}",
                       failures=str(sum(c["status"] == "fail" for c in cs)), skipped=str(sum(c["status"] == "skip" for c in cs)))
    props = ET.SubElement(ts, "properties")
    for k in ("unit", "layer", "config", "seeds", "seed", "host", "reproduce"):
      if j.get(k) is not None: ET.SubElement(props, "property", name=k, value=str(j[k]))
    for c in cs:
      path, _, name = c["node"].rpartition("::")
      tc = ET.SubElement(ts, "testcase", classname=path or j["id"], name=name or c["node"], time=f"{c['time']:.3f}")
      if c["status"] == "fail":
        e = ET.SubElement(tc, "failure", message=(c["message"].splitlines() or [""])[0][:500]); e.text = c["message"]
      elif c["status"] == "skip": ET.SubElement(tc, "skipped", message=c["message"][:500])
  ET.indent(root)
  return ET.tostring(root, encoding="unicode", xml_declaration=True) + "\n"


TSV_HEADER = "date\tcommit\titerations\tscope\tsupported_delta\ttests_passed\ttodo_delta\tremaining_gap\tsim_build_s"


def tsv_row(res: dict) -> str:
  why = verdict(res)
  jobs, cases = res["jobs"], [c for j in res["jobs"] for c in j["cases"]]
  pcts = unit_pcts(res.get("coverage", {}))
  low = min(pcts, key=pcts.get) if pcts else None
  passed = (f"make regress LIST={res['list']}: {sum(j['status'] == 'pass' for j in jobs)}/{len(jobs)} jobs, "
            f"{sum(c['status'] == 'pass' for c in cases)}/{sum(c['status'] != 'skip' for c in cases)} tests"
            + (f", coverage per unit >= {pcts[low]:.1f}% (lowest {low})" if low else "")
            + (f", seed {res['seed']}" if res.get("seed") is not None else "") + f", {_fmt_s(res['seconds'])}")
  sb = ROOT / "build" / "N4_V1024_P64_I4096" / "sim" / "build_seconds"  # the default co-sim build at N = 4
  fields = [res["started"][:10], res["commit"], "1", f"regress {res['list']}", "none", passed, "0",
            "; ".join(why) or "none", sb.read_text().strip() if sb.exists() else "-"]
  return "\t".join(f.replace("\t", " ").replace("\n", " ") for f in fields)


def append_tsv(path: pathlib.Path, res: dict) -> None:
  if not path.exists() or not path.read_text().strip(): path.write_text(TSV_HEADER + "\n")
  text = path.read_text()
  with path.open("a") as f: f.write(("" if text.endswith("\n") else "\n") + tsv_row(res) + "\n")


def write(out: pathlib.Path, res: dict) -> list[str]:
  """Write results.json, summary.md and junit.xml into `out`; returns the verdict."""
  out.mkdir(parents=True, exist_ok=True)
  (out / "results.json").write_text(json.dumps(res, indent=1))
  (out / "summary.md").write_text(summary_md(res))
  (out / "junit.xml").write_text(junit_xml(res))
  return verdict(res)


def previous_bench(out: pathlib.Path) -> tuple[dict | None, str | None]:
  """The benchmark figures of the newest earlier report next to `out` (report names sort by date)."""
  if not out.parent.exists(): return None, None
  for d in sorted((p for p in out.parent.iterdir() if p.is_dir() and p.name < out.name), reverse=True):
    try: b = json.loads((d / "results.json").read_text()).get("bench")
    except (OSError, ValueError): continue
    if b: return b, d.name
  return None, None


UNFINISHED = ("cancelled", "lost")


def merge(dirs: list[pathlib.Path], out: pathlib.Path) -> dict:
  """One report from shard reports: jobs concatenated (in list order), coverage merged, the
  benchmark figures of whichever shard ran them, wall time = the slowest shard."""
  parts = [json.loads((d / "results.json").read_text()) for d in dirs]
  if len({p["list"] for p in parts}) != 1: raise ValueError(f"shards of different lists: {sorted({p['list'] for p in parts})}")
  if len({p["commit"] for p in parts}) != 1:  # figures "at one commit" must be one commit's
    raise ValueError("shards of different commits: " + ", ".join(f"{d} at {p['commit']}" for d, p in zip(dirs, parts)))
  order = {jid: n for n, jid in enumerate(parts[0].get("all_jobs") or [])}
  # a job one run did not finish (interrupted: cancelled; its worker lost) and another finished (a
  # preempted node's jobs rerun elsewhere with --only): the finished run counts
  finished = {j["id"] for p in parts for j in p["jobs"] if j["status"] not in UNFINISHED}
  # a job no run finished and two left (cancelled in a shard, then lost in a rerun): the last part's
  last = {j["id"]: j for p in parts for j in p["jobs"] if j["status"] in UNFINISHED}
  jobs = [j for p in parts for j in p["jobs"] if j["status"] not in UNFINISHED or (j["id"] not in finished and last[j["id"]] is j)]
  jobs.sort(key=lambda j: (order.get(j["id"], len(order)), j["id"]))
  if len({j["id"] for j in jobs}) != len(jobs): raise ValueError("a job appears in two shards")
  missing = [jid for jid in order if jid not in {j["id"] for j in jobs}]
  bench = next((p for p in parts if p.get("bench")), {})
  res = {"list": parts[0]["list"], "shard": None, "started": min(p["started"] for p in parts), "commit": parts[0]["commit"],
         "seconds": max(p["seconds"] for p in parts), "j": parts[0].get("j"), "jobs": jobs,
         "all_jobs": parts[0].get("all_jobs"), "coverage": merge_coverage([p.get("coverage", {}) for p in parts]),
         "coverage_files": sum(p.get("coverage_files", 0) for p in parts), "coverage_goal": parts[0].get("coverage_goal"),
         "bench": bench.get("bench"), "bench_prev": bench.get("bench_prev"), "bench_prev_from": bench.get("bench_prev_from"),
         "merged_from": [str(d) for d in dirs], "coverage_units": parts[0].get("coverage_units"),
         "mutants": [m for p in parts for m in p.get("mutants") or []], "mutation_goal": parts[0].get("mutation_goal"),
         "runner": ", ".join(sorted({p.get("runner") or "local" for p in parts}))}
  for k in ("seed", "seed_from", "seed_offset", "reseed"): res[k] = parts[0].get(k)
  if len({p.get("seed") for p in parts}) > 1:  # shards that reseeded on different dates: say so, keep every seed
    res["seed_from"] = f"shards ran different seeds: {sorted({p.get('seed') for p in parts}, key=str)} (give every shard the same SEED=)"
  from tinytpu.regress import codecov
  # a part's merged coverage: coverage.dat, or coverage.dat.gz in a committed record (--record)
  dats = [f for d in dirs if (f := next((g for g in (d / "coverage.dat", d / "coverage.dat.gz") if g.exists()), None))]
  floor = parts[0].get("code_coverage_floor")
  if (points := codecov.merge(dats)):
    out.mkdir(parents=True, exist_ok=True)
    codecov.write_dat(points, out / "coverage.dat")
  if points or floor:
    mods = codecov.by_module(points) if points else {}
    res["code_coverage"] = codecov.markdown(codecov.summary(points), len(dats), mods, floor) if points else None
    res["code_coverage_problems"] = codecov.floor_problems(mods, floor, codecov.rtl_modules(ROOT)) if floor else []
  res["code_coverage_floor"] = floor
  for jid in missing:  # a shard that never reported: its jobs count as failed
    res["jobs"].append({"id": jid, "group": jid.split(":")[0], "unit": "?", "layer": "?", "config": "?", "seeds": 0, "status": "missing",
                        "rc": None, "seconds": 0.0, "cases": [], "log": "-", "reproduce": f"python -m tinytpu.regress --list {res['list']} (job {jid})"})
  write(out, res)
  return res


def git_commit() -> str:
  r = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True)
  return r.stdout.strip() or "unknown"


def now() -> str: return time.strftime("%Y-%m-%dT%H:%M:%S")
