"""DMA engine unit environment (rtl/dma.sv alone, doc/hbm.md "RTL").

The engine is driven at its own ports, with Python models on both sides instead of the real HBM and
VMEM, so the test controls what the core never does: HBM back-pressure at any rate, responses later
than the engine's sizing latency (its tag FIFO fills), and commands back to back in every order.

- `CmdDriver` takes `DmaCmd` items from its sequencer and offers each on the command port when the
  contract allows it (the SXU's part of the contract, doc/hbm.md "Interlocks", reduced to what
  request order does not give: a DMA.OUT never reads VMEM tiles an earlier DMA.IN still writes).
- `HbmModel`: a sparse tile store; a request is accepted when `hbm_req_ready_i` (random per cycle)
  is high; reads sample the store, writes update it, at acceptance; every request gets exactly one
  response, in request order, `latency` (+ optional jitter) cycles later, never refused.
- `VmemModel`: a tile store behind the engine's two VMEM ports: writes (`vm_*`, DMA.IN tiles) at
  the edge, reads (`vr_*`, DMA.OUT tiles) with their data on `vr_rdata_i` the next cycle.
- `DmaMonitor` publishes every command accepted, HBM request, HBM response, VMEM access and the
  per-cycle status (done_o, idle_o, tile_o).
- `DmaScoreboard` is the golden model: sequential copy semantics (each command applied whole, in
  command order, as golden/hbm.py does). From each accepted command it predicts the exact stream
  of HBM requests (direction, address, and a write's data) and of VMEM accesses (address, and a
  DMA.IN write's data), compares every observed one in order, checks done_o pulses at exactly the
  command's last response, idle_o against the commands outstanding, tile_o against the accepted
  requests, and at the end the models' whole VMEM and HBM against its own.
- `DmaCoverage`: command shapes per direction, strides, queue occupancy, back-to-back and
  direction-change commands, HBM back-pressure per direction, a full tag FIFO, a read response
  written to VMEM while a DMA.OUT walks, and in the same cycle as a DMA.OUT read."""
from __future__ import annotations

import collections
import random

from cocotb.triggers import FallingEdge, ReadOnly
from pyuvm import uvm_analysis_port, uvm_component, uvm_sequence, uvm_sequencer

from tinytpu import isa
from tinytpu.tb import kit


class DmaCmd(kit.Item):
  """One DMA command: out (1: VMEM -> HBM), vaddr, haddr (tiles), t (tiles a row), rows, hstride
  (signed), vstride. Set by the env: accepted (cycle)."""
  def __init__(self, name="cmd", out=0, vaddr=0, haddr=0, t=1, rows=1, hstride=0, vstride=0):
    super().__init__(name)
    self.out, self.vaddr, self.haddr, self.t, self.rows, self.hstride, self.vstride = out, vaddr, haddr, t, rows, hstride, vstride
    self.accepted = None

  def steps(self):
    """(VMEM tile, HBM tile) of every step, in the engine's order (rows, then tiles)."""
    for r in range(self.rows):
      for k in range(self.t):
        yield self.vaddr + r * self.vstride + k, self.haddr + r * self.hstride + k

  def vtiles(self) -> set[int]:
    return {v for v, _ in self.steps()}

  def __str__(self):
    return (f"DMA.{'OUT' if self.out else 'IN'}(v={self.vaddr} h={self.haddr} t={self.t} rows={self.rows} "
            f"hstride={self.hstride} vstride={self.vstride} accepted={self.accepted})")


class Xfer:
  """A monitored transfer: kind ("hreq", "hrsp", "vrd", "vwr"), we, addr, data, cycle."""
  __slots__ = ("kind", "we", "addr", "data", "cycle")

  def __init__(self, kind, we, addr, data, cycle):
    self.kind, self.we, self.addr, self.data, self.cycle = kind, we, addr, data, cycle

  def __str__(self):
    return f"{self.kind}(we={self.we} addr={self.addr} data=0x{self.data:x}"[:90] + f" cycle={self.cycle})"


class Status:
  __slots__ = ("cycle", "done", "idle", "tile", "cmd_wait", "hbm_wait", "hbm_wait_we", "inflight", "queued", "rsp_rd", "out_walking", "both_ports")


