"""MXU unit environment: commands in through a kit agent, the MXU's PSUM row writes and PSUM
read-back out through monitors, checked against tinytpu.golden.mxu by a scoreboard that keeps a
model of VMEM, PSUM and the latest weight tile (MMUL: int8 x int8 -> int32, MMUL.BF16: bf16 x
bf16 -> fp32, doc/isa.md)."""
from __future__ import annotations

import numpy as np
from cocotb.triggers import FallingEdge, ReadOnly
from pyuvm import uvm_component

from tinytpu.golden import mxu as golden
from tinytpu.tb import kit

T_BINS = ["1", "2", "3-4", "5-8", "9-32", "33+"]
CMDS = ["MLW", "MMUL"]
MODES = ["int8", "bf16"]
EVENTS = ["mlw_while_busy", "mmul_while_busy", "cmdq_full", "bank_stall", "err_psum", "err_vmem", "err_t0"]


def t_bin(t: int) -> str:
  return "1" if t == 1 else "2" if t == 2 else "3-4" if t <= 4 else "5-8" if t <= 8 else "9-32" if t <= 32 else "33+"


class Cmd(kit.Item):
  """One MXU command: MLW (mlw=1, weight tile w) or MMUL (paddr, vaddr, t, acc; bf16=1: MMUL.BF16)."""
  def __init__(self, name="cmd", mlw=0, w=None, paddr=0, vaddr=0, t=1, acc=0, delay=0, n=4, bf16=0):
    super().__init__(name)
    self.mlw, self.paddr, self.vaddr, self.t, self.acc, self.delay, self.bf16 = mlw, paddr, vaddr, t, acc, delay, bf16
    self.w = np.zeros((n, n), np.uint32) if w is None else w


class Row(kit.Item): pass        # one PSUM row write by the MXU
class Write(kit.Item): pass      # a core-side tile write (VMEM or PSUM preload)
class Read(kit.Item): pass       # a PSUM read request / its data


def bad(cmd, vm_tiles, ps_tiles) -> str | None:
  """Why a command is rejected (the RTL must flag err_o and drop it), or None."""
  if cmd.mlw: return None
  if cmd.t == 0: return "err_t0"
  if cmd.paddr + cmd.t > ps_tiles: return "err_psum"
  if cmd.vaddr + cmd.t > vm_tiles: return "err_vmem"
  return None


class MxuScoreboard(kit.Scoreboard):
  """Predicts every PSUM row write of every MMUL (in order), and keeps the golden PSUM for the
  read-back check. Rejected commands must raise err_o once each and change nothing."""
  def __init__(self, name, parent, n, vm, ps):
    super().__init__(name, parent)
    self.n, self.vm_tiles, self.ps_tiles = n, vm, ps
    self.vmem = np.zeros((vm, n, n), np.uint32)
    self.psum = np.zeros((ps, n, n), np.uint32)
    self.w = np.zeros((n, n), np.uint32)  # the raw tile of the last MLW (both modes read it)
    self.errs_expected = self.errs_seen = 0
    self.mmuls = 0  # MMULs accepted (not rejected): each owes one vdone_o and one pdone_o pulse
    self.broken = getattr(parent.parent, "broken", False)  # MxuBrokenModel: a deliberately wrong model
    self.vm_export = kit.Export("vm_export", self, self.write_vm)
    self.ps_export = kit.Export("ps_export", self, self.write_ps)
    self.err_export = kit.Export("err_export", self, self.write_err)

  def write_vm(self, it): self.vmem[it.addr] = it.data
  def write_ps(self, it): self.psum[it.addr] = it.data
  def write_err(self, it): self.errs_seen += 1

  def write_req(self, cmd):
    if bad(cmd, self.vm_tiles, self.ps_tiles):
      self.errs_expected += 1; return
    if cmd.mlw:
      self.w = cmd.w.copy()
      if self.broken: self.w = self.w.T.copy()
      return
    self.mmuls += 1
    acts = self.vmem[cmd.vaddr:cmd.vaddr + cmd.t]
    # the row the array writes is the product alone; PSUM adds it (int32 or fp32) when acc = 1
    run = golden.mmul_bf16 if cmd.bf16 else (lambda old, a, w, acc: golden.mmul(old, a, golden.weights(w), acc))
    prod = run(np.zeros_like(acts), acts, self.w, 0)
    for t in range(cmd.t):
      for r in range(self.n):
        self.expected.append((cmd, {"addr": cmd.paddr + t, "row": r, "acc": cmd.acc, "fp": cmd.bf16, "data": prod[t, r]}))
    p = slice(cmd.paddr, cmd.paddr + cmd.t)
    self.psum[p] = run(self.psum[p], acts, self.w, cmd.acc)

  def check_phase(self):
    if self.errs_seen != self.errs_expected:
      self.error(f"err_o pulsed {self.errs_seen} times, expected {self.errs_expected} rejected commands")
    super().check_phase()


