"""The testplan (tb/testplan.toml, doc/testplan.md): every feature of doc/isa.md mapped to the tests
that check it and the coverpoints that measure it, with an honest status.

  load(path) -> list[dict]          the plan's [[feature]] entries
  check(entries, root) -> [str]     every defect of a plan, one message each naming the entry
  render(entries) -> str            doc/testplan.md (prose and the summary table)

  python -m tinytpu.testplan          writes doc/testplan.md from tb/testplan.toml
  python -m tinytpu.testplan --check  prints the plan's defects (exit 1 if any)

Everything is read statically (tomllib, ast, the doc's headings): no simulator, no import of the
test modules. Standard library and tinytpu.isa only."""
from __future__ import annotations

import argparse
import ast
import functools
import pathlib
import re
import sys
import tomllib

from tinytpu import isa, tools

STATUSES = ("covered", "partial", "gap")
FIELDS = ("feature", "spec", "instructions", "traps", "tests", "coverpoints", "status", "note")
REQUIRED = ("feature", "spec", "tests", "coverpoints", "status")
GROUPS = tuple(dict.fromkeys(i.group for i in isa.INSTRS))
# covergroups of a unit defined outside tb/<unit>/: the core's, filled from the RTL's retire trace
EXTRA_COVER = {"core": ("tinytpu/corecov.py",)}
# the modules of the random program generator whose Op(...) tags `randprog.tag:<tag>` may name
GENERATOR = ("tinytpu/randprog.py", "tinytpu/randdma.py", "tinytpu/randreach.py", "tinytpu/randemb.py")
COVER_CALLS = ("bins", "cross", "pairs")   # tb/kit/coverage.py: the calls that create a covergroup
TB_DECORATORS = ("pyuvm.test", "cocotb.test")


def root() -> pathlib.Path:
  """The clone the plan lives in (tests/, tb/ and doc/ are not part of a wheel)."""
  if tools.CLONE is None:
    raise RuntimeError("the testplan needs a clone of the repository (tb/, tests/, doc/)")
  return tools.CLONE


def load(path: pathlib.Path | str | None = None) -> list[dict]:
  path = pathlib.Path(path) if path is not None else root() / "tb" / "testplan.toml"
  with open(path, "rb") as f:
    return tomllib.load(f).get("feature", [])


def as_list(x) -> list:
  return [] if x is None else [x] if isinstance(x, str) else list(x)


def expand(entry: dict) -> list[str]:
  """The mnemonics an entry names (a `group:<name>` item stands for every instruction of that group)."""
  out = []
  for x in as_list(entry.get("instructions")):
    if x.startswith("group:"):
      out += [i.mnemonic for i in isa.INSTRS if i.group == x[len("group:"):]]
    else:
      out.append(x)
  return out


# ---------------------------------------------------------------------------------------------
# what exists: read from the sources (cached: a check reads each file once per process)
@functools.lru_cache(maxsize=None)
def _tree(path: pathlib.Path) -> ast.Module | None:
  try:
    return ast.parse(path.read_text(), filename=str(path))
  except (OSError, SyntaxError):
    return None


def _decorated(node, names: tuple[str, ...]) -> bool:
  for d in node.decorator_list:
    f = d.func if isinstance(d, ast.Call) else d
    if ast.unparse(f) in names: return True
  return False


