"""The golden interpreter on small hand-written TASM programs: one family of instructions per test and
every trap code. Expected values are computed by hand or with numpy, never by the interpreter."""
import numpy as np
import pytest

from tinytpu import asm, isa
from tinytpu.config import Config
from tinytpu.golden import interp

M32 = 0xFFFFFFFF
u32 = lambda x: np.asarray(x, dtype=np.int64).astype(np.uint32)  # wrap any int (array) to lane bits


def run(src: str, N: int = 4, patch: dict[int, int] | None = None, **cfg):
  """Assemble and run; `patch` replaces program words (words the assembler refuses to emit)."""
  b = asm.assemble_bundle(src, Config(N=N, **cfg))
  for pc, w in (patch or {}).items(): b.program[pc] = w
  return interp.run(b)


def sregs(r) -> list[int]:
  return [x[2] for x in r.dumps if x[0] == "sreg"][0].tolist()


def tile(r, kind: str, addr: int) -> np.ndarray:
  return [x[2] for x in r.dumps if x[:2] == (kind, addr)][0]


def ok(r, cycles: int | None = None):
  assert (r.status, r.trap, r.pc) == ("ok", None, None), r
  if cycles is not None: assert r.cycles == r.perf["retired"] == cycles
  return r


def trapped(r, trap: str, pc: int, cycles: int | None = None):
  assert (r.status, r.trap, r.pc) == ("trap", trap, pc), (r.status, r.trap, r.pc)
  if cycles is not None: assert r.cycles == r.perf["retired"] == cycles
  return r


def tiles(*names: str, N: int = 4, seed: int = 0, lo=-1000, hi=1000) -> tuple[dict, str]:
  """Random int32 tiles at vmem 0, 1, ...; returns them and their `.vmem` directives."""
  rng = np.random.default_rng(seed)
  ts = {n: rng.integers(lo, hi, (N, N)) for n in names}
  return ts, "\n".join(f".vmem {i} " + " ".join(map(str, t.ravel())) for i, t in enumerate(ts.values()))


# ---------------------------------------------------------------------------------------------
# scalar and control
def test_scalar_alu():
  r = ok(run("""
    LI s1, -7
    LI s2, 3
    LI s3, 0x7fffffff
    SADD s4, s1, s2
    SSUB s5, s2, s1
    SMUL s6, s3, s3
    SAND s7, s1, s2
    SOR s8, s1, s2
    SXOR s9, s1, s2
    SSHL s10, s1, s2
    SSHR s11, s1, s2
    SSRA s12, s1, s2
    SSLT s13, s1, s2
    SSLTU s14, s1, s2
    SADD s15, s3, s3
    HALT
    .dump sreg"""), cycles=16)
  a, b, c = -7 & M32, 3, 0x7FFFFFFF
  assert sregs(r) == [0, a, b, c, (a + b) & M32, 10, (c * c) & M32, a & b, a | b, a ^ b, (a << 3) & M32,
                      a >> 3, (-7 >> 3) & M32, 1, 0, 0xFFFFFFFE]


def test_shift_amount_masked_and_sslt_unsigned():
  r = ok(run("""
    LI s1, 0x80000001
    LI s2, 33
    SSHL s3, s1, s2
    SSHR s4, s1, s2
    SSRA s5, s1, s2
    LI s6, 1
    SSLT s7, s1, s6
    SSLTU s8, s1, s6
    HALT
    .dump sreg"""))
  s = sregs(r)
  assert s[3:6] == [0x00000002, 0x40000000, 0xC0000000] and s[7:9] == [1, 0]


def test_s0_writes_ignored():
  r = ok(run("""
    LI s0, 5
    SADDI s0, s0, 9
    LI s1, 4
    SADD s0, s1, s1
    RDCYCLE s0
    RDPERF s0, retired
    VFILL v1, 77
    VEXTRACT s0, v1, 0, 0
    SADD s2, s0, s1
    HALT
    .dump sreg"""))
  assert sregs(r)[:3] == [0, 4, 4]


def test_li_saddi_wrap():
  r = ok(run("""
    LI s1, -1
    SADDI s2, s1, 1
    SADDI s3, s0, -5
    LI s4, 0x80000000
    SADDI s5, s4, -1
    HALT
    .dump sreg"""))
  assert sregs(r)[1:6] == [M32, 0, (-5) & M32, 0x80000000, 0x7FFFFFFF]


@pytest.mark.parametrize("op,a,b,taken", [
  ("BEQ", 5, 5, True), ("BEQ", 5, 6, False), ("BNE", 5, 6, True), ("BNE", -1, -1, False),
  ("BLT", -1, 1, True), ("BLT", 1, -1, False), ("BLT", 3, 3, False),  # signed: -1 < 1
  ("BGE", 1, -1, True), ("BGE", 3, 3, True), ("BGE", -5, 2, False),
])
def test_branch(op, a, b, taken):
  r = ok(run(f"""
    LI s1, {a}
    LI s2, {b}
    {op} s1, s2, there
    LI s3, 1
    HALT
  there:
    LI s4, 1
    HALT
    .dump sreg"""))
  assert sregs(r)[3:5] == ([0, 1] if taken else [1, 0])
  assert r.cycles == (5 if taken else 5)


