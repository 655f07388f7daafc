"""Mutation testing of the RTL (tinytpu/mutate.py): candidate sites, deterministic choice, and one
real mutant through its unit environment, which must kill it (`make mutate` runs them all)."""
import json
import os

import pytest

from tinytpu import mutate, tools
from tinytpu.mutate import Mutant


def test_candidates_skip_comments_and_declarations(tmp_path):
  sv = tmp_path / "toy.sv"
  sv.write_text("module toy;\n  localparam int W = a + 1;\n  // x == y is a comment\n  assign e = a == b;  // keep && this\n"
                "  assign f = g && h;\n  for (int i = 0; i < N; i++) x[i] = 1'b0;\n  ASSERT(Ok, a == b)\n  if (x) begin\n"
                "  `ASSERT(Two, a |-> b == c\n      && d == e)\nendmodule\n")  # an assertion's second line
  got = {(m.line, m.kind, m.after) for m in mutate.candidates(sv)}
  assert got == {(4, "comparison", "assign e = a != b;  // keep && this"), (5, "condition", "assign f = g || h;"),
                 (8, "condition", "if (!(x)) begin")}


def test_choice_is_deterministic_and_spread():
  a, b = mutate.choose(list(mutate._units()), 5, 1), mutate.choose(list(mutate._units()), 5, 1)
  assert [m.name for m in a] == [m.name for m in b]
  assert len(a) >= 40 and {m.file for m in a} == set(mutate._units())
  assert all(len({m.line for m in a if m.file == f}) == sum(m.file == f for m in a) for f in mutate._units())  # one per line


def test_summary_counts_per_file():
  ms = [Mutant("a.sv", 1, "comparison", "x", "y", "killed"), Mutant("a.sv", 2, "constant", "x", "y", "survived"),
        Mutant("b.sv", 3, "operator", "x", "y", "stillborn")]
  s = mutate.summary(ms)
  assert s["per_file"]["a.sv"] == {"killed": 1, "survived": 1, "equivalent": 0, "stillborn": 0} and s["killed"] == 1 and s["score"] == 0.5


# a handful of real mutants in make test (the nightly runs every file's five): each environment must fail
REAL = [("xlu.sv", "src[i] = {r, c + k};", "operator"),             # the rotate computes c - k
        ("mxu.sv", "assign last_read   = (issue_c && cmd_t_i", "condition"),  # vdone_o pulses without an issue
        ("psum.sv", None, None),                                    # the nightly's first psum mutant
        ("hbm_arb.sv", "last_q <= 1'b0;", "constant")]              # the first conflict after reset goes to requester 0


@pytest.mark.parametrize("file,text,kind", REAL, ids=[f for f, _, _ in REAL])
def test_a_real_mutant_is_killed(file, text, kind):
  if text is None:
    m = mutate.choose([file], 1, 1)[0]
  else:
    line = next(i for i, t in enumerate((tools.RTL / file).read_text().splitlines(), 1) if text in t)
    m = next(m for m in mutate.candidates(tools.RTL / file) if m.line == line and m.kind == kind)
  assert mutate.run(m).status == "killed", m


def test_a_mutant_that_does_not_build_is_stillborn_not_killed():
  # the kit raises AssertionError for a failed build too: that must not count as a kill
  line = next(i for i, t in enumerate((tools.RTL / "xlu.sv").read_text().splitlines(), 1) if "src[i] = {r, c + k};" in t)
  m = next(m for m in mutate.candidates(tools.RTL / "xlu.sv") if m.line == line and m.kind == "operator")
  m.after = m.before.replace("c + k", "c + + ;")  # not SystemVerilog
  assert mutate.run(m).status == "stillborn", m


def test_unknown_file_is_refused(capsys):
  assert mutate.main(["--files", "nope.sv", "--list"]) == 2
  assert "no unit environment for nope.sv" in capsys.readouterr().err


def test_equivalent_mutants_name_lines_that_exist():
  # a listed equivalent whose line the RTL no longer has would never match: drop or update it
  for (file, before, after), why in mutate.EQUIVALENT.items():
    assert any(m.before == before and m.after == after for m in mutate.candidates(tools.RTL / file)), (file, before, why)


def test_score_leaves_out_equivalent_survivors(tmp_path):
  (file, before, after), _ = next(iter(mutate.EQUIVALENT.items()))
  ms = [Mutant(file, 1, "comparison", before, after, "survived"), Mutant("a.sv", 2, "constant", "x", "y", "killed"),
        Mutant("a.sv", 3, "constant", "x", "z", "survived")]
  s = mutate.summary(ms)
  assert (s["killed"], s["survived"], s["equivalent"], s["score"]) == (1, 2, 1, 0.5)
  doc = json.loads(mutate.write_document(ms, tmp_path).read_text())
  assert doc["kind"] == "mutation" and [m["equivalent"] is not None for m in doc["mutants"]] == [True, False, False]


