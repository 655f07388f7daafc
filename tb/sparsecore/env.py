"""SparseCore unit environment (rtl/sparsecore.sv, doc/sparsecore.md).

- A command driver: takes EmbCmd items (a lookup with its table and index list), preloads both into
  the HBM model (zero time), waits until the SparseCore is idle, offers the command for one cycle
  and publishes it.
- An HBM model on the SparseCore's HBM port (rtl/hbm.sv's protocol): random back-pressure on ready
  (a probability per command), a latency per command (1 .. the DUT's HBM_LATENCY), reads and
  writes taking effect at acceptance, responses in order without back-pressure; it publishes every
  write and every check result (chk_valid_o).
- A scoreboard: per command the golden (golden/sparsecore.py on a copy of the model's HBM) predicts
  the check result and every pooled tile; the DUT's check result must match, its writes must be
  exactly the predicted tiles (each once, nothing else) before the next command.
- Coverage: bag sizes, row widths, repeated indices, int/fp, good/bad lists, index lists over
  several buffer fills and partial last tiles, back-pressure, crosses of mode x bag and width."""
from __future__ import annotations

import collections
import copy

import numpy as np
from cocotb.triggers import FallingEdge, ReadOnly
from pyuvm import uvm_analysis_port, uvm_component, uvm_driver, uvm_sequencer

from tinytpu.golden import hbm as ghbm
from tinytpu.golden import sparsecore as gsc
from tinytpu.tb import kit
from tinytpu.tb.kit.scoreboard import _diff

HBM_TILES = 1 << 16


class EmbCmd(kit.Item):
  """One lookup. Fields: fp, tbase, rows, width, bag, bags, idx, dst, table ((rows, width, N, N)
  uint32), indices (int64, bags*bag), ready_prob and latency of the HBM model during it."""
  def __init__(self, name="emb", **kw):
    super().__init__(name)
    for k, v in kw.items(): setattr(self, k, v)

  def __str__(self):
    return (f"EmbCmd(fp={self.fp} tbase={self.tbase} rows={self.rows} width={self.width} bag={self.bag} bags={self.bags} "
            f"idx={self.idx} dst={self.dst} indices={list(self.indices[:8])}{'...' if len(self.indices) > 8 else ''} "
            f"ready={self.ready_prob} latency={self.latency})")


