"""The lane chunker's windows (stream.py): per chunk of the lane loop and per buffer, the tiles of
the buffer that the chunk touches, and how they reach VMEM.

A buffer's window over a chunk is the bounding box of all its indices over the chunk's lanes (g
clamped to G - 1, as the lanes are) and over the reduce ranges' bounds:
- an affine index (analysis.lin): its lane part evaluated per lane, its uniform terms (reduce
  loop variables) by their bounds;
- another index of lane ranges and constants only (CDIV, CMOD, WHERE of them): evaluated per lane;
- a read counts only on the lanes where its value matters (`read_masks`): its gate holds (a LOAD
  with a gate, an INDEX with a valid) and every WHERE on its way to a store selects it (tinygrad's
  cat reads each source at every lane and selects one). Gated-off lanes address element 0 of the
  window's copy (address.address); the others' addresses are clamped into VMEM (`clamp`), what
  they read is never used.

The windows that result:
- **step**: chunk c's window starts at `lo + step * c` (one rebase register per step). The
  untightened box (affine indices, every lane) is tried first, so a kernel that streamed before
  keeps its plan;
- **table**: a read-only buffer whose chunks' starts are not arithmetic (tinygrad's cat: each
  source gated to its part of the output; a pool whose output rows do not fill whole tiles; the
  output of blocked lanes, lanes.py): the start of every chunk sits in the chunk table (packed: a
  chunk's entry is its table lanes, `lane`, `lane + 1`: this chunk's and the next one's, relative
  to chunk 0), which stream.py reads with VGATHER;
- **row**: a read-only buffer whose indices all step by c along one reduce range (a matrix-vector
  product's `W[k * n_out + n]`, a convolution's input channel planes): per chunk one row per value
  of that range, each row the box of the rest of the index, one 2-D DMA per class of rows
  (rowwin.py); the access's coefficient of the range becomes the row's pitch in VMEM
  (stream.row_form). Its starts are a step or a table like the others;
- **lane rows**: a read-only buffer read across its rows by the lanes (a transpose's
  `x[j * S + i]`, j a lane range): per chunk one row per value of j its lanes take, each the box
  of the rest of the index, one 2-D DMA (rowwin.py). The access's coefficient of j becomes the
  row's pitch and the window's start in those coordinates (`vstarts`, its own two table lanes)
  differs from the HBM one;
- **whole**: the buffer DMA'd in once (nothing smaller covers every chunk)."""
from __future__ import annotations

import dataclasses
import itertools
import operator

import numpy as np
from tinygrad.dtype import dtypes
from tinygrad.uop.ops import Ops, UOp

from tinytpu.backend.records import Const
from tinytpu.backend.rowwin import BIG, _affine_lanes, _lane_rows, _rows, block_rows


@dataclasses.dataclass
class Window:
  """One buffer's VMEM window."""
  slot: int
  tiles: int             # VMEM tiles of one copy
  lo: int = 0            # buffer tile of chunk 0's window (negative: before the buffer)
  step: int = 0          # tiles the window moves per chunk (0: loaded once, unless starts)
  base: int = 0          # VMEM tile of copy 0
  read: bool = True      # DMA'd in (the kernel reads it, or writes it only partially)
  written: bool = False  # DMA'd out
  over: tuple = (0, 0)   # HBM tiles the DMAs touch before / after the buffer (the device's guard)
  resident: bool = True  # DMA'd whole around the program when not streamed (rstream.py streams by reduce blocks)
  starts: tuple | None = None  # a table window: every chunk's buffer tile
  lane: int = 0          # a table window's first lane in the chunk table tiles
  clamp: bool = False    # planned for the lanes whose value matters only: gathers clamp their addresses
  index: UOp | None = None  # a second (third, ...) window of a buffer (key (slot, j)): the index expression it serves
  rows: int = 0          # a row window: `rows` rows of `row_tiles` tiles, `rstride` HBM tiles apart (one per value of rrange)
  row_tiles: int = 0
  rstride: int = 0
  rrange: UOp | None = None  # the reduce (or lane) range whose term `rcoef * rrange` the rows stand for
  rcoef: int = 0
  rfused: tuple = ()     # (range, coefficient) of the outer ranges fused into rrange's rows (rowwin._row_terms): coefficient / rcoef rows each
  classes: tuple = ()    # a row window's classes of rows (rowwin._row_classes): (HBM tile, VMEM tile, rows) of each, one 2-D DMA each
  vstride: int = 0       # ... the VMEM tiles between a class's rows
  vstarts: tuple | None = None  # lane rows: every chunk's start in VMEM row coordinates (table lanes lane + 2, lane + 3)
  vlo: int = 0
  block: int = 0         # a row window streamed by blocks of `block` rows of rrange's loop (rowblock.py; tiles and classes: one block's)
  span: int = -1         # ... rows to block (rowwin.block_rows): a row's extent from its first tile's start (-1: none)
  outer: tuple = ()      # ... (coefficient, range) of the loops around rrange's, added to the HBM address per block loop

  @property
  def table_lanes(self) -> int:
    """Lanes of the chunk table the window takes."""
    return 0 if self.starts is None else 4 if self.vstarts is not None else 2

  @property
  def streamed(self) -> bool:
    """Copied in (and out) per chunk, two copies when double buffered (a row window by blocks: by its
    own block loop instead, rowblock.py)."""
    return (bool(self.step) or self.starts is not None) and not self.block


