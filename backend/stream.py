"""HBM residency and streaming (a mixin of Lowering): every tinygrad buffer lives in HBM and the
program moves what it touches through VMEM with the DMA engine (doc/hbm.md, doc/backend.md).

A kernel whose buffers (and MXU tables, constant pool and a spill reserve) fit in VMEM keeps
today's layout: each buffer it reads (or writes only partially) is DMA'd in whole in front of the
program, each buffer it writes is DMA'd out after it ("resident" windows).

A larger kernel streams: its lane loop (the tiles of the flattened output index g) is split into
chunks of C tiles. Per chunk and per buffer the window of elements the chunk touches is the
bounding box of every index of that buffer (the affine forms of analysis.py: the lane part
evaluated over the chunk's g range, clamped to G - 1 like the lanes, and the reduce ranges' and
uniform terms' bounds). A window that moves by the same number of tiles every chunk is streamed:
two VMEM copies of it (double buffering: the next chunk's DMA.IN is issued before the current
chunk computes), its accesses rebased by one scalar register per distinct step. A window that does
not move (a broadcast operand) is loaded once. A buffer whose every chunk touches more than VMEM
holds is refused with NotImplementedError naming the kernel, the buffer and the sizes.

The program does not know where the buffers are in HBM: every HBM address is an `LI` whose
immediate is an `HbmAddr` (a buffer slot and a tile offset), listed as a relocation that the
device patches at launch with the buffer's HBM tile."""
from __future__ import annotations

import numpy as np
from tinygrad.dtype import dtypes
from tinygrad.uop.ops import Ops

from tinytpu import isa
from tinytpu.backend.records import Const
from tinytpu.backend.vcode import SR, VT, Label, Mem
from tinytpu.backend.windows import Window, packed_table, period_step, plan_windows, table_period, table_tiles

SPILL_RESERVE = 48  # VMEM tiles kept for spills when a kernel's layout is planned
DMA_T = 255         # tiles per DMA row (the T field)
LAST_SKIP = "_last"  # a label ending so: the BEQ to it skips its block in the last iteration of the loop around it (loops.executed)
# a kernel that fits in VMEM still streams (double buffered) when its lane loop has at least
# OVERLAP_MIN tiles: in OVERLAP_CHUNKS chunks or more, so the DMA overlaps compute instead of
# preceding and following it
OVERLAP_MIN, OVERLAP_CHUNKS = 64, 4
# the prologue splits its largest buffer (SPLIT_MIN tiles or more) into pieces while its DMA
# commands stay within PROLOGUE_DMAS: the DMA engine's queue depth (isa.DMA_QDEPTH), so none of
# them holds the issue
SPLIT_MIN, PROLOGUE_DMAS = 256, isa.DMA_QDEPTH
CHUNK_MAX = 1024  # tiles of g per chunk: the first chunk's DMA and the last one's write-back are not overlapped


