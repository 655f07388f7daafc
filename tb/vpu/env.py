"""pyuvm environment of the VPU (rtl/vpu.sv), built on tb/kit.

Requests are monitored on valid_i/ready_o, results on valid_o. Results complete out of issue order
(every function has its own latency), so the scoreboard matches each result by the cycle it is
due (accept cycle + isa.VPU_LATENCY) instead of in order: that checks value, tag and latency at
once. A timing probe checks ready_o and busy_o every cycle against the set of ops in flight.
The functions under test are every VPU function of the ISA table (isa.VPU_FNS), their classes
isa.VPU_CLASS; expected values come from the golden model (tinytpu.golden.ops.VPU), which must
define every one of them (importing this module fails otherwise). A function the RTL lacks gives a
wrong result (or fires vpu.sv's assertions) and fails the run."""
from __future__ import annotations

import random

import cocotb
import numpy as np
from cocotb.triggers import FallingEdge, ReadOnly
from pyuvm import uvm_component, uvm_sequence

from tinytpu import isa
from tinytpu.golden.ops import VPU as GOLDEN
from tinytpu.tb import kit

FNS = list(isa.VPU_FNS)                   # index = fn code
LAT = dict(isa.VPU_LATENCY)
ARITY = dict(isa.VPU_ARITY)
CLASS = dict(isa.VPU_CLASS)               # int_lane, int_tile, fp_lane, fp_tile
GROUP = {i.mnemonic[1:]: i.group.split(": ", 1)[1] for i in isa.INSTRS if i.op == isa.OP["VPU"]}
_missing = [f for f in FNS if f not in GOLDEN]
if _missing:
  raise RuntimeError(f"the golden model (tinytpu.golden.ops.VPU) lacks VPU functions of the ISA table: {' '.join(_missing)}")


def is_fp(fn: str) -> bool: return CLASS[fn].startswith("fp_")
def is_tile(fn: str) -> bool: return CLASS[fn].endswith("_tile")
def fns_of(*classes: str) -> list[str]: return [f for f in FNS if CLASS[f] in classes]


ENABLED = FNS                             # every function is tested
SHIFTS = {"SHL", "SHR", "SRA", "ROTL", "ROTR"}
P8 = {f for f in FNS if f.startswith("P8")}

# ---- operand classes beyond the kit's: shift amounts and packed bytes
M32 = 0xFFFFFFFF
SHAMT = {
  "zero": (2, lambda r: 0),
  "one": (1, lambda r: 1),
  "s31": (2, lambda r: 31),
  "s32": (2, lambda r: 32),
  "s33": (1, lambda r: 33),
  "small": (2, lambda r: r.randint(2, 30)),
  "negative": (2, lambda r: r.randint(-40, -1) & M32),
  "random": (2, lambda r: r.getrandbits(32)),
}
BYTE_EDGES = [0x00, 0x01, 0x7F, 0x80, 0x81, 0xFF, 0xFE, 0x40, 0xC0, 0x3F]
def _bytes(f): return lambda r: sum(f(r) << (8 * i) for i in range(4))
P8TAB = {
  "zero": (1, lambda r: 0),
  "sat_hi": (2, _bytes(lambda r: r.randint(0x60, 0x7F))),
  "sat_lo": (2, _bytes(lambda r: r.randint(0x80, 0xA0))),
  "edges": (3, _bytes(lambda r: r.choice(BYTE_EDGES))),
  "random": (3, lambda r: r.getrandbits(32)),
}


def classify_shamt(v: int) -> str:
  if v == 0: return "zero"
  if v == 1: return "one"
  if v == 31: return "s31"
  if v == 32: return "s32"
  if v == 33: return "s33"
  if 2 <= v <= 30: return "small"
  if v >= 0xFFFFFFD8: return "negative"
  return "random"


