"""Issue timing of the SXU (doc/core.md, Interlocks): the VRF's write-through bypass (a reader issues
in the cycle its operand is written) on every read port, and the rules that still stall (WAW, a busy
write-back slot). Every program's results are checked against the golden model; the cycle counts
are exact and computed by hand from the rules, never taken from the RTL.

Cycle accounting: instructions issue from cycle 0; a write issued in cycle t with latency L lands at
the end of cycle t+L; after HALT issues in cycle h the core drains until no write is booked, so a
program whose last write lands by the end of cycle h takes h + 2 cycles."""
import numpy as np
import pytest

from tinytpu import asm, bundle, cosim
from tinytpu.config import DEFAULT
from tinytpu.golden import interp

N = DEFAULT.N
RNG = np.random.default_rng(31)


@pytest.fixture(scope="module", autouse=True)
def _built():
  cosim.build(DEFAULT)


def tiles(k: int, base: int = 0, lo: int = -1000, hi: int = 1000) -> str:
  return "".join(f".vmem {base + i} " + " ".join(str(v) for v in RNG.integers(lo, hi, N * N)) + "\n" for i in range(k))


def check(tasm: str) -> bundle.Result:
  b = asm.assemble_bundle(tasm, DEFAULT)
  rtl, gold = cosim.run_bundle(bundle.write(b), DEFAULT), interp.run(b)
  diffs = bundle.diff_results(rtl, gold)
  assert not diffs, "RTL != golden:\n  " + "\n  ".join(diffs)
  assert rtl.perf["retired"] == gold.perf["retired"]
  return rtl


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
  assert r.cycles == 6 and stalls(r) == (0, 0, 0)


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
  assert r.cycles == 10 and stalls(r) == (3, 0, 0)


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
  assert r.cycles == 11 and stalls(r) == (0, 0, 0)


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
  # 14 instructions back to back (VGATHER's latency 2: its reader waits one cycle)
  assert r.cycles == 14 + 1 + 2 and stalls(r) == (1, 0, 0)


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
  assert r.cycles == 10 and stalls(r) == (0, 3, 0)


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
  assert r.cycles == 9 and stalls(r) == (0, 0, 1)
