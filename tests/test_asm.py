"""TASM: encodings checked by hand, the exact round trip for every instruction of the ISA table, labels,
data directives and one test per rejection reason."""
import random

import numpy as np
import pytest

from tinytpu import isa
from tinytpu.asm import AsmError, assemble, assemble_bundle, bundle_to_tasm, disassemble, disassemble_word
from tinytpu.config import Config


# ---------------------------------------------------------------------------------------------
# hand-encoded words (from the field layout in doc/isa.md, not from the encoder)
@pytest.mark.parametrize("text, word", [
  ("HALT", 0x0200000000000000),
  ("VADD v1, v2, v3", 0x3000123000000000),
  ("vadd V1, v2 ,v3", 0x3000123000000000),
  ("VLD v4, [s2 - 3]", 0x20004200FFFFFFFD),
  ("VLD v4, [s2 + -3]", 0x20004200FFFFFFFD),
  ("VST v5, [s7]", 0x2100075000000000),
  ("VST v5, [100]", 0x2100005000000064),
  ("MMUL [s1 + 2], [s3 - 1], 4, 1", 0x510401310002FFFF),
  ("VFILL v1, 1.5f", 0x260010003FC00000),
  ("VFILL v1, -1.5f", 0x26001000BFC00000),
  ("LI s1, 0xFFFFFFFF", 0x04001000FFFFFFFF),
  ("LI s1, -2147483648", 0x0400100080000000),
  ("RDPERF s2, retired", 0x0E00200000000000),
  ("RDPERF s2, stall_fence", 0x0E00200000000008),
  ("RDPERF s2, 8", 0x0E00200000000008),
  ("XBSCALAR v1, v2, 3, 2", 0x4006120000030002),
  ("JMP -1", 0x09000000FFFFFFFF),
  ("LOOPI 0x10, 2", 0x0B00000000100002),
])
def test_hand_encodings(text, word):
  assert assemble(text) == [word]


def test_vsel_field_order():
  # VSEL vd, vc, va, vb: vc goes in rc, va in ra, vb in rb
  w = assemble("VSEL v1, v4, v2, v3")[0]
  assert (w >> 56, w >> 48 & 0xFF, w >> 44 & 15, w >> 40 & 15, w >> 36 & 15, w >> 32 & 15) == (0x30, isa.VPU_FNS["SEL"], 1, 2, 3, 4)


# ---------------------------------------------------------------------------------------------
# every table entry, random legal operands: the text we write assembles to the word we build by
# hand from the fields, and disassembly of that word assembles back to it
def _random_operands(ins, N, rng):
  word, text = (ins.op << 56) | ((ins.fn or 0) << 48), []
  for o in ins.operands:
    lsb, w = isa.FIELDS[o.field]
    if o.kind in ("sreg", "vreg"):
      v = rng.randrange(16); text.append(f"{o.kind[0]}{v}")
    elif o.kind == "uimm":
      hi = {None: (1 << w) - 1, "N-1": N - 1}.get(o.hi, o.hi)
      v = rng.choice([o.lo, hi, rng.randint(o.lo, hi)]); text.append(rng.choice([str(v), hex(v)]))
    else:  # simm, target, mem offset: signed in the field
      lo, hi = -(1 << (w - 1)), (1 << (w - 1)) - 1
      v = rng.choice([lo, hi, 0, rng.randint(lo, hi), rng.randint(-5, 5)])
      if ins.mnemonic in ("LOOP", "LOOPI"):
        v = max(v, 2)
      if o.kind == "mem":
        b = rng.randrange(16)
        word |= b << isa.FIELDS[o.base][0]
        text.append(f"[s{b} + {v}]" if rng.random() < 0.5 else f"[s{b} - {-v}]")
      else:
        text.append(str(v))
    word |= (v & ((1 << w) - 1)) << lsb
  mnem = rng.choice([ins.mnemonic, ins.mnemonic.lower()])
  return word, mnem + (" " + ", ".join(text) if text else "")


@pytest.mark.parametrize("N", [4, 8])
def test_round_trip_every_instruction(N):
  rng = random.Random(N)
  for ins in isa.INSTRS:
    for _ in range(12):
      word, text = _random_operands(ins, N, rng)
      assert assemble(text, N) == [word], text
      dis = disassemble([word], N)
      assert assemble(dis, N) == [word], (text, dis)
      assert disassemble_word(word, N).split()[0] == ins.mnemonic


def test_round_trip_program_with_targets():
  words = [w for ins in isa.INSTRS for w, _ in [_random_operands(ins, 4, random.Random(ins.mnemonic))]]
  assert assemble(disassemble(words)) == words


