"""The regression runner (regress/, doc/regress.md): lists, deterministic shards, reports and their
merging on fake job results, the coverage and benchmark rules, and a golden op broken in a copy of
the repository making the runner fail with a reproduce command."""
import json
import pathlib
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET

import pytest

from tinytpu.regress import plan, report

ROOT = plan.ROOT


def fake_collect(paths, mark):  # stands in for pytest's collection: 7 nodes per path
  return [f"{p}::test_{i}" for p in paths for i in range(7)]


# ---- lists
@pytest.mark.parametrize("name", ["smoke", "nightly"])
def test_list_covers_every_test_file(name):
  lst = plan.load(name)
  files = {str(f.relative_to(ROOT)) for f in (ROOT / "tests").rglob("test_*.py")}
  listed = {p.split("::")[0] for g in lst["group"] if "pytest" in g for p in plan._files(g["pytest"])}
  assert files - listed == set(), f"{name} leaves out {sorted(files - listed)}"
  assert all(g["layer"] in plan.LAYERS for g in lst["group"])


def test_nightly_has_every_ingredient():
  g = {x["name"]: x for x in plan.load("nightly")["group"]}
  assert plan.load("nightly")["coverage_goal"] == 95
  assert {x["layer"] for x in g.values()} == set(plan.LAYERS)
  assert "mark" not in g["cosim"] and g["rtl-wide"]["mark"] == "nightly"          # N = 8 / 16 builds
  assert sum(x.get("seeds", 0) for x in g.values() if x["layer"] == "random") >= 500
  assert any("N=8" in x.get("cmd", "") for x in g.values())
  assert "+verilator+rand+reset+2" in g["rtl-xrand"]["env"]["SIM_CMD_SUFFIX"]
  assert g["backend"]["env"]["TINYTPU_TEST_SIM"] == "both"
  # one mutation job per RTL file (tests/test_mutate.py::test_mutants_of), their score held to the goal
  assert g["mutation-files"]["split"] == "node" and plan.load("nightly")["mutation_goal"] == 95
  # the smoke list selects what `make test` runs: the N = 4 tier only
  smoke = plan.load("smoke")["group"]
  assert all(x.get("mark") == "not nightly" for x in smoke), [x["name"] for x in smoke if x.get("mark") != "not nightly"]


def write(tmp_path, text):
  p = tmp_path / "l.toml"; p.write_text(text); return p


@pytest.mark.parametrize("text", [
  '[[group]]\nname="a"\nlayer="unit"\npytest=["x"]\ncmd="y"\n',         # both kinds
  '[[group]]\nname="a"\nlayer="unit"\npytest=["x"]\nsplitt="file"\n',   # a misspelt key
  '[[group]]\nname="a"\nlayer="gate"\npytest=["x"]\n',                  # unknown layer
  '[[group]]\nname="a"\nlayer="unit"\npytest=["x"]\n[[group]]\nname="a"\nlayer="unit"\npytest=["y"]\n',  # repeated name
  '[[group]]\nname="a"\nlayer="unit"\npytest=["x"]\nsplit=0\n',
  '[[group]]\nname="a"\nlayer="unit"\npytest=["x"]\ncost=0\n',                      # a cost that is no time
  '[[group]]\nname="a"\nlayer="unit"\npytest=["x"]\ncosts={ "[x]" = "45" }\n'])    # a price as text
def test_bad_lists_are_rejected(tmp_path, text):
  with pytest.raises(ValueError): plan.load(str(write(tmp_path, text)))


def test_expand_seed_chunks_and_splits(tmp_path):
  lst = plan.load(str(write(tmp_path, """
[[group]]
name = "r"
layer = "random"
cmd = "{python} -m x --seed {seed} --seeds {chunk}"
seeds = 25
chunk = 10
seed_base = 100
env = { S = "s{seed}" }
[[group]]
name = "n"
layer = "unit"
pytest = ["tests/a.py", "tests/b.py"]
split = 3
mark = "not nightly"
""")))
  jobs = plan.expand(lst, collect=fake_collect)
  r = [j for j in jobs if j["group"] == "r"]
  assert [(j["seed"], j["seeds"]) for j in r] == [(100, 10), (110, 10), (120, 5)]
  assert r[2]["args"][-4:] == ["--seed", "120", "--seeds", "5"] and r[2]["env"] == {"S": "s120"}
  n = [j for j in jobs if j["group"] == "n"]
  assert len(n) == 3 and all(j["args"][:2] == ["-m", "not nightly"] for j in n)
  assert sorted(a for j in n for a in j["args"][2:]) == sorted(fake_collect(["tests/a.py", "tests/b.py"], None))
  assert plan.reproduce(n[0], ["tests/a.py::test_3"]) == ".venv/bin/pytest -p no:cacheprovider -n 0 -m 'not nightly' tests/a.py::test_3"
  assert [j["id"] for j in jobs] == [j["id"] for j in plan.expand(lst, collect=fake_collect)]


@pytest.mark.parametrize("k", [1, 2, 3, 5, 8])
def test_shards_partition_the_list(k):
  jobs = plan.expand(plan.load("nightly"), collect=fake_collect)
  shards = [plan.shard(jobs, i, k) for i in range(1, k + 1)]
  ids = [j["id"] for s in shards for j in s]
  assert sorted(ids) == sorted(j["id"] for j in jobs) and len(ids) == len(set(ids))
  assert shards == [plan.shard(jobs, i, k) for i in range(1, k + 1)]                     # deterministic
  loads = [sum(j["cost"] for j in s) for s in shards]
  assert max(loads) - min(loads) <= max(j["cost"] for j in jobs)                       # balanced
  for s in shards: assert s == sorted(s, key=jobs.index)                                # list order kept
  with pytest.raises(ValueError): plan.shard(jobs, k + 1, k)


# ---- reports on fake results
def cov_doc(unit, config, hits, goal=1):
  return {"unit": unit, "config": config, "groups": {"g": {"goal": goal, "hits": hits, "illegal": {}}}}


def fake_job(jid, ok=True, cases=None, **kw):
  cases = cases or [{"node": f"tests/golden/test_intops.py::test_{jid}", "time": 0.1, "status": "pass" if ok else "fail",
                     "message": "" if ok else "AssertionError: lane 3 differs (seed 77)"}]
  job = {"id": jid, "group": jid.split(":")[0], "unit": "u", "layer": "golden", "config": "-", "seeds": 1, "seed": 1, "cost": 1,
         "kind": "pytest", "args": ["tests/golden/test_intops.py"], "env": {}}
  return {**job, "status": "pass" if ok else "fail", "rc": 0 if ok else 1, "seconds": 1.0, "cases": cases, "log": "x.log",
          "reproduce": plan.reproduce(job, [c["node"] for c in cases if c["status"] == "fail"] or None), **kw}


