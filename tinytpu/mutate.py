"""`make mutate` / `python -m tinytpu mutate`: mutation testing of the RTL. Each mutant is one small
change to one RTL file (a comparison, an operator, a constant or a condition), written into a copy
of rtl/ under build/mutants/; the unit's pyuvm environment is built from the copy and run (for the
core's control files, sxu/tensorcore/dma/hbm, the co-sim built from the copy runs random programs
in lockstep with the golden model: COSIM_SEEDS seeds, DMA and traps included). A mutant
the environment fails is killed; one it passes survived (a hole in the tests, or an equivalent
mutant: doc/mutation.md gives each survivor its reason); one that does not build is stillborn and
not counted. Mutants are chosen deterministically from every candidate site (the same list for the
same RTL and seed), spread over the units.

  python -m tinytpu mutate [--per-file K] [--files vmem.sv,xlu.sv] [--seed S] [--list] [--json out.json]
  python -m tinytpu mutate --lockstep-seeds S:K    (the co-sim runner's child: K random programs from seed S)"""
from __future__ import annotations

import argparse
import dataclasses
import json
import random
import re
import os
import pathlib
import shutil
import subprocess
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

COSIM = "cosim"  # the unit "environment" of the core's control files: the co-sim's random lockstep
COSIM_SEEDS = (910000, 40)  # first seed, count: fixed, so a mutant's verdict is reproducible
UNIT_COSIM_TESTS = {"epi.sv": ["test_cosim_epi.py"], "sparsecore.sv": ["test_cosim_sparse.py"],
                    # the engine's own env checks every port each cycle: a request the contract does not
                    # make (a read on the VMEM write port) changes no result the programs could see
                    "dma.sv": ["rtl/test_dma_unit.py::test_dma_unit_default"],
                    "sxu.sv": ["test_cosim_sparse.py",  # the SXU's lookup range traps, its signal flags
                               "rtl/test_chip.py::test_single_core_cosim_signals_itself_and_traps_other_cores"]}  # after the random programs
# the chip's own files (chip.sv and the NoC endpoints): the chip co-sim built from the copy runs the
# smoke tests of tests/rtl/test_chip.py (handoffs, contention, the SparseCore on node 3, remote-read
# latency and bandwidth, the random two-core lockstep against golden/chip.py), then the DMA's read
# bandwidth and the SparseCore's gather at a timing where their tag FIFOs' sizes depend on the
# rings' round trip (at the defaults a power of two absorbs it): one pytest run each, in order
CHIP = "chip"
CHIP_TESTS = [["-m", "not nightly", "tests/rtl/test_chip.py"],
              ["-m", "nightly", "tests/rtl/test_chip.py::test_remote_read_bandwidth_other_timing",
               "tests/rtl/test_chip.py::test_sparsecore_gather_bandwidth_other_timing"]]
# the NoC endpoints' mutants first meet their own unit env (tb/noc_ep, built from the copy): malformed
# packets with the sticky err_o, and ring back-pressure long enough to fill the HBM endpoint's
# buffer, which no legal chip input makes; then the chip tests above. chip.sv runs CHIP_TESTS only
EP_TESTS = {f: [["-m", "not nightly", "-k", f.removesuffix(".sv"), "tests/rtl/test_noc_ep.py"]]
            for f in ("noc_core_ep.sv", "noc_hbm_ep.sv", "noc_sc_ep.sv")}
COSIM_TIMEOUT = 1800  # seconds for a mutant's co-sim build and programs (the watchdog ends every program)