def test_jmp_forward_and_backward():
  # count down s1 from 3 with a backward branch; JMP skips over a poisoned LI
  r = ok(run("""
    LI s1, 3
  top:
    SADDI s1, s1, -1
    SADDI s2, s2, 10
    BNE s1, s0, top
    JMP skip
    LI s2, 999
  skip:
    HALT
    .dump sreg"""), cycles=1 + 3 * 3 + 2)
  assert sregs(r)[1:3] == [0, 30]


def test_loop_and_loopi():
  r = ok(run("""
    LI s1, 5
    LOOP s1, e1
    SADDI s2, s2, 1
    SADDI s3, s3, 2
  e1:
    LOOPI 7, e2
    SADDI s4, s4, 1
  e2:
    HALT
    .dump sreg"""), cycles=2 + 5 * 2 + 1 + 7 + 1)
  assert sregs(r)[2:5] == [5, 10, 7]


@pytest.mark.parametrize("count", [0, -1, -0x80000000])
def test_loop_count_zero_or_negative_skips(count):
  r = ok(run(f"""
    LI s1, {count}
    LOOP s1, e1
    SADDI s2, s2, 1
  e1:
    LOOPI 0, e2
    SADDI s3, s3, 1
  e2:
    SADDI s4, s4, 1
    HALT
    .dump sreg"""), cycles=5)
  assert sregs(r)[2:5] == [0, 0, 1]


def test_loop_count_from_unsigned_bits_is_signed():
  # 0xFFFFFFFF is -1 as a LOOP count: skipped, not 4 billion iterations
  r = ok(run("""
    LI s1, 0xffffffff
    LOOP s1, e
    SADDI s2, s2, 1
  e:
    HALT
    .dump sreg"""))
  assert sregs(r)[2] == 0


def test_nested_loops_four_deep():
  r = ok(run("""
    LOOPI 2, e1
      SADDI s1, s1, 1
      LOOPI 3, e2
        SADDI s2, s2, 1
        LOOPI 4, e3
          SADDI s3, s3, 1
          LI s6, 5
          LOOP s6, e4
            SADDI s4, s4, 1
  e4:
          SADDI s5, s5, 1
  e3:
        NOP
  e2:
      NOP
  e1:
    HALT
    .dump sreg"""))
  assert sregs(r)[1:6] == [2, 6, 24, 120, 24]
  # count instructions by hand: innermost body 1 x 5, level-4 body = LI + LOOP + 5 + SADDI = 8, ...
  l4 = 3 + 5
  l3 = 4 * (1 + l4)
  l2 = 3 * (2 + l3 + 1)
  assert r.cycles == 1 + 2 * (1 + 1 + l2 + 1) + 1


def test_inner_loop_ends_one_before_outer():
  # the inner body's last instruction is two before the outer end: legal, inner pops then outer continues
  r = ok(run("""
    LOOPI 3, e1
      LOOPI 2, e2
        SADDI s1, s1, 1
  e2:
      SADDI s2, s2, 1
  e1:
    HALT
    .dump sreg"""))
  assert sregs(r)[1:3] == [6, 3]


def test_lbreak_pops_innermost():
  r = run("""
    LOOPI 4, e1
      LI s1, 0
      LOOPI 100, e2
        SADDI s1, s1, 1
        SADDI s2, s2, 1
        LI s3, 3
        BNE s1, s3, cont
        LBREAK
  cont: SADDI s5, s5, 1
  e2:
      SADDI s4, s4, 1
  e1:
    HALT
    .dump sreg""")
  ok(r)
  # LBREAK continues at the inner end, so it skips the inner body's last instruction
  assert sregs(r)[1:6] == [3, 12, 3, 4, 8]


def test_taken_branch_at_loop_end_skips_back_edge():
  # a taken branch on the last body pc redirects: no back-edge, the loop stays active (HALT ends it)
  r = ok(run("""
    LOOPI 3, e
      SADDI s1, s1, 1
      BEQ s0, s0, e
  e:
    HALT
    .dump sreg"""), cycles=4)
  assert sregs(r)[1] == 1
  # the same branch not taken falls through into the back-edge
  r = ok(run("""
    LOOPI 3, e
      SADDI s1, s1, 1
      BNE s0, s0, e
  e:
    HALT
    .dump sreg"""), cycles=8)
  assert sregs(r)[1] == 3


def test_loop_body_one_instruction_at_program_end():
  # the loop body is the program's last word; popping falls off the end: imem trap at that pc
  r = run("""
    LOOPI 3, e
    SADDI s1, s1, 2
  e:
    .dump sreg""")
  trapped(r, "imem_out_of_range", 1, cycles=4)
  assert sregs(r)[1] == 6


def test_rdcycle_rdperf():
  r = ok(run("""
    RDCYCLE s1
    NOP
    LOOPI 3, e
      RDCYCLE s2
  e:
    RDPERF s3, retired
    RDPERF s4, vpu_ops
    RDPERF s5, stall_fence
    HALT
    .dump sreg"""), cycles=10)
  assert sregs(r)[1:6] == [0, 5, 6, 0, 0]
  assert all(v == 0 for k, v in r.perf.items() if k != "retired") and set(r.perf) == set(isa.PERF)