# ---------------------------------------------------------------------------------------------
# sequences
class RandomCmdSeq(uvm_sequence):
  """`count` random commands over a small VMEM and HBM window (so they overlap and chain), shapes
  from single tiles to 255-tile rows and many-row blocks, strides negative, zero, dense and gapped."""
  def __init__(self, name, env, count: int, vmem_tiles: int = 96, hbm_tiles: int = 512, p_out: float = 0.5, big: float = 0.1):
    super().__init__(name)
    self.env, self.count, self.vt, self.ht, self.p_out, self.big = env, count, vmem_tiles, hbm_tiles, p_out, big
    self.rng = random.Random(env.rng.getrandbits(32))

  def shape(self):
    r = self.rng
    if r.random() < self.big:
      return r.choice([255, r.randint(17, 254)]), r.choice([1, 1, 2, r.randint(2, 6), r.randint(7, 12)])
    t = r.choice([1, 1, 2, 3, 4, r.randint(1, 16)])
    rows = r.choice([1, 1, 2, r.randint(2, 6), r.randint(7, 24)])
    return t, rows

  async def body(self):
    r = self.rng
    for _ in range(self.count):
      t, rows = self.shape()
      vstride = r.choice([t, t, 0, t + r.randint(1, 4)]) if rows > 1 else 0
      hstride = r.choice([t, -t, 0, t + r.randint(1, 8), -(t + r.randint(1, 8))]) if rows > 1 else 0
      vspan = (rows - 1) * vstride + t
      vaddr = r.randrange(max(1, (self.vt if vspan <= self.vt else self.env.vmem_tiles) - vspan + 1))
      lo = max(0, -(rows - 1) * hstride)
      hi = max(lo + 1, self.ht - max(0, (rows - 1) * hstride) - t)
      haddr = r.randrange(lo, hi) if r.random() < 0.9 else (1 << 30) + r.randrange(64) + lo  # far tiles: wide addresses
      c = DmaCmd("cmd", int(r.random() < self.p_out), vaddr, haddr, t, rows, hstride, vstride)
      await self.start_item(c)
      await self.finish_item(c)


# ---------------------------------------------------------------------------------------------
# drivers and models (all stepped by DmaBus, at the falling edge, then sampled after it)
class CmdDriver(kit.QueueDriver):
  """Offers the oldest command once it may go: not while an earlier DMA.IN still to complete
  writes a VMEM tile a DMA.OUT would read. `gap_prob`: chance of holding a ready command a cycle."""
  def __init__(self, name, parent):
    super().__init__(name, parent)
    self.env = parent
    self.gap_prob = 0.0
    self.blocked = False

  def step(self) -> DmaCmd | None:
    self.offered, self.blocked = None, False
    if not self.q or (self.gap_prob and self.env.rng.random() < self.gap_prob):
      return None
    c = self.q[0]
    if c.out and c.vtiles() & self.env.sb.in_flight_in_vtiles():
      self.blocked = True
      return None
    self.offered = c
    return c

  def sample(self, ready: int):
    if self.offered is not None and ready and self.env.dut.cmd_valid_i.value:
      self.q.popleft()

  def idle(self) -> bool:
    return not self.q


class HbmModel(uvm_component):
  """The HBM side: sparse store (tile -> int), acceptance with back-pressure `ready_prob`, in-order
  responses `latency` (+ up to `jitter`) cycles after acceptance."""
  def __init__(self, name, parent):
    super().__init__(name, parent)
    self.env = parent
    self.store: dict[int, int] = {}
    self.ready_prob, self.latency, self.jitter = 1.0, 1, 0
    self.rsp: collections.deque = collections.deque()  # (cycle, we, data)
    self.ready = 1
    self.last_rsp = 0

  def read(self, a: int) -> int:
    return self.store.get(a, self.env.init_tile("hbm", a))

  def step(self, cycle: int):
    self.ready = int(self.ready_prob >= 1.0 or self.env.rng.random() < self.ready_prob)
    if self.rsp and self.rsp[0][0] <= cycle:
      _, we, data = self.rsp.popleft()
      return 1, we, data
    return 0, 0, 0

  def accept(self, cycle: int, we: int, addr: int, data: int):
    if we:
      self.store[addr] = data
      out = 0
    else:
      out = self.read(addr)
    due = max(cycle + self.latency + (self.env.rng.randint(0, self.jitter) if self.jitter else 0), self.last_rsp + 1)
    self.last_rsp = due
    self.rsp.append((due, we, out))


