"""The items of a random program's tree (tinytpu/randprog.py): shared by the generator's modules
(randprog, randdma, randreach) so that every one of them builds the same classes."""
from __future__ import annotations

import dataclasses


@dataclasses.dataclass
class Op:
  words: list[int]
  tag: str                  # family, for coverage; an "lbreak" outside every loop is not emitted


@dataclasses.dataclass
class Branch:
  mn: str                   # BEQ/BNE/BLT/BGE/JMP
  sa: int
  sb: int
  skip: int                 # items of its block jumped over when taken (clamped to the block)
  exit: bool = False        # jump to the end of the enclosing loop body instead: out of the loop


@dataclasses.dataclass
class Loop:
  pre: list[int]            # sets up the count register (LOOP)
  mn: str                   # LOOP or LOOPI
  count: int                # the register (LOOP) or the count (LOOPI)
  bound: int                # most iterations it can run
  body: list


@dataclasses.dataclass
class BackLoop:
  counter: int           # a register outside the generator's pool
  count: int             # iterations (>= 1)
  body: list
