"""NoC endpoint tests (pyuvm), run by tests/rtl/test_noc_ep.py: Core* on noc_core_ep, Hbm* on
noc_hbm_ep, Sc* on noc_sc_ep. *Malformed need a build with ASSERT_WELLFORMED = 0 (each malformed
kind in its own phase after a reset: err_o is sticky); *Fires need the default build and must stop
on the named assertion. Expected values come from the scoreboards' references (the endpoints'
header contracts), never from the RTL."""
from __future__ import annotations

import os

import cocotb
import pyuvm
from cocotb.triggers import RisingEdge

from tinytpu.tb import kit

from .env import K_READ, K_SIG, K_WRITE, CoreEpEnv, Flit, HbmEpEnv, ReqSeq, ScEpEnv


class EpTest(kit.BaseTest):
  timeout_us = 20_000  # 2M cycles: a backstop; every wait below is bounded itself
  scale = int(os.environ.get("TINYTPU_NOCEP_SCALE", "1"))  # nightly: more traffic per test

  async def cycles(self, n: int):
    for _ in range(n): await RisingEdge(self.dut.clk_i)

  async def settle(self):
    await self.settle_or_fail(self.env.settled, "every request sent and answered")

  async def requests(self, count: int, **kw):
    """`count` requests through the env's source (the DMA, the SparseCore or the request ring's eject port)."""
    await ReqSeq("reqs", self.env, count * self.scale, **kw).start(self.env.seqr)

  async def restart(self):
    """Settle, then reset (the env's references clear themselves while rst_ni is low)."""
    await self.settle()
    await self.reset()

  async def malformed(self, bad: Flit, legal, delay: tuple[int, int] = (0, 60)):
    """One phase: a reset, legal traffic (`legal()`, a coroutine) and, at a random time during it,
    one malformed flit; the scoreboard checks err_o from the next cycle on and every output."""
    await self.restart()
    t = cocotb.start_soon(legal())
    await self.cycles(self.rng.randint(*delay))
    self.env.stim.bad.append(bad)
    await t
    await self.settle()
    await self.cycles(5)
    sb = self.env.sb
    assert sb.bad_seen and sb.err_cycle is not None, f"the malformed flit {bad} never reached the endpoint"
    assert int(self.dut.err_o.value) == 1, "err_o is not sticky"
    self.logger.info(f"malformed {bad}: at cycle {sb.bad_seen[0][0]}, err_o from {sb.err_cycle}")


# ---------------------------------------------------------------------------------------------
class CoreTest(EpTest):
  env_cls = CoreEpEnv

  async def traffic(self, dma: int, sigs: int, arrivals: int, sig_rate=0.3, arrive_rate=0.15, **kw):
    e = self.env
    e.sxu.rate, e.sxu.left = sig_rate, sigs * self.scale
    e.stim.arrive_rate, e.stim.arrive_left = arrive_rate, arrivals * self.scale
    await self.requests(dma, **kw)
    await self.settle()


@pyuvm.test()
class CoreRandom(CoreTest):
  """The DMA's requests, the SXU's signals and other cores' signals at random, the ring ready 70%
  of cycles; then with ring stalls of up to 40 cycles."""
  async def body(self):
    e = self.env
    e.stim.ready_prob = 0.7
    await self.traffic(300, 150, 200)
    e.stim.ready_prob = 0.9

    async def stalls():
      while not e.settled():
        await self.cycles(self.rng.randint(10, 60))
        e.stim.stall = self.rng.randint(1, 40)
    s = cocotb.start_soon(stalls())
    await self.traffic(200, 100, 100, arrive_rate=0.4)
    s.cancel()


@pyuvm.test()
class CoreContention(CoreTest):
  """The SXU offers a signal whenever sig_ready_o lets it while the DMA keeps requesting: the HBM
  request always goes first, a signal only in the DMA's gaps; responses and arrivals meanwhile."""
  async def body(self):
    self.env.stim.ready_prob = 0.6
    await self.traffic(300, 200, 150, sig_rate=1.0, arrive_rate=0.3, max_gap=2)
    assert self.env.sxu.sent == 200 * self.scale