class VmemModel(uvm_component):
  """The VMEM DMA ports: writes at the edge, a read's data on vr_rdata_i the next cycle."""
  def __init__(self, name, parent):
    super().__init__(name, parent)
    self.env = parent
    self.store: dict[int, int] = {}
    self.rdata = 0

  def read(self, a: int) -> int:
    return self.store.get(a, self.env.init_tile("vmem", a))


class DmaBus(uvm_component):
  """The clock loop: at each falling edge every driver/model sets its inputs; after ReadOnly the
  transfers of this cycle are decided and published (the monitor's job, done here so that the
  models and the monitor see the same cycle)."""
  def __init__(self, name, parent):
    super().__init__(name, parent)
    self.env = parent
    self.xfer_ap, self.cmd_ap, self.st_ap = uvm_analysis_port("xfer_ap", self), uvm_analysis_port("cmd_ap", self), uvm_analysis_port("st_ap", self)

  async def run_phase(self):
    e, d = self.env, self.env.dut
    u = lambda h: h.value.to_unsigned()
    for s in ("cmd_valid_i", "cmd_out_i", "cmd_vaddr_i", "cmd_haddr_i", "cmd_t_i", "cmd_rows_i", "cmd_hstride_i", "cmd_vstride_i",
              "vr_rdata_i", "hbm_req_ready_i", "hbm_rsp_valid_i", "hbm_rsp_we_i", "hbm_rsp_rdata_i"):
      getattr(d, s).value = 0
    while True:
      await FallingEdge(d.clk_i)
      e.cycle += 1
      # the port's contract (dma.sv QueueNoOverflow): valid only while ready, which depends only on
      # the queue's registered count, so it is stable at the falling edge
      room = int(d.cmd_ready_o.value)
      c = e.drv.step()
      wait = c is not None and not room
      c = c if room else None
      d.cmd_valid_i.value = int(c is not None)
      if c is not None:
        d.cmd_out_i.value, d.cmd_vaddr_i.value, d.cmd_haddr_i.value = c.out, c.vaddr, c.haddr
        d.cmd_t_i.value, d.cmd_rows_i.value, d.cmd_hstride_i.value, d.cmd_vstride_i.value = c.t, c.rows, c.hstride & 0xFFFFFFFF, c.vstride
      rv, rwe, rdata = e.hbm.step(e.cycle)
      d.hbm_rsp_valid_i.value, d.hbm_rsp_we_i.value, d.hbm_rsp_rdata_i.value = rv, rwe, rdata
      d.hbm_req_ready_i.value = e.hbm.ready
      d.vr_rdata_i.value = e.vmem.rdata
      await ReadOnly()
      if not int(d.rst_ni.value):
        continue
      st = Status()
      st.cycle = e.cycle
      ready = int(d.cmd_ready_o.value)
      st.cmd_wait = wait
      if c is not None and ready:
        c.accepted = e.cycle
        self.cmd_ap.write(c)
      e.drv.sample(ready)
      if rv:
        self.xfer_ap.write(Xfer("hrsp", rwe, 0, rdata, e.cycle))
      hv = int(d.hbm_req_valid_o.value)
      st.hbm_wait, st.hbm_wait_we = bool(hv and not e.hbm.ready), int(d.hbm_req_we_o.value)
      if hv and e.hbm.ready:
        we, addr, data = int(d.hbm_req_we_o.value), u(d.hbm_req_addr_o), u(d.hbm_req_wdata_o)
        self.xfer_ap.write(Xfer("hreq", we, addr, data if we else 0, e.cycle))
        e.hbm.accept(e.cycle, we, addr, data)
      st.both_ports = bool(int(d.vm_req_o.value) and int(d.vr_req_o.value))
      if int(d.vr_req_o.value):  # the read samples the tile before this cycle's write
        addr = u(d.vr_addr_o)
        e.vmem.rdata = e.vmem.read(addr)
        self.xfer_ap.write(Xfer("vrd", 0, addr, 0, e.cycle))
      if int(d.vm_req_o.value):
        if not int(d.vm_we_o.value):
          e.sb.error(f"cycle {e.cycle}: a read on the VMEM write port (DMA.OUT reads use vr_*)")
        addr, data = u(d.vm_addr_o), u(d.vm_wdata_o)
        e.vmem.store[addr] = data
        self.xfer_ap.write(Xfer("vwr", 1, addr, data, e.cycle))
      st.done, st.idle, st.tile = int(d.done_o.value), int(d.idle_o.value), int(d.tile_o.value)
      if not st.idle:
        e.last_busy = e.cycle
      st.rsp_rd = bool(rv and not rwe)
      st.inflight, st.queued = len(e.hbm.rsp), e.sb.outstanding()
      st.out_walking = e.sb.vm_reads_due() > 0
      self.st_ap.write(st)


