"""Records of the lowering: values (constants, scalar registers), buffers and addresses, the
kernel record for the runtime, and the MXU dot products."""
from __future__ import annotations

import dataclasses
import math
from typing import Any

from tinygrad.dtype import DType
from tinygrad.uop.ops import UOp


@dataclasses.dataclass(frozen=True)
class Const:
  val: Any
  dtype: DType


@dataclasses.dataclass(frozen=True)
class SReg:
  reg: int


@dataclasses.dataclass
class Buf:
  slot: int
  dtype: DType
  size: int
  base: int  # first element address in VMEM (a multiple of N*N)


@dataclasses.dataclass(frozen=True)
class Addr:
  buf: Any   # Buf, or a tuple of VTs for a register array
  idx: UOp
  gate: UOp | None


@dataclasses.dataclass
class Kernel:
  """What the runtime needs besides the program: buffer layout and the scalar arguments."""
  asm: str
  bufs: list[Buf]
  written: list[int]            # slots the kernel stores to
  var_regs: list[tuple[int, str, int]]  # (slot, variable name, scalar register) preloaded from `vals`, in slot order
  vmem_tiles: int               # tiles used, constant pool and spill area included
  const_tiles: dict[int, list[int]]  # VMEM tile -> lane values to preload
  N: int
  int8_checks: list = dataclasses.field(default_factory=list)  # (slot, element indices) MXU operands that must hold int8 values
  executed: int | None = None   # instructions it retires (spills aside), None for symbolic loop counts
  windows: dict = dataclasses.field(default_factory=dict)  # slot -> stream.Window: what is DMA'd in and out
  guards: list = dataclasses.field(default_factory=list)  # launch guard records (device.GUARD_KINDS): run `fallback` unless all hold
  fallback: Any = None          # the Kernel without requantising epilogues (when guards)


@dataclasses.dataclass
class Dot:
  """A dot-product reduce run on the MXU: for every lane (m, n), acc = sum over k of
  A[fa(m) + a_off[k]] * B[fb(n) + b_off[k]], m and n flattening the lane ranges of A's and B's index."""
  top: UOp                      # the chain (no reduce range) or the accumulator STORE (reduce range)
  acc: tuple | None             # (register buffer, element) the reduce accumulates into
  a: Buf
  b: Buf
  mlanes: list                  # [(lane range, extent, coefficient in A's index)], outer first
  nlanes: list
  a_off: list[int]
  b_off: list[int]
  X: int = 0                    # VMEM tiles: K blocks ([mb] activation tiles, then [nb] weight tiles)
  S: int = 0                    # result tiles [nb][mb]
  T: int = 0                    # lane table: per lane of the kernel, its result element
  direct: dict = dataclasses.field(default_factory=dict)  # block tile -> buffer tile read in place (not staged)
  in_psum: bool = False         # lane tile t is PSUM tile t: read with PLD, no copy or lane table
  a_mask: Any = None            # [m][k] bool: False where A's load is gated off (reads 0); None: all read
  b_mask: Any = None            # [k][n] bool, the same for B
  batch: list = dataclasses.field(default_factory=list)  # [(lane range, extent, coef in A, coef in B)]: one GEMM per value
  mode: str = "int8"            # "int8": MMUL (int32 sums); "bf16": MMUL.BF16 (bf16 operands, fp32 sums; mxu_match.py)
  transposed: bool = False      # computed as C^T = B^T A^T (layout.py: A and B swapped, so the few rows are the weights)

  @property
  def mmul(self) -> str:
    return "MMUL.BF16" if self.mode == "bf16" else "MMUL"

  @property
  def batches(self) -> list[tuple[int, int]]:
    """(A offset, B offset) of every batch value, outer ranges slowest."""
    out = [(0, 0)]
    for _, e, ca, cb in self.batch:
      out = [(oa + ca * i, ob + cb * i) for oa, ob in out for i in range(e)]
    return out

  @property
  def dims(self) -> tuple[int, int, int]:
    return math.prod(e for _, e, _ in self.mlanes), len(self.a_off), math.prod(e for _, e, _ in self.nlanes)


@dataclasses.dataclass
class OpenLoop:
  """A reduce loop being lowered (between its RANGE and its END)."""
  rng: UOp
  end: str                      # label after its body
  var: int                      # scalar register of the loop variable
  start: int                    # code position of the variable's LI (induction registers are set after it)
  derived: dict = dataclasses.field(default_factory=dict)  # coefficient c -> scalar register holding c * var
  step: int = 1                 # the variable's step (copies of the body per iteration)
  copy: int = 0                 # which copy of a partially unrolled body is being lowered
  stepped: list = dataclasses.field(default_factory=list)  # (register, amount): other registers stepped with the variable (rowblock.py)


@dataclasses.dataclass(frozen=True)
class LaneReduce:
  """The lane-parallel reduce being lowered: element r of its step is in lane r - step * L."""
  rng: UOp
  ptr: int                      # scalar register of the step's tile offset (0 when unrolled)
  off: int                      # tile offset of this unrolled step
  mask: Any                     # VT of the lanes inside the extent, or None when all are
