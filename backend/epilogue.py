"""Fused PSUM epilogues (a mixin of Lowering, doc/backend.md "Epilogue fusion"): an int8 dot
product's result followed in the kernel by exactly `+ bias` (int32), optionally `max(., 0)`, and
optionally tinygrad's requantisation `min((. * m + r) >> s, 127)` leaves PSUM through `PEPI.B`,
`PEPI.BR` or `PEPI.BRQ` (doc/epilogue.md) instead of `PLD` and a VPU sequence.

`.B`/`.BR` are bit-exact with tinygrad for every input: PEPI's add wraps mod 2^32 like tinygrad's
int32 ADD, and its ReLU is the signed `max(x, 0)` of that sum. `.BRQ` equals tinygrad's int32
chain only for some values (requant_holds: r = 2^(s-1), 1 <= s <= 31, m >= 0, no wrap of the
multiply-add), which the kernel cannot see when it is compiled: such a kernel is lowered twice
(lower.lower_kernel), the launch checks the guard on the host's buffer values and runs the
fallback (bias and ReLU fused, the requantisation SIMT) when it fails.

Two places a result leaves PSUM:
- in PSUM (Dot.in_psum: lane tile t is result tile t): the lane loop's `PLD` becomes the PEPI, with
  the bias as the lane loop computes it (any int32 value, per element or broadcast);
- through the result area (the lane loop gathers its elements): the prologue's PSUM copy runs
  PEPI per result tile, so the bias must be a tile per block column nb of output channels, rows
  repeating it (doc/epilogue.md's contract). The bias must then be a load of a resident buffer at an
  index affine in the lane ranges whose value depends only on the result's column; its Nt tiles
  (and .BRQ's Nt parameter tiles) are gathered once per kernel into VMEM (after the kernel's other
  tiles) from preloaded index tables. .BRQ is used on this path only;
- a streamed GEMM's drain (mxu_stream.py: each chunk's PSUM tiles to its result area) does the same
  with the same tiles, when its chunks are whole rows of the kernel's own orientation (a chunk's
  PSUM tiles are block column nb's, then the next's) and the bias buffers stay whole in VMEM."""
from __future__ import annotations

import dataclasses
import math

import numpy as np
from tinygrad.dtype import dtypes
from tinygrad.uop.ops import Ops, UOp

from tinytpu.backend.layout import _flat_offsets
from tinytpu.backend.optable import _cint
from tinytpu.backend.records import Dot
from tinytpu.backend.stream import SPILL_RESERVE
from tinytpu.backend.vcode import VT, Mem


W_TABLE_MAX = 1 << 16  # a launch guard lists the weights' elements per column up to this many (else a coarser bound)


@dataclasses.dataclass
class Epi:
  """The epilogue fused into one Dot's PSUM drain."""
  dot: Dot
  add: UOp                    # acc + bias
  bias: UOp
  relu: UOp | None            # max(acc + bias, 0), or None
  quant: tuple | None = None  # requantising: (the chain's last UOp, multiplier, rounding constant, shift loads, the chain's UOps)
  area: int | None = None     # result-area path: VMEM tile of block column 0's bias tile (Nt tiles; then Nt parameter tiles)
  rows: bool = False          # the bias tiles are per row block (Mt tiles), not per column block

  @property
  def mnemonic(self) -> str:
    return "PEPI.BRQ" if self.quant is not None else "PEPI.BR" if self.relu is not None else "PEPI.B"


def _is_zero(u: UOp) -> bool:
  return _cint(u) == 0


