"""The RTL co-simulation (tinytpu.cosim, rtl/sim, rtl/tensorcore.sv) against the golden interpreter:
hand-written programs of every instruction family, VGATHER/VSCATTER (patterns, masks, collisions,
MXU overlap, traps, random mixes, N=8), every trap code, every bundle rejection (the C++ reader
must give the exact message of tinytpu/bundle.py), server mode with no state leaking between
bundles, and the issue rate of independent vector ops."""
import numpy as np
import pytest

from tinytpu import asm, bundle, cosim, isa
from tinytpu.config import DEFAULT
from tinytpu.golden import interp

N = DEFAULT.N
HEADER = bundle.header(DEFAULT)


@pytest.fixture(scope="module", autouse=True)
def _built():
  cosim.build(DEFAULT)


def both(tasm: str, cfg=DEFAULT) -> tuple[bundle.Result, bundle.Result]:
  b = asm.assemble_bundle(tasm, cfg)
  text = bundle.write(b)
  return cosim.run_bundle(text, cfg), interp.run(b)


def check(tasm: str, cfg=DEFAULT) -> bundle.Result:
  rtl, gold = both(tasm, cfg)
  diffs = bundle.diff_results(rtl, gold)
  assert not diffs, "RTL != golden:\n  " + "\n  ".join(diffs) + "\n" + bundle.format_result(rtl)
  return rtl


def tile(vals) -> str:
  return " ".join(str(int(np.int64(v))) for v in np.asarray(vals).ravel())


RNG = np.random.default_rng(1234)


def rand_tiles(k: int, lo=-(1 << 31), hi=(1 << 31) - 1) -> list[np.ndarray]:
  return [RNG.integers(lo, hi, size=N * N, endpoint=True) for _ in range(k)]


# ---------------------------------------------------------------------------------------------
def test_scalar_alu_and_branches():
  ops = ["SADD", "SSUB", "SMUL", "SAND", "SOR", "SXOR", "SSHL", "SSHR", "SSRA", "SSLT", "SSLTU"]
  body = "\n".join(f"  {m} s{3 + i}, s1, s2" for i, m in enumerate(ops))
  rtl = check(f"""
  LI s1, -123456789
  LI s2, 0x7fff0035
{body}
  SADDI s14, s1, -7
  LI s15, 0
  BEQ s1, s1, eq
  LI s15, 99
eq: BNE s1, s1, bad
  BLT s1, s2, lt
  JMP bad
lt: BGE s1, s2, bad
  BGE s2, s1, ge
bad: LI s15, 77
ge: SADDI s15, s15, 1
  RDPERF s13, retired
  HALT
.dump sreg
.run 1000
""")
  assert rtl.status == "ok"


def test_loops_nested_and_lbreak():
  check("""
  LI s1, 3
  LOOP s1, e1
    SADDI s2, s2, 1
    LOOPI 4, e2
      SADDI s3, s3, 1
      LOOPI 0, e3
        SADDI s9, s9, 1
e3:   SADDI s4, s4, 2
e2: SADDI s5, s5, 1
e1: LOOPI 10, e4
    SADDI s6, s6, 1
    LI s7, 4
    BNE s6, s7, e4b
    LBREAK
e4b: NOP
e4: LI s1, -2
  LOOP s1, e5
    SADDI s8, s8, 1
e5: HALT
.dump sreg
.run 10000
""")


def test_vector_registers_and_memory():
  a, b = rand_tiles(2)
  check(f"""
  LI s1, 5
  LI s2, 3
  VLD v1, [s1 - 5]
  VLD v2, [s0 + 1]
  VST v1, [s1 + 2]
  PST v2, [s2 + 0]
  PLD v3, [s2]
  VST v3, [s1 + 3]
  VMOV v4, v1
  VZERO v5
  VFILL v6, -42
  VSPLAT v7, s1
  VST v4, [s1 + 4]
  VST v5, [s1 + 5]
  VST v6, [s1 + 6]
  VST v7, [s1 + 7]
  VEXTRACT s3, v1, {N - 1}, 2
  VEXTRACT s4, v6, 0, 0
  VST v1, [s1 + 0]
  VLD v8, [s1 + 0]
  VST v8, [s0 + 20]
  HALT
.vmem 0 {tile(a)}
.vmem 1 {tile(b)}
.dump vmem 0 21
.dump psum 3 1
.dump sreg
.run 1000
""")


def _op_program(mnems: list[str], tiles: list[np.ndarray]) -> str:
  """Every op on v1, v2 (v3 as VSEL's condition / VMAC's addend), each result stored to its own tile."""
  lines = ["  VLD v1, [s0 + 0]", "  VLD v2, [s0 + 1]", "  VLD v3, [s0 + 2]"]
  for i, m in enumerate(mnems):
    ins = isa.BY_MNEMONIC[m]
    arity = len([o for o in ins.operands if o.kind == "vreg"]) - 1
    d = 4 + i % 8
    if m == "VSEL":
      lines.append(f"  VSEL v{d}, v3, v1, v2")
    elif arity == 3:
      lines.append(f"  {m} v{d}, v1, v2, v3")
    elif arity == 2:
      lines.append(f"  {m} v{d}, v1, v2")
    else:
      lines.append(f"  {m} v{d}, v1")
    lines.append(f"  VST v{d}, [s0 + {10 + i}]")
  lines.append("  HALT")
  lines += [f".vmem {k} {tile(t)}" for k, t in enumerate(tiles)]
  lines += [f".dump vmem 10 {len(mnems)}", ".run 100000"]
  return "\n".join(lines)


