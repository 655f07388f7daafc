"""Running one kernel bundle: on the RTL co-simulation (`TINYTPU_SIM=rtl`, the default), on the
golden model (`golden`), or on both with every dumped tile compared (`both`).

Multi-device (doc/chip.md): `TINYTPU:1` runs its kernels as core 1 of the two-core chip
(tinytpu.chipsim on the RTL, golden/chip.py on the golden model); `TINYTPU_CHIP=1` puts `TINYTPU`
(`TINYTPU:0`) on the chip's core 0 (by default it is the single-core co-sim, whose cycles the
benchmarks report). run_chip runs one chip launch: the kernels of both cores together
(backend/chiplaunch.py pairs them); a core without a kernel halts at once.

`TINYTPU_DEBUG=1` prints each kernel's assembly and cycles; `TINYTPU_KEEP=dir` keeps every bundle
and its output for replay with `python -m tinytpu run`; `TINYTPU_PROFILE=dir` writes a profile
(report, Perfetto trace, HTML view: doc/profiler.md) of every kernel run on the RTL."""
from __future__ import annotations

import dataclasses
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


def _kept(name: str, ext: str, text: str, outputs: dict[str, str]) -> pathlib.Path:
  """Write a bundle (or chip bundle) and each runner's output under TINYTPU_KEEP (or build/failed-kernels)."""
  d = pathlib.Path(os.environ.get("TINYTPU_KEEP") or "build/failed-kernels")
  d.mkdir(parents=True, exist_ok=True)
  stem = f"{next(_seq):04d}_{''.join(c if c.isalnum() else '_' for c in name)}"
  path = d / f"{stem}.{ext}"
  path.write_text(text)
  for who, out in outputs.items():
    (d / f"{stem}.{who}.out").write_text(out)
  return path


def _keep(b: Bundle, name: str, outputs: dict[str, Result]) -> pathlib.Path:
  return _kept(name, "bundle", bundle.write(b), {who: bundle.format_result(r) for who, r in outputs.items()})


def _rtl(b: Bundle) -> Result:
  """On the process's co-sim server of this configuration (tinytpu.cosim.server, shared with the
  random programs), as a Bundle object: HBM payloads of 4096 lanes or more travel as bundle v2
  binary side files (doc/bundle.md), not as text lines."""
  from tinytpu import cosim
  return cosim.server(b.config).run_bundle(b)


CHIP_RUNS = [0, 0]  # kernels run on each chip core (the multi-device tests check the routing)


def _chip_bundle(items: dict[int, Bundle]):
  """One chip bundle of the items' programs (a core without one halts at once): their HBM reads as
  the shared preloads (identical regions once), their HBM writes as the shared dumps."""
  from tinytpu import isa
  from tinytpu.chipbundle import ChipBundle
  from tinytpu.config import CHIP_CORES
  first = next(iter(items.values()))
  halt = Bundle(config=first.config, program=[isa.BY_MNEMONIC["HALT"].fixed_bits], max_cycles=first.max_cycles)
  cores, hbm, dumps = [halt] * CHIP_CORES, {}, []
  for k, b in items.items():
    cores[k] = dataclasses.replace(b, hbm=[], dumps=[d for d in b.dumps if d[0] != "hbm"])
    hbm.update({(a, len(t)): (a, t) for a, t in b.hbm})
    dumps += [d for d in b.dumps if d[0] == "hbm" and d not in dumps]
  return ChipBundle(config=first.config, cores=cores, hbm=sorted(hbm.values(), key=lambda r: r[0]), dumps=dumps,
                    max_cycles=max(b.max_cycles for b in items.values()))


def _chip_outs(cb, on_rtl: bool):
  from tinytpu import chipsim
  r = chipsim.run_chip(cb) if on_rtl else chipsim.run_golden(cb)
  return r, {k: dataclasses.replace(c, dumps=c.dumps + r.dumps) for k, c in enumerate(r.cores)}


def _keep_chip(cb, outs: dict, name: str) -> pathlib.Path:
  from tinytpu import chipbundle
  return _kept(name, "chip", chipbundle.write(cb), {who: chipbundle.format_chip_result(r, cb.config) for who, r in outs.items()})