# RTL file -> how its unit environment runs (top, sources by name, test module, params, testcase, env)
def _units() -> dict[str, tuple]:
  from tinytpu.tb.mem import sources as mem_sources
  from tinytpu.tb.vpu import sources as vpu_sources
  core = sorted(p.name for p in tools.RTL.glob("*.sv") if p.name != "tinytpu_pkg.sv")
  mem = lambda u, p: (u, [s.name for s in mem_sources(u)], "tinytpu.tb.mem.tests", p, None, {"TINYTPU_UNIT": u})  # noqa: E731
  mxu = ("mxu_tb", ["fp32_pkg.sv", "mxu_pe.sv", "mxu_array.sv", "mxu.sv", "vmem.sv", "psum.sv", str(tools.ROOT / "tb/mxu/mxu_tb.sv")],
         "tinytpu.tb.mxu.tests", {"N": 4, "VMEM_TILES": 256, "PSUM_TILES": 256}, "MxuDirected,MxuWeightSwap,MxuRandom,MxuGemm,MxuTrace", None)
  vpu = ("vpu", [p.name if p.parent == tools.RTL else str(p) for p in vpu_sources()], "tinytpu.tb.vpu.tests", {"N": 4, "TAG_W": 8}, None, None)
  # the core env's CorePrograms reached too little of the SXU's interlocks (doc/mutation.md): the
  # control files run the co-sim's random lockstep, which drives the MXU queue, DMA and scatters
  corerun = (COSIM, core, None, None, None, None)
  from tinytpu.config import DEFAULT
  noc = ("noc", ["noc_fifo.sv", "noc_router.sv", "noc.sv"], "tinytpu.tb.noc.tests", DEFAULT.noc_params(),
         "NocZeroLoad,NocUniform,NocHotspot,NocAllToOne,NocNeighbour,NocStress,NocSaturation", None)
  # the arbiter's contention, which sim_top's interlocks never allow, is reached in its own env only
  arb = ("hbm_arb", ["hbm_arb.sv"], "tinytpu.tb.hbm_arb.tests", {"N": 2, "LATENCY": 6}, "ArbRandom,ArbContention,ArbLone,ArbSlowHbm", None)
  # the chip's SparseCore command arbiter in its own env, with three cores (the round robin's wrap)
  scarb = ("sc_cmd_arb", ["sc_cmd_arb.sv"], "tinytpu.tb.sc_cmd_arb.tests", {"CORES": 3}, "ScArbRandom,ScArbContention,ScArbSparse", None)
  chiprun = (CHIP, core, None, None, None, None)
  # not mutated: tinytpu_pkg.sv (generated from the ISA table)
  return {"chip.sv": chiprun, "noc_core_ep.sv": chiprun, "noc_hbm_ep.sv": chiprun, "noc_sc_ep.sv": chiprun,
          "sxu.sv": corerun, "mxu_own.sv": corerun, "tensorcore.sv": corerun, "dma.sv": corerun, "hbm.sv": corerun,
          "epi.sv": corerun, "hbm_arb.sv": arb, "sc_cmd_arb.sv": scarb, "sparsecore.sv": corerun,
          "mxu.sv": mxu, "mxu_array.sv": mxu, "mxu_pe.sv": mxu, "vpu.sv": vpu, "fp32_pkg.sv": vpu,
          "vpu_fp_reduce.sv": vpu, "vpu_int_lane.sv": vpu, "vpu_int_reduce.sv": vpu,
          "xlu.sv": ("xlu", ["xlu.sv"], "tinytpu.tb.xlu.tests", {"N": 4, "TAG_W": 8}, None, None),
          "noc.sv": noc, "noc_router.sv": noc, "noc_fifo.sv": noc,
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
  out, support, open_assert = [], False, 0
  for i, text in enumerate(path.read_text().splitlines(), 1):
    code = text.split("//")[0]
    if (m := SUPPORT.search(text)):
      support = m[1] == "begin"
    if open_assert or re.search(r"\bASSERT\w*\(", code):  # an assertion's lines, up to its closing parenthesis
      open_assert = max(0, open_assert + code.count("(") - code.count(")"))
      continue
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
  for p in tools.RTL.iterdir():  # the whole tree: the co-sim needs rtl/sim and the headers
    (shutil.copytree if p.is_dir() else shutil.copy)(p, d / p.name)
  lines = (d / m.file).read_text().splitlines()
  assert lines[m.line - 1].strip() == m.before, f"{m.name}: the RTL changed under the mutant"
  lines[m.line - 1] = lines[m.line - 1].replace(m.before, m.after)
  (d / m.file).write_text("\n".join(lines) + "\n")
  srcs = [s if "/" in s else d / s for s in sources]
  t0 = time.monotonic()
  if top in (COSIM, CHIP):
    try:
      _run_cosim(m, d, chip=top == CHIP)
    finally:
      m.seconds = time.monotonic() - t0
      shutil.rmtree(d, ignore_errors=True)
    return m
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


def _run_cosim(m: Mutant, d, chip: bool = False) -> None:
  """The mutant's co-sim (built from the copy d into d/build) against the golden model on the
  fixed random programs, or for a chip file the chip's smoke tests (an endpoint's unit env
  first, EP_TESTS), in a child process (tools.RTL and BUILD are fixed at import)."""
  first, count = COSIM_SEEDS
  env = {**os.environ, "TINYTPU_RTL_DIR": str(d), "TINYTPU_BUILD_DIR": str(d / "build"), "TINYTPU_MUTANT_FILE": m.file}
  cmds = ([[sys.executable, "-m", "pytest", "-q", "-x", "-p", "no:cacheprovider", *args] for args in EP_TESTS.get(m.file, []) + CHIP_TESTS] if chip else
          [[sys.executable, "-m", "tinytpu", "mutate", "--lockstep-seeds", f"{first}:{count}"]])
  deadline = time.monotonic() + COSIM_TIMEOUT
  for cmd in cmds:
    try:
      r = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=max(1.0, deadline - time.monotonic()), cwd=tools.ROOT)
    except subprocess.TimeoutExpired:
      m.status, m.detail = "killed", f"the co-sim run exceeded {COSIM_TIMEOUT} s"
      return
    if r.returncode != 0:
      break
  out = (r.stdout + r.stderr).strip().splitlines()
  if chip and r.returncode not in (0, 1):  # no test collected, a usage or an internal error: the harness's failure
    raise RuntimeError(f"{m.name}: the chip tests exited {r.returncode}:\n" + "\n".join(out[-20:]))
  if r.returncode == 0:
    m.status = "survived"
  elif any("co-sim build failed" in x for x in out):
    m.status, m.detail = "stillborn", "co-sim build failed"
  else:
    m.status, m.detail = "killed", kill_detail(out) or f"rc {r.returncode}"


