"""NoC tests (pyuvm), run by tests/rtl/test_noc.py; NocBench by `python -m tinytpu noc-bench`."""
from __future__ import annotations

import json
import os
import statistics

import cocotb
import pyuvm
from cocotb.triggers import RisingEdge

from tinytpu.tb import kit

from .env import (AllToOneSeq, BadDstSeq, HotspotSeq, NeighbourSeq, NocEnv, Packet, UniformOthersSeq, UniformSeq, hops)


class NocTest(kit.BaseTest):
  env_cls = NocEnv
  timeout_us = 200_000
  drain_cycles = 50_000
  scale = int(os.environ.get("TINYTPU_NOC_SCALE", "1"))  # nightly: more packets per test

  @property
  def n(self): return self.env.nodes

  async def traffic(self, make, count: int, load=1.0):
    """One sequence per source (`make(src, count, load)`), all at once; returns when every source
    queue is empty (the drain then waits for the packets in flight)."""
    loads = load if isinstance(load, list) else [load] * self.n
    tasks = [cocotb.start_soon(make(s, count * self.scale, loads[s]).start(self.env.seqrs[s])) for s in range(self.n)]
    for t in tasks: await t
    await self.wait_until(self.env.sources_idle, 1 << 20, "every source queue empty")

  def seq(self, cls, **attrs):
    def make(src, count, load):
      s = cls(f"{cls.__name__}{src}", self.env, src, count, load)
      for k, v in attrs.items(): setattr(s, k, v)
      return s
    return make

  def random_ready(self, lo=0.3):
    self.env.ready_prob = [self.rng.choice([1.0, self.rng.uniform(lo, 1.0)]) for _ in range(self.n)]

  async def settle(self):
    await self.wait_until(lambda: self.env.sources_idle() and not self.env.pending(), 1 << 20, "every packet sent and delivered")


@pyuvm.test()
class NocZeroLoad(NocTest):
  """Every src x dst pair alone on an idle network, eject always ready: delivered after exactly
  1 + hops * (LINK_LATENCY + 1) cycles (noc.sv's formula)."""
  async def body(self):
    for s in range(self.n):
      for d in range(self.n):
        p = Packet("pkt", s, d, self.env.next_tag(s), self.rng.getrandbits(self.env.pw))
        await kit.ItemsSeq("one", [p]).start(self.env.seqrs[s])
        await self.settle()
        for _ in range(3): await RisingEdge(self.dut.clk_i)
    sb, lat = self.env.sb, self.env.lat
    assert sb.delivered == self.n * self.n, sb.delivered
    for h, ls in sb.by_hops.items():
      assert set(ls) == {1 + h * (lat + 1)}, f"{h} hops: latencies {sorted(set(ls))}, expected {1 + h * (lat + 1)}"


@pyuvm.test()
class NocUniform(NocTest):
  """Uniform random destinations (self included), random offered loads and eject back-pressure."""
  async def body(self):
    self.random_ready()
    await self.traffic(self.seq(UniformSeq), 300, [self.rng.choice([1.0, self.rng.uniform(0.1, 1.0)]) for _ in range(self.n)])


@pyuvm.test()
class NocHotspot(NocTest):
  """Most traffic to one node whose eject port is slow."""
  async def body(self):
    hot = self.rng.randrange(self.n)
    self.random_ready(0.5)
    self.env.ready_prob[hot] = 0.5
    await self.traffic(self.seq(HotspotSeq, hot=hot), 200)


@pyuvm.test()
class NocAllToOne(NocTest):
  """Every node (the target too) sends only to one node at full rate: the target's eject port is
  the bottleneck; every source still gets its share (no injection starves)."""
  async def body(self):
    target = self.rng.randrange(self.n)
    self.env.ready_prob = [1.0] * self.n
    self.env.ready_prob[target] = self.rng.choice([1.0, 0.7])
    await self.traffic(self.seq(AllToOneSeq, target=target), 150)
    await self.settle()
    per_src = self.env.sb.per_src
    assert all(per_src[s] == 150 * self.scale for s in range(self.n)), per_src
    waits = self.env.stats.max_wait
    self.logger.info(f"noc all-to-one {target}: longest injection wait per node {waits}")


@pyuvm.test()
class NocNeighbour(NocTest):
  """Next-node and previous-node traffic (1 and NODES-1 hops), back to back, then with back-pressure."""
  async def body(self):
    await self.traffic(self.seq(NeighbourSeq), 200)
    self.random_ready()
    await self.traffic(self.seq(NeighbourSeq), 200)


@pyuvm.test()
class NocStress(NocTest):
  """Phases of mixed patterns at full rate while eject ports stop for hundreds of cycles (the ring
  fills up to its credits, every sender is held back) and resume; nothing may be lost or reordered."""
  async def body(self):
    for phase in range(4):
      stop = self.rng.sample(range(self.n), self.rng.randint(1, self.n))
      self.env.ready_prob = [0.0 if n in stop else self.rng.uniform(0.5, 1.0) for n in range(self.n)]
      cls = self.rng.choice([UniformSeq, HotspotSeq, NeighbourSeq, UniformOthersSeq])
      tasks = [cocotb.start_soon(cls(f"s{phase}_{s}", self.env, s, 120 * self.scale, 1.0).start(self.env.seqrs[s])) for s in range(self.n)]
      for _ in range(self.rng.randint(200, 400)): await RisingEdge(self.dut.clk_i)
      self.random_ready(0.5)
      for t in tasks: await t
      await self.wait_until(self.env.sources_idle, 1 << 20, "every source queue empty")