def fake_res(jobs, cov=None, shard=None, goal=None, bench=None, prev=None):
  return {"list": "fake", "shard": shard, "started": "2025-01-02T03:04:05", "commit": "abc1234", "seconds": 61.0, "j": 2,
          "jobs": jobs, "all_jobs": ["a:000", "a:001", "b:000"], "coverage": cov or {}, "coverage_files": 2, "coverage_goal": goal,
          "bench": bench, "bench_prev": prev, "bench_prev_from": "old" if prev else None}


def test_coverage_merge_sums_bins_across_tests_and_configs():
  acc = report.add_coverage({}, cov_doc("vpu", "N4", {"a": 1, "b": 0}))
  report.add_coverage(acc, cov_doc("vpu", "N8", {"b": 2, "c": 0}))
  assert acc["vpu"]["g"]["hits"] == {"a": 1, "b": 2, "c": 0} and acc["vpu"]["g"]["configs"] == ["N4", "N8"]
  assert report.coverage_totals(acc["vpu"]) == (2, 3)
  two = report.merge_coverage([acc, report.add_coverage({}, cov_doc("vpu", "N4", {"c": 5}))])
  assert two["vpu"]["g"]["hits"] == {"a": 1, "b": 2, "c": 5} and report.coverage_pct(two) == 100.0
  assert report.coverage_totals(report.add_coverage({}, cov_doc("x", "N4", {"a": 1, "b": 2}, goal=2))["x"]) == (1, 2)


@pytest.mark.parametrize("hit,shard,fails", [(19, None, False), (18, None, True), (18, "1/2", False)])
def test_coverage_goal_rule(hit, shard, fails):
  cov = report.add_coverage({}, cov_doc("u", "N4", {f"b{i}": int(i < hit) for i in range(20)}))
  why = report.verdict(fake_res([fake_job("a:000")], cov, shard=shard, goal=95))
  assert bool(why) == fails, why
  assert report.verdict(fake_res([fake_job("a:000")], {}, goal=95)) == ["no functional coverage collected (goal 95%)"]


@pytest.mark.parametrize("now,fails", [(110, False), (111, True), (50, False), (None, False)])
def test_benchmark_rule(now, fails):
  b = lambda c: {"kernels": [{"name": "gemm", "cycles": c}, {"name": "add", "cycles": 7}]}
  why = report.verdict(fake_res([fake_job("a:000")], bench=b(now), prev=b(100)))
  assert bool(why) == fails, why
  assert report.verdict(fake_res([fake_job("a:000")], bench=b(1000), prev=None)) == []  # nothing to compare with


def test_report_write_and_merge_shards(tmp_path):
  s1 = fake_res([fake_job("a:000"), fake_job("b:000", ok=False)], report.add_coverage({}, cov_doc("vpu", "N4", {"x": 1, "y": 0})), shard="1/2", goal=95)
  s2 = fake_res([fake_job("a:001")], report.add_coverage({}, cov_doc("vpu", "N8", {"y": 3})), shard="2/2", goal=95,
                bench={"kernels": [{"name": "gemm", "cycles": 100}]})
  assert report.write(tmp_path / "s1", s1) == ["1 of 2 jobs failed"]  # a shard: no coverage goal
  assert report.write(tmp_path / "s2", s2) == []
  res = report.merge([tmp_path / "s1", tmp_path / "s2"], tmp_path / "m")
  assert [j["id"] for j in res["jobs"]] == ["a:000", "a:001", "b:000"]                      # list order
  assert res["coverage"]["vpu"]["g"]["hits"] == {"x": 1, "y": 3} and res["bench"]["kernels"][0]["cycles"] == 100
  assert report.verdict(res) == ["1 of 3 jobs failed"]
  md = (tmp_path / "m" / "summary.md").read_text()
  assert "**FAIL**" in md and "### b:000" in md and "`y`=3" in md
  assert ".venv/bin/pytest -p no:cacheprovider -n 0 tests/golden/test_intops.py::test_b:000" in md
  root = ET.parse(tmp_path / "m" / "junit.xml").getroot()
  assert [ts.get("name") for ts in root] == ["a:000", "a:001", "b:000"] and [ts.get("failures") for ts in root] == ["0", "0", "1"]
  assert root.find(".//failure").get("message").startswith("AssertionError: lane 3")
  # a shard that never reported leaves its jobs failed in the merge
  res = report.merge([tmp_path / "s2"], tmp_path / "m2")
  assert {j["id"]: j["status"] for j in res["jobs"]} == {"a:001": "pass", "a:000": "missing", "b:000": "missing"}
  with pytest.raises(ValueError): report.merge([tmp_path / "s2", tmp_path / "s2"], tmp_path / "m3")
  # a job a shard did not finish, rerun in another run: the finished one counts; finished twice is an error
  report.write(tmp_path / "s5", fake_res([fake_job("a:001", status="cancelled", rc=None)], shard="2/2"))
  redo = report.merge([tmp_path / "s1", tmp_path / "s5", tmp_path / "s2"], tmp_path / "m5")
  assert {j["id"]: j["status"] for j in redo["jobs"]} == {"a:000": "pass", "a:001": "pass", "b:000": "fail"}
  assert {j["id"]: j["status"] for j in report.merge([tmp_path / "s1", tmp_path / "s5"], tmp_path / "m6")["jobs"]}["a:001"] == "cancelled"
  report.write(tmp_path / "s3", {**s1, "commit": "def5678"})
  with pytest.raises(ValueError, match="shards of different commits"): report.merge([tmp_path / "s3", tmp_path / "s2"], tmp_path / "m4")
  tsv = tmp_path / "results.tsv"
  report.append_tsv(tsv, res); report.append_tsv(tsv, s2)
  rows = [l.split("\t") for l in tsv.read_text().splitlines()]
  assert rows[0] == report.TSV_HEADER.split("\t") and len(rows) == 3 and all(len(r) == 9 for r in rows)
  assert rows[1][0] == "2025-01-02" and rows[1][1] == "abc1234" and "1/3 jobs" in rows[1][5]


def test_merge_keeps_one_entry_of_a_job_no_part_finished(tmp_path):
  # a: cancelled in the shard, then lost in a rerun, finished by neither: one entry, the rerun's;
  # b: cancelled in the shard, passed in a second rerun: the pass
  shard = {**fake_res([fake_job("a:000", status="cancelled"), fake_job("b:000", status="cancelled")]), "all_jobs": ["a:000", "b:000"]}
  rerun1 = {**fake_res([fake_job("a:000", status="lost")]), "all_jobs": ["a:000", "b:000"]}
  rerun2 = {**fake_res([fake_job("b:000")]), "all_jobs": ["a:000", "b:000"]}
  for name, r in (("s", shard), ("r1", rerun1), ("r2", rerun2)): report.write(tmp_path / name, r)
  res = report.merge([tmp_path / "s", tmp_path / "r1", tmp_path / "r2"], tmp_path / "m")
  assert [(j["id"], j["status"]) for j in res["jobs"]] == [("a:000", "lost"), ("b:000", "pass")]


