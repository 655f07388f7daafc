"""The golden model's retire trace: one record per retired instruction, in retire order, naming
what the instruction wrote (issue [3/6] item 1: the per-instruction lockstep compares this with the
RTL's trace; doc/random.md).

  records = trace(bundle)          # [Retire], the last one the HALT or the trapping instruction
  text = format_trace(records)     # one line per record: `n pc MNEMONIC writes...`

A record holds the retire index n (0-based), the pc, the mnemonic and the writes as (resource,
value) pairs in a fixed order: the scalar destination (`s3`), the vector destination (`v2`),
then every VMEM, PSUM and HBM tile whose value changed (`vmem[12]`), each with a 64-bit hash of the
new value (word-wise FNV-1a over the lanes, `tile_hash`; a scalar as its value). A write of a value equal to
the old one is a write of a register (registers always record) but not of a tile (tiles record
when they change: the RTL's trace reports tiles the same way). A trapping instruction writes
nothing and ends the trace with its trap; an instruction whose successor is outside the program
retires with its writes and ends the trace with imem_out_of_range; a timeout ends it after the
last retired instruction.

Choices: tracing steps Machine.run one retire at a time (so the interpreter's own next-pc and loop
rules apply);
memories are compared before and after only for instructions whose table entry writes memory."""
from __future__ import annotations

import dataclasses

import numpy as np

from tinytpu import isa
from tinytpu.bundle import Bundle
from tinytpu.golden.interp import Machine

FNV_OFFSET, FNV_PRIME, M64 = 0xCBF29CE484222325, 0x100000001B3, (1 << 64) - 1


def tile_hash(lanes: np.ndarray) -> int:
  """FNV-1a (64-bit) over 32-bit words: h = (h ^ lane) * FNV_PRIME mod 2^64 for every uint32 lane in
  row-major order, from FNV_OFFSET (a word-wise FNV, so the C++ side hashes a tile in N*N steps)."""
  h = FNV_OFFSET
  for v in np.asarray(lanes, dtype=np.uint32).ravel().tolist():
    h = ((h ^ v) * FNV_PRIME) & M64
  return h


@dataclasses.dataclass
class Retire:
  n: int
  pc: int
  mnemonic: str
  writes: list[tuple[str, int]]   # (resource, value or hash)
  trap: str | None = None         # the trap this instruction raised (it then wrote nothing)


def _writer_kinds(ins: isa.Instr) -> tuple[str | None, str | None, set[str]]:
  """(scalar field written, vector field written, memory spaces written) of a table entry."""
  sd = next(iter(ins.reg_fields("sreg", True)), None)
  vd = next(iter(ins.reg_fields("vreg", True)), None)
  spaces = {("vmem" if o.space == "elem" else o.space) for o in ins.mems if o.write}
  return sd, vd, spaces


def _changed(before: np.ndarray, after: np.ndarray, name: str) -> list[tuple[str, int]]:
  diff = np.flatnonzero((before != after).reshape(len(after), -1).any(axis=1))
  return [(f"{name}[{int(t)}]", tile_hash(after[t])) for t in diff]


def _hbm_changed(before: dict, m: Machine) -> list[tuple[str, int]]:
  out = []
  for p, page in sorted(m.hbm.pages.items()):
    old = before.get(p)
    old = old if old is not None else np.zeros_like(page)
    out += [(f"hbm[{p * len(page) + int(t)}]", tile_hash(page[t])) for t in np.flatnonzero((old != page).reshape(len(page), -1).any(axis=1))]
  return out


def trace(bundle: Bundle) -> list[Retire]:
  """Run a bundle on a fresh golden machine one instruction at a time and record every retire."""
  m = Machine(bundle.config)
  m.load(bundle)
  N, out = m.N, []
  decoded = []
  for w in m.program:
    try:
      ins, _ = isa.decode(w, N)
      decoded.append((ins, *_writer_kinds(ins), w))
    except isa.IllegalInstruction:
      decoded.append((None, None, None, set(), w))
  plen = len(m.program)
  # one instruction per Machine.run (the interpreter's own next-pc and back-edge rules): a run
  # limited to one more retire executes exactly one instruction, or stops at HALT or a trap
  while m.retired < bundle.max_cycles:
    pc, n = m.pc, m.retired
    if not 0 <= pc < plen:  # an empty program
      out.append(Retire(n, pc, "(none)", [], "imem_out_of_range"))
      break
    ins, sd, vd, spaces, w = decoded[pc]
    mn = ins.mnemonic if ins else "(illegal)"
    snap = {"vmem": m.vmem.copy() if "vmem" in spaces else None, "psum": m.psum.copy() if "psum" in spaces else None,
            "hbm": {p: pg.copy() for p, pg in m.hbm.pages.items()} if "hbm" in spaces else None}
    status, trap, _ = m.run(n + 1)
    if m.retired == n:  # a trapping instruction: it wrote nothing
      out.append(Retire(n, pc, mn, [], trap))
      break
    writes = []
    if sd is not None and isa.get_field(w, sd):
      r = isa.get_field(w, sd)
      writes.append((f"s{r}", m.sregs[r]))
    if vd is not None:
      r = isa.get_field(w, vd)
      writes.append((f"v{r}", tile_hash(m.vregs[r])))
    for name in ("vmem", "psum"):
      if snap[name] is not None:
        writes += _changed(snap[name], getattr(m, name), name)
    if snap["hbm"] is not None:
      writes += _hbm_changed(snap["hbm"], m)
    out.append(Retire(n, pc, mn, writes, trap))  # trap: imem_out_of_range after it completed
    if status != "timeout":  # HALT or that trap
      break
  return out


def format_trace(records: list[Retire]) -> str:
  lines = []
  for r in records:
    w = " ".join(f"{k}={v:#x}" for k, v in r.writes)
    lines.append(f"{r.n} {r.pc} {r.mnemonic}" + (f" {w}" if w else "") + (f" trap={r.trap}" if r.trap else ""))
  return "\n".join(lines) + "\n"