class ReadbackScoreboard(kit.Scoreboard):
  """PSUM tiles read back through the core port must equal the golden PSUM."""
  def __init__(self, name, parent, model: MxuScoreboard):
    super().__init__(name, parent); self.model = model
  def predict(self, req): return {"data": self.model.psum[req.addr].copy()}


class MxuCoverage(kit.CoverageCollector):
  unit = "mxu"

  def define(self, cov):
    cov.cross("mode_x_acc_x_t", MODES, [0, 1], T_BINS)
    cov.pairs("cmd_pairs_busy", CMDS)  # a command accepted while the previous one still runs
    cov.bins("events", EVENTS)
    cov.bins("w_class", kit.INT8_BINS)
    cov.bins("a_class", kit.INT8_BINS)
    cov.bins("bf16_w_class", kit.FP32_BINS)   # the bf16 weights (high halves) an MMUL.BF16 used
    cov.bins("bf16_a_class", kit.FP32_BINS)   # its bf16 activations
    cov.bins("bf16_low_bits", ["clear", "set"])  # activation lanes whose ignored low 16 bits are (not) zero
    cov.pairs("mode_pairs_busy", MODES)       # an MMUL after an MMUL still running, by mode

  def sample_cmd(self, cmd):
    why = bad(cmd, self.parent.vm, self.parent.ps)
    if why: return self.cov.hit("events", why)
    name = CMDS[cmd.mlw]
    if cmd.busy: self.cov.hit("events", f"{name.lower()}_while_busy")
    self.cov.pair("cmd_pairs_busy", name, back_to_back=bool(cmd.busy))
    if cmd.mlw:
      for v in set(kit.classify_int8(int(x)) for x in cmd.w.ravel()): self.cov.hit("w_class", v)
    else:
      self.cov.hit("mode_x_acc_x_t", (MODES[cmd.bf16], cmd.acc, t_bin(cmd.t)))
      self.cov.pair("mode_pairs_busy", MODES[cmd.bf16], back_to_back=bool(cmd.busy))
      acts = self.parent.sb.vmem[cmd.vaddr:cmd.vaddr + cmd.t]
      if cmd.bf16:
        for v in set(kit.classify_fp32(int(x) & 0xFFFF0000) for x in acts.ravel()): self.cov.hit("bf16_a_class", v)
        for v in set(kit.classify_fp32(int(x) & 0xFFFF0000) for x in self.parent.sb.w.ravel()): self.cov.hit("bf16_w_class", v)
        for v in set("set" if int(x) & 0xFFFF else "clear" for x in acts.ravel()): self.cov.hit("bf16_low_bits", v)
      else:
        for v in set(kit.classify_int8(int(x)) for x in acts.ravel()): self.cov.hit("a_class", v)

  def sample_event(self, name): self.cov.hit("events", name)


