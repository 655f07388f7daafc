"""HBM arbiter unit environment (rtl/hbm_arb.sv alone).

In sim_top the SXU never lets the core's DMA and the SparseCore request at once (doc/sparsecore.md,
"Interlocks"), so the arbiter's contention paths are unreachable there; this environment drives
them: two requesters that offer requests whenever they like, and an HBM that back-pressures at
random and answers in order after a variable latency.

- `Requester` (one per port): a queue of `HbmReq` items from its sequencer; it offers the oldest
  with a random gap before it and holds it (valid high, fields stable) until it is accepted, as
  the DMA engine and the SparseCore do.
- `HbmModel`: a sparse tile store; ready at random (`ready_prob`) while fewer than LATENCY
  requests are in flight (rtl/hbm.sv's bound, which sizes the arbiter's source FIFO); reads sample
  the store and writes update it at acceptance; one response per request, in order, `latency`
  (+ up to `jitter`) cycles later, never refused.
- `ArbBus`: the clock loop. At each falling edge the requesters and the HBM drive their inputs;
  after ReadOnly the scoreboard judges the cycle.
- `ArbScoreboard`: the contract in rtl/hbm_arb.sv's header, per cycle:
  - the winner: round robin when both are valid (the one not granted last); after reset
    requester 1 wins the first conflict, as if requester 0 had been granted last;
  - each ready_o: the HBM's ready unless the other requester is valid and holds the priority, so
    never a function of the requester's own valid;
  - the HBM sees exactly the winner's request;
  - each response goes, in the cycle the HBM gives it, to the requester whose request it answers,
    with the HBM's data;
  - end to end: what each requester receives, in order, equals a sequential model of the store
    (reads return the latest write accepted before them, whoever made it).
  A `broken` test's model starts with the wrong priority and must fail.
- `ArbCoverage`: conflicts per priority and HBM state, lone requests, accepts and responses per
  requester and direction, in-flight occupancy up to the HBM's bound, alternating grants, a
  response in the cycle of an accept."""
from __future__ import annotations

import collections
import random

from cocotb.triggers import FallingEdge, ReadOnly
from pyuvm import uvm_component, uvm_sequence, uvm_sequencer

from tinytpu.tb import kit


class HbmReq(kit.Item):
  """One request of a requester: we, addr (tile), wdata (a tile as an int). Set by the env: src,
  accepted (cycle), and for a read the data it must return (`expect`)."""
  def __init__(self, name="req", we=0, addr=0, wdata=0):
    super().__init__(name)
    self.we, self.addr, self.wdata = we, addr, wdata
    self.src, self.accepted, self.expect = None, None, None
    self.gap = 0

  def __str__(self):
    return f"{'W' if self.we else 'R'}(src={self.src} addr={self.addr} accepted={self.accepted})"


class RandomReqSeq(uvm_sequence):
  """`count` requests over a window of `tiles` HBM tiles (small, so requesters read each other's
  writes), a share `p_write` of writes, a gap of 0 .. `max_gap` idle cycles before each."""
  def __init__(self, name, env, count: int, tiles: int = 16, p_write: float = 0.5, max_gap: int = 3):
    super().__init__(name)
    self.env, self.count, self.tiles, self.p_write, self.max_gap = env, count, tiles, p_write, max_gap
    self.rng = random.Random(env.rng.getrandbits(32))

  async def body(self):
    r, bits = self.rng, self.env.lanes * 32
    for _ in range(self.count):
      q = HbmReq("req", int(r.random() < self.p_write), r.randrange(self.tiles) + r.choice([0, 0, 0, 1 << 20]), r.getrandbits(bits))
      q.gap = r.choice([0, 0, 0, r.randint(0, self.max_gap)]) if self.max_gap else 0
      await self.start_item(q)
      await self.finish_item(q)


