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
- per VMEM and PSUM tile, the sequence of values it took (rebuilt from the memories' writes,
  rtl/sim/vmem_probe.sv, psum_probe.sv, and the preloads; a value that did not change the tile is no write, as in
  the golden trace): the interlocks keep the writes to one tile in program order;
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
  # memory writes as the memories applied them (rtl/sim/vmem_probe.sv, psum_probe.sv): ("T", cycle, mem, tile, lanes),
  # ("E", cycle, mem, element, value), ("P", cycle, tile, row, fresh, lanes); mem 0 VMEM, 1 PSUM
  mwrites: list = dataclasses.field(default_factory=list)


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
  retires, vwrites, mwrites = [], [], []
  with open(path) as f:
    for line in f:
      k, *v = line.split()
      if k == "R":
        retires.append((int(v[0]), int(v[1]), int(v[2]), int(v[3])))
      elif k == "V":
        vwrites.append((int(v[0]), int(v[1]), int(v[2], 16)))
      elif k == "T":
        mwrites.append(("T", int(v[0]), int(v[1]), int(v[2]), [int(x, 16) for x in v[3:]], False))
      elif k == "D":
        mwrites.append(("T", int(v[0]), 0, int(v[1]), [int(x, 16) for x in v[2:]], True))
      elif k == "E":
        mwrites.append(("E", int(v[0]), int(v[1]), int(v[2]), int(v[3], 16)))
      elif k == "P":
        mwrites.append(("P", int(v[0]), int(v[1]), int(v[2]), int(v[3]), [int(x, 16) for x in v[4:]]))
  return RtlTrace(retires, vwrites, None, mwrites)


def _canonical(seq: list[tuple[int, int, bool]], first: int) -> list[tuple[int, int]]:
  """A tile's writes (where, hash, by a DMA) as the values it took: writes that did not change it
  dropped (the golden trace records changes only), then a run of DMA writes counted as its last (a
  DMA's rows may write a tile several times, the golden model's sequential copy records the final
  value once; back-to-back DMAs are compared by their result), then unchanged values dropped again."""
  def changes(xs, prev):
    out = []
    for x in xs:
      if x[1] != prev:
        out.append(x)
        prev = x[1]
    return out
  seq = changes(seq, first)
  seq = [x for i, x in enumerate(seq) if not (x[2] and i + 1 < len(seq) and seq[i + 1][2])]
  return [(at, h) for at, h, _ in changes(seq, first)]


def tile_values(b: Bundle, rtl: RtlTrace) -> dict[str, list[tuple[int, int]]]:
  """Per memory tile (`vmem[12]`, `psum[3]`) the values it took on the RTL, as (cycle, hash),
  rebuilt from the bundle's preloads and the memory writes: a value counts when an instruction's
  write to the tile is complete (a scatter's lanes of one cycle together, an MXU tile after its
  last row), then _canonical."""
  N = b.config.N
  L = N * N
  names = ("vmem", "psum")
  state: dict[tuple[int, int], np.ndarray] = {}
  def tile(mem: int, t: int) -> np.ndarray:
    if (mem, t) not in state:
      state[(mem, t)] = _initial(b, mem, t).copy()
    return state[(mem, t)]
  raw: dict[tuple[int, int], list[tuple[int, int, bool]]] = {}
  def record(mem: int, t: int, cyc: int, dma: bool = False):
    raw.setdefault((mem, t), []).append((cyc, gtrace.tile_hash(state[(mem, t)]), dma))
  i = 0
  while i < len(rtl.mwrites):
    w = rtl.mwrites[i]
    if w[0] == "T":
      _, cyc, mem, t, lanes, dma = w
      tile(mem, t)[:] = lanes
      record(mem, t, cyc, dma)
    elif w[0] == "P":
      _, cyc, t, row, fresh, lanes = w
      v = tile(1, t)
      if fresh:
        v[:] = 0
      v[row * N:(row + 1) * N] = lanes
      if row == N - 1:
        record(1, t, cyc)
    else:  # the lanes of one scatter (one cycle) together
      cyc, touched = w[1], []
      while i < len(rtl.mwrites) and rtl.mwrites[i][0] == "E" and rtl.mwrites[i][1] == cyc:
        _, _, mem, e, val = rtl.mwrites[i]
        tile(mem, e // L)[e % L] = val
        if (mem, e // L) not in touched:
          touched.append((mem, e // L))
        i += 1
      for mem, t in touched:
        record(mem, t, cyc)
      continue
    i += 1
  return {f"{names[m]}[{t}]": c for (m, t), seq in raw.items() if (c := _canonical(seq, gtrace.tile_hash(_initial(b, m, t))))}


def _initial(b: Bundle, mem: int, t: int) -> np.ndarray:
  pre = (b.vmem if mem == 0 else b.psum).get(t)
  return np.zeros(b.config.N ** 2, dtype=np.uint32) if pre is None else np.asarray(pre, dtype=np.uint32).ravel()


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


def _first_mismatch(gold: list[tuple[int, int]], rtl: list[tuple[int, int]], label: str, timeout: bool) -> list[tuple[int, str, int]]:
  """The first k where the k-th golden (retire index, hash) and RTL (cycle, hash) of one register
  or tile differ: [(golden retire index, what, RTL cycle)], or []. `label` has a {} for k."""
  for j in range(max(len(gold), len(rtl))):
    if j < len(gold) and j < len(rtl) and gold[j][1] == rtl[j][1]:
      continue
    if timeout and (j >= len(gold) or j >= len(rtl)):
      return []
    n = gold[j][0] if j < len(gold) else (gold[-1][0] + 1 if gold else 0)
    what = label.format(j + 1) + ": " + (f"RTL {rtl[j][1]:#018x}" if j < len(rtl) else "no RTL write") + ", " + \
      (f"golden {gold[j][1]:#018x}" if j < len(gold) else "no golden write")
    return [(n, what, rtl[j][0] if j < len(rtl) else (rtl[-1][0] if rtl else 0))]
  return []


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
    found += _first_mismatch(gv.get(r, []), rv.get(r, []), f"write {{}} of v{r}", timeout)
  # memory tiles: the k-th value of each VMEM/PSUM tile (each write that changed it)
  graw: dict[str, list[tuple[int, int, bool]]] = {}
  for g in gret:
    for k, v in g.writes:
      if k.startswith(("vmem[", "psum[")):
        graw.setdefault(k, []).append((g.n, v, g.mnemonic == "DMA.IN"))
  gm = {k: c for k, seq in graw.items()
        if (c := _canonical(seq, gtrace.tile_hash(_initial(b, 0 if k[0] == "v" else 1, int(k[5:-1])))))}
  rm = tile_values(b, rtl)
  for t in sorted(set(gm) | set(rm)):
    found += _first_mismatch(gm.get(t, []), rm.get(t, []), f"value {{}} of {t}", timeout)
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
