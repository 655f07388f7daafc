"""Full reductions larger than VMEM (a mixin of Lowering): a kernel with one lane-parallel reduce
(find_lane_reduces: one output element, L elements of the reduce range per step) whose buffers do
not fit streams the buffers it reads at `x[r]` by blocks of B steps (B tiles) through two VMEM
copies: blocks 0 and 1 are DMA'd in before the reduce, block b + 2 into block b's copy as soon as
block b is reduced (the SXU's DMA interlock holds a read of a tile still in flight), the step
pointer counts within the copies. The last block is lowered on its own (its steps need not fill
B); every DMA moves B tiles, so the last one may read up to B - 1 tiles past the buffer (the
device's guard, `Window.over`), tiles the reduce never reaches. test_ops' test_sum_full
(r_16384: 1024 tiles) at 1024 VMEM tiles."""
from __future__ import annotations

import dataclasses

from tinytpu.backend.optable import LOOPI_MAX
from tinytpu.backend.stream import LAST_SKIP, SPILL_RESERVE
from tinytpu.backend.vcode import SR, Label

BLOCK_MAX = 128  # steps (tiles) per block


@dataclasses.dataclass
class RBlocks:
  rng: object       # the lane reduce's range
  B: int            # tiles per block
  blocks: int       # ceil(steps / B)
  slots: list       # the streamed buffers (their windows: two copies of B tiles)


class ReduceBlocks:
  def plan_reduce_blocks(self, uses: dict, forms: dict) -> bool:
    """The block plan when every buffer read at x[r] streams and the rest fits; False otherwise."""
    L, V = self.L, self.cfg.VMEM_TILES
    if len(self.lane_reduces) != 1 or self.G != 1 or self.symbolic or self.prefix or self.dots:
      return False
    rng, (_, R, _) = next(iter(self.lane_reduces.items()))
    steps = -(-R // L)
    streamed = []
    for slot, e in uses.items():
      fs = forms.get(slot)
      by_r = fs is not None and all(f[0] == {rng: 1} and f[1] == 0 and not f[2] for f in fs) and \
        all(i is not None and len(i.src) == 2 for i in e["idx"])
      if by_r and not e["written"]:
        streamed.append(slot)
      elif fs is not None and any(rng in f[0] for f in fs):
        return False  # read by r some other way (a stride, a gate): its addresses are whole-buffer ones
    if not streamed:
      return False
    fixed = sum(w.tiles for s, w in self.windows.items() if s not in streamed)
    B = min(BLOCK_MAX, steps)
    while B > 1 and fixed + 2 * B * len(streamed) + 1 + SPILL_RESERVE > V:
      B //= 2
    if fixed + 2 * B * len(streamed) + 1 + SPILL_RESERVE > V:
      return False
    blocks = -(-steps // B)
    t = 0
    for slot in streamed:
      w = self.windows[slot]
      w.base, w.resident, w.read = t, False, True
      w.over = (0, blocks * B - w.tiles)
      w.tiles, t = 2 * B, t + 2 * B
    for slot, w in self.windows.items():
      if slot not in streamed:
        w.base, t = t, t + w.tiles
    for b in self.bufs.values():
      b.base = self.windows[b.slot].base * L
    self.const_base = t * L
    self.first_tile = self.spill_base = t + 1
    self.rblocks = RBlocks(rng, B, blocks, streamed)
    return True

  def lower_reduce_blocks(self, steps: int, body) -> None:
    """The lane reduce's steps by blocks; body(pt, pe, last) lowers one step (pt: its tile register,
    pe: its first element's, last: a step of the last block, where the extent may end)."""
    p, L = self.rblocks, self.L
    pt, copy = self.sreg("reduce tile", temp=False), self.sreg("block copy", temp=False)
    pe = self.sreg("reduce element", temp=False)
    for r in (pe, copy):
      self.ins("LI", SR(r), 0)
    for k in range(min(2, p.blocks)):
      for s in p.slots:
        self.dma("DMA.IN", 0, self.windows[s].base + k * p.B, s, k * p.B, p.B)
    hb = self.sreg("next block", temp=False)
    self.ins("LI", SR(hb), 2 * p.B)

    def block(n: int, full: bool):
      self.ins("SADDI", SR(pt), SR(copy), 0)
      end = self.label()
      self.ins("LOOPI", n, end)
      body(pt, pe, not full)
      self.ins("SADDI", SR(pt), SR(pt), 1)
      self.ins("SADDI", SR(pe), SR(pe), L)
      self.code.append(Label(end))

    if p.blocks > 1:
      left = self.sreg("blocks to fetch", temp=False)
      self.ins("LI", SR(left), p.blocks - 2)
      n = self.sreg("block count", temp=False)
      self.ins("LI", SR(n), p.blocks - 1)
      end = self.label()
      self.ins("LOOP", SR(n), end)
      self.release(n)
      block(p.B, True)
      skip = self.label() + LAST_SKIP  # the last full block: nothing left to fetch
      self.ins("BEQ", SR(left), SR(0), skip)
      for s in p.slots:
        self.dma("DMA.IN", copy, self.windows[s].base, s, 0, p.B, hreg=hb)
      self.ins("SADDI", SR(hb), SR(hb), p.B)
      self.ins("SADDI", SR(left), SR(left), -1)
      self.code.append(Label(skip))
      nxt = self.sreg("other copy")
      self.ins("LI", SR(nxt), p.B)
      self.ins("SSUB", SR(copy), SR(nxt), SR(copy))
      self.free_temps()
      self.code.append(Label(end))
      self.release(left)
    block(steps - (p.blocks - 1) * p.B, False)
    assert steps - (p.blocks - 1) * p.B <= LOOPI_MAX
    for r in (pt, copy, pe, hb):
      self.release(r)