def kill_detail(out: list[str]) -> str:
  """The line of a failed run that says what killed the mutant: a fired assertion's message (not a
  traceback's source line that mentions ASSERT FAILED), the lockstep's mismatch, pytest's first error
  line, its summary of the first failed test; else the last line."""
  rules = (lambda x: "ASSERT FAILED" in x and "%Error" in x, lambda x: "RTL != golden" in x and not x.lstrip().startswith(">"),
           lambda x: x.startswith("E "), lambda x: x.startswith("FAILED "))  # pytest cuts its summary line short
  for rule in rules:
    if hit := next((x for x in out if rule(x)), None):
      return hit.strip()[:200]
  return out[-1].strip()[:200] if out else ""


def lockstep_seeds(first: int, count: int) -> int:
  """K random programs RTL vs golden (no shrinking: a verdict, not a report), then the timing tests
  (cycles from the documented rules, which the random programs do not check); 1 at the first
  mismatch or failure, which it prints."""
  from tinytpu import randcheck
  for seed in range(first, first + count):
    rep, _ = randcheck.lockstep(seed, shrink_it=False)
    if rep is not None:
      print(rep.splitlines()[0] + "\n" + "\n".join(rep.splitlines()[1:6]))
      return 1
  print(f"{count} programs agree")
  # the timing rules: the DMA copy cycles (every HBM configuration when the DMA engine or the HBM is
  # the mutated file: a bandwidth mutant is invisible at the default 1 tile/cycle) and the core's issue
  # and MXU streaming rules (tests/test_dual_issue.py)
  tests = [tools.ROOT / "tests" / "rtl" / "test_dma.py", tools.ROOT / "tests" / "test_dual_issue.py"]
  # the units whose own co-sim tests reach what the random programs do not (the random PEPI
  # parameter tiles clamp every lane's shift alike; padding lanes past an index list)
  tests += [tools.ROOT / "tests" / t for t in UNIT_COSIM_TESTS.get(os.environ.get("TINYTPU_MUTANT_FILE", ""), [])]
  if all(pathlib.Path(str(t).split("::")[0]).exists() for t in tests):
    import pytest
    every = os.environ.get("TINYTPU_MUTANT_FILE") in ("dma.sv", "hbm.sv")  # the slow HBM's back-pressure
    rc = pytest.main(["-q", "-x", "-p", "no:cacheprovider", *map(str, tests)] + ([] if every else ["-k", "not other_hbm"]))
    if rc != 0:
      print(f"timing tests failed (pytest exit {int(rc)})")
      return 1
  return 0


