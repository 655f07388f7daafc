"""Embedding lookups on the SparseCore (doc/sparsecore.md; doc/backend.md "Embeddings").

tinygrad lowers `nn.Embedding(V, D)(idx)` to a gated gather (its one-hot sum folds away):

    out[b*D + d] = W[x*D + d] if 0 <= x < V else 0,   x = idx[b],  b < B, d < D

and `emb(idx).sum(axis)` over a bag of J indices to the same gather under a reduce range j:
`out[b*D + d] = sum over j of (gated) W[idx[b*J + j]*D + d]`. When every row is whole tiles
(D a multiple of N*N, at most EMB_W_MAX tiles), such a kernel is one `EMB.CFG` (table W: V rows of
D/(N*N) tiles, bags of 1 or J) and `EMB.BAG`/`EMB.FBAG` commands of up to 255 bags: the table,
the index list and the output are the kernel's buffers in HBM, in the layout the SparseCore reads.

The SparseCore traps on an index outside [0, V) where tinygrad reads 0, and it is not on the chip's
nodes (rtl/chip.sv ties its port off): so the kernel carries a launch guard (`sparsecore_holds`:
a single-core device and every index in range) and the generic program as its fallback, like the
requantising drains (backend/epilogue.py). Sums: int32 wraps like tinygrad's; fp32 bags are a left
fold in index order starting from the first row, tinygrad's from +0.0 then in index order: the
same values except that a bag whose rows are all -0.0 sums to -0.0 here and +0.0 in tinygrad
(equal as numbers)."""
from __future__ import annotations

import dataclasses

from tinygrad.dtype import dtypes
from tinygrad.uop.ops import Ops, UOp

from tinytpu import isa
from tinytpu.backend.records import Buf, Kernel
from tinytpu.config import Config

IMM_MAX = (1 << 15) - 1  # EMB.BAG offsets are 16-bit signed immediates
_PASSIVE = (Ops.CONST, Ops.CAST, Ops.PARAM, Ops.SINK, Ops.END, Ops.NOOP)


@dataclasses.dataclass
class Lookup:
  out: UOp
  table: UOp
  idx: UOp
  bags: int    # B
  bag: int     # J indices per bag (1: a plain lookup)
  width: int   # D: elements per row
  rows: int    # V


def _int(u: UOp) -> int | None:
  while u.op is Ops.CAST:
    u = u.src[0]
  return u.arg if u.op is Ops.CONST and isinstance(u.arg, int) else None


def _zero(u: UOp) -> bool:
  while u.op is Ops.CAST:
    u = u.src[0]
  return u.op is Ops.CONST and u.arg == 0 and str(u.arg) != "-0.0"


def _affine(u: UOp) -> dict | None:
  """An integer index as {leaf: coefficient} (key None: the constant), leaves RANGEs and LOADs."""
  if (c := _int(u)) is not None:
    return {None: c}
  if u.op is Ops.CAST:
    return _affine(u.src[0])
  if u.op in (Ops.RANGE, Ops.LOAD):
    return {u: 1}
  if u.op in (Ops.ADD, Ops.MUL, Ops.MULACC):
    parts = [_affine(s) for s in u.src]
    if any(p is None for p in parts):
      return None
    if u.op is Ops.ADD:
      return _add(parts[0], parts[1])
    prod = _mul(parts[0], parts[1])
    return prod if u.op is Ops.MUL or prod is None else _add(prod, parts[2])
  return None


def _add(a: dict, b: dict) -> dict:
  out = dict(a)
  for k, v in b.items():
    out[k] = out.get(k, 0) + v
  return {k: v for k, v in out.items() if v or k is None}


def _mul(a: dict, b: dict) -> dict | None:
  if set(a) == {None}:
    a, b = b, a
  if set(b) != {None}:
    return None  # not affine
  return {k: v * b[None] for k, v in a.items()}


def _is(form: dict | None, want: dict) -> bool:
  return form is not None and {k: v for k, v in form.items() if v} == {k: v for k, v in want.items() if v}


def _range_gate(g: UOp, x: UOp) -> int | None:
  """V when the gate is exactly 0 <= x < V (tinygrad: `-1 < x` and `x < V`)."""
  if g.op is not Ops.AND:
    return None
  lo = hi = None
  for c in g.src:
    if c.op is Ops.CMPLT and c.src[1] is x and _int(c.src[0]) == -1:
      lo = True
    elif c.op is Ops.CMPLT and c.src[0] is x and (v := _int(c.src[1])) is not None:
      hi = v
  return hi if lo and hi is not None else None