def classify_p8(v: int) -> str:
  b = [(v >> (8 * i)) & 0xFF for i in range(4)]
  if v == 0: return "zero"
  if all(0x60 <= x <= 0x7F for x in b): return "sat_hi"
  if all(0x80 <= x <= 0xA0 for x in b): return "sat_lo"
  if all(x in BYTE_EDGES for x in b): return "edges"
  return "random"


def table(fn: str, operand: str):
  """(operand class table, classifier) of one operand of a function."""
  if is_fp(fn) and fn not in ("I2F", "U2F"): return "fp32", kit.classify_fp32
  if fn in P8: return P8TAB, classify_p8
  if fn in SHIFTS and operand == "b": return SHAMT, classify_shamt
  return "int32", kit.classify_int32


def class_names(fn: str, operand: str) -> list[str]:
  """The coverage bins of an operand: what its classifier can return."""
  t, _ = table(fn, operand)
  return {"fp32": kit.FP32_BINS, "int32": kit.INT32_BINS}.get(t) if isinstance(t, str) else list(t)


def operands_of(fn: str) -> list[str]:
  return ["a", "b", "c"][:ARITY[fn]]


# ---- transactions
class VpuReq(kit.Item):
  """One VPU op: fn (name), a/b/c tiles, tag, delay (idle cycles before it is offered)."""
  def randomize_op(self, rng: random.Random, n: int, fn: str, tag: int, delay: int) -> "VpuReq":
    self.fn, self.tag, self.delay = fn, tag, delay
    for o in "abc":
      t, _ = table(fn, o)
      tile, cls = kit.random_tile(rng, n, t)
      setattr(self, o, tile)
      self.cls[o] = cls
    if fn == "SEL":  # a condition tile with plenty of zeros
      self.c = np.where(np.array([rng.random() < 0.5 for _ in range(n * n)]).reshape(n, n), self.c, 0).astype(np.uint32)
    return self


class VpuRsp(kit.Item):
  pass


class FnPort(kit.Sig):
  """fn_i as a function name."""
  def put(self, dut, v): self.handle(dut).value = isa.VPU_FNS[v]
  def get(self, dut): return FNS[self.handle(dut).value.to_unsigned()]


def is_nan(x): return ((x >> 23) & 0xFF) == 0xFF and (x & 0x7FFFFF) != 0
CANON_NAN = 0x7FC00000


class VpuScoreboard(kit.Scoreboard):
  """Matches every result to the op due in its cycle; predicts with the golden model."""
  def __init__(self, name, parent):
    super().__init__(name, parent)
    self.due: dict[int, tuple] = {}   # result cycle -> (req, expected, accept cycle)
    self.accepted = 0

  def predict(self, req):
    a, b, c = req.a, req.b, req.c
    return {"result": np.asarray(GOLDEN[req.fn](a.copy(), b.copy(), c.copy()), dtype=np.uint32), "tag": req.tag}

  def write_req(self, req):
    self.accepted += 1
    due = req.cycle + LAT[req.fn]
    if due in self.due:
      self.error(f"accepted {req.fn} (tag {req.tag}) due in cycle {due}, when {self.due[due][0].fn} (tag {self.due[due][0].tag}) is due too: ready_o should have been low")
    self.due[due] = (req, self.predict(req), req.cycle)

  def write_rsp(self, rsp):
    entry = self.due.pop(rsp.cycle, None)
    if entry is None:
      return self.error(f"result in cycle {rsp.cycle} with no op due then: tag {rsp.tag} (ops due: {sorted(self.due)})")
    req, exp, _ = entry
    self.compare(req, exp, rsp)

  strict_nan = False  # the ISA lets the RTL give any NaN where the golden model has the canonical one

  def compare(self, req, exp, rsp):
    if is_fp(req.fn) and not self.strict_nan:
      e, g = exp["result"], rsp.result
      nan_ok = (e == CANON_NAN) & np.vectorize(is_nan)(g).astype(bool)
      exp = dict(exp, result=np.where(nan_ok, g, e).astype(np.uint32))
    super().compare(req, exp, rsp)

  def in_flight(self, cycle: int) -> list[tuple[int, int]]:
    """(due cycle, latency) of every op accepted before `cycle` still waiting for its result."""
    return [(d, d - acc) for d, (_, _, acc) in self.due.items() if acc < cycle]

  def pending(self) -> int:
    return len(self.due)

  def check_phase(self):
    if self.due:
      d = min(self.due)
      self.error(f"{len(self.due)} results never arrived; first due in cycle {d}: {self.due[d][0]}")
    self.logger.info(f"scoreboard: {self.accepted} accepted, {self.checked} checked, {len(self.errors)} errors")
    assert not self.errors, f"{len(self.errors)} scoreboard errors; first:\n{self.errors[0]}"