@pyuvm.test()
class CoreMalformed(CoreTest):
  """(ASSERT_WELLFORMED = 0) A read, a write and kind 3 from a core, a signal from node CORES and
  from a random non-core node: err_o rises the cycle after, stays high, and no sig_rx_valid_o."""
  async def body(self):
    e, r = self.env, self.rng
    e.stim.ready_prob = 0.8
    bads = [Flit("bad", K_READ, r.getrandbits(32), src=r.randrange(e.cores)), Flit("bad", K_WRITE, r.getrandbits(32), src=r.randrange(e.cores)),
            Flit("bad", 3, r.getrandbits(32), src=0), Flit("bad", K_SIG, 1, src=e.cores), Flit("bad", K_SIG, r.getrandbits(32), src=r.randint(e.cores, 15))]
    for b in bads:
      await self.malformed(b, lambda: self.traffic(40, 20, 30, arrive_rate=0.3))


@pyuvm.test()
class CoreMalformedFires(CoreTest):
  """A read flit from core 0 at a core (default build): OnlySignalsToCores must fire."""
  async def body(self):
    self.env.stim.bad.append(Flit("bad", K_READ, 5, src=0))
    await self.cycles(40)


@pyuvm.test(expect_fail=True)
class CoreBrokenModel(CoreRandom):
  """The scoreboard must catch a wrong destination (its reference flips the dst's low bit)."""
  broken = True


# ---------------------------------------------------------------------------------------------
class HbmTest(EpTest):
  env_cls = HbmEpEnv
  SRCS = (0, 1, 3)

  async def traffic(self, count: int, hbm_ready=0.8, rsp_ready=0.7, **kw):
    e = self.env
    e.hbm.ready_prob, e.stim.ready_prob = hbm_ready, rsp_ready
    await self.requests(count, srcs=self.SRCS, **kw)
    await self.settle()

  async def fill(self, extra: int = 40):
    """The response ring stopped while requests arrive back to back: the buffer fills to DEPTH and the
    endpoint must refuse the next flit (req_ej_ready_o low) until a response leaves."""
    e = self.env
    e.hbm.ready_prob = 1.0
    e.stim.stall = 2 * e.depth + e.latency + 2 * extra
    await self.requests(e.depth + extra, max_gap=0, srcs=self.SRCS)
    await self.settle()


@pyuvm.test()
class HbmRandom(HbmTest):
  """Requests from three nodes with random gaps, the HBM and the response ring both back-pressuring."""
  async def body(self):
    await self.traffic(400)
    await self.traffic(200, hbm_ready=0.3, rsp_ready=0.95, max_gap=0)


@pyuvm.test()
class HbmFull(HbmTest):
  """The buffer full (DEPTH responses waiting on a stopped response ring), twice, then random."""
  async def body(self):
    e = self.env
    for _ in range(2): await self.fill()
    assert e.cov.cov.groups["hbm_buffer"].hits["full"] > 0, "the buffer never filled"
    assert e.cov.cov.groups["hbm_request"].hits["readxbuffer_full"] + e.cov.cov.groups["hbm_request"].hits["writexbuffer_full"] > 0
    await self.traffic(100)


@pyuvm.test()
class HbmMalformed(HbmTest):
  """(ASSERT_WELLFORMED = 0) A signal flit at the HBM among random traffic, and one while the buffer
  is full: taken at once, no HBM request, err_o from the next cycle on."""
  async def body(self):
    r = self.rng
    for _ in range(2):
      await self.malformed(Flit("bad", K_SIG, r.getrandbits(32), src=r.choice(self.SRCS)), lambda: self.traffic(60))
    await self.malformed(Flit("bad", K_SIG, 3, src=1), lambda: self.fill(), delay=(self.env.depth + 30, self.env.depth + 40))


@pyuvm.test()
class HbmMalformedFires(HbmTest):
  """A signal flit at the HBM (default build): NoSignalToHbm must fire."""
  async def body(self):
    self.env.stim.bad.append(Flit("bad", K_SIG, 1, src=0))
    await self.cycles(40)


