"""Planning a streamed MXU GEMM (a mixin of Lowering, used by mxu_stream.py): how each operand
reaches the staging copies, the chunk size, the lane-order tables and the VMEM areas
(doc/backend.md, "MXU from HBM").

An operand whose element offsets are affine in (m, k) is gathered through tables that do not
depend on the K block (the gather's base register moves). An implicit GEMM's im2col windows are
not affine but separable, F(m) + G(k) (the index's lane part plus its reduce part): such an operand
is resident and each staged tile adds block kb's k-part tile to its lane-part table. When K is not
a multiple of N, the last block's lanes past K read k = K - 1 and A's are masked to zero. A padded
window's gated-off lanes are masked the same way, by one of a few distinct gate tiles per staged
tile and block (the border tiles only)."""
from __future__ import annotations

import dataclasses

import numpy as np
from tinygrad.dtype import dtypes

from tinytpu.backend.layout import _flat_offsets, transpose_dot
from tinytpu.backend.mxu_operands import (MxuStreamPlan, Operand, affine2, class_slot, patterns, row_classes,
                                           rows_over, window_fits, window_over)
from tinytpu.backend.records import Dot
from tinytpu.backend.stream import SPILL_RESERVE

COLUMN_GROUPS_TRIED = 3  # row-group sizes planned per column-chunk width (largest first)


