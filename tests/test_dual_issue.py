"""Issue timing of the SXU (doc/core.md, Interlocks and Dual issue): the VRF's write-through bypass (a
reader issues in the cycle its operand is written) on every read port, the rules that still stall (WAW,
a busy write-back slot), and dual issue (slot 1 = pc + 1 issues with slot 0 when they are a load VLD, a
store VST, a compute op VPU/XLU/VMOV/VZERO/VFILL/VSPLAT or a scalar op LI/SALU/SADDI/NOP of two different
kinds, independent (a VST then a VLD of the same tile is a dependence; a VLD then a VST of one tile is
not: the VLD reads the old data), away from the innermost loop's back edge, and slot 1 neither stalls
nor traps).

Every program's results (and the `retired` count) are checked against the golden model. Cycle counts
are exact and computed by hand from the rules, never taken from the RTL; the cycles in which a pair
issued come from the co-sim's per-cycle events (profiler: a cycle retiring 2 instructions, at the pc
of its slot 0).

Cycle accounting: instructions issue from cycle 0; a write issued in cycle t with latency L lands at
the end of cycle t+L; HALT issued in cycle h ends the run at once when no write lands after cycle h
(cycles = h + 1), else the core drains until the last one has landed."""
import numpy as np
import pytest

from tinytpu import asm, bundle, cosim, isa, profile
from tinytpu.config import DEFAULT
from tinytpu.golden import interp

N = DEFAULT.N
RNG = np.random.default_rng(31)


@pytest.fixture(scope="module", autouse=True)
def _built():
  cosim.build(DEFAULT)


def tiles(k: int, base: int = 0, lo: int = -1000, hi: int = 1000) -> str:
  return "".join(f".vmem {base + i} " + " ".join(str(v) for v in RNG.integers(lo, hi, N * N)) + "\n" for i in range(k))


def run(tasm: str, patch: dict[int, int] | None = None) -> tuple[bundle.Result, list[int]]:
  """RTL result (checked against golden) and the pcs of slot 0 of every pair that issued."""
  b = asm.assemble_bundle(tasm, DEFAULT)
  for pc, w in (patch or {}).items(): b.program[pc] = w
  rtl, ev = profile.capture(bundle.write(b), DEFAULT)
  gold = interp.run(b)
  diffs = bundle.diff_results(rtl, gold)
  assert not diffs, "RTL != golden:\n  " + "\n  ".join(diffs)
  assert rtl.perf["retired"] == gold.perf["retired"]
  return rtl, sorted(int(pc) for pc in ev.pc[ev.col("retired") == 2])


def check(tasm: str) -> bundle.Result:
  return run(tasm)[0]


def stalls(r: bundle.Result) -> tuple[int, int, int]:
  return r.perf["stall_raw"], r.perf["stall_waw"], r.perf["stall_unit"]


DUMP = ".dump vmem 0 16\n.dump sreg\n.run 1000\n"


# ---------------------------------------------------------------------------------------------
# bypass: RAW at distance L costs nothing
def test_bypass_chain_of_single_cycle_ops():
  # every instruction reads the previous one's result (latency 1): issue 0..4, no bubble
  r = check("""
  VLD v1, [s0 + 0]
  VADD v2, v1, v1
  VMUL v3, v2, v1
  VST v3, [s0 + 2]
  HALT
""" + tiles(2) + DUMP)
  assert r.cycles == 5 and stalls(r) == (0, 0, 0)


def test_bypass_multi_cycle_op_at_distance_l():
  # VCDIV (latency 4) issues at 2 and lands at the end of 6: its reader waits 3, 4, 5, issues at 6
  r = check("""
  VLD v1, [s0 + 0]
  VLD v2, [s0 + 1]
  VCDIV v3, v1, v2
  VADD v4, v3, v3
  VST v4, [s0 + 2]
  HALT
""" + tiles(2) + DUMP)
  assert r.cycles == 9 and stalls(r) == (3, 0, 0)