# ---------------------------------------------------------------------------------------------
def test_labels_comments_and_targets():
  src = """
  # a comment line
  start:                 ; label alone
    LI s1, 4             # count
  top: again: VADD v1, v1, v2
    LOOP s1, end
    NOP
    BNE s1, s0, top      ; backward
  end:
    JMP start
    HALT
  """
  assert assemble(src) == [
    0x0400100000000004,  # 0 LI s1, 4
    0x3000112000000000,  # 1 VADD v1, v1, v2
    0x0A00010000000003,  # 2 LOOP s1, end: 5 - 2
    0x0100000000000000,  # 3 NOP
    0x08010100FFFFFFFD,  # 4 BNE s1, s0, top: 1 - 4
    0x09000000FFFFFFFB,  # 5 JMP start: 0 - 5
    0x0200000000000000,  # 6 HALT
  ]


def test_assemble_bundle_directives():
  src = """
    VLD v1, [s1 + 0]
    HALT
  .vmem 2 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16
  .psum 1 1.0f, -1, 0x7fffffff, 4294967295, 0 0 0 0 0 0 0 0 0 0 0 nanf
  .sreg 1 2
  .sreg 3 -1.5f
  .dump vmem 0 4
  .dump psum 1 1
  .dump SREG
  .run 500
  """
  b = assemble_bundle(src, Config())
  assert b.program == assemble("VLD v1, [s1]\nHALT")
  np.testing.assert_array_equal(b.vmem[2], np.arange(1, 17, dtype=np.uint32).reshape(4, 4))
  assert b.psum[1].dtype == np.uint32 and b.psum[1].shape == (4, 4)
  assert b.psum[1].ravel()[:4].tolist() == [0x3F800000, 0xFFFFFFFF, 0x7FFFFFFF, 0xFFFFFFFF]
  assert b.psum[1][3, 3] == 0x7FC00000
  assert b.sregs == {1: 2, 3: 0xBFC00000}
  assert b.dumps == [("vmem", 0, 4), ("psum", 1, 1), ("sreg", 0, 16)]
  assert b.max_cycles == 500


def test_code_only_gets_default_run():
  from tinytpu.bundle import DEFAULT_RUN
  b = assemble_bundle("HALT")
  assert b.max_cycles == DEFAULT_RUN and b.dumps == [] and b.vmem == {}


def test_bundle_to_tasm_round_trip():
  rng = np.random.default_rng(1)
  src = "LOOPI 3, e\n VADD v1, v2, v3\ne: VST v1, [s1 + 7]\nHALT\n.sreg 5 -7\n.dump vmem 0 2\n.dump sreg\n.run 77\n"
  src += ".vmem 9 " + " ".join(map(str, rng.integers(-2**31, 2**31, 16).tolist())) + "\n"
  cfg = Config(N=4, VMEM_TILES=64)
  b = assemble_bundle(src, cfg)
  b2 = assemble_bundle(bundle_to_tasm(b), cfg)
  assert b2.program == b.program and b2.sregs == b.sregs and b2.dumps == b.dumps and b2.max_cycles == 77
  np.testing.assert_array_equal(b2.vmem[9], b.vmem[9])


def test_lane_index_depends_on_N():
  assert assemble("XBCOL v1, v2, 7", N=8) == [(0x40 << 56) | (isa.XLU_FNS["XBCOL"] << 48) | (1 << 44) | (2 << 40) | 7]
  with pytest.raises(AsmError, match=r"line 1: XBCOL: operand c0=7 out of range \[0, 3\]"):
    assemble("XBCOL v1, v2, 7", N=4)


