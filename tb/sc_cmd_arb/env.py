"""SparseCore command arbiter unit environment (rtl/sc_cmd_arb.sv alone, doc/chip.md "The
SparseCore on node 3").

On the chip two cores reach the arbiter only through whole programs; here each core is a model
that sends lookups whenever the contract lets it, and the SparseCore is a model that takes a
command while idle, works for a random time and answers the index check once in that time. So the
test reaches what programs rarely line up: both cores pending at once under every priority, a
lookup arriving in the cycle another core is granted, an answer in the SparseCore's first or last busy cycle,
and with CORES = 3 the round robin's wrap.

- `CoreModel` (one per core): at each falling edge, with chance `rate`, pulses `emb_valid_i[k]`
  with random command fields, but only while `emb_busy_o[k]` is low (the SXU's side of the
  contract: one lookup at a time, sent only while its SparseCore is free), looked at 1 ns after
  the edge, once this cycle's `busy_i` has settled through it.
- `ScModel`: `cmd_ready_i` = idle; a granted command makes it busy for 1 .. `max_work` cycles;
  the index check (`chk_valid_i`, `chk_bad_i` at random) comes once, in one of those cycles.
- `ArbScoreboard`: the contract of rtl/sc_cmd_arb.sv's header, per cycle, from its own reference
  (pending entries, priority, owner; never the RTL's): the grant (round robin from the core after
  the last granted, reset priority core 0) and its command fields, each `emb_busy_o`, the answer
  routed to the owner only. `broken` (a test) makes the reference start at core 1.
- `ArbCoverage`: grants per core, conflicts by who holds the priority, answers per core and
  verdict, a lookup while the other core owns the SparseCore, a lookup in the cycle another core
  is granted, answers on the first busy cycle, every core pending at once."""
from __future__ import annotations

import random

from cocotb.triggers import FallingEdge, ReadOnly, Timer
from pyuvm import uvm_component

from tinytpu.tb import kit

FIELDS = (("fp", 1), ("tbase", 32), ("rows", 32), ("width", 5), ("bag", 16), ("bags", 8), ("idx", 32), ("dst", 32))


def random_cmd(rng: random.Random) -> dict:
  return {f: rng.getrandbits(w) for f, w in FIELDS}


class CoreModel(uvm_component):
  def __init__(self, name, parent, core: int):
    super().__init__(name, parent)
    self.env, self.core = parent, core
    self.rate, self.left = 0.3, 0  # chance of a lookup per free cycle; lookups still to send
    self.sent = 0

  def step(self, busy: bool) -> dict | None:
    if self.left and not busy and self.env.rng.random() < self.rate:
      self.left -= 1
      self.sent += 1
      return random_cmd(self.env.rng)
    return None


class ScModel(uvm_component):
  def __init__(self, name, parent):
    super().__init__(name, parent)
    self.env = parent
    self.max_work = 6
    self.work = 0          # busy cycles left
    self.answer_at = 0     # the busy cycle (counting down) that carries the index check
    self.first = False     # this is the first busy cycle

  def busy(self) -> bool: return self.work > 0

  def answer(self) -> tuple[int, int]:
    """(chk_valid_i, chk_bad_i) for this cycle."""
    if self.work and self.work == self.answer_at:
      return 1, int(self.env.rng.random() < 0.3)
    return 0, 0

  def advance(self, granted: bool):
    """At the edge: a grant starts a job (the SparseCore was idle), otherwise a busy cycle passes."""
    self.first = False
    if self.work: self.work -= 1
    elif granted:
      self.work = self.env.rng.randint(1, self.max_work)
      self.answer_at = self.env.rng.randint(1, self.work)
      self.first = True


class Cycle:
  __slots__ = ("n", "valid", "cmds", "busy_o", "chk_valid_o", "chk_bad_o", "cmd_valid", "cmd", "ready", "sc_busy", "chk", "bad", "first")