def test_mutation_jobs_add_up_to_a_score(tmp_path):
  """The nightly's mutation jobs (one per RTL file) write documents; the runner keeps their mutants
  out of the functional coverage, the report adds them up, fails below the goal or with a file
  missing, and merge joins the shards' mutants."""
  from tinytpu import mutate
  from tinytpu.regress import run
  files = sorted(mutate._units())
  mut = lambda f, st, eq=None: {"file": f, "line": 1, "kind": "comparison", "before": "a", "after": "b", "status": st, "equivalent": eq,  # noqa: E731
                                 "files": files}
  ms = [mut(f, "killed") for f in files] + [mut(files[0], "survived", "either is the minimum"), mut(files[1], "stillborn")]
  prog = run.Progress([fake_job("mutation:000")], quiet=True)
  prog.done({**fake_job("mutation:000"), "coverage_docs": [{"kind": "mutation", "mutants": ms}, cov_doc("vpu", "N4", {"x": 1})]})
  assert prog.mutants == ms and list(prog.cov) == ["vpu"] and prog.files == 1
  res = {**fake_res([fake_job("mutation:000")], {}), "mutants": ms, "mutation_goal": 95}
  s = report.mutation_summary(ms)
  assert (s["killed"], s["survived"], s["equivalent"], s["score"]) == (len(files), 1, 1, 1.0)
  assert report.mutation_problems(res) == []
  md = report.summary_md(res)
  assert "score **100.0%**" in md and "either is the minimum" in md
  hole = {**res, "mutants": [m for m in ms if m["file"] != files[0]] + [mut(files[2], "survived"), mut(files[3], "survived")]}  # a file missing, two holes
  why = report.mutation_problems(hole)
  assert why[0] == f"mutation: no result for {files[0]}" and why[1].startswith("mutation score ") and "< goal 95%" in why[1]
  assert "**not equivalent: a hole**" in report.summary_md(hole) and report.verdict(hole)[-1] == why[1]
  assert report.mutation_problems({**hole, "shard": "1/2"}) == []  # a shard is judged in the merge
  assert report.mutation_problems({**res, "mutants": []}) == ["mutation: no mutants reported (the list sets mutation_goal)"]
  report.write(tmp_path / "s1", {**res, "mutants": ms[:3], "shard": "1/2"})
  report.write(tmp_path / "s2", {**res, "jobs": [fake_job("mutation:001")], "mutants": ms[3:], "shard": "2/2"})
  assert report.merge([tmp_path / "s1", tmp_path / "s2"], tmp_path / "m")["mutants"] == ms


def test_previous_bench_is_the_newest_earlier_report(tmp_path):
  for name, cyc in [("2025-01-01-000000", 1), ("2025-01-02-000000", 2), ("2025-01-03-000000", None)]:
    report.write(tmp_path / name, fake_res([fake_job("a:000")], bench={"kernels": [{"name": "k", "cycles": cyc}]} if cyc else None))
  b, where = report.previous_bench(tmp_path / "2025-01-04-000000")
  assert where == "2025-01-02-000000" and b["kernels"][0]["cycles"] == 2


def test_a_long_failure_keeps_its_message_first(tmp_path):
  """The summary shows a failure's first line: the JUnit message (a cocotb env's failed assertion),
  not a line from the middle of a long traceback (the nightly of 2026-12-05 showed a line of the
  runner's source)."""
  tail = "\n".join(f"  traceback line {i}" for i in range(2000))
  (tmp_path / "j.xml").write_text(
    '<testsuite><testcase classname="tests.rtl.test_mxu" name="test_mxu[4]">'
    f'<failure message="AssertionError: psum.sv:132: Assertion failed in OutOfResetClean">{tail}</failure>'
    '</testcase></testsuite>')
  (case,) = report.read_junit(tmp_path / "j.xml")
  assert case["message"].splitlines()[0] == "AssertionError: psum.sv:132: Assertion failed in OutOfResetClean"
  assert case["message"].endswith("traceback line 1999") and len(case["message"]) <= 4001


def test_node_id_from_junit_names():
  assert report.node_id("tests.rtl.test_mxu", "test_mxu[4-A,B]") == "tests/rtl/test_mxu.py::test_mxu[4-A,B]"
  assert report.node_id("tests.test_asm.TestX", "test_y") == "tests/test_asm.py::TestX::test_y"


# ---- the whole runner on a copy of the repository with a planted fault
def test_broken_golden_op_fails_the_regression_with_a_reproduce_command(tmp_path):
  src = tmp_path / "repo"
  skip = shutil.ignore_patterns(".venv", "build", ".git", "reports", "__pycache__", "*.egg-info", "sim_build")
  shutil.copytree(ROOT, src, ignore=skip, symlinks=True)
  # the installed package maps tinytpu.golden & co to the real tree; in the copy, make the layout
  # importable from the copy's root instead (the runner runs every job from its tree's root)
  for sub in ("golden", "backend", "tb", "regress"): (src / "tinytpu" / sub).symlink_to(src / sub)
  lst = tmp_path / "tiny.toml"
  lst.write_text('[[group]]\nname = "intops"\nunit = "golden"\nlayer = "golden"\nconfig = "-"\npytest = ["tests/golden/test_intops.py"]\n')
  run = lambda out: subprocess.run([sys.executable, "-m", "tinytpu.regress", "--list", str(lst), "--out", str(tmp_path / out),
                                    "--tsv", str(tmp_path / "results.tsv"), "-j", "1"], cwd=src, capture_output=True, text=True, timeout=120)
  ok = run("good")
  assert ok.returncode == 0 and ok.stdout.strip().endswith("PASS"), ok.stdout + ok.stderr
  f = src / "golden" / "intops.py"
  good = "def satadd(a, b, c=None): return _sat32(_s(a).astype(i64) + _s(b))"
  assert good in f.read_text()
  f.write_text(f.read_text().replace(good, good.replace(" + ", " - ")))
  bad = run("bad")
  assert bad.returncode == 1 and "FAIL: 1 of 1 jobs failed" in bad.stdout, bad.stdout + bad.stderr
  res = json.loads((tmp_path / "bad" / "results.json").read_text())
  failed = [c["node"] for c in res["jobs"][0]["cases"] if c["status"] == "fail"]
  assert all(n.startswith("tests/golden/test_intops.py::") for n in failed) and any("SATADD" in n for n in failed), failed
  md = (tmp_path / "bad" / "summary.md").read_text()
  assert "reproduce:" in md and "tinytpu.regress waves --test tests/golden/test_intops.py::" in md.replace("'", "") and f".venv/bin/pytest -p no:cacheprovider -n 0 {failed[0]}" in md.replace("'", "")
  # the reproduce command reproduces: run in the copy, it fails on the planted fault
  cmd = res["jobs"][0]["reproduce"].replace(".venv/bin/pytest", f"{sys.executable} -m pytest")
  assert subprocess.run(cmd, shell=True, cwd=src, capture_output=True).returncode == 1
  assert len((tmp_path / "results.tsv").read_text().splitlines()) == 3  # header + two runs


