"""pyuvm tests of the VPU (rtl/vpu.sv); run by tests/rtl/test_vpu.py. See tb/vpu/env.py."""
import os

import pyuvm

from tinytpu.tb import kit
from tinytpu.tb.vpu import env as E


def _n() -> int: return int(kit.params().get("N", 4))


class VpuTest(kit.BaseTest):
  env_cls = E.VpuEnv
  timeout_us = 20_000


@pyuvm.test()
class VpuDirected(VpuTest):
  """Every VPU function of the ISA table on its edge-case operand set, back to back."""
  async def body(self):
    self.items = E.all_directed(_n(), self.rng, E.ENABLED)
    await kit.ItemsSeq("directed", self.items).start(self.env.req.seqr)

  def check_phase(self):
    assert self.env.sb.checked == len(self.items), f"checked {self.env.sb.checked} of {len(self.items)}"


@pyuvm.test()
class VpuCollisions(VpuTest):
  """A long op, then a shorter one offered at every gap: the ones that would finish in the same
  cycle must stall exactly one cycle (the probe checks ready_o every cycle)."""
  async def body(self):
    n, items = _n(), []
    lats = sorted({E.LAT[f] for f in E.ENABLED})
    rep = {l: next(f for f in E.ENABLED if E.LAT[f] == l) for l in lats}
    for hi in lats:
      for lo in lats:
        if lo >= hi: continue
        for gap in range(hi - lo + 1):
          a = E.VpuReq("long").randomize_op(self.rng, n, rep[hi], len(items) & 0xFF, 2)
          b = E.VpuReq("short").randomize_op(self.rng, n, rep[lo], (len(items) + 1) & 0xFF, gap)
          items += [a, b]
    self.items = items
    await kit.ItemsSeq("collide", items).start(self.env.req.seqr)

  def check_phase(self):
    assert self.env.sb.checked == len(self.items)
    assert self.env.probe.stalls > 0, "no collision stall was seen"


@pyuvm.test()
class VpuRandom(VpuTest):
  """Constrained-random stream over every enabled function; coverage must reach 95% (N <= 8)."""
  count = None

  async def body(self):
    n = _n()
    self.count = int(os.environ.get("TINYTPU_VPU_OPS", 0)) or {4: 1500, 8: 800}.get(n, 150)
    await E.RandomSeq("random", self.rng, n, self.count, E.ENABLED).start(self.env.req.seqr)

  def check_phase(self):
    assert self.env.sb.checked == self.count, f"checked {self.env.sb.checked} of {self.count}"
    cov = self.env.cov.cov
    if _n() <= 8 and not os.environ.get("TINYTPU_VPU_OPS"):
      assert cov.pct() >= 95.0, cov.report()


class BrokenScoreboard(E.VpuScoreboard):
  def predict(self, req):
    exp = super().predict(req)
    if req.fn == "ADD": exp["result"] = exp["result"] ^ 1
    return exp


class BrokenEnv(E.VpuEnv):
  sb_cls = BrokenScoreboard


@pyuvm.test(expect_fail=True)
class VpuBrokenModel(VpuTest):
  """A deliberately wrong prediction (ADD off by one bit) must fail: the scoreboard bites."""
  env_cls = BrokenEnv

  async def body(self):
    await kit.ItemsSeq("directed", E.directed_items("ADD", _n(), self.rng)[:2]).start(self.env.req.seqr)
