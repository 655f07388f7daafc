"""Lowering a reduce across the lanes (a mixin of Lowering; analysis.find_lane_reduces picks them):
element r of step c sits in lane r - c*L, the steps are unrolled up to UNROLL_FULL or looped (by
blocks through VMEM when rblock.py plans them), and lanes past the extent are masked out."""
from __future__ import annotations

from tinygrad.dtype import dtypes
from tinygrad.uop.ops import UOp

from tinytpu.backend.optable import LOOPI_MAX, UNROLL_FULL
from tinytpu.backend.records import Const, LaneReduce
from tinytpu.backend.vcode import VT, Label, SR


class ReduceLanes:
  def lower_lane_reduce(self, j: int, dies: dict[int, list[UOp]]) -> int:
    """The reduce loop at j across the lanes (find_lane_reduces): element r of step c in lane r - c*L,
    steps unrolled up to UNROLL_FULL, lanes past the extent masked out of the updates. Returns the
    position after its END."""
    rng = self.uops[j]
    e, R, accs = self.lane_reduces[rng]
    steps = -(-R // self.L)
    if self.rblocks is not None and self.rblocks.rng is rng:  # rblock.py: by blocks through VMEM
      self.lower_reduce_blocks(steps, lambda pt, pe, last: self._reduce_step(j, dies, pt, 0, pe, last and R % self.L != 0))
    elif steps > UNROLL_FULL:
      pt, pe = self.sreg("reduce tile", temp=False), self.sreg("reduce element", temp=False)
      self.ins("LI", SR(pt), 0)
      self.ins("LI", SR(pe), 0)
      end = self.label()
      if steps > LOOPI_MAX:
        n = self.sreg("reduce count", temp=False)
        self.ins("LI", SR(n), steps)
        self.ins("LOOP", SR(n), end)
        self.release(n)
      else:
        self.ins("LOOPI", steps, end)
      self._reduce_step(j, dies, pt, 0, pe, R % self.L != 0)
      self.ins("SADDI", SR(pt), SR(pt), 1)
      self.ins("SADDI", SR(pe), SR(pe), self.L)
      self.code.append(Label(end))
      self.release(pt)
      self.release(pe)
    else:
      for step in range(steps):
        self._reduce_step(j, dies, 0, step, None, R % self.L != 0 and step == steps - 1)
    self.red = None
    for (buf, i), mn in accs.items():
      acc = self.value(buf)[i]
      self.ins(mn, acc, acc)
    self.lower_at(e, dies)
    return e + 1

  def _reduce_step(self, j: int, dies: dict, pt: int, step: int, pe: int | None, masked: bool):
    """One step of the lane reduce at j: its L elements r (pe + lane, or step * L + lane unrolled),
    the body lowered with tile loads at [pt + step]."""
    rng = self.uops[j]
    e, R, _ = self.lane_reduces[rng]
    c = lambda v: self.tile(Const(v, dtypes.int32), dtypes.int32)  # noqa: E731
    r = self.iota
    if pe is not None:
      r = VT("r")
      self.ins("VSPLAT", r, SR(pe))
      self.ins("VADD", r, r, self.iota)
    elif step:
      r = VT("r")
      self.ins("VADD", r, self.iota, c(step * self.L))
    mask = None
    if masked:
      mask, rc = VT("rmask"), VT("r")
      self.ins("VCMPLT", mask, r, c(R))
      self.ins("VMIN", rc, r, c(R - 1))
      r = rc
    self.vals[rng] = r
    self.red = LaneReduce(rng, pt, step, mask)
    for k in range(j + 1, e):
      self.lower_at(k, dies)
