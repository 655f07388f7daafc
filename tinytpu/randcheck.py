"""The RTL-vs-golden lockstep of random programs (tinytpu/randprog.py, doc/random.md): each seed's
program runs on the co-sim and the golden model; a mismatch is shrunk (tinytpu/shrink.py) and
reported with its first diverging instruction and the command that reproduces it with waves.

  check(seed, config) -> None | str      None if every dump, status, trap and pc agree, else a report
  lockstep(seed, config) -> (report, program)
  probe(config) -> [mnemonic]            one-instruction programs where RTL != golden

  python -m tinytpu.randcheck --seed S [--seeds N] [--trace out.vcd] [--print] [--config N=8] [--no-gather] [--include FEXP2,...] [--probe]
"""
from __future__ import annotations

import argparse
import sys

import numpy as np

from tinytpu import bundle, isa
from tinytpu.bundle import Bundle
from tinytpu.config import DEFAULT, Config
from tinytpu.randprog import ELEM, LENGTH, VW, XLU, Op, Program, program, single_op, tile, value, word
from tinytpu.shrink import shrink


def server(config: Config = DEFAULT):
  """The co-sim server of `config`, reused across seeds: the process's pool (tinytpu.cosim.server), shared with the backend."""
  from tinytpu import cosim
  return cosim.server(config)


def close_servers() -> None:
  from tinytpu import cosim
  cosim.close_servers()


def compare(b: Bundle) -> list[str]:
  """Differences between the RTL and the golden result of a bundle ([] when they agree)."""
  from tinytpu.golden import interp
  gold = interp.run(b)
  try:
    rtl = server(b.config).run(bundle.write(b))
  except Exception as e:  # a crashed or hung co-sim is a mismatch too
    from tinytpu import cosim
    cosim.drop_server(b.config)
    return [f"co-sim failed: {e}"]
  return bundle.diff_results(rtl, gold)


def _divergence(prog: Program) -> list[str]:
  """The first instruction where the RTL's retire trace leaves the golden model's."""
  from tinytpu import lockstep
  try:
    return lockstep.divergence(prog.bundle()) or ["every retired instruction agrees (the difference is in memory not traced per write)"]
  except Exception as e:  # the report must come out even if the traced run fails
    return [f"the traced run failed: {type(e).__name__}: {e}"]


def repro(seed: int, config: Config, length: int, gather: bool, include: tuple = (), dma: bool | None = None) -> str:
  args = [f"--seed {seed}"] + ([f"--config {_cfg_str(config)}"] if config != DEFAULT else []) + \
    ([f"--length {length}"] if length != LENGTH else []) + ([] if gather else ["--no-gather"]) + \
    ([f"--include {','.join(include)}"] if include else []) + ([] if dma is None else ["--dma" if dma else "--no-dma"])
  return f".venv/bin/python -m tinytpu.randcheck {' '.join(args)} --trace out.vcd"


def _cfg_str(c: Config) -> str:
  return ",".join(f"{k}={v}" for k, v in c.sv_params().items())


def lockstep(seed: int, config: Config = DEFAULT, length: int = LENGTH, gather: bool = True,
             include: tuple = (), shrink_it: bool = True, dma: bool | None = None) -> tuple[str | None, Program]:
  """(report or None, the minimised program on a mismatch else the seed's program)."""
  prog = program(seed, config, length, gather, include=include, dma=dma)
  diffs = compare(prog.bundle())
  if not diffs: return None, prog
  small = shrink(prog, lambda p: bool(compare(p.bundle()))) if shrink_it else prog
  sdiffs = compare(small.bundle()) if shrink_it else diffs
  lines = [f"seed {seed} ({config.name}): RTL != golden"]
  lines += ["  " + d for d in diffs[:12]]
  lines.append(f"minimised program ({len(small.words())} words), RTL != golden:")
  lines += ["  " + d for d in sdiffs[:12]]
  lines.append(small.tasm().rstrip())
  lines += ["per-instruction lockstep of the minimised program (tinytpu/lockstep.py):"] + ["  " + x for x in _divergence(small)]
  lines.append(f"reproduce with waves: {repro(seed, config, length, gather, include, dma)}")
  return "\n".join(lines), small


