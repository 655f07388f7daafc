"""VMEM, PSUM and VRF tests (pyuvm), run by tests/rtl/test_mem.py."""
from __future__ import annotations

import numpy as np
import pyuvm
from cocotb.triggers import FallingEdge

from tinytpu.tb import kit
from tinytpu.tb.kit import ItemsSeq

from .env import Cyc, MemEnv, channel, spec

M32 = 0xFFFFFFFF


class MemTest(kit.BaseTest):
  env_cls = MemEnv
  timeout_us = 5000

  async def reset(self):
    """Reset (also in the middle of a test); the first cycle after it is already a busy cycle on
    every port (driven here, until the next item): there is no clear sweep to wait for."""
    ports = channel(self.env.unit).ports()
    for p in ports.values(): p.put(self.dut, 0)
    self.dut.rst_ni.value = 0
    for _ in range(self.reset_cycles): await FallingEdge(self.dut.clk_i)
    self.dut.rst_ni.value = 1
    first = self.cycle(1.0)
    for f, p in ports.items(): p.put(self.dut, getattr(first, f))

  def addr(self, hot):
    """Mostly a few hot tiles (collisions), sometimes any tile, a boundary or out of range."""
    t, r = self.env.tiles, self.rng.random()
    if self.env.unit == "vrf": return self.rng.choice(hot) if r < 0.5 else self.rng.randrange(16)
    if r < 0.45: return self.rng.choice(hot)
    if r < 0.8: return self.rng.randrange(t)
    if r < 0.9: return self.rng.choice([0, t - 1])
    return self.rng.choice([t, t + 1, 2 * t, 0x7FFFFFFF, 0x80000000, M32])

  def eaddrs(self, hot, bad: bool) -> np.ndarray:
    """N*N element addresses (VMEM element mode): mostly in the hot tiles (duplicates likely),
    sometimes anywhere; with bad, one lane out of range."""
    L, t = self.env.n ** 2, self.env.tiles
    e = [self.rng.choice(hot) * L + self.rng.randrange(L) if self.rng.random() < 0.7 else self.rng.randrange(t * L) for _ in range(L)]
    if bad: e[self.rng.randrange(L)] = self.rng.choice([t * L, t * L + 1, 0x80000000, M32])
    return np.array(e, np.uint32).reshape(self.env.n, self.env.n)

  def elem(self, c, hot, p_elem=0.3):
    """Element-mode fields of a VMEM cycle (random even when the mode is off: they must be ignored)."""
    L = self.env.n ** 2
    c.rd_elem, c.wr_elem = int(self.rng.random() < p_elem), int(self.rng.random() < p_elem)
    c.rd_eaddr, c.wr_eaddr = self.eaddrs(hot, self.rng.random() < 0.1), self.eaddrs(hot, self.rng.random() < 0.1)
    # sparse masks too, so a scatter often leaves most of a fresh tile unwritten
    c.wr_mask = self.rng.choice([self.rng.getrandbits(L), 1 << self.rng.randrange(L), self.rng.getrandbits(L) & self.rng.getrandbits(L) & self.rng.getrandbits(L)])

  def cycle(self, p_req=0.6, hot=None) -> Cyc:
    n, s, c = self.env.n, spec(self.env.unit, self.env.n), Cyc("cyc")
    hot = hot or [0, 1, 2]
    if s.get("elem"): self.elem(c, [h for h in hot if h < self.env.tiles] or [0])
    for name, *_ in s.get("reads", []) + s.get("writes", []) + s.get("rows", []):
      setattr(c, f"{name}_req", int(self.rng.random() < p_req)); setattr(c, f"{name}_addr", self.addr(hot))
    for name, *_ in s.get("writes", []): setattr(c, f"{name}_data", kit.random_tile(self.rng, n, "int32")[0])
    for name, *_ in s.get("rows", []):
      # fp (MMUL.BF16's fp32 accumulate) with fp32 operand classes (NaN, inf, subnormals, +-0)
      fp = self.rng.randint(0, 1)
      setattr(c, f"{name}_data", kit.random_tile(self.rng, n, "fp32" if fp else "int32")[0][0])
      setattr(c, f"{name}_acc", self.rng.randint(0, 1)); setattr(c, f"{name}_row", self.rng.randrange(n)); setattr(c, f"{name}_fp", fp)
    for name, *_ in s.get("comb_reads", []): setattr(c, f"{name}_addr", self.addr(hot))
    if s.get("rw"): self.dma(c, hot, p_req)
    return c

  def free(self, a, forb) -> int:
    """a, or if a forbidden tile another tile in range (-1: none free)."""
    if a not in forb: return a
    ok = [x for x in range(self.env.tiles) if x not in forb]
    return self.rng.choice(ok) if ok else -1

  def dma(self, c, hot, p_req):
    """VMEM's DMA ports: the DMA port reads or writes (random we, data and address, also with the
    request low: then they must be ignored), the DMA read port dmr reads. Kept off the other ports'
    tiles as vmem.sv asserts (the SXU's interlocks): dmr never on a tile the core writes (tile
    write) or the DMA port writes; the DMA port never on a tile the core writes (tile, or any
    masked scatter lane's), and when it writes never on one the core (tile, or any in-range gather
    lane's), the MXU or dmr reads."""
    t, L = self.env.tiles, self.env.n ** 2
    lw, elems = L.bit_length() - 1, t * L
    c.dma_req, c.dma_we = int(self.rng.random() < p_req), self.rng.randint(0, 1)
    c.dma_addr = self.addr(hot) if c.dma_req or self.rng.random() < 0.5 else self.rng.getrandbits(32)
    c.dma_wdata = kit.random_tile(self.rng, self.env.n, "int32")[0]
    wr, rd = set(), set()
    if c.wr_req: wr = {int(e) >> lw for l, e in enumerate(np.ravel(c.wr_eaddr)) if (c.wr_mask >> l) & 1} if c.wr_elem else {c.wr_addr}
    if c.rd_req: rd = {int(e) >> lw for e in np.ravel(c.rd_eaddr) if int(e) < elems} if c.rd_elem else {c.rd_addr}
    if c.mxu_req: rd.add(c.mxu_addr)
    if c.dmr_req and c.dmr_addr < t and c.wr_req and not c.wr_elem:
      c.dmr_addr = self.free(c.dmr_addr, {c.wr_addr})
    if c.dmr_req and c.dmr_addr < t: rd.add(c.dmr_addr)
    if c.dma_req and c.dma_addr < t:
      c.dma_addr = self.free(c.dma_addr, wr | rd if c.dma_we else wr)
      if c.dma_addr < 0: c.dma_req, c.dma_addr = 0, 0

  def idle(self) -> Cyc:
    c = self.cycle(0.0)
    for name, *_ in spec(self.env.unit, self.env.n).get("writes", []): setattr(c, f"{name}_req", 0)
    if hasattr(c, "rd_elem"): c.rd_elem = c.wr_elem = 0
    if hasattr(c, "dma_req"): c.dma_req = 0
    return c

  def read_all(self) -> list[Cyc]:
    """Every tile (register) on every read port, one per cycle, then an idle cycle."""
    s, items = spec(self.env.unit, self.env.n), []
    for a in range(self.env.tiles if self.env.unit != "vrf" else 16):
      c = self.idle()
      for name, *_ in s.get("reads", []): setattr(c, f"{name}_req", 1); setattr(c, f"{name}_addr", a)
      for name, *_ in s.get("comb_reads", []): setattr(c, f"{name}_addr", a)
      for name, *_ in s.get("rw", []): setattr(c, f"{name}_req", 1); setattr(c, f"{name}_we", 0); setattr(c, f"{name}_addr", a)
      items.append(c)
    return items + [self.idle()]

  async def run(self, items):
    await ItemsSeq("seq", items).start(self.env.agent.seqr)