@functools.lru_cache(maxsize=None)
def ref_problem(ref: str, base: pathlib.Path) -> str | None:
  """Why a test reference does not name a test that exists, or None. `tests/<...>/test_x.py::test_y`
  (or `::TestClass::test_y`) is a pytest node id (a parametrised id `[...]` is allowed);
  `tb/<unit>/<module>.py::Name` a cocotb/pyuvm test (a class or function with @pyuvm.test() or
  @cocotb.test()) that a runner in tests/rtl/ runs."""
  path, sep, name = ref.partition("::")
  if not sep or not name:
    return f"test {ref!r} is not of the form <file>::<test>"
  name = name.split("[", 1)[0]
  f = base / path
  if not f.is_file():
    return f"test {ref!r}: no file {path}"
  tree = _tree(f)
  if tree is None:
    return f"test {ref!r}: {path} does not parse"
  parts = name.split("::")
  if path.startswith("tests/"):
    if not pathlib.PurePath(path).name.startswith("test_"):
      return f"test {ref!r}: pytest does not collect {path} (not test_*.py)"
    scope = tree.body
    for i, p in enumerate(parts):
      last = i == len(parts) - 1
      kinds = (ast.FunctionDef, ast.AsyncFunctionDef) if last else (ast.ClassDef,)
      node = next((n for n in scope if isinstance(n, kinds) and n.name == p), None)
      if node is None or (last and not p.startswith("test")) or (not last and not p.startswith("Test")):
        return f"test {ref!r}: no test {'function' if last else 'class'} {p} in {path}"
      scope = node.body
    return None
  if path.startswith("tb/"):
    node = next((n for n in tree.body if isinstance(n, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and n.name == name), None)
    if node is None:
      return f"test {ref!r}: no {name} in {path}"
    if not _decorated(node, TB_DECORATORS):
      return f"test {ref!r}: {name} in {path} is not a @pyuvm.test()/@cocotb.test()"
    module = "tinytpu." + ".".join(pathlib.PurePath(path).with_suffix("").parts)
    if not _runs(base, module, name):
      return f"test {ref!r}: no runner in tests/rtl/ runs {name} of {module}"
    return None
  return f"test {ref!r}: a test lives under tests/ (pytest) or tb/ (cocotb)"


@functools.lru_cache(maxsize=None)
def _runs(base: pathlib.Path, module: str, name: str) -> bool:
  """A tests/rtl/*.py calls kit.build_and_run with the module and either no testcase (every test
  of the module runs) or a testcase list naming `name` (a string constant of that file)."""
  for f in sorted((base / "tests" / "rtl").glob("test_*.py")):
    tree = _tree(f)
    if tree is None: continue
    consts = {c.value for c in ast.walk(tree) if isinstance(c, ast.Constant) and isinstance(c.value, str)}
    for call in ast.walk(tree):
      if not (isinstance(call, ast.Call) and ast.unparse(call.func).endswith("build_and_run")): continue
      args = [a.value for a in call.args if isinstance(a, ast.Constant)]
      if module not in args: continue
      kw = {k.arg: k.value for k in call.keywords}
      tc = call.args[4] if len(call.args) > 4 else kw.get("testcase")
      if tc is None or isinstance(tc, ast.Constant) and tc.value is None: return True
      pool = {tc.value} if isinstance(tc, ast.Constant) else consts
      if any(name in str(s).split(",") for s in pool): return True
  return False


@functools.lru_cache(maxsize=None)
def covergroups(base: pathlib.Path, unit: str) -> frozenset[str]:
  """The covergroup names created in tb/<unit>/ (and a unit's EXTRA_COVER modules): the first
  argument of every cov.bins/cross/pairs(...)."""
  out = set()
  for f in sorted((base / "tb" / unit).rglob("*.py")) + [base / x for x in EXTRA_COVER.get(unit, ())]:
    tree = _tree(f)
    if tree is None: continue
    for c in ast.walk(tree):
      if isinstance(c, ast.Call) and isinstance(c.func, ast.Attribute) and c.func.attr in COVER_CALLS and c.args \
         and isinstance(c.args[0], ast.Constant) and isinstance(c.args[0].value, str):
        out.add(c.args[0].value)
  return frozenset(out)


def _strings(node) -> set[str]:
  return {c.value for c in ast.walk(node) if isinstance(c, ast.Constant) and isinstance(c.value, str)}


@functools.lru_cache(maxsize=None)
def generator_tags(base: pathlib.Path) -> tuple[frozenset[str], tuple[tuple[str, frozenset[str]], ...]]:
  """(literal tags, (prefix, names) rules) of the Op(words, tag) calls of the random generator. A
  string constant (or either branch of `a if c else b`) is a literal tag. `"<prefix>" + x` makes the
  rule (prefix, the string constants of the enclosing function: the values x is chosen from or
  compared with); a bare variable the rule ("", those constants plus the keys of the generator's
  weight tables, dict literals of numbers, from which the item families are drawn)."""
  lits: set[str] = set()
  rules: list[tuple[str, frozenset[str]]] = []
  weights: set[str] = set()
  trees = [t for p in GENERATOR if (t := _tree(base / p)) is not None]
  for tree in trees:
    for d in ast.walk(tree):
      if isinstance(d, ast.Dict) and d.values and all(isinstance(v, ast.Constant) and isinstance(v.value, (int, float)) for v in d.values):
        weights |= {k.value for k in d.keys if isinstance(k, ast.Constant) and isinstance(k.value, str)}
  def tag(n, fn_consts: set[str]):
    if isinstance(n, ast.Constant) and isinstance(n.value, str): lits.add(n.value)
    elif isinstance(n, ast.IfExp): tag(n.body, fn_consts); tag(n.orelse, fn_consts)
    elif isinstance(n, ast.BinOp) and isinstance(n.op, ast.Add) and isinstance(n.left, ast.Constant) and isinstance(n.left.value, str):
      rules.append((n.left.value, frozenset(fn_consts)))
    elif isinstance(n, ast.Name): rules.append(("", frozenset(fn_consts | weights)))
  for tree in trees:
    for fn in ast.walk(tree):
      if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)): continue
      consts = _strings(fn)
      for c in ast.walk(fn):
        if isinstance(c, ast.Call) and isinstance(c.func, ast.Name) and c.func.id == "Op":
          for a in c.args[1:2] + [k.value for k in c.keywords if k.arg == "tag"]: tag(a, consts)
  return frozenset(lits), tuple(rules)