def _account(cycles: int, results: list[Result]) -> None:
  """One launch in STATS: its cycles (a chip launch's until the last core is done) and every kernel's counters."""
  STATS["kernels"] += len(results)
  STATS["cycles"] += cycles
  for r in results:
    STATS["instructions"] += r.perf.get("retired", 0)
    STATS["dma_tiles"] += r.perf.get("dma_tiles", 0)  # HBM traffic: the bench's bandwidth roofline


def _check_agree(what: str, golden: Result, rtl: Result, keep) -> None:
  if d := bundle.diff_results(golden, rtl):
    raise KernelError(f"{what}: RTL and golden model differ ({d[0]}); {keep()}")


def _check_ok(what: str, res: Result, keep, why: str = "") -> None:
  if res.status != "ok":
    trap = f"trap {res.trap}" if res.status == "trap" else res.status
    raise KernelError(f"{what}: {trap} at pc={res.pc}{why}; {keep()}")


def run_chip(items: dict[int, tuple[Bundle, str]]) -> dict[int, Result]:
  """Run kernels (core -> (bundle, name)) together as one launch of the chip (backend/chiplaunch.py);
  each core's result carries the shared HBM dumps. The chip's cycles (until the last core is done)
  count once in STATS."""
  mode = _mode()
  cb = _chip_bundle({k: b for k, (b, _) in items.items()})
  names = " + ".join(f"{n} (core {k})" for k, (_, n) in items.items())
  outs, per = {}, {}
  for who, on_rtl in (("golden", False), ("rtl", True)):
    if mode in (who, "both"):
      outs[who], per[who] = _chip_outs(cb, on_rtl)
  who = "rtl" if "rtl" in outs else "golden"
  r, res = outs[who], per[who]
  _account(r.cycles, [res[k] for k in items])
  for k in items:
    CHIP_RUNS[k] += 1
  if os.environ.get("TINYTPU_DEBUG"):
    for k, (b, n) in items.items():
      print(f"--- TINYTPU kernel {n} (chip core {k}): {len(b.program)} instructions\n{asm.disassemble(b.program, b.config.N)}"
            f"--- {n}: {res[k].cycles} cycles, status {res[k].status}")
    print(f"--- chip launch {names}: {r.cycles} cycles")
  keep = lambda: f"chip bundle kept in {_keep_chip(cb, outs, names)}"  # noqa: E731
  if os.environ.get("TINYTPU_KEEP"):
    keep()
  if mode == "both":
    for k, (_, n) in items.items():
      _check_agree(f"TINYTPU kernel {n} (chip core {k})", per["golden"][k], per["rtl"][k], keep)
  for k, (_, n) in items.items():
    _check_ok(f"TINYTPU kernel {n} (chip core {k})", res[k], keep, f" ({r.deadlock})" if r.deadlock else "")
  return {k: res[k] for k in items}


def _mode() -> str:
  mode = os.environ.get("TINYTPU_SIM", "rtl")
  if mode not in ("rtl", "golden", "both"):
    raise ValueError(f"TINYTPU_SIM={mode!r}: expected rtl, golden or both")
  return mode


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


def run(b: Bundle, name: str = "kernel") -> Result:
  """Run a kernel bundle on the single-core co-sim (or golden model, or both); chip kernels go
  through run_chip."""
  mode = _mode()
  outs: dict[str, Result] = {}
  if mode in ("golden", "both"):
    outs["golden"] = _golden(b)
  if mode in ("rtl", "both"):
    outs["rtl"] = _rtl(b)
  res = outs.get("rtl", outs.get("golden"))
  _account(res.cycles, [res])
  if os.environ.get("TINYTPU_DEBUG"):
    print(f"--- TINYTPU kernel {name}: {len(b.program)} instructions\n{asm.disassemble(b.program, b.config.N)}"
          f"--- {name}: {res.cycles} cycles, status {res.status}")
  keep = lambda: f"bundle kept in {_keep(b, name, outs)}"  # noqa: E731
  if os.environ.get("TINYTPU_KEEP"):
    keep()
  if os.environ.get("TINYTPU_PROFILE"):
    _profile(b, name, "rtl" in outs)
  if mode == "both":
    _check_agree(f"TINYTPU kernel {name}", outs["golden"], outs["rtl"], keep)
  _check_ok(f"TINYTPU kernel {name}", res, keep)
  return res
