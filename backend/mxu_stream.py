"""Streamed MXU GEMMs (a mixin of Lowering): a dot product whose operands do not fit in VMEM runs on
the MXU with its operands streaming from HBM, one K block at a time (doc/backend.md, "MXU from
HBM").

The kernel's lane loop is chunked (stream.py) so that a chunk is R = mc * N whole rows of the
M x Nc result: a group of mc activation tiles times all Nt weight columns, mc * Nt PSUM tiles. Per
chunk, for every K block kb (N values of k):

- its operand tiles are gathered ("staged") into one of two staging copies from a raw window per
  operand, the next block's while the MXU multiplies the current one (the gathers sit between the
  MLW/MMUL pairs), through preloaded index tables that do not depend on kb: the gather's base
  register moves instead;
- a raw window is either the whole buffer, loaded once ("resident": small operands), or the part
  of block kb that the DMA brings in two blocks ahead into one of two copies: for an operand
  contiguous along k (a row-major A, a Linear layer's (out, in) weight) the tile holding each row's
  N values (a 2-D DMA of one tile per row: "rows"), for a B contiguous along n the bounding box of
  its N rows ("kb");
- then MLW + MMUL per weight column, accumulating from the second block on.

After the K loop the PSUM tiles go to a result area, and gathers through a few canonical tables
put them in lane order (area D, which overlays the staging and raw windows); the lane loop reads
the dot value of lane tile t as tile D + t.

Applies to one dot product (no batch range; padded windows when resident) whose lane loop covers
exactly its M x Nc results in chunks of whole result rows laid out alike (m-major, or e.g. whole
images of an NCHW convolution), in either orientation, with A and B affine in (m, k) and (k, n) or
separable (im2col windows); mxu_plan.py chooses. Anything else keeps the VMEM-resident layout or,
when that does not fit, the VPU."""
from __future__ import annotations


from tinytpu.backend.mxu_operands import Operand
from tinytpu.backend.mxu_plan import MxuPlan
from tinytpu.backend.optable import LOOPI_MAX
from tinytpu.backend.stream import HbmAddr
from tinytpu.backend.vcode import VT, Label, Mem, SR


