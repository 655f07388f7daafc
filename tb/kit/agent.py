"""A generic agent for the two handshakes every TinyTPU unit uses.

- valid/ready: a transfer happens at a rising edge where `valid` and `ready` are both high.
- start/done: `start` is a one-cycle pulse carrying the request; `done` (a pulse) carries the response.

Timing convention (race free on Verilator): drivers change DUT inputs at the falling edge, monitors
sample in the ReadOnly phase after the falling edge; a transfer seen there happens at the next
rising edge. A `Channel` maps item fields to DUT ports, so one driver/monitor serves every unit.
"""
from __future__ import annotations

import collections
import dataclasses
import random

import cocotb
import numpy as np
from cocotb.triggers import FallingEdge, ReadOnly, RisingEdge
from cocotb.utils import get_sim_time
from pyuvm import uvm_agent, uvm_analysis_export, uvm_analysis_port, uvm_component, uvm_driver, uvm_monitor, uvm_sequencer


class Sig:
  """An integer port (optionally read as signed)."""
  def __init__(self, name: str, signed: bool = False): self.name, self.signed = name, signed
  def handle(self, dut): return getattr(dut, self.name)
  def put(self, dut, v): self.handle(dut).value = int(v) & ((1 << len(self.handle(dut))) - 1)
  def zero(self, dut): self.handle(dut).value = 0  # all bits 0, whatever the field's encoding
  def get(self, dut):
    v = self.handle(dut).value
    if not hasattr(v, "to_unsigned"): return int(v)  # a 1-bit port reads as a Logic
    return v.to_signed() if self.signed else v.to_unsigned()