# ---------------------------------------------------------------------------------------------
# vector registers and memory
def test_vsplat_vextract():
  ts, pre = tiles("a")
  r = ok(run(f"""{pre}
    LI s1, -3
    VSPLAT v1, s1
    VST v1, [s0 + 10]
    VLD v2, [s0 + 0]
    VEXTRACT s2, v2, 2, 3
    VEXTRACT s3, v2, 0, 0
    VEXTRACT s4, v2, 3, 1
    HALT
    .dump vmem 10 1
    .dump sreg"""))
  a = u32(ts["a"])
  assert (tile(r, "vmem", 10) == u32(-3)).all()
  assert sregs(r)[2:5] == [a[2, 3], a[0, 0], a[3, 1]]


def test_vextract_n8():
  rng = np.random.default_rng(1)
  t = rng.integers(0, 1 << 31, (8, 8))
  r = ok(run(".vmem 0 " + " ".join(map(str, t.ravel())) + """
    VLD v3, [s0]
    VEXTRACT s1, v3, 7, 6
    XBCOL v4, v3, 7
    VST v4, [s0 + 1]
    HALT
    .dump vmem 1 1
    .dump sreg""", N=8))
  assert sregs(r)[1] == t[7, 6]
  assert (tile(r, "vmem", 1) == np.repeat(t[:, 7:8], 8, axis=1)).all()


def test_memory_moves():
  ts, pre = tiles("a", "b")
  a, b = u32(ts["a"]), u32(ts["b"])
  r = ok(run(f"""{pre}
    .psum 5 {" ".join(map(str, ts["b"].ravel()))}
    LI s1, 1000
    LI s2, 60
    VLD v1, [s0 + 0]
    VLD v2, [s1 + -999]
    VST v1, [s1 + 23]
    PST v2, [s2 + 3]
    PLD v3, [s2 + -55]
    VST v3, [s0 + 2]
    VMOV v4, v1
    VZERO v1
    VST v4, [s0 + 3]
    VST v1, [s0 + 1]
    VFILL v5, -2
    VST v5, [s0 + 4]
    VFILL v6, 1.5f
    PST v6, [s0 + 0]
    HALT
    .dump vmem 0 5
    .dump vmem 1023 1
    .dump psum 63 1
    .dump psum 0 1"""))
  assert (tile(r, "vmem", 0) == a).all() and (tile(r, "vmem", 1023) == a).all()
  assert (tile(r, "psum", 63) == b).all() and (tile(r, "vmem", 2) == b).all()
  assert (tile(r, "vmem", 3) == a).all() and (tile(r, "vmem", 1) == 0).all()
  assert (tile(r, "vmem", 4) == u32(-2)).all()
  assert (tile(r, "psum", 0) == np.float32(1.5).view(np.uint32)).all()
  # dumps are in the listed order, one per tile
  assert [d[:2] for d in r.dumps] == [("vmem", i) for i in range(5)] + [("vmem", 1023), ("psum", 63), ("psum", 0)]


def test_vld_copies_not_aliases():
  # a VST to the address a register was loaded from must not change the register
  ts, pre = tiles("a", "b")
  r = ok(run(f"""{pre}
    VLD v1, [s0 + 0]
    VLD v2, [s0 + 1]
    VST v2, [s0 + 0]
    VST v1, [s0 + 2]
    PST v1, [s0 + 0]
    PLD v3, [s0 + 0]
    VST v2, [s0 + 1]
    PST v2, [s0 + 0]
    VST v3, [s0 + 3]
    HALT
    .dump vmem 0 4"""))
  a, b = u32(ts["a"]), u32(ts["b"])
  assert (tile(r, "vmem", 0) == b).all() and (tile(r, "vmem", 2) == a).all() and (tile(r, "vmem", 3) == a).all()


# ---------------------------------------------------------------------------------------------
# VPU: one op of each group, checked against numpy
def _vpu(lines: str, a, b, c=None, seed=0):
  pre = "\n".join(f".vmem {i} " + " ".join(str(int(x)) for x in np.asarray(t).view(np.int32).ravel())
                  for i, t in enumerate((a, b, c if c is not None else b)))
  return ok(run(f"""{pre}
    VLD v1, [s0 + 0]
    VLD v2, [s0 + 1]
    VLD v3, [s0 + 2]
    {lines}
    HALT
    .dump vmem 8 8"""))