class Epilogue:
  def drains_through_epilogue(self, d: Dot) -> bool:
    """The first test of plan_epilogues: the dot's int8 result has one user, an int32 ADD of a
    bias (the chain PEPI.* may take). Asked before the layout (which may transpose the dot)."""
    if d.mode != "int8" or d.batch or self.mstream or self.symbolic:
      return False
    pos = {u: i for i, u in enumerate(self.uops)}
    if (v := self._dot_result(d, pos)) is None:
      return False
    use = [u for u in self.uops if v in u.src]
    return len(use) == 1 and use[0].op is Ops.ADD and use[0].dtype == dtypes.int32

  def plan_epilogues(self):
    """self.epis (Dot id -> Epi) and self.epi_at (UOp -> Epi: the ADD and MAX the drain replaces)."""
    self.epis, self.epi_at, self.guards = {}, {}, []
    if self.symbolic or not self.dots:
      return
    pos = {u: i for i, u in enumerate(self.uops)}
    users: dict[UOp, list[UOp]] = {}
    for u in self.uops:
      for s in u.src:
        users.setdefault(s, []).append(u)
    for d in self.dots:
      # a transposed dot (layout.transpose_dot) holds C^T in PSUM: its per-channel bias is one per row,
      # drained with a bias tile per row block (_stage_bias); the tables check every result's element
      if d.mode != "int8" or d.batch or (v := self._dot_result(d, pos)) is None:
        continue
      use = users.get(v, [])
      if len(use) != 1 or use[0].op is not Ops.ADD or use[0].dtype != dtypes.int32:
        continue
      add = use[0]
      bias = add.src[1] if add.src[0] is v else add.src[0]
      if bias is v:
        continue
      relu = None
      au = users.get(add, [])
      if len(au) == 1 and au[0].op is Ops.MAX and au[0].dtype == dtypes.int32 and any(s is add for s in au[0].src) \
          and any(_is_zero(s) for s in au[0].src):
        relu = au[0]
      quant = self._requant_chain(relu, users) if relu is not None and getattr(self, "requant", False) and not d.in_psum else None
      e = Epi(d, add, bias, relu, quant)
      if not d.in_psum and not (self._stage_bias_stream(e) if self.mstream else self._stage_bias(e)):
        continue
      self.epis[id(d)] = e
      for u in [add] + ([relu] if relu is not None else []) + (list(e.quant[4]) if e.quant is not None else []):
        self.epi_at[u] = e

  def _requant_chain(self, relu: UOp, users: dict):
    """tinygrad's int8 requantisation after the ReLU, `min((relu * m + r) >> s, 127)` (MULACC, SHR,
    then min as ~max(~x, -128)), each step the only user of the previous one: (last UOp, m, r, s,
    the chain's UOps), else None. Whether it equals PEPI.BRQ depends on the values (a launch guard)."""
    def only(u, op):
      us = users.get(u, [])
      return us[0] if len(us) == 1 and us[0].op is op and us[0].dtype == dtypes.int32 else None
    if (ma := only(relu, Ops.MULACC)) is None or ma.src[2] is relu or not any(x is relu for x in ma.src[:2]):
      return None
    m = ma.src[1] if ma.src[0] is relu else ma.src[0]
    if m is relu or (sh := only(ma, Ops.SHR)) is None or sh.src[0] is not ma:
      return None
    x1 = only(sh, Ops.XOR)
    mx = only(x1, Ops.MAX) if x1 is not None else None
    x2 = only(mx, Ops.XOR) if mx is not None else None
    if x2 is None or any(_cint(next(s for s in u.src if s is not v)) != k for u, v, k in ((x1, sh, -1), (mx, x1, -128), (x2, mx, -1))):
      return None
    return x2, m, ma.src[2], sh.src[1], (ma, sh, x1, mx, x2)

  def _dot_result(self, d: Dot, pos: dict) -> UOp | None:
    """The UOp whose value is exactly the dot product: the fully unrolled sum itself, or the one load
    of a reduce's accumulator after its loop when the accumulator starts at 0 (else None)."""
    if d.acc is None:
      return d.top
    rng = next((r for r, ds in self.dot_at.items() if any(x is d for x in ds)), None)
    if rng is None:
      return None
    stores = [u for u in self.uops if u.op is Ops.STORE and u not in self.skip and u.src[0].op is Ops.INDEX and self.reg_of(u.src[0]) == d.acc]
    if len(stores) != 1 or not _is_zero(stores[0].src[1]) or pos[stores[0]] > pos[rng]:
      return None
    loads = [u for u in self.uops if u.op is Ops.LOAD and u not in self.skip and u.src[0].op is Ops.INDEX
             and self.reg_of(u.src[0]) == d.acc and pos[u] > pos[rng]]
    return loads[0] if len(loads) == 1 else None

  def _column_table(self, d: Dot, b: UOp, rows: bool = False):
    """(Nt, L) element addresses of a load b for every result element of d's result area (lane
    (r, c) of block column nb's tile), -1 where no result is; None when b is not a load of a
    buffer at an index affine in the lane ranges, or two results of one (column block, lane) would
    need different elements (the value depends on the result's row block: a per-element operand).
    A streamed GEMM's results are laid out alike (block column nb's tiles, then the next's); its
    bias must sit whole in VMEM, at a fixed place."""
    L, N = self.L, self.cfg.N
    if b.op is not Ops.LOAD or len(b.src) != 1 or b.src[0].op is not Ops.INDEX or len(b.src[0].src) != 2:
      return None
    buf = self.bufs.get(b.src[0].src[0])
    f = self.lin(b.src[0].src[1])
    if buf is None or f is None or f[2] or any(r not in self.lane_ranges for r in f[0]):
      return None
    if self.mstream and ((w := self.window(buf)) is None or w.streamed or w.lo or w.tiles * L < buf.size):
      return None
    if not self.mstream and d.T not in self.init_tables:
      return None
    M, _, Nc = d.dims
    Mt, Nt = -(-M // N), -(-Nc // N)
    g = np.minimum(np.arange(-(-self.G // L) * L), self.G - 1)
    rv = {r: (g // st) % ext for r, st, ext in zip(self.lane_ranges, self.strides, self.extents)}
    elem = buf.base + f[1] + sum((c * rv[r] for r, c in f[0].items()), np.zeros(len(g), np.int64))  # an array even for a bias of one element
    if self.mstream:  # the lane's result (m, n), at its place in the resident layout's result area
      if any(r not in rv for r, _, _ in d.mlanes + d.nlanes):
        return None
      m, n = (sum(rv[r] * math.prod(e for _, e, _ in lanes[i + 1:]) for i, (r, _, _) in enumerate(lanes)) for lanes in (d.mlanes, d.nlanes))
      res = ((n // N) * Mt + m // N) * L + (m % N) * N + n % N
    else:
      res = np.concatenate([self.init_tables[d.T + i] for i in range(len(g) // L)]) - d.S * L  # result element of each g
    nb, lane = (res // L % Mt if rows else res // L // Mt), res % L  # rows: keyed by the row block mb instead
    if (elem < buf.base).any() or (elem >= buf.base + buf.size).any() or (res // L // Mt >= Nt).any():
      return None
    table = np.full((Mt if rows else Nt, L), -1, dtype=np.int64)
    table[nb, lane] = elem
    return table if (table[nb, lane] == elem).all() else None

  def _stage_bias(self, e: Epi) -> bool:
    """The result-area path: the bias as one tile per block column (and, requantising, the
    parameters as one tile per block column: row 0 the multipliers, row 1 the shifts), their index
    tables preloaded in VMEM after the kernel's tiles. False (no fusion) when the bias is not a
    resident buffer's load whose value per result element depends on the column only, or the tiles
    do not fit; a requantising chain that does not qualify falls back to bias (and ReLU) alone."""
    d, N = e.dot, self.cfg.N
    Nt = -(-d.dims[2] // N)
    if self.chunked:
      return False
    table = self._column_table(d, e.bias)
    if table is None:  # a bias per row (per output channel of a GEMM run transposed): a tile per row block, no requantising
      e.quant = None
      table = self._column_table(d, e.bias, rows=True)
      e.rows = table is not None
    if table is None:
      return False
    vq = None
    if e.quant is not None:
      vq = self._quant_tables(e, table)
      if vq is None:
        e.quant = None
    need = len(table) * (1 if vq is None else 2)
    if self.spill_base + need + SPILL_RESERVE > self.cfg.VMEM_TILES:
      if vq is not None:
        self.guards.pop()  # not fused after all: nothing to guard
      return False
    e.area = self.spill_base
    self.spill_base += need
    for i, row in enumerate(table):
      self.init_tables[e.area + i] = np.where(row < 0, self.const_base, row).tolist()  # no result: the pool's zero
    if vq is not None:
      for i, row in enumerate(vq):
        self.init_tables[e.area + Nt + i] = np.where(row < 0, self.const_base, row).tolist()
    return True

  def _stage_bias_stream(self, e: Epi) -> bool:
    """A streamed GEMM's drain (mxu_stream.py): the bias (and requantising parameter) tiles per
    block column as on the result-area path. Row chunks of the kernel's own orientation only (a
    chunk's PSUM tiles are block column nb's mc tiles, then the next column's)."""
    p = self.mstream
    if p.cols or p.ng > 1 or p.d.transposed or (table := self._column_table(e.dot, e.bias)) is None:
      return False
    vq = self._quant_tables(e, table) if e.quant is not None else None
    if vq is None:
      e.quant = None
    need = len(table) * (1 if vq is None else 2)
    if self.spill_base + need + SPILL_RESERVE > self.cfg.VMEM_TILES:
      if vq is not None:
        self.guards.pop()
      return False
    e.area, self.spill_base = self.spill_base, self.spill_base + need
    for i, row in enumerate(list(table) + ([] if vq is None else list(vq))):
      self.init_tables[e.area + i] = np.where(row < 0, self.const_base, row).tolist()
    return True

  def _quant_tables(self, e: Epi, btab):
    """PEPI.BRQ's parameter tiles per block column (row 0: lane c holds column c's multiplier
    element, row 1 its shift), and the launch guard (doc/backend.md): the multiplier, rounding
    constant and shift loads must each hold one value per output column, for every result."""
    d, N, L = e.dot, self.cfg.N, self.L
    m, r, s = e.quant[1:4]
    tabs = [self._column_table(d, x) for x in (m, r, s)]
    if any(t is None for t in tabs):
      return None
    real = btab >= 0
    if any(((t >= 0) != real).any() for t in tabs):
      return None
    Nt = len(btab)
    vq = np.full((Nt, L), -1, dtype=np.int64)
    for tab, row in ((tabs[0], 0), (tabs[2], 1)):
      t3 = tab.reshape(Nt, N, N)
      for nb in range(Nt):
        for c in range(N):
          col = t3[nb, :, c][t3[nb, :, c] >= 0]
          if len(col) and (col != col[0]).any():
            return None  # differs between rows of one column: not one parameter per channel
          vq[nb, row * N + c] = col[0] if len(col) else -1
    bufs = {u: self.bufs[u.src[0].src[0]] for u in (e.bias, m, r, s)}
    elems = lambda u, t: (bufs[u].slot, (t[real] - bufs[u].base).tolist())  # noqa: E731
    guard = {"kind": "requant", "a": d.a.slot, "w": d.b.slot, "K": d.dims[1], "b": elems(e.bias, btab),
             "m": elems(m, tabs[0]), "r": elems(r, tabs[1]), "s": elems(s, tabs[2])}
    K, Nc = d.dims[1], d.dims[2]
    if K * Nc <= W_TABLE_MAX:  # the weights' elements per column: |acc| <= max|A| * sum_k |W[k][n]| (tighter)
      w = np.array(d.b_off)[:, None] + _flat_offsets(d.nlanes)[None, :]
      if d.b_mask is not None:
        w = np.where(d.b_mask, w, -1)
      guard["wk"] = w.ravel().tolist()
      guard["cols"] = (np.nonzero(real)[0] * N + np.nonzero(real)[1] % N).tolist()  # each entry's output column n
    self.guards.append(guard)
    return vq

  def stage_bias_tiles(self, e: Epi):
    """Gather the bias (and parameter) tiles in place through their tables (once per kernel, before
    the first drain)."""
    n = -(-e.dot.dims[0 if e.rows else 2] // self.cfg.N) * (2 if e.quant is not None else 1)
    for k in range(0, n, 4):
      vs = [(VT("bias"), Mem(0, e.area + i)) for i in range(k, min(k + 4, n))]
      for v, a in vs:
        self.ins("VLD", v, a)
      for v, _ in vs:
        self.ins("VGATHER", v, v, Mem(0, 0))
      for v, a in vs:
        self.ins("VST", v, a)

  def lower_epi(self, u: UOp):
    """The ADD (and MAX) of a fused epilogue: in PSUM, one PEPI of the lane tile with the lane loop's
    bias; through the result area, the drain already applied it."""
    e = self.epi_at[u]
    if u is not e.add:  # the ReLU and the requantising chain: the value the PEPI wrote
      self.vals[u] = self.vals[e.add]
      return
    v = self.add_operand(e)
    if e.area is None:
      out = VT("epi")
      self.ins(e.mnemonic, out, Mem(self.s_t, self.t_off), self.tile(self.value(e.bias), dtypes.int32))
      v = out
    self.vals[u] = v

  def add_operand(self, e: Epi):
    return self.value(next(s for s in e.add.src if s is not e.bias))


def requant_slots(g: dict) -> tuple:
  """The buffer slots a requantising drain's launch guard reads."""
  return (g["a"], g["w"], *(g[p][0] for p in "bmrs"))


def requant_refusal(g: dict, raw: dict) -> str | None:
  """Why the guard fails (None: it holds; raw: slot -> the buffer's values)."""
  host = {slot: v.astype(np.int64) for slot, v in raw.items()}
  return None if requant_holds(g, host) else "the requantised sum may wrap in int32 or the shift is not tinygrad's rounding"


def requant_holds(g: dict, host) -> bool:
  """The launch guard of a PEPI.BRQ drain: True when, for these buffer values, it computes exactly
  tinygrad's `min((max(acc + b, 0) * m + r) >> s, 127)` in int32 (host: slot -> int64 values).
  With |acc| <= K * max|A| * max|W| (the MXU's exact int32 sum), per output column: 1 <= s <= 31,
  r = 2^(s-1), m >= 0, and max(acc + b, 0) * m + r < 2^31 (tinygrad's multiply-add does not wrap).
  Then for acc + b >= 0 both are floor((x*m + 2^(s-1)) / 2^s) >= 0 clipped at 127, and for
  acc + b < 0 both are 0 (tinygrad: r >> s = 0; PEPI: a non-positive product rounds to <= 0, then ReLU)."""
  take = lambda k: host[g[k][0]][np.asarray(g[k][1], dtype=np.int64)]  # noqa: E731
  b, m, r, s = take("b"), take("m"), take("r"), take("s")
  a, w = host[g["a"]], host[g["w"]]
  if not len(a) or not len(w):
    return False
  acc = int(g["K"]) * int(np.abs(a).max()) * int(np.abs(w).max())
  if "wk" in g:  # per column: max|A| * sum over k of |W[k][n]| (gated-off weights read 0)
    wk = np.asarray(g["wk"], dtype=np.int64).reshape(int(g["K"]), -1)
    col = np.where(wk >= 0, np.abs(w[np.maximum(wk, 0)]), 0).sum(0)
    acc = int(np.abs(a).max()) * col[np.asarray(g["cols"], dtype=np.int64)]
  if ((s < 1) | (s > 31)).any() or (m < 0).any():
    return False
  if (r != (np.int64(1) << (s - 1))).any():
    return False
  lo, hi = -(1 << 31), (1 << 31) - 1
  t = np.where((b - acc >= lo) & (b + acc <= hi), b + acc, hi)  # the sum's bound; a sum that may wrap: anything
  return bool((np.maximum(t, 0).astype(object) * m.astype(object) + r.astype(object) <= hi).all())
