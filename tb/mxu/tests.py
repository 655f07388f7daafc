"""MXU tests (pyuvm), run by tests/rtl/test_mxu.py at N = 4, 8 and 16."""
from __future__ import annotations

import numpy as np
import pyuvm
from cocotb.triggers import FallingEdge, ReadOnly

from tinytpu.tb import kit
from tinytpu.tb.kit import ItemsSeq

from .env import Cmd, MxuEnv, Read, Write

M32 = 0xFFFFFFFF


class MxuTest(kit.BaseTest):
  env_cls = MxuEnv
  timeout_us = 5000

  async def post_reset(self):
    await self.wait_until(lambda: int(self.dut.init_done_o.value), 4, "memory ready (the cycle after reset: no clear sweep)")

  @property
  def n(self): return self.env.n

  def tile(self, table="int8", only=None):
    return kit.random_tile(self.rng, self.n, table, only)[0]

  async def send(self, agent, items):
    await ItemsSeq("seq", items).start(agent.seqr)

  async def preload_vmem(self, tiles: dict[int, np.ndarray] | None = None):
    """Random int8-class activation tiles everywhere (or the given ones)."""
    tiles = tiles or {a: self.tile() for a in range(self.env.vm)}
    await self.send(self.env.cmd if False else self.env.vmw, [Write("w", addr=a, data=t) for a, t in tiles.items()])

  async def preload_psum(self, tiles: dict[int, np.ndarray]):
    await self.send(self.env.psw, [Write("w", addr=a, data=t) for a, t in tiles.items()])

  async def idle(self):
    await self.wait_until(lambda: not int(self.dut.busy_o.value) and not self.env.sb.pending(), 1 << 18, "MXU idle")

  async def readback(self):
    """Read every PSUM tile back through the core port and compare with the golden PSUM."""
    await self.idle()
    await self.send(self.env.psr, [Read("r", addr=a) for a in range(self.env.ps)])

  def mlw(self, w=None, **kw): return Cmd("mlw", mlw=1, w=self.tile() if w is None else w, n=self.n, **kw)
  def mmul(self, paddr, vaddr, t, acc, **kw): return Cmd("mmul", paddr=paddr, vaddr=vaddr, t=t, acc=acc, n=self.n, **kw)

  def tmax(self): return min(255, self.env.vm, self.env.ps)

  def rand_mmul(self, tmax=None, **kw):
    tmax = tmax or self.tmax()
    lo, hi = self.rng.choice([(1, 1), (1, 1), (2, 2), (3, 4), (5, 8), (9, 32), (1, tmax)])
    t = self.rng.randint(min(lo, tmax), min(hi, tmax))
    return self.mmul(self.rng.randint(0, self.env.ps - t), self.rng.randint(0, self.env.vm - t), t, self.rng.randint(0, 1), **kw)

  def bad_cmd(self):
    ps, vm = self.env.ps, self.env.vm
    return self.rng.choice([
      self.mmul(ps - 1, 0, 2, 0), self.mmul(ps, 0, 1, 1), self.mmul(M32, 0, 1, 0), self.mmul(0, vm - 1, 3, 0),
      self.mmul(0, vm, 1, 0), self.mmul(0, 0x80000000, 1, 1), self.mmul(0, 0, 0, 0)])


@pyuvm.test()
class MxuDirected(MxuTest):
  """acc 0/1, T sweep, int8 extremes (-128 * -128 sums), wide lanes (upper bits ignored), int32
  wrap on accumulate, zero weights after reset."""
  async def body(self):
    n, ps = self.n, self.env.ps
    await self.preload_vmem()
    # weights are zero after reset: an MMUL before any MLW writes zeros (and acc keeps the old value)
    await self.preload_psum({0: np.full((n, n), 7, np.uint32)})
    await self.send(self.env.cmd, [self.mmul(0, 0, 1, 1), self.mmul(1, 1, 1, 0)])
    # acc = 0 then acc = 1 twice onto the same tiles
    await self.send(self.env.cmd, [self.mlw(), self.mmul(2, 3, 2, 0), self.mmul(2, 5, 2, 1), self.mmul(2, 3, 2, 1)])
    # T sweep
    for t in [1, 2, 3, 4, 5, 7, 8, 9, 16, 31, 32, 33, 64, 127, 128, 255]:
      if t > self.tmax(): continue
      await self.send(self.env.cmd, [self.mlw(), self.mmul(self.rng.randint(0, ps - t), self.rng.randint(0, self.env.vm - t), t, t & 1)])
    await self.idle()
    # extremes: all -128 x all -128 = N * 16384 per lane; mixed int8_max / int8_min; wide lanes
    neg = np.full((n, n), 0xFFFFFF80, np.uint32)
    wide = (np.arange(n * n, dtype=np.uint32).reshape(n, n) * 0x01010101 + 0xABCDEF00).astype(np.uint32)
    await self.preload_vmem({0: neg, 1: np.full((n, n), 0x7F, np.uint32), 2: wide, 3: neg ^ 0x12345600})
    await self.send(self.env.cmd, [self.mlw(neg), self.mmul(0, 0, 4, 0), self.mlw(wide), self.mmul(4, 0, 4, 0),
                                   self.mlw(np.full((n, n), 0x7F, np.uint32)), self.mmul(8 % ps, 0, 2, 0)])
    await self.idle()
    # int32 wrap when accumulating onto INT_MAX / INT_MIN
    await self.preload_psum({0: np.full((n, n), 0x7FFFFFFF, np.uint32), 1: np.full((n, n), 0x80000000, np.uint32)})
    await self.send(self.env.cmd, [self.mlw(neg), self.mmul(0, 0, 1, 1), self.mlw(np.full((n, n), 0x7F, np.uint32)), self.mmul(1, 0, 1, 1)])
    await self.readback()