VPU_MNEMS = [i.mnemonic for i in isa.INSTRS if i.unit == "vpu" and i.op == isa.OP["VPU"]]
INT_MNEMS = [m for m in VPU_MNEMS if isa.VPU_LATENCY[m[1:]] == 1 and not m[1:].startswith("F")]
FP_MNEMS = [m for m in VPU_MNEMS if m not in INT_MNEMS]


@pytest.mark.parametrize("data", ["random", "edge"])
def test_vpu_int_ops(data):
  if data == "random":
    tiles = rand_tiles(3)
  else:
    edge = np.array([0, 1, -1, 2, 31, 32, -(1 << 31), (1 << 31) - 1, 0x7f, 0x80, 0xff, -128, 255, 65535, -32768, 5])
    tiles = [edge, np.roll(edge, 3), np.roll(edge, 7)]
  check(_op_program(INT_MNEMS + ["VCDIV", "VCMOD"], tiles))


TRANSCENDENTAL = ["VFEXP2", "VFLOG2", "VFSIN", "VFCOS"]


@pytest.mark.parametrize("which", ["arith", "transcendental"])
def test_vpu_fp_ops(which):
  f = lambda xs: np.array(xs, np.float32).view(np.int32)
  a = f([1.5, -2.25, 0.0, -0.0, 3.0e10, 1e-40, np.inf, -np.inf, np.nan, 7.0, -0.5, 100.25, 2.0, 0.125, -3.0, 1.0])
  b = f([2.0, 0.5, -0.0, 0.0, -1.0e-3, 3.0, 1.0, np.inf, 2.0, -7.0, 0.25, 9.0, 0.0, -8.0, 3.0, 1e30])
  c = RNG.standard_normal(N * N).astype(np.float32).view(np.int32)
  mnems = TRANSCENDENTAL if which == "transcendental" else [m for m in FP_MNEMS if m not in TRANSCENDENTAL]
  check(_op_program(mnems, [a, b, c]))


def test_xlu_ops():
  a, idx = rand_tiles(2, -1000, 1000)
  check(f"""
  VLD v1, [s0 + 0]
  VLD v2, [s0 + 1]
  LI s1, -3
  XROT v3, v1, 1
  XROTS v4, v1, s1
  XSROT v5, v1, -1
  XSROTS v6, v1, s1
  XBCOL v7, v1, {N - 1}
  XBROW v8, v1, 1
  XBSCALAR v9, v1, 2, 1
  XTRANS v10, v1
  XSHUF v11, v1, v2
  XTRANS v12, v10
  VST v3, [s0 + 3]
  VST v4, [s0 + 4]
  VST v5, [s0 + 5]
  VST v6, [s0 + 6]
  VST v7, [s0 + 7]
  VST v8, [s0 + 8]
  VST v9, [s0 + 9]
  VST v10, [s0 + 10]
  VST v11, [s0 + 11]
  VST v12, [s0 + 12]
  HALT
.vmem 0 {tile(a)}
.vmem 1 {tile(idx)}
.dump vmem 3 10
.run 1000
""")


def test_mxu_gemm_overlapping_vector_work():
  acts = rand_tiles(6, -128, 127)
  ws = rand_tiles(2, -300, 300)  # lanes beyond int8: only the low 8 bits count
  check(f"""
  LI s1, 10
  MLW [s1 + 0]
  MMUL [s0 + 0], [s0 + 0], 4, 0
  VLD v1, [s0 + 1]
  VADD v2, v1, v1
  VST v2, [s0 + 20]        # not an MXU source: overlaps
  MLW [s1 + 1]
  MMUL [s0 + 0], [s0 + 2], 4, 1
  VST v2, [s0 + 3]         # an MMUL source: must wait
  PLD v3, [s0 + 1]         # an MMUL result: must wait
  VST v3, [s0 + 21]
  PST v1, [s0 + 2]         # an MMUL destination: must wait
  MMUL [s0 + 4], [s0 + 4], 2, 1
  FENCE
  PLD v4, [s0 + 5]
  VST v4, [s0 + 22]
  HALT
{chr(10).join(f".vmem {k} {tile(t)}" for k, t in enumerate(acts))}
.vmem 10 {tile(ws[0])}
.vmem 11 {tile(ws[1])}
.psum 4 {tile(rand_tiles(1)[0])}
.psum 5 {tile(rand_tiles(1)[0])}
.dump vmem 0 23
.dump psum 0 8
.run 10000
""")


