"""The records of a streamed MXU GEMM's plan (mxu_plan.py chooses them, mxu_stream.py emits them):
how each operand reaches the staging copies (`Operand`), the whole plan (`MxuStreamPlan`), and the
geometry of the operands' windows: affine offsets, rows in classes, the tiles a window reads past
its buffer, lane-part patterns (doc/backend.md, "MXU from HBM")."""
from __future__ import annotations

import dataclasses
import math

import numpy as np

from tinytpu.backend.records import Dot


@dataclasses.dataclass
class Operand:
  """How one operand reaches the staging copies."""
  slot: int
  mode: str            # "resident" | "rows" | "kb" | "band" (separable: per block a window of the buffer)
  win: int             # VMEM tiles of one raw window copy
  table: np.ndarray    # [staged tiles, L] element offsets from the gather base
  base0: int           # buffer element of the gather base at chunk 0, kb 0 (resident/kb), A's row 0 (rows)
  step_kb: int         # elements the gather base (resident) or the window (kb, rows) moves per K block
  step_chunk: int      # elements it moves per chunk (A: per row group, of which a column chunk has several)
  hstride: int = 0     # rows: HBM tiles between rows
  rows: int = 0        # rows: rows of the 2-D DMA
  at: int = 0          # VMEM tile of copy 0 (copy 1 follows)
  ktable: np.ndarray | None = None  # separable (resident only): [Kt + 1, L] k-part offsets per K block
  kslot: int = 0       # its tile within a block's row of the plan's block tables
  gated: dict = dataclasses.field(default_factory=dict)  # staged tile -> its index among the gated ones
  gslot: int = 0       # the first of its gate-id tiles within a block's row
  pids: np.ndarray | None = None    # patterns: per staged tile its table row (table = the distinct patterns)
  shifts: np.ndarray | None = None  # ... and the element offset its gather adds (the VGATHER immediate)
  tat: int = 0         # VMEM tile of its first table row
  starts: np.ndarray | None = None  # band: [Kt + 1] block kb's first buffer tile (row group 0); ktable is relative to it
  sslot: int = 0       # band: the block-table tile whose lane 0 holds it
  over: int = 0        # tiles past the buffer's last its DMAs may read (padding rows, K's last block): the launch places them
  rtiles: int = 1      # rows: tiles per row in a copy (2 or 3 for rows in classes)
  shifted: bool = False  # kb: the window's start is not always a tile's first element (the gather base adds h mod L)
  classes: int = 0     # rows not whole tiles apart: P classes of rows (each a whole number of tiles apart), two tiles per row
  ctiles: tuple = ()   # ... class c's first tile from row 0's (floor(c * stride / L))


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
  blk: np.ndarray | None = None  # [Kt + 1, nk, L] per K block: the separable operands' k parts, A's k mask
  blk_at: int = 0      # VMEM tile of block 0's row
  mask: bool = False   # K not a multiple of N: A's last block masked to zero past K
  mask_slot: int = 0   # the mask's tile within a block's row
  gates: np.ndarray | None = None  # [U, L] the distinct gate masks (0 / -1) of padded windows' tiles
  gate_at: int = 0     # VMEM tile of the first
  id_cols: tuple = ()  # columns of blk holding gate ids (relative to gate_at until emitted)
  elems: tuple = ()    # (A's, B's) buffer elements the GEMM reads (the int8 range check)
  transposed: bool = False  # the Dot's orientation the plan is for (d.transposed)
  ng: int = 1          # row groups of mc tiles per chunk, each its own K loop into its PSUM tiles (column chunks)
  nt: int = 0          # weight column tiles per chunk (all Nt for row chunks)
  cols: bool = False   # column chunks: a chunk is every row times nt * N columns (B moves per chunk)
  unaligned: bool = False  # an operand streams although its rows (or K) are not whole tiles (mxu_plan._mxu_plan)