# ---------------------------------------------------------------------------------------------
# scoreboard: the golden model
class Expect:
  """What one command must do, predicted at its acceptance."""
  def __init__(self, cmd: DmaCmd):
    self.cmd = cmd
    self.hreq: collections.deque = collections.deque()  # (we, addr, data or None)
    self.vacc: collections.deque = collections.deque()  # (we, addr, data or None)
    self.responses = cmd.t * cmd.rows


class DmaScoreboard(kit.Scoreboard):
  """Sequential semantics: at acceptance a command is applied whole to the reference VMEM and HBM
  (golden/hbm.py's order: rows, then tiles; a later step of the same command sees the earlier
  ones), which fixes every request and VMEM access it must make. `broken`: the reference
  corrupts one tile (the DmaBrokenModel test must fail)."""
  def __init__(self, name, parent):
    super().__init__(name, parent)
    self.env = parent
    self.cmd_export = kit.Export("cmd_export", self, self.write_cmd)
    self.xfer_export = kit.Export("xfer_export", self, self.write_xfer)
    self.st_export = kit.Export("st_export", self, self.write_st)
    self.vmem: dict[int, int] = {}
    self.hbm: dict[int, int] = {}
    self.cmds: collections.deque[Expect] = collections.deque()  # accepted, not yet done
    self.hreq_cmds: collections.deque[Expect] = collections.deque()  # commands with requests still to come
    self.rsp_owner: collections.deque = collections.deque()  # per accepted request: (Expect, last?)
    self.vrd_due: collections.deque = collections.deque()    # VMEM reads still to come: (addr)
    self.vwr_due: collections.deque = collections.deque()    # VMEM writes still to come, in request order: (addr, data)
    self.tiles_accepted = 0
    self.done_due = 0   # done pulses owed this cycle (the last response of a command)
    self.completed = 0
    self.broken = getattr(parent.parent, "broken", False)

  def _v(self, a): return self.vmem.get(a, self.env.init_tile("vmem", a))
  def _h(self, a): return self.hbm.get(a, self.env.init_tile("hbm", a))

  def in_flight_in_vtiles(self) -> set[int]:
    s: set[int] = set()
    for x in self.cmds:
      if not x.cmd.out:
        s |= x.cmd.vtiles()
    return s

  def outstanding(self) -> int: return len(self.cmds)
  def vm_reads_due(self) -> int: return len(self.vrd_due)
  def pending(self) -> int: return len(self.cmds)

  def write_cmd(self, c: DmaCmd):
    x = Expect(c)
    for v, h in c.steps():
      if c.out:
        data = self._v(v)
        self.hbm[h] = data
        x.hreq.append((1, h, data))
        x.vacc.append((0, v, None))
      else:
        data = self._h(h)
        if self.broken and not self.vmem:
          data ^= 1
        self.vmem[v] = data
        x.hreq.append((0, h, None))
        x.vacc.append((1, v, data))
    self.cmds.append(x)
    self.hreq_cmds.append(x)
    self.vrd_due.extend(a for we, a, _ in x.vacc if not we)

  def write_xfer(self, t: Xfer):
    if t.kind == "hreq":
      while self.hreq_cmds and not self.hreq_cmds[0].hreq:
        self.hreq_cmds.popleft()
      if not self.hreq_cmds:
        return self.error(f"HBM request with no command left to make it: {t}")
      x = self.hreq_cmds[0]
      we, addr, data = x.hreq.popleft()
      self.checked += 1
      self.tiles_accepted += 1
      self.rsp_owner.append((x, not x.hreq))  # bookkeeping first: a mismatch must not derail what follows
      if not t.we and not x.cmd.out:  # its tile is written to VMEM when the response returns
        _, a, d = x.vacc.popleft()
        self.vwr_due.append((a, d))
      if (t.we, t.addr) != (we, addr):
        return self.error(f"{x.cmd}: HBM request {t}, expected we={we} addr={addr} (requests leave in command order, rows then tiles)")
      if we and t.data != data:
        return self.error(f"{x.cmd}: HBM write of tile {addr} carries the wrong data: {t.data:#x} != {data:#x}")
    elif t.kind == "hrsp":
      if not self.rsp_owner:
        return self.error(f"an HBM response with no request outstanding: {t}")
      x, last = self.rsp_owner.popleft()
      if last:
        self.done_due += 1
    elif t.kind == "vwr":
      if not self.vwr_due:
        return self.error(f"VMEM write with no DMA.IN tile due: {t}")
      addr, data = self.vwr_due.popleft()
      self.checked += 1
      if t.addr != addr or t.data != data:
        return self.error(f"VMEM write {t}: expected tile {addr} data {data:#x} (a DMA.IN tile goes to its own VMEM tile, in request order)")
    elif t.kind == "vrd":
      if not self.vrd_due:
        return self.error(f"VMEM read with no DMA.OUT tile due: {t}")
      addr = self.vrd_due.popleft()
      self.checked += 1
      if t.addr != addr:
        return self.error(f"VMEM read {t}: expected tile {addr} (a DMA.OUT reads its tiles in order)")

  def write_st(self, s: Status):
    if s.done != int(self.done_due > 0) or self.done_due > 1:
      self.error(f"cycle {s.cycle}: done_o={s.done}, but {self.done_due} commands had their last response this cycle")
    # idle_o: nothing queued, walking, buffered or in flight = every command accepted before this
    # cycle has completed before it (the one completing now still counts)
    busy = any(x.cmd.accepted < s.cycle for x in self.cmds)
    if s.idle == busy:
      self.error(f"cycle {s.cycle}: idle_o={s.idle} with {sum(x.cmd.accepted < s.cycle for x in self.cmds)} commands not complete")
    if self.done_due:
      self.done_due = 0
      self.cmds.popleft()
      self.completed += 1
    accepted = self.env.accept_cycle == s.cycle
    if s.tile != int(accepted):
      self.error(f"cycle {s.cycle}: tile_o={s.tile} but {'a' if accepted else 'no'} HBM request was accepted")

  def check_phase(self):
    if self.cmds:
      self.error(f"{len(self.cmds)} commands never completed; first {self.cmds[0].cmd}")
    for name, ref, got in (("VMEM", self.vmem, self.env.vmem), ("HBM", self.hbm, self.env.hbm)):
      for a in sorted(set(ref) | set(got.store)):
        if ref.get(a, self.env.init_tile(name.lower(), a)) != got.read(a):
          self.error(f"{name} tile {a} differs from the sequential model at the end")
          break
    self.logger.info(f"dma: {self.completed} commands completed, {self.tiles_accepted} HBM requests")
    super().check_phase()


