"""NoC unit environment (rtl/noc.sv, doc/noc.md).

Per endpoint an injection driver (an open-loop source: each packet has a creation cycle, it is
offered from then on, a source queue in front of the port) and a ready driver on the eject port
(random back-pressure, a probability per endpoint that the test may change at any time). The NoC's
ports are packed vectors over the nodes, so one `PortBus` writes every endpoint's slice at each
falling edge. A passive monitor publishes every inject and eject transfer and the per-cycle status
(link use, contention, back-pressure, errors). The scoreboard checks, per source and destination,
that every accepted packet arrives exactly once, in acceptance order, with its tag and payload, and
that nothing arrives that was not sent; packets to a node that does not exist must raise bad_dst_o
at their source (sticky) and never arrive anywhere. Coverage: every src x dst pair, hop counts,
contention on every link, back-pressure on every inject and eject port."""
from __future__ import annotations

import collections
import random
import statistics

from cocotb.triggers import FallingEdge, ReadOnly
from pyuvm import uvm_analysis_port, uvm_component, uvm_sequence, uvm_sequencer

from tinytpu.tb import kit


def hops(src: int, dst: int, nodes: int) -> int:
  """Links a packet crosses on the ring (a packet to its own node goes once around)."""
  return (dst - src) % nodes or nodes


class Packet(kit.Item):
  """One flit. Set by the sequence: src (the endpoint), dst, tag, data (PW-bit int), gap (cycles
  after the previous packet of this source was created). Set by the env: created, injected, ejected (cycles)."""
  def __init__(self, name="pkt", src=0, dst=0, tag=0, data=0, gap=0):
    super().__init__(name)
    self.src, self.dst, self.tag, self.data, self.gap = src, dst, tag, data, gap
    self.created = self.injected = self.ejected = None

  def stamp(self, cycle: int) -> "Packet":
    """The monitor's transfer cycle."""
    self.cycle = cycle
    return self

  def __str__(self):
    return f"Packet(src={self.src} dst={self.dst} tag=0x{self.tag:x} data=0x{self.data:x}"[:120] + f" created={self.created} injected={self.injected} ejected={self.ejected})"


# ---------------------------------------------------------------------------------------------
# sequences: one per source endpoint
class TrafficSeq(uvm_sequence):
  """`count` packets from `src`; `dst()` picks each destination; `load` is the offered load in
  packets per cycle (gaps geometric: Bernoulli arrivals), load >= 1 means back to back. Tags are a
  per-source sequence number (mod 2^TAG_W); payloads random."""
  def __init__(self, name, env, src: int, count: int, load: float = 1.0):
    super().__init__(name)
    self.env, self.src, self.count, self.load = env, src, count, load
    self.rng = random.Random(env.rng.getrandbits(32))

  def dst(self) -> int:
    raise NotImplementedError

  def gap(self) -> int:
    if self.load >= 1.0: return 0
    g = 0
    while self.rng.random() >= self.load: g += 1
    return g

  async def body(self):
    for _ in range(self.count):
      p = Packet("pkt", self.src, self.dst(), self.env.next_tag(self.src), self.rng.getrandbits(self.env.pw), self.gap())
      await self.start_item(p)
      await self.finish_item(p)


class UniformSeq(TrafficSeq):
  """Every destination equally likely, the source itself included (once around the ring)."""
  def dst(self): return self.rng.randrange(self.env.nodes)


class UniformOthersSeq(TrafficSeq):
  """Every other node equally likely (the benchmark's uniform random traffic)."""
  def dst(self): return (self.src + 1 + self.rng.randrange(self.env.nodes - 1)) % self.env.nodes


class HotspotSeq(TrafficSeq):
  """Most packets to one hot node, the rest uniform."""
  hot, p_hot = 0, 0.6
  def dst(self): return self.hot if self.rng.random() < self.p_hot else self.rng.randrange(self.env.nodes)


class AllToOneSeq(TrafficSeq):
  target = 0
  def dst(self): return self.target


class NeighbourSeq(TrafficSeq):
  """The next node downstream (one hop) or the one upstream (NODES-1 hops)."""
  def dst(self): return (self.src + self.rng.choice([1, -1])) % self.env.nodes


class BadDstSeq(TrafficSeq):
  """Mostly good packets; some addressed to a node that does not exist (NODES .. 2^ID_W-1)."""
  p_bad = 0.2
  def dst(self):
    if self.rng.random() < self.p_bad: return self.rng.randrange(self.env.nodes, 1 << self.env.id_w)
    return self.rng.randrange(self.env.nodes)