@pyuvm.test()
class NocSaturation(NocTest):
  """Every node offers uniform random traffic to the others back to back, ejects always ready:
  links run near 100% busy, and no injection waits long (fair arbitration)."""
  async def body(self):
    self.env.stats.start()
    await self.traffic(self.seq(UniformOthersSeq), 400)
    self.env.stats.stop()
    st = self.env.stats
    util = [b / max(1, st.cycles) for b in st.busy]
    self.logger.info(f"noc saturation: link utilisation {[round(u, 3) for u in util]}, longest injection wait {st.max_wait} cycles")
    # a sanity bound against starvation (a starved port would be refused for the rest of the run,
    # thousands of cycles): measured 8 cycles at the default (INJ_STARVE = 8), up to 104 at
    # INJ_STARVE = 1 (4 nodes, latency 1: injection first nearly always slows the downstream drain)
    bound = 32 * self.n * (self.env.lat + 1)
    assert max(st.max_wait) <= bound, f"an injection port was refused {max(st.max_wait)} cycles in a row (> {bound}): starvation?"


@pyuvm.test()
class NocBadDst(NocTest):
  """Packets to nodes that do not exist, mixed with good ones (a build with ASSERT_DST = 0): each
  raises its source's sticky bad_dst_o and err_o, never arrives anywhere, and the good ones are delivered."""
  async def body(self):
    assert self.n < 1 << self.env.id_w, "needs NODES < 2^ID_W"
    self.random_ready()
    await self.traffic(self.seq(BadDstSeq), 100)
    await self.settle()
    for _ in range(5): await RisingEdge(self.dut.clk_i)
    sb = self.env.sb
    assert sb.bad_sent and int(self.dut.err_o.value) == 1
    assert self.dut.bad_dst_o.value.to_unsigned() == sb.bad_sent


@pyuvm.test()
class NocBadDstFires(NocTest):
  """One packet to a missing node with the assertion on (ASSERT_DST = 1): InjDstExists must fire
  (tests/rtl/test_noc.py expects this test to fail with that message)."""
  async def body(self):
    p = Packet("bad", 0, self.n, 0, 1)
    await kit.ItemsSeq("one", [p]).start(self.env.seqrs[0])
    for _ in range(10): await RisingEdge(self.dut.clk_i)


@pyuvm.test(expect_fail=True)
class NocBrokenModel(NocUniform):
  """The scoreboard must catch a one-bit payload error (its model flips a bit of every payload)."""
  broken = True


# ---------------------------------------------------------------------------------------------
LOADS = [0.05, 0.1, 0.2, 0.3, 0.35, 0.4, 0.45, 0.5, 0.55, 0.6, 0.8, 1.0]


@pyuvm.test()
class NocBench(NocTest):
  """The latency / throughput curve under uniform random traffic to the other nodes (offered load
  per node swept over LOADS; per point a warm-up, then a measured window), and the saturation
  point (every node offering a packet every cycle). Writes JSON to $TINYTPU_NOC_BENCH."""
  warmup, window = 300, 1500

  async def point(self, load: float) -> dict:
    e, sb = self.env, self.env.sb
    count = int((self.warmup + self.window) * min(1.0, load) * 1.3) + 20
    tasks = [cocotb.start_soon(UniformOthersSeq(f"b{load}_{s}", e, s, count, load).start(e.seqrs[s])) for s in range(self.n)]
    for t in tasks: await t
    start = e.cycle
    for _ in range(self.warmup): await RisingEdge(self.dut.clk_i)
    n0, l0, t0, by0 = sb.delivered, len(sb.latency), e.cycle, dict(sb.per_src)
    e.stats.start()
    for _ in range(self.window): await RisingEdge(self.dut.clk_i)
    e.stats.stop()
    n1, t1 = sb.delivered, e.cycle
    by_src = [(sb.per_src[s] - by0.get(s, 0)) / (t1 - t0) for s in range(self.n)]
    lat, tot = sb.latency[l0:], sb.total_latency[l0:]
    for d in e.drivers: d.flush()   # packets not yet offered are never sent
    await self.settle()
    st = e.stats
    return {"offered": load, "accepted": (n1 - n0) / (t1 - t0) / self.n, "accepted_by_source": by_src, "latency_mean": statistics.mean(lat) if lat else None,
            "latency_p99": sorted(lat)[int(0.99 * (len(lat) - 1))] if lat else None,
            "total_latency_mean": statistics.mean(tot) if tot else None,
            "link_util": [b / st.cycles for b in st.busy], "max_inject_wait": max(st.max_wait), "cycles": t1 - start}

  async def body(self):
    pts = []
    for load in LOADS:
      pts.append(await self.point(load))
      self.logger.info(f"noc bench: {pts[-1]}")
    sat = pts[-1]
    zero = {h: 1 + h * (self.env.lat + 1) for h in range(1, self.n + 1)}
    hopmean = statistics.mean(hops(s, d, self.n) for s in range(self.n) for d in range(self.n) if s != d)
    out = {"nodes": self.n, "link_latency": self.env.lat, "payload_bits": self.env.pw, "pattern": "uniform random to the other nodes",
           "warmup": self.warmup, "window": self.window, "points": pts, "zero_load_latency_by_hops": zero, "mean_hops": hopmean,
           "saturation": {"link_util_mean": statistics.mean(sat["link_util"]), "link_util_min": min(sat["link_util"]),
                          "accepted_per_node": sat["accepted"], "ideal_per_node": 1 / hopmean,
                          "lost": 0, "delivered": self.env.sb.delivered}}
    path = os.environ.get("TINYTPU_NOC_BENCH")
    if path: open(path, "w").write(json.dumps(out, indent=1))
