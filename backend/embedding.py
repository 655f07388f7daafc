"""Embedding lookups on the SparseCore (doc/sparsecore.md; doc/backend.md "Embeddings").

tinygrad lowers `nn.Embedding(V, D)(idx)` to a gated gather (its one-hot sum folds away):

    out[b*D + d] = W[x*D + d] if 0 <= x < V else 0,   x = idx[b],  b < B, d < D

and `emb(idx).sum(-2)` over bags of J indices to the same gather under a reduce range j into a
register accumulator: `out[b*D + d] = 0 + sum over j of (gated) W[idx[b*J + j]*D + d]`. When every row is whole tiles
(D a multiple of N*N, at most EMB_W_MAX tiles), such a kernel is one `EMB.CFG` (table W: V rows of
D/(N*N) tiles, bags of 1 or J) and `EMB.BAG`/`EMB.FBAG` commands of up to 255 bags: the table,
the index list and the output are the kernel's buffers in HBM, in the layout the SparseCore reads.

The SparseCore traps on an index outside [0, V) where tinygrad reads 0: so the kernel carries a
launch guard (`sparsecore_refusal`: every index in range) and the generic program as its fallback,
like the requantising drains (backend/epilogue.py). Every device has the SparseCore: the
single-core co-sim next to its core, the chip on node 3 shared by both cores (doc/chip.md), so a
chip core's lookup runs on it too. Sums: int32 wraps like tinygrad's; fp32 bags are a left
fold in index order starting from the first row, tinygrad's from +0.0 then in index order: the
same bits except where every row of a bag holds -0.0 (tinygrad: +0.0), so an fp32 bag sum's guard
also asks for a table without -0.0."""
from __future__ import annotations

import dataclasses
import math

import numpy as np
from tinygrad.dtype import dtypes
from tinygrad.uop.ops import AxisType, Ops, UOp

from tinytpu import isa
from tinytpu.backend.records import Buf, Kernel
from tinytpu.config import Config

IMM_MAX = isa.offset_max("EMB.BAG")  # offsets: signed immediates of the ISA table's field
BAGS_MAX = isa.operand_max("EMB.BAG", "B")  # bags per command
_PASSIVE = (Ops.CONST, Ops.CAST, Ops.PARAM, Ops.SINK, Ops.END, Ops.NOOP, Ops.BUFFER, Ops.AFTER)


@dataclasses.dataclass
class Lookup:
  out: UOp
  table: UOp
  idx: UOp
  bags: int    # B
  bag: int     # J indices per bag (1: a plain lookup)
  width: int   # D: elements per row
  rows: int    # V
  per: int     # bags per EMB.BAG command (<= 255; index lists start on tiles)


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


def _table_load(ld: UOp, rd: UOp, D: int):
  """(table, index LOAD x, rows V) when `ld` is the gated row load W[x*D + d] (gate 0 <= x < V, alt 0)."""
  if ld.op is not Ops.LOAD or ld.src[0].op is not Ops.INDEX or ld.src[0].src[0].op is not Ops.PARAM:
    return None
  table, form = ld.src[0].src[0], _affine(ld.src[0].src[1])
  xs = [k for k in (form or {}) if k is not None and k is not rd]
  if len(xs) != 1 or not _is(form, {xs[0]: D, rd: 1, None: 0}):
    return None
  x, tsize = xs[0], _int(table.src[0])
  if x.op is not Ops.LOAD or len(x.src) != 1 or x.src[0].op is not Ops.INDEX or x.dtype != dtypes.int32 or x.src[0].src[0].op is not Ops.PARAM:
    return None
  if len(ld.src) == 3:
    rows = _range_gate(ld.src[2], x) if _zero(ld.src[1]) else None
  else:
    rows = tsize // D if len(ld.src) == 1 and tsize is not None else None
  if rows is None or tsize is None or rows < 1 or rows * D > tsize:
    return None
  return table, x, rows


def _acc_load(u: UOp, acc: UOp) -> bool:
  """u reads the register accumulator `acc` (LOAD of INDEX(AFTER(acc, ...), 0))."""
  if u.op is not Ops.LOAD or u.src[0].op is not Ops.INDEX:
    return False
  base = u.src[0].src[0]
  while base.op is Ops.AFTER:
    base = base.src[0]
  return base is acc and _int(u.src[0].src[1]) == 0


