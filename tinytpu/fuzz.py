"""Differential fuzzer: seeded random tinygrad programs on TINYTPU against tinygrad's PYTHON device.

The programs and their comparison are tinytpu/fuzzprog.py, the generator tinytpu/fuzzgen.py; here
is what runs them: a failing program is shrunk (ops, sizes and values dropped while it still fails)
and reported with the command that reproduces it and a standalone snippet.

  python -m tinytpu fuzz [--seeds N] [--seed S] [--index I] [--sim golden|rtl|both]

TINYTPU_FUZZ_FAULT=kind plants a fault to test the fuzzer: on TINYTPU that op kind returns its
value plus one (bools negated)."""
from __future__ import annotations

import argparse
import collections
import dataclasses
import datetime
import os
import re
import sys
import time
from dataclasses import dataclass, field

from tinytpu.fuzzgen import generate
from tinytpu.fuzzprog import Input, Outcome, Program, build, check, error_line, tolerance


def _sized(prog: Program, f) -> Program:
  """Every input dim (and expand size) n replaced by f(input index, dim, n)."""
  ins = [dataclasses.replace(x, shape=tuple(f(i, j, n) for j, n in enumerate(x.shape))) for i, x in enumerate(prog.inputs)]
  return Program(ins, [dataclasses.replace(o, p=(o.p[0], f(-1, -1, o.p[1]))) if o.kind == "expand" else o for o in prog.ops])


def _simpler(x: Input):
  for c in ((False, True) if x.dtype == "bool" else (0, 1, x.lo)):
    if x.lo <= c <= x.hi and x.const != c:
      yield dataclasses.replace(x, const=c, pool=())
  fp = x.dtype == "float32"
  lo, hi = max(x.lo, -1 if fp else -2), min(x.hi, 1 if fp else 2)
  if x.const is None and lo <= hi and (lo, hi) != (x.lo, x.hi):
    yield dataclasses.replace(x, lo=type(x.lo)(lo), hi=type(x.hi)(hi), pool=(), grid=1.0 if fp else 0.0)
  if x.shape and x.shape[0] == 1:  # a leading 1 is implicit in broadcasting
    yield dataclasses.replace(x, shape=x.shape[1:])
  if x.dtype not in ("int32", "float32"):  # the plainest dtype
    yield dataclasses.replace(x, dtype="int32", lo=max(int(x.lo), -2**31), hi=min(int(x.hi), 2**31 - 1), pool=())


