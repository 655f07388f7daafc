"""Row windows (windows.py's plan): a buffer read row by row, per chunk of the lane loop one 2-D DMA
(or one per class of rows) instead of the bounding box of everything the chunk reads.

- **row**: every index steps by c along one reduce range (a matrix-vector product's `W[k * n_out +
  n]`, a convolution's input channel planes): one row per value of the range, each the box of the
  rest of the index. With c whole tiles the rows are one 2-D copy; otherwise they fall in classes
  whose starts are whole tiles apart, one 2-D copy each (`_row_classes`).
- **lane rows**: a buffer read across its rows by the lanes (a transpose's `x[j * S + i]`, j a lane
  range): one row per value of j the chunk's lanes take, in classes like the rows above.

In both the access's coefficient of the range becomes the row's pitch in VMEM, P * L + c % L
(stream.row_form)."""
from __future__ import annotations

import numpy as np
from tinygrad.uop.ops import Ops

BIG = 1 << 62  # beyond any element index


def _affine_lanes(f, rv: dict, n: int):
  """An affine form's lane part per lane and its uniform terms' bounds: (lane, umin, umax)."""
  lane = np.zeros(n, dtype=np.int64)
  for k, c in f[0].items():
    lane += c * rv[k]
  umin = umax = f[1]
  for c, t in f[2]:
    umin, umax = umin + min(c * t.vmin, c * t.vmax), umax + max(c * t.vmin, c * t.vmax)
  return lane, umin, umax


def _plain_read(low, i, masks: dict, gated: bool = False) -> bool:
  """An INDEX without a valid that only ungated LOADs read (from read_masks, or from the UOps when
  the kernel was too large for it); gated: LOADs through a gate or a valid count too (rows by
  blocks, rowblock.py: their addresses are the row form's on every lane, inside the rows' box, and
  the gate selects the value)."""
  if i is None or len(i.src) != 2 and not (gated and len(i.src) == 3):
    return False
  if i in masks and not gated:
    return masks[i][2] is None
  users = [u for u in low.uops if any(x is i for x in u.src)]
  return bool(users) and all(u.op is Ops.LOAD and u.src[0] is i and (gated or len(u.src) < 3) for u in users)


ROW_TILES_MAX, ROWS_MAX = 255, 65535  # a row window's row is one DMA row (the T field); its rows one DMA.CFG


def _is_reduce(r, rv: dict) -> bool:
  return r.op is Ops.RANGE and r not in rv and isinstance(r.vmin, int) and isinstance(r.vmax, int)


def _row_terms(f, rv: dict, L: int, fuse: bool) -> tuple | None:
  """The row terms of an affine form: its largest term c * r, or with fuse the chain of terms below
  it that continue it exactly (c_k = c_(k+1) * extent(r_(k+1)), ranges from 0: a batched matmul's
  `x[b * 2925 + m * 65 + k]` is one range of 450 rows 65 apart), largest first; None when none."""
  terms = sorted(f[2], key=lambda x: -x[0])
  if not terms or not _is_reduce(terms[0][1], rv) or terms[0][0] < L:
    return None
  chain = [terms[0]]
  for c, r in terms[1:] if fuse else ():
    pc, pr = chain[-1]
    if _is_reduce(r, rv) and c >= L and r.vmin == 0 and pr.vmin == 0 and pc == c * (r.vmax + 1) and all(t is not r for _, t in chain):
      chain.append((c, r))
    else:
      break
  return tuple(chain)


def _rows(low, idx: list, rv: dict, nc: int, C: int, size_t: int, masks: dict):
  """A row window over the reads through idx: (every chunk's start tile, rows, row tiles, HBM row
  stride, the range, its coefficient, copy tiles, row classes, their VMEM stride, the fused
  ranges), or None. Every index must be affine with the same largest term c * r (r a reduce range,
  c positive; rows of a c that is not a multiple of L drift against the tiles: `_row_classes`), and
  ungated (a gated read takes the value path, which addresses the buffer, not the rows). When no
  single range's rows fit, the terms below it that continue it exactly are fused into one range of
  rows (`_row_terms`)."""
  for fuse in (False, True):
    if (out := _rows_of(low, idx, rv, nc, C, size_t, masks, fuse)) is not None:
      return out
  return None