class TimingProbe(uvm_component):
  """Every cycle: ready_o for the offered fn must be high exactly when no op in flight is due in
  the cycle the offered op would finish; busy_o exactly when some op in flight finishes later.
  Stalls are reported to coverage as (offered latency, blocking latency)."""
  def __init__(self, name, parent, sb: VpuScoreboard, cov):
    super().__init__(name, parent)
    self.sb, self.cov, self.dut = sb, cov, cocotb.top
    self.stalls = 0

  async def run_phase(self):
    d, cycle = self.dut, 0
    while True:
      await FallingEdge(d.clk_i)
      await ReadOnly()
      cycle += 1
      if not int(d.rst_ni.value): continue
      fl = self.sb.in_flight(cycle)
      busy = any(due > cycle for due, _ in fl)
      if int(d.busy_o.value) != busy:
        self.sb.error(f"cycle {cycle}: busy_o={int(d.busy_o.value)}, expected {int(busy)} (in flight: {fl})")
      if int(d.valid_i.value):
        fn = FNS[d.fn_i.value.to_unsigned()]
        blockers = [lat for due, lat in fl if due == cycle + LAT[fn]]
        ready = int(d.ready_o.value)
        if ready != (not blockers):
          self.sb.error(f"cycle {cycle}: ready_o={ready} for {fn} (latency {LAT[fn]}), expected {int(not blockers)} (in flight: {fl})")
        if blockers:
          self.stalls += 1
          self.cov.stall(LAT[fn], blockers[0])


class VpuCoverage(kit.CoverageCollector):
  """fn x operand class (per lane of a and b), back-to-back pairs of function groups and of
  latencies, and write-back collisions (offered latency x latency of the op in the way)."""
  unit = "vpu"

  def define(self, cov):
    fns = ENABLED
    cov.bins("fn_x_a", [(f, c) for f in fns for c in class_names(f, "a")])
    cov.bins("fn_x_b", [(f, c) for f in fns if ARITY[f] >= 2 for c in class_names(f, "b")])
    groups = sorted({GROUP[f] for f in fns})
    cov.pairs("group_pairs", [g.replace(" ", "_") for g in groups])
    lats = sorted({LAT[f] for f in fns})
    cov.pairs("latency_pairs", lats)
    cov.bins("stall", [(lo, hi) for lo in lats for hi in lats if lo < hi])
    self.prev_cycle = None

  def sample(self, req):
    for o in operands_of(req.fn)[:2]:
      _, classify = table(req.fn, o)
      for cls in {classify(int(v)) for v in getattr(req, o).ravel()}:
        self.cov.hit(f"fn_x_{o}", (req.fn, cls))
    b2b = self.prev_cycle is not None and req.cycle == self.prev_cycle + 1
    self.cov.pair("group_pairs", GROUP[req.fn].replace(" ", "_"), back_to_back=b2b)
    self.cov.pair("latency_pairs", LAT[req.fn], back_to_back=b2b)
    self.prev_cycle = req.cycle

  def stall(self, lat, blocker):
    self.cov.hit("stall", (lat, blocker))


