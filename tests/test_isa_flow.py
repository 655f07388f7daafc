"""One table: an instruction added to a copy of the ISA table flows through the assembler, the
generated SV decode, the golden decoder, the backend's operand rules, the scheduler and the random
generator's issue classes, with nothing else edited; and the table refuses what the datapath or
the decode cannot do (a latency its datapath does not follow, a memory operand with no address
path). No Verilator build."""
import dataclasses

import pytest

from tinytpu import asm, gen, gen_decode, isa
from tinytpu.backend import schedule, vcode

FAKE_OP = 0x70


def _fake() -> isa.Instr:
  ops = isa._ops("out vd:vreg:rd, va:vreg:ra, sk:sreg:rb, k:uimm:imm:0:N-1")
  return isa.Instr("VFAKE", FAKE_OP, None, ops, "xlu", "vd = va rotated by sk + k (a test instruction)", group="XLU",
                   datapath="xlu", issue="compute", perf="xlu_ops")


@pytest.fixture
def fake(monkeypatch):
  """The ISA table with VFAKE added, as every reader of tinytpu.isa sees it."""
  ins = _fake()
  assert FAKE_OP not in isa.OP.values()
  monkeypatch.setattr(isa, "OP", {**isa.OP, "VFAKE": FAKE_OP})
  for name, value in isa.tables(isa.INSTRS + [ins]).items():
    monkeypatch.setattr(isa, name, value)
  return ins


def test_roles_and_properties(fake):
  assert [o.role for o in fake.operands] == ["write vector", "read vector", "read scalar", "read immediate"]
  assert fake.reg_fields("vreg", True) == ("rd",) and fake.reg_fields("vreg", False) == ("ra",)
  assert fake.reg_fields("sreg", False) == ("rb",) and fake.wb == "xlu"
  assert isa.ISSUE_CLASS["VFAKE"] == "compute" and "VFAKE" in isa.PERF_COUNTED["xlu_ops"]


def test_assembler_and_golden_decoder(fake):
  word = asm.assemble("VFAKE v1, v2, s3, 2\nHALT", 4)[0]
  assert word >> 56 == FAKE_OP
  ins, vals = isa.decode(word, 4)
  assert ins is fake and vals == {"vd": 1, "va": 2, "sk": 3, "k": 2}
  assert asm.disassemble_word(word, 4) == "VFAKE v1, v2, s3, 2"
  wide = word & ~0xFFFFFFFF | 4
  with pytest.raises(isa.IllegalInstruction, match="k=4 outside"):  # a lane index: N-1 at N = 4
    isa.decode(wide, 4)
  assert isa.decode(wide, 8)[1]["k"] == 4
  with pytest.raises(asm.AsmError, match="k=4 out of range"):
    asm.assemble_bundle("VFAKE v1, v2, s3, 4\nHALT")


def test_generated_decode(fake):
  pkg = gen.sv_package()
  assert f"OP_VFAKE = 8'd{FAKE_OP}" in pkg
  body = pkg[pkg.index("      OP_VFAKE: begin"):]
  body = body[:body.index("      end")]
  for line in ("d.dp = DP_XLU;", "d.vec = 1'b1;", "d.issue = ISSUE_COMPUTE;", "d.rva = 1'b1;", "d.rsb = 1'b1;",
               "d.wvd = 1'b1;", "d.wb = WB_XLU;", "d.cnt_xlu = 1'b1;", "d.illegal |= 32'(w.imm) >= n;"):
    assert line in body, line
  assert "d.rvb" not in body and "d.wsd" not in body and "d.lat" not in body  # XLU latency 1: the reset value
  assert f"8'h{FAKE_OP:02x}: m = 64'h{fake.used_mask:016x};  // VFAKE" in pkg  # the reserved-bit mask
  assert "`VFAKE vd, va, sk, k`" in gen.isa_doc()


def test_backend_operand_rules_and_scheduler(fake):
  d, a = vcode.VT("d"), vcode.VT("a")
  c = vcode.Ins("VFAKE", d, a, vcode.SR(3), 1)
  assert vcode.vdef(c) is d and vcode.vreads(c) == [a]
  assert vcode.sdef(c) is None and vcode.sreads(c) == {3}
  n = schedule._Node(0, c)
  assert n.pair == "compute" and n.latency == 1 and n.mem is None
  assert "VFAKE" not in schedule.BARRIERS  # (computed at import; an XLU datapath is no barrier anyway)


def test_random_generator_issue_class(fake):
  from tinytpu import randprog
  word = isa.encode(fake, {"vd": 1, "va": 2, "sk": 3, "k": 0}, 4)
  assert isa.lookup(word).issue in randprog.PAIR_BEFORE_MEM  # the generator follows it with a VLD/VST pair half the time


def test_latency_the_datapath_cannot_follow():
  """VGATHER's latency 2 is the hold register gth_q of tensorcore.sv: a table saying 3 is refused by
  the table check, the generator and so `gen --check`."""
  instrs = [dataclasses.replace(i, latency=3) if i.mnemonic == "VGATHER" else i for i in isa.INSTRS]
  with pytest.raises(isa.TableError, match="VGATHER: latency 3 .* gather datapath realises 2"):
    isa.check_table(instrs)
  with pytest.raises(isa.TableError):
    gen_decode.sv_decode(instrs)
  # a VPU latency is the VPU's to follow (vpu.sv delays every function to vpu_latency)
  isa.check_table([dataclasses.replace(i, latency=5) if i.mnemonic == "VADD" else i for i in isa.INSTRS])


def test_decode_shapes_the_sxu_lacks():
  bad = isa.Instr("VBAD", FAKE_OP, None, isa._ops("out vd:vreg:rd, addr:mem:rb+immhi:vmem"), "vmem", "x", datapath="vld")
  with pytest.raises(gen_decode.GenError, match="no address path"):
    gen_decode.sv_decode(isa.INSTRS + [bad])
  two = isa.Instr("VTWO", FAKE_OP, None, isa._ops("out vd:vreg:rd, out sd:sreg:ra"), "vpu", "x", datapath="vpu")
  with pytest.raises(isa.TableError, match="written register must be in rd"):
    isa.check_table(isa.INSTRS + [two])


def test_decode_matches_the_table():
  """Every instruction's generated case item says what its operand roles say."""
  pkg = gen.sv_package()
  for i in isa.INSTRS:
    p = gen_decode.properties(i)
    assert ("wvd" in p) == bool(i.reg_fields("vreg", True)) and ("wsd" in p) == bool(i.reg_fields("sreg", True))
    assert p["dp"] in pkg