def test_vpu_int_groups():
  rng = np.random.default_rng(2)
  a = rng.integers(-(1 << 31), 1 << 31, (4, 4)).astype(np.int32)
  b = rng.integers(-(1 << 31), 1 << 31, (4, 4)).astype(np.int32)
  b[0, 0], a[1, 1], b[1, 1] = a[0, 0], -5, 37  # an equal pair and a shift amount > 31
  c = (np.arange(16).reshape(4, 4) % 3 == 0).astype(np.int32)
  r = _vpu("""
    VADD v4, v1, v2
    VST v4, [s0 + 8]
    VCMPLT v4, v1, v2
    VST v4, [s0 + 9]
    VSHL v4, v1, v2
    VST v4, [s0 + 10]
    VSEXT8 v4, v1
    VST v4, [s0 + 11]
    VP8ADD v4, v1, v2
    VST v4, [s0 + 12]
    VSEL v4, v3, v1, v2
    VST v4, [s0 + 13]
    VMAC v4, v1, v2, v1
    VST v4, [s0 + 14]
    VSUM_ROW v4, v1
    VST v4, [s0 + 15]""", a, b, c)
  A, B = a.astype(np.int64), b.astype(np.int64)
  assert (tile(r, "vmem", 8) == u32(A + B)).all()
  assert (tile(r, "vmem", 9) == (a < b)).all()
  assert (tile(r, "vmem", 10) == u32((A & M32) << (B & 31))).all()
  assert (tile(r, "vmem", 11) == u32(a.astype(np.int8))).all()
  p8 = np.clip(a.view(np.int8).astype(np.int32) + b.view(np.int8), -128, 127).astype(np.int8).view(np.uint32)
  assert (tile(r, "vmem", 12) == p8).all()
  assert (tile(r, "vmem", 13) == u32(np.where(c != 0, a, b))).all()
  assert (tile(r, "vmem", 14) == u32(A * B + A)).all()
  assert (tile(r, "vmem", 15) == u32(np.repeat(A.sum(1, keepdims=True), 4, axis=1))).all()


def test_vpu_irotpair():
  a = np.arange(1, 17).reshape(4, 4).astype(np.int32)
  b = np.array([[2, 3, -1, 4]] * 4, np.int32)
  r = _vpu("VIROTPAIR v4, v1, v2\nVST v4, [s0 + 8]", a, b)
  x0, x1, cc, ss = a[:, 0::2].astype(np.int64), a[:, 1::2], b[:, 0::2], b[:, 1::2]
  want = np.empty((4, 4), np.int64)
  want[:, 0::2], want[:, 1::2] = x0 * cc - x1 * ss, x0 * ss + x1 * cc
  assert (tile(r, "vmem", 8) == u32(want)).all()


def test_vpu_fp_groups():
  rng = np.random.default_rng(3)
  a = rng.standard_normal((4, 4)).astype(np.float32)
  b = rng.standard_normal((4, 4)).astype(np.float32)
  a[0, 0] = 3.0
  ab, bb = a.view(np.uint32), b.view(np.uint32)
  r = _vpu("""
    VFADD v4, v1, v2
    VST v4, [s0 + 8]
    VFCMPLT v4, v1, v2
    VST v4, [s0 + 9]
    VF2I v4, v1
    VI2F v4, v4
    VST v4, [s0 + 10]
    VFMUL v4, v1, v2
    VFEXP2 v5, v4
    VFMAC v4, v1, v2, v1
    VST v4, [s0 + 11]
    VFSUM_ROW v4, v1
    VST v4, [s0 + 12]
    VFROTPAIR v4, v1, v2
    VST v4, [s0 + 13]
    VLD v6, [s0 + 10]
    VFEXP2 v4, v6
    VST v4, [s0 + 14]""", ab, bb)
  f = lambda x: x.view(np.float32)
  assert (tile(r, "vmem", 8) == (a + b).view(np.uint32)).all()
  assert (tile(r, "vmem", 9) == (a < b)).all()
  ti = np.trunc(a).astype(np.float32)
  assert (f(tile(r, "vmem", 10)) == ti).all()
  assert (tile(r, "vmem", 11) == (a * b + a).view(np.uint32)).all()
  row = ((a[:, 0] + a[:, 1]) + (a[:, 2] + a[:, 3])).astype(np.float32)
  assert (tile(r, "vmem", 12) == np.repeat(row[:, None], 4, axis=1).view(np.uint32)).all()
  x0, x1, cc, ss = a[:, 0::2], a[:, 1::2], b[:, 0::2], b[:, 1::2]
  want = np.empty((4, 4), np.float32)
  want[:, 0::2], want[:, 1::2] = x0 * cc - x1 * ss, x0 * ss + x1 * cc
  assert (tile(r, "vmem", 13) == want.view(np.uint32)).all()
  assert (f(tile(r, "vmem", 14)) == np.exp2(ti)).all()  # exact for integral inputs