def _cdiv(a, b):
  """C division (tinygrad's CDIV: toward zero)."""
  q = np.abs(a) // np.abs(b)
  return np.where((np.asarray(a) < 0) != (np.asarray(b) < 0), -q, q)


_OPS = {Ops.ADD: operator.add, Ops.SUB: operator.sub, Ops.MUL: operator.mul, Ops.MULACC: lambda a, b, c: a * b + c,
        Ops.CMPLT: operator.lt, Ops.CMPNE: operator.ne, Ops.CMPEQ: operator.eq, Ops.AND: operator.and_,
        Ops.OR: operator.or_, Ops.XOR: operator.xor, Ops.NEG: operator.neg, Ops.MAX: np.maximum,
        Ops.CDIV: _cdiv, Ops.CMOD: lambda a, b: a - b * _cdiv(a, b), Ops.WHERE: np.where,
        Ops.SHL: lambda a, b: a << b, Ops.SHR: lambda a, b: a >> b}


_FP_OPS = (Ops.ADD, Ops.SUB, Ops.MUL, Ops.CMPLT, Ops.CMPNE, Ops.CMPEQ, Ops.WHERE)  # exact in numpy's float32 as on the VPU


def lane_values(low, u: UOp, env: dict, memo: dict):
  """u evaluated over the lanes (env: lane range -> its value per lane), or None when u depends on
  anything but lane ranges, unrolled reduce steps and constants. float32 arithmetic is numpy's
  IEEE float32, which the VPU's FADD/FSUB/FMUL match bit for bit (tinygrad's nearest-neighbour
  interpolation indexes by `int(scale * (float(i + 1) - 1))`); int values are int32's while they fit
  (None when a result leaves int32 or a cast narrows)."""
  if u in memo:
    return memo[u]
  v = None
  if u in env:
    v = env[u]
  elif u.op is Ops.CONST:
    v = u.arg if isinstance(u.arg, (int, bool)) else np.float32(u.arg) if u.dtype == dtypes.float32 and isinstance(u.arg, float) else \
      np.float64(u.arg) if isinstance(u.arg, float) and dtypes.is_float(u.dtype) else None  # a weak float: rounded where it is cast
  elif u.op is Ops.RANGE:
    v = int(c.val) if isinstance(c := low.vals.get(u), Const) else None
  elif u.op is Ops.CAST and (s := lane_values(low, u.src[0], env, memo)) is not None:
    a, src = np.asarray(s), u.src[0].dtype
    if u.dtype == dtypes.bool:
      v = a != 0
    elif u.dtype == dtypes.float32 and (dtypes.is_int(src) or src == dtypes.bool or dtypes.is_float(src) and a.dtype == np.float64):
      v = a.astype(np.float32)
    elif dtypes.is_int(u.dtype) and u.dtype.itemsize >= 4 and src == dtypes.float32:
      v = np.trunc(a).astype(np.int64) if np.isfinite(a).all() and (np.abs(a) < 2 ** 31).all() else None
    elif dtypes.is_int(u.dtype) and (dtypes.is_int(src) or src == dtypes.bool) and (u.dtype.itemsize >= 4 or src == dtypes.bool):
      v = s
  elif (fn := _OPS.get(u.op)) is not None and (not dtypes.is_float(u.dtype) or u.dtype == dtypes.float32 and u.op in _FP_OPS):
    vs = [lane_values(low, s, env, memo) for s in u.src]
    if not any(x is None for x in vs) and not (u.op in (Ops.CDIV, Ops.CMOD) and np.any(np.asarray(vs[1]) == 0)):
      v = fn(*vs)
      if dtypes.is_int(u.dtype) and np.any(np.abs(np.asarray(v, dtype=np.float64)) >= 2 ** 31):
        v = None
  memo[u] = v
  return v