class Requester(kit.QueueDriver):
  """Offers its oldest request after that request's gap, and holds it until accepted."""
  def __init__(self, name, parent, port: int):
    super().__init__(name, parent)
    self.env, self.port = parent, port
    self.received: collections.deque[HbmReq] = collections.deque()  # accepted, response due

  def accept(self, item: HbmReq) -> None: item.src = self.port

  def idle(self) -> bool:
    return super().idle() and not self.received


class HbmModel(uvm_component):
  def __init__(self, name, parent):
    super().__init__(name, parent)
    self.env = parent
    self.store: dict[int, int] = {}
    self.ready_prob, self.latency, self.jitter = 1.0, 1, 0
    self.rsp: collections.deque = collections.deque()  # (due cycle, we, data)
    self.ready, self.last_due = 1, 0

  def read(self, a: int) -> int:
    return self.store.get(a, self.env.init_tile(a))

  def step(self, cycle: int) -> tuple[int, int, int]:
    """This cycle's response (valid, we, data), and the ready to drive."""
    out = (0, 0, 0)
    if self.rsp and self.rsp[0][0] <= cycle:
      _, we, data = self.rsp.popleft()
      out = (1, we, data)
    room = len(self.rsp) < self.env.lat_param  # the responding one has left: at most LATENCY in flight after the edge
    self.ready = int(room and (self.ready_prob >= 1.0 or self.env.rng.random() < self.ready_prob))
    return out

  def accept(self, cycle: int, we: int, addr: int, data: int):
    out = 0
    if we: self.store[addr] = data
    else: out = self.read(addr)
    due = max(cycle + self.latency + (self.env.rng.randint(0, self.jitter) if self.jitter else 0), self.last_due + 1)
    self.last_due = due
    self.rsp.append((due, we, out))


class Cycle:
  """What the scoreboard and coverage see of one cycle."""
  __slots__ = ("n", "valid", "ready", "hbm_ready", "hbm_valid", "hbm_we", "hbm_addr", "hbm_wdata", "offers",
               "hbm_rsp", "hbm_rsp_we", "hbm_rsp_data", "rsp_valid", "rsp_we", "rsp_data", "inflight")


class ArbBus(uvm_component):
  def __init__(self, name, parent):
    super().__init__(name, parent)
    self.env = parent

  async def run_phase(self):
    e, d = self.env, self.env.dut
    for s in ("req_valid_i", "req_we_i", "req_addr_i", "req_wdata_i", "hbm_req_ready_i", "hbm_rsp_valid_i", "hbm_rsp_we_i", "hbm_rsp_rdata_i"):
      getattr(d, s).value = 0
    bits = e.lanes * 32
    while True:
      await FallingEdge(d.clk_i)
      e.cycle += 1
      offers = [r.step() for r in e.reqs]
      d.req_valid_i.value = sum(1 << i for i, q in enumerate(offers) if q is not None)
      d.req_we_i.value = sum(q.we << i for i, q in enumerate(offers) if q is not None)
      d.req_addr_i.value = sum(q.addr << (32 * i) for i, q in enumerate(offers) if q is not None)
      d.req_wdata_i.value = sum(q.wdata << (bits * i) for i, q in enumerate(offers) if q is not None)
      rv, rwe, rdata = e.hbm.step(e.cycle)
      d.hbm_rsp_valid_i.value, d.hbm_rsp_we_i.value, d.hbm_rsp_rdata_i.value = rv, rwe, rdata
      d.hbm_req_ready_i.value = e.hbm.ready
      await ReadOnly()
      if not int(d.rst_ni.value):
        continue
      c = Cycle()
      c.n, c.offers, c.hbm_ready = e.cycle, offers, e.hbm.ready
      c.valid = [q is not None for q in offers]
      rdy = int(d.req_ready_o.value)
      c.ready = [bool(rdy >> i & 1) for i in range(2)]
      c.hbm_valid, c.hbm_we = int(d.hbm_req_valid_o.value), int(d.hbm_req_we_o.value)
      c.hbm_addr, c.hbm_wdata = d.hbm_req_addr_o.value.to_unsigned(), d.hbm_req_wdata_o.value.to_unsigned()
      c.hbm_rsp, c.hbm_rsp_we, c.hbm_rsp_data = rv, rwe, rdata
      c.rsp_valid = int(d.rsp_valid_o.value)
      c.rsp_we, c.rsp_data = int(d.rsp_we_o.value), d.rsp_rdata_o.value.to_unsigned()
      c.inflight = len(e.hbm.rsp)
      e.cov.sample(c)  # before the judge moves the reference's priority on
      e.sb.judge(c)
      # the transfers of this cycle, as the requesters and the HBM see them
      if c.hbm_valid and e.hbm.ready:
        e.hbm.accept(e.cycle, c.hbm_we, c.hbm_addr, c.hbm_wdata)
      for r, q in zip(e.reqs, offers):
        if q is not None and c.ready[r.port]:
          q.accepted = e.cycle
          r.received.append(q)
          r.take()
      for i in range(2):
        if c.rsp_valid >> i & 1 and e.reqs[i].received:
          e.sb.delivered(i, e.reqs[i].received.popleft(), c)


