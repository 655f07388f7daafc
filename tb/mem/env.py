"""Memory unit envs (VMEM, PSUM, VRF). One kit agent drives every input port each cycle (an item
is one cycle of traffic on all ports, VMEM element gather/scatter included); its monitor also
samples the outputs, and a cycle-exact scoreboard checks them against a plain numpy model:
VMEM/PSUM reads (VMEM's DMA ports too) see the memory before the same cycle's writes and arrive one cycle later; VRF
reads are combinational and see the registers before the same cycle's writes;
out-of-range accesses raise err and do not write; a reset (seen on rst_ni, also in the middle of
a test) makes the whole memory read zero again from the first cycle after it."""
from __future__ import annotations

import os

import numpy as np

from tinytpu.golden import fpops
from tinytpu.tb import kit

M32 = 0xFFFFFFFF


def row_write(old: np.ndarray, data: np.ndarray, acc: int, fp: int) -> np.ndarray:
  """PSUM's MXU row write: the row (acc 0), or the row plus the old row lane by lane: int32 wrap,
  or with fp (MMUL.BF16) the golden fp32 add (RNE, subnormals kept, canonical NaN)."""
  if not acc: return data.copy()
  return fpops.OPS["FADD"](old, data) if fp else (data + old).astype(np.uint32)


class Cyc(kit.Item):
  """One cycle of traffic on every port of a memory (fields depend on the unit)."""


def spec(unit: str, n: int) -> dict:
  """Ports of each unit: reads (name, req, addr, data, err), writes (name, req, addr, data, err),
  VMEM's read/write DMA port rw (name, req, we, addr, wdata, rdata, err)."""
  if unit == "vmem":
    return {"reads": [("rd", "rd_req_i", "rd_addr_i", "rd_data_o", "rd_err_o"), ("mxu", "mxu_req_i", "mxu_addr_i", "mxu_data_o", "mxu_err_o"),
                      ("dmr", "dmr_req_i", "dmr_addr_i", "dmr_rdata_o", "dmr_err_o")],
            "writes": [("wr", "wr_req_i", "wr_addr_i", "wr_data_i", "wr_err_o")], "tiles": "TILES", "elem": True,
            # the DMA port: one tile read (we 0) or written (we 1) a cycle: (name, req, we, addr, wdata, rdata, err)
            "rw": [("dma", "dma_req_i", "dma_we_i", "dma_addr_i", "dma_wdata_i", "dma_rdata_o", "dma_err_o")]}
  if unit == "psum":
    return {"reads": [("rd", "rd_req_i", "rd_addr_i", "rd_data_o", "rd_err_o")],
            "writes": [("wr", "wr_req_i", "wr_addr_i", "wr_data_i", "wr_err_o")],
            # the MXU's row port: (name, req, addr, data, err, acc, row, fp: MMUL.BF16's fp32 accumulate)
            "rows": [("mxu", "mxu_we_i", "mxu_addr_i", "mxu_data_i", "mxu_err_o", "mxu_acc_i", "mxu_row_i", "mxu_fp_i")], "tiles": "TILES"}
  return {"comb_reads": [(p, f"{p}_addr_i", f"{p}_data_o") for p in ("ra", "rb", "rc", "rs")],
          "writes": [("w0", "we0_i", "waddr0_i", "wdata0_i", None), ("w1", "we1_i", "waddr1_i", "wdata1_i", None)]}