# ---------------------------------------------------------------------------------------------
# one test per rejection reason: (source, line, message fragment)
REJECT = {
  "unknown mnemonic": ("NOP\nFOO v1", 2, "unknown mnemonic 'FOO'"),
  "operand count": ("VADD v1, v2", 1, "VADD takes 3 operands (VADD vd, va, vb), got 2"),
  "empty operand": ("VADD v1, , v2", 1, "operand va is empty"),
  "register number": ("VADD v1, v2, v16", 1, "expected a vector register v0..v15, got 'v16'"),
  "register kind": ("SADD s1, v2, s3", 1, "expected a scalar register s0..s15, got 'v2'"),
  "simm too big": ("LI s1, 0x100000000", 1, "LI: operand imm=4294967296 out of range"),
  "simm too small": ("LI s1, -2147483649", 1, "LI: operand imm=-2147483649 out of range"),
  "uimm range": ("MMUL [s1], [s2], 0, 0", 1, "MMUL: operand T=0 out of range [1, 255]"),
  "flag range": ("MMUL [s1], [s2], 1, 2", 1, "MMUL: operand acc=2 out of range [0, 1]"),
  "counter range": (f"RDPERF s1, {len(isa.PERF_COUNTERS)}", 1,
                    f"RDPERF: operand counter={len(isa.PERF_COUNTERS)} out of range [0, {len(isa.PERF_COUNTERS) - 1}]"),
  "16-bit count": ("LOOPI 65536, 2", 1, "LOOPI: operand count=65536 out of range [0, 65535]"),
  "mem offset": ("MMUL [s1 + 32768], [s2], 1, 0", 1, "MMUL: operand dst=32768 out of range [-32768, 32767]"),
  "mem syntax": ("VLD v1, s1 + 2", 1, "expected a memory operand"),
  "mem base": ("VLD v1, [v1 + 2]", 1, "malformed number 'v1 + 2'"),
  "target range": ("LOOPI 2, 40000", 1, "LOOPI: operand end=40000 out of range [-32768, 32767]"),
  "loop end": ("NOP\nLOOPI 2, 1", 2, "end=1 must be >= 2"),
  "undefined label": ("JMP nowhere", 1, "undefined label 'nowhere'"),
  "duplicate label": ("a: NOP\nb: NOP\na: HALT", 3, "duplicate label 'a' (first on line 1)"),
  "malformed number": ("LI s1, 12abc", 1, "malformed number '12abc'"),
  "fp literal in lane index": ("XBCOL v1, v2, 1.0f", 1, "malformed number '1.0f'"),
  "fp32 overflow": ("VFILL v1, 1e39f", 1, "fp32 literal 1e39f overflows fp32"),
  "unknown directive": (".data 1 2", 1, "unknown directive '.data'"),
  "tile value count": (".vmem 0 1 2 3", 1, "vmem 0: expected 16 values (N*N, N=4), got 3"),
  "tile value range": (".vmem 0 " + "0 " * 15 + "0x100000000", 1, "value 4294967296 out of range"),
  "tile address": (".psum 64 " + "0 " * 16, 1, "psum address 64 out of range [0, 64)"),
  "duplicate preload": (".vmem 3 " + "0 " * 16 + "\n.vmem 3 " + "1 " * 16, 2, "vmem 3 already preloaded on line 1"),
  "sreg number": (".sreg 16 1", 1, "scalar register 16 out of range [0, 16)"),
  "sreg s0": (".sreg 0 1", 1, "s0 is hardwired to 0"),
  "duplicate sreg": (".sreg 1 1\n.sreg 1 2", 2, "sreg 1 already preloaded on line 1"),
  "dump range": (".dump vmem 1020 5", 1, "dump vmem 1020..1024 out of range [0, 1024)"),
  "dump kind": (".dump imem 0 1", 1, "cannot dump 'imem'"),
  "dump count": (".dump psum 0 0", 1, "dump psum count 0 must be >= 1"),
  "duplicate run": (".run 5\nHALT\n.run 6", 3, "duplicate `run` (first on line 1)"),
  "run limit": (".run 0", 1, "run limit 0 out of range"),
}


@pytest.mark.parametrize("reason", list(REJECT))
def test_reject(reason):
  src, line, frag = REJECT[reason]
  with pytest.raises(AsmError) as e:
    assemble_bundle(src, Config())
  assert e.value.line == line and frag in e.value.why, str(e.value)
  assert str(e.value).startswith(f"line {line}: ")


def test_reject_program_too_long():
  cfg = Config(IMEM_WORDS=256)
  assert len(assemble_bundle("NOP\n" * 256, cfg).program) == 256
  with pytest.raises(AsmError, match=r"^line 257: program longer than IMEM_WORDS=256"):
    assemble_bundle("NOP\n" * 257, cfg)


# ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("word, frag", [
  (0, "undefined opcode op=0x00"),
  (0x3000123000000000 | (isa.VPU_FNS["NEG"] << 48), "VNEG: reserved bits set"),  # unary VPU op with rb set
  ((0x40 << 56) | (isa.XLU_FNS["XBCOL"] << 48) | 4, "XBCOL: operand c0=4 outside [0, 3]"),
  (0x0B00000000030001, "LOOPI: end=1 must be >= 2"),
  (0x0200000000000001, "HALT: reserved bits set"),
])
def test_disassemble_illegal_word(word, frag):
  with pytest.raises(isa.IllegalInstruction) as e:
    disassemble_word(word, 4, pc=1)
  assert f"pc 1: illegal word 0x{word:016x}" in str(e.value) and frag in str(e.value)
  # a program listing shows it as a .word with the reason, and assembles back to the same words
  text = disassemble([0x0200000000000000, word])
  assert f".word 0x{word:016x}" in text and frag in text
  assert assemble(text) == [0x0200000000000000, word]
