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

Applies to one dot product (no batch, no padded windows) whose lane loop is m-major over exactly
its M x Nc results, with A and B affine in (m, k) and (k, n), K a multiple of N and M a multiple of
R. Anything else keeps the VMEM-resident layout or, when that does not fit, the VPU."""
from __future__ import annotations

import dataclasses

import numpy as np
from tinygrad.dtype import dtypes

from tinytpu.backend.optable import LOOPI_MAX
from tinytpu.backend.records import Dot
from tinytpu.backend.stream import SPILL_RESERVE, HbmAddr
from tinytpu.backend.vcode import VT, Label, Mem, SR


@dataclasses.dataclass
class Operand:
  """How one operand reaches the staging copies."""
  slot: int
  mode: str            # "resident" | "rows" | "kb" (B only)
  win: int             # VMEM tiles of one raw window copy
  table: np.ndarray    # [staged tiles, L] element offsets from the gather base
  base0: int           # buffer element of the gather base at chunk 0, kb 0 (resident/kb), A's row 0 (rows)
  step_kb: int         # elements the gather base (resident) or the window (kb, rows) moves per K block
  step_chunk: int      # elements it moves per chunk
  hstride: int = 0     # rows: HBM tiles between rows
  rows: int = 0        # rows: rows of the 2-D DMA
  at: int = 0          # VMEM tile of copy 0 (copy 1 follows)


@dataclasses.dataclass
class MxuStreamPlan:
  d: Dot
  mc: int
  R: int
  C: int               # lane tiles per chunk
  nc: int
  A: Operand
  B: Operand
  canon: list          # canonical lane tables (lists of L element offsets)
  dfill: list          # per lane tile of a chunk: (canonical table, result tile it is relative to)
  res: int = 0         # VMEM tiles: result area
  tables: int = 0      # staging tables (A's mc, then B's Nt)
  ctab: int = 0        # canonical lane tables
  stage: int = 0       # staging copy 0 (copy 1 follows), then the raw windows; D overlays from here
  dtiles: int = 0
  elems: tuple = ()    # (A's, B's) buffer elements the GEMM reads (the int8 range check)


def _affine2(e: np.ndarray):
  """(c0, c1, c2) with e[i, j] = c0 + c1 * i + c2 * j for every element, else None."""
  c0 = int(e[0, 0])
  c1 = int(e[1, 0] - e[0, 0]) if e.shape[0] > 1 else 0
  c2 = int(e[0, 1] - e[0, 0]) if e.shape[1] > 1 else 0
  ii, jj = np.indices(e.shape)
  return (c0, c1, c2) if (e == c0 + c1 * ii + c2 * jj).all() else None


class MxuStream:
  def plan_mxu_stream(self) -> list[MxuStreamPlan]:
    """The streamed plans of the kernel's one dot product, largest group first ([]: the caller
    drops to the VPU). Sizes are checked against VMEM later, when the lane loop's windows are known."""
    from tinytpu.backend.layout import _flat_offsets
    N, L, P = self.cfg.N, self.L, self.cfg.PSUM_TILES
    if len(self.dots) != 1 or self.symbolic or self.data_addr or self.prefix:
      return []
    d = self.dots[0]
    if d.batch or d.a_mask is not None or d.b_mask is not None or d.a is d.b:
      return []
    M, K, Nc = d.dims
    Mt, Nt = -(-M // N), -(-Nc // N)
    if K % N or K < 2 or Nc < 1 or self.G != M * Nc or Nt > P:
      return []
    # the lanes: g = m * Nc + n (m-major, exactly the results)
    g = np.arange(self.G)
    rv = {r: (g // s) % e for r, s, e in zip(self.lane_ranges, self.strides, self.extents)}
    def flat(lanes):
      f = np.zeros_like(g)
      for r, e, _ in lanes:
        if r not in rv:
          return None
        f = f * e + rv[r]
      return f
    fm, fn = flat(d.mlanes), flat(d.nlanes)
    if fm is None or fn is None or (fm != g // Nc).any() or (fn != g % Nc).any():
      return []
    ea = _flat_offsets(d.mlanes)[:, None] + np.array(d.a_off)[None, :]   # [m][k], buffer elements
    eb = np.array(d.b_off)[:, None] + _flat_offsets(d.nlanes)[None, :]   # [k][n]
    fa, fb = _affine2(ea), _affine2(eb)
    if fa is None or fb is None:
      return []
    plans = []
    # chunks of whole lane tiles; when R does not divide M the last chunk's extra rows are padding
    # (A resident: its gathers read past the rows, the lane loop clamps the lanes past G)
    for mc in sorted({m for m in range(1, min(Mt, 255, P // Nt) + 1) if (m * N * Nc) % L == 0}, reverse=True):
      if (plan := self._mxu_plan(d, mc, fa, fb)) is not None:
        plan.elems = (np.unique(ea), np.unique(eb))
        plans.append(plan)
    return plans

  def _mxu_plan(self, d: Dot, mc: int, fa, fb) -> MxuStreamPlan | None:
    N, L = self.cfg.N, self.L
    M, K, Nc = d.dims
    Nt, R = -(-Nc // N), mc * N
    a0, sp, sk = fa
    b0, tk, tn = fb
    pi, kj = np.meshgrid(np.arange(N), np.arange(N), indexing="ij")  # lane pi * N + kj
    a_tiles, b_tiles = -(-d.a.size // L), -(-d.b.size // L)
    # A: rows when contiguous along k with tile-aligned rows (and no padding rows to DMA), else resident
    if sk == 1 and sp % L == 0 and a0 % L == 0 and L % N == 0 and M % R == 0:
      tab = np.stack([((pt * N + pi) * L + kj).ravel() for pt in range(mc)])
      A = Operand(d.a.slot, "rows", R, tab, a0, N, sp * R, hstride=sp // L, rows=R)
    else:
      tab = np.stack([(sp * (pt * N + pi) + sk * kj).ravel() for pt in range(mc)])
      A = Operand(d.a.slot, "resident", a_tiles, tab, a0, sk * N, sp * R)
    # B: weight tile nt lane kj * N + pi holds B[k = kb*N + kj][n = nt*N + pi]; padding columns read column 0
    def btab(rel_n):
      rows = []
      for nt in range(Nt):
        n = nt * N + pi.T  # [kj][pi]
        n = np.where(n < Nc, n, 0)
        rows.append(rel_n(kj.T, n).ravel())
      return np.stack(rows)
    kb_win = -(-((N - 1) * tk + Nc) // L) if tn == 1 else 0
    if tn == 1 and tk > 0 and (tk * N) % L == 0 and b0 % L == 0 and 2 * kb_win < b_tiles:
      B = Operand(d.b.slot, "kb", kb_win, btab(lambda k, n: tk * k + n), b0, tk * N, 0)
    elif tk == 1 and tn % L == 0 and b0 % L == 0 and 2 * Nc < b_tiles:  # a Linear weight (out, in): Nc rows of one tile
      B = Operand(d.b.slot, "rows", Nc, btab(lambda k, n: n * L + k), b0, N, 0, hstride=tn // L, rows=Nc)
    else:
      B = Operand(d.b.slot, "resident", b_tiles, btab(lambda k, n: tk * k + tn * n), b0, tk * N, 0)
    # lane order: lane tile q of a chunk gathers result element (nb * mc + mb) * L + (m % N) * N + n % N
    gl = np.arange(R * Nc).reshape(-1, L)
    m, n = gl // Nc, gl % Nc
    e = ((n // N) * mc + m // N) * L + (m % N) * N + n % N
    canon, dfill, ids = [], [], {}
    for row in e:
      shift = int(row.min()) // L
      key = tuple((row - shift * L).tolist())
      if key not in ids:
        ids[key] = len(canon)
        canon.append(list(key))
      dfill.append((ids[key], shift))
    C = R * Nc // L
    return MxuStreamPlan(d, mc, R, C, -(-M // R), A, B, canon, dfill)

  def _mxu_tiles(self, p: MxuStreamPlan, first: int) -> int:
    """Lay the plan's VMEM areas out from tile `first`; returns the first tile after them."""
    mc, Nt = p.mc, -(-p.d.dims[2] // self.cfg.N)
    t = first
    p.res, t = t, t + mc * Nt
    p.tables, t = t, t + mc + Nt
    p.ctab, t = t, t + len(p.canon)
    for o in (p.A, p.B):
      if o.mode == "resident":
        o.at, t = t, t + o.win
    p.stage = t
    s = t + 2 * (mc + Nt)
    for o in (p.A, p.B):
      if o.mode != "resident":
        o.at, s = s, s + 2 * o.win
    p.dtiles = max(p.C, s - t)
    return t + p.dtiles

  def adopt_mxu_stream(self, forms: dict, uses: dict) -> bool:
    """The chunk plan of a streamed dot product: chunks of C lane tiles, single buffered (the
    GEMM between chunks hides the write-back), the operands without windows of their own, the
    plan's areas after the windows. False when no group size fits in VMEM."""
    V, L = self.cfg.VMEM_TILES, self.L
    for p in self.mstream_plans:
      nc = p.nc
      plan = self._windows(p.C, nc, forms, uses, np.arange(nc * p.C * L, dtype=np.int64))
      for slot in (p.A.slot, p.B.slot):
        # read (the device loads it into HBM) but never DMA'd whole or by chunks: the K loop streams it
        plan[slot] = dataclasses.replace(plan[slot], tiles=0, lo=0, step=0, read=True, written=False, resident=False, over=(0, 0))
      foot = sum(w.tiles for w in plan.values())  # _adopt: the windows, then the constant tile
      if self._mxu_tiles(p, foot + 1) + SPILL_RESERVE > V or not self._gathers_inside(p, V):
        continue
      self._adopt(plan, p.C, nc, 1)
      self.spill_base = self._mxu_tiles(p, self.first_tile)
      self.mstream = p
      self.mxu_tables = self.mxu_stream_tables()
      for buf, e in zip((p.d.a, p.d.b), p.elems):
        if buf.dtype != dtypes.int8 and p.d.mode == "int8":
          self.int8_checks.append((buf.slot, e))
      return True
    return False

  def _gathers_inside(self, p: MxuStreamPlan, V: int) -> bool:
    """A resident operand's gathers, over every chunk and block (the last chunk's padding rows and
    the extra block staged in the last iteration included), stay inside VMEM."""
    Kt = p.d.dims[1] // self.cfg.N
    for o in (p.A, p.B):
      if o.mode == "resident":
        hi = o.at * self.L + o.base0 + max(0, o.step_chunk) * (p.nc - 1) + max(0, o.step_kb) * (Kt - 1) + int(o.table.max())
        lo = o.at * self.L + o.base0 + min(0, o.step_chunk) * (p.nc - 1) + min(0, o.step_kb) * (Kt - 1) + int(o.table.min())
        if lo < 0 or hi >= V * self.L:
          return False
    return True

  # --- code ----------------------------------------------------------------------------------
  def mxu_stream_prologue(self):
    """Before the chunk loop: the resident operands in; A's pointer (it moves R rows per chunk)."""
    p = self.mstream
    for o in (p.A, p.B):
      if o.mode == "resident":
        self.dma("DMA.IN", 0, o.at, o.slot, 0, o.win)
    self.ms_a = self.sreg("MXU A pointer", temp=False)
    self._pointer(p.A, self.ms_a)
    self.mxu_regs.append(self.ms_a)

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
    Kt, Nt, mc = K // N, -(-Nc // N), p.mc
    B_ = mc + Nt  # staged tiles per block
    shL = L.bit_length() - 1
    par, kl = self.sreg("MXU block parity", temp=False), self.sreg("MXU blocks left", temp=False)
    hb = self.sreg("MXU B pointer", temp=False)
    ptr = {"A": self.ms_a, "B": hb}
    ops_ = (("A", p.A), ("B", p.B))
    self.ins("LI", SR(par), 0)
    self.ins("LI", SR(kl), Kt - 1)
    self._pointer(p.B, hb)
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
    def dma(o: Operand, h: int, copy: int):
      """The raw block at HBM element address h into window copy `copy` (a tile register)."""
      t = self.sreg("HBM tile")
      k = self.sreg("shift")
      self.ins("LI", SR(k), shL)
      self.ins("SSRA", SR(t), SR(h), SR(k))
      if o.mode == "rows":
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
      if o.mode == "rows":  # where the block's N values sit in each row's tile
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
      work = [(p.tables + i, ga, i) for i in range(mc)] + [(p.tables + mc + j, gb, mc + j) for j in range(Nt)]
      def four(items):
        vs = [VT("stage") for _ in items]
        for v, (tb, _, _) in zip(vs, items):
          self.ins("VLD", v, Mem(0, tb))
        for v, (_, g, _) in zip(vs, items):
          self.ins("VGATHER", v, v, Mem(g, 0))
        for v, (_, _, i) in zip(vs, items):
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
          dma(o, ahead(name, o, 2), self._copy(o.at, o.win, par, False))
        self.code.append(Label(skip))
      # block kb + 1 staged between the pairs (in the last iteration a harmless extra block)
      st = self._copy(p.stage, B_, par, False)
      ops = stage_ops(1, True)
      per = -(-len(ops) // Nt)
      for j in range(Nt):
        self.ins("MLW", Mem(st, mc + j))
        self.ins(p.d.mmul, Mem(0, j * mc), Mem(st, 0), mc, acc)
        for op in ops[j * per:(j + 1) * per]:
          op()
      self.free_temps()
      one = self.sreg("one")
      self.ins("LI", SR(one), 1)
      self.ins("SSUB", SR(par), SR(one), SR(par))
      self.ins("SADDI", SR(kl), SR(kl), -1)
      for name, o in ops_:
        self.ins("SADDI", SR(ptr[name]), SR(ptr[name]), o.step_kb)
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
    # prologue: blocks 0 and 1 in (copies 0 and 1), block 0 staged into staging copy 0
    for name, o in ops_:
      if o.mode != "resident":
        dma(o, ahead(name, o, 0), self._copy(o.at, o.win, par, False))
        if Kt > 1:
          dma(o, ahead(name, o, 1), self._copy(o.at, o.win, par, True))
    for op in stage_ops(0, False):
      op()
    self.free_temps()
    block(0)
    counted(Kt - 1, lambda: block(1))
    # A's pointer: Kt blocks on; the next chunk starts R rows further
    self.ins("SADDI", SR(self.ms_a), SR(self.ms_a), p.A.step_chunk - Kt * p.A.step_kb)
    self.release(par)
    self.release(kl)
    self.release(hb)
    # drain: PSUM tiles 0 .. mc*Nt - 1 to the result area, in fours
    n = mc * Nt
    pc = self.sreg("drain pointer", temp=False)
    self.ins("LI", SR(pc), 0)
    def copy(c: int):
      vs = [VT("psum") for _ in range(c)]
      for i, v in enumerate(vs):
        self.ins("PLD", v, Mem(pc, i))
      for i, v in enumerate(vs):
        self.ins("VST", v, Mem(pc, p.res + i))
    counted(n // 4, lambda: (copy(4), self.ins("SADDI", SR(pc), SR(pc), 4)))
    if n % 4:
      copy(n % 4)
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

  def mxu_stream_value(self, out: VT | None = None) -> VT:
    """The dot value of the lane tile: tile D + t."""
    out = out or VT("dot")
    self.ins("VLD", out, Mem(self.s_t, self.mstream.stage + self.t_off))
    return out

  def mxu_stream_tables(self) -> dict[int, list[int]]:
    p = self.mstream
    out = {}
    for i, row in enumerate(np.concatenate([p.A.table, p.B.table])):
      out[p.tables + i] = [int(x) for x in row]
    for i, row in enumerate(p.canon):
      out[p.ctab + i] = row
    return out
