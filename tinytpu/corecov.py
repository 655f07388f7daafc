"""Core functional coverage from the RTL's retire trace (issue [3/6] item 6, doc/random.md): random
programs run on the co-sim with the retire trace (tinytpu/lockstep.py) and the per-cycle events
(doc/profiler.md), and every retire, stall and outcome is binned into the `core` unit's coverage
document (the kit's Coverage, build/coverage/core_<config>.json, merged per unit by the
regression like every unit environment's).

Groups:
- retired: every instruction of the ISA table retired on the RTL at least once;
- datapath_x_stall: the cycles an instruction of each vector datapath stalled, by kind (raw, waw,
  unit, dma; fence for FENCE), from the counters' per-cycle deltas and the pc stalled on;
- pair: dual-issued pairs by issue class (slot 0's, slot 1's), two retires in one cycle;
- outcome: every trap code, timeout and ok;
- loop_depth: the hardware loop depth (0..4) at each retire (golden model's loop stack);
- mxu_hazard_distance: retires between an MMUL and a later access to its tiles (1..8), the
  distances at which the MXU ownership interlock is exercised.

  python -m tinytpu.corecov [--seeds N] [--seed S] [--config N=8]   # writes the document, prints the report
"""
from __future__ import annotations

import argparse
import os
import sys
import tempfile

from tinytpu import bundle, isa, lockstep, profile, randprog
from tinytpu.config import DEFAULT, Config
from tinytpu.golden import interp

STALLS = ("stall_raw", "stall_waw", "stall_unit", "stall_dma", "stall_fence")
MXU_DISTANCES = range(1, 9)


def stall_bins(dma: bool) -> list[tuple[str, str]]:
  """(datapath, stall kind) pairs the SXU can produce (rtl/sxu.sv's stall terms): RAW for readers of
  vector registers and PLD (PSUM tiles the MXU writes), WAW for writers of vector registers and
  VST/PST/VSCATTER (tiles the MXU owns), unit for writers (a booked write-back port) and the VPU
  and MXU (busy), fence for FENCE, and with DMA the DMA-owned tiles and DMA.WAIT."""
  by_dp = {d: [i for i in isa.INSTRS if i.datapath == d] for d in isa.DATAPATHS}
  reads = {d for d, ins in by_dp.items() if any(i.reg_fields("vreg", False) for i in ins)} | {"pld"}
  writes = {d for d, ins in by_dp.items() if any(i.reg_fields("vreg", True) for i in ins)}
  out = [(d, "raw") for d in sorted(reads)] + [(d, "waw") for d in sorted(writes | {"vst", "pst", "scatter"})]
  # VLD's unit stall (its load-port slot taken) cannot happen: VLD is the only writer through VRF
  # port 1, with one latency, and two loads never pair (rtl/sxu.sv), so no two book one slot
  out += [(d, "unit") for d in sorted((writes | {"vpu", "mxu"}) - {"vld"})] + [("ctrl", "fence")]
  if dma:
    out += [(d, "dma") for d in ("dma", "ctrl", "vld", "vst", "gather", "scatter", "mxu")]
    out += [("dma", "unit")]  # a DMA command the engine's queue does not take yet (sxu.sv's stall_unit)
    # --- SparseCore (doc/sparsecore.md): a lookup waits for the DMA engine, then for its index check
    out += [("emb", "dma"), ("emb", "unit")]
  return out


def define(cov, dma: bool = False) -> None:
  cov.bins("retired", [i.mnemonic for i in isa.INSTRS if dma or i.datapath not in ("dma", "emb", "embcfg") and not i.mnemonic.startswith(("DMA.", "EMB."))])
  cov.bins("datapath_x_stall", stall_bins(dma))
  cov.bins("pair", [(a, b) for a in isa.ISSUE_CLASSES for b in isa.ISSUE_CLASSES if a != b])
  cov.bins("outcome", ["ok", "timeout"] + [t for t in isa.TRAP_CODES if t not in ("ok", "timeout") and (dma or t not in ("hbm_out_of_range", "emb_index_out_of_range"))])
  cov.bins("loop_depth", range(isa.LOOP_DEPTH + 1))
  cov.bins("mxu_hazard_distance", MXU_DISTANCES)


