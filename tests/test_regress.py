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
  # the smoke list selects what `make test` runs: the N = 4 tier only
  smoke = plan.load("smoke")["group"]
  assert all(x.get("mark") == "not nightly" for x in smoke if any("rtl" in p or "cosim" in p or "random" in p for p in x["pytest"]))


def write(tmp_path, text):
  p = tmp_path / "l.toml"; p.write_text(text); return p


@pytest.mark.parametrize("text", [
  '[[group]]\nname="a"\nlayer="unit"\npytest=["x"]\ncmd="y"\n',         # both kinds
  '[[group]]\nname="a"\nlayer="unit"\npytest=["x"]\nsplitt="file"\n',   # a misspelt key
  '[[group]]\nname="a"\nlayer="gate"\npytest=["x"]\n',                  # unknown layer
  '[[group]]\nname="a"\nlayer="unit"\npytest=["x"]\n[[group]]\nname="a"\nlayer="unit"\npytest=["y"]\n',  # repeated name
  '[[group]]\nname="a"\nlayer="unit"\npytest=["x"]\nsplit=0\n'])
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
  tsv = tmp_path / "results.tsv"
  report.append_tsv(tsv, res); report.append_tsv(tsv, s2)
  rows = [l.split("\t") for l in tsv.read_text().splitlines()]
  assert rows[0] == report.TSV_HEADER.split("\t") and len(rows) == 3 and all(len(r) == 9 for r in rows)
  assert rows[1][0] == "2025-01-02" and rows[1][1] == "abc1234" and "1/3 jobs" in rows[1][5]


def test_previous_bench_is_the_newest_earlier_report(tmp_path):
  for name, cyc in [("2025-01-01-000000", 1), ("2025-01-02-000000", 2), ("2025-01-03-000000", None)]:
    report.write(tmp_path / name, fake_res([fake_job("a:000")], bench={"kernels": [{"name": "k", "cycles": cyc}]} if cyc else None))
  b, where = report.previous_bench(tmp_path / "2025-01-04-000000")
  assert where == "2025-01-02-000000" and b["kernels"][0]["cycles"] == 2


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
