"""NoC endpoint unit environments: rtl/noc_core_ep.sv, rtl/noc_hbm_ep.sv and rtl/noc_sc_ep.sv alone
(doc/chip.md). On the chip they only ever see legal packets; here every port is driven with
random valid/ready timing and random junk on every field whose valid is low, and (in a build with
ASSERT_WELLFORMED = 0) malformed packets reach them at random times, so the sticky err_o path and
the drop of a malformed flit are observable.

- `Source` (a driver): a queue of items from its sequencer, each offered after its gap and held
  until taken (the DMA engine's and the SparseCore's HBM port; the request ring's eject port at
  the HBM node).
- `SxuModel`: a core's signals, offered only in a cycle where sig_ready_o is high (read 1 ns after
  the falling edge, once the DMA's request and the ring's ready have settled through it), as
  rtl/sxu.sv's SIG.SEND.
- `RingModel` (core and SparseCore endpoints): the ring's inject ready at random (`ready_prob`, with
  stalls), and every injected request answered in order on the response ring's eject port after a
  random delay (the ring plus the HBM); signals from other cores on the request ring's eject port.
- `HbmModel` (HBM endpoint): ready at random; each accepted request answered, in acceptance order
  and without back-pressure, HBM_LATENCY cycles later (rtl/hbm.sv), reads from a tile store.
- `*Scoreboard`: a cycle-accurate reference of the endpoint's header contract, fed with the
  inputs only (never the RTL's outputs): every output is compared each cycle (valid, ready, dst,
  tag, data), so a flit lost, duplicated, reordered or altered fails at once; err_o equals the
  reference's sticky flag (0 on legal traffic, 1 from the cycle after the first malformed flit).
  `broken` (a test attribute) makes the reference wrong on purpose and the test must fail.
- `*Coverage`: unit noc_ep, each endpoint's covergroups under its prefix (core_, hbm_, sc_)."""
from __future__ import annotations

import collections
import random

from cocotb.triggers import FallingEdge, ReadOnly, Timer
from pyuvm import uvm_component, uvm_sequence, uvm_sequencer

from tinytpu.tb import kit

K_READ, K_WRITE, K_SIG = 0, 1, 2
MASK32 = (1 << 32) - 1


def tag(kind: int, arg: int) -> int: return kind << 32 | (arg & MASK32)


class Flit(kit.Item):
  """A request (kind K_READ/K_WRITE, arg = HBM tile, data = the tile) or a signal (K_SIG, arg =
  flag, dst = the core); src set where a ring delivers it. `gap`: idle cycles before the offer."""
  def __init__(self, name="flit", kind=K_READ, arg=0, data=0, src=0, dst=0, gap=0):
    super().__init__(name)
    self.kind, self.arg, self.data, self.src, self.dst, self.gap = kind, arg, data, src, dst, gap

  @property
  def we(self) -> int: return int(self.kind == K_WRITE)

  def __str__(self): return f"{'RWS?'[self.kind]}(src={self.src} dst={self.dst} arg={self.arg:#x})"


class ReqSeq(uvm_sequence):
  """`count` HBM requests (a share `p_write` of writes) over a small tile window, with random gaps;
  `srcs`: the request ring's sources to draw from (the HBM endpoint's eject side)."""
  def __init__(self, name, env, count: int, p_write=0.5, max_gap=3, srcs=(0,)):
    super().__init__(name)
    self.env, self.count, self.p_write, self.max_gap, self.srcs = env, count, p_write, max_gap, srcs
    self.rng = random.Random(env.rng.getrandbits(32))

  async def body(self):
    r = self.rng
    for _ in range(self.count):
      f = Flit("req", K_WRITE if r.random() < self.p_write else K_READ, r.randrange(32) + r.choice([0, 0, 1 << 31]),
               src=r.choice(self.srcs), gap=r.choice([0, 0, 0, r.randint(0, self.max_gap)]) if self.max_gap else 0)
      f.data = r.getrandbits(self.env.pw) if f.we else 0
      await self.start_item(f)
      await self.finish_item(f)


class Source(kit.QueueDriver):
  """Offers its oldest item after that item's gap and holds it until `take()` (the kit's policy)."""