def match(uops: list[UOp], cfg: Config) -> Lookup | None:
  """The kernel as a SparseCore lookup, or None when it is anything else: the plain gather (ranges
  b, d: a bag of one) or the bag sum (ranges b, d and the reduce j, b absent for one bag, into a
  register accumulator set to 0 before j and stored after it)."""
  stores = [u for u in uops if u.op is Ops.STORE]
  ranges = [u for u in uops if u.op is Ops.RANGE]
  outs = [st for st in stores if st.src[0].op is Ops.INDEX and st.src[0].src[0].op is Ops.PARAM]
  red = [r for r in ranges if r.arg[-1] is AxisType.REDUCE]
  if len(outs) != 1 or len(red) > 1 or len(ranges) - len(red) not in (1, 2):
    return None
  st, lanes = outs[0], [r for r in ranges if r not in red]
  rd, rb = lanes[-1], (lanes[0] if len(lanes) == 2 else None)
  D, B = _int(rd.src[0]), (_int(rb.src[0]) if rb is not None else 1)
  if B is None or D is None or D % cfg.lanes or not 1 <= D // cfg.lanes <= isa.EMB_W_MAX:
    return None
  if not _is(_affine(st.src[0].src[1]), {rb: D, rd: 1, None: 0}):
    return None
  if not red:  # out[b*D + d] = gated W[idx[b]*D + d]
    if len(stores) != 1 or (t := _table_load(st.src[1], rd, D)) is None:
      return None
    J, rj = 1, None
  else:  # acc = 0; for j: acc = acc + gated W[idx[b*J + j]*D + d]; out[b*D + d] = acc
    rj = red[0]
    J = _int(rj.src[0])
    acc = st.src[1].src[0].src[0] if st.src[1].op is Ops.LOAD and st.src[1].src[0].op is Ops.INDEX else None
    while acc is not None and acc.op is Ops.AFTER:
      acc = acc.src[0]
    if J is None or acc is None or acc.op is not Ops.BUFFER or not _acc_load(st.src[1], acc) or len(stores) != 3:
      return None
    init = [s_ for s_ in stores if s_ is not st and _zero(s_.src[1])]
    upd = [s_ for s_ in stores if s_ is not st and s_.src[1].op is Ops.ADD]
    if len(init) != 1 or len(upd) != 1:
      return None
    a, v = upd[0].src[1].src
    if not _acc_load(a, acc):
      a, v = v, a
    if not _acc_load(a, acc) or (t := _table_load(v, rd, D)) is None:
      return None
  table, x, rows = t
  idx = x.src[0].src[0]
  if table.dtype != st.src[0].src[0].dtype or table.dtype not in (dtypes.float32, dtypes.int32):
    return None
  if not _is(_affine(x.src[0].src[1]), {rb: J, rj: 1, None: 0} if rj is not None else {rb: 1, None: 0}):
    return None
  if (isz := _int(idx.src[0])) is None or isz < B * J:
    return None
  step = cfg.lanes // math.gcd(J, cfg.lanes)  # bags per command: each command's index list starts on a tile
  per = B if B <= BAGS_MAX else BAGS_MAX // step * step
  if per < 1:
    return None
  used = set().union(*(s_.toposort() for s_ in stores))
  if any(u not in used and u.op not in _PASSIVE for u in uops):
    return None  # anything else in the kernel
  return Lookup(st.src[0].src[0], table, idx, B, J, D, rows, per)


def lower(m: Lookup, cfg: Config, name: str) -> Kernel:
  """EMB.CFG, then EMB.BAG/EMB.FBAG commands of up to 255 bags (chunks whose index list starts on a
  tile), then EMB.WAIT and HALT; the HBM tiles are relocations (`# hbm slot=k`, backend/listing.py)."""
  L, w, per = cfg.lanes, m.width // cfg.lanes, m.per
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
  g = {"kind": "sparsecore", "idx": m.idx.arg.slot, "rows": m.rows, "count": m.bags * m.bag}
  if m.bag > 1 and m.table.dtype == dtypes.float32:
    g["table"] = m.table.arg.slot  # tinygrad's 0.0 + -0.0 is +0.0, the fold's first row -0.0: no -0.0 in the table
  return g


def sparsecore_slots(g: dict) -> tuple:
  """The buffer slots a lookup's launch guard reads."""
  return (g["idx"], g.get("table", g["idx"]))


def sparsecore_refusal(g: dict, host: dict) -> str | None:
  """Why the launch guard fails (None: it holds): an index outside [0, rows), or for fp32 bag sums
  an element of the table that is -0.0 (host: slot -> the buffer's values). A single-core device
  and both chip cores have the SparseCore (on the chip: node 3, doc/chip.md)."""
  x = host[g["idx"]][:g["count"]]
  if not ((x >= 0) & (x < g["rows"])).all():
    return "an index outside the table"
  if "table" in g and ((host[g["table"]] == 0) & np.signbit(host[g["table"]])).any():
    return "-0.0 in the fp32 table"
  return None