def candidates(prog: Program):
  """Simpler programs, the biggest steps first: an earlier output, an op bypassed, smaller sizes, simpler inputs."""
  ops, ins = prog.ops, prog.inputs
  for j in range(len(ops) - 1):
    yield Program(ins, ops[:j + 1]).pruned()
  for i, o in enumerate(ops[:-1]):
    for a in o.args:
      yield Program(ins, [dataclasses.replace(u, args=tuple(a if x == o.out else x for x in u.args)) for u in ops[:i] + ops[i + 1:]]).pruned()
  for n in sorted({n for x in ins for n in x.shape if n > 1}, reverse=True):
    for m in sorted({1, 2, n // 2, n - 1}):
      if m < n:
        yield _sized(prog, lambda i, j, k, n=n, m=m: m if k == n else k)
  for xi, x in enumerate(ins):
    for dj, n in enumerate(x.shape):
      for m in sorted({1, n // 2, n - 1} - {0, n}):
        yield _sized(prog, lambda i, j, k, xi=xi, dj=dj, m=m: m if (i, j) == (xi, dj) else k)
  for xi, x in enumerate(ins):
    for y in _simpler(x):
      yield Program(ins[:xi] + [y] + ins[xi + 1:], ops)


def shrink(prog: Program, bad, budget: int = 400, seconds: float = 240.0) -> tuple:
  """Greedy shrinking while bad(program) holds: (the smallest program found, runs)."""
  runs, t0, progress = 0, time.time(), True
  while progress:
    progress = False
    for cand in candidates(prog):
      if runs >= budget or time.time() - t0 > seconds: return prog, runs
      if cand.measure() < prog.measure():
        runs += 1
        if bad(cand):
          prog, progress = cand, True
          break
  return prog, runs


def snippet(prog: Program) -> str:
  """A standalone Python script: the program on TINYTPU and on PYTHON, compared."""
  _, v, lines = build(prog, "PYTHON", empty=True)
  tol = tolerance(v)
  return "\n".join(["import numpy as np", "import tinytpu  # noqa: F401  registers the TINYTPU device", "from tinygrad import Tensor, dtypes",
                    "", "def program(dev):", *[f"  {x.name} = Tensor({x.code()}, device=dev)" for x in prog.inputs],
                    *[f"  {ln}" for ln in lines], f"  return {prog.ops[-1].out}.numpy()", "",
                    'got, ref = program("TINYTPU"), program("PYTHON")', 'print("TINYTPU", got.tolist())', 'print("PYTHON ", ref.tolist())',
                    f"np.testing.assert_allclose(got, ref, rtol=0, atol={tol!r})" if tol else "np.testing.assert_array_equal(got, ref)"]) + "\n"


def repro(seed: int, index: int) -> str:
  return f"python -m tinytpu fuzz --seed {seed} --index {index}"


def report(seed: int, index: int, prog: Program, o: Outcome, fault: str | None = None, do_shrink: bool = True, seconds: float = 240.0) -> str:
  """A failure: what differs, the shrunk program, the command that reproduces it, the standalone snippet."""
  lines, small = [f"FAIL seed {seed} index {index}: {o.msg}"], prog
  if do_shrink:
    small, runs = shrink(prog, lambda p: (c := check(p, fault)).kind == "fail" and c.sig == o.sig, seconds=seconds)
    lines.append(f"  shrunk in {runs} runs: {len(prog.ops)} -> {len(small.ops)} ops, {prog.measure()[1]} -> {small.measure()[1]} "
                 f"input elements: {check(small, fault).msg}")
  lines += [f"  reproduce: {repro(seed, index)}", "  ---- reproducer" + (" (shrunk)" if do_shrink else "") + " ----"]
  return "\n".join(lines + ["  " + ln for ln in snippet(small).splitlines()] + ["  ----"])


@dataclass
class Summary:
  seed: int
  programs: int = 0
  failures: list = field(default_factory=list)      # (index, outcome, report)
  unsupported: collections.Counter = field(default_factory=collections.Counter)
  invalid: list = field(default_factory=list)       # (index, message)

  def line(self) -> str:
    return f"fuzz: {self.programs} programs, {len(self.failures)} mismatches, {sum(self.unsupported.values())} unsupported, seed {self.seed}"


def fuzz(seed: int, count: int, start: int = 0, fault: str | None = None, max_shrinks: int = 10, shrink_seconds: float = 240.0,
         out=sys.stdout) -> Summary:
  """Programs start .. start+count-1 of seed, each compared; failures reported (the first max_shrinks shrunk)."""
  fault = fault or os.environ.get("TINYTPU_FUZZ_FAULT") or None
  s, t0 = Summary(seed), time.time()
  for i in range(start, start + count):
    try:
      prog = generate(seed, i)
    except Exception as e:  # noqa: BLE001  a generator bug: reported, the run goes on
      prog, o = None, Outcome("invalid", "generator: " + error_line(e))
    else:
      o = check(prog, fault)
    s.programs += 1
    out.write({"ok": ".", "unsupported": "u", "invalid": "?", "fail": "F"}[o.kind])
    if o.kind == "unsupported":
      s.unsupported[re.sub(r"\b\d+\b", "N", re.sub(r"\x1b\[[0-9;]*m", "", o.msg))[:140]] += 1
    elif o.kind == "invalid":
      s.invalid.append((i, o.msg))
    elif o.kind == "fail":
      s.failures.append((i, o, report(seed, i, prog, o, fault, len(s.failures) < max_shrinks, shrink_seconds)))
      out.write("\n" + s.failures[-1][2] + "\n")
    if (i - start + 1) % 50 == 0 or i == start + count - 1:
      out.write(f" {i - start + 1}/{count} {time.time() - t0:.0f}s\n")
    out.flush()
  for msg, n in s.unsupported.most_common():
    out.write(f"  unsupported x{n}: {msg}\n")
  for i, msg in s.invalid:
    out.write(f"  reference failed (not counted), index {i}: {msg}\n")
  for i, o, _ in s.failures:
    out.write(f"  FAIL index {i}: {o.msg[:160]}  ({repro(seed, i)})\n")
  out.write(s.line() + "\n")
  return s


def today_seed() -> int:
  """The night's seed under `make regress` (TINYTPU_NIGHT_SEED: SEED= or the date the run
  started, so every shard of a night draws the same programs), else today's date as YYYYMMDD."""
  night = os.environ.get("TINYTPU_NIGHT_SEED")
  return int(night) if night else int(datetime.date.today().strftime("%Y%m%d"))


def main(argv: list[str] | None = None) -> int:
  ap = argparse.ArgumentParser(prog="python -m tinytpu fuzz", description="random tinygrad programs: TINYTPU against tinygrad's PYTHON device")
  ap.add_argument("--seeds", type=int, default=100, help="number of programs (default 100)")
  ap.add_argument("--seed", type=int, default=None, help="seed (default: today's date as YYYYMMDD)")
  ap.add_argument("--index", type=int, default=None, help="run only program INDEX of the seed")
  ap.add_argument("--sim", choices=("golden", "rtl", "both"), default=None, help="TINYTPU_SIM for the TINYTPU side")
  ap.add_argument("--max-shrinks", type=int, default=10, help="shrink only the first N failures (default 10)")
  ap.add_argument("--print", action="store_true", help="print each program as a standalone snippet first")
  a = ap.parse_args(argv)
  if a.sim:
    os.environ["TINYTPU_SIM"] = a.sim
  seed = today_seed() if a.seed is None else a.seed
  start, count = (a.index, 1) if a.index is not None else (0, a.seeds)
  print(f"fuzz: seed {seed}, programs {start}..{start + count - 1}, TINYTPU_SIM={os.environ.get('TINYTPU_SIM', 'rtl')}", flush=True)
  for i in range(start, start + count) if a.print else ():
    print(f"# program {i}\n{snippet(generate(seed, i))}")
  return 1 if fuzz(seed, count, start, max_shrinks=a.max_shrinks).failures else 0
