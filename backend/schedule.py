"""Instruction scheduling of a lowered kernel (virtual registers, before allocation).

The SXU issues in order and holds an instruction until its operands are written (doc/core.md), so a
load followed at once by its user costs a bubble. Within each straight-line block this pass reorders
instructions, as a list scheduler over a model of the issue stage, so that independent work fills
those bubbles. A block ends at every label and at every instruction with an effect beyond registers
and VMEM tiles (control flow, the MXU, PSUM, counters): the MXU schedule written by the lowering
stays exactly as written.

Dependences kept: vector and scalar registers (read after write, write after read, write after
write) and VMEM (a store against any other access to the same tile; two `[sX + imm]` tile accesses
with the same base register and different immediates are distinct tiles, since a redefinition of sX
between them would be ordered by its own register dependences; gathers and scatters touch unknown
tiles). Candidates are limited to a window of the oldest unscheduled instructions, which bounds how
far an instruction moves and so how many registers the schedule keeps live."""
from __future__ import annotations

import collections

from tinytpu import isa
from tinytpu.backend.vcode import VT, Ins, Mem, sdef, sreads, vdef, vreads

WINDOW = 12   # candidates: the oldest unscheduled instructions of the block
BYPASS = 1    # a reader issues in the cycle its operand is written (VRF write-through, doc/core.md)

# instructions that end a block (and stay where they are): by their datapath in the ISA table,
# control flow, issue control, the counters, the MXU, PSUM and the DMA engine (a DMA's tiles are
# a range the VMEM dependences below do not model)
BARRIER_DATAPATHS = ("ctrl", "branch", "loop", "counter", "mxu", "pld", "pst", "dma", "dmacfg")
BARRIERS = {m for m, i in isa.BY_MNEMONIC.items() if i.datapath in BARRIER_DATAPATHS}
# dual issue (doc/core.md): one VMEM tile read, one VMEM tile write, one vector compute op and one
# scalar op; two instructions of different classes issue together (a store then a load of the same
# tile never does: the memory dependence below keeps them a cycle apart)
DUAL = True


class _Node:
  def __init__(self, pos: int, c: Ins):
    self.pos, self.c, self.mn = pos, c, c.mn
    info = isa.BY_MNEMONIC[self.mn]
    self.latency = info.latency
    self.vdef = vdef(c)
    self.vuse = set(vreads(c))
    self.sdef = sdef(c)
    self.suse = sreads(c) - {0}
    self.mem = None  # (store?, base reg, imm) for tile accesses, (store?, None, None) for element accesses
    vm = [(k, o) for k, o in enumerate(info.operands) if o.kind == "mem" and o.space in ("vmem", "elem")]  # a VMEM operand
    if vm:
      k, o = vm[0]
      m = c.ops[k] if o.space == "vmem" and isinstance(c.ops[k], Mem) else None
      self.mem = (o.write, m.base if m else None, m.off if m else None)
    self.pair = info.issue or None  # dual-issue class (the ISA table)
    self.preds: dict[_Node, int] = {}  # predecessor -> cycles from its issue to ours
    self.succs: list[_Node] = []
    self.height = 0


def _conflict(a, b) -> bool:
  if not (a[0] or b[0]):
    return False
  return a[1] is None or b[1] is None or a[1] != b[1] or a[2] == b[2]


