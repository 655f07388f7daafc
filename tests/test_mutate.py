"""Mutation testing of the RTL (tinytpu/mutate.py): candidate sites, deterministic choice, and one
real mutant through its unit environment, which must kill it (`make mutate` runs them all)."""
import pytest

from tinytpu import mutate, tools
from tinytpu.mutate import Mutant


def test_candidates_skip_comments_and_declarations(tmp_path):
  sv = tmp_path / "toy.sv"
  sv.write_text("module toy;\n  localparam int W = a + 1;\n  // x == y is a comment\n  assign e = a == b;  // keep && this\n"
                "  assign f = g && h;\n  for (int i = 0; i < N; i++) x[i] = 1'b0;\n  ASSERT(Ok, a == b)\n  if (x) begin\nendmodule\n")
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
  assert s["per_file"]["a.sv"] == {"killed": 1, "survived": 1, "stillborn": 0} and s["killed"] == 1 and s["score"] == 0.5


def test_a_real_mutant_is_killed():
  # the XLU's rotate computing c - k instead of c + k: its environment must fail
  line = next(i for i, t in enumerate((tools.RTL / "xlu.sv").read_text().splitlines(), 1) if "src[i] = {r, c + k};" in t)
  m = next(m for m in mutate.candidates(tools.RTL / "xlu.sv") if m.line == line and m.kind == "operator")
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


@pytest.mark.nightly
def test_mutation_score():
  # every mutant of every unit (about 50): the score the nightly reports (doc/mutation.md)
  ms = [mutate.run(m) for m in mutate.choose(list(mutate._units()), 5, 1)]
  s = mutate.summary(ms)
  survivors = [f"{m.name}: {m.before!r} -> {m.after!r}" for m in ms if m.status == "survived"]
  stillborn = sum(m.status == "stillborn" for m in ms)
  assert stillborn <= len(ms) // 4, f"{stillborn} of {len(ms)} mutants do not build: the operators need fixing, not the score"
  assert s["score"] is not None and s["score"] >= 0.95, "survivors:\n" + "\n".join(survivors)