@pyuvm.test(expect_fail=True)
class HbmBrokenModel(HbmRandom):
  """The scoreboard must catch a response routed to the wrong node (its reference flips the dst)."""
  broken = True


# ---------------------------------------------------------------------------------------------
class ScTest(EpTest):
  env_cls = ScEpEnv

  async def traffic(self, count: int, ready=0.7, delay=(1, 30), **kw):
    e = self.env
    e.stim.ready_prob, e.stim.rsp_delay = ready, delay
    await self.requests(count, **kw)
    await self.settle()

  def other_node(self) -> int:
    return self.rng.choice([n for n in range(16) if n != self.env.hbm_node])


@pyuvm.test()
class ScRandom(ScTest):
  """The SparseCore's requests with random gaps, the ring ready at random, responses after 1 to 30
  cycles (many in flight), then back to back with short answers and ring stalls."""
  async def body(self):
    await self.traffic(300)
    self.env.stim.stall = 30
    await self.traffic(200, ready=0.9, delay=(1, 3), max_gap=0)


@pyuvm.test()
class ScMalformed(ScTest):
  """(ASSERT_WELLFORMED = 0) Each in its own phase: a request-ring flit among traffic; a response
  from a node that is not the HBM while requests are in flight; a response with nothing in flight
  after N requests were answered (N = 0 too). err_o from the next cycle on, sticky."""
  async def body(self):
    e = self.env
    await self.malformed(Flit("bad", K_SIG), lambda: self.traffic(60))
    for _ in range(2):  # after every request is sent (the count then stays out of FlightBounded's way)
      await self.restart()
      e.stim.rsp_delay = (20, 60)
      await self.requests(self.rng.randint(5, 20))
      await self.wait_until(e.src.idle, 10_000, "every request sent")
      await self.cycles(self.rng.randint(0, 10))
      assert e.sb.inflight > 0
      e.stim.bad.append(Flit("bad", K_READ, 0, self.rng.getrandbits(e.pw), src=self.other_node()))
      await self.settle()
      await self.cycles(5)
      assert e.sb.bad_seen and e.sb.bad_seen[0][1].startswith("a response from node") and int(self.dut.err_o.value) == 1
    for n in (self.rng.randint(1, 40), 0, 1):
      await self.restart()
      if n: await self.traffic(n, delay=(1, 8))
      await self.cycles(self.rng.randint(0, 20))
      e.stim.bad.append(Flit("bad", self.rng.choice([K_READ, K_WRITE]), 0, self.rng.getrandbits(e.pw), src=e.hbm_node))
      await self.settle()
      await self.cycles(5)
      assert e.sb.bad_seen and e.sb.bad_seen[0][1] == "a response with nothing in flight" and int(self.dut.err_o.value) == 1, e.sb.bad_seen


class ScFires(ScTest):
  bad = None

  async def body(self):
    e = self.env
    await self.traffic(3, delay=(1, 4))
    e.stim.bad.append(self.bad())
    await self.cycles(40)


@pyuvm.test()
class ScFiresRequestFlit(ScFires):
  """A request-ring flit at the SparseCore (default build): NothingToSparseCore must fire."""
  bad = lambda self: Flit("bad", K_SIG)  # noqa: E731


@pyuvm.test()
class ScFiresOtherNode(ScFires):
  """A response from a node that is not the HBM: AnswersFromHbm must fire (the first check to)."""
  async def body(self):
    e = self.env
    e.stim.rsp_delay = (30, 40)
    await self.requests(2)
    await self.wait_until(e.src.idle, 1000, "both requests sent")
    e.stim.bad.append(Flit("bad", K_READ, 0, 7, src=self.other_node()))
    await self.cycles(60)


@pyuvm.test()
class ScFiresNothingInFlight(ScFires):
  """A response from the HBM with nothing in flight: AnswerHasRequest must fire."""
  bad = lambda self: Flit("bad", K_WRITE, 0, 9, src=self.env.hbm_node)  # noqa: E731


@pyuvm.test(expect_fail=True)
class ScBrokenModel(ScRandom):
  """The scoreboard must catch a request sent to the wrong node (its reference flips the dst)."""
  broken = True