def _walk(b: bundle.Bundle) -> list[tuple[int, int, tuple[int, ...]]]:
  """The golden model's (pc, loop depth, scalar registers before) of every executed instruction."""
  m = interp.Machine(b.config)
  m.load(b)
  log = []
  def wrap(pc, f):
    def g(n):
      log.append((pc, len(m.loops), tuple(m.sregs)))
      return f(n)
    return g
  m._fns = [wrap(pc, f) for pc, f in enumerate(m._fns)]
  m.run(b.max_cycles)
  return log


def _mxu_distances(b: bundle.Bundle, log) -> list[int]:
  """For each MMUL, the distance in instructions to the next access of one of its tiles (VST/MLW
  on its VMEM source, PST/PLD on its PSUM destination) within 8 instructions, with the addresses
  the registers give at that point."""
  N, out = b.config.N, []
  def dec(pc):
    try: return isa.decode(b.program[pc], N)
    except (isa.IllegalInstruction, IndexError): return None
  at = lambda v, s, name: interp.s32(s[v[name + "_base"]]) + v[name]
  for i, (pc, _d, s) in enumerate(log):
    d = dec(pc)
    if d is None or d[0].mnemonic not in ("MMUL", "MMUL.BF16"):
      continue
    o = d[1]
    src, dst = range(at(o, s, "src"), at(o, s, "src") + o["T"]), range(at(o, s, "dst"), at(o, s, "dst") + o["T"])
    for k in MXU_DISTANCES:
      if i + k >= len(log) or (e := dec(log[i + k][0])) is None: break
      ins, v = e
      if "addr" in v and "addr_base" in v:
        a = at(v, log[i + k][2], "addr")
        if ins.mnemonic in ("VST", "MLW") and a in src or ins.mnemonic in ("PST", "PLD") and a in dst:
          out.append(k)
          break
  return out


def sample(cov, b: bundle.Bundle) -> str:
  """Run one bundle with traces and bin it; returns its outcome."""
  with tempfile.TemporaryDirectory() as d:
    ev = os.path.join(d, "events.tsv")
    tr = lockstep.rtl_trace(b, events=ev)
    events = profile.read_events(ev)
  res = tr.result
  cls = lambda pc: isa.lookup(b.program[pc]).issue if 0 <= pc < len(b.program) and isa.lookup(b.program[pc]) else ""
  for (c0, pc0, *_a), (c1, pc1, *_b) in zip(tr.retires, tr.retires[1:]):
    if c0 == c1 and cls(pc0) and cls(pc1) and cls(pc0) != cls(pc1):
      cov.hit("pair", (cls(pc0), cls(pc1)))
  for _c, pc, *_r in tr.retires:
    if (ins := isa.lookup(b.program[pc])) is not None:
      cov.hit("retired", ins.mnemonic)
  for s in STALLS:  # every stall counter of the ISA table is a column (a missing one raises)
    for pc in events.pc[events.col(s) > 0].tolist():
      ins = isa.lookup(b.program[pc]) if 0 <= pc < len(b.program) else None
      if ins is not None:
        cov.hit("datapath_x_stall", (ins.datapath, s.removeprefix("stall_")))
  cov.hit("outcome", res.trap if res.status == "trap" else res.status)
  log = _walk(b)
  for _pc, dpt, _s in log:
    cov.hit("loop_depth", dpt)
  for k in _mxu_distances(b, log):
    cov.hit("mxu_hazard_distance", k)
  return res.status


def run(seeds: range, config: Config = DEFAULT, dma: bool | None = None):
  from tinytpu.tb.kit.coverage import Coverage
  cov = Coverage("core", config.name)
  define(cov, randprog.DMA if dma is None else dma)
  for seed in seeds:
    sample(cov, randprog.generate(seed, config, dma=dma))
  return cov


def main(argv: list[str] | None = None) -> int:
  ap = argparse.ArgumentParser(prog="python -m tinytpu.corecov", description=__doc__.splitlines()[0])
  ap.add_argument("--seed", type=int, default=0)
  ap.add_argument("--seeds", type=int, default=50)
  ap.add_argument("--config", default=None)
  ap.add_argument("--dma", action=argparse.BooleanOptionalAction, default=None)
  a = ap.parse_args(argv)
  config = Config.from_str(a.config) if a.config else DEFAULT
  cov = run(range(a.seed, a.seed + a.seeds), config, a.dma)
  path = cov.write("random")
  print(cov.report())
  print(f"written to {path}")
  return 0


if __name__ == "__main__":
  sys.exit(main())
