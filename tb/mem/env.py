"""Memory unit envs (VMEM, PSUM, VRF). One kit agent drives every input port each cycle (an item
is one cycle of traffic on all ports); its monitor also samples the outputs, and a cycle-exact
scoreboard checks them against a plain numpy model: reads see the memory before the same
cycle's writes, registered outputs (VMEM/PSUM) arrive one cycle later, out-of-range or
pre-init accesses raise err and do not write."""
from __future__ import annotations

import os

import numpy as np

from tinytpu.tb import kit
from tinytpu.tb.kit import ItemsSeq

M32 = 0xFFFFFFFF


class Cyc(kit.Item):
  """One cycle of traffic on every port of a memory (fields depend on the unit)."""


def spec(unit: str, n: int) -> dict:
  """Ports of each unit: reads (name, req, addr, data, err), writes (name, req, addr, data, err)."""
  t, v = kit.Tile, kit.Vec
  if unit == "vmem":
    return {"reads": [("rd", "rd_req_i", "rd_addr_i", "rd_data_o", "rd_err_o"), ("mxu", "mxu_req_i", "mxu_addr_i", "mxu_data_o", "mxu_err_o")],
            "writes": [("wr", "wr_req_i", "wr_addr_i", "wr_data_i", "wr_err_o")], "tiles": "TILES"}
  if unit == "psum":
    return {"reads": [("rd", "rd_req_i", "rd_addr_i", "rd_data_o", "rd_err_o")],
            "writes": [("wr", "wr_req_i", "wr_addr_i", "wr_data_i", "wr_err_o")],
            "rows": [("mxu", "mxu_we_i", "mxu_addr_i", "mxu_data_i", "mxu_err_o", "mxu_acc_i", "mxu_row_i")], "tiles": "TILES"}
  return {"comb_reads": [(p, f"{p}_addr_i", f"{p}_data_o") for p in ("ra", "rb", "rc", "rs")],
          "writes": [("w0", "we0_i", "waddr0_i", "wdata0_i", None), ("w1", "we1_i", "waddr1_i", "wdata1_i", None)]}


def channel(unit: str) -> kit.Channel:
  s, f, o = spec(unit, 0), {}, {}
  for name, req, addr, data, err in s.get("reads", []):
    f |= {f"{name}_req": req, f"{name}_addr": addr}; o |= {f"{name}_data": kit.Tile(data), f"{name}_err": err}
  for name, req, addr, data, err in s.get("writes", []):
    f |= {f"{name}_req": req, f"{name}_addr": addr, f"{name}_data": kit.Tile(data)}
    if err: o[f"{name}_err"] = err
  for name, req, addr, data, err, acc, row in s.get("rows", []):
    f |= {f"{name}_req": req, f"{name}_addr": addr, f"{name}_data": kit.Vec(data), f"{name}_acc": acc, f"{name}_row": row}
    o[f"{name}_err"] = err
  for name, addr, data in s.get("comb_reads", []):
    f[f"{name}_addr"] = addr; o[f"{name}_data"] = kit.Tile(data)
  if unit == "vrf": o["err"] = "err_o"
  else: o["init_done"] = "init_done_o"
  o["rst_n"] = "rst_ni"
  return kit.Channel(f, Cyc, observe=o)