class Tile(Sig):
  """A packed N x N tile of 32-bit lanes: lane [r][c] at bits (r*N + c)*32 +: 32."""
  def put(self, dut, v): self.handle(dut).value = pack_tile(v)
  def get(self, dut):
    h = self.handle(dut)
    return unpack_tile(h.value.to_unsigned(), int(round((len(h) // 32) ** 0.5)))


class Vec(Sig):
  """A packed vector of `n` lanes of `w` bits (lane i at bits i*w +: w), read as a uint32 array."""
  def __init__(self, name: str, w: int = 32): super().__init__(name); self.w = w
  def put(self, dut, v): self.handle(dut).value = sum((int(x) & ((1 << self.w) - 1)) << (i * self.w) for i, x in enumerate(np.ravel(v)))
  def get(self, dut):
    h = self.handle(dut); raw = h.value.to_unsigned(); m = (1 << self.w) - 1
    return np.array([(raw >> (i * self.w)) & m for i in range(len(h) // self.w)], dtype=np.uint32)


def pack_tile(t) -> int:
  return int.from_bytes(np.ascontiguousarray(np.asarray(t, dtype=np.uint32).ravel()).astype("<u4").tobytes(), "little")


def unpack_tile(raw: int, n: int) -> np.ndarray:
  return np.frombuffer(raw.to_bytes(n * n * 4, "little"), dtype="<u4").astype(np.uint32).reshape(n, n)


@dataclasses.dataclass
class Channel:
  """How one interface maps onto DUT ports.
  fields: item field -> port (a name, or a Sig/Tile/Vec); item_cls: the item class monitors create;
  valid/ready: handshake port names (ready None = always ready); protocol: "valid_ready" or "start_done";
  ready_prob: for a sink channel (ready is a DUT input) the chance the agent drives ready high;
  observe: extra fields the monitor samples at each transfer but the driver never drives (e.g. busy)."""
  fields: dict
  item_cls: type
  valid: str | None = None
  ready: str | None = None
  protocol: str = "valid_ready"
  ready_prob: float = 1.0
  observe: dict = dataclasses.field(default_factory=dict)

  def ports(self, observed: bool = False) -> dict[str, Sig]:
    fs = {**self.fields, **self.observe} if observed else self.fields
    return {f: p if isinstance(p, Sig) else Sig(p) for f, p in fs.items()}


def clk(dut): return dut.clk_i


class Driver(uvm_driver):
  """Drives items of a valid/ready (or start/done) request channel. An item attribute `delay`
  (cycles) holds valid low before the item; back-to-back items keep valid high with no bubble."""
  def __init__(self, name, parent, channel: Channel, dut):
    super().__init__(name, parent)
    self.ch, self.dut, self.ports = channel, dut, channel.ports()

  def idle(self):
    if self.ch.valid: getattr(self.dut, self.ch.valid).value = 0

  async def run_phase(self):
    self.idle()
    for p in self.ports.values(): p.zero(self.dut)  # no field keeps a random start value (X-random runs)
    await FallingEdge(clk(self.dut))
    while True:
      self.idle()
      t = get_sim_time()
      item = await self.seq_item_port.get_next_item()
      if get_sim_time() != t: await FallingEdge(clk(self.dut))  # time passed: realign to a falling edge
      for _ in range(getattr(item, "delay", 0) or 0):
        await FallingEdge(clk(self.dut))
      for f, p in self.ports.items(): p.put(self.dut, getattr(item, f))
      if self.ch.valid: getattr(self.dut, self.ch.valid).value = 1
      if self.ch.protocol == "start_done" or not self.ch.ready:
        await FallingEdge(clk(self.dut))
      else:
        while True:
          await ReadOnly()
          ok = int(getattr(self.dut, self.ch.ready).value)
          await FallingEdge(clk(self.dut))
          if ok: break
      self.seq_item_port.item_done()


class QueueDriver(uvm_driver):
  """For benches that set the DUT's inputs cycle by cycle themselves (one loop for all ports) rather
  than a coroutine per channel: queues the items its sequencer sends (`accept` may stamp each one
  first), and the bench asks `step()` each cycle for the item on offer. The policy here: the oldest
  item once it has waited its `gap` cycles (an item attribute, 0 if none), offered until `take()`,
  as valid/ready requires (an offer is never withdrawn). Subclasses override `step` for another."""
  def __init__(self, name, parent):
    super().__init__(name, parent)
    self.q: collections.deque = collections.deque()
    self.offered = None
    self.waited = 0

  def accept(self, item) -> None:
    """An item arriving from the sequencer, before it is queued."""

  async def run_phase(self):
    while True:
      item = await self.seq_item_port.get_next_item()
      self.accept(item)
      self.q.append(item)
      self.seq_item_port.item_done()

  def step(self):
    if self.offered is None and self.q:
      if self.waited < (getattr(self.q[0], "gap", 0) or 0): self.waited += 1
      else: self.offered, self.waited = self.q.popleft(), 0
    return self.offered

  def take(self) -> None: self.offered = None
  def idle(self) -> bool: return not self.q and self.offered is None


class ReadyDriver(uvm_component):
  """For a response channel whose `ready` is a DUT input: toggles ready randomly (back-pressure)."""
  def __init__(self, name, parent, channel: Channel, dut, rng: random.Random):
    super().__init__(name, parent)
    self.ch, self.dut, self.rng = channel, dut, rng

  async def run_phase(self):
    r = getattr(self.dut, self.ch.ready)
    while True:
      r.value = int(self.ch.ready_prob >= 1.0 or self.rng.random() < self.ch.ready_prob)
      await FallingEdge(clk(self.dut))


class Monitor(uvm_monitor):
  """Publishes an item on `ap` for every transfer seen on the channel (valid & ready)."""
  def __init__(self, name, parent, channel: Channel, dut):
    super().__init__(name, parent)
    self.ch, self.dut, self.ports = channel, dut, channel.ports(observed=True)
    self.ap = uvm_analysis_port("ap", self)

  async def run_phase(self):
    d, cycle = self.dut, 0
    while True:
      await FallingEdge(clk(d))
      await ReadOnly()
      cycle += 1
      if self.ch.valid and not int(getattr(d, self.ch.valid).value): continue
      if self.ch.ready and self.ch.protocol == "valid_ready" and not int(getattr(d, self.ch.ready).value): continue
      item = self.ch.item_cls("mon")
      for f, p in self.ports.items(): setattr(item, f, p.get(d))
      item.cycle = cycle
      self.ap.write(item)


class Agent(uvm_agent):
  """Monitor always; sequencer + driver when active. `sink=True` makes the active part a
  ReadyDriver instead (a response channel that the testbench back-pressures)."""
  def __init__(self, name, parent, channel: Channel, dut, active: bool = True, sink: bool = False, rng=None):
    super().__init__(name, parent)
    self.ch, self.dut, self._active, self.sink, self.rng = channel, dut, active, sink, rng or random.Random(0)

  def build_phase(self):
    self.monitor = Monitor("monitor", self, self.ch, self.dut)
    self.ap = self.monitor.ap
    self.seqr = self.driver = None
    if self._active and self.sink:
      self.driver = ReadyDriver("ready", self, self.ch, self.dut, self.rng)
    elif self._active:
      self.seqr = uvm_sequencer("seqr", self)
      self.driver = Driver("driver", self, self.ch, self.dut)

  def connect_phase(self):
    if self.seqr is not None: self.driver.seq_item_port.connect(self.seqr.seq_item_export)

  def active(self): return self._active


class Export(uvm_analysis_export):
  """An analysis export that calls a function: lets one component subscribe to several monitors."""
  def __init__(self, name, parent, fn):
    super().__init__(name, parent); self.fn = fn
  def write(self, t): self.fn(t)


async def cycles(dut, n: int = 1):
  for _ in range(n): await RisingEdge(clk(dut))


def start_soon(coro): return cocotb.start_soon(coro)