def check(seed: int, config: Config = DEFAULT, length: int = LENGTH, gather: bool = True,
          include: tuple = (), dma: bool | None = None) -> str | None:
  """Run golden and RTL on the seed's program; None if every dump, status, trap and pc agree, else a
  report: the seed, the differences, the minimised program as TASM and the command with waves."""
  return lockstep(seed, config, length, gather, include, dma=dma)[0]


# ---------------------------------------------------------------------------------------------
def probe(config: Config = DEFAULT, seed: int = 0) -> list[str]:
  """Mnemonics whose one-instruction program differs between RTL and golden on random operands:
  the VPU functions the RTL lacks show up here (and any bug in the others)."""
  rng, N = np.random.default_rng(seed), config.N
  bad = []
  mnems = ["V" + f for f in isa.VPU_FNS] + XLU + ELEM
  for mn in mnems:
    op = single_op(mn, seed, config)
    loads = Op([word("VLD", N, vd=i, addr=i, addr_base=0) for i in range(1, 5)], "vld")
    p = Program(config, [loads, op], {a: tile(rng, N) for a in range(VW)}, {}, {1: value(rng), 2: value(rng)}, [1, 2, 3, 4], 0)
    if compare(p.bundle()): bad.append(mn)
  return bad


def main(argv: list[str] | None = None) -> int:
  ap = argparse.ArgumentParser(prog="python -m tinytpu.randcheck", description="random programs, RTL vs golden in lockstep")
  ap.add_argument("--seed", type=int, default=0)
  ap.add_argument("--seeds", type=int, default=1, help="run seeds seed .. seed+N-1")
  ap.add_argument("--length", type=int, default=LENGTH)
  ap.add_argument("--config", default=None, help="e.g. N=8,VMEM_TILES=256")
  ap.add_argument("--no-gather", dest="gather", action="store_false", help="leave out VGATHER/VSCATTER")
  ap.add_argument("--trace", default=None, help="waveform of the (minimised, on a mismatch) program")
  ap.add_argument("--print", action="store_true", help="print the program as TASM")
  ap.add_argument("--include", default="", help="VPU functions taken back from RTL_MISSING_VPU, e.g. FEXP2,FSIN")
  ap.add_argument("--probe", action="store_true", help="list the VPU/XLU/gather ops where RTL != golden")
  ap.add_argument("--dma", action=argparse.BooleanOptionalAction, default=None, help="HBM copies in the programs (default: randprog.DMA)")
  a = ap.parse_args(argv)
  from tinytpu import cosim
  config = Config.from_str(a.config) if a.config else DEFAULT
  if a.probe:
    bad = probe(config)
    print("RTL != golden on:", " ".join(bad) if bad else "nothing")
    return 1 if bad else 0
  include = tuple(x.strip().upper() for x in a.include.split(",") if x.strip())
  if bad := [x for x in include if x not in isa.VPU_FNS]:
    ap.error(f"--include: not VPU functions: {' '.join(bad)}")
  fails = 0
  for seed in range(a.seed, a.seed + a.seeds):
    if a.print: print(program(seed, config, a.length, a.gather, include=include, dma=a.dma).tasm())
    rep, prog = lockstep(seed, config, a.length, a.gather, include, dma=a.dma)
    fails += rep is not None
    print(rep if rep is not None else f"seed {seed}: ok", flush=True)
    if a.trace:  # the minimised program on a mismatch, else the whole one
      open(a.trace + ".bundle", "w").write(bundle.write(prog.bundle()))
      cosim.run_bundle(bundle.write(prog.bundle()), config, trace=a.trace)
      print(f"wrote {a.trace} and its bundle {a.trace}.bundle")
  if a.seeds > 1: print(f"{a.seeds - fails}/{a.seeds} seeds agree")
  return 1 if fails else 0


if __name__ == "__main__":
  sys.exit(main())
