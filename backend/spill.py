"""Scalar register allocation with spilling, for the kernels that run out of the SXU's 15 registers.

The lowering hands out physical scalar registers (s1..s15) as it goes. A kernel that needs more
than 15 at once even lowered frugally (lower.py) is lowered a third time with `spill` set: the
lowering then hands out names past s15 when the physical ones are taken (and loops.legalise counts
branch loops in such names), and this pass maps every name onto the real registers, after
scheduling and before the vector allocation (regalloc.py):

- each name's live range is the one regalloc.live_ranges gives (first to last mention, widened over
  the loops it is live into); kernel variables stay in the registers the runtime preloads;
- a linear scan over s1..s(15-S) keeps S registers as reload scratch (S = 1, 2 or 3: the fewest
  with which no instruction names more spilled registers than there are scratch registers); when
  a range starts and no register is free, the coldest of the live ranges is spilled: the one whose
  mentions cost least, each weighted by 16 per loop around it (outer loop counters, bases that
  change once per outer iteration), so hot inner-loop registers stay in registers;
- a spilled name lives in a vector register, as a splat: every write is followed by
  `VSPLAT v_k, s_scratch` and every read preceded by `VEXTRACT s_scratch, v_k, 0, 0`. The v_k are
  virtual tiles like any other, so the vector allocator keeps them in vector registers while
  there is room and spills them to its VMEM scratch tiles when not (a `VLD` before the extract, a
  `VST` after the splat).

The SXU has no scalar load or store; VSPLAT and VEXTRACT are its scalar <-> vector moves (doc/isa.md).
Kernels that fit in 15 registers never come here: their programs are unchanged."""
from __future__ import annotations

from tinytpu.backend import loops
from tinytpu.backend.regalloc import live_ranges
from tinytpu.backend.vcode import SR, VT, Ins, Label, Mem, sdef, sreads, sregs
from tinytpu.config import DEFAULT

MAX_SCRATCH = 3  # an instruction names at most three scalar registers (SADD sd, sa, sb)
LOOP_WEIGHT = 16  # a mention inside a loop costs this much more than one outside it


class OutOfScalarRegisters(NotImplementedError):
  """Even with spilling, some instruction needs more scalar registers than the SXU has."""


def _names(c) -> list[int]:
  return [r for o in c.ops for r in sregs(o) if r] if isinstance(c, Ins) else []


def _weights(code: list) -> list[int]:
  """Per entry: LOOP_WEIGHT ** (the loops around it)."""
  depth = [0] * (len(code) + 1)
  for s, e in loops.loop_spans(code) + loops.branch_loops(code):
    depth[s + 1] += 1
    depth[e] -= 1
  out, d = [], 0
  for i in range(len(code)):
    d += depth[i]
    out.append(LOOP_WEIGHT ** d)
  return out


def assign(code: list, pinned: set[int], scratch: int, nregs: int = DEFAULT.SREGS) -> tuple[dict[int, int], set[int], list[int]]:
  """(name -> physical register, spilled names, scratch registers) of a linear scan over the
  registers neither pinned nor among the top `scratch` ones (the scratch registers)."""
  first, last = live_ranges(code, _names)
  free_regs = [r for r in range(1, nregs) if r not in pinned]
  if len(free_regs) <= scratch:
    raise OutOfScalarRegisters(f"{len(pinned)} kernel variables leave no scalar registers to spill through")
  free = free_regs[:len(free_regs) - scratch][::-1]  # pop() gives the lowest
  w = _weights(code)
  cost: dict[int, int] = {}
  for i, c in enumerate(code):
    for r in _names(c):
      cost[r] = cost.get(r, 0) + w[i]
  phys = {r: r for r in pinned}
  spilled: set[int] = set()
  active: list[int] = []
  for v in sorted((n for n in first if n not in pinned), key=lambda n: first[n]):
    for a in list(active):
      if last[a] < first[v]:
        active.remove(a)
        free.append(phys[a])
    if free:
      phys[v] = free.pop()
      active.append(v)
      continue
    victim = min(active + [v], key=lambda x: (cost[x], -last[x]))
    spilled.add(victim)
    if victim != v:
      phys[v] = phys.pop(victim)
      active.remove(victim)
      active.append(v)
  return phys, spilled, free_regs[len(free_regs) - scratch:]


def reallocate(code: list, pinned: set[int], kernel: str = "kernel") -> tuple[list, list[int]]:
  """The code over the physical scalar registers with its spill code, and for every entry of it the
  index of the entry of `code` it comes from (the retired-instruction count weighs them)."""
  if max((r for c in code for r in _names(c)), default=0) < DEFAULT.SREGS:
    return code, list(range(len(code)))
  for scratch in range(1, MAX_SCRATCH + 1):
    phys, spilled, pool = assign(code, pinned, scratch)
    if all(len({r for r in _names(c) if r in spilled}) <= scratch for c in code):
      break
  else:
    raise OutOfScalarRegisters(f"TINYTPU kernel {kernel}: out of scalar registers even with spilling")
  home = {r: VT(f"s{r}spill") for r in sorted(spilled)}
  out, origin = [], []
  for i, c in enumerate(code):
    if isinstance(c, Label):
      out.append(c)
      origin.append(i)
      continue
    d = sdef(c)
    reads = sorted({r for r in sreads(c) if r in spilled})
    temp = dict(zip(reads, pool))
    if d in spilled and d not in temp:
      temp[d] = pool[0]  # sources are read at issue: the result may take a source's scratch
    m = lambda r: 0 if r == 0 else temp[r] if r in temp else phys[r]
    ops = tuple(SR(m(o.n)) if isinstance(o, SR) else Mem(m(o.base), o.off) if isinstance(o, Mem) else o for o in c.ops)
    new = [Ins("VEXTRACT", SR(temp[r]), home[r], 0, 0) for r in reads] + [c.with_ops(*ops)]
    if d in spilled:
      new.append(Ins("VSPLAT", home[d], SR(temp[d])))
    out += new
    origin += [i] * len(new)
  return out, origin