class ArbBus(uvm_component):
  """The clock loop: inputs at the falling edge, then the cycle judged after ReadOnly."""
  def __init__(self, name, parent):
    super().__init__(name, parent)
    self.env = parent

  async def run_phase(self):
    e, d = self.env, self.env.dut
    d.emb_valid_i.value = 0
    d.cmd_ready_i.value, d.chk_valid_i.value, d.chk_bad_i.value, d.busy_i.value = 1, 0, 0, 0
    for f, _ in FIELDS: getattr(d, f"emb_{f}_i").value = 0
    while True:
      await FallingEdge(d.clk_i)
      e.cycle += 1
      running = bool(int(d.rst_ni.value))
      chk, bad = e.sc.answer()
      d.cmd_ready_i.value, d.busy_i.value = int(not e.sc.busy()), int(e.sc.busy())
      d.chk_valid_i.value, d.chk_bad_i.value = chk, bad
      # emb_busy_o follows this cycle's busy_i: the cores look once it has settled, as the SXU does
      await Timer(1, "ns")
      busy_now = int(d.emb_busy_o.value)
      cmds = [m.step(bool(busy_now >> k & 1)) if running else None for k, m in enumerate(e.models)]
      d.emb_valid_i.value = sum(1 << k for k, c in enumerate(cmds) if c)
      for f, w in FIELDS:
        getattr(d, f"emb_{f}_i").value = sum((c[f] if c else e.rng.getrandbits(w)) << (w * k) for k, c in enumerate(cmds))
      await ReadOnly()
      if not running:
        continue
      c = Cycle()
      c.n, c.cmds, c.valid = e.cycle, cmds, [x is not None for x in cmds]
      c.busy_o, c.chk_valid_o, c.chk_bad_o = int(d.emb_busy_o.value), int(d.emb_chk_valid_o.value), int(d.emb_chk_bad_o.value)
      c.cmd_valid = int(d.cmd_valid_o.value)
      c.cmd = {f: int(getattr(d, f"cmd_{f}_o").value) for f, _ in FIELDS}
      c.ready, c.sc_busy, c.chk, c.bad, c.first = not e.sc.busy(), e.sc.busy(), chk, bad, e.sc.first
      e.cov.sample(c)
      e.sb.judge(c)
      e.sc.advance(bool(c.cmd_valid))