def match(uops: list[UOp], cfg: Config) -> Lookup | None:
  """The kernel as a SparseCore lookup, or None when it is anything else."""
  stores = [u for u in uops if u.op is Ops.STORE]
  ranges = [u for u in uops if u.op is Ops.RANGE]
  if len(stores) != 1 or len(ranges) not in (2, 3):
    return None
  st = stores[0]
  oi, ld = st.src[0], st.src[1]
  if oi.op is not Ops.INDEX or oi.src[0].op is not Ops.PARAM or len(ranges) == 3:
    return None  # bag sums (a reduce range): not matched yet (doc/backend.md)
  if ld.op is not Ops.LOAD or ld.src[0].op is not Ops.INDEX or ld.src[0].src[0].op is not Ops.PARAM:
    return None
  table, out = ld.src[0].src[0], oi.src[0]
  if table.dtype != out.dtype or table.dtype not in (dtypes.float32, dtypes.int32):
    return None
  rb, rd = ranges[0], ranges[1]
  B, D = _int(rb.src[0]), _int(rd.src[0])
  if B is None or D is None or D % cfg.lanes or not 1 <= D // cfg.lanes <= isa.EMB_W_MAX:
    return None
  if not _is(_affine(oi.src[1]), {rb: D, rd: 1, None: 0}):
    return None
  form = _affine(ld.src[0].src[1])
  xs = [k for k in (form or {}) if k is not None and k is not rd]
  if len(xs) != 1 or not _is(form, {xs[0]: D, rd: 1, None: 0}):
    return None
  x = xs[0]
  if x.op is not Ops.LOAD or len(x.src) != 1 or x.src[0].op is not Ops.INDEX or x.dtype != dtypes.int32:
    return None
  idx = x.src[0].src[0]
  if idx.op is not Ops.PARAM or not _is(_affine(x.src[0].src[1]), {rb: 1, None: 0}):
    return None
  tsize = _int(table.src[0])
  if len(ld.src) == 3:  # gated: alt 0, gate 0 <= x < V
    rows = _range_gate(ld.src[2], x) if _zero(ld.src[1]) else None
  elif len(ld.src) == 1:
    rows = tsize // D if tsize is not None else None
  else:
    return None
  if rows is None or tsize is None or rows * D > tsize or rows < 1:
    return None
  used = set(st.toposort())
  if any(u not in used and u.op not in _PASSIVE for u in uops):
    return None  # anything else in the kernel
  return Lookup(out, table, idx, B, 1, D, rows)


def lower(m: Lookup, cfg: Config, name: str) -> Kernel:
  """EMB.CFG, then EMB.BAG/EMB.FBAG commands of up to 255 bags (chunks whose index list starts on a
  tile), then EMB.WAIT and HALT; the HBM tiles are relocations (`# hbm slot=k`, backend/listing.py)."""
  L, w = cfg.lanes, m.width // cfg.lanes
  per = 255 if m.bag * 255 <= L else (255 * m.bag // L) * L // m.bag  # bags per command: its index list starts on a tile
  if per < 1:
    raise NotImplementedError(f"TINYTPU kernel {name}: bags of {m.bag} indices do not start on tiles (N*N = {L})")
  mn = "EMB.FBAG" if m.table.dtype == dtypes.float32 else "EMB.BAG"
  ts, os_, is_ = m.table.arg.slot, m.out.arg.slot, m.idx.arg.slot
  code = [f"LI s1, 0  # hbm slot={ts}", f"LI s2, {m.rows}", f"EMB.CFG s1, s2, {w}, {m.bag}",
          f"LI s3, 0  # hbm slot={os_}", f"LI s4, 0  # hbm slot={is_}"]
  done, do, di = 0, 0, 0
  while done < m.bags:
    n = min(per, m.bags - done)
    if do > IMM_MAX or di > IMM_MAX:
      code += [f"SADDI s3, s3, {do}", f"SADDI s4, s4, {di}"]
      do = di = 0
    code.append(f"{mn} [s3 + {do}], [s4 + {di}], {n}")
    done, do, di = done + n, do + n * w, di + n * m.bag // L
  code += ["EMB.WAIT", "HALT"]
  bufs = [Buf(p.arg.slot, p.dtype, _int(p.src[0]), 0) for p in sorted({m.out, m.table, m.idx}, key=lambda p: p.arg.slot)]
  windows = {m.out.arg.slot: _Written()}
  return Kernel("\n".join(code) + "\n", bufs, [m.out.arg.slot], [], 0, {}, cfg.N, executed=len(code), windows=windows)


@dataclasses.dataclass
class _Written:
  """The listing's window record for the output: written whole, not read (backend/listing.py)."""
  read: bool = False
  over: tuple = (0, 0)


def guard(m: Lookup) -> dict:
  return {"kind": "sparsecore", "idx": m.idx.arg.slot, "rows": m.rows, "count": m.bags * m.bag}


def sparsecore_holds(g: dict, host: dict, on_chip: bool) -> bool:
  """The launch guard: the SparseCore is there (not a chip core) and every index is in [0, rows)."""
  x = host[g["idx"]][:g["count"]]
  return not on_chip and bool(((x >= 0) & (x < g["rows"])).all())
