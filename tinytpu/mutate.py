"""`make mutate` / `python -m tinytpu mutate`: mutation testing of the RTL. Each mutant is one small
change to one RTL file (a comparison, an operator, a constant or a condition), written into a copy
of rtl/ under build/mutants/; the unit's pyuvm environment is built from the copy and run. A mutant
the environment fails is killed; one it passes survived (a hole in the tests, or an equivalent
mutant: doc/mutation.md gives each survivor its reason); one that does not build is stillborn and
not counted. Mutants are chosen deterministically from every candidate site (the same list for the
same RTL and seed), spread over the units.

  python -m tinytpu mutate [--per-file K] [--files vmem.sv,xlu.sv] [--seed S] [--list] [--json out.json]"""
from __future__ import annotations

import argparse
import dataclasses
import json
import random
import re
import shutil
import sys
import time

from tinytpu import tools

# (pattern, replacement, kind): applied to one occurrence in the code part of a line
OPERATORS = [
  (r" == ", " != ", "comparison"), (r" != ", " == ", "comparison"),
  (r" < ", " <= ", "comparison"), (r" > ", " >= ", "comparison"), (r" >= ", " > ", "comparison"),
  (r" && ", " || ", "condition"), (r" \|\| ", " && ", "condition"),
  (r" \+ ", " - ", "operator"), (r" - ", " + ", "operator"), (r" & ", " | ", "operator"), (r" \| ", " & ", "operator"),
  (r"1'b1", "1'b0", "constant"), (r"1'b0", "1'b1", "constant"),
  (r"\bif \((.+)\)(\s*(begin)?\s*)$", r"if (!(\1))\2", "condition"),
]
# lines never mutated: declarations, parameters, assertions, messages (a change there tests nothing),
# and the logic only assertions read, between `// assertion support: begin` and `// assertion support: end`
SKIP = re.compile(r"^\s*(localparam|parameter|typedef|input|output|import|module|`|assert|ASSERT|\$|case|default|for \()|\bASSERT|\$display|\$error|\$fatal")
SUPPORT = re.compile(r"//\s*assertion support: (begin|end)")

# RTL file -> how its unit environment runs (top, sources by name, test module, params, testcase, env)
def _units() -> dict[str, tuple]:
  from tinytpu.tb.vpu import sources as vpu_sources
  core = sorted(p.name for p in tools.RTL.glob("*.sv") if p.name != "tinytpu_pkg.sv")
  mem = lambda u, p: (u, [f"{u}.sv"], "tinytpu.tb.mem.tests", p, None, {"TINYTPU_UNIT": u})  # noqa: E731
  mxu = ("mxu_tb", ["fp32_pkg.sv", "mxu_pe.sv", "mxu_array.sv", "mxu.sv", "vmem.sv", "psum.sv", str(tools.ROOT / "tb/mxu/mxu_tb.sv")],
         "tinytpu.tb.mxu.tests", {"N": 4, "VMEM_TILES": 256, "PSUM_TILES": 256}, "MxuDirected,MxuWeightSwap,MxuRandom,MxuGemm,MxuTrace", None)
  vpu = ("vpu", [p.name if p.parent == tools.RTL else str(p) for p in vpu_sources()], "tinytpu.tb.vpu.tests", {"N": 4, "TAG_W": 8}, None, None)
  corerun = ("tensorcore", core, "tinytpu.tb.core.tests", {"N": 4, "VMEM_TILES": 64, "PSUM_TILES": 8, "IMEM_WORDS": 256}, "CorePrograms", None)
  return {"sxu.sv": corerun, "tensorcore.sv": corerun, "mxu.sv": mxu, "mxu_array.sv": mxu, "mxu_pe.sv": mxu, "vpu.sv": vpu,
          "fp32_pkg.sv": vpu, "xlu.sv": ("xlu", ["xlu.sv"], "tinytpu.tb.xlu.tests", {"N": 4, "TAG_W": 8}, None, None),
          "vmem.sv": mem("vmem", {"N": 4, "TILES": 1024}), "psum.sv": mem("psum", {"N": 4, "TILES": 64}), "vrf.sv": mem("vrf", {"N": 4})}


@dataclasses.dataclass
class Mutant:
  file: str
  line: int          # 1-based
  kind: str
  before: str
  after: str
  status: str = "pending"  # killed / survived / stillborn
  seconds: float = 0.0
  detail: str = ""

  @property
  def name(self) -> str:
    return f"{self.file}:{self.line}:{self.kind}"