def test_dependent_chain_long_latency():
  a, b = rand_tiles(2, -1000, 1000)
  check(f"""
  VLD v1, [s0 + 0]
  VLD v2, [s0 + 1]
  VCDIV v3, v1, v2
  VADD v3, v1, v2          # WAW: must land after the divide
  VI2F v4, v3
  VFSQRT v5, v4
  VFADD v5, v5, v4
  VF2I v6, v5
  VCMOD v7, v6, v2
  VADD v8, v7, v3
  VST v8, [s0 + 2]
  VEXTRACT s1, v8, 1, 1
  HALT
.vmem 0 {tile(a)}
.vmem 1 {tile(b)}
.dump vmem 2 1
.dump sreg
.run 1000
""")


# ---------------------------------------------------------------------------------------------
TRAPS = {
  "illegal_instruction": ("  NOP\n  .word 0x0100000000000001\n  HALT", 1),
  "vmem_out_of_range": (f"  LI s1, {DEFAULT.VMEM_TILES - 2}\n  VLD v1, [s1 + 1]\n  VLD v1, [s1 + 2]\n  HALT", 2),
  "psum_out_of_range": ("  LI s1, -1\n  NOP\n  PST v1, [s1 + 0]\n  HALT", 2),
  "imem_out_of_range": ("  NOP\n  JMP 5\n  HALT", 1),
  "loop_stack": ("  NOP\n  NOP\n  LBREAK\n  HALT", 2),
}


@pytest.mark.parametrize("name", list(TRAPS))
def test_trap(name):
  prog, pc = TRAPS[name]
  rtl = check(f"  VFILL v1, 9\n  VST v1, [s0 + 0]\n{prog}\n.dump vmem 0 1\n.dump sreg\n.run 1000")
  assert (rtl.status, rtl.trap, rtl.pc) == ("trap", name, pc + 2)
  assert isa.TRAP[name] == isa.TRAP_CODES.index(rtl.trap)


@pytest.mark.parametrize("prog,trap,pc", [
  ("  LI s1, 1020\n  MMUL [s0 + 0], [s1 + 0], 5, 0\n  HALT", "vmem_out_of_range", 1),
  ("  MMUL [s0 + 62], [s0 + 0], 3, 0\n  HALT", "psum_out_of_range", 0),
  ("  MLW [s0 - 1]\n  HALT", "vmem_out_of_range", 0),
  ("  LOOPI 2, e1\n  LOOPI 2, e2\n  LOOPI 2, e3\n  LOOPI 2, e4\n  LOOPI 0, e5\n  NOP\ne5: NOP\ne4: NOP\ne3: NOP\ne2: NOP\ne1: HALT", "loop_stack", 4),
  ("  LOOPI 2, e1\n  LOOPI 2, e2\n  NOP\ne1: NOP\ne2: HALT", "loop_stack", 1),
  ("  NOP\n  NOP", "imem_out_of_range", 1),
  ("  LOOPI 2, e1\n  NOP\ne1: NOP", "imem_out_of_range", 2),
])
def test_more_traps(prog, trap, pc):
  rtl = check(prog + "\n.dump sreg\n.run 1000")
  assert (rtl.status, rtl.trap, rtl.pc) == ("trap", trap, pc)


def test_timeout():
  rtl = cosim.run_bundle(bundle.write(asm.assemble_bundle("  LI s1, 1\nl: SADDI s2, s2, 1\n  JMP l\n.run 500", DEFAULT)), DEFAULT)
  assert rtl.status == "timeout" and rtl.pc in (1, 2)
  assert rtl.cycles >= 499


def test_empty_program_traps():
  rtl = cosim.run_bundle(f"{HEADER}\nrun 10\n", DEFAULT)
  gold = interp.run(bundle.parse(f"{HEADER}\nrun 10\n", DEFAULT))
  assert (rtl.status, rtl.trap, rtl.pc) == (gold.status, gold.trap, gold.pc) == ("trap", "imem_out_of_range", 0)


