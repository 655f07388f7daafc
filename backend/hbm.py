"""The device's HBM residency: every tinygrad buffer gets a tile range of the core's HBM.

The allocator is a first-fit list of free tile ranges over [0, HBM_TILES). A buffer's range is
tile aligned and has a guard on each side (up to half the VMEM, at most the buffer's own size): a
chunked kernel's last DMAs may run past its end (backend/stream.py), and those tiles must be the
buffer's own. The host keeps the mirror of every buffer (each launch is a fresh simulation), so a
buffer whose range does not suit a launch (a view at an unaligned offset, a guard too small, a
capacity changed since) is given a temporary range for that launch only. A buffer larger than the
free HBM raises MemoryError before anything runs, naming its dtype and sizes."""
from __future__ import annotations

import sys

from tinygrad.dtype import dtypes


class HbmBuffer:
  """A buffer: its host mirror and its HBM tiles (None for a view)."""
  __slots__ = ("mv", "tile", "tiles", "guard", "gen", "start", "span")

  def __init__(self, mv: memoryview, tile=None, tiles=0, guard=0, gen=-1, start=0, span=0):
    self.mv, self.tile, self.tiles, self.guard, self.gen, self.start, self.span = mv, tile, tiles, guard, gen, start, span


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
  def __init__(self, config_fn):
    self._config, self._ranges, self._cap, self._gen = config_fn, None, None, 0

  def _space(self) -> Ranges:
    cfg = self._config()
    if self._cap != cfg.HBM_TILES:  # a new capacity (TINYTPU_BACKEND_CONFIG changed): older ranges are void
      self._ranges, self._cap, self._gen = Ranges(cfg.HBM_TILES), cfg.HBM_TILES, self._gen + 1
    return self._ranges

  def alloc(self, size: int, options=None):
    return self._alloc(size, options)  # the sizes in our MemoryError, not tinygrad's generic wrapper

  def _alloc(self, size, options):
    cfg, sp = self._config(), self._space()
    buf = _caller_buffer()
    dt = buf.dtype if buf is not None else dtypes.uint8
    elems = size // max(1, dt.itemsize)
    tiles = max(1, -(-elems // cfg.lanes))
    guard = min(tiles, cfg.VMEM_TILES // 2)
    for g in (guard, 0):
      if (s := sp.take(tiles + 2 * g)) is not None:
        return HbmBuffer(memoryview(bytearray(size)), s + g, tiles, g, self._gen, s, tiles + 2 * g)
    free, big = sp.stats()
    raise MemoryError(f"TINYTPU: a buffer of {elems} {dt} elements ({size} bytes) needs {tiles} HBM tiles; the HBM has {cfg.HBM_TILES} "
                      f"tiles (HBM_TILES), {free} free, the largest free range {big}")

  def _free(self, opaque, options):
    if opaque.tile is not None and opaque.gen == self._gen:
      self._ranges.give(opaque.start, opaque.span)
      opaque.tile = None

  def _copyin(self, dest, src: memoryview):
    dest.mv[:] = src

  def _copyout(self, dest: memoryview, src):
    dest[:] = src.mv

  def _as_buffer(self, src):
    return src.mv

  def _offset(self, buf, size: int, offset: int):
    return HbmBuffer(buf.mv[offset:offset + size])

  def place(self, name: str, infos, bufs, L: int) -> dict[int, int]:
    """slot -> HBM tile of every buffer of a launch (its own range, or a temporary one)."""
    sp, out, seen = self._space(), {}, set()
    self._temps = []
    for info, buf in zip(infos, bufs):
      need = -(-info.size // L)
      lo, hi = info.over
      if buf.tile is not None and buf.gen == self._gen and need <= buf.tiles and lo <= buf.guard and \
          hi <= buf.guard + buf.tiles - need and id(buf) not in seen:
        out[info.slot] = buf.tile
      else:
        if (s := sp.take(need + lo + hi)) is None:
          free, big = sp.stats()
          self.unplace(out)
          raise MemoryError(f"TINYTPU kernel {name}: buffer {info.slot} ({info.dtype}, {info.size} elements) needs {need + lo + hi} "
                            f"HBM tiles; the HBM has {self._cap} tiles (HBM_TILES), {free} free, the largest free range {big}")
        self._temps.append((s, need + lo + hi))
        out[info.slot] = s + lo
      seen.add(id(buf))
    return out

  def unplace(self, place):
    for s, n in getattr(self, "_temps", []):
      self._ranges.give(s, n)
    self._temps = []
