"""Per-instruction lockstep (issue [3/6] item 1, doc/random.md): the RTL's retire trace (the
co-sim run with TINYTPU_RETIRE, rtl/sim/retire_probe.sv) against the golden model's
(golden/trace.py), instruction by instruction.

  divergence(bundle) -> list[str]   [] when they agree; else the first divergence: the retire index,
                                    pc and instruction, what differs, the RTL cycle and the events
                                    around it (the pipeline state), then the VMEM/PSUM hashes

What is compared, in order of retirement:
- the pc of every retired instruction (the RTL's slot 0 then slot 1 of a cycle);
- the scalar register it writes and the value (except RDCYCLE and timing RDPERF: timing values);
- per vector register, the sequence of values written (hashes): the RTL writes a result when it
  lands, possibly after later instructions retired, but the writes to one register keep program
  order (the WAW interlock), so the k-th write of v3 in the RTL is the k-th write of v3 in the
  golden trace, whose instruction is known;
- then, when every instruction agreed, a hash of the whole VMEM and of the whole PSUM (dumped in
  full for the comparison).
A timeout stops the two models at different places: only the common prefix is compared."""
from __future__ import annotations

import dataclasses
import os
import re
import tempfile

import numpy as np

from tinytpu import asm, bundle, cosim, isa
from tinytpu.bundle import Bundle
from tinytpu.golden import interp
from tinytpu.golden import trace as gtrace


_REG = re.compile(r"[sv]\d+")  # a register write of a golden record (memory tiles are vmem[...], psum[...])


@dataclasses.dataclass
class RtlTrace:
  retires: list[tuple[int, int, int, int]]        # (cycle, pc, sreg or -1, value)
  vwrites: list[tuple[int, int, int]]             # (cycle, vreg, hash)
  result: bundle.Result | None


def _full_dumps(b: Bundle) -> Bundle:
  c = b.config
  return dataclasses.replace(b, dumps=[("vmem", 0, c.VMEM_TILES), ("psum", 0, c.PSUM_TILES), ("sreg", 0, 16)])


def rtl_trace(b: Bundle, events: str | os.PathLike | None = None) -> RtlTrace:
  """Run the bundle on the co-sim binary once with the retire trace on (and the per-cycle event
  table written to `events` if given)."""
  with tempfile.TemporaryDirectory() as d:
    path = os.path.join(d, "retire.txt")
    res = cosim.run_bundle(b, events=events, retire=path)
    tr = read_retires(path)
  tr.result = res
  return tr


def read_retires(path: str | os.PathLike) -> RtlTrace:
  """The file a TINYTPU_RETIRE run wrote (rtl/sim/retire_trace.cpp); result None."""
  retires, vwrites = [], []
  with open(path) as f:
    for line in f:
      k, *v = line.split()
      if k == "R":
        retires.append((int(v[0]), int(v[1]), int(v[2]), int(v[3])))
      elif k == "V":
        vwrites.append((int(v[0]), int(v[1]), int(v[2], 16)))
  return RtlTrace(retires, vwrites, None)


def _timing(ins: isa.Instr | None, word: int) -> bool:
  return ins is not None and (ins.mnemonic == "RDCYCLE" or ins.mnemonic == "RDPERF" and isa.get_field(word, "imm") != isa.PERF["retired"])


def _decode(b: Bundle, pc: int):
  try:
    return isa.decode(b.program[pc], b.config.N)[0]
  except (isa.IllegalInstruction, IndexError):
    return None


def _mem_hash(dumps, kind: str) -> int:
  tiles = [t for k, _, t in dumps if k == kind]
  return gtrace.tile_hash(np.stack(tiles)) if tiles else 0


