"""MXU tests (pyuvm), run by tests/rtl/test_mxu.py at N = 4, 8 and 16."""
from __future__ import annotations

import numpy as np
import pyuvm

from tinytpu.tb import kit
from .env import Cmd, ItemsSeq, MxuEnv, Read, Write, bad

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
  the utilisation (rows entering the array per busy cycle)."""
  async def body(self):
    t = min(64, self.tmax())
    await self.preload_vmem()
    seq = []
    for blk in range(4):
      seq += [self.mlw(), self.mmul(0, 0, t, int(blk > 0))]
    await self.send(self.env.cmd, seq)
    await self.readback()


@pyuvm.test()
class MxuTrace(MxuTest):
  """Logs a cycle-by-cycle trace of MLW, MMUL T=1, MLW, MMUL T=1 (the doc/mxu.md timing diagram)."""
  async def body(self):
    from cocotb.triggers import FallingEdge, ReadOnly
    await self.preload_vmem({0: self.tile(), 1: self.tile()})
    d, lines = self.dut, []

    async def trace():
      for c in range(24):
        await FallingEdge(d.clk_i); await ReadOnly()
        lines.append(f"{c:3d} cmd={int(d.cmd_valid_i.value) & int(d.cmd_ready_o.value)} row={int(d.row_o.value)} stall={int(d.stall_o.value)} "
                     f"psum_we={int(d.psum_we_o.value)} addr={int(d.psum_addr_o.value)} r={int(d.psum_row_o.value)} busy={int(d.busy_o.value)}")
    t = kit.agent.start_soon(trace())
    await self.send(self.env.cmd, [self.mlw(), self.mmul(0, 0, 1, 0), self.mlw(), self.mmul(1, 1, 1, 0)])
    await t
    self.logger.info("trace\n" + "\n".join(lines))
    await self.idle()
