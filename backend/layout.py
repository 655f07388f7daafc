"""The VMEM layout of a kernel's MXU work (a mixin of Lowering): per dot product its staged K
blocks with their index tables, operand tiles read in place, the result area and lane tables, and
whether the lane loop reads results straight from PSUM."""
from __future__ import annotations

from typing import Any

import numpy as np
from tinygrad.dtype import dtypes


def _flat_offsets(lanes: list) -> "Any":
  """fa(m) for every flattened m over (range, extent, coefficient) lanes, outer first."""
  f = np.zeros(1, dtype=np.int64)
  for _, e, c in lanes:
    f = (f[:, None] + c * np.arange(e)[None, :]).ravel()
  return f


def transpose_dot(d) -> None:
  """Swap the Dot's operands in place: C^T[n][m] = sum over k of B[k][n] A[m][k], so B's columns are
  the MXU's activation rows and A's rows its weight columns. The same products summed over k in the
  same order (int8 exact, bf16 products exact in fp32), so the values are unchanged; only which
  operand is stationary changes. An involution (d.transposed records the orientation)."""
  d.a, d.b = d.b, d.a
  d.mlanes, d.nlanes = d.nlanes, d.mlanes
  d.a_off, d.b_off = d.b_off, d.a_off
  d.a_mask, d.b_mask = (None if d.b_mask is None else d.b_mask.T), (None if d.a_mask is None else d.a_mask.T)
  d.batch = [(r, e, cb, ca) for r, e, ca, cb in d.batch]
  d.transposed = not d.transposed


