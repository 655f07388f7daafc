"""tinygrad's op suite (test/backend/test_ops.py, torch as the reference) on TINYTPU, judged against
test_ops_manifest.toml: `make test` runs the SMOKE share, the nightly tier the whole file, both with
the forward and the backward checks (doc/backend.md, "tinygrad's test_ops on TINYTPU").

A run fails on a failure that is not in the manifest, on a manifest entry that passes or fails in
another phase than it says, and on a skip that is not one of tinygrad's own guards."""
import ast
import os
import subprocess

import pytest

from tests.backend import tinygrad_ops as ops

# The smoke share: fixed, about three minutes on two cores; one or more tests per kind of op.
SMOKE = [
  # elementwise, unary and binary, comparisons, casts
  "TestOps::test_add", "TestOps::test_sub", "TestOps::test_mul", "TestOps::test_div", "TestOps::test_neg",
  "TestOps::test_maximum", "TestOps::test_where", "TestOps::test_cmp_lt", "TestOps::test_relu", "TestOps::test_sigmoid",
  "TestOps::test_exp", "TestOps::test_log", "TestOps::test_sqrt", "TestOps::test_abs",
  # reductions
  "TestOps::test_sum", "TestOps::test_max", "TestOps::test_mean", "TestOps::test_softmax", "TestOps::test_argmax",
  # movement
  "TestOps::test_reshape", "TestOps::test_permute", "TestOps::test_expand", "TestOps::test_pad", "TestOps::test_flip",
  "TestOps::test_slice_in_bounds_multidim", "TestOps::test_cat", "TestOps::test_transpose",
  # matmul and convolution
  "TestOps::test_matmul_simple", "TestOps::test_small_gemm", "TestOps::test_simple_conv2d", "TestOps::test_avg_pool2d",
  # scans
  "TestOps::test_cumsum",
]


def _tests_dir():
  try:
    return ops.find_tests_dir()
  except LookupError as e:
    pytest.fail(str(e))


def ops_names() -> set[str]:
  """Class::method of every test in tinygrad's file, read without importing it."""
  tree = ast.parse((_tests_dir() / ops.TEST_FILE).read_text())
  return {f"{c.name}::{f.name}" for c in tree.body if isinstance(c, ast.ClassDef)
          for f in c.body if isinstance(f, ast.FunctionDef) and f.name.startswith("test")}


def test_manifest_and_smoke_name_real_tests():
  names, manifest = ops_names(), ops.load_manifest()
  assert not (missing := [t for t in [*manifest, *SMOKE] if t not in names]), f"not tests of {ops.TEST_FILE}: {missing}"
  assert len(set(SMOKE)) == len(SMOKE)


# ---- the judge, on made-up runs: each rule has to be able to fail

def _run(**results):
  recs = {t.replace("__", "::"): {"outcome": o, "phases": p, "message": "boom", "skip": s, "duration": 0.1} for t, (o, p, s) in results.items()}
  return ops.Run(recs, 1 if any(r["outcome"] == "failed" for r in recs.values()) else 0, "", 1.0)


MANIFEST = {"T::fwd": {"mode": "forward", "reason": "r1"}, "T::bwd": {"mode": "backward", "reason": "r2"}}


def test_judge_accepts_the_expected():
  run = _run(T__fwd=("failed", ["forward"], None), T__bwd=("failed", ["backward"], None), T__ok=("passed", [], None),
             T__sk=("skipped", [], "not supported"))
  assert ops.judge(run, MANIFEST, None) == []


@pytest.mark.parametrize("results, needle", [
  ({"T__new": ("failed", ["forward"], None)}, "unexpected failure"),
  ({"T__new": ("error", ["forward"], None)}, "unexpected error"),
  ({"T__fwd": ("passed", [], None)}, "passes now: remove it"),
  ({"T__fwd": ("failed", ["backward"], None)}, "fails in mode backward, the manifest says forward"),
  ({"T__bwd": ("failed", ["forward", "backward"], None)}, "fails in mode both"),
  ({"T__new": ("skipped", [], "Skipping slow test")}, "not one of tinygrad's own guards"),
  ({"T__fwd": ("skipped", [], "slow")}, "in the manifest but skipped"),
])
def test_judge_flags(results, needle):
  base = {"T__fwd": ("failed", ["forward"], None), "T__bwd": ("failed", ["backward"], None)}
  problems = ops.judge(_run(**{**base, **results}), MANIFEST, None)
  assert any(needle in p for p in problems), problems