@pyuvm.test()
class MxuWeightSwap(MxuTest):
  """MLW while the previous MMUL still streams (shadow bank), MLW back to back (bank stall),
  MLW twice with no MMUL between, MMUL queue full."""
  async def body(self):
    await self.preload_vmem()
    tm = min(16, self.tmax())
    seq = [self.mlw(), self.mmul(0, 0, tm, 0), self.mlw(), self.mmul(0, 1, tm, 1), self.mlw(), self.mmul(1, 2, 1, 0),
           self.mlw(), self.mmul(2, 3, 1, 1), self.mlw(), self.mlw(), self.mmul(3, 4, 2, 0), self.mlw(), self.mmul(4, 5, 1, 0),
           self.mlw(), self.mmul(5, 6, 1, 1), self.mlw(), self.mlw(), self.mlw(), self.mmul(6, 7, 3, 1)]
    await self.send(self.env.cmd, seq)
    await self.readback()


@pyuvm.test()
class MxuRangeErrors(MxuTest):
  """Out-of-range or T = 0 commands flag err_o and change nothing; good commands around them run."""
  async def body(self):
    await self.preload_vmem()
    seq = [self.mlw()]
    for _ in range(12):
      seq += [self.bad_cmd(), self.rand_mmul(tmax=4)]
    seq += [self.mmul(self.env.ps - 2, self.env.vm - 2, 2, 1), self.mmul(0, 0, 1, 0)]  # the last legal tiles
    await self.send(self.env.cmd, seq)
    await self.readback()


@pyuvm.test()
class MxuRandom(MxuTest):
  """Constrained random command streams (MLW/MMUL mix, T, acc, idle gaps, errors), VMEM refilled
  between bursts, PSUM read back at the end. Checks functional coverage >= 95%."""
  bursts = 10  # enough stimulus that every seed reaches the 95% goal (seed 2022987359 missed it with 6)
  per_burst = 40

  async def body(self):
    for b in range(self.bursts):
      await self.idle()
      await self.preload_vmem()
      seq = []
      for _ in range(self.per_burst):
        r = self.rng.random()
        delay = self.rng.choice([0, 0, 0, 0, 1, 2, 5])
        if r < 0.3: seq.append(self.mlw(self.tile(), delay=delay))
        elif r < 0.34: c = self.bad_cmd(); c.delay = delay; seq.append(c)
        else: seq.append(self.rand_mmul(tmax=min(self.tmax(), 40), delay=delay))
      await self.send(self.env.cmd, seq)
    await self.readback()

  def check_phase(self):
    pct = self.env.cov.cov.pct()
    assert pct >= 95.0, f"MXU functional coverage {pct:.1f}% < 95%:\n{self.env.cov.cov.report()}"


@pyuvm.test(expect_fail=True)
class MxuBrokenModel(MxuWeightSwap):
  """The scoreboard predicts with the transposed weights: must fail (proves the checks bite)."""
  broken = True


@pyuvm.test()
class MxuGemm(MxuTest):
  """A long GEMM: MLW + one long MMUL per weight block, back to back; the status monitor logs
  the utilisation (rows entering the array per busy cycle). Exact: the first MLW is written the
  cycle after it is accepted (the first busy cycle), then every block costs one MLW emit cycle plus
  T*N row cycles with no bubble (T*N >= 2N-1 rows keep the other bank free, the tile buffer keeps
  the next MMUL's first tile ready), and the last row reaches PSUM 2N-1 cycles after it entered."""
  async def body(self):
    t, n = min(64, self.tmax()), self.n
    await self.preload_vmem()
    seq = []
    for blk in range(4):
      seq += [self.mlw(), self.mmul(0, 0, t, int(blk > 0))]
    await self.send(self.env.cmd, seq)
    await self.readback()
    st = self.env.status
    assert (st.rows, st.busy) == (4 * t * n, 4 * (1 + t * n) + 2 * n - 1), f"{st.rows} rows in {st.busy} busy cycles"