class Stim(uvm_component):
  """Random timing knobs and queues shared by the ring-side models of one env."""
  def __init__(self, name, parent):
    super().__init__(name, parent)
    self.env, self.rng = parent, parent.rng
    self.ready_prob, self.stall = 0.8, 0   # the ring's inject (or response inject) ready; forced-low cycles left
    self.rsp_delay = (1, 12)               # injected request -> its response on the eject port
    self.due: collections.deque = collections.deque()  # (cycle, Flit response)
    self.last_due = 0
    self.bad: collections.deque[Flit] = collections.deque()  # malformed flits the test queued
    self.sig_rate, self.sigs_left, self.sig_out = 0.0, 0, 0  # the SXU's signals / other cores' arrivals
    self.arrive_rate, self.arrive_left = 0.0, 0

  def ready(self) -> int:
    if self.stall: self.stall -= 1; return 0
    return int(self.ready_prob >= 1.0 or self.rng.random() < self.ready_prob)

  def answer(self, cycle: int, req: Flit, src: int):
    """Schedule the response to an injected request (the ring and the HBM, in order)."""
    lo, hi = self.rsp_delay
    due = max(cycle + self.rng.randint(lo, hi), self.last_due + self.rng.choice([1, 1, 2, 3]))
    self.last_due = due
    self.due.append((due, Flit("rsp", req.kind, 0, self.rng.getrandbits(self.env.pw), src=src)))

  def response(self, cycle: int) -> Flit | None:
    if self.due and self.due[0][0] <= cycle: return self.due.popleft()[1]
    return None

  def idle(self) -> bool: return not self.due and not self.bad and not self.sigs_left and not self.arrive_left


def junk(d, rng, pw, **widths):
  for n, w in widths.items(): getattr(d, n).value = rng.getrandbits(pw if w == 0 else w)


class EpScoreboard(kit.Scoreboard):
  """The common part: the sticky error flag and the per-cycle compare."""
  def __init__(self, name, parent):
    super().__init__(name, parent)
    self.env = parent
    self.broken = getattr(parent.parent, "broken", False)
    self.clear()

  def clear(self):
    self.err, self.err_cycle, self.bad_seen, self.inflight = 0, None, [], 0

  def expect(self, c: int, what: str, got, exp):
    self.checked += 1
    if got != exp: self.error(f"cycle {c}: {what} = {got:#x}, expected {exp:#x}" if isinstance(got, int) else f"cycle {c}: {what} = {got}, expected {exp}")

  def flag(self, c: int, why: str):
    """A malformed packet this cycle: err_o must be high from the next cycle on."""
    self.bad_seen.append((c, why))
    if not self.err: self.err_cycle = c + 1
    self.err = 1

  def pending(self) -> int: return max(0, self.inflight)

  def check_phase(self):
    if self.pending(): self.error(f"{self.pending()} requests never answered")
    self.logger.info(f"{self.env.dut._name}: {self.checked} checks, malformed packets {self.bad_seen[:4]}")
    super().check_phase()


class CoreEpScoreboard(EpScoreboard):
  def judge(self, c: int, i: dict, o: dict):
    e = self.env
    dma, sig, r, ej, rsp = i["dma"], i["sig"], i["ring_ready"], i["ej"], i["rsp"]
    self.expect(c, "err_o", o["err_o"], self.err)
    self.expect(c, "hbm_req_ready_o", o["hbm_req_ready_o"], r)
    self.expect(c, "sig_ready_o", o["sig_ready_o"], int(r and dma is None))
    self.expect(c, "req_inj_valid_o", o["req_inj_valid_o"], int(dma is not None or sig is not None))
    f = dma if dma is not None else sig
    if f is not None:
      dst = e.hbm_node if dma is not None else f.dst
      if self.broken: dst ^= 1
      exp = (dst, tag(f.kind, f.arg), f.data if f.kind == K_WRITE else 0)  # a read's or signal's payload is 0
      self.expect(c, "request flit (dst, tag, data)", (o["req_inj_dst_o"], o["req_inj_tag_o"], o["req_inj_data_o"]), exp)
    self.expect(c, "req_ej_ready_o", o["req_ej_ready_o"], 1)
    self.expect(c, "rsp_ej_ready_o", o["rsp_ej_ready_o"], 1)
    self.expect(c, "hbm_rsp_valid_o", o["hbm_rsp_valid_o"], int(rsp is not None))
    self.expect(c, "hbm_rsp_we_o", o["hbm_rsp_we_o"], rsp.we if rsp else 0)  # rtl/hbm.sv's port: we only with a response
    if rsp is not None: self.expect(c, "hbm_rsp_rdata_o", o["hbm_rsp_rdata_o"], rsp.data)
    bad = ej is not None and (ej.kind != K_SIG or ej.src >= e.cores)
    self.expect(c, "sig_rx_valid_o", o["sig_rx_valid_o"], int(ej is not None and not bad))
    if ej is not None and not bad: self.expect(c, "sig_rx_flag_o", o["sig_rx_flag_o"], ej.arg & ((1 << e.flag_w) - 1))
    if bad: self.flag(c, f"{ej} at a core")