def test_judge_timeout_entries_may_pass_or_time_out_but_not_fail_otherwise():
  manifest = {"T::slow": {"mode": "timeout", "reason": "slow"}}
  for outcome, phases, message in (("passed", [], ""), ("failed", ["forward"], "Failed: Timeout (>1200.0s) from pytest-timeout."),
                                   ("failed", ["backward"], "Failed: Timeout (>1200.0s) from pytest-timeout.")):
    run = ops.Run({"T::slow": {"outcome": outcome, "phases": phases, "message": message, "skip": None, "duration": 1.0}}, 1, "", 1.0)
    assert ops.judge(run, manifest, None) == [], (outcome, phases)
  run = ops.Run({"T::slow": {"outcome": "failed", "phases": ["forward"], "message": "AssertionError: mismatch", "skip": None, "duration": 1.0}}, 1, "", 1.0)
  assert any("listed as too slow, but fails otherwise" in p for p in ops.judge(run, manifest, None))


def test_judge_flags_missing_and_unknown():
  run = _run(T__fwd=("failed", ["forward"], None))
  assert any("T::bwd: in test_ops_manifest.toml but not a test" in p for p in ops.judge(run, MANIFEST, None))
  assert any("T::gone: no result" in p for p in ops.judge(run, MANIFEST, ["T::fwd", "T::gone"]))
  assert any("did not finish normally" in p for p in ops.judge(ops.Run({}, 4, "usage", 0.0), MANIFEST, []))


def test_judge_forward_only():
  run = _run(T__fwd=("failed", ["forward"], None), T__bwd=("passed", [], None))
  assert ops.judge(run, MANIFEST, None, forward_only=True) == []
  run = _run(T__fwd=("failed", ["forward"], None), T__bwd=("failed", ["forward"], None))
  assert any("make it forward" in p for p in ops.judge(run, MANIFEST, None, forward_only=True))


# ---- finding tinygrad's files

def _fake_tests(d):
  for f in ops.FILES:
    (d / f).parent.mkdir(parents=True, exist_ok=True)
    (d / f).write_text("")
  return d


def test_tests_dir_from_env_or_a_clone(tmp_path, monkeypatch):
  monkeypatch.setenv("TINYGRAD_TESTS_DIR", str(_fake_tests(tmp_path / "x")))
  assert ops.find_tests_dir(tmp_path) == tmp_path / "x"
  monkeypatch.delenv("TINYGRAD_TESTS_DIR")
  # CI: a clone of <work>/main somewhere else; the files sit in <work>/shared
  (tmp_path / "work" / "main").mkdir(parents=True)
  _fake_tests(tmp_path / "work" / "shared" / "tinygrad-tests")
  subprocess.run(["git", "init", "-q", str(tmp_path / "ci" / "clone")], check=True)
  subprocess.run(["git", "-C", str(tmp_path / "ci" / "clone"), "remote", "add", "origin", str(tmp_path / "work" / "main")], check=True)
  assert ops.find_tests_dir(tmp_path / "ci" / "clone") == (tmp_path / "work" / "shared" / "tinygrad-tests").resolve()


def test_tests_dir_missing_says_how_to_point_at_it(tmp_path, monkeypatch):
  monkeypatch.setenv("TINYGRAD_TESTS_DIR", str(tmp_path / "nowhere"))
  with pytest.raises(LookupError, match="set TINYGRAD_TESTS_DIR"):
    ops.find_tests_dir()
  monkeypatch.delenv("TINYGRAD_TESTS_DIR")
  subprocess.run(["git", "init", "-q", str(tmp_path / "lone")], check=True)
  with pytest.raises(LookupError, match="next to the repository"):
    ops.find_tests_dir(tmp_path / "lone")


# ---- the suite itself

def _check(selection, name, per_test_timeout, timeout):
  _tests_dir()
  forward_only = bool(int(os.environ.get("FORWARD_ONLY", "0") or 0))
  run = ops.run_ops(selection, per_test_timeout=per_test_timeout, timeout=timeout, report=f"{name}-report.json")
  problems = ops.judge(run, ops.load_manifest(), selection, forward_only)
  print(f"test_ops on TINYTPU ({os.environ.get('TINYTPU_SIM', 'rtl')}{', FORWARD_ONLY' if forward_only else ''}): {ops.summary(run)}")
  assert not problems, f"{len(problems)} disagreements with {ops.MANIFEST.name}:\n" + "\n".join(problems)


def test_test_ops_smoke():
  _check(SMOKE, "smoke", per_test_timeout=600, timeout=1800)


@pytest.mark.nightly
@pytest.mark.long_job  # about 95 min of one core on the golden model: its own job, so shards balance
def test_test_ops_full():
  _check(None, "full", per_test_timeout=1200, timeout=8 * 3600)
