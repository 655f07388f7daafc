"""Running one kernel bundle: on the RTL co-simulation (`TINYTPU_SIM=rtl`, the default), on the
golden model (`golden`), or on both with every dumped tile compared (`both`).

Multi-device (doc/chip.md): `TINYTPU:1` runs its kernels as core 1 of the two-core chip
(tinytpu.chipsim on the RTL, golden/chip.py on the golden model) with core 0 halting at once;
`TINYTPU_CHIP=1` puts `TINYTPU:0` on the chip's core 0 too (by default it is the single-core
co-sim, whose cycles the benchmarks report). Buffers still travel through the host between kernels.

`TINYTPU_DEBUG=1` prints each kernel's assembly and cycles; `TINYTPU_KEEP=dir` keeps every bundle
and its output for replay with `python -m tinytpu run`; `TINYTPU_PROFILE=dir` writes a profile
(report, Perfetto trace, HTML view: doc/profiler.md) of every kernel run on the RTL."""
from __future__ import annotations

import itertools
import os
import pathlib
import sys

from tinytpu import asm, bundle
from tinytpu.bundle import Bundle, Result

_seq = itertools.count()
_profile_seq = itertools.count()
_profile_noted = []  # the golden-model note is printed once
# totals since import (or the last reset): what `make demo` and the benchmarks report
STATS = {"kernels": 0, "cycles": 0, "instructions": 0, "dma_tiles": 0}


def reset_stats():
  for k in STATS:
    STATS[k] = 0


class KernelError(RuntimeError):
  pass


def _keep(b: Bundle, name: str, outputs: dict[str, Result]) -> pathlib.Path:
  d = pathlib.Path(os.environ.get("TINYTPU_KEEP") or "build/failed-kernels")
  d.mkdir(parents=True, exist_ok=True)
  stem = f"{next(_seq):04d}_{''.join(c if c.isalnum() else '_' for c in name)}"
  path = d / f"{stem}.bundle"
  path.write_text(bundle.write(b))
  for who, r in outputs.items():
    (d / f"{stem}.{who}.out").write_text(bundle.format_result(r))
  return path


def _rtl(b: Bundle) -> Result:
  """On the process's co-sim server of this configuration (tinytpu.cosim.server, shared with the
  random programs), as a Bundle object: HBM payloads of 4096 lanes or more travel as bundle v2
  binary side files (doc/bundle.md), not as text lines."""
  from tinytpu import cosim
  return cosim.server(b.config).run_bundle(b)


CHIP_RUNS = [0, 0]  # kernels run on each chip core (the multi-device tests check the routing)


def _chip(b: Bundle, core: int, on_rtl: bool) -> Result:
  """One kernel as core `core` of the chip: the kernel's HBM preloads and dumps are the chip's
  shared ones, the other core only halts."""
  import dataclasses
  from tinytpu import chipsim, isa
  from tinytpu.chipbundle import ChipBundle
  from tinytpu.config import CHIP_CORES
  halt = Bundle(config=b.config, program=[isa.BY_MNEMONIC["HALT"].fixed_bits], max_cycles=b.max_cycles)
  cores = [halt] * CHIP_CORES
  cores[core] = dataclasses.replace(b, hbm=[], dumps=[d for d in b.dumps if d[0] != "hbm"])
  cb = ChipBundle(config=b.config, cores=cores, hbm=list(b.hbm), dumps=[d for d in b.dumps if d[0] == "hbm"], max_cycles=b.max_cycles)
  r = chipsim.run_chip(cb) if on_rtl else chipsim.run_golden(cb)
  CHIP_RUNS[core] += 1
  mine = r.cores[core]
  return dataclasses.replace(mine, dumps=mine.dumps + r.dumps)


def _golden(b: Bundle) -> Result:
  from tinytpu.golden import interp
  return interp.run(b)


def _profile(b: Bundle, name: str, on_rtl: bool) -> None:
  """TINYTPU_PROFILE=dir: the profile comes from the RTL's cycle counters, so only kernels run on
  the RTL get one; the golden model (cycle-free) says so once and profiles nothing."""
  if not on_rtl:
    if not _profile_noted:
      _profile_noted.append(True)
      print("TINYTPU_PROFILE: nothing profiled, the golden model has no cycles (use TINYTPU_SIM=rtl or both)", file=sys.stderr)
    return
  from tinytpu import profile
  profile.kernel(b, name, os.environ["TINYTPU_PROFILE"], next(_profile_seq))


def run(b: Bundle, name: str = "kernel", core: int | None = None) -> Result:
  """Run a kernel bundle; `core` None: the single-core co-sim (or golden model), else that core of the chip."""
  mode = os.environ.get("TINYTPU_SIM", "rtl")
  if mode not in ("rtl", "golden", "both"):
    raise ValueError(f"TINYTPU_SIM={mode!r}: expected rtl, golden or both")
  outs: dict[str, Result] = {}
  if mode in ("golden", "both"):
    outs["golden"] = _golden(b) if core is None else _chip(b, core, False)
  if mode in ("rtl", "both"):
    outs["rtl"] = _rtl(b) if core is None else _chip(b, core, True)
  res = outs.get("rtl", outs.get("golden"))
  STATS["kernels"] += 1
  STATS["cycles"] += res.cycles
  STATS["instructions"] += res.perf.get("retired", 0)
  STATS["dma_tiles"] += res.perf.get("dma_tiles", 0)  # HBM traffic: the bench's bandwidth roofline
  if os.environ.get("TINYTPU_DEBUG"):
    print(f"--- TINYTPU kernel {name}: {len(b.program)} instructions\n{asm.disassemble(b.program, b.config.N)}"
          f"--- {name}: {res.cycles} cycles, status {res.status}")
  if os.environ.get("TINYTPU_KEEP"):
    _keep(b, name, outs)
  if os.environ.get("TINYTPU_PROFILE"):
    _profile(b, name, "rtl" in outs)
  if mode == "both" and (d := bundle.diff_results(outs["golden"], outs["rtl"])):
    path = _keep(b, name, outs)
    raise KernelError(f"TINYTPU kernel {name}: RTL and golden model differ ({d[0]}); bundle kept in {path}")
  if res.status != "ok":
    path = _keep(b, name, outs)
    what = f"trap {res.trap}" if res.status == "trap" else res.status
    raise KernelError(f"TINYTPU kernel {name}: {what} at pc={res.pc}; bundle kept in {path}")
  return res