class HbmEpScoreboard(EpScoreboard):
  def clear(self):
    super().clear()
    self.buf: collections.deque[list] = collections.deque()  # [src, filled, we, data] per accepted request, oldest first

  def pending(self) -> int: return len(self.buf)

  def judge(self, c: int, i: dict, o: dict):
    e = self.env
    f, hrdy, rrdy, hrsp = i["ej"], i["hbm_ready"], i["rsp_ready"], i["hbm_rsp"]
    self.expect(c, "err_o", o["err_o"], self.err)
    room = len(self.buf) < e.depth
    sig = f is not None and f.kind == K_SIG
    hv = int(f is not None and not sig and room)
    self.expect(c, "hbm_req_valid_o", o["hbm_req_valid_o"], hv)
    if hv: self.expect(c, "HBM request (we, addr, wdata)", (o["hbm_req_we_o"], o["hbm_req_addr_o"], o["hbm_req_wdata_o"]), (f.we, f.arg, f.data))
    taken = f is not None and (sig or (room and hrdy))
    if f is not None: self.expect(c, "req_ej_ready_o", o["req_ej_ready_o"], int(taken))
    head = self.buf[0] if self.buf and self.buf[0][1] else None
    self.expect(c, "rsp_inj_valid_o", o["rsp_inj_valid_o"], int(head is not None))
    if head is not None:
      exp = (head[0] ^ (1 if self.broken else 0), head[2], head[3])
      self.expect(c, "response flit (dst, tag, data)", (o["rsp_inj_dst_o"], o["rsp_inj_tag_o"], o["rsp_inj_data_o"]), exp)
      if rrdy: self.buf.popleft()
    if hrsp is not None:  # the HBM's answer fills the oldest unfilled entry (visible next cycle)
      ent = next((b for b in self.buf if not b[1]), None)
      if ent is None: self.error(f"cycle {c}: an HBM response with no entry booked (the model's fault)")
      else: ent[1:] = [True, hrsp.we, hrsp.data]
    if hv and hrdy: self.buf.append([f.src, False, 0, 0])
    if sig: self.flag(c, f"{f} at the HBM")
    return taken, bool(hv and hrdy)


class ScEpScoreboard(EpScoreboard):
  def judge(self, c: int, i: dict, o: dict):
    e = self.env
    q, r, ej, rsp = i["sc"], i["ring_ready"], i["ej"], i["rsp"]
    self.expect(c, "err_o", o["err_o"], self.err)
    self.expect(c, "hbm_req_ready_o", o["hbm_req_ready_o"], r)
    self.expect(c, "req_inj_valid_o", o["req_inj_valid_o"], int(q is not None))
    if q is not None:
      exp = (e.hbm_node ^ (1 if self.broken else 0), tag(q.kind, q.arg), q.data if q.we else 0)
      self.expect(c, "request flit (dst, tag, data)", (o["req_inj_dst_o"], o["req_inj_tag_o"], o["req_inj_data_o"]), exp)
    self.expect(c, "req_ej_ready_o", o["req_ej_ready_o"], 1)
    self.expect(c, "rsp_ej_ready_o", o["rsp_ej_ready_o"], 1)
    self.expect(c, "hbm_rsp_valid_o", o["hbm_rsp_valid_o"], int(rsp is not None))  # every response reaches the SparseCore
    self.expect(c, "hbm_rsp_we_o", o["hbm_rsp_we_o"], rsp.we if rsp else 0)
    if rsp is not None: self.expect(c, "hbm_rsp_rdata_o", o["hbm_rsp_rdata_o"], rsp.data)
    if ej: self.flag(c, "a request-ring flit at the SparseCore")
    if rsp is not None and rsp.src != e.hbm_node: self.flag(c, f"a response from node {rsp.src}")
    elif rsp is not None and self.inflight == 0: self.flag(c, "a response with nothing in flight")
    self.inflight += int(q is not None and bool(r)) - int(rsp is not None)