def candidates(path) -> list[Mutant]:
  """Every (line, operator) site of one RTL file, in file order."""
  out, support = [], False
  for i, text in enumerate(path.read_text().splitlines(), 1):
    code = text.split("//")[0]
    if (m := SUPPORT.search(text)):
      support = m[1] == "begin"
    if not code.strip() or SKIP.search(code) or support:
      continue
    for pat, rep, kind in OPERATORS:
      if (m := re.search(pat, code)) is not None:
        new = code[:m.start()] + re.sub(pat, rep, code[m.start():], count=1) + text[len(code):]
        out.append(Mutant(path.name, i, kind, text.strip(), new.strip()))
  return out


def choose(files: list[str], per_file: int, seed: int) -> list[Mutant]:
  picked = []
  for f in files:
    c = candidates(tools.RTL / f)
    random.Random(f"{seed}:{f}").shuffle(c)
    by_line = {}
    for m in c:  # one mutant per line, so K mutants reach K places
      by_line.setdefault(m.line, m)
    picked += list(by_line.values())[:per_file]
  return picked


def run(m: Mutant) -> Mutant:
  """Build the mutant's unit from a mutated copy of rtl/ and run its environment."""
  from tinytpu.tb import kit
  top, sources, module, params, testcase, env = _units()[m.file]
  d = tools.BUILD / "mutants" / m.name.replace(":", "_")
  if d.exists():
    shutil.rmtree(d)
  d.mkdir(parents=True)
  for p in tools.RTL.glob("*.sv"):
    shutil.copy(p, d / p.name)
  lines = (d / m.file).read_text().splitlines()
  assert lines[m.line - 1].strip() == m.before, f"{m.name}: the RTL changed under the mutant"
  lines[m.line - 1] = lines[m.line - 1].replace(m.before, m.after)
  (d / m.file).write_text("\n".join(lines) + "\n")
  srcs = [s if "/" in s else d / s for s in sources]
  t0 = time.monotonic()
  try:
    kit.build_and_run(top, srcs, module, params, testcase=testcase, extra_env=env)
    m.status = "survived"
  except AssertionError as e:  # the kit reports a failed build and a failed environment alike
    first = str(e).splitlines()[0] if str(e) else ""
    m.status = "stillborn" if first.startswith("Verilator build of") else "killed"  # a mutant that does not build is no design
    m.detail = first[:200]
  finally:  # any other exception is the harness's own failure: it propagates
    m.seconds = time.monotonic() - t0
    shutil.rmtree(d, ignore_errors=True)
  return m


def summary(ms: list[Mutant]) -> dict:
  per = {}
  for m in ms:
    s = per.setdefault(m.file, {"killed": 0, "survived": 0, "stillborn": 0})
    s[m.status] += 1
  k = sum(s["killed"] for s in per.values())
  live = k + sum(s["survived"] for s in per.values())
  return {"per_file": per, "killed": k, "survived": live - k, "score": k / live if live else None}


def main(argv: list[str] | None = None) -> int:
  ap = argparse.ArgumentParser(prog="python -m tinytpu mutate", description=__doc__.split("\n\n")[0])
  ap.add_argument("--files", default=",".join(_units()), help="RTL files to mutate (default: every unit's)")
  ap.add_argument("--per-file", type=int, default=5, help="mutants per file (default 5)")
  ap.add_argument("--seed", type=int, default=1, help="which candidate sites (default 1)")
  ap.add_argument("--list", action="store_true", help="print the chosen mutants and stop")
  ap.add_argument("--json", help="write every mutant and the summary to this file")
  args = ap.parse_args(argv)
  files = [f for f in args.files.split(",") if f]
  if bad := [f for f in files if f not in _units()]:
    print(f"mutate: no unit environment for {', '.join(bad)} (known: {', '.join(_units())})", file=sys.stderr)
    return 2
  ms = choose(files, args.per_file, args.seed)
  for i, m in enumerate(ms):
    if args.list:
      print(f"{m.name:32s} {m.before!r} -> {m.after!r}")
      continue
    run(m)
    print(f"[{i + 1}/{len(ms)}] {m.status:9s} {m.name:32s} {m.seconds:6.1f}s  {m.before!r} -> {m.after!r}", flush=True)
  if args.list:
    return 0
  s = summary(ms)
  for f, c in s["per_file"].items():
    print(f"{f:16s} killed {c['killed']:3d}  survived {c['survived']:3d}  stillborn {c['stillborn']:3d}")
  print(f"mutation score: {s['killed']}/{s['killed'] + s['survived']} killed" + (f" ({100 * s['score']:.1f}%)" if s["score"] is not None else ""))
  if args.json:
    with open(args.json, "w") as f:
      json.dump({"mutants": [dataclasses.asdict(m) for m in ms], **s}, f, indent=1)
  return 0 if s["survived"] == 0 else 1