class MxuStream(MxuPlan):
  def mxu_stream_prologue(self):
    """Before the chunk loop: the resident operands in; A's pointer (it moves R rows per chunk)."""
    p = self.mstream
    for o in (p.A, p.B):
      if o.mode == "resident":
        self.dma("DMA.IN", 0, o.at, o.slot, 0, o.win)
    self.plan_epilogues()  # epilogue.py: bias, ReLU (and requantisation) in the drain's PEPI
    for e in self.epis.values():
      self.stage_bias_tiles(e)
    self.ms_a = self.sreg("MXU A pointer", temp=False)
    self._pointer(p.A, self.ms_a)
    self.mxu_regs.append(self.ms_a)
    self.ms_b = None
    if p.B.step_chunk:  # column chunks: B's pointer moves per chunk
      self.ms_b = self.sreg("MXU B pointer", temp=False)
      self._pointer(p.B, self.ms_b)
      self.mxu_regs.append(self.ms_b)

  def _pointer(self, o: Operand, r: int):
    """r = block 0's gather base (resident: a VMEM element address) or HBM element address (streamed)."""
    L = self.L
    if o.mode == "resident":
      self.ins("LI", SR(r), o.at * L + o.base0)
      return
    self.ins("LI", SR(r), HbmAddr(o.slot, 0))
    k = self.sreg("shift")
    self.ins("LI", SR(k), L.bit_length() - 1)
    self.ins("SSHL", SR(r), SR(r), SR(k))
    self.ins("SADDI", SR(r), SR(r), o.base0)
    self.free_temps()

  def _drop(self, *rs: int):
    """Release temporaries before the end of the UOp (the staging code holds many at once)."""
    for r in rs:
      self.temps.remove(r)
      self.release(r)

  def _copy(self, base: int, size: int, par: int, other: bool) -> int:
    """A temporary: tile base + size * (par, or 1 - par)."""
    t, z = self.sreg("copy"), self.sreg("size")
    if other:
      self.ins("LI", SR(t), 1)
      self.ins("SSUB", SR(t), SR(t), SR(par))
    else:
      self.ins("SADDI", SR(t), SR(par), 0)
    self.ins("LI", SR(z), size)
    self.ins("SMUL", SR(t), SR(t), SR(z))
    self.ins("SADDI", SR(t), SR(t), base)
    self._drop(z)
    return t

  def mxu_chunk(self):
    """One chunk's GEMM (every K block), its PSUM drain and the lane-order gathers into D.

    Registers: par = kb % 2 (block kb is staged in copy par, and a streamed operand's raw block kb
    sits in window copy par), kl = blocks left after this one, per operand its pointer at block kb
    (A's persists across chunks). Iteration kb: the DMA of block kb + 2 into window copy par (its
    block kb was staged in the previous iteration), MLW/MMUL of block kb from staging copy par
    with block kb + 1 gathered into copy 1 - par between the pairs."""
    p, N, L = self.mstream, self.cfg.N, self.L
    M, K, Nc = p.d.dims
    Kt, Nt, mc = -(-K // N), p.nt, p.mc
    B_ = mc + Nt  # staged tiles per block
    shL = L.bit_length() - 1
    par, kl = self.sreg("MXU block parity", temp=False), self.sreg("MXU blocks left", temp=False)
    hb = self.sreg("MXU B pointer", temp=False)
    ptr = {"A": self.ms_a, "B": hb}
    ops_ = (("A", p.A), ("B", p.B))
    nk = 0 if p.blk is None else p.blk.shape[1]
    bt = self.sreg("MXU block-table pointer", temp=False) if nk else None
    pg = self.sreg("MXU PSUM group", temp=False) if p.ng > 1 else 0  # the row group's first PSUM tile
    def start():
      """A row group's K loop state: block 0, B at the chunk's first block."""
      if nk:
        self.ins("LI", SR(bt), p.blk_at)
      self.ins("LI", SR(par), 0)
      self.ins("LI", SR(kl), Kt - 1)
      if self.ms_b is None:
        self._pointer(p.B, hb)
      else:
        self.ins("SADDI", SR(hb), SR(self.ms_b), 0)
    def ahead(name, o, blocks: int, clamp: bool = False) -> int:
      """A temporary: the operand's pointer `blocks` blocks on (clamp: only while blocks are left,
      so a resident operand's gathers for the block after the last stay inside its buffer)."""
      t = self.sreg("pointer")
      if not clamp:
        self.ins("SADDI", SR(t), SR(ptr[name]), blocks * o.step_kb)
        return t
      f = self.sreg("more blocks")
      self.ins("SSLT", SR(f), SR(0), SR(kl))
      self.ins("LI", SR(t), blocks * o.step_kb)
      self.ins("SMUL", SR(t), SR(t), SR(f))
      self.ins("SADD", SR(t), SR(t), SR(ptr[name]))
      self._drop(f)
      return t
    def dma(o: Operand, h: int, copy: int, blocks: int):
      """The raw block kb + blocks at HBM element address h into window copy `copy` (a tile register)."""
      t = self.sreg("HBM tile")
      k = self.sreg("shift")
      self.ins("LI", SR(k), shL)
      self.ins("SSRA", SR(t), SR(h), SR(k))
      if o.mode == "band":  # the block's window starts at its own tile (the block table's lane 0)
        self.ins("VEXTRACT", SR(k), self._ktile(bt, blocks * nk + o.sslot), 0, 0)
        self.ins("SADD", SR(t), SR(t), SR(k))
        self.ins("DMA.IN", Mem(copy, 0), Mem(t, 0), o.win)
      elif o.mode == "rows" and o.classes:  # per class of rows: its rows' two tiles, whole tiles apart in HBM
        P = o.classes
        self.ins("LI", SR(k), o.hstride)
        for c in range(P):  # class c's rows contiguous in the copy (mxu_operands.class_slot), rtiles each
          self.ins("DMA.CFG", SR(k), o.rows // P, o.rtiles)
          self.ins("DMA.IN", Mem(copy, o.rtiles * c * (o.rows // P)), Mem(t, o.ctiles[c]), o.rtiles)
        self.ins("DMA.CFG", SR(0), 1, 0)
      elif o.mode == "rows":
        self.ins("LI", SR(k), o.hstride)
        self.ins("DMA.CFG", SR(k), o.rows, 1)
        self.ins("DMA.IN", Mem(copy, 0), Mem(t, 0), 1)
        self.ins("DMA.CFG", SR(0), 1, 0)
      else:
        self.ins("DMA.IN", Mem(copy, 0), Mem(t, 0), o.win)
      self._drop(t, k, h, copy)
    def gather_base(name, o, blocks: int, other: bool) -> int:
      """A temporary: the element address block kb + blocks' gathers add their tables to."""
      if o.mode == "resident":
        return ahead(name, o, blocks, clamp=blocks > 0)
      g = self._copy(o.at, o.win, par, other)
      k = self.sreg("shift")
      self.ins("LI", SR(k), shL)
      self.ins("SSHL", SR(g), SR(g), SR(k))
      if o.mode == "rows" or o.shifted:  # where the block's N values sit in each row's tile (a shifted kb window's start)
        h = ahead(name, o, blocks)
        self.ins("LI", SR(k), L - 1)
        self.ins("SAND", SR(k), SR(h), SR(k))
        self.ins("SADD", SR(g), SR(g), SR(k))
        self._drop(h)
      self._drop(k)
      return g
    def stage_ops(blocks: int, other: bool) -> list:
      """Block kb + blocks' gathers into staging copy par (or 1 - par), as closures of up to four
      tiles each (A's mc tiles, then B's Nt)."""
      into = self._copy(p.stage, B_, par, other)
      ga, gb = (gather_base(n, o, blocks, other) for n, o in ops_)
      ka, kb_ = (self._ktile(bt, blocks * nk + o.kslot) if o.ktable is not None else None for _, o in ops_)
      km = self._ktile(bt, blocks * nk + p.mask_slot) if p.mask else None
      pk = {}  # patterns: (operand, pattern) -> pattern + block kb's k part, once per block
      for name, o, kv in (("A", p.A, ka), ("B", p.B, kb_)):
        for q in range(len(o.table) if o.pids is not None else 0):
          v = VT("pattern")
          self.ins("VLD", v, Mem(0, o.tat + q))
          self.ins("VADD", v, v, kv)
          pk[name, q] = v
      def item(name, o, t, i, g, kv):
        if o.pids is not None:
          return (None, g, i, pk[name, int(o.pids[t])], o.gated.get(t), int(o.shifts[t]))
        return (o.tat + t, g, i, kv, o.gated.get(t), 0)
      work = [item("A", p.A, t, t, ga, ka) for t in range(mc)] + [item("B", p.B, j, mc + j, gb, kb_) for j in range(Nt)]
      idv: dict[int, VT] = {}  # gate-id tiles loaded for this block
      def four(items):
        vs = [VT("stage") for _ in items]
        for v, (tb, _, _, _, _, _) in zip(vs, items):
          if tb is not None:
            self.ins("VLD", v, Mem(0, tb))
        for v, (tb, _, _, kv, _, _) in zip(vs, items):
          if tb is not None and kv is not None:  # a separable operand: lane part + block kb's k part
            self.ins("VADD", v, v, kv)
        for v, (tb, g, _, kv, _, sh) in zip(vs, items):
          self.ins("VGATHER", v, v if tb is not None else kv, Mem(g, sh))
        for v, (_, _, i, _, gj, _) in zip(vs, items):
          if km is not None and i < mc:  # A's lanes past K: zero, so B's there do not count
            self.ins("VAND", v, v, km)
          if gj is not None:  # a padded window's gated-off lanes: zero (the tile's gate mask)
            o = p.A if i < mc else p.B
            col = o.gslot + gj // L
            if col not in idv:
              idv[col] = self._ktile(bt, blocks * nk + col)
            s_id, vm = self.sreg("gate tile"), VT("gate")
            self.ins("VEXTRACT", SR(s_id), idv[col], (gj % L) // N, gj % N)
            self.ins("VLD", vm, Mem(s_id, 0))
            self.ins("VAND", v, v, vm)
            self._drop(s_id)
        for v, (_, _, i, _, _, _) in zip(vs, items):
          self.ins("VST", v, Mem(into, i))
      return [lambda it=work[i:i + 4]: four(it) for i in range(0, len(work), 4)]
    def block(acc: int):
      streamed = [(n, o) for n, o in ops_ if o.mode != "resident"]
      if streamed:
        skip = self.label()
        two = self.sreg("two")
        self.ins("LI", SR(two), 2)
        self.ins("BLT", SR(kl), SR(two), skip)  # no block kb + 2
        self._drop(two)
        for name, o in streamed:
          dma(o, ahead(name, o, 2), self._copy(o.at, o.win, par, False), 2)
        self.code.append(Label(skip))
      # block kb + 1 staged between the pairs (in the last iteration a harmless extra block)
      st = self._copy(p.stage, B_, par, False)
      ops = stage_ops(1, True)
      per = -(-len(ops) // Nt)
      for j in range(Nt):
        self.ins("MLW", Mem(st, mc + j))
        self.ins(p.d.mmul, Mem(pg, j * mc), Mem(st, 0), mc, acc)
        for op in ops[j * per:(j + 1) * per]:
          op()
      self.free_temps()
      one = self.sreg("one")
      self.ins("LI", SR(one), 1)
      self.ins("SSUB", SR(par), SR(one), SR(par))
      self.ins("SADDI", SR(kl), SR(kl), -1)
      for name, o in ops_:
        self.ins("SADDI", SR(ptr[name]), SR(ptr[name]), o.step_kb)
      if nk:
        self.ins("SADDI", SR(bt), SR(bt), nk)
      self.free_temps()
    def counted(n: int, body):
      if n <= 0:
        return
      end = self.label()
      if n > LOOPI_MAX:
        r = self.sreg("MXU loop count")
        self.ins("LI", SR(r), n)
        self.ins("LOOP", SR(r), end)
        self.free_temps()
      else:
        self.ins("LOOPI", n, end)
      body()
      self.code.append(Label(end))
    def group():
      """One row group's GEMM: blocks 0 and 1 in (copies 0 and 1), block 0 staged into staging
      copy 0, then the K loop; A's pointer ends R rows further (the next group's or chunk's)."""
      start()
      for name, o in ops_:
        if o.mode != "resident":
          dma(o, ahead(name, o, 0), self._copy(o.at, o.win, par, False), 0)
          if Kt > 1:
            dma(o, ahead(name, o, 1), self._copy(o.at, o.win, par, True), 1)
      for op in stage_ops(0, False):
        op()
      self.free_temps()
      block(0)
      counted(Kt - 1, lambda: block(1))
      self.ins("SADDI", SR(self.ms_a), SR(self.ms_a), p.A.step_chunk - Kt * p.A.step_kb)
    if p.ng > 1:  # column chunks: every row group into its own PSUM tiles, then A back to row 0
      self.ins("LI", SR(pg), 0)
      counted(p.ng, lambda: (group(), self.ins("SADDI", SR(pg), SR(pg), mc * Nt)))
      self.ins("SADDI", SR(self.ms_a), SR(self.ms_a), -p.ng * p.A.step_chunk)
    else:
      group()
      if p.cols:
        self.ins("SADDI", SR(self.ms_a), SR(self.ms_a), -p.A.step_chunk)
    if self.ms_b is not None:
      self.ins("SADDI", SR(self.ms_b), SR(self.ms_b), p.B.step_chunk)
    for r in (par, kl, hb) + ((bt,) if nk else ()) + ((pg,) if p.ng > 1 else ()):
      self.release(r)
    # drain: PSUM tiles 0 .. ng*mc*Nt - 1 to the result area, in fours; a fused epilogue's PEPI with
    # block column nb's bias (and parameter) tile for its mc tiles (epilogue.py)
    epi = self.epis.get(id(p.d))
    pc = self.sreg("drain pointer", temp=False)
    self.ins("LI", SR(pc), 0)
    def copy(c: int, vb: list | None):
      vs = [VT("psum") for _ in range(c)]
      for i, v in enumerate(vs):
        self.ins("PLD", v, Mem(pc, i)) if vb is None else self.ins(epi.mnemonic, v, Mem(pc, i), *vb)
      for i, v in enumerate(vs):
        self.ins("VST", v, Mem(pc, p.res + i))
    for nb in range(Nt) if epi is not None else [None]:
      vb = None
      if nb is not None:
        vb = [VT("bias")] + ([VT("quant")] if epi.quant is not None else [])
        for i, v in enumerate(vb):
          self.ins("VLD", v, Mem(0, epi.area + i * Nt + nb))
      n = mc if nb is not None else p.ng * mc * Nt
      counted(n // 4, lambda: (copy(4, vb), self.ins("SADDI", SR(pc), SR(pc), 4)))
      if n % 4:
        copy(n % 4, vb)
        if nb is not None and nb < Nt - 1:  # the next block column's tiles follow
          self.ins("SADDI", SR(pc), SR(pc), n % 4)
    self.release(pc)
    # lane order: D tile q = the result area gathered through canonical table k from result tile `shift`
    for q0 in range(0, len(p.dfill), 4):
      items = p.dfill[q0:q0 + 4]
      vs = [VT("lane") for _ in items]
      for v, (k, _) in zip(vs, items):
        self.ins("VLD", v, Mem(0, p.ctab + k))
      for v, (_, sh) in zip(vs, items):
        self.ins("VGATHER", v, v, Mem(0, (p.res + sh) * L))
      for i, v in enumerate(vs):
        self.ins("VST", v, Mem(0, p.stage + q0 + i))
    self.free_temps()

  def _ktile(self, r: int, blocks: int) -> VT:
    """Block kb + blocks' k-part tile of a separable operand (r: the tile of block kb's)."""
    v = VT("ktile")
    self.ins("VLD", v, Mem(r, blocks))
    return v

  def mxu_stream_value(self, out: VT | None = None) -> VT:
    """The dot value of the lane tile: tile D + t."""
    out = out or VT("dot")
    self.ins("VLD", out, Mem(self.s_t, self.mstream.stage + self.t_off))
    return out

  def mxu_stream_tables(self) -> dict[int, list[int]]:
    p = self.mstream
    out = {}
    for o in (p.A, p.B):
      for i, row in enumerate(o.table):
        out[o.tat + i] = [int(x) for x in row]
    if p.blk is not None:
      blk = p.blk.copy()
      blk[:, list(p.id_cols)] += p.gate_at  # gate ids: the VMEM tile of each block's mask
      for i, row in enumerate(blk.reshape(-1, self.L)):
        out[p.blk_at + i] = [int(x) for x in row]
    for i, row in enumerate([] if p.gates is None else p.gates):
      out[p.gate_at + i] = [int(x) for x in row]
    for i, row in enumerate(p.canon):
      out[p.ctab + i] = row
    return out
