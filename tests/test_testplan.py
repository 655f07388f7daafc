"""The testplan (tb/testplan.toml, tinytpu/testplan.py, doc/testplan.md): every instruction, group and
trap code of the ISA table is in an entry, every test and coverpoint it names exists, statuses are
honest (a note for anything not covered), every spec anchor is a real heading, and the document is
what the generator writes. Then the checker itself: a copy of the plan with one defect of each kind
must give exactly the message for that defect. No simulation."""
import copy

import pytest

from tinytpu import isa, testplan, tools

pytestmark = pytest.mark.skipif(tools.CLONE is None, reason="the testplan lives in a clone (tb/, tests/, doc/)")


@pytest.fixture(scope="module")
def plan() -> list[dict]:
  return testplan.load()


def test_plan_has_no_defect(plan):
  problems = testplan.check(plan)
  assert not problems, "tb/testplan.toml:\n  " + "\n  ".join(problems)


def test_doc_is_what_the_generator_writes(plan):
  doc = (tools.CLONE / "doc" / "testplan.md").read_text()
  assert doc == testplan.render(plan), "doc/testplan.md is stale: run `python -m tinytpu.testplan`"


def test_summary_counts(plan):
  doc = testplan.render(plan)
  n = {s: sum(e["status"] == s for e in plan) for s in testplan.STATUSES}
  assert f"{len(plan)} features: {n['covered']} covered, {n['partial']} partial, {n['gap']} gap" in doc
  for e in plan:
    assert f"| {e['feature']} |" in doc
    if e["status"] != "covered":
      assert f"**{e['feature']}** ({e['status']})" in doc


# ---------------------------------------------------------------------------------------------
# the checker catches each defect: (mutation of a copy of the plan, the entry it names, a part of the message)
def entry(p: list[dict], feature: str) -> dict:
  return next(e for e in p if e["feature"] == feature)


def drop_group(p):
  e = entry(p, "MXU")
  e["instructions"] = []


def drop_trap(p):
  for e in p:
    e["traps"] = [t for t in e.get("traps", []) if t != "hbm_out_of_range"]


def drop_one_instruction(p):
  e = entry(p, "loop stack (4 deep, LBREAK, nesting rule, zero-overhead back edge)")
  e["instructions"] = ["LOOP", "LOOPI"]
  g = entry(p, "scalar and control")
  g["instructions"] = [f"{i.mnemonic}" for i in isa.INSTRS if i.group == "scalar and control" and i.mnemonic != "LBREAK"]


def setter(feature: str, field: str, value):
  def f(p):
    entry(p, feature)[field] = value
  return f


def adder(feature: str, field: str, value):
  def f(p):
    entry(p, feature)[field] = list(entry(p, feature).get(field, [])) + [value]
  return f


def remover(feature: str, field: str):
  def f(p):
    entry(p, feature).pop(field, None)
  return f


def duplicate(p):
  p.append(copy.deepcopy(entry(p, "XLU")))


DEFECTS = {
  # (a) instructions, groups, trap codes
  "instruction in no entry": (drop_one_instruction, None, "instruction LBREAK (scalar and control): in no entry"),
  "group in no entry": (drop_group, None, "instruction group MXU: no entry of its own"),
  "group instructions in no entry": (drop_group, None, "instruction MMUL (MXU): in no entry"),
  "trap code in no entry": (drop_trap, None, "trap code hbm_out_of_range: in no entry"),
  "unknown mnemonic": (adder("XLU", "instructions", "XFOO"), "XLU", "instruction 'XFOO' is not in the ISA table"),
  "unknown group": (adder("XLU", "instructions", "group:VPU: nothing"), "XLU", "instruction group 'VPU: nothing' is not a group"),
  "unknown trap code": (adder("trap: loop_stack", "traps", "loop_overflow"), "trap: loop_stack", "trap code 'loop_overflow' is not in"),
  # (b) tests
  "missing test function": (adder("XLU", "tests", "tests/test_cosim.py::test_xlu_no_such_test"), "XLU",
                            "no test function test_xlu_no_such_test in tests/test_cosim.py"),
  "missing test file": (adder("XLU", "tests", "tests/test_nothing_here.py::test_x"), "XLU", "no file tests/test_nothing_here.py"),
  "missing test class": (adder("XLU", "tests", "tests/test_cosim.py::TestNothing::test_x"), "XLU", "no test class TestNothing"),
  "helper is not a test": (adder("XLU", "tests", "tests/test_cosim.py::check"), "XLU", "no test function check in tests/test_cosim.py"),
  "malformed test id": (adder("XLU", "tests", "tests/test_cosim.py"), "XLU", "is not of the form <file>::<test>"),
  "missing tb test": (adder("XLU", "tests", "tb/xlu/tests.py::XluNothing"), "XLU", "no XluNothing in tb/xlu/tests.py"),
  "tb class that is no test": (adder("XLU", "tests", "tb/xlu/tests.py::XluTest"), "XLU", "is not a @pyuvm.test()/@cocotb.test()"),
  "test outside tests/ and tb/": (adder("XLU", "tests", "tinytpu/isa.py::check_table"), "XLU", "a test lives under tests/ (pytest) or tb/"),
  # (c) coverpoints
  "missing covergroup": (adder("XLU", "coverpoints", "xlu.no_such_group"), "XLU", "no cov.bins/cross/pairs('no_such_group', ...) in tb/xlu/"),
  "covergroup of another unit": (adder("XLU", "coverpoints", "xlu.fn_x_a"), "XLU", "no cov.bins/cross/pairs('fn_x_a', ...) in tb/xlu/"),
  "missing unit": (adder("XLU", "coverpoints", "nosuchunit.fn_x_a"), "XLU", "no testbench unit tb/nosuchunit/"),
  "malformed coverpoint": (adder("XLU", "coverpoints", "fn_x_a"), "XLU", "is not <unit>.<covergroup>"),
  "tag never emitted": (adder("XLU", "coverpoints", "randprog.tag:xlu_shuffle"), "XLU", "never emits an Op with that tag"),
  "prefixed tag never emitted": (adder("XLU", "coverpoints", "randprog.tag:far_xlu_nothing"), "XLU", "never emits an Op with that tag"),
  # (d) status and notes
  "unknown status": (setter("XLU", "status", "done"), "XLU", "status 'done' is none of covered, partial, gap"),
  "partial without a note": (remover("VPU: ternary", "note"), "VPU: ternary", "status partial without a `note`"),
  "blank note": (setter("retire trace and per-instruction lockstep", "note", "  "), "retire trace and per-instruction lockstep",
                             "status partial without a `note`"),
  "covered without coverpoint or note": (setter("XLU", "coverpoints", []), "XLU", "covered with no coverpoint"),
  "covered without a test": (setter("XLU", "tests", []), "XLU", "status covered with no test"),
  # (e) spec
  "missing document": (setter("XLU", "spec", "doc/nothing.md#XLU"), "XLU", "no document doc/nothing.md"),
  "spec outside doc/": (setter("XLU", "spec", "README.md"), "XLU", "no document README.md"),
  "missing heading": (adder("XLU", "spec", "doc/isa.md#XLU functions"), "XLU", "doc/isa.md has no heading 'XLU functions'"),
  # malformed entries
  "missing field": (remover("XLU", "status"), "XLU", "no `status` field"),
  "unknown field": (setter("XLU", "owner", "me"), "XLU", "unknown field `owner`"),
  "duplicate feature": (duplicate, "XLU", "a second entry of this feature"),
}


