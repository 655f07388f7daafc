"""DMA engine tests (pyuvm), run by tests/rtl/test_dma_unit.py. Expected values come from the
scoreboard's sequential model and, for DmaTiming, from the timing rule in rtl/dma.sv's header
(never from the RTL)."""
from __future__ import annotations

import os

import pyuvm

from tinytpu.tb import kit

from .env import DmaCmd, DmaEnv, RandomCmdSeq


class DmaTest(kit.BaseTest):
  env_cls = DmaEnv
  timeout_us = 400_000
  drain_cycles = 100_000
  scale = int(os.environ.get("TINYTPU_DMA_SCALE", "1"))  # nightly: more commands per test

  async def run_cmds(self, seq):
    await seq.start(self.env.seqr)
    await self.settle()

  async def settle(self, window: int = 1 << 16):
    """Until every command is accepted and complete. A phase has no fixed cycle budget: slow-HBM
    phases of big commands legitimately take hundreds of thousands of cycles (DmaSlowHbm at N=2,
    scale 4, seed 766947941: 353,578, which a fixed 2^18 called a hang). The watchdog is progress:
    `window` cycles in which the scoreboards check nothing fail the test (a hang is still caught)."""
    checked = lambda: sum(sb.checked for sb in self.env.scoreboards())  # noqa: E731
    while not self.env.settled():
      seen = checked()
      await self.settle_or_fail(lambda: self.env.settled() or checked() != seen,
                                f"progress: no check in {window} cycles, {self.env.sb.pending()} pending", window)

  async def one(self, c: DmaCmd) -> DmaCmd:
    await self.run_cmds(kit.ItemsSeq("one", [c]))
    return c


@pyuvm.test()
class DmaTiming(DmaTest):
  """Single commands on an idle engine, the HBM always ready with the engine's own latency: the
  k-th HBM request of a DMA.IN is accepted at s + 2 + k and the engine is idle from
  s + 3 + LATENCY + n - 1; a DMA.OUT reads VMEM tile k at s + 2 + k, has its k-th write accepted
  at s + 4 + k and is idle from s + 5 + LATENCY + n - 1 (rtl/dma.sv, full bandwidth)."""
  async def body(self):
    e, lat = self.env, self.env.lat_param
    seen = []
    e.bus.xfer_ap.connect(kit.Export("timing", self, seen.append))
    idle_from = []
    for out in (0, 1):
      for t, rows, hs, vs in ((1, 1, 0, 0), (5, 1, 0, 0), (3, 4, 7, 3), (255, 2, -300, 255), (2, 3, 0, 0)):
        seen.clear()
        c = await self.one(DmaCmd("c", out, 8, 1000, t, rows, hs, vs))
        n, s = t * rows, c.accepted
        reqs = [x.cycle for x in seen if x.kind == "hreq"]
        vms = [x.cycle for x in seen if x.kind == "vrd"]
        assert len(reqs) == n, (c, len(reqs))
        if out:
          assert vms == [s + 2 + k for k in range(n)], (str(c), vms[:4], s)
          assert reqs == [s + 4 + k for k in range(n)], (str(c), reqs[:4], s)
        else:
          assert reqs == [s + 2 + k for k in range(n)], (str(c), reqs[:4], s)
        idle_from.append((c, s + (5 if out else 3) + lat + n - 1))
        # the engine went idle exactly then: the first idle cycle after the command
        first_idle = e.last_busy + 1
        assert first_idle == idle_from[-1][1], f"{c}: idle from {first_idle}, rule says {idle_from[-1][1]}"


@pyuvm.test()
class DmaRandom(DmaTest):
  """Random commands back to back, HBM always ready at the engine's latency."""
  async def body(self):
    await self.run_cmds(RandomCmdSeq("rand", self.env, 150 * self.scale))


@pyuvm.test()
class DmaBackpressure(DmaTest):
  """Random commands with HBM back-pressure and gaps on the command port; phases of reads, writes
  and mixed directions."""
  async def body(self):
    e = self.env
    for p_out, ready in ((0.0, 0.5), (1.0, 0.3), (0.5, 0.7), (0.5, 0.15)):
      e.hbm.ready_prob, e.drv.gap_prob = ready, self.rng.choice([0.0, 0.3])
      await self.run_cmds(RandomCmdSeq(f"bp{p_out}", e, 40 * self.scale, p_out=p_out))


@pyuvm.test()
class DmaSlowHbm(DmaTest):
  """Responses later than the engine's sizing latency (and jittered, still in order): the tag FIFO
  fills and the engine must wait for room, never lose or reorder a tile."""
  async def body(self):
    e = self.env
    e.hbm.latency, e.hbm.jitter = e.outs + 20, 8
    await self.run_cmds(RandomCmdSeq("slow", e, 30 * self.scale, big=0.4))
    e.hbm.latency, e.hbm.jitter, e.hbm.ready_prob = 1, 3, 0.8
    await self.run_cmds(RandomCmdSeq("fast", e, 60 * self.scale))


@pyuvm.test()
class DmaChains(DmaTest):
  """Copies that feed each other through one small VMEM and HBM window (DMA.IN of tiles a DMA.OUT
  just wrote to HBM, a DMA.OUT of tiles a DMA.IN just brought in: the driver holds it as the SXU
  would), strides that revisit tiles within one command (zero strides)."""
  async def body(self):
    await self.run_cmds(RandomCmdSeq("chain", self.env, 150 * self.scale, vmem_tiles=12, hbm_tiles=24, big=0.0))


@pyuvm.test()
class DmaHbmNeverAnswers(DmaTest):
  """The watchdog: an HBM that refuses every request stalls the engine; settle must report it within
  its progress window (not the test's overall time limit), then the engine finishes once HBM answers."""
  async def body(self):
    self.env.hbm.ready_prob = 0.0
    try:
      await self.run_cmds(RandomCmdSeq("stuck", self.env, 4))
    except AssertionError as e:
      assert "progress: no check in" in str(e), f"the stall was reported, but not by the progress watchdog: {e}"
    else:
      raise AssertionError("an HBM that never accepts a request went unreported")
    self.env.hbm.ready_prob = 1.0
    await self.settle()


@pyuvm.test(expect_fail=True)
class DmaBrokenModel(DmaRandom):
  """The scoreboard must catch a one-bit error (its model flips a bit of the first tile a DMA.IN brings)."""
  broken = True
