"""Fused PSUM epilogues (a mixin of Lowering, doc/backend.md "Epilogue fusion"): an int8 dot
product's result followed in the kernel by exactly `+ bias` (int32) and optionally `max(., 0)`
leaves PSUM through `PEPI.B` / `PEPI.BR` (doc/epilogue.md) instead of `PLD` and two VPU ops.

Both are bit-exact with tinygrad for every input: PEPI's add wraps mod 2^32 like tinygrad's int32
ADD, and its ReLU is the signed `max(x, 0)` of that sum. Requantising (`.BQ`/`.BRQ`) is not used:
tinygrad's `(relu(x) * m + r) >> s` wraps its int32 multiply and add and reads `r` and `s` from
buffers, so PEPI's exact 64-bit rounding shift equals it only for data (r = 2^(s-1), m >= 0, no
overflow of x * m) that the kernel cannot see when it is compiled; that chain stays SIMT.

Two places a result leaves PSUM:
- in PSUM (Dot.in_psum: lane tile t is result tile t): the lane loop's `PLD` becomes the PEPI, with
  the bias as the lane loop computes it (any int32 value, per element or broadcast);
- through the result area (the lane loop gathers its elements): the prologue's PSUM copy runs
  PEPI per result tile, so the bias must be a tile per block column nb of output channels, rows
  repeating it (doc/epilogue.md's contract). The bias must then be a load of a resident buffer at an
  index affine in the lane ranges whose value depends only on the result's column; its Nt tiles are
  gathered once per kernel into VMEM (after the kernel's other tiles) from preloaded index tables."""
from __future__ import annotations

import dataclasses

import numpy as np
from tinygrad.dtype import dtypes
from tinygrad.uop.ops import Ops, UOp

from tinytpu.backend.optable import _cint
from tinytpu.backend.records import Dot
from tinytpu.backend.vcode import VT, Mem


@dataclasses.dataclass
class Epi:
  """The epilogue fused into one Dot's PSUM drain."""
  dot: Dot
  add: UOp                    # acc + bias
  bias: UOp
  relu: UOp | None            # max(acc + bias, 0), or None
  area: int | None = None     # result-area path: VMEM tile of block column 0's bias tile (Nt tiles)

  @property
  def mnemonic(self) -> str:
    return "PEPI.BR" if self.relu is not None else "PEPI.B"


def _is_zero(u: UOp) -> bool:
  return _cint(u) == 0


class Epilogue:
  def plan_epilogues(self):
    """self.epis (Dot id -> Epi) and self.epi_at (UOp -> Epi: the ADD and MAX the drain replaces)."""
    self.epis, self.epi_at = {}, {}
    if self.mstream or self.symbolic or not self.dots:
      return
    pos = {u: i for i, u in enumerate(self.uops)}
    users: dict[UOp, list[UOp]] = {}
    for u in self.uops:
      for s in u.src:
        users.setdefault(s, []).append(u)
    for d in self.dots:
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
      e = Epi(d, add, bias, relu)
      if not d.in_psum and not self._stage_bias(e):
        continue
      self.epis[id(d)] = e
      self.epi_at[add] = e
      if relu is not None:
        self.epi_at[relu] = e

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

  def _stage_bias(self, e: Epi) -> bool:
    """The result-area path: the bias as one tile per block column, its index tables preloaded in
    VMEM after the kernel's tiles. False (no fusion) when the bias is not a resident buffer's load
    whose value per result element depends on the column only, or the tiles do not fit."""
    from tinytpu.backend.stream import SPILL_RESERVE
    b, d, L, N = e.bias, e.dot, self.L, self.cfg.N
    if self.chunked or b.op is not Ops.LOAD or len(b.src) != 1 or b.src[0].op is not Ops.INDEX or len(b.src[0].src) != 2:
      return False
    buf = self.bufs.get(b.src[0].src[0])
    f = self.lin(b.src[0].src[1])
    if buf is None or f is None or f[2] or any(r not in self.lane_ranges for r in f[0]) or d.T + 0 not in self.mxu_tables:
      return False
    M, _, Nc = d.dims
    Mt, Nt = -(-M // N), -(-Nc // N)
    g = np.minimum(np.arange(-(-self.G // L) * L), self.G - 1)
    rv = {r: (g // s) % ext for r, s, ext in zip(self.lane_ranges, self.strides, self.extents)}
    elem = buf.base + f[1] + sum(c * rv[r] for r, c in f[0].items())
    res = np.concatenate([self.mxu_tables[d.T + i] for i in range(len(g) // L)]) - d.S * L  # result element of each g
    nb, lane = res // L // Mt, res % L
    if (elem < buf.base).any() or (elem >= buf.base + buf.size).any() or (nb >= Nt).any():
      return False
    table = np.full((Nt, L), -1, dtype=np.int64)
    table[nb, lane] = elem
    if (table[nb, lane] != elem).any():  # two results of one (column, lane) want different biases: a per-element bias
      return False
    if self.spill_base + Nt + SPILL_RESERVE > self.cfg.VMEM_TILES:
      return False
    table[table < 0] = self.const_base  # lanes no result reaches: the constant pool's zero
    e.area = self.spill_base
    self.spill_base += Nt
    for i, row in enumerate(table):
      self.mxu_tables[e.area + i] = row.tolist()
    return True

  def stage_bias_tiles(self, e: Epi):
    """Gather the bias tiles in place through their tables (once per kernel, before the first drain)."""
    Nt = -(-e.dot.dims[2] // self.cfg.N)
    for k in range(0, Nt, 4):
      vs = [(VT("bias"), Mem(0, e.area + i)) for i in range(k, min(k + 4, Nt))]
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
    if u is e.relu:
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
