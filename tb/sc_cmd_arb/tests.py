"""SparseCore command arbiter tests (pyuvm), run by tests/rtl/test_sc_cmd_arb.py. Expected values
come from the scoreboard's reference of the contract in rtl/sc_cmd_arb.sv's header."""
from __future__ import annotations

import os

import pyuvm

from tinytpu.tb import kit

from .env import ArbEnv


class ScArbTest(kit.BaseTest):
  env_cls = ArbEnv
  timeout_us = 20_000  # 2M cycles: a backstop; every wait below is bounded itself
  scale = int(os.environ.get("TINYTPU_SCARB_SCALE", "1"))  # nightly: more lookups per test

  async def lookups(self, per_core: int, rate: float, max_work: int):
    e = self.env
    e.sc.max_work = max_work
    for m in e.models: m.rate, m.left = rate, per_core * self.scale
    await self.settle_or_fail(e.settled, "every lookup granted and done")


@pyuvm.test()
class ScArbRandom(ScArbTest):
  """Every core sending lookups at random, the SparseCore busy for 1 to 6 cycles each."""
  async def body(self):
    await self.lookups(200, 0.3, 6)


@pyuvm.test()
class ScArbContention(ScArbTest):
  """Every core sends again as soon as it is free, the SparseCore takes one cycle: every grant is
  contended, so the round robin must serve the cores in turn; then long jobs."""
  async def body(self):
    await self.lookups(150, 1.0, 1)
    g = self.env.sb.grants
    assert max(g) - min(g) <= 1, g
    await self.lookups(60, 1.0, 12)


@pyuvm.test()
class ScArbSparse(ScArbTest):
  """Rare lookups: a lone core's lookup reaches the idle SparseCore the next cycle."""
  async def body(self):
    await self.lookups(60, 0.03, 3)


@pyuvm.test(expect_fail=True)
class ScArbBrokenModel(ScArbContention):
  """The scoreboard must catch a wrong priority: its reference starts at core 1."""
  broken = True