def test_waves_on_a_test_without_waveforms():
  r = subprocess.run([sys.executable, "-m", "tinytpu.regress", "waves", "--test", "tests/golden/test_xlu.py", "--seed", "3"],
                     cwd=ROOT, capture_output=True, text=True, timeout=120)
  # (a waveform another process writes under build/ meanwhile would be named instead)
  last = r.stdout.strip().splitlines()[-1]
  assert r.returncode == 0 and "TINYTPU_SEED=3 TINYTPU_WAVES=1" in r.stdout and last.startswith(("no waveform", "waves:")), r.stdout


def test_code_coverage_merge_and_summary(tmp_path):
  from tinytpu.regress import codecov
  pt = lambda f, l, page: f"\x01f\x02{f}\x01l\x02{l}\x01page\x02{page}/top"
  a, b = tmp_path / "a.dat", tmp_path / "b.dat"
  a.write_text("# SystemC::Coverage-3\n" + f"C '{pt('x.sv', 1, 'v_line')}' 3\nC '{pt('x.sv', 2, 'v_line')}' 0\nC '{pt('x.sv', 3, 'v_toggle')}' 0\n")
  b.write_text("# SystemC::Coverage-3\n" + f"C '{pt('x.sv', 2, 'v_line')}' 1\nC '{pt('y.sv', 9, 'v_toggle')}' 2\n")
  points = codecov.merge([a, b])
  s = codecov.summary(points)
  assert (s["line"]["hit"], s["line"]["total"]) == (2, 2)          # line 2 was hit in the second run only
  assert (s["toggle"]["hit"], s["toggle"]["total"]) == (1, 2)
  assert s["toggle"]["files"] == {"x.sv": [0, 1], "y.sv": [1, 1]}
  codecov.write_dat(points, tmp_path / "m.dat")
  assert codecov.parse(tmp_path / "m.dat") == points
  assert "| line | 2 | 2 | 100.0 |" in codecov.markdown(s, 2)


def test_code_coverage_per_module_floor():
  from tinytpu.regress import codecov
  pt = lambda l, page: f"\x01f\x02x.sv\x01l\x02{l}\x01page\x02{page}"
  points = {pt(1, "v_line/mxu"): 1, pt(2, "v_line/mxu"): 0, pt(3, "v_toggle/mxu"): 5, pt(4, "v_line/vrf"): 2}
  mods = codecov.by_module(points)
  assert mods == {"mxu": {"line": [1, 2], "toggle": [1, 1]}, "vrf": {"line": [1, 1]}}
  floor = {"line": 60, "toggle": 50, "modules": {"vrf": {"line": 100}}, "exempt": {"sim_top": "not built"}}
  why = codecov.floor_problems(mods, floor, ["mxu", "vrf", "sxu", "sim_top"])
  assert why == ["code coverage: mxu line 50.0% < floor 60% (1/2 points)",
                 "code coverage: no data for module sxu (no --coverage build instantiates it)"]
  assert codecov.floor_problems(mods, {"line": 50}, ["mxu", "vrf"]) == []
  assert codecov.floor_problems(mods, None, ["sxu"]) == []                     # a list without a floor
  assert "| mxu | 50.0% (1/2) | - | - | 100.0% (1/1) |" in codecov.markdown(codecov.summary(points), 1, mods, floor)
  # the verdict carries the problems
  from tinytpu.regress import report
  assert "code coverage: no data for module sxu" in " ".join(report.verdict({"jobs": [], "code_coverage_problems": why}))
  assert report.verdict({"jobs": [], "code_coverage_problems": why, "shard": "2/3"}) == []  # a shard's points are a part: the merge is judged
  assert report.verdict({"jobs": [], "code_coverage_problems": why, "only": ["cosim:*"]}) == []  # so are an --only run's
  # every module of the RTL is expected, the co-sim top included
  assert {"sxu", "tensorcore", "sim_top", "fp32_pkg"} <= set(codecov.rtl_modules(ROOT))


# ---- the night's seeds
def test_the_night_seed_comes_from_the_date_unless_given(monkeypatch):
  import datetime
  assert plan.night_seed(None, datetime.date(2026, 12, 2)) == (20261202, "the date 2026-12-02")
  assert plan.night_seed("77") == (77, "SEED") and plan.night_seed(0) == (0, "SEED")
  assert plan.seed_offset(0) == 0                                                      # SEED=0: the list's own seeds
  days = [datetime.date(2026, 1, 1) + datetime.timedelta(d) for d in range(2000)]
  offs = [plan.seed_offset(int(d.strftime("%Y%m%d"))) for d in days]
  assert len(set(offs)) == 2000                                                        # 2000 nights, 2000 stretches
  jobs = plan.expand(plan.load("nightly"), collect=fake_collect, night=20261202)
  assert max(j["seed"] + j["seeds"] for j in jobs if j["seeded"]) < 2**31               # Verilator's seed is an int
  fixed = {j["id"]: j for j in plan.expand(plan.load("nightly"), collect=fake_collect)}
  for j in jobs:
    assert j["seed"] == fixed[j["id"]]["seed"] + plan.seed_offset(20261202)
  x = next(j for j in jobs if j["group"] == "rtl-xrand")
  assert x["env"]["TINYTPU_SEED"] == str(x["seed"]) and f"+verilator+seed+{x['seed']} " in x["env"]["SIM_CMD_SUFFIX"]
  # every pytest job draws its kit seed (TINYTPU_SEED) from the night, and its reproduce line says so
  for j in jobs:
    if j["kind"] == "pytest":
      assert j["seeded"] and j["env"]["TINYTPU_SEED"] == str(j["seed"]), j["id"]
  d = next(j for j in jobs if j["group"] == "dma-long")
  assert plan.reproduce(d).startswith(f"TINYTPU_SEED={d['seed']} ") and d["seed"] == plan.seed_offset(20261202) + 1
  assert fixed[d["id"]]["env"]["TINYTPU_SEED"] == "1"  # SEED=0 or no night: the list's own seeds
  r = next(j for j in jobs if j["group"] == "random-n4")
  assert r["args"][-4:] == ["--seed", str(r["seed"]), "--seeds", "250"] and r["seed"] != fixed[r["id"]]["seed"]
  assert next(j for j in jobs if j["group"] == "random")["env"]["TINYTPU_SEED_BASE"] == str(plan.seed_offset(20261202) + 1000)
  # date-seeded tests (the fuzzer) draw the night's seed, so shards run after midnight agree
  b = next(j for j in jobs if j["group"] == "backend")
  assert b["env"]["TINYTPU_NIGHT_SEED"] == "20261202" and "TINYTPU_NIGHT_SEED" not in fixed[b["id"]]["env"]
  from tinytpu import fuzz
  monkeypatch.setenv("TINYTPU_NIGHT_SEED", "20261202")
  assert fuzz.today_seed() == 20261202
  # the smoke list is make test: its seeds never move
  smoke = plan.expand(plan.load("smoke"), collect=fake_collect, night=20261202)
  assert [j["seed"] for j in smoke] == [j["seed"] for j in plan.expand(plan.load("smoke"), collect=fake_collect)]
  assert not any("TINYTPU_SEED" in j["env"] for j in smoke)  # make test's kit seeds stay its own (printed)


