"""pyuvm tests of the SparseCore (rtl/sparsecore.sv); run by tests/rtl/test_sparsecore.py. See
tb/sparsecore/env.py."""
import os

import pyuvm

from tinytpu.tb import kit
from tinytpu.tb.sparsecore import env as E


class ScTest(kit.BaseTest):
  env_cls = E.EmbEnv
  timeout_us = 200_000

  def cmds(self) -> list:
    raise NotImplementedError

  async def body(self):
    self.items = self.cmds()
    await kit.ItemsSeq("cmds", self.items).start(self.env.seqr)

  def check_phase(self):
    assert self.env.sb.checked == len(self.items), f"checked {self.env.sb.checked} of {len(self.items)}"


def _n() -> int: return int(kit.params().get("N", 4))


def _lat() -> int: return int(kit.params().get("HBM_LATENCY", 16))


@pyuvm.test()
class ScDirected(ScTest):
  """Edge shapes: one row of one tile, a bag of one tile of indices, the widest row, 255 bags, a
  bad index at the first and at the last lane, negative and INT_MIN indices, back-pressure."""
  def cmds(self):
    r, n, lat = self.rng, _n(), _lat()
    L = n * n
    out = [E.make_cmd(r, n, lat, fp=False, width=1, bag=1, bags=1, rows=1, ready=1.0),
           E.make_cmd(r, n, lat, fp=True, width=4, bag=L, bags=4, ready=1.0),
           E.make_cmd(r, n, lat, fp=False, width=16, bag=3, bags=2, ready=0.5),
           E.make_cmd(r, n, lat, fp=True, width=1, bag=1, bags=255, rows=7, ready=1.0),
           E.make_cmd(r, n, lat, fp=False, width=2, bag=L + 1, bags=5, ready=0.3)]
    for k in range(4):
      c = E.make_cmd(r, n, lat, fp=bool(k & 1), width=1, bag=L, bags=3, rows=9)
      c.indices[[0, len(c.indices) - 1, 5 % len(c.indices), L + 1][k]] = [9, -1, 1 << 31, 0x7FFFFFFF][k]
      out.append(c)
    return out


@pyuvm.test()
class ScRandom(ScTest):
  """Random lookups (shapes, modes, repeated indices, a bad list now and then, back-pressure and
  HBM latencies); coverage must reach 100%."""
  def cmds(self):
    count = int(os.environ.get("TINYTPU_SC_CMDS", 0)) or 40
    L = _n() ** 2
    sweep = [E.make_cmd(self.rng, _n(), _lat(), fp=fp, bag=bag, width=w, bags=self.rng.choice([1, 2, 5]))
             for fp in (False, True) for bag in (1, 3, L, L + 1) for w in (1, 3, 16)]  # every mode x bag x width
    return sweep + [E.make_cmd(self.rng, _n(), _lat(), bad=self.rng.random() < .15) for _ in range(count)]

  def check_phase(self):
    super().check_phase()
    if not os.environ.get("TINYTPU_SC_CMDS"):
      assert self.env.cov.cov.pct() >= 100.0, self.env.cov.cov.report()


class BrokenScoreboard(E.EmbScoreboard):
  def predict(self, c, store):  # fp32 sums in the reverse order
    bad, writes = super().predict(c, store)
    if c.fp and not bad and c.bag > 2:
      import numpy as np
      c2 = E.EmbCmd(**{**c.__dict__})
      c2.indices = c.indices.reshape(-1, c.bag)[:, ::-1].reshape(-1).copy()
      _, w2 = super().predict(c2, store)
      if any(not np.array_equal(w2[a], writes[a]) for a in writes): return bad, w2
      return bad, {a: t ^ 1 for a, t in writes.items()}
    return bad, writes


class BrokenEnv(E.EmbEnv):
  sb_cls = BrokenScoreboard


@pyuvm.test(expect_fail=True)
class ScBrokenModel(ScTest):
  """A wrong prediction (fp32 bags summed in the other order) must fail."""
  env_cls = BrokenEnv

  def cmds(self):
    return [E.make_cmd(self.rng, _n(), _lat(), fp=True, bag=7, bags=3, width=2)]