# survivors shown equivalent (doc/mutation.md gives the argument): (file, line before, line after) ->
# why; they count as survived but not against the score, which is over the non-equivalent mutants
EQUIVALENT = {
  ("vpu_int_reduce.sv", "RED_MIN:  res = ($signed(y) < $signed(x)) ? y : x;", "RED_MIN:  res = ($signed(y) <= $signed(x)) ? y : x;"):
    "of two equal values either is the minimum",
  ("vpu_int_reduce.sv", "RED_MAX:  res = ($signed(x) < $signed(y)) ? y : x;", "RED_MAX:  res = ($signed(x) <= $signed(y)) ? y : x;"):
    "of two equal values either is the maximum",
  ("hbm.sv", "if (32'(tok_d) > BW_DEN + BW_NUM - 1) tok_d = BW'(BW_DEN + BW_NUM - 1);",
   "if (32'(tok_d) >= BW_DEN + BW_NUM - 1) tok_d = BW'(BW_DEN + BW_NUM - 1);"): "clamping a value equal to the bound to the bound",
  # pipeline registers that load their predecessor every cycle: a reset value leaves the array
  # within N cycles of reset, before the first command's first row can enter
  ("mxu_array.sv", "skew_b_q[d] <= 1'b0;", "skew_b_q[d] <= 1'b1;"): "a skew register, flushed within N cycles of reset",
  ("mxu_array.sv", "skew_f_q[d] <= 1'b0;", "skew_f_q[d] <= 1'b1;"): "a skew register, flushed within N cycles of reset",
  ("mxu_pe.sv", "bank_q <= 1'b0;", "bank_q <= 1'b1;"): "a pipeline register, flushed within N cycles of reset",
  ("mxu_pe.sv", "fp_q   <= 1'b0;", "fp_q   <= 1'b1;"): "a pipeline register, flushed within N cycles of reset",
  ("mxu_array.sv", "unused_a = 1'b0;", "unused_a = 1'b1;"): "the lint sink of the last PE column's outputs: drives nothing",
  ("mxu_own.sv", "if (ent_q[prd_q + IW'(i)].p_hi > p_hi_o) p_hi_o = ent_q[prd_q + IW'(i)].p_hi;",
   "if (ent_q[prd_q + IW'(i)].p_hi >= p_hi_o) p_hi_o = ent_q[prd_q + IW'(i)].p_hi;"): "the maximum of equal values is either",
  ("mxu_own.sv", "if (ent_q[vrd_q + IW'(i)].v_hi > v_hi_o) v_hi_o = ent_q[vrd_q + IW'(i)].v_hi;",
   "if (ent_q[vrd_q + IW'(i)].v_hi >= v_hi_o) v_hi_o = ent_q[vrd_q + IW'(i)].v_hi;"): "the maximum of equal values is either",
  ("tensorcore.sv", "gth_fresh_q <= 1'b0;", "gth_fresh_q <= 1'b1;"):
    "out of reset it loads VMEM's read data, which is 0 then (vmem's OutOfResetClean), into a register already 0, "
    "and a gather's write-back reads it only after its own load",
  ("tensorcore.sv", "assign mxu_ready = !cmd_q || mxu_cmd_ready;", "assign mxu_ready = !cmd_q && mxu_cmd_ready;"):
    "equal in results (interlocks); in cycles as far as measured: cmd_q is a one-entry hold register in front of the "
    "MXU queue, and refusing a command while the queue is full keeps it in the SXU instead (doc/mutation.md)",
  ("epi.sv", "else if (y > 64'sd127)  out = 32'sd127;", "else if (y >= 64'sd127)  out = 32'sd127;"):
    "clamping 127 to 127",
  ("epi.sv", "relu_q  <= 1'b0;", "relu_q  <= 1'b1;"):
    "its reset value is never read: every PEPI loads relu_q in the cycle it sets fresh_q, and res_q is written only when fresh_q",
  ("epi.sv", "relu2_q  <= 1'b0;", "relu2_q  <= 1'b1;"):
    "relu2_q only feeds the assertions (the result register's mode)",
  # the chip's wiring: what no flit of a legal chip reaches
  ("chip.sv", "assign r_ej_ready[HBM_NODE]  = 1'b1;", "assign r_ej_ready[HBM_NODE]  = 1'b0;"):
    "no response flit is addressed to node 2: the HBM endpoint answers a request's source, and node 2 sends no requests",
  ("chip.sv", "assign err_o = q_err || r_err || (|ep_err) || hep_err || h_err || scep_err;",
   "assign err_o = q_err && r_err || (|ep_err) || hep_err || h_err || scep_err;"):
    "q_err and r_err are the rings' bad-destination flags: every flit of the chip goes to an existing node (constant "
    "destinations, a request's source, SIG.SEND's core checked by the SXU's trap), and the rings' InjDstExists fires "
    "before either flag could rise; the flags' own path is tested in tb/noc",
}