MASK_LIMIT = 1 << 25  # lanes x UOps: a larger kernel's reads count on every lane


def read_masks(low, rv: dict, n: int) -> dict:
  """INDEX -> (the lanes where a read through it matters, whether a WHERE narrowed it) for every
  INDEX read only by LOADs, from a backward pass over the UOps: a value matters where a user's
  value does, a WHERE's branches where its condition selects them (a condition of the lanes only).
  A read whose value reaches an address, a gate, a loop bound or an IF matters everywhere (a wrong
  value there could trap); so does anything stored."""
  if n * len(low.uops) > MASK_LIMIT:
    return {}
  users: dict = {}
  for u in low.uops:
    for x in u.src:
      users.setdefault(x, []).append(u)
  feed, todo = set(), []
  for u in low.uops:
    if u.op is Ops.INDEX:
      todo += u.src[1:]
    elif u.op in (Ops.LOAD, Ops.STORE) and len(u.src) > 2:
      todo.append(u.src[2])
    elif u.op in (Ops.RANGE, Ops.IF):
      todo += u.src
  while todo:
    x = todo.pop()
    if x not in feed:
      feed.add(x)
      todo += x.src
  memo: dict = {}
  cond = lambda c: None if (v := lane_values(low, c, rv, memo)) is None else np.broadcast_to(np.asarray(v, dtype=bool), (n,))  # noqa: E731
  dem: dict = {}
  for u in reversed(low.uops):
    us = users.get(u)
    if not us or u.op is Ops.STORE or u in feed:
      dem[u] = True
      continue
    d = False
    for w in us:
      dw = dem.get(w, True)
      if w.op is Ops.WHERE and w.src[0] is not u and w.src[1] is not w.src[2] and (c := cond(w.src[0])) is not None:
        dw = dw & (c if w.src[1] is u else ~c)
      d = d | dw
      if d is True:
        break
    dem[u] = d
  out = {}
  for i in low.uops:
    accs = users.get(i, [])
    if i.op is not Ops.INDEX or not accs or any(v.op is not Ops.LOAD or v.src[0] is not i for v in accs):
      continue
    gates = {v.src[2] if len(v.src) > 2 else i.src[2] if len(i.src) > 2 else None for v in accs}
    m = False
    for v in accs:
      m = m | dem[v]
    out[i] = (m if m is True else np.broadcast_to(np.asarray(m, dtype=bool), (n,)), m is not True,
              gates.pop() if len(gates) == 1 else None)
  return out


COMBOS = 256  # reduce-range values an index is evaluated at (per lane) when it is not affine


def _reduce_ranges(low, rv: dict, us: list) -> list | None:
  """The reduce ranges the UOps depend on (constant bounds), or None when one has none."""
  seen, todo, out = set(), list(us), []
  while todo:
    x = todo.pop()
    if x in seen:
      continue
    seen.add(x)
    if x.op is Ops.RANGE and x not in rv and not isinstance(low.vals.get(x), Const):
      if not isinstance(x.vmin, int) or not isinstance(x.vmax, int):
        return None
      out.append(x)
    else:
      todo += x.src
  return out


def _by_reduce_values(low, rv: dict, idx: UOp, gate: UOp | None):
  """[(index per lane, gate per lane or None)] at every value of the reduce ranges idx and gate
  depend on (at most COMBOS of them), or None when the index cannot be evaluated."""
  rs = _reduce_ranges(low, rv, [idx] + ([gate] if gate is not None else []))
  if rs is None:
    return None
  vals = [range(r.vmin, r.vmax + 1) for r in rs]
  if np.prod([len(v) for v in vals], dtype=np.int64) > COMBOS:
    return None
  out = []
  for combo in itertools.product(*vals):
    env, memo = {**rv, **dict(zip(rs, combo))}, {}
    if (lane := lane_values(low, idx, env, memo)) is None:
      return None
    out.append((lane, None if gate is None else lane_values(low, gate, env, memo)))
  return out