def _rows_of(low, idx: list, rv: dict, nc: int, C: int, size_t: int, masks: dict, fuse: bool):
  L = low.L
  chain = None
  for i in idx:
    if not _plain_read(low, i, masks):
      return None  # read through a gate (or not only read)
    if (f := low.lin(i.src[1])) is None or not f[2] or any(k not in rv for k in f[0]):
      return None
    ch = _row_terms(f, rv, L, fuse)
    if ch is None or chain is not None and (len(ch) != len(chain) or any(a[0] != b[0] or a[1] is not b[1] for a, b in zip(ch, chain))):
      return None
    chain = ch
  if chain is None or fuse and len(chain) < 2:
    return None
  c, r = chain[-1]
  rest = []
  for i in idx:  # the index without the row terms: its box per chunk is a row's
    f = low.lin(i.src[1])
    rest.append((f[0], f[1], [(cc, t) for cc, t in f[2] if not any(t is tr and cc == ct for ct, tr in chain)]))
  box = _box_forms(low, rest, rv, nc, C)
  if box is None:
    return None
  R = int(np.prod([t.vmax - t.vmin + 1 for _, t in chain]))
  geo = _row_classes(c, r.vmin, R, box, L)
  if geo is None:
    return None
  starts, P, hstride, vstride, classes, tiles = geo
  if P > ROW_TILES_MAX or R > ROWS_MAX or tiles >= size_t:
    return None
  return starts, R, P, hstride, r, c, tiles, classes, vstride, tuple((t, cc) for cc, t in chain[:-1])


def _row_classes(c: int, first: int, R: int, box, L: int):
  """Rows q = 0 .. R - 1 of the index c * (first + q) + rest (rest in box: per chunk lowest,
  highest) when c is not a multiple of L: row q starts (c * q) mod L elements further into its
  tiles than row 0, so the rows fall in m = L / gcd(c, L) classes (q mod m) whose starts are whole
  tiles apart (c * m / L), one 2-D DMA each. Row q comes from HBM tile H_q = (base + c * q) // L
  (base = c * first + rest's lowest) to VMEM tile H_q - H_0 + D * q of the copy, D = P - c // L, so
  an element's offset in the copy is (P * L + c % L) * q + rest - L * H_0 + c * first: affine, the
  row term's coefficient P * L + c % L (stream.row_form). Returns (every chunk's H_0, row tiles P,
  HBM stride, VMEM stride of a class, ((HBM tile - H_0, VMEM tile, rows) per class), copy tiles), or
  None when an offset does not fit a DMA's 16-bit immediate. base is rounded down to a whole tile
  (every chunk's classes then sit at the same offsets). c a multiple of L: one class, the rows P
  tiles apart."""
  base = (c * first + box[0]) // L * L
  span = int((c * first + box[1] - base).max())
  P, classes, tiles, hstride, vstride = row_layout(c, span, R, L)
  if max(classes[-1][:2]) >= 1 << 15:
    return None
  return base // L, P, hstride, vstride, classes, tiles