class EpCoverage(kit.CoverageCollector):
  """Unit noc_ep: each endpoint's groups carry its prefix (core_, hbm_, sc_); the `*_malformed`
  bins are hit only in the ASSERT_WELLFORMED = 0 builds."""
  unit = "noc_ep"


class CoreEpCoverage(EpCoverage):
  def define(self, cov):
    cov.bins("core_malformed", ["not_a_signal", "from_a_non_core"])
    cov.cross("core_inject", ["hbm_read", "hbm_write", "signal"], ["taken", "held"])
    cov.bins("core_eject", ["signal", "response_read", "response_write"])
    cov.bins("core_events", ["signal_and_hbm_offered", "signal_and_response_same_cycle", "inject_and_eject_same_cycle", "ring_stall"])

  def sample(self, i: dict):
    dma, sig, r, ej, rsp = i["dma"], i["sig"], i["ring_ready"], i["ej"], i["rsp"]
    f = dma if dma is not None else sig
    if f is not None: self.cov.hit("core_inject", ("signal" if dma is None else "hbm_write" if f.we else "hbm_read", "taken" if r else "held"))
    good = ej is not None and ej.kind == K_SIG and ej.src < self.parent.cores
    if good: self.cov.hit("core_eject", "signal")
    elif ej is not None: self.cov.hit("core_malformed", "not_a_signal" if ej.kind != K_SIG else "from_a_non_core")
    if rsp is not None: self.cov.hit("core_eject", "response_write" if rsp.we else "response_read")
    if dma is not None and self.parent.sxu.pending(): self.cov.hit("core_events", "signal_and_hbm_offered")
    if good and rsp is not None: self.cov.hit("core_events", "signal_and_response_same_cycle")
    if f is not None and r and (ej is not None or rsp is not None): self.cov.hit("core_events", "inject_and_eject_same_cycle")
    if f is not None and self.parent.stim.stall: self.cov.hit("core_events", "ring_stall")


class HbmEpCoverage(EpCoverage):
  def define(self, cov):
    cov.bins("hbm_malformed", ["signal"])
    cov.cross("hbm_request", ["read", "write"], ["accepted", "hbm_busy", "buffer_full"])
    cov.bins("hbm_buffer", ["empty", "one", "some", "full"])
    cov.bins("hbm_events", ["accept_and_send_same_cycle", "fill_and_send_same_cycle", "response_held", "sources_interleave"])

  def sample(self, i: dict, acc: bool, sent: bool):
    sb, f = self.parent.sb, i["ej"]
    n, depth = len(sb.buf), self.parent.depth
    self.cov.hit("hbm_buffer", "empty" if n == 0 else "one" if n == 1 else "full" if n >= depth else "some")
    if f is not None and f.kind == K_SIG: self.cov.hit("hbm_malformed", "signal")
    elif f is not None: self.cov.hit("hbm_request", ("write" if f.we else "read", "accepted" if acc else "buffer_full" if n >= depth else "hbm_busy"))
    if acc and sent: self.cov.hit("hbm_events", "accept_and_send_same_cycle")
    if i["hbm_rsp"] is not None and sent: self.cov.hit("hbm_events", "fill_and_send_same_cycle")
    if sb.buf and sb.buf[0][1] and not i["rsp_ready"]: self.cov.hit("hbm_events", "response_held")
    if acc:
      if getattr(self, "_last_src", f.src) != f.src: self.cov.hit("hbm_events", "sources_interleave")
      self._last_src = f.src


