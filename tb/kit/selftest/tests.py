"""The kit's self-test: a valid/ready ALU env built only from kit parts. KitRandom must pass;
KitBrokenModel predicts with a deliberately wrong model and must fail (proves the scoreboard bites);
KitUndrivenInput forgets an input and must fail (the kit's driven-inputs check)."""
import pyuvm
from cocotb.triggers import RisingEdge
from pyuvm import uvm_sequence

from tinytpu.tb import kit

OPS = ["add", "sub", "xor", "mul"]
M32 = 0xFFFFFFFF


class AluReq(kit.Item):
  rand_fields = {"op": [0, 1, 2, 3], "a": "int32", "b": "int32", "delay": [0, 0, 0, 1, 2]}


class AluRsp(kit.Item):
  pass


def model(op, a, b):
  return [(a + b), (a - b), a ^ b, a * b][op] & M32


class AluScoreboard(kit.Scoreboard):
  broken = False
  def predict(self, req):
    return {"res": model(req.op, req.a, req.b) ^ (1 if self.broken and req.op == 3 else 0)}


class AluCoverage(kit.CoverageCollector):
  unit = "kit_alu"
  def define(self, cov):
    cov.cross("op_x_a", OPS, kit.INT32_BINS)
    cov.pairs("op_pairs", OPS)
  def sample(self, req):
    self.cov.hit("op_x_a", (OPS[req.op], kit.classify_int32(req.a)))
    self.cov.pair("op_pairs", OPS[req.op])


class AluEnv(kit.Env):
  req_fields = {"op": "op_i", "a": "a_i", "b": "b_i"}

  def build_phase(self):
    req = kit.Channel(self.req_fields, AluReq, valid="req_valid_i", ready="req_ready_o")
    rsp = kit.Channel({"res": "res_o"}, AluRsp, valid="res_valid_o", ready="res_ready_i", ready_prob=0.7)
    self.req = kit.Agent("req", self, req, self.dut)
    self.rsp = kit.Agent("rsp", self, rsp, self.dut, sink=True, rng=self.rng)
    self.sb = AluScoreboard("sb", self)
    self.sb.broken = getattr(self.parent, "broken", False)
    self.cov = AluCoverage("cov", self)

  def connect_phase(self):
    self.req.ap.connect(self.sb.req_export)
    self.rsp.ap.connect(self.sb.rsp_export)
    self.req.ap.connect(self.cov.export(self.cov.sample))


class AluSeq(uvm_sequence):
  def __init__(self, name, rng, n):
    super().__init__(name); self.rng, self.n = rng, n
  async def body(self):
    for i in range(self.n):
      it = AluReq(f"req{i}")
      await self.start_item(it)
      it.randomize(self.rng)
      await self.finish_item(it)


@pyuvm.test()
class KitRandom(kit.BaseTest):
  env_cls = AluEnv
  async def body(self):
    await AluSeq("seq", self.rng, 400).start(self.env.req.seqr)

  def check_phase(self):
    assert self.env.sb.checked == 400, f"scoreboard saw {self.env.sb.checked} of 400 responses"


@pyuvm.test(expect_fail=True)
class KitBrokenModel(KitRandom):
  broken = True


class AluEnvWithoutB(AluEnv):
  """The env with one input forgotten: the request channel never drives b_i."""
  req_fields = {"op": "op_i", "a": "a_i"}


@pyuvm.test(expect_fail=True)
class KitUndrivenInput(kit.BaseTest):
  """Sends nothing, so no scoreboard or coverage check can fail: the only failure left is the
  kit's own check that every input of the toplevel was driven (tb/kit/inputs.py)."""
  env_cls = AluEnvWithoutB
  async def body(self):
    for _ in range(10): await RisingEdge(self.dut.clk_i)