class MemScoreboard(kit.Scoreboard):
  """Cycle model. Each monitored cycle: check the registered outputs predicted last cycle, check
  combinational reads, predict this cycle's registered outputs, then apply the writes."""
  def __init__(self, name, parent, unit, n, tiles):
    super().__init__(name, parent)
    self.unit, self.n, self.tiles, self.s = unit, n, tiles, spec(unit, n)
    self.mem = np.zeros((tiles, n, n), np.uint32)
    self.prev: dict = {}
    self.cov = None
    self.broken = getattr(parent.parent, "broken", False)

  def ok(self, c, addr) -> bool:
    return (self.unit == "vrf" or bool(c.init_done)) and 0 <= addr < self.tiles

  def check(self, c, exp: dict):
    self.checked += 1
    for f, v in exp.items():
      got = getattr(c, f)
      if not np.array_equal(np.asarray(v), np.asarray(got)):
        return self.error(f"{self.unit} cycle {c.cycle}: {f} got {got!r} expected {v!r}\n  cycle {c}")

  def write_req(self, c):
    if not c.rst_n:  # in reset: outputs are being cleared, nothing to check or model
      self.prev = {}; return
    if os.environ.get("TINYTPU_DEBUG"): self.logger.info(f"cyc {c.cycle} " + " ".join(f"{k}={getattr(c, k)}" for k in ("rd_req", "rd_addr", "wr_req", "wr_addr", "mxu_req", "mxu_addr", "init_done") if hasattr(c, k)))
    self.check(c, self.prev)
    exp = {}
    for name, *_ in self.s.get("comb_reads", []):
      self.check(c, {f"{name}_data": self.mem[getattr(c, f"{name}_addr")].copy()})
    for name, *_ in self.s.get("reads", []):
      if getattr(c, f"{name}_req"):
        a = getattr(c, f"{name}_addr"); good = self.ok(c, a)
        exp |= {f"{name}_data": self.mem[a].copy() if good else np.zeros((self.n, self.n), np.uint32), f"{name}_err": int(not good)}
        self.cover(name, a, good, c)
      else:
        exp |= {f"{name}_data": np.zeros((self.n, self.n), np.uint32), f"{name}_err": 0}
    writes = []
    for name, _, _, _, err in self.s.get("writes", []):
      a, good = getattr(c, f"{name}_addr"), False
      if getattr(c, f"{name}_req"):
        good = self.ok(c, a)
        if good: writes.append((a, None, getattr(c, f"{name}_data"), 0))
        self.cover(name, a, good, c)
        if self.cov and self.unit == "vrf": self.cov.hit("write_x_reg", (name, a))
      if err: exp[f"{name}_err"] = int(bool(getattr(c, f"{name}_req")) and not good)
    for name, *_ in self.s.get("rows", []):
      a, good = getattr(c, f"{name}_addr"), False
      if getattr(c, f"{name}_req"):
        good = self.ok(c, a)
        if good: writes.append((a, getattr(c, f"{name}_row"), getattr(c, f"{name}_data"), getattr(c, f"{name}_acc")))
        self.cover(name, a, good, c)
        if self.cov: self.cov.hit("row_x_acc", (getattr(c, f"{name}_row"), getattr(c, f"{name}_acc")))
      exp[f"{name}_err"] = int(bool(getattr(c, f"{name}_req")) and not good)
    if self.unit == "vrf":
      conflict = c.w0_req and c.w1_req and c.w0_addr == c.w1_addr
      exp["err"] = int(bool(conflict))
      if self.cov and conflict: self.cov.hit("events", "write_conflict")
    # collisions: a read of a tile written in the same cycle must return the old data
    if self.cov:
      rd = {getattr(c, f"{r[0]}_addr") for r in self.s.get("reads", []) if getattr(c, f"{r[0]}_req")}
      rd |= {getattr(c, f"{r[0]}_addr") for r in self.s.get("comb_reads", [])}
      if any(w[0] in rd for w in writes): self.cov.hit("events", "read_write_same_tile")
      if len({w[0] for w in writes}) < len(writes): self.cov.hit("events", "two_writes_same_tile")
    if self.broken: writes = []  # MemBrokenModel: a model that forgets every write must be caught
    old = self.mem.copy()
    for a, row, data, acc in writes:  # tile writes first, then the MXU row on top; acc adds to the row as it was before this cycle
      if row is None: self.mem[a] = data
      else: self.mem[a, row] = (data.astype(np.uint32) + (old[a, row] if acc else 0)).astype(np.uint32)
    self.prev = exp

  def cover(self, port, addr, good, c):
    if not self.cov or self.unit == "vrf": return
    kind = "in" if good else ("early" if self.unit != "vrf" and not c.init_done else "out")
    self.cov.hit("port_x_range", (port, kind))
    if addr in (0, self.tiles - 1): self.cov.hit("events", "boundary_tile")


class MemCoverage(kit.CoverageCollector):
  unit = "mem"


class MemEnv(kit.Env):
  def build_phase(self):
    p = kit.params()
    self.unit = os.environ.get("TINYTPU_UNIT", "vmem")
    self.n, self.tiles = p["N"], p.get("TILES", 16)
    self.agent = kit.Agent("agent", self, channel(self.unit), self.dut)
    self.sb = MemScoreboard("sb", self, self.unit, self.n, self.tiles)
    MemCoverage.unit = self.unit
    self.cov = MemCoverage("cov", self)
    s = spec(self.unit, self.n)
    ports = [r[0] for r in s.get("reads", []) + s.get("writes", []) + s.get("rows", [])]
    if self.unit != "vrf":
      self.cov.cov.cross("port_x_range", ports, ["in", "out", "early"])
    ev = ["read_write_same_tile", "two_writes_same_tile"] + (["boundary_tile"] if self.unit != "vrf" else ["write_conflict"])
    if self.unit == "vmem": ev.remove("two_writes_same_tile")
    self.cov.cov.bins("events", ev)
    if self.unit == "psum": self.cov.cov.cross("row_x_acc", range(self.n), [0, 1])
    if self.unit == "vrf": self.cov.cov.cross("write_x_reg", ["w0", "w1"], range(16))
    self.sb.cov = self.cov.cov

  def connect_phase(self):
    self.agent.ap.connect(self.sb.req_export)