def equivalent(m: Mutant) -> str | None:
  return EQUIVALENT.get((m.file, m.before, m.after))


def verdict(ms: list[Mutant]) -> list[str]:
  """What fails a mutation job ([] when it passes): more than a quarter stillborn (the operators need
  fixing, not the score), a survivor not listed in EQUIVALENT (a hole in the tests, or an equivalent
  to list with its argument), a listed equivalent that a test killed (its argument is wrong)."""
  out = []
  if (born := sum(m.status == "stillborn" for m in ms)) > len(ms) // 4:
    out.append(f"{born} of {len(ms)} mutants do not build: the operators need fixing, not the score")
  if survivors := [f"{m.name}: {m.before!r} -> {m.after!r}" for m in ms if m.status == "survived" and equivalent(m) is None]:
    out.append("survivors (a hole in the tests, or an equivalent mutant to list in mutate.EQUIVALENT):\n" + "\n".join(survivors))
  if wrong := [f"{m.name}: {m.before!r} -> {m.after!r} ({m.detail})" for m in ms if m.status == "killed" and equivalent(m) is not None]:
    out.append("killed, yet listed in mutate.EQUIVALENT (drop the entry and its argument):\n" + "\n".join(wrong))
  return out


def summary(ms: list[Mutant]) -> dict:
  """Per file and in all: killed, survived (of which `equivalent`: listed in EQUIVALENT) and
  stillborn; the score is killed / (killed + non-equivalent survivors). The regression report's
  rule (tinytpu.regress.report.mutation_summary) on these mutants, so the two never differ."""
  from tinytpu.regress.report import mutation_summary
  return mutation_summary([{**dataclasses.asdict(m), "equivalent": equivalent(m)} for m in ms])


def write_document(ms: list[Mutant], folder) -> pathlib.Path:
  """The mutants of one run as a document the regression report collects (TINYTPU_COVERAGE_DIR,
  next to the coverage documents): the nightly runs one job per file and the report adds them up."""
  folder = pathlib.Path(folder)
  folder.mkdir(parents=True, exist_ok=True)
  path = folder / f"mutation-{'-'.join(sorted({m.file.removesuffix('.sv') for m in ms})) or 'none'}.json"
  path.write_text(json.dumps({"kind": "mutation", "mutants": [{**dataclasses.asdict(m), "equivalent": equivalent(m), "files": sorted(_units())} for m in ms]}, indent=1))
  return path


def main(argv: list[str] | None = None) -> int:
  ap = argparse.ArgumentParser(prog="python -m tinytpu mutate", description=__doc__.split("\n\n")[0])
  ap.add_argument("--files", default=",".join(_units()), help="RTL files to mutate (default: every unit's)")
  ap.add_argument("--per-file", type=int, default=5, help="mutants per file (default 5)")
  ap.add_argument("--seed", type=int, default=1, help="which candidate sites (default 1)")
  ap.add_argument("--list", action="store_true", help="print the chosen mutants and stop")
  ap.add_argument("--json", help="write every mutant and the summary to this file")
  ap.add_argument("--lockstep-seeds", help=argparse.SUPPRESS)
  args = ap.parse_args(argv)
  if args.lockstep_seeds:
    first, count = map(int, args.lockstep_seeds.split(":"))
    return lockstep_seeds(first, count)
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
    print(f"{f:16s} killed {c['killed']:3d}  survived {c['survived']:3d} ({c['equivalent']} equivalent)  stillborn {c['stillborn']:3d}")
  live = s["killed"] + s["survived"] - s["equivalent"]
  print(f"mutation score: {s['killed']}/{live} non-equivalent mutants killed" + (f" ({100 * s['score']:.1f}%)" if s["score"] is not None else "")
        + (f"; {s['equivalent']} equivalent survivors" if s["equivalent"] else ""))
  if args.json:
    with open(args.json, "w") as f:
      json.dump({"mutants": [dataclasses.asdict(m) for m in ms], **s}, f, indent=1)
  return 0 if s["survived"] == s["equivalent"] else 1