# ---------------------------------------------------------------------------------------------
ZT = " ".join(["0"] * (N * N))
BAD = [
  "",
  "# nothing\n\n",
  "vmem 0 1\n",
  "tinytpu-bundle 3 N=4 VMEM_TILES=1024 PSUM_TILES=64\nrun 1\n",
  "tinytpu-bundle\nrun 1\n",
  "tinytpu-bundle 1 N=4 VMEM_TILES=1024 PSUM_TILES=64 FOO=1\nrun 1\n",
  "tinytpu-bundle 1 N=4 VMEM_TILES=1024 N=4 PSUM_TILES=64\nrun 1\n",
  "tinytpu-bundle 1 N=4 VMEM_TILES=1024\nrun 1\n",
  "tinytpu-bundle 1 N=8 VMEM_TILES=1024 PSUM_TILES=64\nrun 1\n",
  "tinytpu-bundle 1 N=4 VMEM_TILES=0x400 PSUM_TILES=64 IMEM_WORDS=256\nrun 1\n",
  "tinytpu-bundle 1 N=four VMEM_TILES=1024 PSUM_TILES=64\nrun 1\n",
  "tinytpu-bundle 1 N=4 VMEM_TILES=99999999999999999999999999999999999999999999 PSUM_TILES=64\nrun 1\n",
  f"{HEADER}\n",
  f"{HEADER}\nrun 1\nrun 2\n",
  f"{HEADER}\nrun 1\nsreg 1 2\n",
  f"{HEADER}\nfoo 1 2\nrun 1\n",
  f"{HEADER}\nVMEM 0 {ZT}\nrun 1\n",
  f"{HEADER}\nasm .vmem 0 1\nrun 1\n",
  f"{HEADER}\nvmem\nrun 1\n",
  f"{HEADER}\nvmem 0 1 2 3\nrun 1\n",
  f"{HEADER}\nvmem 1024 {ZT}\nrun 1\n",
  f"{HEADER}\nvmem -1 {ZT}\nrun 1\n",
  f"{HEADER}\nvmem 0x {ZT}\nrun 1\n",
  f"{HEADER}\nvmem 0 {ZT} 1\nrun 1\n",
  f"{HEADER}\nvmem 0 {ZT[:-1]}4294967296\nrun 1\n",
  f"{HEADER}\nvmem 0 {ZT[:-1]}-2147483649\nrun 1\n",
  f"{HEADER}\nvmem 0 {ZT[:-1]}1.5\nrun 1\n",
  f"{HEADER}\nvmem 3 {ZT}\nvmem 3 {ZT}\nrun 1\n",
  f"{HEADER}\npsum 64 {ZT}\nrun 1\n",
  f"{HEADER}\npsum 1 1,2\nrun 1\n",
  f"{HEADER}\nsreg 1\nrun 1\n",
  f"{HEADER}\nsreg 16 1\nrun 1\n",
  f"{HEADER}\nsreg 0 1\nrun 1\n",
  f"{HEADER}\nsreg 2 0x100000000\nrun 1\n",
  f"{HEADER}\nsreg 2 1\nsreg 2 3\nrun 1\n",
  f"{HEADER}\nsreg 2 abc\nrun 1\n",
  f"{HEADER}\ninst\nrun 1\n",
  f"{HEADER}\ninst 1 2\nrun 1\n",
  f"{HEADER}\ninst 0x10000000000000000\nrun 1\n",
  f"{HEADER}\ninst -1\nrun 1\n",
  f"{HEADER}\ninst 0xzz\nrun 1\n",
  f"{HEADER}\ndump\nrun 1\n",
  f"{HEADER}\ndump regs 1 2\nrun 1\n",
  f"{HEADER}\ndump sreg 1\nrun 1\n",
  f"{HEADER}\ndump vmem 1\nrun 1\n",
  f"{HEADER}\ndump vmem 0 0\nrun 1\n",
  f"{HEADER}\ndump vmem 1020 5\nrun 1\n",
  f"{HEADER}\ndump psum -1 2\nrun 1\n",
  f"{HEADER}\ndump psum x 2\nrun 1\n",
  f"{HEADER}\nrun\n",
  f"{HEADER}\nrun 1 2\n",
  f"{HEADER}\nrun 0\n",
  f"{HEADER}\nrun 9223372036854775808\n",
  f"{HEADER}\nrun 1e5\n",
  f"{HEADER}\n" + "inst 0x0100000000000000\n" * (DEFAULT.IMEM_WORDS + 1) + "run 1\n",
  f"{HEADER}\r\nvmem 0 1 # c\r\nrun 1\r\n",
  f"{HEADER}\nvmem\t'x 1\nrun 1\n",
  f"{HEADER}\nsreg 1 2 ; 3\nsreg 1 2 3\nrun 1\n",
]


@pytest.mark.parametrize("i", range(len(BAD)))
def test_bundle_rejections_match_python(i):
  text = BAD[i]
  with pytest.raises(bundle.BundleError) as e:
    bundle.parse(text, DEFAULT)
  rc, out, err = cosim.run_raw(text, DEFAULT)
  assert rc == 2 and out == ""
  assert err.strip() == str(e.value), f"bundle {text[:200]!r}"


def test_every_rejection_reason_covered():
  # every message template of the Python reader appears among the cases above
  msgs = set()
  for text in BAD:
    try:
      bundle.parse(text, DEFAULT)
    except bundle.BundleError as e:
      msgs.add(e.why.split(" ")[0] + " " + e.why.split(" ")[1] if " " in e.why else e.why)
  assert len(msgs) >= 25


def test_asm_records_go_through_the_python_assembler():
  text = f"{HEADER}\nasm   LI s1, 7\nasm l: SADDI s1, s1, -1\ninst 0x{asm.assemble('BNE s1, s0, -1')[0]:016x}\nasm HALT\ndump sreg\nrun 100\n"
  assert not bundle.diff_results(cosim.run_bundle(text, DEFAULT), interp.run(bundle.parse(text, DEFAULT)))
  with pytest.raises(bundle.BundleError, match="error line 2: "):
    cosim.run_bundle(f"{HEADER}\nasm FOO s1\nrun 1\n", DEFAULT)