def affine2(e: np.ndarray):
  """(c0, c1, c2) with e[i, j] = c0 + c1 * i + c2 * j for every element, else None."""
  c0 = int(e[0, 0])
  c1 = int(e[1, 0] - e[0, 0]) if e.shape[0] > 1 else 0
  c2 = int(e[0, 1] - e[0, 0]) if e.shape[1] > 1 else 0
  ii, jj = np.indices(e.shape)
  return (c0, c1, c2) if (e == c0 + c1 * ii + c2 * jj).all() else None


def row_classes(stride: int, base: int, N: int, L: int) -> tuple[int, tuple, int]:
  """Rows `stride` elements apart whose block of N values is read per K block (a "rows" operand):
  (P, each class's first tile from row 0's, T tiles per row). A copy holds whole classes (rows
  rounded up to P: the padding rows are read, their results dropped), and when the rows move per
  chunk, by whole classes (every chunk has the same ones). Row m = c + j * P of class c starts
  (c * stride) mod L elements into a window of T tiles at row 0's tile + floor(c * stride / L) +
  j * P * stride / L, plus the block's place h mod L (h: row 0's element; a chunk moves it by
  whole tiles): the N values lie inside one tile when the stride and the base are whole tiles,
  else inside two when base mod N <= 1 (h mod L <= L - N + base mod N, the class's part <= L - 1),
  else three. In the copy the classes are
  contiguous (row m at tiles T * class_slot(m)): each class's DMA writes its own box, so the
  SXU's interlock (by boxes) lets the P copies overlap."""
  P = L // math.gcd(stride % L, L)  # 1 when whole tiles apart (a base that is not: a window per row)
  T = 1 if stride % L == 0 and base % L == 0 else 2 if base % N <= 1 else 3  # 1: aligned rows (padding only)
  return P, tuple(c * stride // L for c in range(P)), T


def rows_over(base: int, stride: int, rows: int, last_k: int, T: int, tiles: int, L: int) -> int:
  """Tiles past the buffer's last that a "rows" operand's windows may read: the last row's (a
  chunk's padding rows included) window of T tiles for the last K block (its lanes past K too)."""
  return max(0, (base + (rows - 1) * stride + last_k) // L + T - tiles)


def window_over(base0: int, step_kb: int, Kt: int, step_chunk: int, moves: int, win: int, tiles: int, L: int) -> int:
  """Tiles past the buffer's last that the kb window of the last block and chunk reads."""
  return max(0, (base0 + (Kt - 1) * step_kb + max(0, moves) * step_chunk) // L + win - tiles)


def class_slot(m, P: int, rows: int):
  """Row m's place in a copy of rows in P classes (class-major)."""
  return (m % P) * (rows // P) + m // P


def window_fits(base0: int, step_kb: int, Kt: int, step_chunk: int, moves: int, win: int, tiles: int, L: int) -> bool:
  """A kb window (tile aligned, win tiles) of the last block and the last row group or chunk ends
  inside the buffer's tiles: its DMA never reads past the buffer (the next one, or past HBM)."""
  return window_over(base0, step_kb, Kt, step_chunk, moves, win, tiles, L) == 0


PATTERNS_MAX = 4  # distinct lane-part patterns a separable operand keeps in registers per block


def patterns(o: Operand) -> Operand:
  """A separable operand's lane-part tables as a few patterns plus a per-tile offset: a
  convolution's positions repeat the same few relative layouts (4 positions in one output row, or
  split across two), so each staged tile is VGATHER of (pattern + k part) at immediate `shift`
  (no table load, no add per tile), and VMEM holds the patterns, not a table per tile."""
  shifts = o.table.min(axis=1)
  rel = o.table - shifts[:, None]
  pats, pids = np.unique(rel, axis=0, return_inverse=True)
  if len(pats) > PATTERNS_MAX:
    return o
  return dataclasses.replace(o, table=pats, pids=pids.ravel(), shifts=shifts)