class VpuEnv(kit.Env):
  """The VPU's agents, scoreboard, timing probe and a coverage collector (`cov_cls`: sample(req)
  for every accepted op, stall(lat, blocker) for every write-back collision)."""
  sb_cls = VpuScoreboard
  cov_cls = VpuCoverage

  def build_phase(self):
    tile = kit.Tile
    req = kit.Channel({"fn": FnPort("fn_i"), "a": tile("a_i"), "b": tile("b_i"), "c": tile("c_i"), "tag": "tag_i"},
                      VpuReq, valid="valid_i", ready="ready_o")
    rsp = kit.Channel({"result": tile("result_o"), "tag": "tag_o"}, VpuRsp, valid="valid_o")
    self.req = kit.Agent("req", self, req, self.dut)
    self.rsp = kit.Agent("rsp", self, rsp, self.dut, active=False)
    self.sb = self.sb_cls("sb", self)
    self.cov = self.cov_cls("cov", self)
    self.probe = TimingProbe("probe", self, self.sb, self.cov)

  def connect_phase(self):
    self.req.ap.connect(self.sb.req_export)
    self.rsp.ap.connect(self.sb.rsp_export)
    self.req.ap.connect(self.cov.export(self.cov.sample))


class RandomSeq(uvm_sequence):
  """`count` random ops over `fns` (weighted toward multi-cycle ones so collisions happen), with
  random issue gaps (mostly back to back). Every `CYCLIC`-th op comes from a shuffled bag of all
  of `fns` (SystemVerilog's randc), so a stream of `CYCLIC * len(fns)` ops issues every function:
  with weighted draws alone, half the seeds of an 800-op stream leave one out."""
  CYCLIC = 4

  def __init__(self, name, rng, n, count, fns, tag0=0):
    super().__init__(name); self.rng, self.n, self.count, self.fns, self.tag0 = rng, n, count, fns, tag0

  async def body(self):
    w = [3 if LAT[f] > 1 else 1 for f in self.fns]
    groups = sorted({GROUP[f] for f in self.fns})
    bag: list[str] = []
    for i in range(self.count):
      if i % self.CYCLIC == 0:
        if not bag: bag = self.rng.sample(self.fns, len(self.fns))
        fn = bag.pop()
      elif self.rng.random() < 0.7: fn = self.rng.choices(self.fns, weights=w)[0]
      else:  # a group first, so small groups meet every other group back to back
        g = self.rng.choice(groups)
        fn = self.rng.choice([f for f in self.fns if GROUP[f] == g])
      it = VpuReq(f"r{i}").randomize_op(self.rng, self.n, fn, (self.tag0 + i) & 0xFF,
                                          self.rng.choice([0, 0, 0, 0, 0, 1, 1, 2, 3]))
      await self.start_item(it)
      await self.finish_item(it)


def tiles_of(lanes: list[int], n: int) -> list[np.ndarray]:
  """Pack a list of lane values into as many N x N tiles as needed (the last padded with zeros)."""
  L = n * n
  lanes = list(lanes) + [0] * (-len(lanes) % L)
  return [np.array(lanes[i:i + L], dtype=np.uint32).reshape(n, n) for i in range(0, len(lanes), L)]


INT_EDGES = [0, 1, 2, M32, M32 - 1, 0x80000000, 0x80000001, 0x7FFFFFFF, 0x7FFFFFFE, 31, 32, 33, 7, (-7) & M32,
             0x80, 0xFF, 0x7F, 0x8000, 0xFFFF, 0x7FFF, 0x12345678, 0xDEADBEEF, 0x01000000, 0x00010000]
FP_EDGES = [kit.f2b(x) for x in (0.0, -0.0, 1.0, -1.0, 0.5, 1.5, 2.5, -2.5, 3.0, 1e-40, -1e-40, 1e38, -1e38, 3.4e38,
                                  float("inf"), float("-inf"), 0.1, 2 ** -126, 123456.7, -0.75, 16777217.0, 2 ** 31, -2 ** 31)] + [0x7FC00000, 0xFFC00001, 0x00000001, 0x7F7FFFFF]


