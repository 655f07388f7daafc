"""The Makefile's per-unit targets (README.md): every RTL environment test file is run by one."""
import re

from tinytpu.tools import ROOT


def unit_targets() -> dict[str, str]:
  """`make test-<unit>` -> its recipe (test and test-all run everything, so they do not count)."""
  text = (ROOT / "Makefile").read_text()
  return {m[1]: m[2] for m in re.finditer(r"^(test-[\w-]+):[^\n]*\n((?:\t[^\n]*\n)+)", text, re.M) if m[1] != "test-all"}


def test_every_rtl_test_file_has_a_unit_target():
  recipes = "".join(unit_targets().values())
  files = sorted(str(f.relative_to(ROOT)) for f in (ROOT / "tests" / "rtl").glob("test_*.py"))
  assert files and [f for f in files if f not in recipes] == []


def test_unit_targets_are_phony():
  phony = re.search(r"^\.PHONY:(.*)$", (ROOT / "Makefile").read_text(), re.M)[1].split()
  assert sorted(set(unit_targets()) - set(phony)) == []