def compare(b: Bundle, gold: list[gtrace.Retire], rtl: RtlTrace, timeout: bool) -> list[str]:
  """The first divergence as report lines ([] if none). `timeout`: compare the common prefix only."""
  found: list[tuple[int, str, int]] = []  # (golden retire index, what, RTL cycle)
  gret = [r for r in gold if r.trap in (None, "imem_out_of_range")]  # the instructions that completed
  for i, (g, (cyc, pc, sreg, val)) in enumerate(zip(gret, rtl.retires)):
    if g.pc != pc:
      found.append((i, f"retired pc {pc} on the RTL, {g.pc} in the golden model", cyc))
      break
    gw = next(((int(k[1:]), v) for k, v in g.writes if _REG.fullmatch(k) and k[0] == "s"), None)
    if _timing(_decode(b, pc), b.program[pc]):
      continue
    rw = (sreg, val) if sreg >= 0 else None
    if gw != rw:
      show = lambda w: f"s{w[0]} = {w[1]:#010x}" if w else "no scalar write"
      found.append((i, f"scalar write: RTL {show(rw)}, golden {show(gw)}", cyc))
      break
  if len(gret) != len(rtl.retires) and not timeout:
    n = min(len(gret), len(rtl.retires))
    cyc = rtl.retires[n - 1][0] if n and n <= len(rtl.retires) else 0
    found.append((n, f"{len(rtl.retires)} instructions retired on the RTL, {len(gret)} in the golden model", cyc))
  # vector registers: the k-th write of each register
  gv: dict[int, list[tuple[int, int]]] = {}
  for g in gret:
    for k, v in g.writes:
      if _REG.fullmatch(k) and k[0] == "v":
        gv.setdefault(int(k[1:]), []).append((g.n, v))
  rv: dict[int, list[tuple[int, int]]] = {}
  for cyc, r, h in rtl.vwrites:
    rv.setdefault(r, []).append((cyc, h))
  for r in sorted(set(gv) | set(rv)):
    a, c = gv.get(r, []), rv.get(r, [])
    for j in range(max(len(a), len(c))):
      if j < len(a) and j < len(c) and a[j][1] == c[j][1]:
        continue
      if timeout and (j >= len(a) or j >= len(c)):
        break
      n = a[j][0] if j < len(a) else (a[-1][0] + 1 if a else 0)
      what = f"write {j + 1} of v{r}: " + (f"RTL {c[j][1]:#018x}" if j < len(c) else "no RTL write") + ", " + \
        (f"golden {a[j][1]:#018x}" if j < len(a) else "no golden write")
      found.append((n, what, c[j][0] if j < len(c) else (c[-1][0] if c else 0)))
      break
  if found:
    n, what, cyc = min(found, key=lambda x: x[0])
    pc = gret[n].pc if n < len(gret) else None
    ins = f"pc {pc}: {asm.disassemble_word(b.program[pc], b.config.N)}" if pc is not None and _decode(b, pc) else f"pc {pc}"
    lines = [f"first divergence at retired instruction {n} ({ins}): {what} (RTL cycle {cyc})", "  RTL events around it:"]
    events = sorted([(c, f"retire pc {p}" + (f" s{s}={v:#x}" if s >= 0 else "")) for c, p, s, v in rtl.retires] +
                    [(c, f"write v{r} {h:#x}") for c, r, h in rtl.vwrites])
    lines += [f"    cycle {c}: {e}" for c, e in events if abs(c - cyc) <= 2][:16]
    return lines
  return []


def divergence(b: Bundle) -> list[str]:
  """Run the bundle on both models with traces and full memory dumps; the first divergence, or
  the memory hashes that differ, as report lines ([] when they agree)."""
  full = _full_dumps(b)
  gold = gtrace.trace(full)
  rtl = rtl_trace(full)
  gres = interp.run(full)
  lines = compare(full, gold, rtl, timeout=gres.status == "timeout" or rtl.result.status == "timeout")
  for kind in ("vmem", "psum"):
    hg, hr = _mem_hash(gres.dumps, kind), _mem_hash(rtl.result.dumps, kind)
    if hg != hr and gres.status != "timeout":
      lines.append(f"hash of all of {kind.upper()}: RTL {hr:#018x}, golden {hg:#018x}")
  return lines
