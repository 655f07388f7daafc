"""Chip launches (doc/chip.md): the kernels and copies of the chip's two cores, run together.

A kernel of a chip device (`TINYTPU:1`, and `TINYTPU` with TINYTPU_CHIP=1) does not run at its
call: it becomes the pending item of its core. The pending items run as one chip launch (one chip
bundle: each core's program, the HBM regions every item reads, the regions every item writes) when

- every core has an item (a sharded kernel: tinygrad calls the two devices' programs back to back);
- an item comes for a core that already has one, or one that conflicts with a pending item (it
  reads or writes a buffer the other writes, or writes one the other reads: `conflicts`); an item
  takes its inputs from the host mirrors when it joins, after the launches it depends on;
- the host touches a buffer (copyin, copyout, as_buffer), tinygrad synchronises a device, a kernel
  is run with `wait` (its time is wanted), a single-core kernel runs, or the process exits.

Items of one launch never share a written tile, so the order in which the two cores run does not
change a result (golden/chip.py's interleaving-independent semantics holds without SIG.*). After the
run each item's `finish` copies its written regions into the host mirrors, then its temporary HBM
ranges are given back. An error (a trap, a timeout, RTL and golden model differing) is raised by
the flush, naming the kernel and its core, whichever call flushed.

A copy between two chip devices (tinygrad's `_transfer`) is an item too: the destination core's DMA
engine reads the source's tiles from HBM over the NoC into VMEM and writes them to the destination's
tiles (`copy_program`), in halves of VMEM so the next read overlaps the last write. Its payload is
the buffer's bytes packed four to a lane (a copy is byte-exact whatever the dtype). Each launch is
a fresh simulation, so the host mirror preloads the source, as it does for a kernel's inputs."""
from __future__ import annotations

import atexit
import dataclasses
import os
import sys
from typing import Callable

import numpy as np

from tinytpu import isa
from tinytpu.backend import hbm
from tinytpu.bundle import Bundle, Result
from tinytpu.config import CHIP_CORES, Config

SPACE = hbm.HbmSpace()  # the chip's HBM: both cores' devices allocate their buffers here
IMM_MAX = isa.offset_max("DMA.IN")  # DMA offsets: signed immediates of the ISA table's field
T_MAX, ROWS_MAX = isa.operand_max("DMA.IN", "T"), isa.operand_max("DMA.CFG", "rows")


def host_range(mv: memoryview) -> tuple[int, int]:
  """The host memory a buffer's mirror occupies (views of one buffer share it)."""
  lo = np.frombuffer(mv, dtype=np.uint8).ctypes.data if mv.nbytes else 0
  return lo, lo + mv.nbytes


@dataclasses.dataclass
class Item:
  core: int
  name: str
  bundle: Bundle                   # the core's program; ("hbm", ...) dumps: the HBM regions it writes
  reads: list                      # the HBM regions it reads: (first tile, tiles)
  load: Callable[[], list]         # their contents from the host mirrors (Bundle.hbm's form), taken when it joins
  host_reads: list                 # the host memory of the buffers it reads and writes: its data dependences
  host_writes: list
  finish: Callable[[Result], None]
  release: Callable[[], None]      # gives back the item's temporary HBM ranges
  result: Result | None = None

  def hbm_reads(self) -> list[tuple[int, int]]:
    return [(a, a + n) for a, n in self.reads]

  def hbm_writes(self) -> list[tuple[int, int]]:
    return [(a, a + n) for kind, a, n in self.bundle.dumps if kind == "hbm"]


def _overlap(xs, ys) -> bool:
  return any(a < d and c < b for a, b in xs for c, d in ys)


def conflicts(new: Item, old: Item) -> bool:
  """The two items cannot run in one launch: one writes memory the other reads or writes (host
  mirrors: views share theirs; HBM tiles: both cores share the HBM), or both read overlapping but
  different HBM regions (one preload per region)."""
  if _overlap(new.host_writes, old.host_reads + old.host_writes) or _overlap(old.host_writes, new.host_reads):
    return True
  nr, orr = new.hbm_reads(), old.hbm_reads()
  if _overlap(new.hbm_writes(), orr + old.hbm_writes()) or _overlap(old.hbm_writes(), nr):
    return True
  same = set(nr) & set(orr)
  return _overlap([r for r in nr if r not in same], orr) or _overlap([r for r in orr if r not in same], nr)


PENDING: dict[int, Item] = {}
LAUNCHES = {"launches": 0, "paired": 0, "copies": 0}  # the multi-device tests check the pairing