def test_kill_detail_is_the_message_not_a_source_line():
  traceback = ["    def build_and_run(...):", '>     fired = [l.strip() for l in text.splitlines() if "ASSERT FAILED" in l]',
               "E   AssertionError: noc_ep hbm: 1 of 3 cocotb tests failed: EpMalformed",
               "E     assertion: [35] %Error: noc_hbm_ep.sv:83: Assertion failed in TOP.x: ASSERT FAILED NoDrop: ...",
               "FAILED tests/rtl/test_noc_ep.py::test_noc_ep[noc_hbm_ep] - AssertionError: noc_ep hbm: 1 of 3 ..."]
  assert mutate.kill_detail(traceback).startswith("E     assertion: [35] %Error: noc_hbm_ep.sv:83")
  assert mutate.kill_detail(traceback[:3] + traceback[4:]) == "E   AssertionError: noc_ep hbm: 1 of 3 cocotb tests failed: EpMalformed"
  assert mutate.kill_detail(traceback[:2] + traceback[4:]).startswith("FAILED tests/rtl/test_noc_ep.py")
  assert mutate.kill_detail(["seed 910003 (N4_V1024_P64_I4096): RTL != golden", "  vmem[3] differs"]).startswith("seed 910003")
  assert mutate.kill_detail(["x", "last"]) == "last" and mutate.kill_detail([]) == ""


def test_verdict_names_survivors_stillborn_and_wrong_equivalents():
  (file, before, after), _ = next(iter(mutate.EQUIVALENT.items()))
  ok = [Mutant(file, 1, "comparison", before, after, "survived"), Mutant("a.sv", 2, "constant", "x", "y", "killed")]
  assert mutate.verdict(ok) == []
  bad = mutate.verdict(ok + [Mutant("a.sv", 3, "constant", "x", "z", "survived")])
  assert len(bad) == 1 and bad[0].startswith("survivors") and "a.sv:3:constant: 'x' -> 'z'" in bad[0]
  wrong = mutate.verdict([Mutant(file, 1, "comparison", before, after, "killed", detail="ASSERT FAILED X")])
  assert len(wrong) == 1 and "listed in mutate.EQUIVALENT" in wrong[0] and "ASSERT FAILED X" in wrong[0]
  born = mutate.verdict([Mutant("a.sv", i, "constant", "x", "y", "stillborn") for i in range(2)] + ok)
  assert len(born) == 1 and born[0].startswith("2 of 4 mutants do not build")


@pytest.mark.nightly
@pytest.mark.parametrize("file", sorted(mutate._units()))
def test_mutants_of(file):
  # the nightly's mutants (doc/mutation.md), one job per RTL file: each must be killed unless it is a
  # listed equivalent; the document lets the report add up the score over every file
  ms = []
  for m in mutate.choose([file], 5, 1):
    ms.append(mutate.run(m))
    print(f"{m.status:9s} {m.name:32s} {m.seconds:6.1f}s  {m.before!r} -> {m.after!r}" + (f"  ({m.detail})" if m.detail else ""))
  if os.environ.get("TINYTPU_COVERAGE_DIR"):
    mutate.write_document(ms, os.environ["TINYTPU_COVERAGE_DIR"])
  assert not (bad := mutate.verdict(ms)), "\n".join(bad)


@pytest.mark.parametrize("file", ["noc_core_ep.sv", "noc_hbm_ep.sv", "noc_sc_ep.sv", "chip.sv"])
def test_chip_files_run_their_unit_env_first(file, monkeypatch, tmp_path):
  """An endpoint's mutant meets its own env (tests/rtl/test_noc_ep.py, only its tests) before the chip
  tests; chip.sv runs the chip tests only; a child exit code other than 0/1 is the harness's error."""
  import subprocess
  seen = []
  monkeypatch.setattr(subprocess, "run", lambda cmd, **kw: seen.append(cmd) or subprocess.CompletedProcess(cmd, 0, "", ""))
  m = mutate.Mutant(file, 1, "condition", "a", "b")
  mutate._run_cosim(m, tmp_path, chip=True)
  tails = [c[c.index("no:cacheprovider") + 1:] for c in seen]
  ep = [["-m", "not nightly", "-k", file.removesuffix(".sv"), "tests/rtl/test_noc_ep.py"]] if file != "chip.sv" else []
  assert tails == ep + mutate.CHIP_TESTS and m.status == "survived"
  monkeypatch.setattr(subprocess, "run", lambda cmd, **kw: subprocess.CompletedProcess(cmd, 5, "no tests ran", ""))
  with pytest.raises(RuntimeError, match="exited 5"):
    mutate._run_cosim(m, tmp_path, chip=True)
