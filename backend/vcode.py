"""The lowering's code before register allocation: a list of ("ins", mnemonic, *operands) and
("label", name) entries. Vector operands are virtual tiles (VT); scalar operands are register
names ("s3") or tile addresses ("[s3 + 4]"); the rest are ints and label names. The lowering, the
peephole pass, the scheduler and the allocator all read operands through these helpers."""
from __future__ import annotations

import re

NO_VDEF = ("VST", "VSCATTER", "PST")  # instructions whose vector operands are all read
SREG = re.compile(r"\bs(\d+)\b")


class VT:
  """A virtual tile register."""
  _n = 0

  def __init__(self, name: str = ""):
    VT._n += 1
    self.id, self.name = VT._n, name

  def __repr__(self):
    return f"%{self.id}{self.name}"


def vts(c: tuple) -> list[VT]:
  """Every vector operand of an entry, in order."""
  return [o for o in c[2:] if isinstance(o, VT)] if c[0] == "ins" else []


def vdef(c: tuple) -> VT | None:
  """The vector register an instruction writes (its first operand, unless it stores)."""
  return c[2] if c[0] == "ins" and c[1] not in NO_VDEF and len(c) > 2 and isinstance(c[2], VT) else None


def vreads(c: tuple) -> list[VT]:
  """The vector registers an instruction reads."""
  ops = vts(c)
  return ops[1:] if vdef(c) is not None else ops


def sregs(operand) -> list[int]:
  """The scalar registers named in one operand ("s3", "[s3 + 4]")."""
  return [int(r) for r in SREG.findall(operand)] if isinstance(operand, str) else []
