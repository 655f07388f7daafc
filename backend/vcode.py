"""The lowering's code before register allocation: a list of ("ins", mnemonic, *operands) and
("label", name) entries. Operands are typed: vector registers are virtual tiles (VT), scalar
registers physical (SR), memory operands a base register and an offset (Mem), immediates ints and
branch targets label names. Which operands an instruction reads and writes comes from the ISA
table's operand roles (isa.Operand.written); the lowering, the peephole pass, the loop pass, the
scheduler and the allocator all ask through these helpers. Text exists only in the listing."""
from __future__ import annotations

import dataclasses

from tinytpu import isa


class VT:
  """A virtual tile register."""
  _n = 0

  def __init__(self, name: str = ""):
    VT._n += 1
    self.id, self.name = VT._n, name

  def __repr__(self):
    return f"%{self.id}{self.name}"


@dataclasses.dataclass(frozen=True)
class SR:
  """A scalar register (s0 reads 0)."""
  n: int

  def __str__(self):
    return f"s{self.n}"


@dataclasses.dataclass(frozen=True)
class Mem:
  """A memory operand [s<base> + off] (a VMEM or PSUM tile address)."""
  base: int
  off: int

  def __str__(self):
    return f"[s{self.base} + {self.off}]"


S0 = SR(0)


def _writes_first(c: tuple) -> bool:
  ops = isa.BY_MNEMONIC[c[1]].operands
  return bool(ops) and ops[0].written


def vts(c: tuple) -> list[VT]:
  """Every vector operand of an entry, in order."""
  return [o for o in c[2:] if isinstance(o, VT)] if c[0] == "ins" else []


def vdef(c: tuple) -> VT | None:
  """The vector register an instruction writes (its destination operand vd)."""
  return c[2] if c[0] == "ins" and len(c) > 2 and isinstance(c[2], VT) and _writes_first(c) else None


def vreads(c: tuple) -> list[VT]:
  """The vector registers an instruction reads."""
  ops = vts(c)
  return ops[1:] if vdef(c) is not None else ops


def sdef(c: tuple) -> int | None:
  """The scalar register an instruction writes (its destination operand sd)."""
  return c[2].n if c[0] == "ins" and len(c) > 2 and isinstance(c[2], SR) and _writes_first(c) else None


def sregs(operand) -> list[int]:
  """The scalar registers an operand names (a register, or a memory operand's base)."""
  return [operand.n] if isinstance(operand, SR) else [operand.base] if isinstance(operand, Mem) else []


def sreads(c: tuple) -> set[int]:
  """The scalar registers an instruction reads (s0 included)."""
  if c[0] != "ins":
    return set()
  ops = c[3:] if sdef(c) is not None else c[2:]
  return {r for o in ops for r in sregs(o)}