# ---------------------------------------------------------------------------------------------
# XLU
def test_xlu_every_op():
  ts, pre = tiles("a", "idx", lo=0, hi=1 << 20)
  a, idx = u32(ts["a"]), u32(ts["idx"])
  r = ok(run(f"""{pre}
    VLD v1, [s0 + 0]
    VLD v2, [s0 + 1]
    LI s1, -3
    LI s2, 6
    XROT v3, v1, 1
    VST v3, [s0 + 10]
    XROTS v3, v1, s1
    VST v3, [s0 + 11]
    XSROT v3, v1, -1
    VST v3, [s0 + 12]
    XSROTS v3, v1, s2
    VST v3, [s0 + 13]
    XBCOL v3, v1, 2
    VST v3, [s0 + 14]
    XBROW v3, v1, 3
    VST v3, [s0 + 15]
    XBSCALAR v3, v1, 1, 2
    VST v3, [s0 + 16]
    XTRANS v3, v1
    VST v3, [s0 + 17]
    XSHUF v3, v1, v2
    VST v3, [s0 + 18]
    XTRANS v1, v1
    VST v1, [s0 + 19]
    HALT
    .dump vmem 10 10"""))
  t = lambda i: tile(r, "vmem", i)
  R, C = np.indices((4, 4))
  assert (t(10) == a[R, (C + 1) % 4]).all()
  assert (t(11) == a[R, (C - 3) % 4]).all()
  assert (t(12) == a[(R - 1) % 4, C]).all()
  assert (t(13) == a[(R + 6) % 4, C]).all()
  assert (t(14) == a[R, 2]).all() and (t(15) == a[3, C]).all() and (t(16) == a[1, 2]).all()
  assert (t(17) == a.T).all() and (t(19) == a.T).all()
  i = idx % 16
  assert (t(18) == a.ravel()[i]).all()


# ---------------------------------------------------------------------------------------------
# MXU
def _int8_tiles(rng, n, N=4):
  return [rng.integers(-128, 128, (N, N)) for _ in range(n)]


def test_mlw_mmul_overwrite_and_accumulate():
  rng = np.random.default_rng(4)
  x0, x1, w0, w1 = _int8_tiles(rng, 4)
  x1 = x1 + 256 * rng.integers(-5, 5, (4, 4))  # high bits of an activation lane are ignored
  garbage = rng.integers(-1000, 1000, (4, 4))
  lines = lambda t: " ".join(map(str, t.ravel()))
  r = ok(run(f"""
    .vmem 0 {lines(x0)}
    .vmem 1 {lines(x1)}
    .vmem 7 {lines(w0 + 512)}
    .vmem 8 {lines(w1)}
    .psum 3 {lines(garbage)}
    .psum 4 {lines(garbage)}
    .psum 10 {lines(garbage)}
    LI s1, 3
    LI s2, 1
    MMUL [s0 + 10], [s0 + 0], 1, 1
    MLW [s0 + 7]
    MMUL [s1 + 0], [s0 + 0], 2, 0
    MLW [s2 + 7]
    MMUL [s1 + 1], [s2 + -1], 1, 1
    HALT
    .dump psum 3 2
    .dump psum 10 1"""))
  x1b = x1.astype(np.int8).astype(np.int64)
  assert (tile(r, "psum", 10) == u32(garbage)).all()  # W is zero at reset: += 0
  assert (tile(r, "psum", 3) == u32(x0 @ w0)).all()
  assert (tile(r, "psum", 4) == u32(x1b @ w0 + x0 @ w1)).all()


def test_tiled_gemm():
  # C (12x8) = A (12x8) @ B (8x8) at N=4: A tiles (i, k) at 3k+i, B tiles (k, j) at 32+2k+j,
  # C tiles (i, j) in PSUM at 3j+i; for each j and k one MLW and one MMUL of T=3 row blocks.
  rng = np.random.default_rng(5)
  A, B = rng.integers(-128, 128, (12, 8)), rng.integers(-128, 128, (8, 8))
  pre = []
  for i in range(3):
    for k in range(2):
      pre.append(f".vmem {3 * k + i} " + " ".join(map(str, A[4 * i:4 * i + 4, 4 * k:4 * k + 4].ravel())))
  for k in range(2):
    for j in range(2):
      pre.append(f".vmem {32 + 2 * k + j} " + " ".join(map(str, B[4 * k:4 * k + 4, 4 * j:4 * j + 4].ravel())))
  pre.append(".psum 0 " + " ".join(["12345"] * 16))
  r = ok(run("\n".join(pre) + """
    LI s1, 0                # j
    LI s6, 0                # PSUM base of column block j: 3j
    LOOPI 2, jend
      LI s2, 0              # k
      LOOPI 2, kend
        SADD s3, s2, s2
        SADD s3, s3, s1
        MLW [s3 + 32]
        SADD s4, s2, s2
        SADD s4, s4, s2
        BNE s2, s0, accum
        MMUL [s6 + 0], [s4 + 0], 3, 0
        JMP next
  accum:
        MMUL [s6 + 0], [s4 + 0], 3, 1
  next:
        SADDI s2, s2, 1
  kend:
      SADDI s6, s6, 3
      SADDI s1, s1, 1
  jend:
    HALT
    .dump psum 0 6"""))
  C = A @ B
  for i in range(3):
    for j in range(2):
      assert (tile(r, "psum", 3 * j + i) == u32(C[4 * i:4 * i + 4, 4 * j:4 * j + 4])).all(), (i, j)


# ---------------------------------------------------------------------------------------------
# traps
def _w(mn: str, N: int = 4, **vals) -> int:
  return isa.encode(isa.BY_MNEMONIC[mn], vals, N)


PROLOGUE = """
    LI s1, 11
    VFILL v1, 7
    NOP
    HALT
    HALT
    .dump sreg
    .dump vmem 0 1"""