# ---------------------------------------------------------------------------------------------
# coverage
def _t_class(t: int) -> str: return "1" if t == 1 else "255" if t == 255 else "2-16" if t <= 16 else "17-254"
def _rows_class(r: int) -> str: return "1" if r == 1 else "2-6" if r <= 6 else "7+"


def _stride_class(s: int, t: int) -> str:
  return "zero" if s == 0 else "dense" if s == t else "negative" if s < 0 else "gapped"


EVENTS = ["queue_full", "back_to_back", "in_after_out", "out_after_in", "hbm_backpressure_read", "hbm_backpressure_write",
          "tag_fifo_full", "read_response_while_out_walks", "out_read_with_in_write", "out_waits_for_in", "far_hbm_address"]


class DmaCoverage(kit.CoverageCollector):
  unit = "dma"

  def define(self, cov):
    cov.cross("shape", ["in", "out"], ["1", "2-16", "17-254", "255"], ["1", "2-6", "7+"])
    cov.cross("hstride", ["in", "out"], ["zero", "dense", "negative", "gapped"])
    cov.cross("vstride", ["in", "out"], ["zero", "dense", "gapped"])
    cov.bins("queued", range(1, isa.DMA_QDEPTH + 2))  # commands accepted and not complete (the queue plus the walker)
    cov.bins("events", EVENTS)

  def sample_cmd(self, c: DmaCmd):
    d = "out" if c.out else "in"
    self.cov.hit("shape", (d, _t_class(c.t), _rows_class(c.rows)))
    if c.rows > 1:
      self.cov.hit("hstride", (d, _stride_class(c.hstride, c.t)))
      self.cov.hit("vstride", (d, _stride_class(c.vstride, c.t)))
    prev = getattr(self, "_prev", None)
    if prev is not None and prev.accepted == c.accepted - 1:
      self.cov.hit("events", "back_to_back")
    if prev is not None and prev.out != c.out:
      self.cov.hit("events", "in_after_out" if prev.out else "out_after_in")
    if c.haddr >= 1 << 30:
      self.cov.hit("events", "far_hbm_address")
    self._prev = c

  def sample_st(self, s: Status):
    if s.queued:
      self.cov.hit("queued", min(s.queued, 5))
    if s.cmd_wait: self.cov.hit("events", "queue_full")
    if s.hbm_wait: self.cov.hit("events", "hbm_backpressure_write" if s.hbm_wait_we else "hbm_backpressure_read")
    if s.inflight >= self.parent.outs: self.cov.hit("events", "tag_fifo_full")
    if s.rsp_rd and s.out_walking: self.cov.hit("events", "read_response_while_out_walks")
    if s.both_ports: self.cov.hit("events", "out_read_with_in_write")
    if self.parent.drv.blocked: self.cov.hit("events", "out_waits_for_in")