# ---------------------------------------------------------------------------------------------
def _leak_bundle(i: int) -> str:
  """Bundle i dirties VMEM, PSUM, vector and scalar registers, the MXU weights and the loop stack,
  and dumps what bundle i-1 dirtied without writing it: any leak shows as a difference."""
  rng = np.random.default_rng(i)
  a = rng.integers(-100, 100, N * N)
  trap = ["  HALT", "  LOOPI 3, e\n  NOP\ne: LBREAK", "  VLD v9, [s0 - 1]", "  JMP 100"][i % 4]
  return bundle.write(asm.assemble_bundle(f"""
  VEXTRACT s1, v{(i + 1) % 16}, 1, 1
  VST v{(i + 2) % 16}, [s0 + {(i + 3) % 8}]
  MMUL [s0 + {i % 4}], [s0 + 9], 1, 1
  PLD v3, [s0 + {i % 4}]
  VST v3, [s0 + 16]
  VLD v{i % 16}, [s0 + 10]
  VADD v{(i + 1) % 16}, v{i % 16}, v{i % 16}
  VST v{i % 16}, [s0 + {i % 8}]
  LI s{1 + i % 15}, {i}
  PST v{i % 16}, [s0 + {(i + 1) % 4}]
  MLW [s0 + 10]
  LOOPI 2, e0
  NOP
  NOP
e0: NOP
  SADD s2, s2, s{1 + (i + 1) % 15}
{trap}
.vmem 9 {tile(rng.integers(-128, 127, N * N))}
.vmem 10 {tile(a)}
.dump vmem 0 17
.dump psum 0 4
.dump sreg
.run 2000
""", DEFAULT))


def test_server_100_bundles_no_leak():
  bundles = [_leak_bundle(i) for i in range(100)]
  with cosim.Server(DEFAULT) as srv:
    for i, text in enumerate(bundles):
      rtl = srv.run(text)
      gold = interp.run(bundle.parse(text, DEFAULT))
      diffs = bundle.diff_results(rtl, gold)
      assert not diffs, f"bundle {i}:\n  " + "\n  ".join(diffs)
    with pytest.raises(bundle.BundleError, match="error line 2: unknown record"):
      srv.run(f"{HEADER}\nbogus\nrun 1\n")
    assert srv.run(bundles[5]).status == interp.run(bundle.parse(bundles[5], DEFAULT)).status


# ---------------------------------------------------------------------------------------------
def test_issue_rate_independent_single_cycle_ops():
  k = 64
  ops = ["VADD", "VSUB", "VXOR", "VMAX", "XROT", "VMOV", "VFILL", "VAND"]
  lines = []
  for i in range(k):
    m, d, a, b = ops[i % len(ops)], 8 + i % 8, i % 4, 4 + i % 4
    lines.append({"XROT": f"  XROT v{d}, v{a}, 1", "VMOV": f"  VMOV v{d}, v{a}", "VFILL": f"  VFILL v{d}, {i}"}.get(m, f"  {m} v{d}, v{a}, v{b}"))
  rtl = check("\n".join(lines) + "\n  HALT\n.run 1000")
  # one instruction per cycle, plus the final write-back drain after HALT
  assert rtl.cycles <= k + 3, rtl.cycles
  assert rtl.perf["stall_raw"] + rtl.perf["stall_waw"] + rtl.perf["stall_unit"] == 0


