"""Loop-depth legalisation of a lowered kernel (virtual code, before scheduling).

The SXU keeps at most `isa.LOOP_DEPTH` hardware loops active (LOOP/LOOPI push its loop stack and
trap `loop_stack` past that). A kernel whose loops nest deeper (reduces of reduces inside several
output loops, gradients) keeps its innermost loops in hardware, where the zero-overhead back edge
matters, and turns the outer ones into counted branch loops:

    LOOPI n, end          LI sc, n                  (LOOP sa: SADDI sc, sa, 0; BGE s0, sc, end)
      body          ->  top:  body
    end:                      SADDI sc, sc, -1
                              BLT s0, sc, top
                        end:

Each counter takes a scalar register the kernel does not use anywhere; when none is left the kernel
is refused with NotImplementedError before it runs (it would trap on the core)."""
from __future__ import annotations

from tinytpu import isa
from tinytpu.backend.vcode import S0, SR, sdef, sregs
from tinytpu.config import DEFAULT

HW_LOOPS = ("LOOP", "LOOPI")


def loop_spans(code: list[tuple]) -> list[tuple[int, int]]:
  """(start, end label index) of every hardware loop, outer loops first."""
  label_at = {c[1]: i for i, c in enumerate(code) if c[0] == "label"}
  return [(i, label_at[c[-1]]) for i, c in enumerate(code) if c[0] == "ins" and c[1] in HW_LOOPS]


def branch_loops(code: list[tuple]) -> list[tuple[int, int]]:
  """(label index, branch index) of every backward branch: a loop the hardware does not see."""
  label_at = {c[1]: i for i, c in enumerate(code) if c[0] == "label"}
  return [(label_at[c[-1]], i) for i, c in enumerate(code)
          if c[0] == "ins" and c[1] in _BRANCHES and isinstance(c[-1], str) and label_at.get(c[-1], i) < i]


_BRANCHES = {m for m, i in isa.BY_MNEMONIC.items() if any(o.kind == "target" for o in i.operands)} - set(HW_LOOPS)


def legalise(code: list[tuple], kernel: str = "kernel") -> list[tuple]:
  spans = loop_spans(code)
  inside = {s: [t for t in spans if t[0] < s[0] and s[1] <= t[1]] for s in spans}  # enclosing loops
  below = {}  # loops in the deepest chain from s down, s included
  for s in sorted(spans, key=lambda s: s[1] - s[0]):
    below[s] = 1 + max((below[t] for t in spans if s[0] < t[0] and t[1] <= s[1]), default=0)
  convert = []
  for s in spans:  # outermost first: keep the inner loops in hardware
    if sum(1 for t in inside[s] if t not in convert) + below[s] > isa.LOOP_DEPTH:
      convert.append(s)
  if not convert:
    return code
  free = sorted(set(range(1, DEFAULT.SREGS)) - {r for c in code if c[0] == "ins" for o in c[2:] for r in sregs(o)})
  if len(free) < len(convert):
    raise NotImplementedError(f"TINYTPU kernel {kernel}: loops nest {max(below.values())} deep (the SXU has {isa.LOOP_DEPTH}) "
                              f"and {len(convert) - len(free)} more scalar register(s) are needed to count the outer ones in branches")
  out, edits = list(code), []
  for n, (i, j) in enumerate(convert):
    sc, c = SR(free[n]), code[i]
    top = f"{c[-1]}_top"
    if c[1] == "LOOPI":
      head = [("ins", "LI", sc, c[2])] + ([] if c[2] > 0 else [("ins", "JMP", c[-1])])
    else:
      head = [("ins", "SADDI", sc, c[2], 0), ("ins", "BGE", S0, sc, c[-1])]
    edits.append((i, head + [("label", top)]))
    edits.append((j, [("ins", "SADDI", sc, sc, -1), ("ins", "BLT", S0, sc, top), out[j]]))
  for pos, repl in sorted(edits, key=lambda e: -e[0]):
    out[pos:pos + 1] = repl
  return out


def executed(code: list[tuple], weights: list[int] | None = None) -> int | None:
  """Instructions the kernel retires, every loop at its trip count (hardware loops and branch
  loops alike), or None when a count is not a constant of the program (symbolic shapes); weights
  are the instructions each one became after register allocation (spill code)."""
  label_at = {c[1]: i for i, c in enumerate(code) if c[0] == "label"}
  li: dict[int, dict[SR, int]] = {}  # position -> the values the nearest LIs before it gave registers
  last: dict[SR, int] = {}
  for i, c in enumerate(code):
    li[i] = dict(last)
    if c[0] == "ins" and c[1] == "LI":
      last[c[2]] = c[3]
    elif c[0] == "ins" and c[1] == "SADDI" and c[3] in last:
      last[c[2]] = last[c[3]] + c[4]
    elif c[0] == "ins" and len(c) > 2 and isinstance(c[2], SR) and c[2] in last and sdef(c) is not None:
      del last[c[2]]  # written by something else
  spans = []  # (first, last, trips)
  for i, c in enumerate(code):
    if c[0] != "ins":
      continue
    if c[1] == "LOOPI":
      spans.append((i + 1, label_at[c[-1]] - 1, c[2]))
    elif c[1] == "LOOP":
      if (n := li[i].get(c[2])) is None:
        return None
      spans.append((i + 1, label_at[c[-1]] - 1, n))
  for top, br in branch_loops(code):
    if (n := li[top].get(code[br][3])) is None:
      return None
    spans.append((top, br, n))
  total = 0
  for i, c in enumerate(code):
    if c[0] == "ins":
      f = 1
      for s, e, n in spans:
        if s <= i <= e:
          f *= max(n, 0)
      total += f * (weights[i] if weights is not None else 1)
  return total