def _row_tiles(n: int) -> int:
  """Tiles per DMA row for a copy of n contiguous tiles: the largest divisor of n up to DMA_T
  when that keeps rows of at least DMA_T // 2 tiles (one command instead of a row block and a
  tail: each command pays the HBM latency), else DMA_T."""
  if n <= DMA_T:
    return n
  return next((t for t in range(DMA_T, DMA_T // 2, -1) if n % t == 0), DMA_T)


class HbmAddr(int):
  """An `LI` immediate that is an HBM tile address: buffer `slot`'s HBM tile plus the int value
  (patched by the device at launch; the listing marks it with a `# hbm slot=k` comment)."""
  slot: int

  def __new__(cls, slot: int, off: int):
    v = super().__new__(cls, off)
    v.slot = slot
    return v

  def __str__(self):
    return f"{int(self)}  # hbm slot={self.slot}"


def _uses(self) -> dict:
  """slot -> {"read", "written", "full" (every store is an ungated g-indexed store), "idx" [INDEX UOps]}.
  A buffer reached any other way than LOAD/STORE of an INDEX counts as read and partially written
  (its forms unknown: kept whole), so nothing it holds is ever lost."""
  out: dict = {}
  users: dict = {}
  for u in self.uops:
    for x in u.src:
      users.setdefault(x, []).append(u)
  root = lambda b: root(b.src[0]) if b.op is Ops.AFTER else b  # noqa: E731
  inside_if, depth = set(), 0
  for u in self.uops:
    depth += (u.op is Ops.IF) - (u.op is Ops.ENDIF)
    if depth and u.op is Ops.STORE:
      inside_if.add(u)
  for p, b in self.bufs.items():
    e = out.setdefault(b.slot, {"read": False, "written": False, "full": True, "idx": []})
    todo, seen = [p], set()
    while todo:
      x = todo.pop()
      for c in users.get(x, []):
        if c in seen:
          continue
        seen.add(c)
        if c.op is Ops.AFTER and root(c) is p:
          todo.append(c)
        elif c.op is Ops.INDEX and c.src[0] is x:
          e["idx"].append(c)
          for v in users.get(c, []):
            if v.op is Ops.LOAD and v.src[0] is c:
              e["read"] = True
            elif v.op is Ops.STORE and v.src[0] is c:
              e["written"] = True
              form = self.lin(c.src[1]) if len(c.src) > 1 else None
              exact = form is not None and not form[1] and not form[2] and not self.symbolic and \
                form[0] == {r: s for r, s in zip(self.lane_ranges, self.strides)}
              if v in inside_if or len(v.src) > 2 or len(c.src) > 2 or not exact or b.size != self.G:
                e["full"] = False
            else:
              e["read"], e["written"], e["full"], e["idx"] = True, True, False, e["idx"] + [None]
        elif c.op not in (Ops.SINK,):
          e["read"], e["written"], e["full"], e["idx"] = True, True, False, e["idx"] + [None]
    if not e["idx"] and not e["read"] and not e["written"]:
      del out[b.slot]
  return out


class Stream:
  def plan_stream(self):
    """Resident windows when everything fits; else the chunk plan (or NotImplementedError)."""
    L, V = self.L, self.cfg.VMEM_TILES
    uses = _uses(self)
    self.chunked, self.nc, self.C, self.sets, self.set_tiles, self.block = False, 1, 0, 1, 0, None
    self.windows: dict[int, Window] = {}
    for b in self.bufs.values():
      e = uses.get(b.slot, {"read": False, "written": False, "full": True, "idx": []})
      self.windows[b.slot] = Window(b.slot, -(-b.size // L), base=b.base // L, read=e["read"] or (e["written"] and not e["full"]),
                                    written=e["written"])
    fits = self.spill_base + SPILL_RESERVE <= V
    forms = {}
    for slot, e in uses.items():
      fs = [self.lin(i.src[1]) if i is not None and len(i.src) > 1 else None for i in e["idx"]]
      forms[slot] = None if any(f is None for f in fs) else fs
    if getattr(self, "mstream_plans", None):
      if self.adopt_mxu_stream(forms, uses):
        return  # mxu_stream.py: the operands stream by K blocks, the lane loop by row groups
      self.mstream_plans = []  # no group fits: the VPU form
      self.dots, self.skip, self.dot_at, self.int8_checks, self.init_tables = [], set(), {}, [], {}
      self.find_lane_reduces()
      self.find_unrolled()
    if fits and (self.dots or self.symbolic or self.prefix or self.lane_reduces or self.G < OVERLAP_MIN * L):
      return  # resident: whole buffers in front of and after the program
    big = max(self.bufs.values(), key=lambda b: b.size)
    what = f"TINYTPU kernel {self.name}: its buffers need {self.spill_base} VMEM tiles (buffer {big.slot}: {big.dtype}, {big.size} elements), VMEM has {V}"
    if self.lane_reduces and self.plan_reduce_blocks(uses, forms):  # rblock.py: a full reduction by blocks
      return
    if self.symbolic or self.prefix or self.lane_reduces or self.G < 2:
      why = "a symbolic shape" if self.symbolic else "several output nests" if self.prefix else "a reduction to one element"
      raise NotImplementedError(f"{what}; streaming a kernel with {why} through VMEM is not built (missing: chunking reduce loops)")
    if self.dots:  # the MXU tables hold whole-buffer element addresses: stream the VPU form instead
      self.dots, self.skip, self.dot_at, self.int8_checks, self.init_tables = [], set(), {}, [], {}
      self.find_lane_reduces()
      self.find_unrolled()
    T = -(-self.G // L)
    g_all = None
    worst = None
    for sets in ((2,) if fits else (2, 1)):
      for C in sorted({min(T, 1 << k) for k in range(T.bit_length() + 1)} | {T}, reverse=True):
        nc = -(-T // C)
        if nc < 2 and C == T or fits and nc < OVERLAP_CHUNKS or C > CHUNK_MAX:
          continue  # one chunk is the whole kernel: it did not fit (or it fits: chunks only to overlap DMA and compute)
        if g_all is None:
          g_all = np.arange(T * L, dtype=np.int64)
        # table windows only when nothing else fits: a kernel that fits keeps its layout
        plan = self._windows(C, nc, forms, uses, g_all, tables=not fits)
        foot = sum(w.tiles * (sets if w.streamed else 1) for w in plan.values())
        foot += table_tiles(plan, nc, L)  # the chunk table: one period's chunks, packed
        if foot + 1 + SPILL_RESERVE <= V:
          if sets == 2 and any(w.step and w.read and w.written and w.tiles > abs(w.step) for w in plan.values()):
            continue  # a window read and written that overlaps the next one: chunks in order, single buffered
          return self._adopt(plan, C, nc, sets)
        if C == 1 and worst is None:
          worst = max(plan.values(), key=lambda w: w.tiles * (sets if w.streamed else 1))
    if fits:  # no overlapping plan: resident after all
      return
    if self.plan_reduce_stream(uses, forms):  # rstream.py: buffers by blocks of a reduce loop
      return
    if self.plan_blocked(uses, forms):  # lanes.py: no lane tile straddles an outer lane range
      return
    if self.plan_row_blocks(uses, forms):  # rowblock.py: a row window's rows by blocks of its range's loop
      return
    if worst is None:
      raise NotImplementedError(f"{what}; no chunking of its lane loop fits (missing: chunking the kernel's reduce loops)")
    b = next(b for b in self.bufs.values() if b.slot == worst.slot)
    raise NotImplementedError(
      f"TINYTPU kernel {self.name}: buffer {b.slot} ({b.dtype}, {b.size} elements, {-(-b.size // L)} tiles): each chunk of the lane "
      f"loop (one tile of outputs) touches {worst.tiles} of its tiles, VMEM has {V}; missing: chunking the kernel's reduce loops "
      "(a window over the reduce ranges)")

  def _windows(self, C: int, nc: int, forms: dict, uses: dict, g_all, tables: bool = True, rowblocks: bool = False) -> dict[int, Window]:
    return plan_windows(self, C, nc, forms, uses, g_all, tables, rowblocks)

  def _adopt(self, plan: dict[int, Window], C: int, nc: int, sets: int):
    """Lay the windows out (copy 0 of every streamed one, copy 1, the fixed ones, then the chunk
    table of the table windows) and rebase the buffers."""
    self.chunked, self.C, self.nc, self.sets = True, C, nc, sets
    t = 0
    streamed = [w for w in plan.values() if w.streamed]
    for w in streamed:
      w.base, t = t, t + w.tiles
    self.set_tiles = t if sets == 2 else 0
    t += self.set_tiles
    for w in plan.values():
      if not w.streamed:  # fixed windows, and rows by blocks (two copies of a block, rowblock.py)
        w.base, t = t, t + w.tiles * (2 if w.block else 1)
    self.chunk_tables, self.table_regs, self.period_regs = {}, {}, {}
    self.period = table_period(plan, nc)
    if self.period:
      self.table_base = t
      tiles = packed_table(plan, nc, self.period, self.L)
      self.chunk_tables = {t + j: row for j, row in enumerate(tiles)}
      t += len(tiles)
    self.windows = plan
    self.by_index = {(w.slot, w.index): w for w in plan.values() if w.index is not None}
    for b in self.bufs.values():
      b.base = plan[b.slot].base * self.L
    self.const_base = t * self.L
    self.first_tile = self.spill_base = t + 1
    self.step_regs: dict[int, int] = {}  # window step -> scalar register: copy offset minus step * chunk, in elements

  # --- addressing -------------------------------------------------------------------------------
  def window(self, buf, idx=None):
    """The window an access of buf at index idx goes through (None: not chunked)."""
    if not getattr(self, "chunked", False):
      return None
    return self.by_index.get((buf.slot, idx)) or self.windows.get(buf.slot)

  def copy_base(self, buf, idx=None) -> int:
    """The VMEM element of the window's copy 0 (the buffer's base, or a second window's)."""
    w = self.window(buf, idx)
    return buf.base if w is None or w.index is None else w.base * self.L

  def ebase(self, buf, idx=None) -> int:
    """The element base an access adds its index to (the window's lo folded in); a streamed window's
    register (rebase) adds the chunk's part."""
    w = self.window(buf, idx)
    return buf.base if w is None else self.copy_base(buf, idx) - (w.vlo if w.vstarts is not None else w.lo) * self.L

  def rebase_reg(self, buf, idx=None) -> int:
    w = self.window(buf, idx)
    if w is not None and w.block:  # rowblock.py's accesses are addressed by rb_address
      raise AssertionError(f"TINYTPU kernel {self.name}: buffer {w.slot}'s rows by blocks addressed outside rb_address")
    if w is not None and w.starts is not None:
      return self.table_regs[w.lane + (2 if w.vstarts is not None else 0)]
    return self.step_regs[w.step] if w is not None and w.step else 0

  def tile_ok(self, buf, idx=None) -> bool:
    """Tile loads/stores at the lane tile: a chunked kernel's lane tile counts within the chunk's copy."""
    if not getattr(self, "chunked", False):
      return True
    w = self.window(buf, idx)
    if w.rows or self.block:  # blocked lanes (lanes.py) are not the output's tiles
      return False
    one = self.nc == 1 and not w.step and w.lo == 0  # one chunk (a streamed GEMM's): the window is the buffer
    return (w.step == self.C or one) and (self.G % (self.C * self.L) == 0 or not self.data_addr)

  # --- DMA code ---------------------------------------------------------------------------------
  def dma(self, mn: str, vreg: int, voff: int, slot: int, hoff: int, tiles: int, hreg: int | None = None):
    """Copy `tiles` contiguous tiles between VMEM [vreg + voff] and buffer slot's HBM tile hoff
    (+ hreg when given): rows of up to DMA_T tiles, each row block one DMA (DMA.CFG)."""
    h = self.sreg("HBM address")
    self.ins("LI", SR(h), HbmAddr(slot, hoff))
    if hreg is not None:
      self.ins("SADD", SR(h), SR(h), SR(hreg))
    v = vreg
    if not -(1 << 15) <= voff + tiles < 1 << 15:
      v = self.sreg("VMEM address")
      self.ins("SADDI", SR(v), SR(vreg), voff)
      voff = 0
    done, shaped = 0, False  # every DMA emitter leaves the shape at one row (DMA.CFG's reset state)
    while done < tiles:
      T = _row_tiles(tiles - done)
      rows = min((tiles - done) // T, 65535)
      if rows > 1 or shaped:
        st = self.sreg("DMA stride")
        self.ins("LI", SR(st), T)
        self.ins("DMA.CFG", SR(st), rows, T)
        shaped = True
      a, b = (Mem(v, voff), Mem(h, 0)) if mn == "DMA.IN" else (Mem(h, 0), Mem(v, voff))
      self.ins(mn, a, b, T)
      done += rows * T
      if done < tiles:
        self.ins("SADDI", SR(h), SR(h), rows * T)
        if v == vreg and v != 0:
          v = self.sreg("VMEM address")
          self.ins("SADDI", SR(v), SR(vreg), 0)
        if v != 0:
          self.ins("SADDI", SR(v), SR(v), rows * T)
        else:
          voff += rows * T
    if shaped:
      self.ins("DMA.CFG", SR(0), 1, 0)  # back to one row
    self.free_temps()

  def window_in(self, w: Window, vreg: int, hreg: int | None = None):
    """A streamed window's DMA.IN into the copy at vreg (+ its base); a row window is one 2-D copy."""
    if not w.rows:
      return self.dma("DMA.IN", vreg, w.base, w.slot, w.lo, w.tiles, hreg=hreg)
    h = self.sreg("HBM address")
    self.ins("LI", SR(h), HbmAddr(w.slot, w.lo))
    if hreg is not None:
      self.ins("SADD", SR(h), SR(h), SR(hreg))
    self.row_dmas(w, vreg, h)
    self.free_temps()

  def row_dmas(self, w: Window, vreg: int, h: int):
    """A row window's rows from HBM tile [h] into the copy at [vreg + base]: one 2-D copy per class of
    rows (rowwin._row_classes: one class when the stride is whole tiles)."""
    st = self.sreg("DMA stride")
    self.ins("LI", SR(st), w.rstride)
    for hoff, voff, rows in w.classes:
      self.ins("DMA.CFG", SR(st), rows, w.vstride)
      self.ins("DMA.IN", Mem(vreg, w.base + voff), Mem(h, hoff), w.row_tiles)
    self.ins("DMA.CFG", SR(0), 1, 0)  # back to one row

  def row_form(self, buf, idx, form):
    """An access's affine form in a row window's coordinates: the row term's coefficient c becomes
    the rows' pitch in VMEM, row_tiles * L + c mod L (rowwin._row_classes: the classes' rows are laid
    out so that row r - r.vmin starts that many elements after row 0), and a fused outer range's
    coefficient the pitch times its rows per step."""
    w = self.window(buf, idx)
    if w is None or not w.rows or form is None:
      return form
    L, r, c = self.L, w.rrange, w.rcoef
    size = w.row_tiles * L + c % L
    if w.vstarts is not None:  # lane rows: the window's VMEM-coordinate start (rebase) holds the chunk's rows
      if form[0].get(r) != c:
        raise AssertionError(f"TINYTPU kernel {self.name}: a lane-row window's access has no {c} * lane range term")
      return {k: size if k is r else v for k, v in form[0].items()}, form[1], form[2]
    shift = c * r.vmin - size * r.vmin
    const, terms = form[1] + shift, list(form[2])
    for rr, cr in ((r, c), *w.rfused):  # fused outer ranges: cr / c rows per step (vmin 0)
      new = size * (cr // c)
      if isinstance(v := self.vals.get(rr), Const):  # an unrolled step: the term is in the constant
        const += (new - cr) * int(v.val)
        continue
      if not any(t is rr and cc == cr for cc, t in terms):
        raise AssertionError(f"TINYTPU kernel {self.name}: a row window's access has no {cr} * range term")
      terms = [(new if t is rr and cc == cr else cc, t) for cc, t in terms]
    return form[0], const, terms

  def free_temps(self):
    for r in self.temps:
      self.release(r)
    self.temps = []

  def resident_dma(self, windows: list[Window], out: bool) -> list:
    """Whole-buffer copies of resident windows (the program's prologue or epilogue), as code. In the
    prologue the largest buffer comes in pieces of growing size (1, 2, 4, ... parts) while the
    commands fit in the DMA queue: the SXU interlocks per command, so the code that reads the
    buffer's first tiles (the MXU's first K blocks) starts when the first piece has landed."""
    saved, self.code = self.code, []
    moved = [w for w in windows if (w.written if out else w.read) and not w.streamed and w.resident]
    pieces = {}
    if not out and moved and (big := max(moved, key=lambda w: w.tiles)).tiles >= SPLIT_MIN:
      n = min(PROLOGUE_DMAS - len(moved) + 1, big.tiles // (SPLIT_MIN // 2))
      if n > 1:  # a kernel moving as many buffers as the queue holds does not split (n = 0 divided by zero)
        cuts = [big.tiles * ((1 << i) - 1) // ((1 << n) - 1) for i in range(n + 1)]
        pieces[big.slot] = [(a, b - a) for a, b in zip(cuts, cuts[1:]) if b > a]
    for w in moved:
      for off, tiles in pieces.get(w.slot, [(0, w.tiles)]):
        self.dma("DMA.OUT" if out else "DMA.IN", 0, w.base + off, w.slot, w.lo + off, tiles)
    code, self.code = self.code, saved
    return code

  def chunk_regs(self):
    """Before the chunk loop: chunk 0's windows copied in, the rebase registers and the copy offset."""
    L = self.L
    for w in self.windows.values():
      if w.step and w.step not in self.step_regs:
        r = self.step_regs[w.step] = self.sreg("window rebase", temp=False)
        self.ins("LI", SR(r), 0)
      if w.starts is not None and not w.block:  # chunk 0's start is the window's lo: no rebase (lane rows: the VMEM-coordinate start's)
        r = self.table_regs[w.lane + (2 if w.vstarts is not None else 0)] = self.sreg("window rebase", temp=False)
        self.ins("LI", SR(r), 0)
    self.s_set = self.sreg("window copy", temp=False) if self.sets == 2 else 0
    if self.s_set:
      self.ins("LI", SR(self.s_set), 0)
    self.s_left = self.sreg("chunks left", temp=False)
    self.ins("LI", SR(self.s_left), self.nc - 1)
    self.s_pc = self.s_left  # the table tile: chunks left in the period
    if self.period and self.period < self.nc:
      self.s_pc = self.sreg("chunks left in the period", temp=False)
      self.ins("LI", SR(self.s_pc), self.period - 1)
      for w in self.windows.values():
        for lane, virtual in ((w.lane, False), (w.lane + 2, True))[:w.table_lanes // 2]:
          if period_step(w, self.period, self.nc, virtual):
            r = self.period_regs[lane] = self.sreg("period start", temp=False)
            self.ins("LI", SR(r), 0)
    self.shift = L.bit_length() - 1
    for w in self.windows.values():
      if w.streamed and w.read:
        self.window_in(w, 0)

  def chunk_offset(self, w: Window, nxt: bool) -> int:
    """A temporary holding step * (chunk index [+ 1]) in tiles, from the rebase register."""
    if w.starts is not None:
      return self.table_start(w.lane, nxt)
    r, t = self.step_regs[w.step], self.sreg("chunk offset")
    k = self.sreg("shift")
    self.ins("LI", SR(k), self.shift)
    self.ins("SSRA", SR(t), SR(r), SR(k))
    self.ins("SSUB", SR(t), SR(self.s_set), SR(t))
    if nxt:
      self.ins("SADDI", SR(t), SR(t), w.step)
    return t

  def prefetch(self):
    """The next chunk's windows into the other copy (skipped in the last chunk)."""
    skip = self.label() + LAST_SKIP
    self.ins("BEQ", SR(self.s_left), SR(0), skip)
    for w in self.windows.values():
      if w.streamed and w.read:
        t = self.chunk_offset(w, True)
        v = self.sreg("other copy")
        if self.s_set:
          self.ins("LI", SR(v), self.set_tiles)
          self.ins("SSUB", SR(v), SR(v), SR(self.s_set))
        else:
          self.ins("LI", SR(v), 0)
        self.window_in(w, v, t)
    self.code.append(Label(skip))

  def chunk_end(self):
    """After a chunk's lane loop: its written windows out, the next chunk's in (single buffered),
    then the registers stepped to the next chunk."""
    L = self.L
    for w in self.windows.values():
      if (w.step or w.starts is not None) and w.written:  # table windows written: blocked lanes' output
        t = self.chunk_offset(w, False)
        self.dma("DMA.OUT", self.s_set, w.base, w.slot, w.lo, w.tiles, hreg=t)
    if self.sets == 1:
      self.prefetch()
    new = self.sreg("next copy")
    if self.s_set:
      self.ins("LI", SR(new), self.set_tiles)
      self.ins("SSUB", SR(new), SR(new), SR(self.s_set))
      d = self.sreg("copy delta")
      self.ins("SSUB", SR(d), SR(new), SR(self.s_set))
      k = self.sreg("shift")
      self.ins("LI", SR(k), self.shift)
      self.ins("SSHL", SR(d), SR(d), SR(k))
      for r in self.step_regs.values():
        self.ins("SADD", SR(r), SR(r), SR(d))
      self.ins("SADDI", SR(self.s_set), SR(new), 0)
    for step, r in self.step_regs.items():
      self.ins("SADDI", SR(r), SR(r), -step * L)
    for lane, r in self.table_regs.items():  # (copy offset - next chunk's start) in elements
      t = self.table_start(lane, True)
      self.ins("SSUB", SR(t), SR(self.s_set), SR(t))
      k = self.sreg("shift")
      self.ins("LI", SR(k), self.shift)
      self.ins("SSHL", SR(r), SR(t), SR(k))
    if self.s_pc != self.s_left:  # the next period: the table from its first tile, the starts moved on
      skip = self.label()
      self.ins("BNE", SR(self.s_pc), SR(0), skip)
      self.ins("LI", SR(self.s_pc), self.period)
      for w in self.windows.values():
        for lane, virtual in ((w.lane, False), (w.lane + 2, True))[:w.table_lanes // 2]:
          if lane in self.period_regs:
            self.ins("SADDI", SR(self.period_regs[lane]), SR(self.period_regs[lane]), period_step(w, self.period, self.nc, virtual))
      self.code.append(Label(skip))
      self.ins("SADDI", SR(self.s_pc), SR(self.s_pc), -1)
    self.ins("SADDI", SR(self.s_left), SR(self.s_left), -1)
    self.free_temps()

  def table_start(self, lane: int, nxt: bool) -> int:
    """A temporary holding a table window's start for this chunk (or the next), in tiles from chunk
    0's: table lane `lane` (+ 1) of the chunk counted by the chunks left in the period, element
    (lane + nxt) * period + chunks left of the packed table (windows.packed_table), gathered into
    every lane of a tile."""
    tv, t = VT("chunk table"), self.sreg("chunk start")
    self.ins("VZERO", tv)
    self.ins("VGATHER", tv, tv, Mem(self.s_pc, self.table_base * self.L + (lane + nxt) * self.period))
    self.ins("VEXTRACT", SR(t), tv, 0, 0)
    if lane in self.period_regs:
      self.ins("SADD", SR(t), SR(t), SR(self.period_regs[lane]))
    return t

  def clamp_gather(self, buf, idx, where, base: Mem):
    """A gather from a window planned for the lanes whose value matters (windows.py): the other
    lanes' addresses, which may lie outside it, clamped into VMEM (what they read is never used)."""
    w = self.window(buf, idx)
    if w is None or not w.clamp:
      return where, base
    L, V = self.L, self.cfg.VMEM_TILES
    a = VT("addr")
    if base.base:
      sp = VT("gather base")
      self.ins("VSPLAT", sp, SR(base.base))
      self.ins("VADD", a, where, sp)
      where = a
    c = VT("addr")
    self.ins("VADD", c, where, self.tile(Const(base.off, dtypes.int32), dtypes.int32))
    self.ins("VMAX", c, c, self.tile(Const(0, dtypes.int32), dtypes.int32))
    self.ins("VMIN", c, c, self.tile(Const(V * L - 1, dtypes.int32), dtypes.int32))
    return c, Mem(0, 0)