class StatusMonitor(uvm_component):
  """Per-cycle status: back-pressure and bank stalls for coverage, utilisation (rows entering
  the array per busy cycle) for the log, memory port errors (never expected), and the ownership
  pulses the SXU's mxu_own counts: vdone_o once per MMUL when its last VMEM tile is read, pdone_o
  once when its last row is written, in command order, so at every cycle
  pdones <= vdones <= MMULs handed over, and both equal the accepted MMULs at the end."""
  def __init__(self, name, parent, dut, cov: MxuCoverage, sb: MxuScoreboard):
    super().__init__(name, parent)
    self.dut, self.cov, self.sb = dut, cov, sb
    self.busy = self.rows = 0
    self.handed = self.vdones = self.pdones = 0

  async def run_phase(self):
    d = self.dut
    while True:
      await FallingEdge(d.clk_i)
      await ReadOnly()
      if int(d.cmd_valid_i.value) and not int(d.cmd_ready_o.value): self.cov.sample_event("cmdq_full")
      if int(d.stall_o.value): self.cov.sample_event("bank_stall")
      if int(d.mem_err_o.value): self.sb.error("a memory port reported an address error")
      self.handed += int(d.cmd_valid_i.value) and int(d.cmd_ready_o.value) and not int(d.cmd_mlw_i.value)
      self.vdones += int(d.vdone_o.value)
      self.pdones += int(d.pdone_o.value)
      if not self.pdones <= self.vdones <= self.handed:
        self.sb.error(f"ownership pulses out of order: {self.vdones} vdone_o, {self.pdones} pdone_o after {self.handed} MMULs handed over")
        self.handed = self.vdones = self.pdones = 0  # one report, not one per cycle
      self.busy += int(d.busy_o.value)
      self.rows += int(d.row_o.value)

  def check_phase(self):
    if (self.vdones, self.pdones) != (self.sb.mmuls, self.sb.mmuls):
      self.sb.error(f"vdone_o pulsed {self.vdones} times and pdone_o {self.pdones}, expected once per accepted MMUL ({self.sb.mmuls})")

  def report_phase(self):
    if self.busy:
      self.logger.info(f"utilisation: {self.rows} rows in {self.busy} busy cycles = {100 * self.rows / self.busy:.1f}% of N*N MACs per cycle")


class MxuEnv(kit.Env):
  def build_phase(self):
    p = kit.params()
    self.n, self.vm, self.ps = p["N"], p["VMEM_TILES"], p["PSUM_TILES"]
    d = self.dut
    cmd = kit.Channel({"mlw": "cmd_mlw_i", "w": kit.Tile("cmd_w_i"), "paddr": "cmd_paddr_i", "vaddr": "cmd_vaddr_i",
                       "t": "cmd_t_i", "acc": "cmd_acc_i", "bf16": "cmd_bf16_i"}, Cmd, valid="cmd_valid_i", ready="cmd_ready_o",
                      observe={"busy": "busy_o"})
    self.cmd = kit.Agent("cmd", self, cmd, d)
    self.vmw = kit.Agent("vmw", self, kit.Channel({"addr": "vm_addr_i", "data": kit.Tile("vm_wdata_i")}, Write, valid="vm_we_i"), d)
    self.psw = kit.Agent("psw", self, kit.Channel({"addr": "ps_waddr_i", "data": kit.Tile("ps_wdata_i")}, Write, valid="ps_we_i"), d)
    self.psr = kit.Agent("psr", self, kit.Channel({"addr": "ps_raddr_i"}, Read, valid="ps_re_i"), d)
    self.psd = kit.Agent("psd", self, kit.Channel({"data": kit.Tile("ps_rdata_o")}, Read, valid="ps_rvalid_o"), d, active=False)
    self.rows = kit.Agent("rows", self, kit.Channel({"addr": "psum_addr_o", "row": "psum_row_o", "acc": "psum_acc_o", "fp": "psum_fp_o",
                                                    "data": kit.Vec("psum_wdata_o")}, Row, valid="psum_we_o"), d, active=False)
    self.errs = kit.Agent("errs", self, kit.Channel({}, kit.Item, valid="err_o"), d, active=False)
    self.sb = MxuScoreboard("sb", self, self.n, self.vm, self.ps)
    self.rb = ReadbackScoreboard("rb", self, self.sb)
    self.cov = MxuCoverage("cov", self)
    self.status = StatusMonitor("status", self, d, self.cov, self.sb)

  def connect_phase(self):
    self.cmd.ap.connect(self.sb.req_export)
    self.cmd.ap.connect(self.cov.export(self.cov.sample_cmd))
    self.rows.ap.connect(self.sb.rsp_export)
    self.vmw.ap.connect(self.sb.vm_export)
    self.psw.ap.connect(self.sb.ps_export)
    self.errs.ap.connect(self.sb.err_export)
    self.psr.ap.connect(self.rb.req_export)
    self.psd.ap.connect(self.rb.rsp_export)