def test_bypass_reader_exactly_l_later_does_not_stall():
  # three independent ops fill the gap (the third one a store: a single-cycle op issued at 5 would
  # need the write-back slot of the VCDIV): the reader issues at 6, the cycle v3 is written
  r = check("""
  VLD v1, [s0 + 0]
  VLD v2, [s0 + 1]
  VCDIV v3, v1, v2
  VSUB v5, v1, v2
  VXOR v6, v1, v2
  VST v6, [s0 + 5]
  VADD v4, v3, v5
  VADD v4, v4, v6
  VST v4, [s0 + 2]
  HALT
""" + tiles(2) + DUMP)
  assert r.cycles == 10 and stalls(r) == (0, 0, 0)


def test_bypass_every_read_port():
  # port a (VPU, XLU, VMOV, VEXTRACT, VGATHER offsets), b (VPU, XSHUF index), c (VSEL, VSCATTER
  # mask), s (VST/PST data, VSCATTER data), each fed by the write landing in the reader's cycle
  r = check(f"""
  VLD v1, [s0 + 0]
  XROT v2, v1, 1
  VMOV v3, v2
  VEXTRACT s1, v3, 1, 2
  VLD v4, [s0 + 1]
  XSHUF v5, v1, v4
  VLD v6, [s0 + 2]
  VSEL v7, v6, v5, v1
  VST v7, [s0 + 3]
  VLD v8, [s0 + 4]
  VGATHER v9, v8, [s0 + 0]
  VCMPLT v10, v9, v1
  VSCATTER v1, v8, v10, [s0 + 32]
  PST v10, [s0 + 0]
  HALT
{tiles(3)}.vmem 4 {" ".join(str(v) for v in RNG.permutation(N * N))}
""" + DUMP + ".dump psum 0 1\n")
  # 14 instructions back to back (VGATHER's latency 2: its reader waits one cycle), the XSHUF
  # paired with the independent VLD v6 after it and the VST v7 with the VLD v8 of another tile
  # after it: HALT issues at 13
  assert r.cycles == 13 + 1 and stalls(r) == (1, 0, 0)


def test_waw_still_waits():
  # VADD v1 (latency 1) may not land before VCDIV v1 (issued 2, lands at the end of 6): it waits
  # until the VCDIV's write is in its last cycle (3, 4, 5 stalled), issues at 6, the VST at 7
  r = check("""
  VLD v2, [s0 + 0]
  VLD v3, [s0 + 1]
  VCDIV v1, v2, v3
  VADD v1, v2, v2
  VST v1, [s0 + 2]
  HALT
""" + tiles(2) + DUMP)
  assert r.cycles == 9 and stalls(r) == (0, 3, 0)


def test_busy_write_back_slot_still_waits():
  # VCDIV issued at 2 lands at the end of 6; a single-cycle op issued at 5 would land there too
  r = check("""
  VLD v2, [s0 + 0]
  VLD v3, [s0 + 1]
  VCDIV v4, v2, v3
  VADD v5, v2, v3
  VSUB v6, v2, v3
  VXOR v7, v2, v3
  HALT
""" + tiles(2) + DUMP)
  assert r.cycles == 8 and stalls(r) == (0, 0, 1)


# ---------------------------------------------------------------------------------------------
# dual issue: where the rules allow a pair
def stream_add(tiles_: int) -> str:
  """c = a + b over tiles, software-pipelined: VLD a_i; VADD c_(i-1); VLD b_i; VST c_(i-2)."""
  ops = []
  for i in range(tiles_ + 2):
    if i < tiles_: ops.append(f"VLD v{i % 4}, [s0 + {i}]")
    if 1 <= i <= tiles_: ops.append(f"VADD v{8 + (i - 1) % 4}, v{(i - 1) % 4}, v{4 + (i - 1) % 4}")
    if i < tiles_: ops.append(f"VLD v{4 + i % 4}, [s0 + {64 + i}]")
    if i >= 2: ops.append(f"VST v{8 + (i - 2) % 4}, [s0 + {128 + i - 2}]")
  return "\n".join("  " + o for o in ops) + f"\n  HALT\n{tiles(tiles_)}{tiles(tiles_, 64)}.dump vmem 128 {tiles_}\n.run 10000\n"


