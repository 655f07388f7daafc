"""Core tests (pyuvm), run by tests/rtl/test_core.py: short programs through the load ports, checked
against the golden interpreter. Long programs belong to the co-sim tests (tests/test_cosim.py)."""
from __future__ import annotations

import pyuvm

from tinytpu import asm, bundle
from tinytpu.tb import kit
from .env import CoreEnv

PROGRAMS = {
  "scalar_loops": """
  LI s1, 3
  LOOP s1, e
    SADDI s2, s2, 5
    LOOPI 2, f
      SMUL s3, s2, s1
f:  SSUB s4, s3, s2
e: RDPERF s5, retired
  HALT""",
  "vector_mxu": """
  VLD v1, [s0 + 0]
  VLD v2, [s0 + 1]
  VADD v3, v1, v2
  VCDIV v4, v3, v2
  XTRANS v5, v4
  VST v5, [s0 + 2]
  MLW [s0 + 1]
  MMUL [s0 + 0], [s0 + 0], 2, 0
  PLD v6, [s0 + 1]
  VEXTRACT s1, v6, 1, 2
  PST v6, [s0 + 3]
  HALT""",
  "psum_epilogue": """
  VLD v1, [s0 + 0]
  MLW [s0 + 1]
  MMUL [s0 + 0], [s0 + 0], 2, 0
  VLD v2, [s0 + 1]
  PEPI.B v3, [s0 + 1], v1
  PEPI.BR v4, [s0 + 0], v1
  PEPI.BQ v5, [s0 + 1], v1, v2
  PEPI.BRQ v6, [s0 + 0], v1, v2
  VST v3, [s0 + 0]
  VST v4, [s0 + 1]
  VST v5, [s0 + 2]
  VST v6, [s0 + 3]
  HALT""",
  "trap_vmem": "  LI s1, 1\n  VFILL v1, 3\n  VST v1, [s1 + 2]\n  VLD v2, [s1 - 2]\n  HALT",
  "trap_illegal": "  NOP\n  .word 0x0200000000000001\n  HALT",
}
DATA = """
.vmem 0 1 -2 3 -4 5 6 7 8 9 10 -11 12 13 14 15 16
.vmem 1 7 1 -1 2 3 -5 8 1 2 2 9 -3 4 1 1 5
.dump vmem 0 4
.dump psum 0 4
.dump sreg
.run 2000
"""


class CoreTest(kit.BaseTest):
  env_cls = CoreEnv
  timeout_us = 5000
  programs = list(PROGRAMS)

  async def reset(self):
    # drive every control input idle before reset: with random initial values (the X-randomised
    # nightly variant) an undriven start_i would start the core on an empty program
    for s in ("imem_we_i", "vmem_we_i", "psum_we_i", "sreg_we_i", "start_i"):
      getattr(self.dut, s).value = 0
    # the core alone has no HBM, chip network or SparseCore: their inputs tied to 0, as
    # tensorcore.sv's header asks (the programs here issue no DMA, signal or EMB.BAG)
    for s in ("psum_wdata_i", "sreg_wdata_i", "hbm_req_ready_i", "hbm_rsp_valid_i", "hbm_rsp_we_i", "hbm_rsp_rdata_i",
              "sig_ready_i", "sig_rx_valid_i", "sig_rx_flag_i", "emb_busy_i", "emb_chk_valid_i", "emb_chk_bad_i"):
      getattr(self.dut, s).value = 0
    await super().reset()

  async def post_reset(self):
    await self.wait_until(lambda: int(self.dut.ready_o.value), 4, "ready (VMEM/PSUM need no clear sweep)")

  async def body(self):
    env, d = self.env, self.dut
    for name in self.programs:
      b = asm.assemble_bundle(PROGRAMS[name] + DATA, env.cfg)
      await self.reset()
      await self.post_reset()
      await env.agent.load(b)
      await self.wait_until(lambda: int(d.done_o.value), b.max_cycles, f"{name} to finish")
      dumps = []
      for kind, addr, count in b.dumps:
        if kind == "sreg": dumps.append(("sreg", 0, await env.agent.read_sregs()))
        else: dumps += [(kind, addr + i, await env.agent.read_tile(kind, addr + i, env.cfg.N)) for i in range(count)]
      status = int(d.status_o.value)
      perf = {"retired": int(d.perf_o.value) & 0xFFFFFFFF}
      rtl = bundle.Result(dumps=dumps, cycles=int(d.cycles_o.value), perf=perf, status="ok" if status == 0 else "trap",
                          trap=None if status == 0 else bundle.isa.TRAP_CODES[status], pc=None if status == 0 else int(d.pc_o.value))
      self.logger.info(f"{name}: status {rtl.status} {rtl.trap or ''} cycles {rtl.cycles}, {len(env.sb.retired)} retired")
      env.sb.compare(rtl)


@pyuvm.test()
class CorePrograms(CoreTest):
  pass


class _BrokenScoreboardModel(CoreTest):
  """Must fail: the golden result is corrupted, so the scoreboard has to notice."""
  programs = ["vector_mxu"]

  def end_of_elaboration_phase(self):
    sb = self.env.sb
    orig = sb.write_bundle
    def broken(b):
      orig(b)
      sb.golden.dumps[0][2][0, 0] ^= 1
    sb.bundle_export.fn = broken


@pyuvm.test(expect_fail=True)
class CoreBrokenModel(_BrokenScoreboardModel):
  pass
