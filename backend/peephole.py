"""Local clean-ups of a lowered kernel (virtual registers, before scheduling), each within a
straight-line block (no label in between, so no loop back edge can observe the change):

- an integer add of a register last filled with 0 is a move (`acc = 0; acc = acc + x` is `acc = x`);
- a move from a temporary defined once and read only by that move retargets the definition
  (`t = a + b; acc = t` is `acc = a + b`), when nothing in between touches the destination;
- a definition overwritten before any read is dropped;
- pure vector instructions whose operands an innermost loop does not change move in front of it.

The lowering emits these shapes on purpose (register accumulators are stable across loop iterations,
every value gets a fresh register); this pass removes them where the straight-line code allows."""
from __future__ import annotations

import collections

from tinytpu import isa
from tinytpu.backend.schedule import BARRIERS
from tinytpu.backend.vcode import Ins, Label, sdef, sreads, vdef, vreads


def _boundary(c) -> bool:
  """A label or control flow (a loop start is the target of its back edge), the MXU or PSUM."""
  return not isinstance(c, Ins) or c.mn in BARRIERS


def _fold_zero_adds(code: list) -> list:
  out, zero = [], set()
  for c in code:
    if _boundary(c):
      zero.clear()
    elif c.mn == "VADD" and (c.ops[1] in zero or c.ops[2] in zero):
      c = Ins("VMOV", c.ops[0], c.ops[2] if c.ops[1] in zero else c.ops[1])
    if (d := vdef(c)) is not None:
      zero.discard(d)
      if c.mn == "VFILL" and c.ops[1] == 0:
        zero.add(d)
    out.append(c)
  return out


def _retarget_moves(code: list) -> list:
  defs, uses = collections.Counter(), collections.Counter()
  for c in code:
    if (d := vdef(c)) is not None:
      defs[d] += 1
    for u in vreads(c):
      uses[u] += 1
  code, where = list(code), {}
  for i, c in enumerate(code):
    if _boundary(c):
      where.clear()
      continue
    if c.mn == "VMOV" and defs[t := c.ops[1]] == 1 and uses[t] == 1 and t in where:
      j, d = where[t], c.ops[0]
      if all(d not in vreads(x) and vdef(x) is not d for x in code[j + 1:i] if x is not None):
        code[j] = code[j].with_ops(d, *code[j].ops[1:])
        code[i] = None
        where[d] = j
        continue
    if (d := vdef(c)) is not None:
      where[d] = i
  return [c for c in code if c is not None]


def _drop_overwritten(code: list) -> list:
  code, pending = list(code), {}  # register -> index of its unread definition in this block
  for i, c in enumerate(code):
    if _boundary(c):
      pending.clear()
      continue
    for u in vreads(c):
      pending.pop(u, None)
    if (d := vdef(c)) is not None:
      if d in pending:
        code[pending[d]] = None
      pending[d] = i
  return [c for c in code if c is not None]


_PURE = {m for m, i in isa.BY_MNEMONIC.items() if i.datapath in ("mov", "vpu", "xlu")}  # register-to-register vector datapaths
HOIST_LOOP = 4  # invariant values hoisted per loop (each keeps a register for the whole loop)


def _hoist_invariants(code: list) -> list:
  """Move pure vector instructions whose operands do not change in an innermost loop in front of it."""
  defs = collections.Counter(d for c in code if (d := vdef(c)) is not None)
  code = list(code)
  for i, c in enumerate(code):
    if not isinstance(c, Ins) or c.mn not in isa.HW_LOOPS:
      continue
    end = next(j for j in range(i + 1, len(code)) if code[j] == Label(c.ops[-1]))
    body = code[i + 1:end]
    if any(not isinstance(x, Ins) or x.mn in isa.HW_LOOPS for x in body):
      continue  # not innermost
    inside = {vdef(x) for x in body} - {None}
    written = {r for x in body if (r := sdef(x)) is not None}
    moved = []
    for x in body:
      # (constant fills stay: the lowering already keeps the most used ones in registers)
      if len(moved) < HOIST_LOOP and x.mn in _PURE and (d := vdef(x)) is not None and defs[d] == 1 and vreads(x) \
          and not any(u in inside for u in vreads(x)) and not sreads(x) & written:
        moved.append(x)
        inside.discard(d)
    if moved:
      keep = [x for x in body if not any(x is m for m in moved)]
      code[i:end] = moved + [c] + keep
  return code


def optimize(code: list) -> list:
  return _hoist_invariants(_drop_overwritten(_retarget_moves(_fold_zero_adds(code))))
