"""HBM arbiter tests (pyuvm), run by tests/rtl/test_hbm_arb.py. Expected values come from the
scoreboard's reference (the contract in rtl/hbm_arb.sv's header and a sequential model of the
store), never from the RTL."""
from __future__ import annotations

import os

import cocotb
import pyuvm

from tinytpu.tb import kit

from .env import ArbEnv, RandomReqSeq


class ArbTest(kit.BaseTest):
  env_cls = ArbEnv
  timeout_us = 20_000  # 2M cycles: a backstop; every wait below is bounded itself
  drain_cycles = 1000
  scale = int(os.environ.get("TINYTPU_ARB_SCALE", "1"))  # nightly: more requests per test

  async def traffic(self, counts: tuple[int, int], **kw):
    """Both requesters' sequences at once (a count of 0 leaves that requester idle), then settle."""
    e = self.env
    runs = [cocotb.start_soon(RandomReqSeq(f"seq{i}", e, n * self.scale, **kw).start(e.seqrs[i])) for i, n in enumerate(counts) if n]
    for r in runs: await r
    await self.settle_or_fail(e.settled, "every request accepted and answered")


@pyuvm.test()
class ArbRandom(ArbTest):
  """Both requesters with random gaps over a small shared window, the HBM ready 80% of cycles."""
  async def body(self):
    self.env.hbm.ready_prob = 0.8
    await self.traffic((300, 300))


@pyuvm.test()
class ArbContention(ArbTest):
  """Both requesters always valid: with the HBM always ready the grants must alternate every cycle
  (no bubble, no starvation); then with back-pressure, which must not move the priority."""
  async def body(self):
    e = self.env
    await self.traffic((200, 200), max_gap=0)
    a0, a1 = e.sb.accepted
    assert abs(a0 - a1) <= 1 and a0 + a1 == 400 * self.scale, (a0, a1)
    e.hbm.ready_prob = 0.4
    await self.traffic((200, 200), max_gap=0, p_write=0.7)


@pyuvm.test()
class ArbLone(ArbTest):
  """One requester at a time under back-pressure: a lone requester sees the HBM's ready as it is
  (requester 0 alone is the single-core timing of sim_top)."""
  async def body(self):
    e = self.env
    e.hbm.ready_prob = 0.5
    await self.traffic((150, 0))
    await self.traffic((0, 150))


@pyuvm.test()
class ArbSlowHbm(ArbTest):
  """Responses later than LATENCY, jittered, in order: the HBM holds LATENCY requests in flight (the
  arbiter's source FIFO at its bound) and the FIFO wraps many times."""
  async def body(self):
    e = self.env
    e.hbm.latency, e.hbm.jitter, e.hbm.ready_prob = e.lat_param + 3, e.lat_param, 0.9
    await self.traffic((250, 250), max_gap=1)
    e.hbm.latency, e.hbm.jitter, e.hbm.ready_prob = 1, 0, 1.0
    await self.traffic((100, 100))


@pyuvm.test(expect_fail=True)
class ArbBrokenModel(ArbContention):
  """The scoreboard must catch a wrong priority: its reference starts with requester 0 first."""
  broken = True
