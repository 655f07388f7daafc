"""pyuvm tests of the XLU (rtl/xlu.sv); run by tests/rtl/test_xlu.py. See tb/xlu/env.py."""
import os

import pyuvm

from tinytpu.tb import kit
from tinytpu.tb.xlu import env as E


def _n() -> int: return int(kit.params().get("N", 4))


class XluTest(kit.BaseTest):
  env_cls = E.XluEnv
  timeout_us = 20_000


@pyuvm.test()
class XluDirected(XluTest):
  """Every function at its edge cases, back to back."""
  async def body(self):
    self.items = E.directed(_n(), self.rng)
    await kit.ItemsSeq("directed", self.items).start(self.env.req.seqr)

  def check_phase(self):
    assert self.env.sb.checked == len(self.items), f"checked {self.env.sb.checked} of {len(self.items)}"


@pyuvm.test()
class XluRandom(XluTest):
  """Random functions, operands and issue gaps; coverage must reach 95% (N <= 8)."""
  async def body(self):
    n = _n()
    self.count = int(os.environ.get("TINYTPU_XLU_OPS", 0)) or {4: 800, 8: 1500}.get(n, 200)
    await kit.ItemsSeq("random", E.random_items(n, self.rng, self.count)).start(self.env.req.seqr)

  def check_phase(self):
    assert self.env.sb.checked == self.count, f"checked {self.env.sb.checked} of {self.count}"
    if _n() <= 8 and not os.environ.get("TINYTPU_XLU_OPS"):
      assert self.env.cov.cov.pct() >= 95.0, self.env.cov.cov.report()


class BrokenScoreboard(E.XluScoreboard):
  def predict(self, req):  # XROT the wrong way round
    exp = super().predict(req)
    if req.fn == "XROT": exp["result"] = E.GOLDEN["XROT"](req.a.copy(), req.idx, -int(req.k), 0, 0)
    return exp


class BrokenEnv(E.XluEnv):
  sb_cls = BrokenScoreboard


@pyuvm.test(expect_fail=True)
class XluBrokenModel(XluTest):
  """A deliberately wrong prediction (XROT rotating the other way) must fail."""
  env_cls = BrokenEnv

  async def body(self):
    await kit.ItemsSeq("d", [E.XluReq("x").make(self.rng, _n(), "XROT", 0, k=1)]).start(self.env.req.seqr)