@functools.lru_cache(maxsize=None)
def tag_exists(base: pathlib.Path, t: str) -> bool:
  lits, rules = generator_tags(base)
  return t in lits or any(t.startswith(p) and t[len(p):] in names for p, names in rules)


@functools.lru_cache(maxsize=None)
def headings(path: pathlib.Path) -> frozenset[str]:
  """A Markdown file's heading texts, backticks dropped, and their GitHub-style anchors."""
  out = set()
  for line in path.read_text().splitlines():
    if m := re.match(r"#{1,6}\s+(.*?)\s*#*\s*$", line):
      text = m.group(1).replace("`", "")
      out |= {text, re.sub(r"[^\w\- ]", "", text.lower()).replace(" ", "-")}
  return frozenset(out)


@functools.lru_cache(maxsize=None)
def spec_problem(spec: str, base: pathlib.Path) -> str | None:
  doc, _, anchor = spec.partition("#")
  f = base / doc
  if not doc.startswith("doc/") or not f.is_file():
    return f"spec {spec!r}: no document {doc}"
  if anchor and anchor.replace("`", "") not in headings(f):
    return f"spec {spec!r}: {doc} has no heading {anchor!r}"
  return None


# ---------------------------------------------------------------------------------------------
def check(entries: list[dict], base: pathlib.Path | None = None) -> list[str]:
  """Every defect of a plan: (a) an instruction of isa.INSTRS, a group of the ISA table (as
  `group:<name>`) or a trap code of isa.TRAP_CODES in no entry (or an entry naming one that does not
  exist), (b) a test that does not exist, (c) a
  coverpoint no tb/<unit>/ creates or a generator tag never emitted, (d) a status outside
  STATUSES, a partial/gap entry without a note, a covered entry with no coverpoint and no note
  saying why, a partial/covered one without tests, (e) a spec naming a missing document or
  heading; plus malformed entries (missing or unknown fields, duplicate feature names)."""
  base = base or root()
  out: list[str] = []
  seen_features: set[str] = set()
  for k, e in enumerate(entries):
    name = e.get("feature") or f"entry {k + 1}"
    say = lambda why, name=name: out.append(f"{name}: {why}")
    for f in REQUIRED:
      if f not in e: say(f"no `{f}` field")
    for f in e:
      if f not in FIELDS: say(f"unknown field `{f}` (fields: {', '.join(FIELDS)})")
    if name in seen_features: say("a second entry of this feature")
    seen_features.add(name)
    # (d) status and note
    st, note = e.get("status"), str(e.get("note") or "").strip()
    if st is None:
      pass  # reported above
    elif st not in STATUSES:
      say(f"status {st!r} is none of {', '.join(STATUSES)}")
    elif st != "covered" and not note:
      say(f"status {st} without a `note` saying what is missing")
    if st == "covered" and not as_list(e.get("coverpoints")) and not note:
      say("covered with no coverpoint: name one, or say in `note` what enumerates the cases")
    if st in ("covered", "partial") and not as_list(e.get("tests")):
      say(f"status {st} with no test")
    # instructions and traps
    for x in as_list(e.get("instructions")):
      if x.startswith("group:"):
        if x[len("group:"):] not in GROUPS: say(f"instruction group {x[6:]!r} is not a group of the ISA table ({'; '.join(GROUPS)})")
      elif x not in isa.BY_MNEMONIC:
        say(f"instruction {x!r} is not in the ISA table")
    for t in as_list(e.get("traps")):
      if t not in isa.TRAP_CODES: say(f"trap code {t!r} is not in isa.TRAP_CODES")
    # (e) spec, (b) tests, (c) coverpoints
    for s in as_list(e.get("spec")):
      if (why := spec_problem(s, base)): say(why)
    for t in as_list(e.get("tests")):
      if (why := ref_problem(t, base)): say(why)
    for c in as_list(e.get("coverpoints")):
      if c.startswith("randprog.tag:"):
        if not tag_exists(base, c[len("randprog.tag:"):]):
          say(f"coverpoint {c!r}: the random generator ({', '.join(GENERATOR)}) never emits an Op with that tag")
        continue
      unit, dot, group = c.partition(".")
      if not dot or not unit or not group:
        say(f"coverpoint {c!r} is not <unit>.<covergroup> or randprog.tag:<tag>")
      elif not (base / "tb" / unit).is_dir():
        say(f"coverpoint {c!r}: no testbench unit tb/{unit}/")
      elif group not in covergroups(base, unit):
        say(f"coverpoint {c!r}: no cov.bins/cross/pairs({group!r}, ...) in tb/{unit}/")
  # (a) every instruction and every trap code in some entry
  named = {m for e in entries for m in expand(e)}
  for i in isa.INSTRS:
    if i.mnemonic not in named: out.append(f"instruction {i.mnemonic} ({i.group}): in no entry of the plan")
  own = {x[len("group:"):] for e in entries for x in as_list(e.get("instructions")) if x.startswith("group:")}
  for g in GROUPS:
    if g not in own: out.append(f"instruction group {g}: no entry of its own (instructions = [\"group:{g}\"])")
  traps = {t for e in entries for t in as_list(e.get("traps"))}
  for t in isa.TRAP_CODES:
    if t not in traps: out.append(f"trap code {t}: in no entry of the plan")
  return out