@pytest.mark.parametrize("word,why", [
  (0, "all-zero word (op 0x00 reserved)"),
  (0xFF << 56, "undefined op"),
  ((isa.OP["VPU"] << 56) | (200 << 48), "undefined VPU fn"),
  ((isa.OP["SALU"] << 56) | (11 << 48), "undefined SALU fn"),
  (_w("NOP") | (1 << 44), "NOP with rd set"),
  (_w("HALT") | 1, "HALT with an immediate bit"),
  (_w("VNEG", vd=1, va=2) | (3 << 36), "unary VPU op with rb != 0"),
  (_w("VLD", vd=1, addr=0, addr_base=0) | (1 << 36), "VLD with rb set"),
  (_w("MMUL", dst=0, dst_base=0, src=0, src_base=0, T=1, acc=1) & ~(0xFF << 48), "MMUL T = 0"),
  (_w("MMUL", dst=0, dst_base=0, src=0, src_base=0, T=1, acc=1) | (2 << 32), "MMUL acc = 3"),
  (_w("VEXTRACT", sd=1, va=1, r=0, c=3) + (4 << 16), "VEXTRACT r = N"),
  (_w("VEXTRACT", sd=1, va=1, r=3, c=0) + 4, "VEXTRACT c = N"),
  (_w("XBCOL", vd=1, va=1, c0=0) | 4, "XBCOL c0 = N"),
  (_w("XBROW", vd=1, va=1, r0=0) | 0xFFFFFFFF, "XBROW r0 = -1"),
  (_w("XBSCALAR", vd=1, va=1, r0=0, c0=0) | (5 << 16), "XBSCALAR r0 = 5"),
  (_w("RDPERF", sd=1, counter=0) | len(isa.PERF_COUNTERS), "RDPERF past the last counter"),
  ((isa.OP["LOOPI"] << 56) | (3 << 16) | 1, "LOOPI end = 1"),
  ((isa.OP["LOOP"] << 56) | (1 << 40) | 0, "LOOP end = 0"),
  ((isa.OP["LOOP"] << 56) | (1 << 40) | 0xFFFFFFFE, "LOOP end = -2"),
])
def test_illegal_instruction(word, why):
  r = run(PROLOGUE, patch={2: word})
  trapped(r, "illegal_instruction", 2, cycles=2)
  assert sregs(r)[1] == 11  # effects before the trap stay, dumps still happen


def test_illegal_word_not_executed_does_not_trap():
  ok(run(PROLOGUE, patch={4: 0}), cycles=4)
  # jumped over
  ok(run("""
    JMP 2
    NOP
    HALT""", patch={1: 0xFFFFFFFFFFFFFFFF}), cycles=2)


def test_xbcol_lane_range_depends_on_n():
  w = _w("XBCOL", vd=1, va=1, c0=0) | 5
  trapped(run(PROLOGUE, patch={2: w}), "illegal_instruction", 2)
  ok(run(PROLOGUE, N=8, patch={2: w}))


@pytest.mark.parametrize("base,off,good", [
  (1023, 0, True), (1024, 0, False), (0, 1024, False), (0, -1, False), (-1, 0, False), (-1, 2, True),
  (5, -5, True), (5, -6, False), (0x7FFFFFFF, 1, False), (0x80000000, 0, False), (1 << 20, 0, False),
  (0x80000000, -0x80000000, False),  # -2^32 exactly: no 32-bit wrap to 0
])
@pytest.mark.parametrize("mn", ["VLD", "VST", "MLW"])
def test_vmem_range(mn, base, off, good):
  # the address is the signed base register plus the offset, checked (not masked) against VMEM_TILES
  addr = ((base & M32) ^ 0x80000000) - 0x80000000 + off
  a = np.random.default_rng(7).integers(-128, 128, (4, 4))
  ins = {"VLD": f"VLD v2, [s1 + {off}]", "VST": f"VST v2, [s1 + {off}]", "MLW": f"MLW [s1 + {off}]"}[mn]
  r = run(f"""{f".vmem {addr} " + " ".join(map(str, a.ravel())) if good else ""}
    LI s1, {base}
    VFILL v2, 9
    {ins}
    SADDI s1, s1, {off}
    MMUL [s0 + 0], [s1 + 0], 1, 0
    VST v2, [s0 + 1]
    HALT
    .dump vmem 1 1
    .dump vmem 1023 1
    .dump psum 0 1""")
  if not good:
    trapped(r, "vmem_out_of_range", 2, cycles=2)
    assert all((d[2] == 0).all() for d in r.dumps)  # nothing was written
    return
  ok(r, cycles=7)
  want_v2 = {"VLD": a, "VST": np.full((4, 4), 9), "MLW": np.full((4, 4), 9)}[mn]
  assert (tile(r, "vmem", 1) == u32(want_v2)).all()
  if mn == "VST" and addr == 1023: assert (tile(r, "vmem", 1023) == 9).all()
  # MMUL streams VMEM[addr] through W: W = a after MLW, zero otherwise; after VST the tile is all 9
  act = np.full((4, 4), 9) if mn == "VST" else a
  assert (tile(r, "psum", 0) == u32(act @ a if mn == "MLW" else np.zeros((4, 4), int))).all()


