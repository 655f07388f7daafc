"""Register allocation and emission: dead-code removal of the virtual code, then a loop-aware linear
scan over the 16 vector registers spilling to VMEM scratch tiles; the text of the listing."""
from __future__ import annotations


from tinytpu.backend import loops
from tinytpu.backend.vcode import SR, VT, Ins, Label, sregs, vdef, vreads, vts
from tinytpu.config import DEFAULT


def _dce(code: list) -> list:
  """Drop vector instructions whose result no side effect (store, scatter, extract) ever needs."""
  live: set[VT] = set()
  for c in code:
    if vdef(c) is None:
      live.update(vts(c))
  changed = True
  while changed:
    changed = False
    for c in code:
      if (d := vdef(c)) is not None and d in live and not live.issuperset(srcs := vreads(c)):
        live.update(srcs)
        changed = True
  return [c for c in code if (d := vdef(c)) is None or d in live]


def _drop_unused(code: list, regs: list[int]) -> list:
  """Drop the LI/SADDI bookkeeping of pointer registers nothing else reads any more."""
  for r in regs:
    if not r:
      continue
    own = lambda c: isinstance(c, Ins) and c.mn in ("LI", "SADDI") and c.ops[0] == SR(r)
    if not any(isinstance(c, Ins) and not own(c) and any(r in sregs(o) for o in c.ops) for c in code):
      code = [c for c in code if not own(c)]
  return code


SCRATCH = 3  # physical registers kept for reloading spilled operands
NPHYS = DEFAULT.VREGS - SCRATCH


def live_ranges(code: list, names) -> tuple[dict, dict]:
  """(first, last) instruction index of every register `names(entry)` lists, the range widened so
  that a value live into a loop (hardware or branch loop) stays live to the loop's end: it is read
  again in the next iteration. Used for the vector registers here and the scalar ones (spill.py)."""
  # loop extents in instruction indices: hardware loops (LOOP/LOOPI at i ... label at j) and branch loops
  spans = loops.loop_spans(code) + loops.branch_loops(code)
  first: dict = {}
  last: dict = {}
  for i, c in enumerate(code):
    for v in names(c):
      first.setdefault(v, i)
      last[v] = i
  changed = True
  while changed:
    changed = False
    for s, e in spans:
      for v in first:
        if first[v] < s < last[v] <= e:
          if last[v] < e:
            last[v], changed = e, True
  return first, last


def allocate(code: list, spill_base: int) -> tuple[str, int, list[int]]:
  first, last = live_ranges(code, vts)
  order = sorted(first, key=lambda v: first[v])
  phys: dict[VT, int] = {}
  spill: dict[VT, int] = {}
  active: list[VT] = []
  free = list(range(NPHYS))
  for v in order:
    start = first[v]
    for a in list(active):
      if last[a] < start:
        active.remove(a)
        free.append(phys[a])
    if free:
      phys[v] = free.pop()
      active.append(v)
      continue
    victim = max(active + [v], key=lambda x: last[x])
    if victim is v:
      spill[v] = len(spill)
    else:
      phys[v] = phys.pop(victim)
      spill[victim] = len(spill)
      active.remove(victim)
      active.append(v)
  out, weights = [], []  # weights: instructions each virtual one became (spill reloads and stores included)
  for c in code:
    if isinstance(c, Label):
      out.append(f"{c.name}:")
      weights.append(0)
      continue
    mn, ops = c.mn, list(c.ops)
    pre, post = [], []
    dst_first = vdef(c) is not None
    srcs = vreads(c)
    mapping: dict[VT, int] = {}
    scratch = list(range(NPHYS, DEFAULT.VREGS))
    for o in srcs:  # spilled sources are reloaded into scratch registers
      if o not in phys and o not in mapping:
        mapping[o] = scratch.pop(0)
        pre.append(f"VLD v{mapping[o]}, [s0 + {spill_base + spill[o]}]")
    if dst_first and ops[0] not in phys:  # a spilled result is computed in scratch (sources are read first) and stored
      d = ops[0]
      if d not in mapping:
        mapping[d] = scratch.pop(0) if scratch else NPHYS
      post.append(f"VST v{mapping[d]}, [s0 + {spill_base + spill[d]}]")
    text_ops = [f"v{phys[o]}" if isinstance(o, VT) and o in phys else f"v{mapping[o]}" if isinstance(o, VT) else str(o) for o in ops]
    out += pre + [f"  {mn} {', '.join(text_ops)}".rstrip()] + post
    weights.append(1 + len(pre) + len(post))
  return "\n".join(out) + "\n", len(spill), weights
