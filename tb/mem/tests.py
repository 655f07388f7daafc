"""VMEM, PSUM and VRF tests (pyuvm), run by tests/rtl/test_mem.py."""
from __future__ import annotations

import numpy as np
import pyuvm

from tinytpu.tb import kit
from .env import Cyc, ItemsSeq, MemEnv, channel, spec

M32 = 0xFFFFFFFF


class MemTest(kit.BaseTest):
  env_cls = MemEnv
  timeout_us = 5000

  async def reset(self):
    for f, p in channel(self.env.unit).ports().items(): p.put(self.dut, 0)
    for extra in ("rd_elem_i", "wr_elem_i", "wr_mask_i"):  # VMEM element (gather/scatter) mode: not driven by this env
      if hasattr(self.dut, extra): getattr(self.dut, extra).value = 0
    await super().reset()

  def addr(self, hot):
    """Mostly a few hot tiles (collisions), sometimes any tile, a boundary or out of range."""
    t, r = self.env.tiles, self.rng.random()
    if self.env.unit == "vrf": return self.rng.choice(hot) if r < 0.5 else self.rng.randrange(16)
    if r < 0.45: return self.rng.choice(hot)
    if r < 0.8: return self.rng.randrange(t)
    if r < 0.9: return self.rng.choice([0, t - 1])
    return self.rng.choice([t, t + 1, 2 * t, 0x7FFFFFFF, 0x80000000, M32])

  def cycle(self, p_req=0.6, hot=None) -> Cyc:
    n, s, c = self.env.n, spec(self.env.unit, self.env.n), Cyc("cyc")
    hot = hot or [0, 1, 2]
    for name, *_ in s.get("reads", []) + s.get("writes", []) + s.get("rows", []):
      setattr(c, f"{name}_req", int(self.rng.random() < p_req)); setattr(c, f"{name}_addr", self.addr(hot))
    for name, *_ in s.get("writes", []): setattr(c, f"{name}_data", kit.random_tile(self.rng, n, "int32")[0])
    for name, *_ in s.get("rows", []):
      setattr(c, f"{name}_data", kit.random_tile(self.rng, n, "int32")[0][0])
      setattr(c, f"{name}_acc", self.rng.randint(0, 1)); setattr(c, f"{name}_row", self.rng.randrange(n))
    for name, *_ in s.get("comb_reads", []): setattr(c, f"{name}_addr", self.addr(hot))
    return c

  def idle(self) -> Cyc:
    c = self.cycle(0.0)
    for name, *_ in spec(self.env.unit, self.env.n).get("writes", []): setattr(c, f"{name}_req", 0)
    return c

  async def run(self, items):
    await ItemsSeq("seq", items).start(self.env.agent.seqr)


@pyuvm.test()
class MemEarlyAndClear(MemTest):
  """Accesses during the clear sweep are refused with err; afterwards every tile reads zero."""
  async def body(self):
    s = spec(self.env.unit, self.env.n)
    items = [self.cycle(1.0) for _ in range(8)]  # still sweeping: every access errs
    await self.run(items)
    if self.env.unit != "vrf":
      await self.wait_until(lambda: int(self.dut.init_done_o.value), 1 << 17, "clear sweep")
    reads = []
    for a in range(self.env.tiles if self.env.unit != "vrf" else 16):
      c = self.idle()
      for name, *_ in s.get("reads", []): setattr(c, f"{name}_req", 1); setattr(c, f"{name}_addr", a)
      for name, *_ in s.get("comb_reads", []): setattr(c, f"{name}_addr", a)
      reads.append(c)
    await self.run(reads + [self.idle()])


@pyuvm.test()
class MemRandom(MemTest):
  """Random traffic on every port at once: hot tiles (same-cycle read/write collisions, two
  writes to one tile), boundaries and out-of-range addresses. Checks coverage >= 95%."""
  cycles = 1500

  async def body(self):
    await self.run([self.cycle(1.0) for _ in range(4)])  # a few accesses during the sweep
    if self.env.unit != "vrf":
      await self.wait_until(lambda: int(self.dut.init_done_o.value), 1 << 17, "clear sweep")
    items = []
    for i in range(self.cycles):
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