@pyuvm.test()
class MemResetReadsZero(MemTest):
  """No clear sweep: every tile is filled with random data, then after a reset every tile reads
  zero (no err) from the first cycle; then one write per tile (tile writes, and for VMEM sparse
  scatters into fresh tiles, whose other lanes must read zero; for PSUM MXU row writes with acc
  0/1 into fresh tiles, whose other rows must read zero, the stale data notwithstanding), all read
  back; then a reset, after which everything reads zero again."""
  async def body(self):
    s, L, tiles = spec(self.env.unit, self.env.n), self.env.n ** 2, range(self.env.tiles if self.env.unit != "vrf" else 16)
    fill = []
    for a in tiles:
      c = self.idle()
      for name, *_ in s["writes"]: setattr(c, f"{name}_req", 1); setattr(c, f"{name}_addr", a)
      fill.append(c)
    await self.run(fill + [self.idle()])
    await self.reset()
    await self.run(self.read_all())
    items = []
    for a in tiles:
      c, k = self.idle(), a % 3
      if self.env.unit == "vrf": setattr(c, ["w0_req", "w1_req"][a % 2], 1); setattr(c, ["w0_addr", "w1_addr"][a % 2], a)
      elif k == 0 or (k == 2 and self.env.unit == "psum"): c.wr_req, c.wr_addr = 1, a
      elif self.env.unit == "vmem":  # a few lanes of fresh tile a, two of them on one element
        lanes = self.rng.sample(range(L), min(3, L))
        c.wr_req, c.wr_elem, c.wr_mask = 1, 1, sum(1 << l for l in lanes)
        e = c.wr_eaddr.ravel().copy()
        for l in lanes: e[l] = a * L + self.rng.randrange(L)
        e[lanes[-1]] = e[lanes[0]]
        c.wr_eaddr = e.reshape(self.env.n, self.env.n)
      else: c.mxu_req, c.mxu_addr, c.mxu_acc = 1, a, self.rng.randint(0, 1)
      items.append(c)
    await self.run(items + self.read_all())
    await self.reset()
    await self.run(self.read_all())


@pyuvm.test()
class MemRandom(MemTest):
  """Random traffic on every port at once (VMEM: gathers, scatters and the DMA ports too): hot tiles (same-cycle
  read/write collisions, two writes to one tile), boundaries, out-of-range addresses, fresh tiles,
  and a reset half way. Checks coverage >= 95%."""
  cycles = 1500

  async def body(self):
    for half in range(2):  # a reset in the middle: the second half starts from an all-zero memory again
      if half: await self.reset()
      items = []
      for i in range(self.cycles // 2):
        items.append(self.cycle(self.rng.choice([0.3, 0.6, 0.9]), hot=[self.rng.randrange(self.env.tiles if self.env.unit != "vrf" else 16) for _ in range(2)]))
      await self.run(items + [self.idle()])

  def check_phase(self):
    pct = self.env.cov.cov.pct()
    assert pct >= 95.0, f"{self.env.unit} coverage {pct:.1f}% < 95%:\n{self.env.cov.cov.report()}"


@pyuvm.test(expect_fail=True)
class MemBrokenModel(MemRandom):
  """The scoreboard's model drops every write: must fail (proves the checks bite)."""
  broken = True
  cycles = 200

  def check_phase(self): pass