def channel(unit: str) -> kit.Channel:
  s, f, o = spec(unit, 0), {}, {}
  for name, req, addr, data, err in s.get("reads", []):
    f |= {f"{name}_req": req, f"{name}_addr": addr}; o |= {f"{name}_data": kit.Tile(data), f"{name}_err": err}
  for name, req, addr, data, err in s.get("writes", []):
    f |= {f"{name}_req": req, f"{name}_addr": addr, f"{name}_data": kit.Tile(data)}
    if err: o[f"{name}_err"] = err
  for name, req, addr, data, err, acc, row, fp in s.get("rows", []):
    f |= {f"{name}_req": req, f"{name}_addr": addr, f"{name}_data": kit.Vec(data), f"{name}_acc": acc, f"{name}_row": row, f"{name}_fp": fp}
    o[f"{name}_err"] = err
  for name, addr, data in s.get("comb_reads", []):
    f[f"{name}_addr"] = addr; o[f"{name}_data"] = kit.Tile(data)
  for name, req, we, addr, wdata, rdata, err in s.get("rw", []):
    f |= {f"{name}_req": req, f"{name}_we": we, f"{name}_addr": addr, f"{name}_wdata": kit.Tile(wdata)}
    o |= {f"{name}_rdata": kit.Tile(rdata), f"{name}_err": err}
  if s.get("elem"):  # element mode of the core ports: N*N lane addresses, shaped like a tile
    f |= {"rd_elem": "rd_elem_i", "rd_eaddr": kit.Tile("rd_eaddr_i"), "wr_elem": "wr_elem_i", "wr_mask": "wr_mask_i", "wr_eaddr": kit.Tile("wr_eaddr_i")}
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
    self.flat = self.mem.reshape(-1)  # a view: VMEM element e is flat[e]
    self.written = np.zeros(tiles if unit != "vrf" else 16, bool)  # coverage only: tiles written since reset
    self.prev: dict = {}
    self.in_reset = False
    self.cov = None
    self.broken = getattr(parent.parent, "broken", False)

  def ok(self, c, addr) -> bool:
    return 0 <= addr < self.tiles

  def check(self, c, exp: dict):
    self.checked += 1
    for f, v in exp.items():
      got = getattr(c, f)
      if not np.array_equal(np.asarray(v), np.asarray(got)):
        return self.error(f"{self.unit} cycle {c.cycle}: {f} got {got!r} expected {v!r}\n  cycle {c}")

  def write_req(self, c):
    if not c.rst_n:  # in reset: outputs are being cleared; afterwards everything reads zero
      if self.cov and self.written.any(): self.cov.hit("events", "reset_after_writes")
      self.prev, self.in_reset = {}, True
      self.mem[:] = 0; self.written[:] = False
      return
    first, self.in_reset = self.in_reset, False
    if os.environ.get("TINYTPU_DEBUG"): self.logger.info(f"cyc {c.cycle} " + " ".join(f"{k}={getattr(c, k)}" for k in ("rd_req", "rd_addr", "wr_req", "wr_addr", "mxu_req", "mxu_addr", "init_done") if hasattr(c, k)))
    self.check(c, self.prev)
    if self.unit != "vrf": self.check(c, {"init_done": 1})  # no clear sweep: ready right after reset
    exp, L, elems = {}, self.n * self.n, self.tiles * self.n * self.n
    rd_tiles, wr_tiles = set(), set()  # for the collision coverage
    for name, *_ in self.s.get("reads", []):
      if name == "rd" and self.s.get("elem") and c.rd_req and c.rd_elem:
        # gather: lane l gets element eaddr[l]; an out-of-range lane reads zero and raises err
        e = np.asarray(c.rd_eaddr, np.uint64).ravel(); inr = e < elems
        exp |= {"rd_data": np.where(inr, self.flat[np.where(inr, e, 0).astype(np.int64)], 0).astype(np.uint32).reshape(self.n, self.n), "rd_err": int(not inr.all())}
        ts = {int(x) // L for x in e[inr]}; rd_tiles |= ts
        self.cover("gather", None, inr.all(), c, fresh=any(not self.written[t] for t in ts))
      elif getattr(c, f"{name}_req"):
        a = getattr(c, f"{name}_addr"); good = self.ok(c, a)
        exp |= {f"{name}_data": self.mem[a].copy() if good else np.zeros((self.n, self.n), np.uint32), f"{name}_err": int(not good)}
        if good: rd_tiles.add(a)
        self.cover(name, a, good, c)
      else:
        exp |= {f"{name}_data": np.zeros((self.n, self.n), np.uint32), f"{name}_err": 0}
    writes = []
    for name, _, _, _, err in self.s.get("writes", []):
      a, good = getattr(c, f"{name}_addr"), False
      if name == "wr" and self.s.get("elem") and c.wr_req and c.wr_elem:
        # scatter: masked lanes in lane order (a later lane wins); one masked lane out of range -> nothing written
        e, d = np.asarray(c.wr_eaddr, np.uint64).ravel(), np.asarray(c.wr_data, np.uint32).ravel()
        lanes = [(int(e[l]), int(d[l])) for l in range(L) if (c.wr_mask >> l) & 1]
        good = all(x < elems for x, _ in lanes)
        ts = {x // L for x, _ in lanes} if good else set()
        if good: writes.append((None, None, lanes, 0))
        if self.cov:
          if good and any(not self.written[t] and sum(x // L == t for x, _ in lanes) < L for t in ts): self.cov.hit("events", "scatter_partial_fresh_tile")
          if len({x for x, _ in lanes}) < len(lanes): self.cov.hit("events", "scatter_same_element")
        wr_tiles |= ts
        self.cover("scatter", None, good, c, fresh=any(not self.written[t] for t in ts))
        exp["wr_err"] = int(not good)
        continue
      if getattr(c, f"{name}_req"):
        good = self.ok(c, a)
        if good: writes.append((a, None, getattr(c, f"{name}_data"), 0)); wr_tiles.add(a)
        self.cover(name, a, good, c)
        if self.cov and self.unit == "vrf": self.cov.hit("write_x_reg", (name, a))
      if err: exp[f"{name}_err"] = int(bool(getattr(c, f"{name}_req")) and not good)
    for name, *_ in self.s.get("rows", []):
      a, good = getattr(c, f"{name}_addr"), False
      if getattr(c, f"{name}_req"):
        good = self.ok(c, a)
        acc, fp = getattr(c, f"{name}_acc"), getattr(c, f"{name}_fp")
        if good: writes.append((a, getattr(c, f"{name}_row"), getattr(c, f"{name}_data"), (acc, fp))); wr_tiles.add(a)
        self.cover(name, a, good, c)
        if self.cov: self.cov.hit("row_x_acc", (getattr(c, f"{name}_row"), acc)); self.cov.hit("acc_x_fp", (acc, fp))
      exp[f"{name}_err"] = int(bool(getattr(c, f"{name}_req")) and not good)
    for name, *_ in self.s.get("rw", []):
      # VMEM's DMA port: a read like the read ports (data the next cycle, 0 out of range), a write like
      # the write port (nothing out of range); err the next cycle, 0 without a request. The sequence
      # keeps its tile apart from the other ports' (vmem.sv's DMA assertions), so write order is moot.
      a, we, good = getattr(c, f"{name}_addr"), getattr(c, f"{name}_we"), False
      if getattr(c, f"{name}_req"):
        good = self.ok(c, a)
        if we and good: writes.append((a, None, getattr(c, f"{name}_wdata"), 0)); wr_tiles.add(a)
        if not we and good: rd_tiles.add(a)
        self.cover(f"{name}_{'wr' if we else 'rd'}", a, good, c)
      rd = getattr(c, f"{name}_req") and not we and good
      exp |= {f"{name}_rdata": self.mem[a].copy() if rd else np.zeros((self.n, self.n), np.uint32), f"{name}_err": int(bool(getattr(c, f"{name}_req")) and not good)}
    for name, *_ in self.s.get("comb_reads", []):  # VRF: plain reads (the TensorCore bypasses same-cycle writes)
      self.check(c, {f"{name}_data": self.mem[getattr(c, f"{name}_addr")].copy()})
    if self.unit == "vrf":
      conflict = c.w0_req and c.w1_req and c.w0_addr == c.w1_addr
      exp["err"] = int(bool(conflict))
      if self.cov and conflict: self.cov.hit("events", "write_conflict")
    # collisions: a read of a tile written in the same cycle must return the old data
    if self.cov:
      rd_tiles |= {getattr(c, f"{r[0]}_addr") for r in self.s.get("comb_reads", [])}
      if rd_tiles & wr_tiles: self.cov.hit("events", "read_write_same_tile")
      if len({w[0] for w in writes}) < len(writes): self.cov.hit("events", "two_writes_same_tile")
      if first and any(getattr(c, f"{r[0]}_req") for r in self.s.get("reads", []) + self.s.get("writes", []) + self.s.get("rows", []) + self.s.get("rw", [])):
        self.cov.hit("events", "access_first_cycle_after_reset")
    if self.broken: writes = []  # MemBrokenModel: a model that forgets every write must be caught
    old = self.mem.copy()
    for a, row, data, mode in writes:  # tile writes first, then the MXU row on top; acc adds to the row as it was before this cycle
      if a is None:
        for e, v in data: self.flat[e] = v  # scatter lanes, in lane order
      elif row is None: self.mem[a] = data
      else: self.mem[a, row] = row_write(old[a, row], np.asarray(data, np.uint32), *mode)
    if not self.broken: self.written[list(wr_tiles)] = True
    self.prev = exp

  def cover(self, port, addr, good, c, fresh=None):
    """port x {in range, out of range, fresh: a tile not written since reset}."""
    if not self.cov or self.unit == "vrf": return
    if fresh is None: fresh = good and not self.written[addr]
    self.cov.hit("port_x_range", (port, "out" if not good else "fresh" if fresh else "in"))
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
    ports = [r[0] for r in s.get("reads", []) + s.get("writes", []) + s.get("rows", [])] + (["gather", "scatter"] if s.get("elem") else [])
    ports += [f"{r[0]}_{d}" for r in s.get("rw", []) for d in ("rd", "wr")]
    if self.unit != "vrf":
      self.cov.cov.cross("port_x_range", ports, ["in", "out", "fresh"])
    ev = ["read_write_same_tile", "two_writes_same_tile", "access_first_cycle_after_reset", "reset_after_writes"]
    ev += ["boundary_tile"] if self.unit != "vrf" else ["write_conflict"]
    if self.unit == "vmem": ev.remove("two_writes_same_tile"); ev += ["scatter_partial_fresh_tile", "scatter_same_element"]
    self.cov.cov.bins("events", ev)
    if self.unit == "psum": self.cov.cov.cross("row_x_acc", range(self.n), [0, 1]); self.cov.cov.cross("acc_x_fp", [0, 1], [0, 1])
    if self.unit == "vrf": self.cov.cov.cross("write_x_reg", ["w0", "w1"], range(16))
    self.sb.cov = self.cov.cov

  def connect_phase(self):
    self.agent.ap.connect(self.sb.req_export)


