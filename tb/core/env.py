"""TensorCore env: a program agent (loads a bundle through the load ports and starts the core), a
retired-instruction monitor (the SXU's issue stage) and a scoreboard that runs the golden interpreter
on the same bundle and compares every dumped tile, register, status, trap code, pc and retired count."""
from __future__ import annotations

import numpy as np
from cocotb.triggers import FallingEdge, RisingEdge
from pyuvm import uvm_analysis_port, uvm_component, uvm_monitor

from tinytpu import bundle
from tinytpu.config import Config
from tinytpu.golden import interp
from tinytpu.tb import kit


def config_of(params: dict) -> Config:
  return Config(**{k: int(v) for k, v in params.items()})


class ProgramAgent(uvm_component):
  """Drives a Bundle into the core: program words, VMEM/PSUM tiles and scalar registers through the
  load ports, one record per cycle, then start_i; then reads the dumps back through the read ports."""
  def __init__(self, name, parent, dut):
    super().__init__(name, parent)
    self.dut = dut
    self.ap = uvm_analysis_port("ap", self)  # the bundle, when it starts

  async def load(self, b: bundle.Bundle):
    d = self.dut
    recs = [("imem", pc, w) for pc, w in enumerate(b.program)] + [("vmem", a, t) for a, t in b.vmem.items()]
    recs += [("psum", a, t) for a, t in b.psum.items()] + [("sreg", r, v) for r, v in b.sregs.items()]
    for kind, addr, v in recs:
      await FallingEdge(d.clk_i)
      getattr(d, f"{kind}_we_i").value = 1
      getattr(d, f"{kind}_addr_i").value = addr
      getattr(d, f"{kind}_wdata_i").value = kit.pack_tile(v) if kind in ("vmem", "psum") else int(v)
      await FallingEdge(d.clk_i)
      getattr(d, f"{kind}_we_i").value = 0
    self.ap.write(b)
    await FallingEdge(d.clk_i)
    d.start_i.value = 1
    await FallingEdge(d.clk_i)
    d.start_i.value = 0

  async def read_tile(self, kind: str, addr: int, n: int) -> np.ndarray:
    d = self.dut
    getattr(d, f"{kind}_addr_i").value = addr
    await FallingEdge(d.clk_i)
    await FallingEdge(d.clk_i)
    return kit.unpack_tile(int(getattr(d, f"{kind}_rdata_o").value), n)

  async def read_sregs(self) -> np.ndarray:
    d, out = self.dut, []
    for r in range(16):
      d.sreg_addr_i.value = r
      await FallingEdge(d.clk_i)
      out.append(int(d.sreg_rdata_o.value))
    return np.array(out, np.uint32)


class RetireMonitor(uvm_monitor):
  """Publishes the pc of every instruction the SXU completes (its issue stage fires; a pair: both)."""
  def __init__(self, name, parent, dut):
    super().__init__(name, parent)
    self.dut = dut
    self.ap = uvm_analysis_port("ap", self)

  async def run_phase(self):
    sxu = self.dut.u_sxu
    while True:
      await RisingEdge(self.dut.clk_i)
      if int(sxu.fire.value):
        self.ap.write(int(sxu.pc_q.value))
        if int(sxu.pair.value): self.ap.write(int(sxu.pc_q.value) + 1)  # dual issue: slot 1 at pc + 1


class CoreScoreboard(uvm_component):
  def __init__(self, name, parent):
    super().__init__(name, parent)
    self.bundle_export = kit.Export("bundle_export", self, self.write_bundle)
    self.retired: list[int] = []
    self.retire_export = kit.Export("retire_export", self, self.retired.append)
    self.errors: list[str] = []
    self.checked = 0
    self.golden: bundle.Result | None = None

  def write_bundle(self, b: bundle.Bundle):
    self.golden = interp.run(b)
    self.retired.clear()

  def compare(self, rtl: bundle.Result):
    assert self.golden is not None
    diffs = bundle.diff_results(rtl, self.golden)
    if len(self.retired) != self.golden.perf["retired"]:
      diffs.append(f"retire monitor saw {len(self.retired)} instructions, golden retired {self.golden.perf['retired']}")
    if diffs:
      self.errors.append("\n  ".join(diffs))
      self.logger.error("RTL != golden:\n  " + "\n  ".join(diffs))
    self.checked += 1

  def pending(self) -> int: return 0

  def check_phase(self):
    assert not self.errors, f"{len(self.errors)} programs differ from the golden model: {self.errors[0]}"
    assert self.checked, "no program was checked"


class CoreEnv(kit.Env):
  def build_phase(self):
    self.cfg = config_of(kit.params())
    self.agent = ProgramAgent("agent", self, self.dut)
    self.monitor = RetireMonitor("monitor", self, self.dut)
    self.sb = CoreScoreboard("sb", self)

  def connect_phase(self):
    self.agent.ap.connect(self.sb.bundle_export)
    self.monitor.ap.connect(self.sb.retire_export)
