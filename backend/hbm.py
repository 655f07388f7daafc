"""The device's HBM residency: every tinygrad buffer gets a tile range of the core's HBM.

The allocator is a first-fit list of free tile ranges over [0, HBM_TILES). A buffer's range is
tile aligned and has a guard on each side (up to half the VMEM, at most the buffer's own size): a
chunked kernel's last DMAs may run past its end (backend/stream.py), and those tiles must be the
buffer's own. The host keeps the mirror of every buffer (each launch is a fresh simulation), so a
buffer whose range does not suit a launch (a view at an unaligned offset, a guard too small, a
capacity changed since) is given a temporary range for that launch only. A buffer larger than the
free HBM raises MemoryError before anything runs, naming its dtype and sizes."""
from __future__ import annotations

import itertools
import sys

from tinygrad.dtype import dtypes


class HbmBuffer:
  """A buffer: its host mirror and its HBM tiles (None for a view) in the space `space` of generation `gen`."""
  __slots__ = ("mv", "tile", "tiles", "guard", "gen", "start", "span", "space")

  def __init__(self, mv: memoryview, tile=None, tiles=0, guard=0, gen=-1, start=0, span=0, space=None):
    self.mv, self.tile, self.tiles, self.guard, self.gen, self.start, self.span = mv, tile, tiles, guard, gen, start, span
    self.space = space


class Ranges:
  """Free tile ranges, first fit."""
  def __init__(self, size: int):
    self.free = [(0, size)]

  def take(self, n: int) -> int | None:
    for i, (s, m) in enumerate(self.free):
      if m >= n:
        self.free[i:i + 1] = [(s + n, m - n)] if m > n else []
        return s
    return None

  def give(self, s: int, n: int):
    self.free.append((s, n))
    self.free.sort()
    merged = []
    for a, m in self.free:
      if merged and merged[-1][0] + merged[-1][1] == a:
        merged[-1] = (merged[-1][0], merged[-1][1] + m)
      else:
        merged.append((a, m))
    self.free = merged

  def stats(self) -> tuple[int, int]:
    return sum(m for _, m in self.free), max((m for _, m in self.free), default=0)


_generations = itertools.count(1)


class HbmSpace:
  """One HBM's free ranges: a core's own, or the chip's, which its cores' devices share (so the
  buffers of both cores of one chip launch never overlap). A capacity change starts a new
  generation (older ranges are void). While `held` (a chip launch is pending: backend/chiplaunch.py)
  freed ranges wait in `deferred`, so no later buffer of that launch reuses them."""
  def __init__(self):
    self.ranges, self.cap, self.gen, self.held, self.deferred = None, None, 0, 0, []

  def current(self, cap: int) -> Ranges:
    if self.cap != cap:
      self.ranges, self.cap, self.gen, self.deferred = Ranges(cap), cap, next(_generations), []
    return self.ranges

  def give(self, s: int, n: int, gen: int):
    if gen != self.gen:
      return
    if self.held:
      self.deferred.append((s, n))
    else:
      self.ranges.give(s, n)

  def release(self):
    """The pending launch ran: give back what was freed meanwhile."""
    self.held = max(0, self.held - 1)
    if not self.held:
      for s, n in self.deferred:
        self.ranges.give(s, n)
      self.deferred = []


def _caller_buffer():
  """The tinygrad Buffer being allocated (Buffer.allocate calls alloc(nbytes, options)): its dtype
  decides the lanes (one element per lane, whatever its width)."""
  from tinygrad.device import Buffer
  f = sys._getframe(1)
  while f is not None:
    if isinstance(b := f.f_locals.get("self"), Buffer):
      return b
    f = f.f_back
  return None


class HbmAllocator:
  """`space_fn()` names the HbmSpace buffers go to now (a device can move between the single-core
  co-sim and the chip: TINYTPU_CHIP); a buffer of another space or generation gets a temporary
  range per launch."""
  def __init__(self, config_fn, space_fn):
    self._config, self._space_fn = config_fn, space_fn

  def _space(self) -> tuple[HbmSpace, Ranges]:
    sp = self._space_fn()
    return sp, sp.current(self._config().HBM_TILES)

  def alloc(self, size: int, options=None):
    return self._alloc(size, options)  # the sizes in our MemoryError, not tinygrad's generic wrapper

  def _alloc(self, size, options):
    cfg, (space, sp) = self._config(), self._space()
    buf = _caller_buffer()
    dt = buf.dtype if buf is not None else dtypes.uint8
    elems = size // max(1, dt.itemsize)
    tiles = max(1, -(-elems // cfg.lanes))
    guard = min(tiles, cfg.VMEM_TILES // 2)
    for g in (guard, 0):
      if (s := sp.take(tiles + 2 * g)) is not None:
        return HbmBuffer(memoryview(bytearray(size)), s + g, tiles, g, space.gen, s, tiles + 2 * g, space)
    free, big = sp.stats()
    raise MemoryError(f"TINYTPU: a buffer of {elems} {dt} elements ({size} bytes) needs {tiles} HBM tiles; the HBM has {cfg.HBM_TILES} "
                      f"tiles (HBM_TILES), {free} free, the largest free range {big}")

  def _free(self, opaque, options):
    if opaque.tile is not None and opaque.space is not None:
      opaque.space.give(opaque.start, opaque.span, opaque.gen)
      opaque.tile = None

  def _copyin(self, dest, src: memoryview):
    dest.mv[:] = src

  def _copyout(self, dest: memoryview, src):
    dest[:] = src.mv

  def _as_buffer(self, src):
    return src.mv

  def _offset(self, buf, size: int, offset: int):
    return HbmBuffer(buf.mv[offset:offset + size])

  def resident(self, buf: HbmBuffer) -> bool:
    """The buffer's own range is valid in the current space."""
    space = self._space_fn()
    return buf.tile is not None and buf.space is space and buf.gen == space.gen

  def temporary(self, name: str, what: str, need: int, temps: list) -> int:
    """A launch-only range of `need` tiles (recorded in `temps` for unplace)."""
    space, sp = self._space()
    if (s := sp.take(need)) is None:
      free, big = sp.stats()
      self.unplace(temps)
      raise MemoryError(f"TINYTPU kernel {name}: {what} needs {need} HBM tiles; the HBM has {space.cap} tiles (HBM_TILES), "
                        f"{free} free, the largest free range {big}")
    temps.append((s, need))
    return s

  def place(self, name: str, infos, bufs, L: int, temps: list) -> dict[int, int]:
    """slot -> HBM tile of every buffer of a launch (its own range, or a temporary one recorded in `temps`)."""
    out, seen = {}, set()
    for info, buf in zip(infos, bufs):
      need = -(-info.size // L)
      lo, hi = info.over
      if self.resident(buf) and need <= buf.tiles and lo <= buf.guard and hi <= buf.guard + buf.tiles - need and id(buf) not in seen:
        out[info.slot] = buf.tile
      else:
        out[info.slot] = lo + self.temporary(name, f"buffer {info.slot} ({info.dtype}, {info.size} elements)", need + lo + hi, temps)
      seen.add(id(buf))
    return out

  def unplace(self, temps: list):
    space, _ = self._space()
    for s, n in temps:
      space.give(s, n, space.gen)
    temps.clear()
