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
from tinytpu.backend.vcode import S0, SR, Ins, Label, sdef, sregs
from tinytpu.config import DEFAULT

HW_LOOPS = isa.HW_LOOPS  # the instructions that push a hardware loop (the ISA table)


def loop_spans(code: list) -> list[tuple[int, int]]:
  """(start, end label index) of every hardware loop, outer loops first."""
  label_at = _labels(code)
  return [(i, label_at[c.ops[-1]]) for i, c in enumerate(code) if isinstance(c, Ins) and c.mn in HW_LOOPS]


def branch_loops(code: list) -> list[tuple[int, int]]:
  """(label index, branch index) of every backward branch: a loop the hardware does not see."""
  label_at = _labels(code)
  return [(label_at[c.ops[-1]], i) for i, c in enumerate(code)
          if isinstance(c, Ins) and c.mn in _BRANCHES and isinstance(c.ops[-1], str) and label_at.get(c.ops[-1], i) < i]


def _labels(code: list) -> dict[str, int]:
  return {c.name: i for i, c in enumerate(code) if isinstance(c, Label)}


_BRANCHES = {m for m, i in isa.BY_MNEMONIC.items() if any(o.kind == "target" for o in i.operands)} - set(HW_LOOPS)


class NoLoopCounter(NotImplementedError):
  """No scalar register is left to count an outer loop in branches (lower_kernel retries frugally)."""


def legalise(code: list, kernel: str = "kernel", virtual: bool = False) -> list:
  """The code with every loop nested deeper than the SXU's stack counted in branches; with `virtual`
  (a kernel whose scalar registers spill.py reallocates) the counters may be names past s15."""
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
  used = {r for c in code if isinstance(c, Ins) for o in c.ops for r in sregs(o)}
  free = sorted(set(range(1, DEFAULT.SREGS)) - used)
  if virtual:
    free += list(range(max(used | {DEFAULT.SREGS - 1}) + 1, max(used | {DEFAULT.SREGS - 1}) + 1 + len(convert)))
  if len(free) < len(convert):
    raise NoLoopCounter(f"TINYTPU kernel {kernel}: loops nest {max(below.values())} deep (the SXU has {isa.LOOP_DEPTH}) "
                              f"and {len(convert) - len(free)} more scalar register(s) are needed to count the outer ones in branches")
  out, edits = list(code), []
  for n, (i, j) in enumerate(convert):
    sc, c = SR(free[n]), code[i]
    count, end = c.ops
    top = f"{end}_top"
    if c.mn == "LOOPI":
      head = [Ins("LI", sc, count)] + ([] if count > 0 else [Ins("JMP", end)])
    else:
      head = [Ins("SADDI", sc, count, 0), Ins("BGE", S0, sc, end)]
    edits.append((i, head + [Label(top)]))
    edits.append((j, [Ins("SADDI", sc, sc, -1), Ins("BLT", S0, sc, top), out[j]]))
  for pos, repl in sorted(edits, key=lambda e: -e[0]):
    out[pos:pos + 1] = repl
  return out


def executed(code: list, weights: list[int] | None = None) -> int | None:
  """Instructions the kernel retires, every loop at its trip count (hardware loops and branch
  loops alike), or None when a count is not a constant of the program (symbolic shapes); weights
  are the instructions each one became after register allocation (spill code)."""
  label_at = _labels(code)
  known: list[dict[SR, int]] = []  # per position: registers whose value LI/SADDI chains give there
  last: dict[SR, int] = {}
  for c in code:
    known.append(dict(last))
    if (d := sdef(c)) is not None:
      d, v = SR(d), None
      if c.mn == "LI":
        v = c.ops[1]
      elif c.mn == "SADDI" and c.ops[1] in last:
        v = last[c.ops[1]] + c.ops[2]
      last.pop(d, None)
      if v is not None:
        last[d] = v
  spans = []  # (first, last, trips)
  for i, c in enumerate(code):
    if isinstance(c, Ins) and c.mn in HW_LOOPS:
      n = c.ops[0] if c.mn == "LOOPI" else known[i].get(c.ops[0])
      if n is None:
        return None
      spans.append((i + 1, label_at[c.ops[-1]] - 1, n))
  for top, br in branch_loops(code):
    if (n := known[top].get(code[br].ops[1])) is None:
      return None
    spans.append((top, br, n))
  total = 0
  mult = []
  for i, c in enumerate(code):
    f = 1
    for s, e, n in spans:
      if s <= i <= e:
        f *= max(n, 0)
    mult.append(f)
    if isinstance(c, Ins):
      total += f * (weights[i] if weights is not None else 1)
  for i, c in enumerate(code):
    # a block skipped in the last iteration of its innermost loop (the streaming passes' prefetch:
    # `BEQ s_left, s0, X_last`) runs once fewer per entry of that loop
    if isinstance(c, Ins) and c.mn == "BEQ" and isinstance(c.ops[-1], str) and c.ops[-1].endswith("_last") \
        and (j := label_at.get(c.ops[-1], -1)) > i:
      inner = min((t for t in spans if t[0] <= i <= t[1]), key=lambda t: t[1] - t[0], default=None)
      if inner is None or inner[2] <= 0:
        continue
      per_entry = mult[i] // inner[2]
      total -= per_entry * sum(weights[k] if weights is not None else 1 for k in range(i + 1, j) if isinstance(code[k], Ins))
  return total