class ArbScoreboard(kit.Scoreboard):
  """The contract, per cycle, from the reference's own priority and source FIFO (never the RTL's)."""
  def __init__(self, name, parent):
    super().__init__(name, parent)
    self.env = parent
    self.broken = getattr(parent.parent, "broken", False)
    self.last = 1 if self.broken else 0  # requester 0 counts as granted last out of reset: 1 wins the first conflict
    self.sources: collections.deque[HbmReq] = collections.deque()  # accepted requests, oldest first
    self.store: dict[int, int] = {}  # the sequential model of the HBM
    self.accepted = [0, 0]

  def pending(self) -> int:
    return len(self.sources) + sum(len(r.q) + (r.offered is not None) for r in self.env.reqs)

  def judge(self, c: Cycle):
    v0, v1 = c.valid
    win = 1 if v1 and (not v0 or not self.last) else 0
    exp_ready = [bool(c.hbm_ready) and not (v1 and not self.last), bool(c.hbm_ready) and not (v0 and self.last)]
    self.checked += 1
    if c.ready != exp_ready:
      self.error(f"cycle {c.n}: req_ready_o={c.ready}, expected {exp_ready} (valid={c.valid}, HBM ready={c.hbm_ready}, "
                 f"granted last: {self.last})")
    if c.hbm_valid != int(v0 or v1):
      self.error(f"cycle {c.n}: hbm_req_valid_o={c.hbm_valid} with requester valids {c.valid}")
    q = c.offers[win] if (v0 or v1) else None
    if q is not None and (c.hbm_we, c.hbm_addr, c.hbm_wdata) != (q.we, q.addr, q.wdata):
      self.error(f"cycle {c.n}: the HBM sees we={c.hbm_we} addr={c.hbm_addr}, the winner (requester {win}) offers {q}")
    # responses: routed in the cycle the HBM gives them, to the oldest accepted request's source
    exp_rsp = 0
    if c.hbm_rsp:
      if not self.sources:
        self.error(f"cycle {c.n}: an HBM response with nothing in flight (the model's fault)")
      else:
        exp_rsp = 1 << self.sources.popleft().src
    if c.rsp_valid != exp_rsp:
      self.error(f"cycle {c.n}: rsp_valid_o={c.rsp_valid:02b}, expected {exp_rsp:02b} (responses in acceptance order)")
    if exp_rsp and (c.rsp_we, c.rsp_data) != (c.hbm_rsp_we, c.hbm_rsp_data):
      self.error(f"cycle {c.n}: the response carries we={c.rsp_we} and other data than the HBM's")
    if q is not None and c.hbm_ready:  # accepted: the reference moves on
      self.last = win
      self.accepted[win] += 1
      self.sources.append(q)
      if q.we: self.store[q.addr] = q.wdata
      else: q.expect = self.store.get(q.addr, self.env.init_tile(q.addr))

  def delivered(self, port: int, q: HbmReq, c: Cycle):
    self.checked += 1
    if c.rsp_we != q.we or (not q.we and c.rsp_data != q.expect):
      self.error(f"cycle {c.n}: requester {port} got we={c.rsp_we} and other data for its oldest request {q} "
                 "(the sequential model of the store)")

  def check_phase(self):
    left = [len(r.received) for r in self.env.reqs]
    if self.sources or any(left):
      self.error(f"requests never answered: {len(self.sources)} in the reference, {left} per requester")
    self.logger.info(f"hbm_arb: {self.accepted[0]} + {self.accepted[1]} requests accepted, {self.checked} checks")
    super().check_phase()