@pytest.mark.parametrize("base,off,good", [(63, 0, True), (64, 0, False), (0, -1, False), (-1, 1, True), (-2, 1, False)])
@pytest.mark.parametrize("mn", ["PLD", "PST"])
def test_psum_range(mn, base, off, good):
  ins = f"PLD v2, [s1 + {off}]" if mn == "PLD" else f"PST v2, [s1 + {off}]"
  r = run(f"""
    LI s1, {base}
    VFILL v2, 9
    {ins}
    VST v2, [s0 + 0]
    HALT
    .dump vmem 0 1
    .dump psum 63 1""")
  if good:
    ok(r, cycles=5)
    assert (tile(r, "vmem", 0) == (0 if mn == "PLD" else 9)).all()
  else:
    trapped(r, "psum_out_of_range", 2, cycles=2)
    assert (tile(r, "psum", 63) == 0).all() and (tile(r, "vmem", 0) == 0).all()


@pytest.mark.parametrize("src,dst,T,trap", [
  (1021, 61, 3, None), (1022, 0, 3, "vmem_out_of_range"), (-1, 0, 1, "vmem_out_of_range"),
  (0, 62, 3, "psum_out_of_range"), (0, -1, 2, "psum_out_of_range"), (1000, 64, 1, "psum_out_of_range"),
  (0, 0, 64, None), (970, 0, 64, "vmem_out_of_range"), (0, 0, 65, "psum_out_of_range"),
], ids=str)
def test_mmul_ranges(src, dst, T, trap):
  rng = np.random.default_rng(6)
  w = rng.integers(-128, 128, (4, 4))
  r = run(f"""
    .vmem 1023 {" ".join(["1"] * 16)}
    .vmem 500 {" ".join(map(str, w.ravel()))}
    LI s1, {src}
    LI s2, {dst}
    MLW [s0 + 500]
    MMUL [s2 + 0], [s1 + 0], {T}, 0
    HALT
    .dump psum 63 1
    .dump psum 0 1""")
  if trap is None:
    ok(r, cycles=5)
    if src == 1021:
      assert (tile(r, "psum", 63) == u32(np.ones((4, 4), np.int64) @ w)).all()
  else:
    trapped(r, trap, 3, cycles=3)
    assert all((d[2] == 0).all() for d in r.dumps)  # nothing was written


@pytest.mark.parametrize("src,pc,cycles", [
  ("LI s1, 1\nBEQ s1, s1, 100\nHALT", 1, 2),              # branch forward out
  ("LI s1, 1\nBNE s1, s0, -2\nHALT", 1, 2),               # branch backward below 0
  ("NOP\nJMP 2\nHALT", 1, 2),                             # JMP exactly to the program length
  ("NOP\nJMP -2", 1, 2),
  ("NOP\nLI s1, 3", 1, 2),                                # falling off the end without HALT
  ("LOOPI 0, 3\nNOP\nHALT", 0, 1),                        # LOOP skip past the end
])
def test_imem_out_of_range(src, pc, cycles):
  trapped(run(src), "imem_out_of_range", pc, cycles=cycles)


def test_imem_trapping_instruction_completes():
  r = run("""
    LI s1, 5
    SADDI s2, s1, 1
    .dump sreg""")
  trapped(r, "imem_out_of_range", 1, cycles=2)
  assert sregs(r)[1:3] == [5, 6]


def test_loop_stack_fifth_loop():
  r = run("""
    LOOPI 1, e1
    LOOPI 1, e2
    LOOPI 1, e3
    LOOPI 1, e4
    LOOPI 1, e5
    NOP
  e5: NOP
  e4: NOP
  e3: NOP
  e2: NOP
  e1: HALT""")
  trapped(r, "loop_stack", 4, cycles=4)


@pytest.mark.parametrize("inner_end", ["e1", "after"])
def test_loop_stack_bad_nesting(inner_end):
  r = run(f"""
    LI s1, 2
    LOOPI 2, e1
    NOP
    LOOP s1, {inner_end}
    NOP
    NOP
  e1:
    NOP
  after:
    HALT""")
  trapped(r, "loop_stack", 3, cycles=3)


def test_loop_stack_lbreak_empty():
  trapped(run("NOP\nLBREAK\nHALT"), "loop_stack", 1, cycles=1)
  # a loop popped at its end leaves the stack empty again
  trapped(run("LOOPI 2, 2\nNOP\nLBREAK\nHALT"), "loop_stack", 2, cycles=3)


def test_timeout():
  r = run("""
    LI s1, 1
  spin:
    SADDI s2, s2, 1
    JMP spin
    .run 50
    .dump sreg""")
  assert (r.status, r.trap, r.pc, r.cycles) == ("timeout", None, 2, 50)
  assert sregs(r)[2] == 25
  # the limit is inclusive: a program of exactly max_cycles instructions completes
  ok(run("NOP\nNOP\nHALT\n.run 3"), cycles=3)
  r = run("NOP\nNOP\nHALT\n.run 2")
  assert (r.status, r.pc, r.cycles) == ("timeout", 2, 2)