def make_cmd(rng, N: int, max_latency: int, fp=None, width=None, bag=None, bags=None, rows=None, bad=False, ready=None) -> EmbCmd:
  L = N * N
  fp = rng.random() < .5 if fp is None else fp
  width = rng.choice([1, 1, 2, 3, 4, 16]) if width is None else width
  bag = rng.choice([1, 2, 3, 5, L, L + 1, 40]) if bag is None else bag
  bags = rng.choice([1, 2, 3, 7, 12]) if bags is None else bags
  rows = rng.randrange(1, 60) if rows is None else rows
  if fp:
    t = np.array([rng.choice([rng.gauss(0, 1), rng.gauss(0, 1e30), 0.0, -0.0, float("inf"), -float("inf"), float("nan"), 1e-45, -3e-39])
                  for _ in range(rows * width * L)], np.float32).view(np.uint32)
  else:
    t = np.array([rng.choice([rng.getrandbits(32), rng.randrange(16), 0xFFFFFFFF, 0x7FFFFFFF, 0x80000000]) for _ in range(rows * width * L)], np.uint32)
  ind = np.array([rng.randrange(rows) for _ in range(bags * bag)], np.int64)
  if rng.random() < .4 and len(ind) > 1: ind[1::2] = ind[0]  # repeated indices
  if bad:  # one index out of range, somewhere (the last lane of the list now and then)
    k = len(ind) - 1 if rng.random() < .3 else rng.randrange(len(ind))
    ind[k] = rng.choice([rows, rows + 1, -1, 1 << 31, 0x7FFFFFFF]) if rng.random() < .8 else -(1 << 31)
  itiles = -(-len(ind) // L)
  tbase = rng.randrange(0, 2000)
  idx = tbase + rows * width + rng.randrange(0, 5)
  dst = idx + itiles + rng.randrange(0, 5)
  return EmbCmd(fp=fp, tbase=tbase, rows=rows, width=width, bag=bag, bags=bags, idx=idx, dst=dst,
                table=t.reshape(rows, width, N, N), indices=ind,
                ready_prob=rng.choice([1.0, 1.0, 0.7, 0.3]) if ready is None else ready, latency=rng.randrange(1, max_latency + 1))


class HbmModel(uvm_component):
  """The HBM on the DUT's port; see the module doc. `store`: golden/hbm.py's sparse tiles."""
  def __init__(self, name, parent):
    super().__init__(name, parent)
    self.ap = uvm_analysis_port("ap", self)         # ("write", addr, tile) and ("check", bad)
    self.bp_ap = uvm_analysis_port("bp_ap", self)   # a request held by ready = 0 (back-pressure)

  def build_phase(self):
    self.dut, self.N = self.parent.dut, self.parent.N
    self.store = ghbm.HBM(HBM_TILES, self.N)
    self.rng = self.parent.rng
    self.ready_prob, self.latency = 1.0, 1
    self.q: collections.deque = collections.deque()  # (due cycle, we, data)
    self.cycle = 0

  def tile(self, sig) -> np.ndarray:
    return kit.unpack_tile(int(sig.value), self.N)

  async def run_phase(self):
    d = self.dut
    while True:
      await FallingEdge(d.clk_i)
      self.cycle += 1
      ready = self.rng.random() < self.ready_prob
      d.hbm_req_ready_i.value = int(ready)
      if self.q and self.q[0][0] <= self.cycle:
        _, we, data = self.q.popleft()
        d.hbm_rsp_valid_i.value, d.hbm_rsp_we_i.value = 1, int(we)
        d.hbm_rsp_rdata_i.value = kit.pack_tile(data) if data is not None else 0
      else:
        d.hbm_rsp_valid_i.value, d.hbm_rsp_we_i.value = 0, 0
      await ReadOnly()
      if int(d.chk_valid_o.value): self.ap.write(("check", int(d.chk_bad_o.value)))
      if int(d.hbm_req_valid_o.value):
        if not ready: self.bp_ap.write(self.cycle)
        else:
          addr, we = int(d.hbm_req_addr_o.value), int(d.hbm_req_we_o.value)
          assert 0 <= addr < HBM_TILES, f"request address {addr} outside the HBM"
          if we:
            t = self.tile(d.hbm_req_wdata_o)
            self.store.write(addr, t[None])
            self.ap.write(("write", addr, t))
            self.q.append((self.cycle + self.latency, 1, None))
          else:
            self.q.append((self.cycle + self.latency, 0, self.store.read(addr, 1)[0]))


class CmdDriver(uvm_driver):
  def build_phase(self):
    self.ap = uvm_analysis_port("ap", self)

  async def run_phase(self):
    d, hbm = self.parent.dut, self.parent.hbm
    d.cmd_valid_i.value = 0
    while True:
      c = await self.seq_item_port.get_next_item()
      await FallingEdge(d.clk_i)
      while int(d.busy_o.value) or hbm.q:
        await FallingEdge(d.clk_i)
      for _ in range(self.parent.rng.randrange(0, 3)): await FallingEdge(d.clk_i)
      L = self.parent.N * self.parent.N
      hbm.store.write(c.tbase, c.table.reshape(-1, self.parent.N, self.parent.N))
      lanes = np.zeros(-(-len(c.indices) // L) * L, np.uint32)
      lanes[:len(c.indices)] = (c.indices & 0xFFFFFFFF).astype(np.uint32)
      hbm.store.write(c.idx, lanes.reshape(-1, self.parent.N, self.parent.N))
      hbm.ready_prob, hbm.latency = c.ready_prob, c.latency
      self.ap.write((c, copy.deepcopy(hbm.store)))
      for name, v in (("fp", int(c.fp)), ("tbase", c.tbase), ("rows", c.rows), ("width", c.width), ("bag", c.bag),
                      ("bags", c.bags), ("idx", c.idx), ("dst", c.dst)):
        getattr(d, f"cmd_{name}_i").value = v
      d.cmd_valid_i.value = 1
      await FallingEdge(d.clk_i)
      d.cmd_valid_i.value = 0
      self.seq_item_port.item_done()


class EmbScoreboard(uvm_component):
  """Predicts every command with the golden; checks the check result and the exact set of writes."""
  def build_phase(self):
    self.N = self.parent.N
    self.errors: list[str] = []
    self.checked = 0
    self.cur = None          # (command, expected bad, {addr: tile} still to see, check seen)
    self.cmd_export = kit.Export("cmd_export", self, self.write_cmd)
    self.hbm_export = kit.Export("hbm_export", self, self.write_hbm)

  def predict(self, c: EmbCmd, store) -> tuple[bool, dict]:
    try:
      gsc.check(HBM_TILES, self.N, c.tbase, c.rows, c.width, c.bag, c.bags, c.idx, c.dst)
      gsc.bag_lookup(store, self.N, c.tbase, c.rows, c.width, c.bag, c.bags, c.idx, c.dst, c.fp)
    except gsc.EmbTrap as e:
      assert e.trap == "emb_index_out_of_range", f"the env made an illegal command: {e.trap}"
      return True, {}
    return False, {c.dst + k: store.read(c.dst + k, 1)[0] for k in range(c.bags * c.width)}

  def finish(self):
    if self.cur is None: return
    c, bad, left, seen = self.cur
    if not seen: self.error(f"no check result for {c}")
    if left: self.error(f"{len(left)} pooled tiles never written (first HBM {min(left)}) for {c}")
    self.checked += 1
    self.cur = None

  def write_cmd(self, x):
    self.finish()
    c, store = x
    bad, writes = self.predict(c, store)
    self.cur = [c, bad, writes, False]

  def write_hbm(self, ev):
    if self.cur is None: return self.error(f"HBM event {ev[0]} with no command")
    c, bad, left, seen = self.cur
    if ev[0] == "check":
      if seen: self.error(f"two check results for {c}")
      if bool(ev[1]) != bad: self.error(f"check result bad={ev[1]}, the golden says bad={bad}: {c}")
      self.cur[3] = True
      return
    _, addr, t = ev
    if not seen: self.error(f"write of HBM {addr} before the check result: {c}")
    if addr not in left: return self.error(f"write of HBM {addr} not predicted (or twice) for {c}")
    want = left.pop(addr)
    if not np.array_equal(want, t):
      self.error(f"HBM {addr}: {_diff(want, t)}\n  for {c}")

  def error(self, msg: str):
    self.errors.append(msg)
    if len(self.errors) <= 5: self.logger.error(msg)

  def pending(self) -> int:
    return 0

  def check_phase(self):
    self.finish()
    self.logger.info(f"scoreboard: {self.checked} commands checked, {len(self.errors)} errors")
    assert not self.errors, f"{len(self.errors)} scoreboard errors; first:\n{self.errors[0]}"


def bag_class(b: int, L: int) -> str:
  return "1" if b == 1 else "lt_tile" if b < L else "tile" if b == L else "gt_tile"


def width_class(w: int) -> str:
  return "1" if w == 1 else "max" if w == 16 else "mid"


class EmbCoverage(kit.CoverageCollector):
  unit = "sparsecore"

  def define(self, cov):
    cov.bins("bag", ["1", "lt_tile", "tile", "gt_tile"])
    cov.bins("width", ["1", "mid", "max"])
    cov.bins("mode", ["int", "fp"])
    cov.bins("repeated", [False, True])
    cov.bins("check", ["ok", "bad"])
    cov.bins("index_tiles", ["one", "partial_last", "refills"])   # > 4 tiles: the index buffer refills
    cov.bins("hbm", ["accepted", "held"])   # requests accepted, requests held by ready = 0
    cov.cross("mode_x_bag", ["int", "fp"], ["1", "lt_tile", "tile", "gt_tile"])
    cov.cross("mode_x_width", ["int", "fp"], ["1", "mid", "max"])
    self.N = int(kit.params().get("N", 4))

  def sample_cmd(self, x):
    c, _ = x
    L = self.N * self.N
    n, mode = len(c.indices), "fp" if c.fp else "int"
    self.cov.hit("bag", bag_class(c.bag, L))
    self.cov.hit("width", width_class(c.width))
    self.cov.hit("mode", mode)
    self.cov.hit("repeated", len(set(c.indices.tolist())) < n)
    bad = bool(((c.indices < 0) | (c.indices >= c.rows)).any())
    self.cov.hit("check", "bad" if bad else "ok")
    tiles = -(-n // L)
    self.cov.hit("index_tiles", "refills" if tiles > 4 else "partial_last" if n % L else "one")
    self.cov.hit("mode_x_bag", (mode, bag_class(c.bag, L)))
    self.cov.hit("mode_x_width", (mode, width_class(c.width)))

  def sample_bp(self, _cycle):
    self.cov.hit("hbm", "held")

  def sample_hbm(self, ev):
    if ev[0] == "write": self.cov.hit("hbm", "accepted")


class EmbEnv(kit.Env):
  sb_cls = EmbScoreboard

  def build_phase(self):
    p = kit.params()
    self.N, self.max_latency = int(p.get("N", 4)), int(p.get("HBM_LATENCY", 16))
    self.seqr = uvm_sequencer("seqr", self)
    self.drv = CmdDriver("drv", self)
    self.hbm = HbmModel("hbm", self)
    self.sb = self.sb_cls("sb", self)
    self.cov = EmbCoverage("cov", self)

  def connect_phase(self):
    self.drv.seq_item_port.connect(self.seqr.seq_item_export)
    self.drv.ap.connect(self.sb.cmd_export)
    self.hbm.ap.connect(self.sb.hbm_export)
    self.drv.ap.connect(self.cov.export(self.cov.sample_cmd))
    self.hbm.bp_ap.connect(self.cov.export(self.cov.sample_bp))
    self.hbm.ap.connect(self.cov.export(self.cov.sample_hbm))

  def pending(self) -> int:
    return int(self.dut.busy_o.value) + len(self.hbm.q)