class ScEpCoverage(EpCoverage):
  def define(self, cov):
    cov.bins("sc_malformed", ["request_ring_flit", "response_from_other_node", "response_nothing_in_flight"])
    cov.cross("sc_request", ["read", "write"], ["taken", "held"])
    cov.bins("sc_response", ["read", "write"])
    cov.bins("sc_inflight", ["0", "1", "2+", "8+"])
    cov.bins("sc_events", ["request_and_response_same_cycle", "ring_stall"])

  def sample(self, i: dict):
    sb, q, rsp = self.parent.sb, i["sc"], i["rsp"]
    if q is not None: self.cov.hit("sc_request", ("write" if q.we else "read", "taken" if i["ring_ready"] else "held"))
    if rsp is not None:
      self.cov.hit("sc_response", "write" if rsp.we else "read")
      if rsp.src != self.parent.hbm_node: self.cov.hit("sc_malformed", "response_from_other_node")
      elif sb.inflight == 0: self.cov.hit("sc_malformed", "response_nothing_in_flight")
      if q is not None and i["ring_ready"]: self.cov.hit("sc_events", "request_and_response_same_cycle")
    if i["ej"]: self.cov.hit("sc_malformed", "request_ring_flit")
    n = sb.inflight
    self.cov.hit("sc_inflight", "0" if n == 0 else "1" if n == 1 else "8+" if n >= 8 else "2+")
    if q is not None and self.parent.stim.stall: self.cov.hit("sc_events", "ring_stall")


class SxuModel(uvm_component):
  """SIG.SEND: `left` signals to random cores with random flags, each offered (with chance `rate`)
  only in a cycle where sig_ready_o is high."""
  def __init__(self, name, parent):
    super().__init__(name, parent)
    self.env, self.rate, self.left, self.sent = parent, 0.0, 0, 0

  def pending(self) -> bool: return self.left > 0

  def step(self, ready: bool) -> Flit | None:
    e = self.env
    if self.left and ready and e.rng.random() < self.rate:
      self.left -= 1
      self.sent += 1
      return Flit("sig", K_SIG, e.rng.getrandbits(e.flag_w), dst=e.rng.randrange(e.cores))
    return None


def outs(d, names) -> dict:
  return {n: int(getattr(d, n).value) for n in names}


class EpEnv(kit.Env):
  """The parts every endpoint env has; subclasses add the bus loop (`cycle_loop`)."""
  def build_phase(self):
    p = kit.params()
    self.n, self.cores, self.hbm_node = p.get("N", 4), p.get("CORES", 2), p.get("HBM_NODE", 2)
    self.flag_w, self.latency = p.get("FLAG_W", 3), p.get("HBM_LATENCY", 100)
    self.depth = 1 << (self.latency + 4 - 1).bit_length()
    self.pw = self.n * self.n * 32
    self.cycle = 0
    self.src = Source("src", self)
    self.seqr = uvm_sequencer("seqr", self)
    self.stim = Stim("stim", self)
    self.sb = self.sb_cls("sb", self)
    self.cov = self.cov_cls("cov", self)

  def connect_phase(self):
    self.src.seq_item_port.connect(self.seqr.seq_item_export)

  def settled(self) -> bool:
    return self.src.idle() and self.stim.idle() and not self.sb.pending()

  async def run_phase(self):
    d = self.dut
    while True:
      await FallingEdge(d.clk_i)
      if not int(d.rst_ni.value):
        self.sb.clear()
        self.quiet()
        await ReadOnly()
        for s in ("err_o",) + self.VALIDS: self.sb.expect(self.cycle, f"{s} in reset", int(getattr(d, s).value), 0)
        continue
      self.cycle += 1
      await self.cycle_step(d)