# ---------------------------------------------------------------------------------------------
# drivers
class InjectDriver(kit.QueueDriver):
  """One endpoint's source: takes packets from its sequencer into a source queue, stamps each with
  its creation cycle (previous creation + gap), and offers the oldest once created. Driven through
  the PortBus (`step` at the falling edge, `sample` after it)."""
  def __init__(self, name, parent, node: int):
    super().__init__(name, parent)
    self.node = node
    self.last_created = 0

  def accept(self, p: Packet) -> None:
    # Bernoulli arrivals: at most one packet created a cycle, `gap` empty cycles before this one
    p.created = max(self.last_created + 1, self.parent.cycle) + p.gap
    self.last_created = p.created

  def step(self, cycle: int) -> Packet | None:
    self.offered = self.q[0] if self.q and self.q[0].created <= cycle else None
    return self.offered

  def sample(self, ready: int):
    if self.offered is not None and ready: self.q.popleft()

  def idle(self) -> bool: return not self.q

  def flush(self):
    """Forget the packets not yet offered (they were never sent); the source restarts now. A packet
    on the port stays until taken (valid/ready: an offer is never withdrawn, InjHeld)."""
    keep = [self.q[0]] if self.q and self.offered is self.q[0] else []
    self.q.clear()
    self.q.extend(keep)
    self.last_created = self.parent.cycle


class PortBus(uvm_component):
  """Owns the packed ports: at each falling edge asks every endpoint's driver what to offer and
  draws every eject ready (probability `ready_prob[node]`), writes the vectors, and after the
  edge's ReadOnly tells each driver whether its packet was taken."""
  def __init__(self, name, parent):
    super().__init__(name, parent)
    self.env = parent

  async def run_phase(self):
    e, d = self.env, self.env.dut
    d.inj_valid_i.value = 0
    d.ej_ready_i.value = 0
    while True:
      await FallingEdge(d.clk_i)
      e.cycle += 1
      valid = dst = tag = data = ready = 0
      for n, drv in enumerate(e.drivers):
        p = drv.step(e.cycle)
        if p is not None:
          valid |= 1 << n
          dst |= p.dst << (n * e.id_w)
          tag |= p.tag << (n * e.tag_w)
          data |= p.data << (n * e.pw)
        prob = e.ready_prob[n]
        if prob >= 1.0 or (prob > 0 and e.rng.random() < prob): ready |= 1 << n
      d.inj_valid_i.value, d.inj_dst_i.value, d.inj_tag_i.value, d.inj_data_i.value, d.ej_ready_i.value = valid, dst, tag, data, ready
      await ReadOnly()
      r = d.inj_ready_o.value.to_unsigned()
      for n, drv in enumerate(e.drivers): drv.sample((r >> n) & 1)


# ---------------------------------------------------------------------------------------------
# monitor
class Status:
  """One cycle of status vectors (ints, bit n = node or link n)."""
  __slots__ = ("cycle", "busy", "contend", "inj_wait", "ej_wait", "bad", "err")


class NocMonitor(uvm_component):
  """Publishes every inject transfer (inj_ap: src = the node, dst, tag, data) and eject transfer
  (ej_ap: dst = the node, src, tag, data), both with their cycle, and every cycle's Status (st_ap)."""
  def __init__(self, name, parent):
    super().__init__(name, parent)
    self.env = parent
    self.inj_ap, self.ej_ap, self.st_ap = uvm_analysis_port("inj_ap", self), uvm_analysis_port("ej_ap", self), uvm_analysis_port("st_ap", self)

  async def run_phase(self):
    e, d = self.env, self.env.dut
    u = lambda h: h.value.to_unsigned()
    field = lambda v, n, w: (v >> (n * w)) & ((1 << w) - 1)
    while True:
      await FallingEdge(d.clk_i)
      await ReadOnly()
      if not int(d.rst_ni.value): continue
      iv, ir, ev, er = u(d.inj_valid_i), u(d.inj_ready_o), u(d.ej_valid_o), u(d.ej_ready_i)
      if iv & ir:
        dst, tag, data = u(d.inj_dst_i), u(d.inj_tag_i), u(d.inj_data_i)
        for n in range(e.nodes):
          if (iv & ir) >> n & 1:
            self.inj_ap.write(Packet("inj", n, field(dst, n, e.id_w), field(tag, n, e.tag_w), field(data, n, e.pw)).stamp(e.cycle))
      if ev & er:
        src, tag, data = u(d.ej_src_o), u(d.ej_tag_o), u(d.ej_data_o)
        for n in range(e.nodes):
          if (ev & er) >> n & 1:
            self.ej_ap.write(Packet("ej", field(src, n, e.id_w), n, field(tag, n, e.tag_w), field(data, n, e.pw)).stamp(e.cycle))
      s = Status()
      s.cycle, s.busy, s.contend, s.inj_wait, s.ej_wait = e.cycle, u(d.link_busy_o), u(d.contend_o), iv & ~ir, ev & ~er
      s.bad, s.err = u(d.bad_dst_o), int(d.err_o.value)
      self.st_ap.write(s)