def worth_transposing(d, N: int) -> bool:
  """A dot with fewer row tiles than weight columns (Mt < Nt: a dense layer on a small batch) runs
  transposed: the MXU then loads Kt * Mt weight tiles and streams Nt rows after each instead of
  Kt * Nt weight tiles with Mt row tiles each. The array does the same row passes either way, but
  every MLW costs an issue slot and a cycle of the MXU's tile buffer between MMULs: with one row
  tile per MMUL the SXU's MLW/MMUL issue is the bottleneck (r_120_400, LeNet's first dense layer:
  6000 -> 200 MXU instructions), with four (mlp_784_128_10's r_16_128_784, MMUL T = 4) one cycle
  in 17 is lost (111,533 -> 106,163 cycles transposed). With Mt >= Nt the orientation stays as the
  matcher found it. (A dot whose result is drained through a fused epilogue keeps it unless the
  transposition saves many pairs: layout_dots asks epilogue.py.)"""
  M, _, Nc = d.dims
  return -(-M // N) < -(-Nc // N)


TRANSPOSE_OVER_EPILOGUE = 64  # MLW/MMUL pairs a transposition must save to be taken over a fused epilogue


def transposition_saves(d, N: int) -> int:
  """MLW and MMUL instructions the transposition saves: Kt * (Nt - Mt) pairs."""
  M, K, Nc = d.dims
  return 2 * -(-K // N) * (-(-Nc // N) - -(-M // N))


class Layout:
  def layout_dots(self):
    """VMEM tiles for every Dot: staging blocks, index tables, result areas and lane tables."""
    # layout after the constant pool, per Dot: its K blocks (each the Mt activation tiles [mb] of [m][k]
    # then the Nt weight tiles [nb] of [k][n], staged in place from preloaded index tables), then
    # every Dot's result area ([nb][mb] tiles of [m][n]) and its lane table (per lane of the kernel,
    # the element of the result area that lane reads)
    L, N = self.L, self.cfg.N
    t = self.first_tile
    tables: dict[int, list[int]] = {}
    for d in self.dots:  # epilogue.py's per-channel bias tiles assume the kernel's own orientation:
      # a fusable epilogue wins over a small transposition (it saves a few ops per result tile)
      if worth_transposing(d, N) and (transposition_saves(d, N) >= 2 * TRANSPOSE_OVER_EPILOGUE or not self.drains_through_epilogue(d)):
        transpose_dot(d)
    for d in self.dots:
      M, K, Nc = d.dims
      Mt, Kt, Nt = -(-M // N), -(-K // N), -(-Nc // N)
      d.X = t
      t += len(d.batches) * Kt * (Mt + Nt)
      fa, fb = _flat_offsets(d.mlanes), _flat_offsets(d.nlanes)
      # gated-off loads (a padded window) read the zero too
      ma = np.ones((M, K), bool) if d.a_mask is None else d.a_mask
      mb_ = np.ones((K, Nc), bool) if d.b_mask is None else d.b_mask
      d.direct = {}
      for bi, (boa, bob) in enumerate(d.batches):
        # element indices to gather in place: padding lanes read the constant pool's zero (lane 0 of the lane-index tile)
        ea = np.full((Mt * N, Kt * N), self.const_base, dtype=np.int64)
        ea[:M, :K] = d.a.base + boa + fa[:, None] + np.array(d.a_off)[None, :]
        eb = np.full((Kt * N, Nt * N), self.const_base, dtype=np.int64)
        eb[:K, :Nc] = d.b.base + bob + np.array(d.b_off)[:, None] + fb[None, :]
        ea[:M, :K][~ma] = self.const_base
        eb[:K, :Nc][~mb_] = self.const_base
        xa = ea.reshape(Mt, N, Kt, N).transpose(2, 0, 1, 3).reshape(Kt, Mt, L)  # [kb][mb] tiles of [m][k]
        wb = eb.reshape(Kt, N, Nt, N).transpose(0, 2, 1, 3).reshape(Kt, Nt, L)  # [kb][nb] tiles of [k][n]
        # with one K block, operand tiles already laid out in a buffer are read there, not staged
        # (lanes of padding rows m >= M or columns n >= Nc only reach unused results)
        lane = np.arange(L)
        if Kt == 1 and ma.all() and mb_.all() and not d.batch:
          for i, (row, ok) in enumerate([(r, lane // N < M - mb * N) for mb, r in enumerate(xa[0])] +
                                        [(r, lane % N < Nc - nb * N) for nb, r in enumerate(wb[0])]):
            base = row[ok][0] - lane[ok][0]
            if base % L == 0 and (row[ok] == base + lane[ok]).all():
              d.direct[i] = base // L
          if any(mb not in d.direct or d.direct[mb] != d.direct[0] + mb for mb in range(Mt)):  # MMUL reads Mt tiles in a row
            d.direct = {i: a for i, a in d.direct.items() if i >= Mt}
        X = d.X + bi * Kt * (Mt + Nt)
        for i, row in enumerate(np.concatenate([xa, wb], axis=1).reshape(-1, L)):
          if i not in d.direct:
            tables[X + i] = row.tolist()
        for buf, e, ok in ((d.a, ea[:M, :K], ma), (d.b, eb[:K, :Nc], mb_)):
          if buf.dtype != dtypes.int8 and d.mode == "int8":
            self.int8_checks.append((buf.slot, np.unique(e[ok]) - buf.base))
    g_all = np.arange(-(-self.G // L) * L)
    g = np.minimum(g_all, self.G - 1)  # padding lanes repeat the last lane
    rv = {r: (g // s) % e for r, s, e in zip(self.lane_ranges, self.strides, self.extents)}
    for d in self.dots:  # the split keys of a grouped conv: (r, c) = r // c, (r, c, "mod") = r % c
      for k in [r for r, _, _ in d.mlanes + d.nlanes] + [r for r, _, _, _ in d.batch]:
        if isinstance(k, tuple):
          rv[k] = rv[k[0]] // k[1] if len(k) == 2 else rv[k[0]] % k[1]
    def flat(lanes):
      f = np.zeros_like(g)
      for r, e, _ in lanes:
        f = f * e + rv[r]
      return f
    for d in self.dots:
      M, K, Nc = d.dims
      Mt, Nt = -(-M // N), -(-Nc // N)
      m, n, b = flat(d.mlanes), flat(d.nlanes), flat([(r, e, 0) for r, e, _, _ in d.batch])
      rows = (((b * Nt + n // N) * Mt + m // N) * L + (m % N) * N + n % N).reshape(-1, L)
      # lane tile t reads result tile t as it is (lanes past G are don't-care unless values become addresses):
      # the lane loop loads it from PSUM, no copy, no gather
      d.in_psum = Mt * Nt <= self.cfg.PSUM_TILES and Mt <= 255 and not self.data_addr and not d.batch and \
        all((r == q * L + lane)[g_all[q * L:(q + 1) * L] < self.G].all() for q, r in enumerate(rows))
      d.S, d.T = t, t + len(d.batches) * Mt * Nt
      if not d.in_psum:
        t = d.T + len(rows)
        for i, row in enumerate(rows):
          tables[d.T + i] = (row + d.S * L).tolist()
    if t + 16 > self.cfg.VMEM_TILES:  # no room for the staging tiles (and some spill space)
      # the operands stream from HBM by K blocks (mxu_stream.py; the chunk plan checks the sizes), else the VPU loops
      for d in self.dots:  # the streamed plans read the lanes m-major in the kernel's own orientation
        if d.transposed:
          transpose_dot(d)
      self.mstream_plans = self.plan_mxu_stream()
      if not self.mstream_plans:
        self.dots, self.skip, self.dot_at, self.int8_checks = [], set(), {}, []
      return
    self.init_tables = tables
    self.spill_base = t