class MxuPlan:
  def plan_mxu_stream(self) -> list[MxuStreamPlan]:
    """The streamed plans of the kernel's one dot product, largest group first ([]: the caller
    drops to the VPU). Sizes are checked against VMEM later, when the lane loop's windows are known."""
    if len(self.dots) != 1 or self.symbolic or self.data_addr or self.prefix:
      return []
    d = self.dots[0]
    if d.batch or d.a is d.b:
      return []
    # a chunk of the lane loop must be whole rows of the result, in either orientation: an NCHW
    # convolution's (out channel, position) lanes are one chunk of all positions in the kernel's
    # own (a batch of images: chunks of whole images), or m-major transposed (the weights as A);
    # the kernel's own orientation first, then the transposed one (adopt picks the first that fits)
    # then column chunks (every row, a few weight columns: the result transposed into lane order by
    # the drain's gathers), then separable operands in band windows per K block instead of resident
    plans = []
    for cols, band in ((False, False), (True, False), (False, True), (True, True)):
      plans += self._plans_in_lane_order(d, cols, band)
      transpose_dot(d)
      plans += self._plans_in_lane_order(d, cols, band)
      transpose_dot(d)
    plans.sort(key=lambda p: (self._plan_cycles(p), p.unaligned))  # stable: among equals the plain plans, then the order above
    return plans

  def _plan_cycles(self, p: MxuStreamPlan) -> int:
    """A plan's estimated cycles, to try the fastest first: per chunk, row group and K block the
    larger of the MXU's time (per weight column an MLW, whose shadow-bank wait is about N cycles
    when the MMULs are short, and mc * N rows) and the staging instructions (a gather and a store
    per tile, three more per gated tile); then each chunk's drain and lane-order gathers."""
    N = self.cfg.N
    Kt = -(-p.d.dims[1] // N)
    gated = len(p.A.gated) + len(p.B.gated)
    block = max(p.nt * (p.mc * N + N), 2 * (p.mc + p.nt) + 3 * gated)
    return p.nc * (p.ng * Kt * block + 2 * p.ng * p.mc * p.nt + 2 * p.C)

  def _plans_in_lane_order(self, d: Dot, cols: bool, band: bool) -> list[MxuStreamPlan]:
    N, L, P = self.cfg.N, self.L, self.cfg.PSUM_TILES
    M, K, Nc = d.dims
    Mt, Nt = -(-M // N), -(-Nc // N)
    if K < 2 or Nc < 1 or self.G != M * Nc or Nt > P:
      return []
    # the lanes: exactly the results, g = m * Nc + n (m-major), or chunks of R whole rows each laid
    # out alike (lane order `order` within a chunk)
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
    if fm is None or fn is None:
      return []
    m_major = (fm == g // Nc).all() and (fn == g % Nc).all()
    def order(R: int):
      """Chunk 0's (m, n) per lane when every chunk of R rows is R * Nc consecutive lanes laid out
      alike (None: the m-major order; False: no such chunks)."""
      if m_major:
        return None
      if M % R or (fm // R != g // (R * Nc)).any():
        return False
      lm, ln = (fm % R).reshape(-1, R * Nc), fn.reshape(-1, R * Nc)
      return (lm[0], ln[0]) if (lm == lm[0]).all() and (ln == ln[0]).all() else False
    ea = _flat_offsets(d.mlanes)[:, None] + np.array(d.a_off)[None, :]   # [m][k], buffer elements
    eb = np.array(d.b_off)[:, None] + _flat_offsets(d.nlanes)[None, :]   # [k][n]
    # an operand whose offsets are not affine in (m, k) (an implicit GEMM's im2col windows) is
    # separable: F(m) + G(k) by construction (the lane part plus the reduce part of its index)
    fa = affine2(ea) or (_flat_offsets(d.mlanes), np.array(d.a_off))
    fb = affine2(eb) or (np.array(d.b_off), _flat_offsets(d.nlanes))
    def corder(Cc: int):
      """Chunk 0's (m, n) per lane when every chunk of Cc whole columns (all M rows) is M * Cc
      consecutive lanes laid out alike, the last one possibly a prefix of that layout (fewer
      columns: the lane loop clamps the lanes past G) (False: no such chunks)."""
      S = M * Cc
      # chunks of whole lane tiles; one chunk of every column need not be (the lane loop clamps the lanes past G)
      if (S % L and Cc < Nc) or (fn // Cc != g // S).any():
        return False
      c0m, c0n = fm[:S], fn[:S] % Cc
      full, tail = self.G // S * S, self.G % S
      if full and ((fm[:full].reshape(-1, S) != c0m).any() or (fn[:full].reshape(-1, S) % Cc != c0n).any()):
        return False
      if tail and ((fm[full:] != c0m[:tail]).any() or (fn[full:] % Cc != c0n[:tail]).any()):
        return False
      return c0m, c0n
    plans = []
    def add(plan):
      if plan is not None:
        plan.elems = tuple(np.unique(e if mk is None else e[mk]) for e, mk in ((ea, d.a_mask), (eb, d.b_mask)))
        plan.transposed = d.transposed
        plans.append(plan)
    if not cols:
      # chunks of whole lane tiles; when R does not divide M the last chunk's extra rows are padding
      # (A resident: its gathers read past the rows, the lane loop clamps the lanes past G)
      # (one chunk of every row need not be whole lane tiles: the lane loop clamps the lanes past G)
      for mc in sorted({m for m in range(1, min(Mt, 255, P // Nt) + 1) if (m * N * Nc) % L == 0 or m == Mt}, reverse=True):
        if (lanes := order(mc * N)) is not False:
          add(self._mxu_plan(d, mc, fa, fb, lanes, band))
          add(self._mxu_plan(d, mc, fa, fb, lanes, band, unaligned=True))  # after the resident one: tried when that does not fit
      return plans
    # column chunks of nt weight tiles: the rows in groups of mc tiles (each its own K loop, all in
    # PSUM at once); the largest groups that plan, a few per nt (the VMEM check picks later)
    for nt in sorted((t for t in range(1, Nt + 1) if t * Mt <= P), reverse=True):
      if (lanes := corder(nt * N)) is False:
        continue
      found = 0
      for mc in range(min(Mt, 255), 0, -1):
        if -(-Mt // mc) * mc * nt <= P and (plan := self._mxu_plan(d, mc, fa, fb, lanes, band, nt)) is not None:
          add(plan)
          add(self._mxu_plan(d, mc, fa, fb, lanes, band, nt, unaligned=True))
          found += 1
          if found == COLUMN_GROUPS_TRIED:
            break
      # the unaligned variant's A in classes moves by whole classes: groups of a multiple of L rows,
      # the largest few that plan and the two smallest (their areas are the likeliest to fit)
      def classed(mc: int):
        if -(-Mt // mc) * mc * nt > P:
          return None
        plan = self._mxu_plan(d, mc, fa, fb, lanes, band, nt, unaligned=True)
        return plan if plan is not None and plan.A.classes else None
      step = L // N
      sizes, largest = sorted(set(range(step, min(Mt, 255) + 1, step)) | ({Mt} if Mt <= 255 else set()), reverse=True), []  # (Mt: one group)
      for mc in sizes:
        if len(largest) == COLUMN_GROUPS_TRIED:
          break
        if (plan := classed(mc)) is not None:
          largest.append(mc)
          add(plan)
      for mc in sizes[-2:]:
        if mc not in largest and (plan := classed(mc)) is not None:
          add(plan)
    return plans

  def _mxu_plan(self, d: Dot, mc: int, fa, fb, lanes, band: bool = False, nt: int | None = None,
                unaligned: bool = False) -> MxuStreamPlan | None:
    """fa, fb: (c0, c1, c2) of an affine operand, or (F, G) of a separable one (its lane and reduce
    parts: F(m) + G(k) for A, G(k) + F(n) for B). A separable operand is resident, or with `band`
    (A only) a window per K block: its gathers add a per-block k tile (ktable) to the lane part's
    tables, the base moves per row group only. nt: column chunks of nt weight tiles, the rows in
    groups of mc tiles (else row chunks of mc tiles times every column). unaligned: the variant in
    which operands that the plain one keeps resident stream: rows that are not whole tiles apart
    (in classes, row_classes), kb windows whose start is not a tile's first element (shifted), and
    both with a chunk's padding rows or K not a multiple of N (their DMAs read past the buffer:
    `over`); None when no operand does (it is the plain plan then). Plans sort plain first at the
    same estimated cost, so a resident operand that fits wins."""
    N, L = self.cfg.N, self.L
    M, K, Nc = d.dims
    cols, R = nt is not None, mc * N
    Nt = nt if cols else -(-Nc // N)  # weight column tiles per chunk
    Cc = Nt * N if cols else Nc       # its columns
    Kt, pad = -(-K // N), -K % N
    ng = -(-M // R) if cols else 1    # row groups per chunk
    nc = -(-Nc // Cc) if cols else -(-M // R)  # a last column chunk may be partial (B resident)
    if cols and (len(fb) == 2 or d.b_mask is not None or (ng == 1 and nc == 1)):
      return None  # a separable B moves per chunk (not planned); one group of one chunk is a row chunk
    if pad and d.mode != "int8":
      return None  # bf16: B's lanes past K repeat k = K - 1, and 0 * inf there would be NaN, not tinygrad's sum
    pi, kj = np.meshgrid(np.arange(N), np.arange(N), indexing="ij")  # lane pi * N + kj
    a_tiles, b_tiles = -(-d.a.size // L), -(-d.b.size // L)
    if d.a_mask is not None and (d.a_mask != d.a_mask[np.arange(M) % R]).any():
      return None  # A's gates differ per chunk (they repeat per image when a chunk is whole images)
    def ktable(G, k_of_lane):
      """[Kt + 1, L]: block kb's k part per lane (the extra block staged after the last repeats it;
      k past K reads k = K - 1, which A's mask multiplies by zero)."""
      G = np.concatenate([G, np.repeat(G[-1:], pad)])
      rows = [G[kb * N + k_of_lane].ravel() for kb in range(Kt)]
      return np.stack(rows + rows[-1:])
    if len(fa) == 2:
      F, G = fa
      step = int(F[R] - F[0]) if (ng if cols else nc) > 1 else 0
      m = np.arange(M)
      if (F != F[m % R] + (m // R) * step).any():
        return None  # the chunks' windows do not move by a fixed step
      tab = np.stack([F[np.minimum(pt * N + pi, M - 1)].ravel() for pt in range(mc)])
      if band:
        A = self._band(d.a.slot, a_tiles, tab, ktable(G, kj), step, ng if cols else nc)
        if A is None:
          return None
      else:
        A = patterns(Operand(d.a.slot, "resident", a_tiles, tab, 0, 0, step, ktable=ktable(G, kj)))
    else:
      if band:
        return None  # the band variant is for separable operands
      a0, sp, sk = fa
      # A: rows when contiguous along k with tile-aligned rows (and no padding rows to DMA), else resident
      streamable = M % R == 0 and not pad and d.a_mask is None
      ka_win = -(-((N - 1) * sk + R) // L) if sp == 1 else 0
      rows_ok = sk == 1 and sp % L == 0 and a0 % L == 0 and L % N == 0 and streamable
      a_cls = None
      kb_ok = sp == 1 and sk > 0 and (sk * N) % L == 0 and a0 % L == 0 and (R % L == 0 or (ng if cols else nc) == 1) and \
          2 * ka_win < a_tiles and streamable and window_fits(a0, sk * N, Kt, R, (ng if cols else nc) - 1, ka_win, a_tiles, L)
      # the unaligned variant also streams with padding rows (M not a multiple of R: the last chunk's
      # rows past M are read and their results dropped) and with K not a multiple of N (the last
      # block's lanes past K are read and A's masked to zero): their DMAs may read past the buffer
      loose = unaligned and d.a_mask is None and L % N == 0
      nrows = (ng if cols else nc) * R
      if loose and sk == 1 and sp > 0 and not rows_ok:
        a_cls = row_classes(sp, a0, N, L)
        moves = (ng if cols else nc) > 1
        a_cls = a_cls if R % a_cls[0] == 0 or not moves else None  # chunks (row groups) move by whole classes
      if rows_ok:
        tab = np.stack([((pt * N + pi) * L + kj).ravel() for pt in range(mc)])
        A = Operand(d.a.slot, "rows", R, tab, a0, N, sp * R, hstride=sp // L, rows=R)
      elif not kb_ok and a_cls:  # rows in classes: T tiles per row, class-major in the copy
        P, ct, T = a_cls
        Rr = -(-R // P) * P  # rows in the copy: whole classes (one group that does not move may round up)
        tab = np.stack([(class_slot(pt * N + pi, P, Rr) * T * L + ((pt * N + pi) * sp) % L + kj).ravel() for pt in range(mc)])
        A = Operand(d.a.slot, "rows", T * Rr, tab, a0, N, sp * R, hstride=P * sp // L, rows=Rr, classes=P, ctiles=ct, rtiles=T,
                    over=rows_over(a0, sp, max(nrows, Rr), (Kt - 1) * N, T, a_tiles, L))
      elif kb_ok:
        # A contiguous along m (a transposed dot's weight, (in, out) row-major): block kb's N rows'
        # bounding box, like B's kb window
        tab = np.stack([(pt * N + pi + sk * kj).ravel() for pt in range(mc)])
        A = Operand(d.a.slot, "kb", ka_win, tab, a0, sk * N, R)
      elif loose and sp == 1 and sk > 0 and 2 * (win := -(-((N - 1) * sk + R + L - 1) // L)) < a_tiles:
        # ... whose blocks or chunks (row groups) move by other than whole tiles (M or N * M not a
        # multiple of L) or whose base is not a tile's first element: one tile more, the gather base
        # adds h mod L (each block's own)
        tab = np.stack([(pt * N + pi + sk * kj).ravel() for pt in range(mc)])
        A = Operand(d.a.slot, "kb", win, tab, a0, sk * N, R, shifted=True,
                    over=window_over(a0, sk * N, Kt, R, (ng if cols else nc) - 1, win, a_tiles, L))
      else:
        tab = np.stack([(sp * (pt * N + pi) + sk * kj).ravel() for pt in range(mc)])
        A = Operand(d.a.slot, "resident", a_tiles, tab, a0, sk * N, sp * R)
    # B: weight tile nt lane kj * N + pi holds B[k = kb*N + kj][n = nt*N + pi]; padding columns read column 0
    def btab(rel_n):
      rows = []
      for j in range(Nt):
        n = j * N + pi.T  # [kj][pi]
        n = np.where(n < Nc, n, 0)
        rows.append(rel_n(kj.T, n).ravel())
      return np.stack(rows)
    if len(fb) == 2:
      G, F = fb
      B = patterns(Operand(d.b.slot, "resident", b_tiles, btab(lambda k, n: F[n]), 0, 0, 0, ktable=ktable(G, kj.T)))
    else:
      b0, tk, tn = fb
      kb_win = -(-((N - 1) * tk + Cc) // L) if tn == 1 else 0
      sb = tn * Cc if cols else 0  # B's columns move per column chunk
      # a partial last column chunk's padding columns read past B: resident only (inside VMEM, checked)
      streamable = not pad and d.b_mask is None and sb % L == 0 and not (cols and Nc % Cc)
      # (the unaligned variant: K's last block, and a partial last column chunk's columns past Nc, read past B; dropped)
      loose = unaligned and d.b_mask is None and (sb % L == 0 or nc == 1) and L % N == 0
      b_cls = row_classes(tn, b0, N, L) if loose and tk == 1 and tn > 0 else None
      if tn == 1 and tk > 0 and (tk * N) % L == 0 and b0 % L == 0 and 2 * kb_win < b_tiles and streamable and \
          window_fits(b0, tk * N, Kt, sb, nc - 1, kb_win, b_tiles, L):
        B = Operand(d.b.slot, "kb", kb_win, btab(lambda k, n: tk * k + n), b0, tk * N, sb)
      elif tk == 1 and tn % L == 0 and b0 % L == 0 and 2 * Cc < b_tiles and streamable:  # a Linear weight (out, in): Cc rows of one tile
        B = Operand(d.b.slot, "rows", Cc, btab(lambda k, n: n * L + k), b0, N, sb, hstride=tn // L, rows=Cc)
      elif b_cls and 4 * b_cls[2] * Cc < 2 * b_tiles:  # ... whose rows are not whole tiles apart (or K's last block): in classes
        P, ct, T = b_cls
        Cr = -(-Cc // P) * P  # rows in the copy: whole classes (column chunks move by whole classes: sb % L == 0)
        B = Operand(d.b.slot, "rows", T * Cr, btab(lambda k, n: class_slot(n, P, Cr) * T * L + (n * tn) % L + k), b0, N, sb,
                    hstride=P * tn // L, rows=Cr, classes=P, ctiles=ct, rtiles=T,
                    over=rows_over(b0, tn, (nc - 1 if cols else 0) * Cc + Cr, (Kt - 1) * N, T, b_tiles, L))
      elif loose and tn == 1 and tk > 0 and 2 * (win := -(-((N - 1) * tk + Cc + L - 1) // L)) < b_tiles:
        # kb windows shifted like A's (blocks of N rows not whole tiles apart, a base inside a tile,
        # K's last block past B)
        B = Operand(d.b.slot, "kb", win, btab(lambda k, n: tk * k + n), b0, tk * N, sb, shifted=True,
                    over=window_over(b0, tk * N, Kt, sb, nc - 1, win, b_tiles, L))
      else:
        B = Operand(d.b.slot, "resident", b_tiles, btab(lambda k, n: tk * k + tn * n), b0, tk * N, sb)
    if unaligned and not (A.classes or B.classes or A.shifted or B.shifted or A.over or B.over):
      return None  # the plain variant is this plan
    # lane order: lane tile q of a chunk gathers result element (grp * mc * Nt + nb * mc + mb) * L +
    # (m % N) * N + n % N (row group grp = m // R, its row tile mb)
    C = -(-(M * Cc if cols else R * Nc) // L)  # lane tiles per chunk
    if lanes is None:
      gl = np.minimum(np.arange(C * L), M * Nc - 1)  # lanes past G (one partial chunk) repeat the last
      m, n = gl // Nc, gl % Nc
    else:
      m, n = (np.resize(x, C * L) for x in lanes)
    m, n = m.reshape(-1, L), n.reshape(-1, L)
    e = ((m // R) * mc * Nt + (n // N) * mc + (m % R) // N) * L + (m % N) * N + n % N
    canon, dfill, ids = [], [], {}
    for row in e:
      shift = int(row.min()) // L
      key = tuple((row - shift * L).tolist())
      if key not in ids:
        ids[key] = len(canon)
        canon.append(list(key))
      dfill.append((ids[key], shift))
    plan = MxuStreamPlan(d, mc, R, C, nc, A, B, canon, dfill, ng=ng, nt=Nt, cols=cols, unaligned=unaligned)
    # per K block one row of tiles: the separable operands' k parts, then A's mask (lane (pi, kj):
    # all ones while kb * N + kj < K)
    cols = [o.ktable for o in (A, B) if o.ktable is not None]
    for i, o in enumerate([o for o in (A, B) if o.ktable is not None]):
      o.kslot = i
    for o in (A, B):
      if o.starts is not None:  # a band window's first tile per block, in lane 0
        o.sslot = len(cols)
        cols.append(np.pad(o.starts[:, None], ((0, 0), (0, L - 1))))
    if pad:
      mask = [np.where(kb * N + kj < K, -1, 0).ravel() for kb in range(Kt)]
      plan.mask, plan.mask_slot = True, len(cols)
      cols.append(np.stack(mask + mask[-1:]))
    self._plan_gates(plan, cols)
    if cols:
      plan.blk = np.stack(cols, axis=1)
    return plan

  def _band(self, slot: int, tiles: int, tab: np.ndarray, kt: np.ndarray, step: int, groups: int) -> Operand | None:
    """A separable operand read through a window per K block: block kb's window is the buffer's
    tiles s(kb) + g * step / L onwards (row group g), `win` tiles, DMA'd two blocks ahead like a
    streamed operand's; its k parts are relative to the window. s(kb) is lowered where the last
    group's window would pass the buffer's end (None when that loses elements: a partial last group).
    A padded window's offsets outside the buffer are gated lanes: the window holds the buffer's
    part only, and their gathers read whatever is next to the copy (_gathers_inside bounds it)."""
    L = self.L
    if step % L:
      return None  # the groups' windows must move by whole tiles
    lo, hi = int(tab.min()) + kt.min(axis=1), int(tab.max()) + kt.max(axis=1)
    lo, hi = np.clip(lo, 0, tiles * L - 1), np.clip(hi, 0, tiles * L - 1)
    s, end = lo // L, hi // L + 1
    win = int((end - s).max())
    st = step // L
    s2 = np.minimum(s, tiles - (groups - 1) * st - win)
    if (s2 < 0).any() or (end > s2 + win).any():
      return None
    return patterns(Operand(slot, "band", win, tab, 0, 0, step, ktable=kt - s2[:, None] * L, starts=s2))

  def _mxu_tiles(self, p: MxuStreamPlan, first: int) -> int:
    """Lay the plan's VMEM areas out from tile `first`; returns the first tile after them."""
    mc, Nt = p.mc, p.nt
    t = first
    p.res, t = t, t + p.ng * mc * Nt
    p.tables = t
    p.A.tat, p.B.tat = t, t + len(p.A.table)
    t += len(p.A.table) + len(p.B.table)
    if p.blk is not None:
      p.blk_at, t = t, t + p.blk.shape[0] * p.blk.shape[1]
    if p.gates is not None:
      p.gate_at, t = t, t + len(p.gates)
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
      if p.d.transposed != p.transposed:
        transpose_dot(p.d)
      nc = p.nc
      plan = self._windows(p.C, nc, forms, uses, np.arange(nc * p.C * L, dtype=np.int64), tables=False)
      for slot in (p.A.slot, p.B.slot):
        # read (the device loads it into HBM) but never DMA'd whole or by chunks: the K loop streams it
        o = p.A if slot == p.A.slot else p.B  # (o.over: tiles past its last that its DMAs may read)
        plan[slot] = dataclasses.replace(plan[slot], tiles=0, lo=0, step=0, read=True, written=False, resident=False, over=(0, o.over))
      foot = sum(w.tiles for w in plan.values())  # _adopt: the windows, then the constant tile
      if self._mxu_tiles(p, foot + 1) + SPILL_RESERVE > V or not self._gathers_inside(p, V):
        continue
      self._adopt(plan, p.C, nc, 1)
      self.spill_base = self._mxu_tiles(p, self.first_tile)
      self.mstream = p
      self.init_tables = self.mxu_stream_tables()
      for buf, e in zip((p.d.a, p.d.b), p.elems):
        if buf.dtype != dtypes.int8 and p.d.mode == "int8":
          self.int8_checks.append((buf.slot, e))
      return True
    return False

  def _gathers_inside(self, p: MxuStreamPlan, V: int) -> bool:
    """A resident operand's gathers, over every chunk and block (the last chunk's padding rows and
    the extra block staged in the last iteration included), stay inside VMEM."""
    Kt = -(-p.d.dims[1] // self.cfg.N)
    for o in (p.A, p.B):
      if o.mode == "band":  # either copy's gathers (a gated lane may point outside the window)
        lo = o.at * self.L + int(o.table.min()) + int(o.ktable.min()) + (0 if o.shifts is None else int(o.shifts.min()))
        hi = (o.at + o.win) * self.L + int(o.table.max()) + int(o.ktable.max()) + (0 if o.shifts is None else int(o.shifts.max()))
        if lo < 0 or hi >= V * self.L:
          return False
      if o.mode == "resident":
        kmax, kmin = (0, 0) if o.ktable is None else (int(o.ktable.max()), int(o.ktable.min()))
        smax, smin = (0, 0) if o.shifts is None else (int(o.shifts.max()), int(o.shifts.min()))
        moves = (p.ng if o is p.A and p.cols else p.nc) - 1  # A moves per row group, B per chunk
        hi = o.at * self.L + o.base0 + max(0, o.step_chunk) * moves + max(0, o.step_kb) * (Kt - 1) + int(o.table.max()) + kmax + smax
        lo = o.at * self.L + o.base0 + min(0, o.step_chunk) * moves + min(0, o.step_kb) * (Kt - 1) + int(o.table.min()) + kmin + smin
        if lo < 0 or hi >= V * self.L:
          return False
    return True

  def _plan_gates(self, p: MxuStreamPlan, cols: list):
    """A padded window's gates (d.a_mask / d.b_mask, evaluated at compile time): the staged tile
    (kb, t) is ANDed with its gate mask, one of a few distinct tiles (a convolution's borders),
    whose VMEM tile number block kb's row holds (gate-id tiles, read with VEXTRACT). Tiles whose
    gates are all true in every block are not masked at all."""
    N, L = self.cfg.N, self.L
    M, K, Nc = p.d.dims
    Kt, Mt, Nt = -(-K // N), -(-M // N), -(-Nc // N)
    uniq: dict[tuple, int] = {}
    for o, mask, T in ((p.A, p.d.a_mask, Mt), (p.B, p.d.b_mask, Nt)):
      if mask is None:
        continue
      full = np.ones((Mt * N, Kt * N) if o is p.A else (Kt * N, Nt * N), dtype=bool)
      full[:mask.shape[0], :mask.shape[1]] = mask
      def tile(kb, t):
        blk = full[t * N:(t + 1) * N, kb * N:(kb + 1) * N] if o is p.A else full[kb * N:(kb + 1) * N, t * N:(t + 1) * N]
        return tuple(np.where(blk.ravel(), -1, 0).tolist())
      ts = range(p.mc) if o is p.A else range(Nt)  # A gated only with one chunk: its tiles are M's
      o.gated = {t: j for j, t in enumerate([t for t in ts if any(0 in tile(kb, t) for kb in range(Kt))])}
      if not o.gated:
        continue
      o.gslot = len(cols)
      ncols = -(-len(o.gated) // L)
      ids = np.zeros((Kt + 1, ncols * L), dtype=np.int64)
      for kb in range(Kt + 1):
        for t, j in o.gated.items():
          ids[kb, j] = uniq.setdefault(tile(min(kb, Kt - 1), t), len(uniq))
      cols.extend(ids[:, c * L:(c + 1) * L] for c in range(ncols))
      p.id_cols += tuple(range(o.gslot, o.gslot + ncols))
    if uniq:
      p.gates = np.array(list(uniq), dtype=np.int64)
