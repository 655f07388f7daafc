"""The lowering's code before register allocation: a list of instructions (Ins: a mnemonic and its
operands) and labels (Label). Operands are typed: vector registers are virtual tiles (VT), scalar
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


class Ins:
  """One instruction: a mnemonic of the ISA table and its operands, in the table's order. Compared
  by identity (passes find and replace the very instruction they looked at)."""
  __slots__ = ("mn", "ops")

  def __init__(self, mn: str, *ops):
    self.mn, self.ops = mn, ops

  @property
  def info(self) -> isa.Instr:
    return isa.BY_MNEMONIC[self.mn]

  def with_ops(self, *ops) -> "Ins":
    return Ins(self.mn, *ops)

  def __repr__(self):
    return f"{self.mn} {', '.join(map(str, self.ops))}".rstrip()


@dataclasses.dataclass(frozen=True)
class Label:
  """A branch or loop target: the position of the next instruction."""
  name: str


Code = list  # of Ins | Label


def _writes_first(c: Ins) -> bool:
  ops = c.info.operands
  return bool(ops) and ops[0].written


def vts(c) -> list[VT]:
  """Every vector operand of an entry, in order."""
  return [o for o in c.ops if isinstance(o, VT)] if isinstance(c, Ins) else []


def vdef(c) -> VT | None:
  """The vector register an instruction writes (its destination operand vd)."""
  return c.ops[0] if isinstance(c, Ins) and c.ops and isinstance(c.ops[0], VT) and _writes_first(c) else None


def vreads(c) -> list[VT]:
  """The vector registers an instruction reads."""
  ops = vts(c)
  return ops[1:] if vdef(c) is not None else ops


def sdef(c) -> int | None:
  """The scalar register an instruction writes (its destination operand sd)."""
  return c.ops[0].n if isinstance(c, Ins) and c.ops and isinstance(c.ops[0], SR) and _writes_first(c) else None


def sregs(operand) -> list[int]:
  """The scalar registers an operand names (a register, or a memory operand's base)."""
  return [operand.n] if isinstance(operand, SR) else [operand.base] if isinstance(operand, Mem) else []


def sreads(c) -> set[int]:
  """The scalar registers an instruction reads (s0 included)."""
  if not isinstance(c, Ins):
    return set()
  ops = c.ops[1:] if sdef(c) is not None else c.ops
  return {r for o in ops for r in sregs(o)}