class DmaEnv(kit.Env):
  def build_phase(self):
    p = kit.params()
    self.n, self.lat_param = p.get("N", 4), p.get("HBM_LATENCY", 100)
    self.outs = 1 << (self.lat_param + 2 - 1).bit_length()  # dma.sv's tag FIFO: OUTS = 2^clog2(LATENCY + 2)
    self.vmem_tiles = 1024
    self.cycle, self.accept_cycle, self.last_busy = 0, None, 0
    self.salt = self.rng.getrandbits(32)
    self.seqr = uvm_sequencer("seqr", self)
    self.drv = CmdDriver("drv", self)
    self.hbm = HbmModel("hbm", self)
    self.hbm.latency = self.lat_param
    self.vmem = VmemModel("vmem", self)
    self.bus = DmaBus("bus", self)
    self.sb = DmaScoreboard("sb", self)
    self.cov = DmaCoverage("cov", self)

  def connect_phase(self):
    self.drv.seq_item_port.connect(self.seqr.seq_item_export)
    self.bus.cmd_ap.connect(self.sb.cmd_export)
    self.bus.xfer_ap.connect(self.sb.xfer_export)
    self.bus.xfer_ap.connect(kit.Export("acc", self, self._note_accept))
    self.bus.st_ap.connect(self.sb.st_export)
    self.bus.cmd_ap.connect(self.cov.export(self.cov.sample_cmd))
    self.bus.st_ap.connect(self.cov.export(self.cov.sample_st))

  def _note_accept(self, t: Xfer):
    if t.kind == "hreq":
      self.accept_cycle = t.cycle

  def init_tile(self, mem: str, a: int) -> int:
    """A tile's value before anything wrote it: a hash of (memory, address), distinct everywhere."""
    r = random.Random(f"{mem}:{a}:{self.salt}")
    return r.getrandbits(self.n * self.n * 32)

  def settled(self) -> bool:
    return self.drv.idle() and not self.sb.pending()