def row_layout(c: int, span: int, R: int, L: int) -> tuple:
  """R rows c elements apart, each holding `span` + 1 elements from the start of its first tile, in
  VMEM (_row_classes): (row tiles P, ((HBM tile, VMEM tile, rows) per class), copy tiles, HBM and
  VMEM tiles between a class's rows)."""
  m = L // int(np.gcd(c % L, L)) if c % L else 1
  q = np.arange(min(m, R))
  P = int(((c * q + span) // L - (c * q) // L).max()) + 1
  D = P - c // L
  hoff = (c * q) // L
  voff = hoff + D * q
  classes = tuple((int(h), int(v), int(-(-(R - i) // m))) for i, (h, v) in enumerate(zip(hoff, voff)))
  return P, classes, int((c * (R - 1)) // L + D * (R - 1) + P), c * m // L, c * m // L + D * m


def _lane_rows(low, idx: list, rv: dict, nc: int, C: int, size_t: int, masks: dict):
  """A lane-row window over the reads through idx: (starts, rows, row tiles, HBM row stride, the
  lane range, its coefficient, VMEM-coordinate starts, copy tiles, row classes, their VMEM stride),
  or None. Every index must be affine and ungated with the same term c * j, j a lane range and c >= L
  the largest coefficient (rows not whole tiles apart: `_row_classes`, first = the chunk's lowest j)."""
  L = low.L
  term = None
  for i in idx:
    if not _plain_read(low, i, masks):
      return None
    if (f := low.lin(i.src[1])) is None or any(k not in rv for k in f[0]) or not f[0]:
      return None
    j, c = max(f[0].items(), key=lambda x: x[1])
    if c < L or any(abs(cc) >= c for cc, _ in f[2]) or (term is not None and term != (j, c)):
      return None
    term = (j, c)
  if term is None:
    return None
  j, c = term
  forms = []
  for i in idx:
    f = low.lin(i.src[1])
    forms.append(({k: v for k, v in f[0].items() if k is not j}, f[1], f[2]))
  box = _box_forms(low, forms, rv, nc, C)
  if box is None:
    return None
  jv = np.broadcast_to(np.asarray(rv[j], dtype=np.int64), (nc * C * L,)).reshape(nc, C * L)
  j0, j1 = jv.min(axis=1), jv.max(axis=1)
  R = int((j1 - j0).max()) + 1
  geo = _row_classes(c, j0, R, box, L)
  if geo is None:
    return None
  starts, P, hstride, vstride, classes, tiles = geo
  if P > ROW_TILES_MAX or R > ROWS_MAX or tiles >= size_t:
    return None
  # an element's offset in the copy is (P * L + c % L) * (j - j0) + rest + c * j0 - L * H_0: in VMEM
  # row coordinates the chunk starts at H_0 + (P - c // L) * j0
  return starts, R, P, hstride, j, c, starts + (P - c // L) * j0, tiles, classes, vstride


def _box_forms(low, forms: list, rv: dict, nc: int, C: int):
  """Per chunk (lowest, highest element) of affine forms over every lane, or None."""
  n = nc * C * low.L
  lo, hi = np.full(nc, BIG, dtype=np.int64), np.full(nc, -BIG, dtype=np.int64)
  for f in forms:
    if any(not isinstance(t.vmin, int) or not isinstance(t.vmax, int) for _, t in f[2]):
      return None
    lane, umin, umax = _affine_lanes(f, rv, n)
    lane = lane.reshape(nc, -1)
    np.minimum(lo, lane.min(axis=1) + umin, out=lo)
    np.maximum(hi, lane.max(axis=1) + umax, out=hi)
  return lo, hi


def terms_by_range(terms: list) -> dict | None:
  """An index's uniform terms [(c, range)] as range -> c, or None when a range appears in more
  than one term (lin() keeps them apart: `r * 8 + r * 4` would silently keep one coefficient)."""
  out = {}
  for c, t in terms:
    if t in out:
      return None
    out[t] = c
  return out


def block_rows(low, idx: list, rv: dict, nc: int, C: int, masks: dict):
  """Rows to stream by blocks (rowblock.py) for the reads through idx: (every chunk's start tile,
  rows, the range, its coefficient, the outer terms, span), or None. The range is the innermost
  reduce range whose term c * r (c >= L, the same in every index) every index has; the terms of
  the loops around r's (`outer`: their value is known when r's loop starts, so the block loop adds
  it to the rows' HBM address) are left out of the rows' box, the other terms and the lane part
  are in it; `span` is the box's extent from the start of its first tile. Reads may be gated: every
  lane's address is inside the box (its terms at their bounds), the gate selects the value."""
  L = low.L
  forms = []
  for i in idx:
    if not _plain_read(low, i, masks, gated=True):
      return None
    if (f := low.lin(i.src[1])) is None or any(k not in rv for k in f[0]) or not f[2]:
      return None
    forms.append(f)
  if not forms:
    return None
  pos = {u: k for k, u in enumerate(low.uops)}
  ends = {u.src[1]: k for k, u in enumerate(low.uops) if u.op is Ops.END and len(u.src) > 1}
  terms = [terms_by_range(f[2]) for f in forms]
  if None in terms:
    return None  # a range in two terms of one index: its rows are not one c * r stride
  cands = [t for t, c in terms[0].items() if _is_reduce(t, rv) and c >= L and t in ends and t.vmin == 0
           and t not in low.unrolled and all(tm.get(t) == c for tm in terms)]
  for r in sorted(cands, key=lambda t: -pos[t]):  # innermost first: the shortest rows
    c = terms[0][r]
    outer = {(cc, t) for cc, t in forms[0][2] if t in pos and t in ends and pos[t] < pos[r] and ends[t] > ends[r]}
    if any(cc <= 0 for cc, _ in outer) or any({(cc, t) for cc, t in f[2] if (cc, t) in outer} != outer for f in forms):
      continue
    rest = [(f[0], f[1], [(cc, t) for cc, t in f[2] if t is not r and (cc, t) not in outer]) for f in forms]
    box = _box_forms(low, rest, rv, nc, C)
    if box is None:
      continue
    base = box[0] // L * L
    return box[0] // L, r.vmax + 1, r, c, tuple(sorted(outer, key=lambda x: pos[x[1]])), int((box[1] - base).max())
  return None