# ---------------------------------------------------------------------------------------------
# scoreboard
class NocScoreboard(kit.Scoreboard):
  """Per (src, dst) a queue of accepted packets; an eject must be the head of its pair's queue
  (order), equal in tag and payload (integrity); an eject with an empty queue is a duplicate or a
  packet never sent; a queue not empty at the end is a loss. Packets to missing nodes: the source's
  bad_dst_o must be high from the cycle after and stay high; err_o = OR of bad_dst_o."""
  def __init__(self, name, parent):
    super().__init__(name, parent)
    self.env = parent
    self.pairs: dict[tuple[int, int], collections.deque] = collections.defaultdict(collections.deque)
    self.inj_export = kit.Export("inj_export", self, self.write_inj)
    self.ej_export = kit.Export("ej_export", self, self.write_ej)
    self.st_export = kit.Export("st_export", self, self.write_st)
    self.bad_sent = 0          # bit n: node n injected a packet to a missing node (from the next cycle on)
    self.bad_pending = 0       # ... accepted in the cycle just seen
    self.outstanding = 0
    self.latency: list[int] = []        # eject - inject, cycles
    self.total_latency: list[int] = []  # eject - creation (source queueing included)
    self.by_hops: dict[int, list[int]] = collections.defaultdict(list)
    self.delivered = 0
    self.per_src: collections.Counter = collections.Counter()
    self.broken = getattr(parent.parent, "broken", False)

  def write_inj(self, p):
    drv = self.env.drivers[p.src]
    sent = drv.offered  # the driver's packet taken this cycle: its creation cycle
    created = sent.created if sent is not None and (sent.dst, sent.tag) == (p.dst, p.tag) else p.cycle
    if p.dst >= self.env.nodes:
      self.bad_pending |= 1 << p.src
      return
    p.injected, p.created = p.cycle, created
    if self.broken: p.data ^= 1  # NocBrokenModel: a model that expects a flipped payload bit must be caught
    self.pairs[(p.src, p.dst)].append(p)
    self.outstanding += 1

  def write_ej(self, got):
    q = self.pairs.get((got.src, got.dst))
    if got.dst >= self.env.nodes or got.src >= self.env.nodes:
      return self.error(f"eject of a packet with a node id out of range: {got}")
    if not q:
      return self.error(f"node {got.dst} ejected a packet from {got.src} that is not outstanding (duplicate or never sent): {got}")
    exp = q[0]
    self.checked += 1
    if exp.tag != got.tag:
      later = [i for i, x in enumerate(q) if x.tag == got.tag and x.data == got.data]
      why = f"out of order (it is #{later[0]} of the pair's outstanding packets)" if later else "a tag never sent on this pair"
      return self.error(f"pair {got.src}->{got.dst}: {why}: expected tag 0x{exp.tag:x}, got {got}; expected {exp}")
    if exp.data != got.data:
      return self.error(f"pair {got.src}->{got.dst} tag 0x{got.tag:x}: payload corrupted, bits 0x{exp.data ^ got.data:x} differ\n  sent {exp}\n  got  {got}")
    q.popleft()
    self.outstanding -= 1
    self.delivered += 1
    self.per_src[got.src] += 1
    exp.ejected = got.cycle
    self.latency.append(got.cycle - exp.injected)
    self.total_latency.append(got.cycle - exp.created)
    self.by_hops[hops(got.src, got.dst, self.env.nodes)].append(got.cycle - exp.injected)

  def write_st(self, s):
    if s.bad & ~(self.bad_sent | self.bad_pending):
      self.error(f"cycle {s.cycle}: bad_dst_o=0b{s.bad:b} but only nodes 0b{self.bad_sent:b} sent a packet to a missing node")
    if ~s.bad & self.bad_sent:
      self.error(f"cycle {s.cycle}: bad_dst_o=0b{s.bad:b} dropped (sticky); nodes 0b{self.bad_sent:b} sent packets to missing nodes")
    if s.err != int(s.bad != 0):
      self.error(f"cycle {s.cycle}: err_o={s.err} but bad_dst_o=0b{s.bad:b}")
    self.bad_sent |= self.bad_pending
    self.bad_pending = 0

  def pending(self) -> int:
    return self.outstanding

  def check_phase(self):
    for (s, d), q in self.pairs.items():
      if q: self.error(f"pair {s}->{d}: {len(q)} packets lost (never ejected); first {q[0]}")
    if self.latency:
      self.logger.info(f"noc: {self.delivered} packets delivered, latency mean {statistics.mean(self.latency):.1f} max {max(self.latency)} cycles")
    self.outstanding = 0
    super().check_phase()