@pytest.mark.parametrize("name", list(DEFECTS))
def test_checker_catches_each_defect(plan, name):
  mutate, feature, want = DEFECTS[name]
  bad = copy.deepcopy(plan)
  mutate(bad)
  problems = testplan.check(bad)
  hits = [p for p in problems if want in p]
  assert hits, f"{name}: no message with {want!r}, got {problems}"
  if feature is not None:
    assert all(p.startswith(f"{feature}: ") for p in hits), hits
  # the defect and nothing else (a removed group also leaves its instructions unnamed)
  assert all(want in p or "in no entry" in p or "no entry of its own" in p for p in problems), problems


def test_a_good_synthetic_plan_passes_and_one_defect_fails(tmp_path):
  """A small tree of its own: a tb test that no tests/rtl/ runner runs is refused, one that a runner
  names in its testcase list is accepted, and generator tags are read from Op(...) calls."""
  (tmp_path / "doc").mkdir()
  (tmp_path / "doc" / "u.md").write_text("# Unit\n\n## The `u` unit\n")
  (tmp_path / "tb" / "u").mkdir(parents=True)
  (tmp_path / "tb" / "u" / "env.py").write_text("def define(cov):\n  cov.cross('g', [1], [2])\n")
  (tmp_path / "tb" / "u" / "tests.py").write_text("import pyuvm\n\n@pyuvm.test()\nclass URun: pass\n\n@pyuvm.test()\nclass UIdle: pass\n")
  (tmp_path / "tests" / "rtl").mkdir(parents=True)
  (tmp_path / "tests" / "rtl" / "test_u.py").write_text(
    "from tinytpu.tb import kit\n\ndef test_u():\n  kit.build_and_run('u', [], 'tinytpu.tb.u.tests', {}, testcase='URun')\n")
  (tmp_path / "tests" / "test_a.py").write_text("def test_a(): pass\n")
  (tmp_path / "tinytpu").mkdir()
  (tmp_path / "tinytpu" / "randprog.py").write_text(
    "W = {'delta': 2}\nNAMES = ['gamma']\n\ndef f(x, y):\n  x = x if x in ('beta',) else 'beta'\n  return [Op([1], 'alpha'), Op([2], 'pre_' + x), Op([3], y)]\n")
  e = {"feature": "all of it", "spec": ["doc/u.md#The u unit", "doc/u.md#the-u-unit"], "instructions": [f"group:{g}" for g in testplan.GROUPS],
       "traps": list(isa.TRAP_CODES), "tests": ["tests/test_a.py::test_a", "tb/u/tests.py::URun"],
       "coverpoints": ["u.g", "randprog.tag:alpha", "randprog.tag:pre_beta"], "status": "covered"}
  assert testplan.check([e], tmp_path) == []
  idle = dict(e, tests=e["tests"] + ["tb/u/tests.py::UIdle"])
  assert testplan.check([idle], tmp_path) == ["all of it: test 'tb/u/tests.py::UIdle': no runner in tests/rtl/ runs UIdle of tinytpu.tb.u.tests"]
  for t, ok in (("pre_beta", True), ("beta", True), ("delta", True), ("pre_gamma", False), ("gamma", False), ("pre_delta", False)):
    got = testplan.check([dict(e, coverpoints=["u.g", f"randprog.tag:{t}"])], tmp_path)
    assert got == ([] if ok else [f"all of it: coverpoint 'randprog.tag:{t}': the random generator ({', '.join(testplan.GENERATOR)}) "
                                  "never emits an Op with that tag"]), (t, got)


def test_command_line_check(capsys):
  assert testplan.main(["--check"]) == 0
  assert "no defect" in capsys.readouterr().out