class CoreEpEnv(EpEnv):
  sb_cls, cov_cls = CoreEpScoreboard, CoreEpCoverage
  VALIDS = ("req_inj_valid_o", "hbm_rsp_valid_o", "sig_rx_valid_o")
  OUTS = ("err_o", "hbm_req_ready_o", "sig_ready_o", "req_inj_valid_o", "req_inj_dst_o", "req_inj_tag_o", "req_inj_data_o", "req_ej_ready_o",
          "rsp_ej_ready_o", "hbm_rsp_valid_o", "hbm_rsp_we_o", "hbm_rsp_rdata_o", "sig_rx_valid_o", "sig_rx_flag_o")

  def build_phase(self):
    super().build_phase()
    self.sxu = SxuModel("sxu", self)

  def settled(self) -> bool: return super().settled() and not self.sxu.left

  def quiet(self):
    d = self.dut
    for s in ("hbm_req_valid_i", "sig_valid_i", "req_inj_ready_i", "req_ej_valid_i", "rsp_ej_valid_i"): getattr(d, s).value = 0
    junk(d, self.rng, self.pw, hbm_req_we_i=1, hbm_req_addr_i=32, hbm_req_wdata_i=0, sig_core_i=4, sig_flag_i=self.flag_w,
         req_ej_src_i=4, req_ej_tag_i=34, rsp_ej_tag_i=1, rsp_ej_data_i=0)

  async def cycle_step(self, d):
    st, rng, c = self.stim, self.rng, self.cycle
    self.quiet()
    dma, r = self.src.step(), st.ready()
    d.req_inj_ready_i.value = r
    if dma is not None:
      d.hbm_req_valid_i.value, d.hbm_req_we_i.value, d.hbm_req_addr_i.value, d.hbm_req_wdata_i.value = 1, dma.we, dma.arg, dma.data
    ej = st.bad.popleft() if st.bad and rng.random() < 0.3 else None
    if ej is None and st.arrive_left and rng.random() < st.arrive_rate:
      st.arrive_left -= 1
      ej = Flit("sig", K_SIG, rng.getrandbits(self.flag_w), src=rng.randrange(self.cores))
    if ej is not None: d.req_ej_valid_i.value, d.req_ej_src_i.value, d.req_ej_tag_i.value = 1, ej.src, tag(ej.kind, ej.arg)
    rsp = st.response(c)
    if rsp is not None: d.rsp_ej_valid_i.value, d.rsp_ej_tag_i.value, d.rsp_ej_data_i.value = 1, rsp.we, rsp.data
    await Timer(1, "ns")  # sig_ready_o settles through the DMA's valid and the ring's ready
    sig = self.sxu.step(bool(d.sig_ready_o.value))
    if sig is not None: d.sig_valid_i.value, d.sig_core_i.value, d.sig_flag_i.value = 1, sig.dst, sig.arg
    await ReadOnly()
    if not int(d.rst_ni.value): return  # a reset asserted at this edge
    i = {"dma": dma, "sig": sig, "ring_ready": r, "ej": ej, "rsp": rsp}
    self.cov.sample(i)
    self.sb.judge(c, i, outs(d, self.OUTS))
    if dma is not None and r:  # the model's transfer: the ring took the DMA's request; its answer comes back
      self.src.take()
      st.answer(c, dma, self.hbm_node)
      self.sb.inflight += 1
    if rsp is not None: self.sb.inflight -= 1


class HbmModel(uvm_component):
  def __init__(self, name, parent):
    super().__init__(name, parent)
    self.env, self.ready_prob, self.store = parent, 0.8, {}
    self.rsp: collections.deque = collections.deque()  # (due, Flit)

  def step(self, c: int) -> tuple[int, Flit | None]:
    out = self.rsp.popleft()[1] if self.rsp and self.rsp[0][0] <= c else None
    return int(self.ready_prob >= 1.0 or self.env.rng.random() < self.ready_prob), out

  def accept(self, c: int, we: int, addr: int, data: int):
    if we: self.store[addr] = data
    val = data if we else self.store.get(addr, random.Random(f"{addr}").getrandbits(self.env.pw))
    self.rsp.append((c + self.env.latency, Flit("ans", K_WRITE if we else K_READ, addr, self.env.rng.getrandbits(self.env.pw) if we else val)))