def _box(low, e: dict, rv: dict, nc: int, C: int, masks: dict | None):
  """Per chunk: (lowest element, highest element, whether any lane reads it), or None when an
  index's bounds are unknown. masks (read_masks): only the lanes whose read matters count (its
  gate and the WHERE selections), and an index that is not affine is evaluated per lane at every
  value of the reduce ranges it depends on."""
  L = low.L
  n = nc * C * L
  lo = np.full(nc, BIG, dtype=np.int64)
  hi = np.full(nc, -BIG, dtype=np.int64)
  act = np.zeros(nc, dtype=bool)

  def take(lane, umin, umax, mask):
    lane = np.broadcast_to(np.asarray(lane, dtype=np.int64), (n,)).reshape(nc, C * L)
    if mask is True:
      lo_e, hi_e, a = lane.min(axis=1), lane.max(axis=1), np.ones(nc, dtype=bool)
    else:
      mask = np.broadcast_to(np.asarray(mask, dtype=bool), (n,)).reshape(nc, C * L)
      lo_e, hi_e, a = np.where(mask, lane, BIG).min(axis=1), np.where(mask, lane, -BIG).max(axis=1), mask.any(axis=1)
    np.minimum(lo, np.where(a, lo_e + umin, BIG), out=lo)
    np.maximum(hi, np.where(a, hi_e + umax, -BIG), out=hi)
    act[:] |= a

  for i in e["idx"]:
    if i is None or len(i.src) < 2:
      return None
    dem, _, gate = masks.get(i, (True, False, None)) if masks is not None else (True, False, None)
    f = low.lin(i.src[1])
    affine = f is not None and all(k in rv for k in f[0]) and all(isinstance(t.vmin, int) and isinstance(t.vmax, int) for _, t in f[2])
    gm = True if gate is None else lane_values(low, gate, rv, {})
    if affine and gm is not None:
      take(*_affine_lanes(f, rv, n), dem if gm is True else dem & np.broadcast_to(np.asarray(gm, dtype=bool), (n,)))
    elif masks is not None and (parts := _by_reduce_values(low, rv, i.src[1], gate)) is not None:
      for lane, g in parts:
        take(lane, 0, 0, dem if g is None or g is True else dem & np.broadcast_to(np.asarray(g, dtype=bool), (n,)))
    elif affine:  # the gate depends on more than the reduce values reach: every lane counts
      take(*_affine_lanes(f, rv, n), dem)
    else:
      return None
  if not e["idx"]:
    return None
  return lo, hi, act


def _table(low, idx: list, rv: dict, nc: int, C: int, masks: dict, size_t: int, inside: bool = True):
  """A table window over the reads through idx: (every chunk's start tile, tiles, clamp), or None
  when their bounds are unknown or the window would be the whole buffer. inside: the last chunks'
  windows moved back inside the buffer (no guard needed); a written one (blocked lanes' output)
  keeps its starts periodic instead, its DMAs reaching into the guard."""
  L = low.L
  box = _box(low, {"idx": idx}, rv, nc, C, masks)
  if box is None or not box[2].any():
    return None
  act = box[2]
  lo_t, hi_t = box[0][act] // L, box[1][act] // L + 1
  W = int((hi_t - lo_t).max())
  s = np.minimum(lo_t, max(size_t - W, 0)) if inside else lo_t
  W = int((hi_t - s).max())
  if W >= size_t:
    return None
  starts = np.zeros(nc, dtype=np.int64)  # a chunk that reads nothing of it: a window at the buffer's start
  starts[act] = s
  return starts, W, any(masks[i][1] for i in idx if i in masks)  # narrowed by a WHERE (a gate sends its lanes to element 0)