def test_pairs_add_stream():
  # VLD a0 0, VLD b0 1, VLD a1 + VADD c0 2 (the VADD reads b0 in the cycle it lands), VLD b1 3
  # (the next is VLD a2: one kind). From tile 2 on, tile i takes 2 cycles: VLD a_i + VADD c_(i-1)
  # at 2i, VLD b_i + VST c_(i-2) at 2i + 1 (a load and a store of different tiles), so tile 15
  # ends at 31; VADD c15 + VST c14 32, VST c15 33, HALT 34: 35 cycles for 64 instructions, 30
  # pairs (single issue with the bypass: 66; before a VLD and a VST could pair: 49)
  r, pairs = run(stream_add(16))
  assert r.cycles == 35 and r.perf["retired"] == 65 and stalls(r) == (0, 0, 0)
  assert len(pairs) == 30


def test_pairs_relu_and_copy():
  ops = ["VLD v0, [s0 + 0]", "VLD v1, [s0 + 1]", "VRELU v8, v0", "VLD v2, [s0 + 2]", "VRELU v9, v1",
         "VST v8, [s0 + 8]", "VLD v3, [s0 + 3]", "VRELU v10, v2", "VST v9, [s0 + 9]", "VRELU v11, v3",
         "VST v10, [s0 + 10]", "VST v11, [s0 + 11]", "HALT"]
  # 0 VLD v0 | 1 VLD v1 + VRELU v8 | 2 VLD v2 + VRELU v9 | 3 VST v8 + VLD v3 | 4 VRELU v10 + VST v9
  # | 5 VRELU v11 + VST v10 (the store reads v10 the cycle it lands) | 6 VST v11 | 7 HALT
  r, pairs = run("\n".join("  " + o for o in ops) + "\n" + tiles(4) + DUMP)
  assert r.cycles == 8 and pairs == [1, 3, 5, 7, 9] and stalls(r) == (0, 0, 0)
  # a copy VLD v_i; VST v_i: each VST pairs with the next tile's VLD (0 VLD v0 | 1 VST v0 + VLD v1
  # | 2 VST v1 + VLD v2 | 3 VST v2 + VLD v3 | 4 VST v3 | 5 HALT); a VLD and its own VST never do
  ops = [f"VLD v{i}, [s0 + {i}]\n  VST v{i}, [s0 + {8 + i}]" for i in range(4)]
  r, pairs = run("  " + "\n  ".join(ops) + "\n  HALT\n" + tiles(4) + DUMP)
  assert r.cycles == 6 and pairs == [1, 3, 5]


def test_pair_kinds_either_order():
  # M+C, C+M, M+S, S+M, C+S, S+C, each independent; slot 1 may write what slot 0 reads (SADDI s1
  # after the VLD based on s1: the VLD uses the old s1)
  r, pairs = run("""
  VLD v1, [s1 + 0]
  SADDI s1, s1, 1
  VADD v2, v3, v4
  VST v5, [s0 + 2]
  LI s2, 7
  VFILL v6, 3
  VSPLAT v7, s3
  VLD v8, [s0 + 3]
  SMUL s4, s5, s6
  VST v6, [s0 + 4]
  VZERO v9
  NOP
  VST v9, [s0 + 5]
  HALT
.sreg 1 1
.sreg 3 -5
.sreg 5 6
.sreg 6 -7
""" + tiles(4) + DUMP)
  # six pairs in cycles 0..5 (pcs 0, 2, .., 10), the VST alone at 6 (HALT never pairs), HALT at 7
  assert pairs == [0, 2, 4, 6, 8, 10] and r.cycles == 8 and r.perf["retired"] == 14


# ---------------------------------------------------------------------------------------------
# dual issue: where the rules forbid it
def test_no_pair_on_a_dependence():
  # vector RAW (VADD reads the VLD's v1, the VST the VADD's v2): 0, 1, 2, HALT 3
  r, pairs = run("  VLD v1, [s0 + 0]\n  VADD v2, v1, v1\n  VST v2, [s0 + 1]\n  HALT\n" + tiles(1) + DUMP)
  assert pairs == [] and r.cycles == 4
  # the same without the dependences: VLD + VADD at 0, VST 1, HALT 2
  r, pairs = run("  VLD v1, [s0 + 0]\n  VADD v2, v3, v3\n  VST v4, [s0 + 1]\n  HALT\n" + tiles(1) + DUMP)
  assert pairs == [0] and r.cycles == 3
  # scalar RAW (the VLD's base is the LI's s1); the independent LI of s2 pairs
  r, pairs = run("  LI s1, 2\n  VLD v1, [s1 + 0]\n  VST v1, [s0 + 5]\n  HALT\n" + tiles(3) + DUMP)
  assert pairs == [] and r.cycles == 4
  r, pairs = run("  LI s2, 2\n  VLD v1, [s1 + 0]\n  VST v1, [s0 + 5]\n  HALT\n" + tiles(3) + DUMP)
  assert pairs == [0] and r.cycles == 3
  # WAW inside the pair (both write v1): VLD 0, VZERO 1, VST 2 (reads the VZERO's v1), HALT 3
  r, pairs = run("  VLD v1, [s0 + 0]\n  VZERO v1\n  VST v1, [s0 + 1]\n  HALT\n" + tiles(1) + DUMP)
  assert pairs == [] and r.cycles == 4


