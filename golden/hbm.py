"""The golden model's HBM: a sparse tile store (doc/hbm.md).

HBM holds up to HBM_TILES tiles (2^20 by default: 64 MB at N = 4, 1 GB at N = 16), nearly all of
which a program never touches, so the store keeps pages of PAGE tiles allocated on first write; a
tile never written reads zero. The model is cycle-free: DMA.IN/DMA.OUT copy at issue (the RTL's
interlocks make every program see exactly that)."""
from __future__ import annotations

import numpy as np

PAGE = 1024  # tiles per page


class HBM:
  def __init__(self, tiles: int, N: int):
    self.tiles, self.N = tiles, N
    self.pages: dict[int, np.ndarray] = {}

  def _page(self, p: int, create: bool) -> np.ndarray | None:
    pg = self.pages.get(p)
    if pg is None and create:
      pg = self.pages[p] = np.zeros((PAGE, self.N, self.N), np.uint32)
    return pg

  def read(self, addr: int, count: int) -> np.ndarray:
    """Tiles addr..addr+count-1 as a (count, N, N) copy (the caller checked the range)."""
    out = np.zeros((count, self.N, self.N), np.uint32)
    t = addr
    while t < addr + count:
      p, o = divmod(t, PAGE)
      n = min(PAGE - o, addr + count - t)
      if (pg := self._page(p, False)) is not None:
        out[t - addr:t - addr + n] = pg[o:o + n]
      t += n
    return out

  def write(self, addr: int, tiles: np.ndarray) -> None:
    t, count = addr, len(tiles)
    while t < addr + count:
      p, o = divmod(t, PAGE)
      n = min(PAGE - o, addr + count - t)
      self._page(p, True)[o:o + n] = tiles[t - addr:t - addr + n]
      t += n