def submit(item: Item) -> None:
  try:
    if item.core in PENDING or any(conflicts(item, p) for p in PENDING.values()):
      flush()
    item.bundle.hbm = item.load()  # after any launch it depends on: the mirrors are current
  except BaseException:  # the launch before it failed: this item never runs, its ranges go back
    item.release()
    raise
  if not PENDING:
    SPACE.held += 1  # ranges freed from now on wait for this launch
  PENDING[item.core] = item
  if len(PENDING) == CHIP_CORES:
    flush()


def settle(core: int | None, host_reads: list, host_writes: list) -> None:
  """Before a kernel looks at its inputs: run the pending launch if the kernel depends on it (same
  core, or a buffer conflict), or always for a single-core kernel (core None), which runs at once."""
  if core is None or core in PENDING or any(_overlap(host_writes, p.host_reads + p.host_writes) or _overlap(p.host_writes, host_reads)
                                            for p in PENDING.values()):
    flush()


def flush() -> None:
  """Run the pending items as one chip launch and hand each its result."""
  if not PENDING:
    return
  from tinytpu.backend import runner
  items = [PENDING.pop(k) for k in sorted(PENDING)]
  try:
    results = runner.run_chip({it.core: (it.bundle, it.name) for it in items})
    LAUNCHES["launches"] += 1
    LAUNCHES["paired"] += len(items) > 1
    for it in items:
      it.result = results[it.core]
      it.finish(it.result)
  finally:
    for it in items:
      it.release()
    SPACE.release()


@atexit.register
def _flush_at_exit() -> None:
  """A launch still pending when the process ends runs now; if it fails, the process exits with
  status 1 (an exception raised here would not change it), so a script is not judged a success."""
  try:
    flush()
  except Exception as e:  # noqa: BLE001  the process is ending: say what did not run
    print(f"TINYTPU: the pending chip launch failed at exit: {e}", file=sys.stderr)
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(1)


# ---- copies between the chip's cores

def packed_tiles(nbytes: int, cfg: Config) -> int:
  return max(1, -(-nbytes // (4 * cfg.lanes)))


def pack(mv: memoryview, nbytes: int, cfg: Config) -> np.ndarray:
  """Bytes as (tiles, N, N) uint32 lanes, little-endian, zero padded."""
  raw = np.zeros(packed_tiles(nbytes, cfg) * cfg.lanes * 4, dtype=np.uint8)
  raw[:nbytes] = np.frombuffer(mv, dtype=np.uint8, count=nbytes)
  return raw.view("<u4").reshape(-1, cfg.N, cfg.N)


def unpack(tiles: np.ndarray, nbytes: int) -> np.ndarray:
  return np.ascontiguousarray(tiles, dtype="<u4").view(np.uint8).reshape(-1)[:nbytes]


def copy_program(src: int, dst: int, tiles: int, cfg: Config) -> str:
  """TASM copying HBM tiles [src, src + tiles) to [dst, dst + tiles) through VMEM: 2-D DMAs of
  `rows` x T tiles into alternating halves of VMEM (the SXU's DMA interlocks order each DMA.OUT
  after its DMA.IN, and the next DMA.IN into a half after the DMA.OUT that reads it)."""
  half = min(cfg.VMEM_TILES // 2, 1 << 14)
  t = min(T_MAX, tiles, half)
  rows = max(1, min(ROWS_MAX, half // t))
  out = [f"LI s1, {src}", f"LI s2, {dst}", f"LI s3, {t}"]
  off, cmd, left, shape = 0, 0, tiles, None
  while left:
    r = min(rows, left // t) if left >= t else 1
    tt = t if left >= t else left
    if (r, tt) != shape:
      out.append(f"DMA.CFG s3, {r}, {tt}" if tt == t else f"LI s3, {tt}\nDMA.CFG s3, {r}, {tt}")
      shape = (r, tt)
    if off + r * tt > IMM_MAX:  # rebase: the offsets are 16-bit
      out += [f"SADDI s1, s1, {off}", f"SADDI s2, s2, {off}"]
      off = 0
    v = (cmd % 2) * half
    out += [f"DMA.IN [s0 + {v}], [s1 + {off}], {tt}", f"DMA.OUT [s2 + {off}], [s0 + {v}], {tt}"]
    off, cmd, left = off + r * tt, cmd + 1, left - r * tt
  out.append("HALT")
  return "\n".join(out) + "\n"