def test_seeds_and_per_unit_coverage_in_the_report(tmp_path):
  cov = report.add_coverage({}, cov_doc("vpu", "N4", {f"b{i}": 1 for i in range(100)}))
  report.add_coverage(cov, cov_doc("mxu", "N4", {"a": 1, "b": 0}))                      # pooled: 101/102 = 99%
  jobs = [fake_job("a:000", seeded=True, seed=1202100000, seeds=250), fake_job("a:001", seeded=True, seed=1202100250, seeds=250)]
  res = {**fake_res(jobs, cov, goal=95), "seed": 20261202, "seed_from": "the date 2026-12-02", "reseed": True, "seed_offset": 1202000000,
         "coverage_units": ["vpu", "mxu", "xlu"]}
  why = report.verdict(res)
  assert "no coverage document from unit xlu" in why and "functional coverage below the goal 95%: mxu 50.0%" in why, why
  report.write(tmp_path, res)
  md = (tmp_path / "summary.md").read_text()
  assert "night seed 20261202 (the date 2026-12-02)" in md and "| a | 2 | 1202100000 .. 1202100499 |" in md and "`SEED=20261202`" in md
  assert "| xlu | - | **no document** |" in md and "| mxu | 1/2 | 50.0 **below the goal** |" in md and "| vpu | 100/100 | 100.0 |" in md
  assert "250 from 1202100250" in md
  saved = json.loads((tmp_path / "results.json").read_text())
  assert saved["seed"] == 20261202 and [j["seed"] for j in saved["jobs"]] == [1202100000, 1202100250]
  assert report.verdict({**res, "shard": "1/2"}) == [] and report.verdict({**res, "only": ["a:*"]}) == []
  assert "coverage per unit >= 50.0% (lowest mxu)" in report.tsv_row(res)


# ---- Dask: schedulers, farms, a local cluster
@pytest.mark.parametrize("s,want", [(None, ("local", None)), ("", ("local", None)), ("local", ("local", None)),
                                    ("tcp://10.0.0.5:8786", ("address", "tcp://10.0.0.5:8786")), ("tls://sched.farm:8786", ("address", "tls://sched.farm:8786")),
                                    ("slurm", ("jobqueue", "slurm")), ("LSF", ("jobqueue", "lsf")), ("pbs", ("jobqueue", "pbs"))])
def test_scheduler_parsing(s, want):
  from tinytpu.regress import farm
  assert farm.parse_scheduler(s) == want


@pytest.mark.parametrize("s", ["sge", "tcp://host", "tcp://:8786", "http://x:1", "host:8786"])
def test_bad_schedulers_are_refused(s):
  from tinytpu.regress import farm
  with pytest.raises(farm.FarmError, match="tcp://host:port"): farm.parse_scheduler(s)


def test_farm_options_from_the_environment(tmp_path):
  from tinytpu.regress import farm
  env = {"QUEUE": "short", "ACCOUNT": "hw", "WALLTIME": "01:00:00", "CORES": "4", "MEMORY": "16GB", "JOB_EXTRA": "--exclusive; --constraint=avx2",
         "PROLOGUE": "module load gcc;source ~/.profile", "INTERFACE": "ib0"}
  kw, n = farm.jobqueue_kwargs("slurm", 10, tmp_path, env, retries=1)
  assert n == 3 and kw["cores"] == kw["processes"] == 4 and kw["memory"] == "16GB" and kw["queue"] == "short" and kw["account"] == "hw"
  assert kw["walltime"] == "01:00:00" and kw["job_extra_directives"] == ["--exclusive", "--constraint=avx2"] and kw["interface"] == "ib0"
  assert kw["job_script_prologue"] == [f"cd {ROOT}", "module load gcc", "source ~/.profile"] and kw["python"] == sys.executable
  assert kw["scheduler_options"] == {"allowed_failures": 1} and kw["log_directory"] == str(tmp_path / "farm-logs")
  kw, n = farm.jobqueue_kwargs("lsf", 2, tmp_path, {"ACCOUNT": "hw"})
  assert n == 1 and kw["project"] == "hw" and "account" not in kw and "queue" not in kw and kw["cores"] == 2 and kw["walltime"] == "02:00"


def test_a_farm_without_dask_jobqueue_says_what_to_install(tmp_path, monkeypatch, capsys):
  from tinytpu.regress import farm
  from tinytpu.regress.__main__ import main
  monkeypatch.setitem(sys.modules, "dask_jobqueue", None)  # not importable, installed or not
  with pytest.raises(farm.FarmError, match=r"needs dask-jobqueue.*pip install -e '\.\[farm\]'"): farm.connect("slurm", 2, tmp_path)
  lst = write(tmp_path, '[[group]]\nname = "a"\nlayer = "golden"\ncmd = "true"\n')
  assert main(["--list", str(lst), "--scheduler", "pbs", "--out", str(tmp_path / "r"), "--no-tsv"]) == 2
  assert "SCHEDULER=pbs needs dask-jobqueue" in capsys.readouterr().err


def regress(args, cwd=ROOT, timeout=300, **env):
  import os
  return subprocess.run([sys.executable, "-m", "tinytpu.regress", "--no-tsv", "-j", "2", *args], cwd=cwd, capture_output=True, text=True,
                        timeout=timeout, env={**os.environ, **env})


def shape(out):
  """What a report looks like, whatever ran it: results.json's keys, each job's keys, status and test
  nodes, the summary's sections, the JUnit suites and cases."""
  res = json.loads((out / "results.json").read_text())
  md = (out / "summary.md").read_text()
  root = ET.parse(out / "junit.xml").getroot()
  return (sorted(res), [(j["id"], sorted(set(j) - {"waves"}), j["status"], sorted(c["node"] for c in j["cases"])) for j in res["jobs"]],
          [l for l in md.splitlines() if l.startswith("#")], [(ts.get("name"), [tc.get("name") for tc in ts]) for ts in root])


