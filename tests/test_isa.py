"""The ISA table is consistent, every word round-trips, and the generated files are up to date."""
import random
import re

import pytest

from tinytpu import gen, isa


def test_generated_files_are_current():
  for path, text in gen.outputs().items():
    assert path.exists(), f"{path} missing: run `make gen`"
    assert path.read_text() == text, f"{path} is stale: run `make gen`"


def test_every_instruction_is_documented():
  doc = gen.isa_doc()
  for i in isa.INSTRS:
    assert f"`{i.syntax}`" in doc, i.mnemonic


def test_sv_package_has_every_code():
  pkg = gen.sv_package()
  for name, code in isa.VPU_FNS.items():
    assert f"VPU_{name} = 8'd{code}" in pkg
  for name, code in isa.OP.items():
    assert f"OP_{name} = 8'd{code}" in pkg
  for i in isa.INSTRS:
    assert f"64'h{i.used_mask:016x}" in pkg, i.mnemonic


def _random_vals(ins, N, rng):
  vals = {}
  for o in ins.operands:
    lo, hi = isa.operand_range(o, N)
    if o.kind in ("target",) and ins.mnemonic.startswith("LOOP"):
      lo = 2
    vals[o.name] = rng.choice([lo, hi, rng.randint(lo, hi)])
    if o.kind == "mem":
      vals[o.name + "_base"] = rng.randint(0, 15)
  return vals


@pytest.mark.parametrize("N", [4, 8, 16])
def test_encode_decode_round_trip(N):
  rng = random.Random(1234 + N)
  for ins in isa.INSTRS:
    for _ in range(20):
      vals = _random_vals(ins, N, rng)
      word = isa.encode(ins, vals, N)
      got, back = isa.decode(word, N)
      assert got is ins and back == vals, (ins.mnemonic, vals, back)


def test_illegal_words():
  N = 4
  with pytest.raises(isa.IllegalInstruction, match="undefined opcode"):
    isa.decode(0, N)
  with pytest.raises(isa.IllegalInstruction, match="undefined opcode"):
    isa.decode(isa.OP["VPU"] << 56 | 250 << 48, N)
  nop = isa.BY_MNEMONIC["NOP"].fixed_bits
  with pytest.raises(isa.IllegalInstruction, match="reserved bits"):
    isa.decode(nop | 1, N)
  vadd = isa.BY_MNEMONIC["VADD"].fixed_bits
  with pytest.raises(isa.IllegalInstruction, match="reserved bits"):
    isa.decode(vadd | 1 << 32, N)  # rc is unused by binary ops
  xb = isa.BY_MNEMONIC["XBCOL"]
  with pytest.raises(isa.IllegalInstruction, match="c0=4 outside"):
    isa.decode(xb.fixed_bits | 4, N)
  assert isa.decode(xb.fixed_bits | 4, 8)[1]["c0"] == 4
  mmul = isa.BY_MNEMONIC["MMUL"]
  with pytest.raises(isa.IllegalInstruction, match="T=0"):
    isa.decode(mmul.fixed_bits, N)
  with pytest.raises(isa.IllegalInstruction, match="end=1 must be >= 2"):
    isa.decode(isa.BY_MNEMONIC["LOOPI"].fixed_bits | 1, N)


def test_every_unused_bit_is_rejected():
  """Flipping any bit outside an instruction's used mask makes its word illegal."""
  rng = random.Random(7)
  for ins in isa.INSTRS:
    word = isa.encode(ins, _random_vals(ins, 4, rng), 4)
    for bit in range(64):
      if not ins.used_mask >> bit & 1:
        with pytest.raises(isa.IllegalInstruction):
          isa.decode(word | 1 << bit, 4)


def test_table_covers_architecture():
  spec_ops = "ADD SUB MUL CDIV CMOD NEG ABS SIGN RELU MAX MIN MAXU MINU SATADD SATSUB ABSDIFF CMPLT CMPLTU CMPEQ CMPNE AND OR XOR NOT SHL SHR SRA ROTL ROTR CLZ CTZ POPCNT BREV8 SEXT8 SEXT16 ZEXT8 ZEXT16 P8ADD P8SUB P8MAX P8MIN P8NEG P8RELU P8ABS P8SIGN P8CMPLT P8CMPEQ P8MULLO P8MULHI P8ABSDIFF FADD FSUB FMUL FDIV FRECIP FSQRT FNEG FABS FSIGN FMAX FMIN FTRUNC FCMPLT FCMPEQ FCMPNE I2F U2F F2I F2BF16 BF162F FEXP2 FLOG2 FSIN FCOS ARGMAX_ROW ARGMIN_ROW FROTPAIR IROTPAIR SEL MAC"
  for op in spec_ops.split():
    assert op in isa.VPU_FNS, op
  for r in "SUM MAX MIN PROD FSUM FMAX FMIN FPROD".split():
    for s in ("ROW", "COL", "TILE"):
      assert f"{r}_{s}" in isa.VPU_FNS
  for m in "NOP HALT LI SADD SSUB SMUL SAND SOR SXOR SSHL SSHR SSRA SSLT SSLTU SADDI BEQ BNE BLT BGE JMP LOOP LOOPI RDCYCLE RDPERF FENCE VSPLAT VEXTRACT VLD VST PLD PST VMOV VZERO VFILL XROT XSROT XBCOL XBROW XBSCALAR XTRANS XSHUF MLW MMUL".split():
    assert m in isa.BY_MNEMONIC, m
  assert all(re.fullmatch(r"[A-Z][A-Z0-9_]*(\.[A-Z][A-Z0-9]*)?", m) for m in isa.BY_MNEMONIC)