# ---------------------------------------------------------------------------------------------
INTRO = """\
# Testplan

`tb/testplan.toml` maps every feature of the ISA (`doc/isa.md`) and the cross-cutting behaviour
around it to the tests that check it and the coverpoints that measure it. `tests/test_testplan.py`
(no simulation, part of `make test`) keeps it true: it fails when

- an instruction of the ISA table (`tinytpu/isa.py`, `isa.INSTRS`) or a trap code
  (`isa.TRAP_CODES`) is in no entry, or an entry names one that does not exist;
- a referenced test does not exist: `tests/<...>/test_x.py::test_y` must be a test function of
  that file (read with `ast`), `tb/<unit>/<module>.py::Name` a `@pyuvm.test()`/`@cocotb.test()`
  class or function that a runner in `tests/rtl/` runs (its `kit.build_and_run` call takes the
  module with no `testcase`, or with a list naming the test);
- a referenced coverpoint is not created: `<unit>.<covergroup>` needs a
  `cov.bins/cross/pairs("<covergroup>", ...)` call in `tb/<unit>/`; `randprog.tag:<tag>` needs an
  `Op(words, "<tag>")` in the random generator (`tinytpu/randprog.py`, `randdma.py`,
  `randreach.py`; a tag built as `"prefix" + x` counts when the rest is a string constant of the
  function that builds it, a tag that is a variable when it is one of that function's constants or
  an item family of the generator's weight tables);
- a `status` is not `covered`, `partial` or `gap`, a partial or gap entry has no `note`, a covered
  entry has neither a coverpoint nor a note saying what enumerates its cases;
- a `spec` names a document that does not exist, or a heading that document lacks;
- this file differs from what `python -m tinytpu.testplan` writes.

A second test feeds the checker a copy of the plan with one defect of each kind and requires the
matching message, so a check that cannot fail is caught.

## Status

- **covered**: every instruction or case of the feature is checked against the golden model (or
  the spec) at every level it has (golden model, unit testbench, co-simulated core), and its cases
  are counted by a coverpoint or enumerated by a test (named in the note).
- **partial**: tests exist, and the note says exactly what is missing (a level, a case, a
  coverpoint).
- **gap**: nothing checks the RTL yet; the note says what is missing and what is under way.

Coverpoints of the random generator (`randprog.tag:`) count what the generator emits (its item
families), not what retired; `tests/test_random.py` checks the emitted mix. A core covergroup fed
from the retire trace (issue 14 item 6) does not exist yet: the entries that need it say so. The
tag check reads the generator statically: it refuses a tag the generator's code cannot build, but
may accept a combination it never builds (`far_` and any string constant of `far_item`).

## Adding a feature

1. Add a `[[feature]]` entry to `tb/testplan.toml`:

   ```toml
   [[feature]]
   feature = "what it is"
   spec = "doc/isa.md#Heading"                 # or a list; the heading text as written
   instructions = ["MNEMONIC", "group:XLU"]    # optional: mnemonics, or every one of a group
   traps = ["trap_code"]                       # optional: the trap codes it raises
   tests = ["tests/test_x.py::test_y", "tb/vpu/tests.py::VpuRandom"]
   coverpoints = ["vpu.fn_x_a", "randprog.tag:vpu"]
   status = "partial"                          # covered | partial | gap
   note = "what exactly is missing"            # required unless covered
   ```

   A new instruction goes into the ISA table first (doc/isa.md §Adding an instruction); if it
   starts a new group, give the group an entry, otherwise its group's entry picks it up.
2. Run `python -m tinytpu.testplan` to rewrite this file, then
   `pytest tests/test_testplan.py`.

## Summary

"""