def block_g(gp, block: tuple[int, int] | None, G: int):
  """The output index of every lane g' (numpy; lanes.py's blocked lanes when block is set), past the
  last lane clamped like the lanes past G."""
  if block is None:
    return np.minimum(gp, G - 1)
  B, Bp = block
  gp = np.minimum(gp, G // B * Bp - 1)
  return gp // Bp * B + np.minimum(gp % Bp, B - 1)


def lane_count(low) -> int:
  """Lanes of the lane loop: G, or every block's padded lanes (lanes.py)."""
  blk = getattr(low, "block", None)
  return low.G if blk is None else low.G // blk[0] * blk[1]


def plan_windows(low, C: int, nc: int, forms: dict, uses: dict, g_all, tables: bool = True, rowblocks: bool = False) -> dict[int, Window]:
  """Every buffer's window for chunks of C lane tiles (nc of them). tables: table windows allowed
  (stream.py's chunk loop reads them; the MXU stream's chunks do not). rowblocks: a row window is
  taken wherever one exists, however many rows it has (rowblock.py streams its rows by blocks)."""
  L = low.L
  blocked = getattr(low, "block", None) is not None
  g = block_g(g_all[:nc * C * L] if nc * C * L <= len(g_all) else np.arange(nc * C * L, dtype=np.int64), getattr(low, "block", None), low.G)
  rv = {r: (g // s) % e if i else g // s for i, (r, s, e) in enumerate(zip(low.lane_ranges, low.strides, low.extents))}
  out, lanes, masks = {}, 0, None
  for slot, w0 in low.windows.items():
    w = out[slot] = dataclasses.replace(w0)
    size_t = w.tiles
    if slot not in uses:
      w.tiles, w.read = 0, False
      continue
    e = uses[slot]
    box = _box(low, e, rv, nc, C, None) if forms.get(slot) else None
    stepped = None
    if box is not None:
      lo_t, hi_t = box[0] // L, box[1] // L + 1
      step = int(lo_t[1] - lo_t[0]) if nc > 1 else 0
      W = int((hi_t - lo_t).max())
      if (lo_t == lo_t[0] + step * np.arange(nc)).all() and W < size_t:
        stepped = (W, int(lo_t[0]), step)
    rw = None
    # blocked lanes (lanes.py): the output too (its chunks do not step, read back and written)
    eligible = tables and nc >= 2 and (not e["written"] or blocked) and (e["read"] or blocked) and lanes + 2 <= L
    lr = None
    if eligible:
      if masks is None:
        masks = read_masks(low, rv, nc * C * L)
      br = block_rows(low, e["idx"], rv, nc, C, masks) if rowblocks else None
      if br is not None and (stepped is None or stepped[0] > br[1] * (-(-br[5] // L) + 1)):  # rowblock.py sets the layout
        starts, w.rows, w.rrange, w.rcoef, w.outer, w.span = br
        w.lo, w.tiles = int(starts[0]), w.rows * (-(-w.span // L) + 1)
        step = int(starts[1] - starts[0])
        if (starts == starts[0] + step * np.arange(nc)).all() and step:
          w.step = step
        else:
          w.starts, w.lane = tuple(int(v) for v in starts), lanes
          lanes += 2
        continue
      rw = _rows(low, e["idx"], rv, nc, C, size_t, masks)
      if rw is None and lanes + 4 <= L:
        lr = _lane_rows(low, e["idx"], rv, nc, C, size_t, masks)
    if stepped is not None and (rw is None or rw[6] >= stepped[0]) and (lr is None or lr[7] >= stepped[0]):
      w.tiles, w.lo, w.step = stepped
      ends = [w.lo + c * w.step for c in (0, nc - 1)]
      w.over = (max(0, -min(ends)), max(0, max(ends) + w.tiles - size_t))
      continue
    if not eligible:
      continue  # no table or row window allowed: whole
    t = _table(low, e["idx"], rv, nc, C, masks, size_t, inside=not e["written"])
    groups = [t] if t is not None else None
    by: dict = {}
    for i in e["idx"]:
      by.setdefault(i.src[1] if i is not None and len(i.src) > 1 else None, []).append(i)
    if len(by) > 1 and None not in by:
      # far apart parts of one buffer (views of it: tinygrad's cat of a split buffer): a window per index
      parts = [_table(low, ix, rv, nc, C, masks, size_t) for ix in by.values()]
      if all(g is not None for g in parts) and sum(g[1] for g in parts) < (size_t if t is None else t[1]):
        groups = [(*g, k) for g, k in zip(parts, by)]
    if lr is not None and (groups is None or lr[7] < sum(g[1] for g in groups)):
      starts, w.rows, w.row_tiles, w.rstride, w.rrange, w.rcoef, vst, w.tiles, w.classes, w.vstride = lr
      w.lo, w.vlo = int(starts[0]), int(vst[0])
      last = int(starts.max()) + max(h + (n - 1) * w.rstride for h, _, n in w.classes) + w.row_tiles
      w.over = (max(0, -int(starts.min())), max(0, last - size_t))
      w.starts, w.vstarts, w.lane = tuple(int(v) for v in starts), tuple(int(v) for v in vst), lanes
      lanes += 4
      continue
    if rw is not None and (groups is None or rw[6] < sum(g[1] for g in groups)):
      starts, w.rows, w.row_tiles, w.rstride, w.rrange, w.rcoef, w.tiles, w.classes, w.vstride, w.rfused = rw
      w.lo = int(starts[0])
      last = int(starts.max()) + max(h + (n - 1) * w.rstride for h, _, n in w.classes) + w.row_tiles
      w.over = (max(0, -int(starts.min())), max(0, last - size_t))
      step = int(starts[1] - starts[0])
      if (starts == starts[0] + step * np.arange(nc)).all() and step:
        w.step = step
        continue
      w.starts, w.lane = tuple(int(v) for v in starts), lanes
      lanes += 2
      continue
    if groups is None or lanes + 2 * len(groups) > L:
      continue
    for j, grp in enumerate(groups):
      starts, W, clamp = grp[:3]
      x = w if j == 0 else dataclasses.replace(w, written=False)
      x.tiles, x.lo, x.starts, x.lane, x.clamp = W, int(starts[0]), tuple(int(v) for v in starts), lanes, clamp
      x.over = (max(0, -int(starts.min())), max(0, int(starts.max()) + W - size_t))
      x.index = grp[3] if len(grp) > 3 else None
      if j:
        out[(slot, j)] = x
        w.over = tuple(max(p, q) for p, q in zip(w.over, x.over))  # the device's guard covers every part
      lanes += 2
  return out


def table_period(windows: dict, nc: int) -> int:
  """The smallest P with every table window's start moving by one fixed amount every P chunks
  (a GEMM's row window repeats per output row: P = the row's chunks), so the table holds P tiles;
  nc when none is shorter, 0 without table windows."""
  ss = [np.asarray(st, dtype=np.int64) for w in windows.values() for st in (w.starts, w.vstarts) if st is not None]
  if not ss:
    return 0
  for P in range(1, nc):
    if all((d == d[0]).all() for st in ss for d in [st[P:] - st[:-P]]):
      return P
  return nc


def table_width(windows: dict) -> int:
  """Table lanes a chunk takes (the table windows' lanes: 2 or 4 each)."""
  return max((w.lane + w.table_lanes for w in windows.values() if w.starts is not None), default=0)


def table_tiles(windows: dict, nc: int, L: int) -> int:
  """VMEM tiles of the chunk table: one period's chunks, table_width lanes each, packed."""
  return -(-table_period(windows, nc) * table_width(windows) // L)


def packed_table(windows: dict[int, Window], nc: int, P: int, L: int) -> list[list[int]]:
  """chunk_table's rows packed into tiles, lane by lane: table lane k of the chunk read at `chunks
  left in the period` j is element k * P + j, so a table of many chunks takes P * E / L tiles (E =
  table_width), not P, and its address is the counter plus a constant (stream.table_start: one
  VGATHER)."""
  E = table_width(windows)
  rows = chunk_table(windows, nc, P, L)
  flat = [rows[j][k] for k in range(E) for j in range(P)]
  flat += [0] * (-len(flat) % L)
  return [flat[i:i + L] for i in range(0, len(flat), L)]


def period_step(w: Window, P: int, nc: int, virtual: bool = False) -> int:
  """Tiles a table window's start (its VMEM-coordinate start: virtual) moves per period."""
  st = w.vstarts if virtual else w.starts
  return st[P] - st[0] if P < nc else 0


def chunk_table(windows: dict[int, Window], nc: int, P: int, L: int) -> list[list[int]]:
  """The table windows' tiles for one period: tile j for chunk P - 1 - j of it (the chunk loop
  counts down), lanes `lane` and `lane + 1` its start and the next chunk's, in tiles from the
  period's first chunk's start minus chunk 0's (the period registers add the rest)."""
  rows = [[0] * L for _ in range(P)]
  for w in windows.values():
    parts = [(w.lane, w.starts, w.lo, False)] if w.starts is not None else []
    if w.vstarts is not None:
      parts.append((w.lane + 2, w.vstarts, w.vlo, True))
    for lane, st, lo, virtual in parts:
      for c in range(P):
        row = rows[P - 1 - c]
        row[lane] = st[c] - lo
        row[lane + 1] = (st[c + 1] - lo if c + 1 < P else period_step(w, P, nc, virtual)) if c + 1 < nc else 0
  return rows