class ArbScoreboard(kit.Scoreboard):
  def __init__(self, name, parent):
    super().__init__(name, parent)
    self.env = parent
    K = parent.cores
    self.entries: list[dict | None] = [None] * K  # the pending entries
    self.prio = 1 % K if getattr(parent.parent, "broken", False) else 0  # out of reset core 0 goes first
    self.owner = 0
    self.grants = [0] * K

  def busy(self, k: int, sc_busy: bool) -> bool:
    return self.entries[k] is not None or (sc_busy and self.owner == k)

  def pending_count(self) -> int: return sum(p is not None for p in self.entries)
  def pending(self) -> int: return self.pending_count() + int(self.env.sc.busy())

  def pick(self) -> int | None:
    K = len(self.entries)
    return next(((self.prio + i) % K for i in range(K) if self.entries[(self.prio + i) % K] is not None), None)

  def judge(self, c: Cycle):
    K = len(self.entries)
    self.checked += 1
    exp_busy = sum(1 << k for k in range(K) if self.busy(k, c.sc_busy))
    if c.busy_o != exp_busy:
      self.error(f"cycle {c.n}: emb_busy_o={c.busy_o:0{K}b}, expected {exp_busy:0{K}b} (pending "
                 f"{[int(p is not None) for p in self.entries]}, SparseCore {'busy' if c.sc_busy else 'idle'} for core {self.owner})")
    exp_chk = (1 << self.owner) if c.chk else 0
    if c.chk_valid_o != exp_chk or c.chk_bad_o != (exp_chk if c.bad else 0):
      self.error(f"cycle {c.n}: the index check went to {c.chk_valid_o:0{K}b} (bad {c.chk_bad_o:0{K}b}), "
                 f"expected the owner core {self.owner} only")
    win = self.pick() if c.ready else None
    if c.cmd_valid != int(win is not None):
      self.error(f"cycle {c.n}: cmd_valid_o={c.cmd_valid}, expected {int(win is not None)} "
                 f"(SparseCore {'idle' if c.ready else 'busy'}, pending {[int(p is not None) for p in self.entries]})")
    elif win is not None and c.cmd != self.entries[win]:
      bad = [f for f, _ in FIELDS if c.cmd[f] != self.entries[win][f]]
      self.error(f"cycle {c.n}: the SparseCore gets other {', '.join(bad)} than core {win}'s pending command "
                 f"(round robin from core {self.prio})")
    # the edge: the grant leaves its entry, new lookups enter theirs
    if win is not None:
      self.entries[win], self.owner, self.prio = None, win, (win + 1) % K
      self.grants[win] += 1
    for k, cmd in enumerate(c.cmds):
      if cmd is not None:
        if self.entries[k] is not None: self.error(f"cycle {c.n}: core {k} sent a second lookup (the env broke the contract)")
        self.entries[k] = cmd

  def check_phase(self):
    if self.pending_count(): self.error(f"lookups never granted: {[int(p is not None) for p in self.entries]}")
    self.logger.info(f"sc_cmd_arb: grants per core {self.grants}, {self.checked} cycles checked")
    super().check_phase()


class ArbCoverage(kit.CoverageCollector):
  unit = "sc_cmd_arb"

  def define(self, cov):
    K = self.parent_cores()
    cov.bins("grant", [f"core{k}" for k in range(K)])
    # a conflict (two or more pending) is won by the priority holder if it is pending, else by the
    # next pending core after it, which needs a third core
    cov.cross("conflict", [f"prio{k}" for k in range(K)], ["won_by_prio"] + (["won_by_next"] if K > 2 else []))
    cov.cross("answer", [f"core{k}" for k in range(K)], ["good", "bad"])
    cov.bins("events", ["lookup_while_other_owns", "lookup_during_other_grant", "answer_first_busy_cycle", "all_cores_pending"])

  def parent_cores(self) -> int:
    return kit.params().get("CORES", 2)

  def sample(self, c: Cycle):
    sb, K = self.parent.sb, len(self.parent.sb.entries)
    waiting = [k for k in range(K) if sb.entries[k] is not None]
    win = sb.pick() if c.ready else None
    if win is not None:
      self.cov.hit("grant", f"core{win}")
      if len(waiting) > 1: self.cov.hit("conflict", (f"prio{sb.prio}", "won_by_prio" if win == sb.prio else "won_by_next"))
    if len(waiting) == K: self.cov.hit("events", "all_cores_pending")
    if c.chk:
      self.cov.hit("answer", (f"core{sb.owner}", "bad" if c.bad else "good"))
      if c.first: self.cov.hit("events", "answer_first_busy_cycle")
    for k, cmd in enumerate(c.cmds):
      if cmd is None: continue
      if c.sc_busy and sb.owner != k: self.cov.hit("events", "lookup_while_other_owns")
      if win is not None and win != k: self.cov.hit("events", "lookup_during_other_grant")


class ArbEnv(kit.Env):
  def build_phase(self):
    self.cores = kit.params().get("CORES", 2)
    self.cycle = 0
    self.models = [CoreModel(f"core{k}", self, k) for k in range(self.cores)]
    self.sc = ScModel("sc", self)
    self.bus = ArbBus("bus", self)
    self.sb = ArbScoreboard("sb", self)
    self.cov = ArbCoverage("cov", self)

  def settled(self) -> bool:
    return not any(m.left for m in self.models) and not self.sb.pending()