# ---------------------------------------------------------------------------------------------
# coverage
EVENTS = ["inject_refused", "eject_refused", "bad_dst", "all_links_busy"]


class NocCoverage(kit.CoverageCollector):
  unit = "noc"

  def define(self, cov):
    n = kit.params().get("NODES", 4)
    cov.cross("src_x_dst", range(n), range(n))
    cov.bins("hops", range(1, n + 1))
    cov.bins("link_contention", range(n))      # through traffic and injection both request link r
    cov.cross("backpressure", ["inject", "eject"], range(n))
    cov.bins("events", EVENTS)

  def sample_inj(self, p):
    n = self.parent.nodes
    if p.dst >= n: return self.cov.hit("events", "bad_dst")
    self.cov.hit("src_x_dst", (p.src, p.dst))
    self.cov.hit("hops", hops(p.src, p.dst, n))

  def sample_st(self, s):
    for r in range(self.parent.nodes):
      if s.contend >> r & 1: self.cov.hit("link_contention", r)
      if s.inj_wait >> r & 1: self.cov.hit("backpressure", ("inject", r))
      if s.ej_wait >> r & 1: self.cov.hit("backpressure", ("eject", r))
    if s.inj_wait: self.cov.hit("events", "inject_refused")
    if s.ej_wait: self.cov.hit("events", "eject_refused")
    if s.busy == (1 << self.parent.nodes) - 1: self.cov.hit("events", "all_links_busy")


class LinkStats(uvm_component):
  """Per-link busy cycles over a window the test opens and closes (the benchmark's utilisation)."""
  def __init__(self, name, parent):
    super().__init__(name, parent)
    self.env, self.on, self.cycles = parent, False, 0
    self.busy = [0] * parent.nodes
    self.export = kit.Export("export", self, self.write)

    self.run = [0] * parent.nodes       # cycles each inject port has been refused in a row
    self.max_wait = [0] * parent.nodes  # the longest such run (always tracked)

  def start(self): self.on, self.cycles, self.busy, self.max_wait = True, 0, [0] * self.env.nodes, [0] * self.env.nodes
  def stop(self): self.on = False

  def write(self, s):
    for r in range(self.env.nodes):
      self.run[r] = self.run[r] + 1 if s.inj_wait >> r & 1 else 0
      self.max_wait[r] = max(self.max_wait[r], self.run[r])
    if not self.on: return
    self.cycles += 1
    for r in range(self.env.nodes): self.busy[r] += s.busy >> r & 1


class NocEnv(kit.Env):
  def build_phase(self):
    p = kit.params()
    self.nodes, self.lat = p.get("NODES", 4), p.get("LINK_LATENCY", 2)
    self.pw, self.id_w, self.tag_w = p.get("PW", 512), p.get("ID_W", 4), p.get("TAG_W", 16)
    self.cycle = 0
    self.ready_prob = [1.0] * self.nodes
    self._tags = [0] * self.nodes
    self.drivers = [InjectDriver(f"inj{n}", self, n) for n in range(self.nodes)]
    self.seqrs = [uvm_sequencer(f"seqr{n}", self) for n in range(self.nodes)]
    self.bus = PortBus("bus", self)
    self.mon = NocMonitor("mon", self)
    self.sb = NocScoreboard("sb", self)
    self.cov = NocCoverage("cov", self)
    self.stats = LinkStats("stats", self)

  def connect_phase(self):
    for drv, sq in zip(self.drivers, self.seqrs): drv.seq_item_port.connect(sq.seq_item_export)
    self.mon.inj_ap.connect(self.sb.inj_export)
    self.mon.ej_ap.connect(self.sb.ej_export)
    self.mon.st_ap.connect(self.sb.st_export)
    self.mon.inj_ap.connect(self.cov.export(self.cov.sample_inj))
    self.mon.st_ap.connect(self.cov.export(self.cov.sample_st))
    self.mon.st_ap.connect(self.stats.export)

  def next_tag(self, src: int) -> int:
    t = self._tags[src]
    self._tags[src] = (t + 1) % (1 << self.tag_w)
    return t

  def sources_idle(self) -> bool:
    return all(d.idle() for d in self.drivers)