# ---------------------------------------------------------------------------------------------
# VGATHER / VSCATTER: element addresses sb + imm + va[l] over the flat VMEM (element e = lane
# e mod N*N of tile e div N*N). Index tiles are built here in numpy; the golden interpreter gives
# the expected memory.
def gather_patterns(n: int, tiles: int) -> dict[str, tuple[np.ndarray, int, int]]:
  """name -> (lane offsets va, base sb, imm): every one in range of a `tiles`-tile VMEM."""
  L, l = n * n, np.arange(n * n)
  return {
    "contiguous": (l, 0, 3 * L),
    "strided": (l * 3, L, 1),
    "broadcast": (np.full(L, 7), 2 * L, 5),
    "reversed": (L - 1 - l, 5 * L, 0),
    "column": ((l % n) * n + l // n, 6 * L, 0),         # a transpose through memory
    "many_tiles": (l * L + l % 3, 0, 9),                  # one element from each of L tiles
    "negative": (-l * 5, 40 * L, -2),                     # negative lane offsets, positive base
    "random": (RNG.integers(0, tiles * L, L), 0, 0),
    "last_element": (np.full(L, -1), tiles * L, 0),
  }


def _gather_program(n: int, tiles: int, data_tiles: int) -> str:
  pats = gather_patterns(n, tiles)
  lines, extra = [], []
  for i, (name, (va, base, imm)) in enumerate(pats.items()):
    lines += [f"  VLD v1, [s0 + {200 + i}]", f"  LI s2, {base}",
              f"  VGATHER v{2 + i % 4}, v1, [s2 + {imm}]",   # immediately after the VLD of its offsets (RAW)
              f"  VST v{2 + i % 4}, [s0 + {100 + i}]"]        # immediately after the gather (RAW, latency 2)
    extra.append(f".vmem {200 + i} {tile(va)}")
  data = [f".vmem {k} {tile(RNG.integers(-(1 << 31), (1 << 31) - 1, n * n, endpoint=True))}" for k in range(data_tiles)]
  data.append(f".vmem {tiles - 1} {tile(RNG.integers(0, 1000, n * n))}")
  # a gather right after a VST to one of its source tiles must see the store
  lines += ["  VFILL v8, 77", "  VST v8, [s0 + 1]", "  VLD v1, [s0 + 200]", "  LI s2, 0",
            f"  VGATHER v9, v1, [s2 + {n * n}]", "  VST v9, [s0 + 120]",
            # a gather whose offsets come from a long-latency op, and WAW with a later write
            "  VFILL v10, 3", f"  VFILL v11, {n * n}", "  VCDIV v12, v1, v10", f"  VGATHER v13, v12, [s0 + {2 * n * n}]",
            "  VMOV v13, v13", "  VADD v14, v13, v13", "  VGATHER v14, v1, [s0 + 0]", "  VFILL v14, 5", "  VST v13, [s0 + 121]",
            "  VST v14, [s0 + 122]", "  VGATHER v15, v1, [s0 + 0]", "  VGATHER v15, v11, [s0 + 0]", "  VST v15, [s0 + 123]"]
  return "\n".join(lines + ["  HALT"] + data + extra +
                   [f".dump vmem 100 {len(pats)}", ".dump vmem 120 4", ".run 10000"])


def test_vgather_patterns():
  check(_gather_program(N, DEFAULT.VMEM_TILES, 48))


def _scatter_program(n: int) -> str:
  L, l = n * n, np.arange(n * n)
  vals = RNG.integers(-(1 << 31), (1 << 31) - 1, L, endpoint=True)
  mask = RNG.integers(0, 2, L) * RNG.integers(1, 1 << 31, L)   # any nonzero lane is active
  return "\n".join([
    "  VLD v1, [s0 + 200]",    # values
    "  VLD v2, [s0 + 201]",    # mask
    "  VLD v3, [s0 + 202]",    # offsets: reversed
    "  VLD v4, [s0 + 203]",    # offsets: duplicates (lanes collide in pairs and fours)
    "  VLD v5, [s0 + 204]",    # offsets: a column of every tile in a run (negative, positive base)
    "  VFILL v6, 1",
    f"  LI s1, {L}",
    "  VSCATTER v1, v3, v2, [s1 + 0]",          # masked, reversed into tile 1
    "  VSCATTER v1, v4, v6, [s1 + 2]",          # duplicates, every lane: the later lane wins
    "  VSCATTER v1, v4, v2, [s1 + 11]",         # duplicates, masked
    f"  LI s2, {20 * L}",
    "  VSCATTER v1, v5, v6, [s2 - 1]",          # across tiles
    # later reads see the scatters: VLD, VGATHER, MLW + MMUL
    "  VLD v7, [s0 + 1]",
    "  VST v7, [s0 + 120]",
    "  VGATHER v8, v3, [s1 + 0]",
    "  VST v8, [s0 + 121]",
    "  VSCATTER v1, v3, v6, [s0 + 0]",         # tile 0 = reversed values, then the MXU reads it at once
    "  MLW [s0 + 0]",
    "  MMUL [s0 + 0], [s0 + 1], 2, 0",
    # operands written by pending ops: vs from a divide, va from a VADD, vm from a VMOV
    "  VFILL v9, 2",
    "  VCDIV v10, v1, v9",
    "  VADD v11, v3, v6",
    "  VMOV v12, v2",
    f"  VSCATTER v10, v11, v12, [s0 + {100 * L}]",
    "  VFILL v10, 0",                           # WAR: must not disturb the scatter's vs
    "  FENCE",
    "  HALT",
    f".vmem 200 {tile(vals)}", f".vmem 201 {tile(mask)}", f".vmem 202 {tile(L - 1 - l)}",
    f".vmem 203 {tile(l // 2 * 2 - (l % 4 == 3) * 2)}", f".vmem 204 {tile(l * L + 1)}",
    ".dump vmem 0 4", f".dump vmem 19 {L + 2}", ".dump vmem 100 2", ".dump vmem 120 2",
    ".dump psum 0 2", ".run 10000"])


def test_vscatter_masks_duplicates_and_readers():
  check(_scatter_program(N))


def test_vscatter_while_mmul_in_flight():
  # MMUL T=12 streams activation tiles 0..11; a scatter into tile 5 must wait for it (the MXU reads
  # the old data), one into tile 30 need not; a later MMUL sees the scattered tile
  L = N * N
  acts = rand_tiles(12, -128, 127)
  w = rand_tiles(1, -128, 127)[0]
  rtl = check("\n".join([
    "  VLD v1, [s0 + 50]",
    "  VLD v2, [s0 + 51]",
    "  VFILL v3, 1",
    "  VFILL v4, 0",
    "  MLW [s0 + 40]",
    "  MMUL [s0 + 0], [s0 + 0], 12, 0",
    f"  LI s1, {30 * L}",
    "  VSCATTER v1, v2, v3, [s1 + 0]",           # misses the MMUL's tiles
    "  VSCATTER v1, v2, v4, [s0 + 0]",           # no active lane: nothing to wait for
    f"  LI s2, {5 * L}",
    "  VSCATTER v1, v2, v3, [s2 + 0]",           # hits tile 5
    "  MMUL [s0 + 12], [s0 + 5], 1, 0",
    "  FENCE",
    "  HALT",
    *[f".vmem {k} {tile(t)}" for k, t in enumerate(acts)],
    f".vmem 40 {tile(w)}", f".vmem 50 {tile(rand_tiles(1, -128, 127)[0])}", f".vmem 51 {tile(np.arange(L)[::-1])}",
    ".dump vmem 0 12", ".dump vmem 30 1", ".dump psum 0 13", ".run 10000"]))
  assert rtl.perf["stall_waw"] > 0   # the hitting scatter waited


@pytest.mark.parametrize("case", ["gather_high", "gather_negative", "scatter_active", "scatter_pending_index"])
def test_gather_scatter_traps(case):
  L, VE = N * N, DEFAULT.VMEM_TILES * N * N
  offs = np.arange(L)
  if case == "gather_high": offs[L - 1] = VE - 1    # base 1: lane L-1 is one past the end
  if case == "gather_negative": offs[3] = -2         # base 1: -1
  if case == "scatter_active": offs[2] = VE
  prog = {
    "gather_high": "  VGATHER v3, v1, [s1 + 0]",
    "gather_negative": "  VGATHER v3, v1, [s1 + 0]",
    "scatter_active": "  VSCATTER v2, v1, v4, [s1 + 0]",
    # the stale offsets (VFILL) are out of range; the trap is decided on the VCDIV's result
    "scatter_pending_index": f"  VFILL v5, {VE}\n  VCDIV v5, v1, v4\n  VSCATTER v2, v5, v4, [s1 - 1]\n  VFILL v6, -1\n"
                             f"  VSCATTER v2, v6, v4, [s1 - 2]",
  }[case]
  rtl = check("\n".join([
    "  VLD v1, [s0 + 10]", "  VFILL v2, 55", "  VFILL v4, 1", "  LI s1, 1", prog,
    "  VST v2, [s0 + 3]", "  HALT", f".vmem 10 {tile(offs)}", ".dump vmem 0 4", ".dump sreg", ".run 1000"]))
  assert (rtl.status, rtl.trap) == ("trap", "vmem_out_of_range")


def test_vscatter_inactive_lanes_not_checked():
  L, VE = N * N, DEFAULT.VMEM_TILES * N * N
  offs = np.arange(L) * 5
  offs[1::2] = np.resize([VE, -(1 << 31), (1 << 31) - 1, -VE], L // 2)   # inactive and out of range
  mask = np.arange(L) % 2 == 0
  rtl = check("\n".join([
    "  VLD v1, [s0 + 10]", "  VLD v2, [s0 + 11]", "  VLD v4, [s0 + 12]", f"  LI s1, {L}",
    "  VSCATTER v2, v1, v4, [s1 + 1]", "  VLD v3, [s0 + 1]", "  VST v3, [s0 + 5]", "  HALT",
    f".vmem 10 {tile(offs)}", f".vmem 11 {tile(RNG.integers(0, 1000, L))}", f".vmem 12 {tile(mask)}",
    ".dump vmem 0 6", ".run 1000"]))
  assert rtl.status == "ok"


@pytest.mark.parametrize("seed", range(3))
def test_gather_scatter_random_programs(seed):
  # random mixes of VLD/VST/VGATHER/VSCATTER/VPU ops over 8 tiles: ordering, masks, collisions
  rng, L = np.random.default_rng(seed), N * N
  lines, data = [], []
  for k in range(6):
    data.append(f".vmem {20 + k} {tile(rng.integers(-3, 8 * L + 3, L))}")   # offsets (base 3 keeps them in range)
    data.append(f".vmem {30 + k} {tile(rng.integers(0, 3, L))}")            # masks
  data += [f".vmem {k} {tile(rng.integers(-1000, 1000, L))}" for k in range(8)]
  for _ in range(60):
    r = lambda: rng.integers(1, 16)
    kind = rng.choice(["vld_off", "vld_mask", "vld", "vst", "gather", "scatter", "vadd", "mlw"],
                      p=[.15, .1, .1, .15, .2, .2, .03, .07])
    lines.append({
      "vld_off": lambda: f"  VLD v{r()}, [s0 + {20 + rng.integers(0, 6)}]",
      "vld_mask": lambda: f"  VLD v{r()}, [s0 + {30 + rng.integers(0, 6)}]",
      "vld": lambda: f"  VLD v{r()}, [s0 + {rng.integers(0, 8)}]",
      "vst": lambda: f"  VST v{r()}, [s0 + {rng.integers(0, 8)}]",
      "gather": lambda: f"  VGATHER v{r()}, v{r()}, [s1 + 0]",
      "scatter": lambda: f"  VSCATTER v{r()}, v{r()}, v{r()}, [s1 + 0]",
      "vadd": lambda: f"  VADD v{r()}, v{r()}, v{r()}",
      "mlw": lambda: f"  MLW [s0 + {rng.integers(0, 8)}]\n  MMUL [s0 + 0], [s0 + {rng.integers(0, 7)}], 2, 1",
    }[kind]())
  # offsets may be anything after VADDs: trap or not, RTL and golden must agree
  lines = ["  LI s1, 3"] + [f"  VLD v{k}, [s0 + {20 + k % 6}]" for k in range(1, 16)] + lines
  check("\n".join(lines + ["  FENCE", "  HALT"] + data + [".dump vmem 0 10", ".dump psum 0 2", ".dump sreg", ".run 10000"]))


# N = 8 (its own build, about 2 minutes): one gather program and one scatter program
def test_gather_scatter_n8():
  from tinytpu.config import Config
  cfg = Config(N=8, VMEM_TILES=256)
  cosim.build(cfg)
  check(_gather_program(8, cfg.VMEM_TILES, 48), cfg)
  check(_scatter_program(8), cfg)


def test_server_interrupted_mid_bundle_is_replaced():
  """A run interrupted while the server still works on its bundle (a test timeout, ^C) kills that
  server: otherwise its late answer blocks on a full pipe while the next bundle is written (a
  deadlock seen in a pytest-timeout run of tinygrad's test_ops)."""
  class Interrupting:
    def __init__(self, f):
      self.f = f
    def readline(self):
      raise KeyboardInterrupt
  srv = cosim.Server(DEFAULT)
  real = srv.proc.stdout
  srv.proc.stdout = Interrupting(real)
  with pytest.raises(KeyboardInterrupt):
    srv.run(bundle.write(asm.assemble_bundle("LOOPI 60000, e\nSADDI s1, s1, 1\ne: HALT\n", DEFAULT)))
  assert srv.proc.poll() is not None  # gone, so the runner starts a fresh one
  with cosim.Server(DEFAULT) as fresh:
    assert fresh.run(bundle.write(asm.assemble_bundle("LI s1, 7\nHALT\n.dump sreg\n", DEFAULT))).status == "ok"


def test_exchange_quotes_the_assertion_that_stopped_a_server():
  """A server (the core's or the chip's co-sim) stopped by a firing assertion ends its output mid
  bundle; the caller gets an error quoting the assertion, not an empty or partial result. Driven
  with a stand-in server, so the check does not depend on an RTL fault."""
  import subprocess
  import sys
  fake = ("import sys\n"
          "for line in sys.stdin:\n"
          "  if line.startswith(%r): break\n"
          "print('tile 3 written', flush=True)\n"
          "print('[15] %%Error: psum.sv:88: Assertion failed in TOP.sim_top: ASSERT FAILED PsumNoErr', flush=True)\n"
          "print('%%Error: psum.sv:88: Verilog $stop', flush=True)\n"
          "print('Aborting...', flush=True)\n"
          "sys.exit(134)\n") % cosim.END
  proc = subprocess.Popen([sys.executable, "-c", fake], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
  with pytest.raises(RuntimeError, match=r"chip co-sim server exited\n  .*ASSERT FAILED PsumNoErr") as e:
    cosim.exchange(proc, "HALT\n", "chip co-sim")
  assert "tile 3 written" not in str(e.value) and "Aborting" in str(e.value)
  proc.wait(timeout=10)
  answering = ("import sys\n"
               "for line in sys.stdin:\n"
               "  if line.startswith(%r): break\n"
               "print('status ok'); print(%r + ' 0', flush=True)\n") % (cosim.END, cosim.END)
  proc = subprocess.Popen([sys.executable, "-c", answering], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
  assert cosim.exchange(proc, "HALT\n", "co-sim") == (0, "status ok\n")
  proc.stdin.close(); proc.wait(timeout=10)

def test_x_randomised_builds_are_their_own_variant(monkeypatch):
  """TINYTPU_XRAND=<seed>: the co-sim is built with unique X values (its own build folder) and each
  process seeds them (rtl/sim/sim_clock.h); the nightly's cosim-xrand group runs the random
  lockstep on it. A seed that is not an integer is refused, not ignored."""
  from tinytpu import cosim
  monkeypatch.delenv("TINYTPU_XRAND", raising=False)
  assert cosim.xrand_seed() is None and cosim.x_args() == ["--x-assign", "fast", "--x-initial", "fast"]
  monkeypatch.setenv("TINYTPU_XRAND", "20261205")
  assert cosim.xrand_seed() == 20261205 and cosim.x_args() == ["--x-assign", "unique", "--x-initial", "unique"]
  monkeypatch.setenv("TINYTPU_XRAND", "tonight")
  with pytest.raises(ValueError, match="TINYTPU_XRAND='tonight': expected an integer seed"):
    cosim.x_args()
  monkeypatch.setenv("TINYTPU_XRAND", str(1 << 31))
  with pytest.raises(ValueError, match=r"must be in \[0, 2\*\*31\)"):
    cosim.x_args()
  sim = (cosim.SIM / "sim_clock.h").read_text()
  assert 'getenv("TINYTPU_XRAND")' in sim and "randReset(2)" in sim and "randSeed(" in sim