def test_smoke_list_through_a_local_dask_cluster(tmp_path):
  only = ["--list", "smoke", "--only", "isa:001", "--only", "golden:005"]  # two cheap jobs of the smoke list itself
  d = regress([*only, "--out", str(tmp_path / "dask")])
  assert d.returncode == 0 and d.stdout.strip().endswith("PASS"), d.stdout + d.stderr
  assert "dask local cluster, 2 workers" in d.stderr and "2/2 done" in d.stderr
  res = json.loads((tmp_path / "dask" / "results.json").read_text())
  assert res["runner"] == "dask local cluster, 2 workers" and [j["id"] for j in res["jobs"]] == ["isa:001", "golden:005"]
  assert all(j["status"] == "pass" and j["host"] and len(j["cases"]) > 3 for j in res["jobs"])
  l = regress([*only, "--out", str(tmp_path / "local"), "--runner", "local"])
  assert l.returncode == 0, l.stdout + l.stderr
  assert json.loads((tmp_path / "local" / "results.json").read_text())["runner"] == "local"
  assert shape(tmp_path / "dask") == shape(tmp_path / "local")


def test_dask_jobs_coverage_folders_seeds_and_a_lost_job(tmp_path):
  # a job writing a coverage document into its own folder, a seeded job, one killing its worker
  doc = json.dumps({"unit": "toy", "config": "N4", "groups": {"g": {"goal": 1, "hits": {"a": 1, "b": 2}, "illegal": {}}}})
  lst = write(tmp_path, f"""coverage_goal = 90
coverage_units = ["toy", "absent"]
reseed = true
[[group]]
name = "killer"
layer = "golden"
cmd = "{{python}} -c 'import os, signal; os.kill(os.getppid(), signal.SIGKILL)'"
[[group]]
name = "cov"
layer = "unit"
cmd = "{{python}} -c 'import os, pathlib; d = pathlib.Path(os.environ[\\"TINYTPU_COVERAGE_DIR\\"]); d.mkdir(parents=True); (d / \\"toy_N4.json\\").write_text(os.environ[\\"DOC\\"])'"
env = {{ DOC = '{doc}' }}
[[group]]
name = "seeded"
layer = "random"
cmd = "{{python}} -c 'print(1)' --seed {{seed}}"
seeds = 20
chunk = 10
seed_base = 500
""")
  # one worker: the jobs after the killer run on the worker the nanny restarts
  r = regress(["--list", str(lst), "--out", str(tmp_path / "r"), "-j", "1"], SEED="3", timeout=180)
  assert r.returncode == 1, r.stdout + r.stderr
  assert "LOST killer:000" in r.stderr and "FAIL: 1 of 4 jobs failed (1 lost); no coverage document from unit absent" in r.stdout, r.stdout + r.stderr
  res = json.loads((tmp_path / "r" / "results.json").read_text())
  st = {j["id"]: j["status"] for j in res["jobs"]}
  assert st == {"cov:000": "pass", "seeded:000": "pass", "seeded:001": "pass", "killer:000": "lost"}
  assert res["coverage"]["toy"]["g"]["hits"] == {"a": 1, "b": 2} and res["coverage_files"] == 1
  assert res["jobs"][1]["coverage_units"] == ["toy"] and (tmp_path / "r" / "coverage" / "cov_000" / "toy_N4.json").exists()
  assert res["seed"] == 3 and res["seed_from"] == "SEED" and [j["seed"] for j in res["jobs"][2:4]] == [3 * 10**6 + 500, 3 * 10**6 + 510]
  md = (tmp_path / "r" / "summary.md").read_text()
  assert "LOST (its worker died or went away)" in md and "| seeded | 2 | 3000500 .. 3000519 |" in md and "| toy | 2/2 | 100.0 |" in md


def test_jobs_on_an_existing_dask_scheduler(tmp_path):
  distributed = pytest.importorskip("distributed")
  lst = write(tmp_path, '[[group]]\nname = "w"\nlayer = "golden"\ncmd = "{python} -c \'import os; print(os.environ[\\"TINYTPU_FORWARDED\\"])\'"\nseeds = 2\nchunk = 1\n')
  with distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=True, dashboard_address=":0") as cluster:
    r = regress(["--list", str(lst), "--out", str(tmp_path / "r"), "--scheduler", cluster.scheduler_address], timeout=120, TINYTPU_FORWARDED="yes")
  assert r.returncode == 0 and f"dask scheduler {cluster.scheduler_address}" in r.stderr, r.stdout + r.stderr
  res = json.loads((tmp_path / "r" / "results.json").read_text())
  assert res["runner"] == f"dask scheduler {cluster.scheduler_address}" and [j["status"] for j in res["jobs"]] == ["pass", "pass"]
  assert (tmp_path / "r" / "logs" / "w_000.log").read_text().rstrip().endswith("yes")   # TINYTPU_* reaches remote workers


def test_without_distributed_the_jobs_run_here(tmp_path, monkeypatch, capsys):
  from tinytpu.regress.__main__ import main
  monkeypatch.setitem(sys.modules, "distributed", None)
  monkeypatch.delenv("RUNNER", raising=False)
  lst = write(tmp_path, '[[group]]\nname = "a"\nlayer = "golden"\ncmd = "true"\n')
  assert main(["--list", str(lst), "--out", str(tmp_path / "r"), "--no-tsv"]) == 0
  assert "distributed is not installed" in capsys.readouterr().err
  assert json.loads((tmp_path / "r" / "results.json").read_text())["runner"] == "local"


def test_a_partial_report_as_each_job_finishes(tmp_path):
  from tinytpu.regress import run
  jobs = plan.expand(plan.load(str(write(tmp_path, '[[group]]\nname = "a"\nlayer = "golden"\ncmd = "true"\nseeds = 3\nchunk = 1\n'))))
  seen = []
  results, prog = run.run(jobs, tmp_path / "out", 1, quiet=True, on_result=lambda p: seen.append([r["id"] for r in p.ordered(partial=True)]))
  assert seen == [["a:000"], ["a:000", "a:001"], ["a:000", "a:001", "a:002"]] and [r["status"] for r in results] == ["pass"] * 3
  assert "(in progress: 2 of 3 jobs done)" in report.summary_md({**fake_res(results[:2]), "partial": 3})