def test_preloads_and_reset_state():
  r = ok(run("""
    .sreg 5 -9
    .vmem 7 """ + " ".join(map(str, range(16))) + """
    .psum 2 """ + " ".join(map(str, range(100, 116))) + """
    VEXTRACT s1, v9, 3, 3
    VLD v1, [s0 + 7]
    PLD v2, [s0 + 2]
    VADD v3, v1, v2
    VST v3, [s0 + 8]
    HALT
    .dump vmem 8 1
    .dump vmem 6 1
    .dump sreg"""))
  assert (tile(r, "vmem", 8) == np.arange(16).reshape(4, 4) * 2 + 100).all()
  assert (tile(r, "vmem", 6) == 0).all()
  assert sregs(r)[:6] == [0, 0, 0, 0, 0, (-9) & M32]


def test_bench_program_runs():
  from tinytpu.golden import bench
  r = ok(interp.run(bench.bundle(outer=3)))
  assert r.cycles == 4 + 127 * 3


# ---------------------------------------------------------------------------------------------
# element gather / scatter: VMEM element e is lane e mod N*N of tile e div N*N
def _flat(r, addr, count):
  return np.concatenate([tile(r, "vmem", addr + i).ravel() for i in range(count)])


def test_vgather():
  ts, pre = tiles("a", "b", "c")
  mem = u32(np.concatenate([ts[k].ravel() for k in "abc"]))
  idx = np.array([[0, 30, 16, 5], [-3, -17, 20, 13], [1, 1, 1, 1], [30, 29, 28, 27]])
  r = ok(run(f"""{pre}
    .vmem 9 {" ".join(map(str, idx.ravel()))}
    LI s1, 17
    VLD v1, [s0 + 9]
    VGATHER v2, v1, [s1 + 0]
    VST v2, [s0 + 10]
    HALT
    .dump vmem 10 1"""))
  assert (tile(r, "vmem", 10) == mem[idx + 17]).all()


@pytest.mark.parametrize("base,lane,good", [(0, -1, False), (0, 1024 * 16 - 1, True), (0, 1024 * 16, False),
                                            (-5, 4, False), (-5, 5, True), (0x7FFFFFFF, 0x7FFFFFFF, False)])
def test_vgather_range(base, lane, good):
  r = run(f"""
    LI s1, {base}
    LI s2, {lane}
    VSPLAT v1, s2
    VFILL v2, 3
    VGATHER v2, v1, [s1 + 0]
    VST v2, [s0 + 0]
    HALT
    .dump vmem 0 1""")
  if good: ok(r, cycles=7)
  else:
    trapped(r, "vmem_out_of_range", 4, cycles=4)
    assert (tile(r, "vmem", 0) == 0).all()


def test_vscatter_mask_and_last_lane_wins():
  vals = np.arange(100, 116).reshape(4, 4)
  idx = np.array([[3, 3, 7, -2], [40, 0, 3, 9], [5000000, 12, 12, 1], [2, 2, 2, 2]])
  mask = np.array([[1, 1, 0, 1], [0, 1, 1, 1], [0, 1, 1, 0], [1, 0, 2, 0]])  # lane [2][0] is out of range but inactive
  r = ok(run(f"""
    .vmem 0 {" ".join(map(str, vals.ravel()))}
    .vmem 1 {" ".join(map(str, idx.ravel()))}
    .vmem 2 {" ".join(map(str, mask.ravel()))}
    LI s1, 34
    VLD v1, [s0 + 0]
    VLD v2, [s0 + 1]
    VLD v3, [s0 + 2]
    VSCATTER v1, v2, v3, [s1 + -2]
    HALT
    .dump vmem 0 4"""))
  want = u32(np.concatenate([vals.ravel(), idx.ravel(), mask.ravel(), np.zeros(16, int)]))
  for l in range(16):  # sequentially, in lane order
    if mask.ravel()[l]: want[32 + idx.ravel()[l]] = vals.ravel()[l]
  assert (_flat(r, 0, 4) == want).all()
  assert want[35] == 106 and want[34] == 114  # lanes 0, 1, 6 write element 3: lane 6 wins


@pytest.mark.parametrize("last_active", [1, 0])
def test_vscatter_trap_writes_nothing(last_active):
  # lanes 0..14 write elements 1..15; lane 15 addresses element 16384 = VMEM_TILES*N*N
  r = run(f"""
    .vmem 2 {" ".join(map(str, range(15)))} 16383
    .vmem 3 {" ".join(["1"] * 15)} {last_active}
    LI s1, 1
    VFILL v1, 5
    VLD v2, [s0 + 2]
    VLD v3, [s0 + 3]
    VSCATTER v1, v2, v3, [s1 + 0]
    HALT
    .dump vmem 0 1
    .dump vmem 1023 1""")
  if last_active:
    trapped(r, "vmem_out_of_range", 4, cycles=4)
    assert (tile(r, "vmem", 0) == 0).all() and (tile(r, "vmem", 1023) == 0).all()
  else:
    ok(r, cycles=6)
    assert tile(r, "vmem", 0).ravel().tolist() == [0] + [5] * 15 and (tile(r, "vmem", 1023) == 0).all()
