"""The block loop that streams a reduce range through VMEM by blocks (rstream.py, rowblock.py).

A range of R steps runs as nb = ceil(R / Rb) blocks of Rb steps, the last one shorter when Rb does
not divide R. Before the loop the caller copies block 0 in; at the top of each block the next
block's DMAs go into the other copy (double buffering), skipped in the last block (a `LAST_SKIP`
label, so loops.executed counts it once less); then the original loop runs over the block's steps.
A `left` register counts the blocks still to fetch: it selects the skip and the last block's length."""
from __future__ import annotations

from typing import Callable

from tinygrad.dtype import dtypes
from tinygrad.uop.ops import UOp

from tinytpu.backend.optable import LOOPI_MAX
from tinytpu.backend.records import Const, OpenLoop, SReg
from tinytpu.backend.stream import LAST_SKIP
from tinytpu.backend.vcode import SR, Label


class BlockLoops:
  def block_left(self, nb: int) -> int:
    """The blocks-left counter (nb - 1 before the first block), live until block_loop_close."""
    left = self.sreg("blocks left", temp=False)
    self.ins("LI", SR(left), nb - 1)
    return left

  def block_loop_open(self, u: UOp, left: int, R: int, Rb: int, prefetch: Callable[[], None], stepped: list | None = None) -> str:
    """The block loop around u's loop (block 0 already copied in): per block the prefetch of the next
    one (not in the last), then u's loop over the block's steps; u's variable counts across the
    blocks. Returns the label block_loop_close puts after the block loop."""
    nb, last = -(-R // Rb), R - (-(-R // Rb) - 1) * Rb
    step = self.partial[u][1] if u in self.partial else 1
    var = self.sreg("loop variable", temp=False)
    end, outer = self.label(), self.label()
    start = len(self.code)
    self.ins("LI", SR(var), 0)
    self.ins("LOOPI" if nb <= LOOPI_MAX else "LOOP", nb if nb <= LOOPI_MAX else SR(self.scalar(Const(nb, dtypes.int32))), outer)
    skip = self.label() + LAST_SKIP
    self.ins("BEQ", SR(left), SR(0), skip)
    prefetch()
    self.code.append(Label(skip))
    if last == Rb and Rb // step <= LOOPI_MAX:
      self.ins("LOOPI", Rb // step, end)
    else:
      cnt, full = self.sreg("loop count"), self.label()
      self.ins("LI", SR(cnt), Rb // step)
      if last != Rb:  # the last block is shorter
        self.ins("BNE", SR(left), SR(0), full)
        self.ins("LI", SR(cnt), last // step)
        self.code.append(Label(full))
      self.ins("LOOP", SR(cnt), end)
    self.free_temps()
    self.loops.append(OpenLoop(u, end, var, start, step=step, stepped=stepped or []))
    self.vals[u] = SReg(var)
    return outer

  def block_loop_close(self, left: int, outer: str):
    """After the inner loop's END and the caller's step to the next block: one block less, the block
    loop's end; the counter is free again."""
    self.ins("SADDI", SR(left), SR(left), -1)
    self.code.append(Label(outer))
    self.release(left)