def test_a_run_merges_its_jobs_coverage_files_and_records_itself(tmp_path, monkeypatch):
  """Each job's Verilator coverage files in its own folder are the run's code coverage (a file
  elsewhere is not); --record copies the report to regress/records/<date>-<commit>/
  <part> with the coverage gzipped, and `merge` reads such records."""
  import gzip
  from tinytpu.regress import __main__ as cli
  monkeypatch.setattr(cli, "RECORDS", tmp_path / "records")
  point = "\x01page\x02v_line/foo\x01f\x02foo.sv\x01l\x027"
  (tmp_path / "one.dat").write_text(f"# SystemC::Coverage-3\nC '{point}' 3\n")
  (tmp_path / "coverage.dat").write_text(f"# SystemC::Coverage-3\nC '{point}' 100\n")  # not a job's: not counted
  script = tmp_path / "sim.py"  # a job's simulation: its coverage file into the job's folder
  script.write_text("import os, pathlib, shutil\nd = pathlib.Path(os.environ['TINYTPU_COVERAGE_DIR']) / 'codecov'\n"
                    f"d.mkdir(parents=True)\nshutil.copy({str(tmp_path / 'one.dat')!r}, d / 'sim-1.dat')\n")
  lst = write(tmp_path, f'[[group]]\nname = "a"\nlayer = "golden"\ncmd = "{{python}} {script}"\nseeds = 2\nchunk = 1\n')
  assert cli.main(["--list", str(lst), "--out", str(tmp_path / "p1"), "--no-tsv", "--runner", "local", "--record", "p1"]) == 0
  assert cli.main(["--list", str(lst), "--out", str(tmp_path / "p2"), "--no-tsv", "--runner", "local", "--record", "p2", "--only", "a:001"]) == 0
  res = json.loads((tmp_path / "p1" / "results.json").read_text())
  rec = tmp_path / "records" / f"{res['started'][:10]}-{res['commit']}"
  assert sorted(f.name for f in (rec / "p1").iterdir()) == ["coverage.dat.gz", "results.json", "summary.md"]
  assert f"C '{point}' 6\n" in gzip.decompress((rec / "p1" / "coverage.dat.gz").read_bytes()).decode()  # two jobs, 3 hits each
  # p1's a:001 and p2's: one job run twice, refused; p1 with its a:001 dropped merges p2's coverage from its record
  with pytest.raises(ValueError, match="a job appears in two shards"): cli.main(["merge", str(rec / "p1"), str(rec / "p2"), "--out", str(tmp_path / "m")])
  r1 = json.loads((rec / "p1" / "results.json").read_text())
  (rec / "p1" / "results.json").write_text(json.dumps({**r1, "jobs": r1["jobs"][:1]}))
  assert cli.main(["merge", str(rec / "p1"), str(rec / "p2"), "--out", str(tmp_path / "m"), "--no-tsv"]) == 0
  assert f"C '{point}' 9\n" in (tmp_path / "m" / "coverage.dat").read_text()
  with pytest.raises(ValueError, match="want a folder name"): cli.record(tmp_path / "p1", res, "../x", tmp_path / "records")
  with pytest.raises(SystemExit):  # refused before anything runs
    cli.main(["--list", str(lst), "--out", str(tmp_path / "p3"), "--no-tsv", "--runner", "local", "--record", "../x"])
  assert not (tmp_path / "p3").exists()


def _stopped_by(sig, runner, tmp_path):
  """Four one-line jobs; the signal arrives as the first one's result is recorded. Returns the
  statuses and whether the handlers in place before the run are back."""
  import os
  import signal
  jobs = plan.expand(plan.load(str(write(tmp_path, '[[group]]\nname = "a"\nlayer = "golden"\ncmd = "true"\nseeds = 4\nchunk = 1\n'))))
  send = lambda p: os.kill(os.getpid(), sig) if len(p.results) == 1 else None  # noqa: E731
  before = signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM)
  results = runner(jobs, send)
  return [r["status"] for r in results], (signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM)) == before


@pytest.mark.parametrize("sig", ["SIGINT", "SIGTERM"])
def test_a_signal_stops_a_dask_run_and_cancels_the_rest(tmp_path, sig):
  # one worker, so job 2 waits for a free slot: the run must stop there, not go on submitting
  import signal
  distributed = pytest.importorskip("distributed")
  from tinytpu.regress import farm
  with distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=True, dashboard_address=":0") as cluster, \
       distributed.Client(cluster) as client:
    conn = (client, cluster, "dask local cluster, 1 workers")
    st, restored = _stopped_by(getattr(signal, sig), lambda jobs, cb: farm.run(jobs, tmp_path / "out", 1, quiet=True, on_result=cb, connection=conn)[0], tmp_path)
  assert st == ["pass", "cancelled", "cancelled", "cancelled"] and restored


@pytest.mark.parametrize("sig", ["SIGINT", "SIGTERM"])
def test_a_signal_stops_a_local_run_with_a_report(tmp_path, sig):
  import signal
  from tinytpu.regress import run
  st, restored = _stopped_by(getattr(signal, sig), lambda jobs, cb: run.run(jobs, tmp_path / "out", 1, quiet=True, on_result=cb)[0], tmp_path)
  assert st[0] == "pass" and set(st[1:]) <= {"pass", "cancelled"} and "cancelled" in st and restored


DEEP_JOB = """import os, signal, subprocess, sys, time
depth, pids = int(sys.argv[1]), sys.argv[2]
if depth == 0:  # the leaf: deaf to SIGINT and SIGTERM (a compiler or simulator busy in a job), gone in 2 min at most
  signal.signal(signal.SIGINT, signal.SIG_IGN); signal.signal(signal.SIGTERM, signal.SIG_IGN)
  open(pids, "a").write(f"{os.getpid()}\\n")
  time.sleep(120)
else:
  subprocess.run([sys.executable, __file__, str(depth - 1), pids])
"""