def test_no_pair_of_one_kind():
  # two loads, two stores, two compute, two scalar ops: one per cycle
  for body in ("VLD v1, [s0 + 0]\n  VLD v2, [s0 + 1]", "VST v1, [s0 + 0]\n  VST v2, [s0 + 1]",
               "VADD v1, v2, v3\n  XROT v4, v5, 1",
               "LI s1, 1\n  SADD s2, s3, s4", "VMOV v1, v2\n  VFILL v3, 9"):
    r, pairs = run(f"  {body}\n  HALT\n" + tiles(2) + DUMP)
    assert pairs == [] and r.cycles == 3, body


def test_no_pair_with_a_trapping_slot_1():
  # slot 1 out of VMEM: the VADD issues alone at 0, the VLD traps at 1 with its own pc
  r, pairs = run("  VADD v1, v2, v3\n  VLD v4, [s0 + 5000]\n  HALT\n" + DUMP)
  assert (r.trap, r.pc, pairs, r.perf["retired"]) == ("vmem_out_of_range", 1, [], 1)
  # slot 1 an illegal word of a pairable opcode (VPU, undefined function): traps at pc 1
  bad = (isa.OP["VPU"] << 56) | (0xFF << 48)
  r, pairs = run("  LI s1, 5\n  NOP\n  HALT\n" + DUMP, patch={1: bad})
  assert (r.trap, r.pc, pairs, r.perf["retired"]) == ("illegal_instruction", 1, [], 1)
  # a store in slot 1 out of VMEM after a VLD, a load out of VMEM after a VST: slot 0 alone at 0
  for body in ("VLD v1, [s0 + 0]\n  VST v2, [s0 + 5000]", "VST v1, [s0 + 0]\n  VLD v2, [s0 + 5000]"):
    r, pairs = run(f"  {body}\n  HALT\n" + tiles(1) + DUMP)
    assert (r.trap, r.pc, pairs, r.perf["retired"]) == ("vmem_out_of_range", 1, [], 1), body
  # the program's last word never pairs (its imem trap has slot 1's pc)
  r, pairs = run("  VADD v1, v2, v3\n  VST v1, [s0 + 0]\n" + DUMP)
  assert (r.trap, r.pc, pairs) == ("imem_out_of_range", 1, [])


def test_loop_back_edge_stays_single():
  # body VLD; VADD (pc 1, 2): the VADD is the back edge, so nothing pairs: LOOPI 0, 3 x 2, HALT 7
  r, pairs = run("  LOOPI 3, end\n  VLD v1, [s0 + 0]\n  VADD v2, v3, v3\nend: HALT\n" + tiles(1) + DUMP)
  assert pairs == [] and r.cycles == 8
  # body VLD; VADD; NOP: the VLD + VADD pair every iteration, the NOP is the back edge alone
  r, pairs = run("  LOOPI 3, end\n  VLD v1, [s0 + 0]\n  VADD v2, v3, v3\n  NOP\nend: HALT\n" + tiles(1) + DUMP)
  assert pairs == [1, 1, 1] and r.cycles == 8 and r.perf["retired"] == 11