def _block(code: list, uses: collections.Counter, regs: int) -> list[tuple[int, tuple]]:
  """The block in its new order, each instruction with the cycle the model issues it in."""
  nodes = [_Node(i, c) for i, c in enumerate(code)]
  raw = lambda p: p.latency + 1 - BYPASS
  last: dict = {}     # register -> its last writer
  readers: dict = {}  # register -> readers since that write
  stores, loads = [], []
  for n in nodes:
    def dep(p: _Node, d: int):
      if p is not n:
        n.preds[p] = max(n.preds.get(p, 0), d)
    for r in list(n.vuse) + [("s", x) for x in n.suse]:
      if (p := last.get(r)) is not None:
        dep(p, raw(p) if isinstance(r, VT) else 1)
    for r in ([n.vdef] if n.vdef is not None else []) + ([("s", n.sdef)] if n.sdef is not None else []):
      for p in readers.get(r, []):
        dep(p, 0)  # after its readers: in the same cycle only as the second of a pair
      if (p := last.get(r)) is not None:
        dep(p, max(1, p.latency - n.latency + 1))
    if n.mem:
      # a store after a load of its tile may issue with it (VMEM's read port returns the old data in
      # the cycle of a write); a load after a store, or two stores, a cycle apart
      for p in stores + (loads if n.mem[0] else []):
        if _conflict(p.mem, n.mem):
          dep(p, 1 if p.mem[0] else 0)
      (stores if n.mem[0] else loads).append(n)
    for r in list(n.vuse) + [("s", x) for x in n.suse]:
      readers.setdefault(r, []).append(n)
    for r in ([n.vdef] if n.vdef is not None else []) + ([("s", n.sdef)] if n.sdef is not None else []):
      last[r], readers[r] = n, []
    for p in n.preds:
      p.succs.append(n)
  for n in reversed(nodes):  # priority: the longest latency path to the end of the block
    n.height = max((s.height + s.preds[n] for s in n.succs), default=n.latency)
  # register pressure: values defined here and still to be read; past what the allocator has once
  # the block's live-in values are placed, an instruction that adds one waits if it can
  inside = {n.vdef for n in nodes if n.vdef is not None}
  livein = {v for n in nodes for v in n.vuse} - inside
  limit = max(4, regs - 1 - len(livein))
  left = collections.Counter(v for n in nodes for v in n.vuse)
  escapes = {v for v in inside if uses[v] > left[v]}
  live: set = set()
  def grows(n: _Node) -> int:
    ends = sum(1 for v in n.vuse if v in live and left[v] == 1 and v not in escapes)
    return (n.vdef is not None and n.vdef not in live) - ends
  done: set[_Node] = set()
  issue: dict[_Node, int] = {}
  out, cycle, pending = [], 0, list(nodes)
  def commit(n: _Node, at: int):
    issue[n] = at
    done.add(n)
    pending.remove(n)
    out.append((at, n.c))
    for v in n.vuse:
      left[v] -= 1
      if left[v] == 0 and v not in escapes:
        live.discard(v)
    if n.vdef is not None:
      live.add(n.vdef)
  ready = lambda n: max((issue[p] + d for p, d in n.preds.items()), default=0)
  while pending:
    cands = [n for n in pending[:WINDOW] if all(p in done for p in n.preds)]
    best = min(cands, key=lambda n: (len(live) + grows(n) > limit, max(ready(n), cycle), -n.height, n.pos))
    cycle = max(ready(best), cycle)
    commit(best, cycle)
    if DUAL and best.pair:  # the next instruction issues with it when its class differs and it is ready
      mates = [n for n in pending[:WINDOW] if n.pair and n.pair != best.pair and all(p in done for p in n.preds)
               and ready(n) <= cycle and len(live) + grows(n) <= limit]
      if mates:  # of the class with the most instructions left (the scarce pairings), then the longest path
        left_by = collections.Counter(n.pair for n in pending)
        commit(min(mates, key=lambda n: (-left_by[n.pair], -n.height, n.pos)), cycle)
    cycle += 1
  return out


def schedule(code: list, regs: int) -> list:
  """The lowering's code (instructions and labels), each block reordered; regs: the vector
  registers the allocator has."""
  uses = collections.Counter(v for c in code for v in vreads(c))
  out, block = [], []
  def flush():
    out.extend([c for _, c in _block(block, uses, regs)] if len(block) > 1 else block)
    block.clear()
  for c in code:
    if isinstance(c, Ins) and c.mn not in BARRIERS:
      block.append(c)
    else:
      flush()
      out.append(c)
  flush()
  return out