class ArbCoverage(kit.CoverageCollector):
  unit = "hbm_arb"

  def define(self, cov):
    cov.cross("conflict", ["prio0", "prio1"], ["hbm_ready", "hbm_busy"])  # both valid, by who holds the priority
    cov.cross("lone", ["req0", "req1"], ["hbm_ready", "hbm_busy"])
    cov.cross("accept", ["req0", "req1"], ["read", "write"])
    cov.cross("response", ["req0", "req1"], ["read", "write"])
    lat = kit.params().get("LATENCY", 100)  # in flight: 0 .. LATENCY (the HBM's bound: "full")
    cov.bins("inflight", ["0"] + (["1"] if lat > 1 else []) + (["2+"] if lat > 2 else []) + ["full"])
    cov.bins("events", ["grants_alternate", "same_requester_back_to_back", "response_with_accept", "source_fifo_wraps"])

  def sample(self, c: Cycle):
    sb, hs = self.parent.sb, "hbm_ready" if c.hbm_ready else "hbm_busy"
    v0, v1 = c.valid
    if v0 and v1: self.cov.hit("conflict", (f"prio{1 - sb.last}", hs))  # the priority: the one not granted last
    elif v0 or v1: self.cov.hit("lone", (f"req{int(v1)}", hs))
    acc = next((i for i in range(2) if c.valid[i] and c.ready[i]), None)
    if acc is not None:
      self.cov.hit("accept", (f"req{acc}", "write" if c.offers[acc].we else "read"))
      prev = getattr(self, "_prev", None)
      if prev is not None and prev[0] == c.n - 1:
        if v0 and v1 and prev[1] != acc: self.cov.hit("events", "grants_alternate")
        if prev[1] == acc: self.cov.hit("events", "same_requester_back_to_back")
      self._prev = (c.n, acc)
      if c.hbm_rsp: self.cov.hit("events", "response_with_accept")
      if sum(sb.accepted) > 2 * self.parent.lat_param + 2: self.cov.hit("events", "source_fifo_wraps")
    if c.rsp_valid: self.cov.hit("response", (f"req{(c.rsp_valid >> 1) & 1}", "write" if c.rsp_we else "read"))
    n, full = c.inflight, self.parent.lat_param
    self.cov.hit("inflight", "full" if n >= full else "0" if n == 0 else "1" if n == 1 else "2+")


class ArbEnv(kit.Env):
  def build_phase(self):
    p = kit.params()
    self.n, self.lat_param = p.get("N", 4), p.get("LATENCY", 100)
    self.lanes = self.n * self.n
    self.cycle = 0
    self.salt = self.rng.getrandbits(32)
    self.reqs = [Requester(f"req{i}", self, i) for i in range(2)]
    self.seqrs = [uvm_sequencer(f"seqr{i}", self) for i in range(2)]
    self.hbm = HbmModel("hbm", self)
    self.hbm.latency = self.lat_param
    self.bus = ArbBus("bus", self)
    self.sb = ArbScoreboard("sb", self)
    self.cov = ArbCoverage("cov", self)

  def connect_phase(self):
    for r, s in zip(self.reqs, self.seqrs): r.seq_item_port.connect(s.seq_item_export)

  def init_tile(self, a: int) -> int:
    """A tile's value before anything wrote it: a hash of its address."""
    return random.Random(f"hbm:{a}:{self.salt}").getrandbits(self.lanes * 32)

  def settled(self) -> bool:
    return all(r.idle() for r in self.reqs) and not self.sb.sources