def test_no_pair_with_a_store_into_an_mxu_tile():
  # the VST of the pair VADD + VST writes a VMEM tile the MMUL is reading: it waits for the MXU
  prog = "  MLW [s0 + 0]\n  MMUL [s0 + 0], [s0 + 1], 4, 0\n  VADD v1, v2, v3\n  VST v4, [s0 + {}]\n  HALT\n"
  data = tiles(5) + DUMP + ".dump psum 0 1\n"
  r, pairs = run(prog.format(2) + data)
  assert pairs == [] and r.perf["stall_waw"] > 0
  r, pairs = run(prog.format(8) + data)
  assert pairs == [2] and r.perf["stall_waw"] == 0
  # the same with a VLD in slot 0 (a load and a store)
  prog = "  MLW [s0 + 0]\n  MMUL [s0 + 0], [s0 + 1], 4, 0\n  VLD v1, [s0 + 9]\n  VST v4, [s0 + {}]\n  HALT\n"
  r, pairs = run(prog.format(3) + data)
  assert pairs == [] and r.perf["stall_waw"] > 0
  r, pairs = run(prog.format(8) + data)
  assert pairs == [2] and r.perf["stall_waw"] == 0


# ---------------------------------------------------------------------------------------------
# dual issue of a load and a store: VMEM's read and write ports in one cycle
def test_pair_load_then_store():
  # different tiles: VLD + VST at 0, HALT 1 (the VLD lands at the end of 1)
  r, pairs = run("  VLD v1, [s0 + 0]\n  VST v2, [s0 + 1]\n  HALT\n" + tiles(2) + DUMP)
  assert pairs == [0] and r.cycles == 2
  # the same tile: VLD v2 0, VLD v1 + VST v2 of tile 0 at 1 (the VLD reads the old tile 0, the
  # store data v2 lands in that cycle), VST v1 2, HALT 3
  src = tiles(3)
  r, pairs = run("  VLD v2, [s0 + 2]\n  VLD v1, [s0 + 0]\n  VST v2, [s0 + 0]\n  VST v1, [s0 + 1]\n  HALT\n" + src + DUMP)
  assert pairs == [1] and r.cycles == 4 and stalls(r) == (0, 0, 0)
  old = {int(ln.split()[1]): [int(x) for x in ln.split()[2:]] for ln in src.splitlines()}
  got = {a: t.reshape(-1).astype(np.int32).tolist() for k, a, t in r.dumps if k == "vmem"}
  assert got[1] == old[0] and got[0] == old[2]  # sequential order: tile 1 holds tile 0's old data


def test_pair_store_then_load():
  # different tiles: VST + VLD at 0, VST v1 1 (reads v1 the cycle it lands), HALT 2
  r, pairs = run("  VST v2, [s0 + 0]\n  VLD v1, [s0 + 1]\n  VST v1, [s0 + 2]\n  HALT\n" + tiles(2) + DUMP)
  assert pairs == [0] and r.cycles == 3
  # the same tile: the VLD must see the store: VST 0, VLD 1 (its VST reads v1: no pair), VST 2,
  # HALT 3
  r, pairs = run("  VST v2, [s0 + 0]\n  VLD v1, [s0 + 0]\n  VST v1, [s0 + 2]\n  HALT\n" + tiles(2) + DUMP)
  assert pairs == [] and r.cycles == 4
  # the SXU compares addresses, not fields: s1 = 2 makes [s1 + 1] the tile [s0 + 3] (no pair),
  # s1 = 3 another one (a pair)
  for s1, exp in ((2, []), (3, [0])):
    r, pairs = run(f"  VST v2, [s0 + 3]\n  VLD v1, [s1 + 1]\n  VST v1, [s0 + 6]\n  HALT\n.sreg 1 {s1}\n"
                   + tiles(5) + DUMP)
    assert pairs == exp and r.cycles == 4 - len(exp), s1


# ---------------------------------------------------------------------------------------------
# the MXU queue: MLW/MMUL pairs issued back to back keep the array streaming (doc/mxu.md: one row
# per cycle, an MLW between MMULs costs one emit cycle, fill and drain 2N - 1 once)
@pytest.mark.parametrize("T,pairs", [(1, 16), (4, 8)])
def test_mxu_pairs_stream_without_bubbles(T, pairs):
  body = "".join(f"  MLW [s0 + {16 + i % 4}]\n  MMUL [s0 + {i * T % 64}], [s0 + 0], {T}, 0\n" for i in range(pairs))
  r = check(tiles(20) + body + "  HALT\n.dump psum 0 4\n.run 5000\n")
  busy = pairs * (1 + T * N) + 2 * N - 1  # the MXU's busy cycles from the first accept to the last PSUM write
  # plus at most 4: the first accept one cycle after issue, the result readable the cycle after it lands,
  # HALT's cycle; a queue that stops accepting while a command waits costs a cycle per pair
  assert busy <= r.cycles <= busy + 4, (r.cycles, busy)
  assert r.perf["mxu_busy"] == pairs * T * N


