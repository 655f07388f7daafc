"""The MXU schedule (a mixin of Lowering): staging, MLW/MMUL per K block with the next block staged
between MMULs, PSUM drains, and the lane loop's read of each dot product's result."""
from __future__ import annotations


from tinytpu.backend.epilogue import Epilogue
from tinytpu.backend.vcode import VT, Label, Mem, SR
from tinytpu.backend.optable import LOOPI_MAX
from tinytpu.backend.records import Dot


STAGE_LOOP_MIN = 256  # consecutive tiles staged by a loop rather than unrolled (shorter runs unrolled: no loop overhead)


def _blocks(d: Dot, N: int) -> int:
  """VMEM tiles of one batch value's K blocks."""
  M, K, Nc = d.dims
  return -(-K // N) * (-(-M // N) + -(-Nc // N))


def _results(d: Dot, N: int) -> int:
  """Result tiles of one batch value."""
  M, _, Nc = d.dims
  return -(-M // N) * -(-Nc // N)


class MxuSchedule(Epilogue):
  def mxu_prologue(self):
    """Run every Dot on the MXU: stage its K blocks in place (VLD index table, VGATHER, VST), then for
    each group of PSUM-resident result tiles and each K block, MLW + MMUL per weight tile column
    with acc from the second block on, and copy the group's PSUM tiles to the result area. While
    the first group runs block kb, the SXU stages block kb+1 between the MMULs (the MXU reads VMEM
    on its own port; the tiles it owns only grow upwards, so the next block is never one of them)."""
    N, P = self.cfg.N, self.cfg.PSUM_TILES
    self.plan_epilogues()  # epilogue.py: bias (and ReLU) applied as results leave PSUM
    def counted(n: int, body):
      """body() n times in an SXU loop (none for n == 1)."""
      if n <= 0:
        return
      if n == 1:
        return body()
      end = self.label()
      if n > LOOPI_MAX:
        r = self.sreg("MXU loop count", temp=False)
        self.ins("LI", SR(r), n)
        self.ins("LOOP", SR(r), end)
        self.release(r)  # LOOP reads its count once, on entry
      else:
        self.ins("LOOPI", n, end)
      body()
      self.code.append(Label(end))
    def four(p: int, offs: list[int]):
      vs = [(VT("stage"), Mem(p, o)) for o in offs]  # in fours: the loads' and gathers' latencies overlap
      for v, a in vs:
        self.ins("VLD", v, a)
      for v, _ in vs:
        self.ins("VGATHER", v, v, Mem(0, 0))
      for v, a in vs:
        self.ins("VST", v, a)
    def stage(p: int, tiles: list[int]):
      """Gather tiles [p + o] in place through their index tables; a long run of consecutive tiles
      (a large M: a batch of images) as an SXU loop, so the program stays within IMEM."""
      runs, i = [], 0
      while i < len(tiles):
        j = i
        while j + 1 < len(tiles) and tiles[j + 1] == tiles[j] + 1:
          j += 1
        runs.append(tiles[i:j + 1])
        i = j + 1
      for run in runs:
        if len(run) < STAGE_LOOP_MIN:
          for k in range(0, len(run), 4):
            four(p, run[k:k + 4])
          continue
        q = self.sreg("MXU staging pointer", temp=False)
        self.ins("SADDI", SR(q), SR(p), run[0])
        counted(len(run) // 4, lambda: (four(q, [0, 1, 2, 3]), self.ins("SADDI", SR(q), SR(q), 4)))
        if len(run) % 4:
          four(q, list(range(len(run) % 4)))
        self.release(q)
    epi_staged: dict[int, bool] = {}
    for d, X, S in ((d, d.X + bi * _blocks(d, N), d.S + bi * _results(d, N)) for d in self.dots for bi in range(len(d.batches))):
      M, K, Nc = d.dims
      Mt, Kt, Nt = -(-M // N), -(-K // N), -(-Nc // N)
      B = Mt + Nt  # tiles per K block
      px, pc = self.sreg("MXU block pointer", temp=False), self.sreg("MXU copy pointer", temp=False)
      at = lambda i: Mem(0, d.direct[i]) if i in d.direct else Mem(px, i)
      self.ins("LI", SR(px), X)
      stage(px, [i for i in range(B) if i not in d.direct])
      mc = min(Mt, 255, P)
      first = True
      for m0 in range(0, Mt, mc):
        mc = min(mc, Mt - m0)
        for n0 in range(0, Nt, P // mc):
          nn = min(P // mc, Nt - n0)
          def block(acc: int, staging: bool):
            """One K block at [px]: MLW + MMUL per column; staging block px + B in between."""
            todo = list(range(B, 2 * B)) if staging else []
            per = -(-len(todo) // nn)
            for j in range(nn):
              self.ins("MLW", at(Mt + n0 + j))
              self.ins(d.mmul, Mem(0, j * mc), at(m0), mc, acc)
              stage(px, todo[j * per:(j + 1) * per])
            self.ins("SADDI", SR(px), SR(px), B)
          self.ins("LI", SR(px), X)
          block(0, first and Kt > 1)
          if first:
            counted(Kt - 2, lambda: block(1, True))
            counted(min(Kt - 1, 1), lambda: block(1, False))
          else:
            counted(Kt - 1, lambda: block(1, False))
          first = False
          if d.in_psum:
            continue
          # PSUM tile j*mc + i -> result tile (n0 + j)*Mt + m0 + i, in fours; a fused epilogue's
          # PEPI drains them with the bias tile of block column n0 + j (epilogue.py)
          epi = self.epis.get(id(d))
          if epi is not None and epi.area is not None and not epi_staged.get(id(d)):
            self.stage_bias_tiles(epi)
            epi_staged[id(d)] = True
          self.ins("LI", SR(pc), 0)
          self.ins("LI", SR(px), S + n0 * Mt + m0)
          fused = epi is not None and epi.area is not None
          rows = fused and epi.rows  # a bias tile per row block: tile m0 + i, through pointer pb
          pb = self.sreg("MXU bias pointer", temp=False) if rows else 0
          def copy(cnt: int, vb):
            vs = [VT("psum") for _ in range(cnt)]
            bs = [VT("bias") for _ in range(cnt)] if rows else []
            for i, b in enumerate(bs):
              self.ins("VLD", b, Mem(pb, i))
            for i, v in enumerate(vs):
              self.ins("PLD", v, Mem(pc, i)) if vb is None else self.ins(epi.mnemonic, v, Mem(pc, i), *([bs[i]] if rows else vb))
            for i, v in enumerate(vs):
              self.ins("VST", v, Mem(px, i))
          def step(k: int):
            for r in (pc, px) + ((pb,) if rows else ()):
              self.ins("SADDI", SR(r), SR(r), k)
          for j in range(nn if mc < Mt or fused else 1):
            cnt = mc if mc < Mt or fused else nn * mc
            vb = None
            if rows:
              vb = []
              self.ins("LI", SR(pb), epi.area + m0)
            elif fused:  # the column block's bias tile (and parameter tile)
              vb = [VT("bias")] + ([VT("quant")] if epi.quant is not None else [])
              for i, v in enumerate(vb):
                self.ins("VLD", v, Mem(0, epi.area + i * Nt + n0 + j))
            counted(cnt // 4, lambda: (copy(4, vb), step(4)))
            if cnt % 4:
              copy(cnt % 4, vb)
              step(cnt % 4)
            if mc < Mt:
              self.ins("SADDI", SR(px), SR(px), Mt - mc)
          if rows:
            self.release(pb)
      self.release(px)
      self.release(pc)
      self.mxu_regs += [px, pc]

  def dot_value(self, d: Dot, out: VT | None = None) -> VT:
    """The Dot's result for every lane: a gather from its result area through its lane table."""
    if self.mstream:
      return self.mxu_stream_value(out)
    idx, out = VT("dotidx"), out or VT("dot")
    if d.in_psum:
      self.ins("PLD", out, Mem(self.s_t, self.t_off))
      return out
    self.ins("VLD", idx, Mem(self.s_t, d.T + self.t_off))
    self.ins("VGATHER", out, idx, Mem(0, 0))
    return out