class HbmEpEnv(EpEnv):
  sb_cls, cov_cls = HbmEpScoreboard, HbmEpCoverage
  VALIDS = ("hbm_req_valid_o", "rsp_inj_valid_o")
  OUTS = ("err_o", "req_ej_ready_o", "hbm_req_valid_o", "hbm_req_we_o", "hbm_req_addr_o", "hbm_req_wdata_o",
          "rsp_inj_valid_o", "rsp_inj_dst_o", "rsp_inj_tag_o", "rsp_inj_data_o")

  def build_phase(self):
    super().build_phase()
    self.hbm = HbmModel("hbm", self)

  def settled(self) -> bool: return super().settled() and not self.hbm.rsp

  def quiet(self):
    d = self.dut
    for s in ("req_ej_valid_i", "hbm_req_ready_i", "hbm_rsp_valid_i", "rsp_inj_ready_i"): getattr(d, s).value = 0
    junk(d, self.rng, self.pw, req_ej_src_i=4, req_ej_tag_i=34, req_ej_data_i=0, hbm_rsp_we_i=1, hbm_rsp_rdata_i=0)

  async def cycle_step(self, d):
    st, c = self.stim, self.cycle
    self.quiet()
    f = self.src.step()
    if f is None and st.bad and self.rng.random() < 0.3: f = self.src.offered = st.bad.popleft()
    if f is not None: d.req_ej_valid_i.value, d.req_ej_src_i.value, d.req_ej_tag_i.value, d.req_ej_data_i.value = 1, f.src, tag(f.kind, f.arg), f.data
    hrdy, hrsp = self.hbm.step(c)
    d.hbm_req_ready_i.value = hrdy
    if hrsp is not None: d.hbm_rsp_valid_i.value, d.hbm_rsp_we_i.value, d.hbm_rsp_rdata_i.value = 1, hrsp.we, hrsp.data
    rrdy = st.ready()
    d.rsp_inj_ready_i.value = rrdy
    await ReadOnly()
    if not int(d.rst_ni.value): return  # a reset asserted at this edge
    i = {"ej": f, "hbm_ready": hrdy, "rsp_ready": rrdy, "hbm_rsp": hrsp}
    o = outs(d, self.OUTS)
    send = bool(self.sb.buf and self.sb.buf[0][1] and rrdy)
    taken, acc = self.sb.judge(c, i, o)
    self.cov.sample(i, acc, send)
    if taken: self.src.take()
    if o["hbm_req_valid_o"] and hrdy:  # the HBM serves what the RTL asks (its answer is the stimulus)
      self.hbm.accept(c, o["hbm_req_we_o"], o["hbm_req_addr_o"], o["hbm_req_wdata_o"])


class ScEpEnv(EpEnv):
  sb_cls, cov_cls = ScEpScoreboard, ScEpCoverage
  VALIDS = ("req_inj_valid_o", "hbm_rsp_valid_o")
  OUTS = ("err_o", "hbm_req_ready_o", "req_inj_valid_o", "req_inj_dst_o", "req_inj_tag_o", "req_inj_data_o", "req_ej_ready_o",
          "rsp_ej_ready_o", "hbm_rsp_valid_o", "hbm_rsp_we_o", "hbm_rsp_rdata_o")

  def quiet(self):
    d = self.dut
    for s in ("hbm_req_valid_i", "req_inj_ready_i", "req_ej_valid_i", "rsp_ej_valid_i"): getattr(d, s).value = 0
    junk(d, self.rng, self.pw, hbm_req_we_i=1, hbm_req_addr_i=32, hbm_req_wdata_i=0, rsp_ej_src_i=4, rsp_ej_tag_i=1, rsp_ej_data_i=0)

  async def cycle_step(self, d):
    st, c = self.stim, self.cycle
    self.quiet()
    q, r = self.src.step(), st.ready()
    d.req_inj_ready_i.value = r
    if q is not None: d.hbm_req_valid_i.value, d.hbm_req_we_i.value, d.hbm_req_addr_i.value, d.hbm_req_wdata_i.value = 1, q.we, q.arg, q.data
    rsp = st.response(c)
    ej = False
    if st.bad and self.rng.random() < 0.3:
      b = st.bad[0]
      if b.kind == K_SIG: st.bad.popleft(); ej = True  # a request-ring flit: on its own port
      elif rsp is None: rsp = st.bad.popleft()          # a response the HBM did not send
    d.req_ej_valid_i.value = int(ej)
    if rsp is not None: d.rsp_ej_valid_i.value, d.rsp_ej_src_i.value, d.rsp_ej_tag_i.value, d.rsp_ej_data_i.value = 1, rsp.src, rsp.we, rsp.data
    await ReadOnly()
    if not int(d.rst_ni.value): return  # a reset asserted at this edge
    i = {"sc": q, "ring_ready": r, "ej": ej, "rsp": rsp}
    self.cov.sample(i)
    self.sb.judge(c, i, outs(d, self.OUTS))
    if q is not None and r:
      self.src.take()
      st.answer(c, q, self.hbm_node)