def test_scatter_into_an_mmul_source_waits():
  """A VSCATTER whose elements land in a tile an MMUL still reads waits for it (the MXU reads the
  old values, as in the golden model's sequential order)."""
  L = N * N
  idx = " ".join(str(15 * L + (l * 5) % L) for l in range(L))
  mask = " ".join("1" if l % 3 else "0" for l in range(L))
  prog = tiles(18) + f".vmem 18 {idx}\n.vmem 19 {mask}\n" + """
  MLW [s0 + 16]
  MMUL [s0 + 0], [s0 + 0], 16, 0
  VLD v1, [s0 + 17]
  VLD v2, [s0 + 18]
  VLD v3, [s0 + 19]
  VSCATTER v1, v2, v3, [s0 + 0]
  HALT
.dump psum 0 16
.dump vmem 15 1
.run 5000
"""
  r = check(prog)
  assert r.perf["stall_waw"] > 2 * N  # it waited for the MXU's reads (an MXU-owned tile counts as a write-order stall)


# ---------------------------------------------------------------------------------------------
# MXU ownership per command (rtl/mxu_own.sv): a store into, or a PSUM read of, the tiles of an MMUL
# that has finished with them does not wait for a later, long MMUL; its own tiles still do

def _two_mmuls(tail: str) -> str:
  """MMUL 1 (one tile: VMEM 0 -> PSUM 0), then MMUL 2 (16 tiles: VMEM 20..35 -> PSUM 1..16,
  16 * N activation rows), then `tail`."""
  return tiles(1) + tiles(16, base=20) + tiles(1, base=40) + f"""
  VLD v1, [s0 + 40]
  MLW [s0 + 40]
  MMUL [s0 + 0], [s0 + 0], 1, 0
  MMUL [s0 + 1], [s0 + 20], 16, 0
{tail}
  HALT
.dump vmem 0 1
.dump vmem 20 16
.dump vmem 50 1
.dump psum 0 17
.run 5000
"""


def test_store_into_a_finished_mmul_source_does_not_wait_for_the_next():
  r = check(_two_mmuls("  VST v1, [s0 + 0]"))       # MMUL 1 read tile 0 in its accept cycle
  assert r.perf["stall_waw"] == 0, r.perf            # (one bounding range until idle: 16 * N + 2N)


def test_store_into_a_running_mmul_source_waits_for_its_reads():
  r = check(_two_mmuls("  VST v1, [s0 + 35]"))       # MMUL 2's last tile
  assert r.perf["stall_waw"] > 12 * N, r.perf        # its rows stream at one a cycle: 16 * N, the tile buffer 3 tiles ahead


def test_psum_store_below_an_older_mmuls_tiles_waits():
  """The owned PSUM range is the bounding range of every MMUL in flight, the newest included, not
  only the oldest's: a PST into the tile of an MMUL queued behind a long one waits for it, however
  the retired entries before them (a finished MMUL to a higher tile) compare (rtl/mxu_own.sv)."""
  prog = tiles(1) + tiles(16, base=20) + tiles(1, base=40) + """
  VLD v1, [s0 + 40]
  MLW [s0 + 40]
  MMUL [s0 + 50], [s0 + 0], 1, 0
  FENCE
  MMUL [s0 + 10], [s0 + 20], 16, 0
  MMUL [s0 + 2], [s0 + 0], 1, 0
  PST v1, [s0 + 2]
  HALT
.dump psum 0 27
.dump psum 50 1
.run 5000
"""
  r = check(prog)                                    # PSUM 2 holds the PST's tile, written after the MMUL's
  assert r.perf["stall_waw"] > 12 * N, r.perf        # it waited behind the 16-tile MMUL


def test_psum_read_of_a_finished_mmul_does_not_wait_for_the_next():
  r = check(_two_mmuls("  PLD v2, [s0 + 0]\n  VST v2, [s0 + 50]"))
  # MMUL 1's rows land 2N after they enter; MMUL 2's rows follow them: the PLD waits for MMUL 1 only
  assert r.perf["stall_raw"] < 4 * N, r.perf