def render(entries: list[dict]) -> str:
  counts = {s: sum(e.get("status") == s for e in entries) for s in STATUSES}
  lines = [INTRO.rstrip("\n"), "",
           f"{len(entries)} features: {counts['covered']} covered, {counts['partial']} partial, {counts['gap']} gap "
           "(generated by `python -m tinytpu.testplan` from `tb/testplan.toml`).", "",
           "| feature | spec | status | tests | coverpoints |", "|---|---|---|---|---|"]
  cell = lambda s: s.replace("|", "\\|")
  for e in entries:
    cps = as_list(e.get("coverpoints"))
    spec = ", ".join(f"`{s}`" for s in as_list(e.get("spec")))
    lines.append(f"| {cell(e.get('feature', ''))} | {cell(spec)} | {e.get('status', '')} | {len(as_list(e.get('tests')))} | "
                 f"{cell(', '.join(f'`{c}`' for c in cps)) if cps else '-'} |")
  todo = [e for e in entries if e.get("status") != "covered"]
  if todo:
    lines += ["", "## What is missing", ""]
    for e in todo:
      lines.append(f"- **{e.get('feature')}** ({e.get('status')}): {' '.join(str(e.get('note', '')).split())}")
  return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
  ap = argparse.ArgumentParser(prog="python -m tinytpu.testplan", description="write doc/testplan.md from tb/testplan.toml")
  ap.add_argument("--check", action="store_true", help="print the plan's defects instead (exit 1 if any)")
  ap.add_argument("--plan", default=None, help="the plan (default tb/testplan.toml)")
  a = ap.parse_args(argv)
  entries = load(a.plan)
  if a.check:
    problems = check(entries)
    print("\n".join(problems) if problems else f"testplan: {len(entries)} features, no defect")
    return 1 if problems else 0
  out = root() / "doc" / "testplan.md"
  out.write_text(render(entries))
  print(f"wrote {out.relative_to(root())}")
  return 0


if __name__ == "__main__":
  sys.exit(main())