def directed_items(fn: str, n: int, rng: random.Random) -> list[VpuReq]:
  """Edge-case operands of one function: every (a, b) pair of its edge set, lane by lane."""
  if fn in P8:
    # every pair of edge bytes, four pairs per lane
    pairs = [(x, y) for x in BYTE_EDGES for y in BYTE_EDGES]
    pairs += [(0, 0)] * (-len(pairs) % 4)
    av = [sum(p[0] << (8 * k) for k, p in enumerate(pairs[i:i + 4])) for i in range(0, len(pairs), 4)]
    bv = [sum(p[1] << (8 * k) for k, p in enumerate(pairs[i:i + 4])) for i in range(0, len(pairs), 4)]
  else:
    edges = FP_EDGES if table(fn, "a")[0] == "fp32" else INT_EDGES
    if ARITY[fn] == 1:
      av, bv = list(edges), [0] * len(edges)
    else:
      bedges = edges + ([] if fn not in SHIFTS else [31, 32, 33, 63, 64, M32 - 30])
      av = [x for x in edges for _ in bedges]
      bv = [y for _ in edges for y in bedges]
  cv = [INT_EDGES[i % len(INT_EDGES)] if fn != "SEL" else (0 if i % 3 == 0 else INT_EDGES[i % len(INT_EDGES)]) for i in range(len(av))]
  items = []
  for i, (a, b, c) in enumerate(zip(tiles_of(av, n), tiles_of(bv, n), tiles_of(cv, n))):
    it = VpuReq(f"{fn}_{i}"); it.fn, it.a, it.b, it.c, it.tag, it.delay = fn, a, b, c, i & 0xFF, 0
    items.append(it)
  return items


def reduction_tiles(n: int, rng: random.Random, fp: bool) -> list[np.ndarray]:
  """Tiles for the reductions and argmax/argmin: constant tiles, ties at the extreme, wrap-around."""
  L = n * n
  if fp:
    vals = [kit.f2b(x) for x in (1.0, -2.0, 0.5, 3.0)]
    return [np.full((n, n), v, np.uint32) for v in vals] + [kit.random_tile(rng, n, "fp32")[0] for _ in range(6)]
  out = [np.full((n, n), v, np.uint32) for v in (0, 1, M32, 0x7FFFFFFF, 0x80000000, 3)]
  ties = np.zeros((n, n), np.uint32)
  for r in range(n):  # the extreme twice in each row: max at r % n and later, min likewise
    ties[r, :] = rng.randrange(1 << 20)
    ties[r, r % n] = ties[r, (r + 1) % n] = 0x7FFFFFFF
    ties[r, (r + 2) % n] = ties[r, (r + 3) % n] = 0x80000000 if n > 3 else ties[r, (r + 2) % n]
  out.append(ties)
  out.append(np.arange(L, dtype=np.uint32).reshape(n, n)[::-1].copy())  # strictly decreasing
  out += tiles_of([rng.choice(INT_EDGES) for _ in range(L)], n)
  out += [kit.random_tile(rng, n, "int32")[0] for _ in range(4)]
  return out


def all_directed(n: int, rng: random.Random, fns: list[str]) -> list[VpuReq]:
  items = []
  for fn in fns:
    if GROUP[fn] == "reductions":
      for i, t in enumerate(reduction_tiles(n, rng, is_fp(fn))):
        it = VpuReq(f"{fn}_{i}"); it.fn, it.a, it.b, it.c, it.tag, it.delay = fn, t, t * 0, t * 0, i & 0xFF, 0
        items.append(it)
    else:
      items += directed_items(fn, n, rng)
  for i, it in enumerate(items): it.tag = i & 0xFF
  return items