@pyuvm.test()
class MxuTrace(MxuTest):
  """Cycle-exact timing, expected values from the pipeline rules in doc/mxu.md (never from the
  RTL), and the logged cycle trace of MLW, MMUL T=1, MLW, MMUL T=1 (the doc's timing diagram).
  Rules: a command is queued the cycle after it is accepted (MLW forwarded and, into an empty tile
  buffer, written then); an MMUL finding the fetch stage free reads its first tile in its accept
  cycle and its row 0 enters the array the next cycle; an MLW takes one emit cycle, waiting until
  the last row on the bank it overwrites is in its last PE (entered 2N-2 cycles ago or earlier); a
  row entering at e is written to PSUM at e + 2N-1; busy_o from the cycle after the first accept
  to the last PSUM write."""
  async def record(self, cmds, cycles):
    """Sends cmds from an idle MXU; returns {signal: [cycles it was high]} (cycle 0 = the first
    accept) and the trace lines."""
    await self.idle()
    d, rec, lines = self.dut, [], []

    async def trace():
      for _ in range(cycles + 4):
        await FallingEdge(d.clk_i); await ReadOnly()
        rec.append({"acc": int(d.cmd_valid_i.value) & int(d.cmd_ready_o.value), "row": int(d.row_o.value),
                    "stall": int(d.stall_o.value), "we": int(d.psum_we_o.value), "busy": int(d.busy_o.value),
                    "addr": int(d.psum_addr_o.value), "r": int(d.psum_row_o.value)})
    t = kit.agent.start_soon(trace())
    await self.send(self.env.cmd, cmds)
    await t
    rec = rec[[x["acc"] for x in rec].index(1):][:cycles]
    for c, x in enumerate(rec):
      lines.append(f"{c:3d} cmd={x['acc']} row={x['row']} stall={x['stall']} psum_we={x['we']} addr={x['addr']} r={x['r']} busy={x['busy']}")
    return {k: [c for c, x in enumerate(rec) if x[k]] for k in ["acc", "row", "stall", "we", "busy"]}, lines

  def check(self, what, got, exp):
    for k, v in exp.items():
      assert got[k] == v, f"{what}: {k} high in cycles {got[k]}, expected {v}"

  async def body(self):
    n, lat = self.n, 2 * self.n - 1
    await self.preload_vmem({a: self.tile() for a in range(4)})
    rng = lambda a, b: list(range(a, b))
    # MLW W1 (0); MMUL p0 a0 T=1 (1); MLW W2 (2); MMUL p1 a1 T=1 (3), back to back.
    # W1 is written at 1; MM0 reads at 1 (W1 leaves the queue then), rows at 2..N+1.
    # W2 is forwarded at 3 and MM1 reads at 3 (its tile waits in the third buffer entry); W2 is
    # written at N+2 (bank 0: no row uses it), MM1's rows enter at N+3..2N+2.
    got, lines = await self.record([self.mlw(), self.mmul(0, 0, 1, 0), self.mlw(), self.mmul(1, 1, 1, 0)], 4 * n + 6)
    self.logger.info("trace\n" + "\n".join(lines))
    rows = rng(2, n + 2) + rng(n + 3, 2 * n + 3)
    self.check("MLW MMUL MLW MMUL", got, {"acc": [0, 1, 2, 3], "row": rows, "stall": [], "we": [e + lat for e in rows],
                                          "busy": rng(1, rows[-1] + lat + 1)})
    # a lone MMUL T=2 into the idle MXU: read at 0, rows at 1..2N
    got, _ = await self.record([self.mmul(2, 2, 2, 1)], 5 * n)
    self.check("MMUL T=2", got, {"row": rng(1, 2 * n + 1), "we": rng(2 * n, 4 * n), "busy": rng(1, 4 * n)})
    # MLW a (0, written at 1); MMUL T=1 (1, rows 2..N+1 on bank 1); MLW b (2, written at N+2 into
    # bank 0); MLW c (3) overwrites bank 1: its last row (N+1) reaches the last PE at N+1 + 2N-2,
    # so c waits from N+3 and is written at 3N-1 (stall_o for 2N-4 cycles)
    got, _ = await self.record([self.mlw(), self.mmul(3, 3, 1, 0), self.mlw(), self.mlw()], 5 * n)
    self.check("MLW MMUL MLW MLW", got, {"row": rng(2, n + 2), "stall": rng(n + 3, 3 * n - 1),
                                         "busy": rng(1, max(3 * n, n + 1 + lat + 1))})
    await self.readback()