@pytest.mark.parametrize("runner", ["dask", "local"])
def test_sigint_stops_a_run_whose_jobs_run_deep_process_trees(tmp_path, runner):
  """A mutation job is `pytest` -> `tinytpu mutate` -> verilator -> make -> the compiler; the leaf
  here ignores SIGINT and SIGTERM. SIGINT to the runner alone (not its process group) ends the run
  within seconds, with its report, and leaves no process of the jobs' trees behind."""
  import os
  import signal
  import time
  if runner == "dask": pytest.importorskip("distributed")
  (tmp_path / "deep.py").write_text(DEEP_JOB)
  pids = tmp_path / "leaves"
  lst = write(tmp_path, f'[[group]]\nname = "a"\nlayer = "golden"\ncmd = "{{python}} {tmp_path / "deep.py"} 3 {pids}"\nseeds = 3\nchunk = 1\n')
  p = subprocess.Popen([sys.executable, "-m", "tinytpu.regress", "--list", str(lst), "--out", str(tmp_path / "r"), "--no-tsv", "-j", "2",
                        "--runner", runner], cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
  try:
    t0 = time.time()
    while len(pids.read_text().split() if pids.exists() else []) < 2:  # both job slots hold a deep tree
      assert p.poll() is None and time.time() - t0 < 120, "the jobs never started"
      time.sleep(0.2)
    p.send_signal(signal.SIGINT)
    out, _ = p.communicate(timeout=60)
  finally:
    if p.poll() is None: p.kill()
  assert p.returncode == 130, out
  assert [j["status"] for j in json.loads((tmp_path / "r" / "results.json").read_text())["jobs"]] == ["cancelled"] * 3
  leaves = [int(x) for x in pids.read_text().split()]
  running = lambda pid: (st := pathlib.Path(f"/proc/{pid}/stat")).exists() and st.read_text().rsplit(")", 1)[1].split()[0] != "Z"  # noqa: E731
  t0 = time.time()
  while any(map(running, leaves)) and time.time() - t0 < 10: time.sleep(0.1)  # SIGKILLed: gone, or a zombie until reaped
  alive = [pid for pid in leaves if running(pid)]
  for pid in alive: os.kill(pid, signal.SIGKILL)
  assert alive == [], "job processes left running after the run ended"


def _start_order(runner, tmp_path):
  """Three groups listed short, long, middle, run one at a time: the order the jobs started in (each
  appends its name to a file) and the order of the results."""
  started = tmp_path / "started"
  g = lambda name, cost: (f'[[group]]\nname = "{name}"\nlayer = "golden"\ncost = {cost}\n'  # noqa: E731
                          f"cmd = \"{{python}} -c 'open(\\\"{started}\\\", \\\"a\\\").write(\\\"{name} \\\")'\"\n")
  jobs = plan.expand(plan.load(str(write(tmp_path, g("short", 1) + g("long", 9) + g("middle", 3)))))
  results = runner(jobs)
  return started.read_text().split(), [r["id"] for r in results], [r["status"] for r in results]


def test_the_local_runner_starts_the_longest_jobs_first(tmp_path):
  from tinytpu.regress import run
  order, ids, st = _start_order(lambda jobs: run.run(jobs, tmp_path / "out", 1, quiet=True)[0], tmp_path)
  assert order == ["long", "middle", "short"] and ids == ["short:000", "long:000", "middle:000"] and st == ["pass"] * 3


def test_the_dask_runner_starts_the_longest_jobs_first(tmp_path):
  distributed = pytest.importorskip("distributed")
  from tinytpu.regress import farm
  with distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=True, dashboard_address=":0") as cluster, \
       distributed.Client(cluster) as client:
    conn = (client, cluster, "dask local cluster, 1 workers")
    order, ids, st = _start_order(lambda jobs: farm.run(jobs, tmp_path / "out", 1, quiet=True, connection=conn)[0], tmp_path)
  assert order == ["long", "middle", "short"] and ids == ["short:000", "long:000", "middle:000"] and st == ["pass"] * 3


def test_a_groups_costs_table_prices_its_jobs():
  g = {"cost": 3, "costs": {"[chip.sv]": 45, "sv]": 1, "[noc_sc_ep.sv]": 20}}
  assert [plan.job_cost(g, ["-m", "x", f"t.py::test_mutants_of[{f}]"]) for f in ("chip.sv", "vrf.sv", "noc_sc_ep.sv")] == [45, 1, 20]
  assert plan.job_cost(g, ["t.py::other"]) == 3 and plan.job_cost({}, ["a"]) == 1
  jobs = plan.expand(plan.load("nightly"))
  cost = {j["args"][-1].split("[")[-1].rstrip("]"): j["cost"] for j in jobs if j["group"] == "mutation-files"}
  assert cost["chip.sv"] > 5 * cost["vrf.sv"]  # the nightly's per-file mutation jobs are priced per file


def test_a_costs_entry_that_matches_no_job_is_refused(tmp_path):
  text = '[[group]]\nname="m"\nlayer="unit"\npytest=["tests/a.py"]\nsplit="node"\ncosts={ "a.py::test_1" = 5, %s = 9 }\n'
  lst = plan.load(str(write(tmp_path, text % '"a.py::test_2"')))
  jobs = plan.expand(lst, collect=fake_collect)
  assert [j["cost"] for j in jobs][:3] == [1, 5, 9] and plan.unmatched_costs(lst, jobs) == []
  lst = plan.load(str(write(tmp_path, text % '"a.py::test_99"')))
  assert plan.unmatched_costs(lst, plan.expand(lst, collect=fake_collect)) == ["m: a.py::test_99"]
  real = '[[group]]\nname="m"\nlayer="unit"\npytest=["tests/test_layers.py"]\nsplit="node"\ncosts={ "test_layers.py::" = 5, "test_nope" = 9 }\n'
  r = subprocess.run([sys.executable, "-m", "tinytpu.regress", "--list", str(write(tmp_path, real)), "--dry-run"],
                     cwd=ROOT, capture_output=True, text=True, timeout=300)  # the runner refuses it before any job
  assert r.returncode == 2 and "costs entries that match no job: m: test_nope" in r.stderr, r.stderr
  for name in ("smoke", "nightly"):  # the lists' own tables, on the test ids pytest collects
    lst = plan.load(name)
    assert plan.unmatched_costs(lst, plan.expand(lst)) == [], name


def test_longest_first_keeps_list_order_among_equals():
  jobs = [{"id": i, "cost": c} for i, c in enumerate([1, 5, 1, 5, 2])]
  assert [j["id"] for j in plan.longest_first(jobs)] == [1, 3, 4, 0, 2]


@pytest.mark.parametrize("name", ["smoke", "nightly"])
def test_expected_coverage_units_are_the_kits(name):
  # each unit a list expects documents from is one a covergroup of tb/ (or the core covergroup, tinytpu/corecov.py) names
  # (a misspelt unit would fail every night)
  src = "".join(f.read_text() for f in (ROOT / "tb").rglob("*.py")) + (ROOT / "tinytpu" / "corecov.py").read_text()
  units = plan.load(name)["coverage_units"]
  assert {"mxu", "vpu", "xlu", "vmem", "psum", "vrf", "fp"} <= set(units)
  assert all(f'"{u}"' in src for u in units), [u for u in units if f'"{u}"' not in src]


def test_an_illegal_coverage_bin_fails_the_run_and_a_shard():
  """A bin the model says cannot happen (the nightly at 07f3f78 hit core's dma x unit stall, which
  sxu.sv makes when the DMA queue is full, 145 times and only reported it): any slice fails."""
  doc = cov_doc("core", "N4", {"a": 1})
  doc["groups"]["g"]["illegal"] = {"dmaxunit": 3}
  res = fake_res([], report.add_coverage({}, doc), goal=95)
  for r in (res, {**res, "shard": "2/3"}, {**res, "only": ["a:*"]}):
    assert "illegal coverage bins hit: core.g dmaxunit=3" in report.verdict(r), report.verdict(r)
  assert report.verdict(fake_res([], report.add_coverage({}, cov_doc("core", "N4", {"a": 1})), goal=95)) == []


def test_core_stall_bins_hold_what_sxu_stalls_on():
  """Every (datapath, stall) the SXU produces has a bin: the DMA queue's unit stall among them."""
  from tinytpu import corecov
  assert ("dma", "unit") in corecov.stall_bins(True) and ("dma", "unit") not in corecov.stall_bins(False)
