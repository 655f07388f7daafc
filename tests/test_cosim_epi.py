"""PEPI.B/.BR/.BQ/.BRQ (PSUM epilogues, doc/epilogue.md) on the RTL co-simulation against the golden
interpreter: every mode on MMUL results read while the MXU still writes them (the PSUM interlock),
back-to-back PEPIs and their consumers (latency 2: RAW, WAW against a short write), PST before and
after, edge parameters (shifts below 0 and above 63, INT_MIN multipliers, ties), the PSUM range
trap with its pc, and random mixes. The golden side is itself checked against a Python-int formula
(tests/golden/test_epilogue.py)."""
import numpy as np
import pytest

from tinytpu import asm, bundle, cosim
from tinytpu.config import DEFAULT
from tinytpu.golden import interp

N = DEFAULT.N
RNG = np.random.default_rng(20261202)


@pytest.fixture(scope="module", autouse=True)
def _built():
  cosim.build(DEFAULT)


def check(tasm: str, cfg=DEFAULT) -> bundle.Result:
  b = asm.assemble_bundle(tasm, cfg)
  rtl, gold = cosim.run_bundle(bundle.write(b), cfg), interp.run(b)
  diffs = bundle.diff_results(rtl, gold)
  assert not diffs, "RTL != golden:\n  " + "\n  ".join(diffs) + "\n" + bundle.format_result(rtl)
  return rtl


def tile(vals) -> str:
  return " ".join(str(int(np.int64(v))) for v in np.asarray(vals).ravel())


def params(kind: str) -> np.ndarray:
  """A requantising parameter tile: row 0 multipliers, row 1 shifts, the other rows noise (ignored)."""
  q = RNG.integers(-1 << 31, 1 << 31, (N, N))
  if kind == "typical":
    q[0], q[1] = RNG.integers(1 << 10, 1 << 20, N), RNG.integers(10, 30, N)
  elif kind == "edge":
    q[0] = np.resize([-1 << 31, (1 << 31) - 1, 1, -1, 0, 3], N)
    q[1] = np.resize([-1, 64, 63, 0, 1, 1 << 30, 62, -(1 << 31)], N)
  return q


def mmul_program(modes: list[str], qkind: str) -> str:
  """Two MMULs (8 PSUM tiles), each mode's PEPI right behind them (waits for the MXU), stored."""
  acts, w = RNG.integers(-128, 128, (8, N, N)), RNG.integers(-128, 128, (N, N))
  bias = np.tile(RNG.integers(-1 << 16, 1 << 16, N), (N, 1))
  lines = ["  MLW [s0 + 20]", "  MMUL [s0 + 0], [s0 + 0], 4, 0", "  MMUL [s0 + 4], [s0 + 4], 4, 0",
           "  VLD v1, [s0 + 21]", "  VLD v2, [s0 + 22]"]
  for i, m in enumerate(modes):
    q = ", v2" if "Q" in m else ""
    lines += [f"  PEPI{m} v{3 + i % 10}, [s0 + {7 - i % 8}], v1{q}", f"  VST v{3 + i % 10}, [s0 + {30 + i}]"]
  lines.append("  HALT")
  lines += [f".vmem {k} {tile(acts[k])}" for k in range(8)]
  lines += [f".vmem 20 {tile(w)}", f".vmem 21 {tile(bias)}", f".vmem 22 {tile(params(qkind))}",
            f".dump vmem 30 {len(modes)}", ".dump psum 0 8", ".run 10000"]
  return "\n".join(lines)


MODES = [".B", ".BR", ".BQ", ".BRQ"]


@pytest.mark.parametrize("qkind", ["typical", "edge", "random"])
def test_every_mode_behind_mmul(qkind):
  rtl = check(mmul_program(MODES * 2, qkind))
  assert rtl.status == "ok"


def test_back_to_back_and_hazards():
  acc, bias, q = RNG.integers(-1 << 31, 1 << 31, (3, N, N))
  q[0], q[1] = RNG.integers(-1 << 20, 1 << 20, N), RNG.integers(0, 40, N)
  rtl = check(f"""
  VLD v1, [s0 + 1]
  VLD v2, [s0 + 2]
  LI s5, 3
  PEPI.BQ v3, [s0 + 0], v1, v2
  PEPI.BRQ v4, [s5 - 3], v1, v2
  PEPI.B v5, [s0 + 0], v1
  VADD v6, v3, v4          # RAW on both PEPI results (latency 2)
  PEPI.BR v7, [s0 + 0], v6
  VMOV v7, v1              # WAW: the move (latency 1) must land after the PEPI
  PEPI.BQ v8, [s0 + 0], v8, v8   # reads and writes the same register
  PST v5, [s0 + 0]         # the PSUM tile the PEPIs read, then read again
  PEPI.BR v9, [s0 + 0], v1
  PEPI.B v10, [s5 + 0], v9
  VST v3, [s0 + 10]
  VST v4, [s0 + 11]
  VST v5, [s0 + 12]
  VST v6, [s0 + 13]
  VST v7, [s0 + 14]
  VST v8, [s0 + 15]
  VST v9, [s0 + 16]
  VST v10, [s0 + 17]
  HALT
.psum 0 {tile(acc)}
.psum 3 {tile(bias)}
.vmem 1 {tile(bias)}
.vmem 2 {tile(q)}
.dump vmem 10 8
.dump psum 0 1
.run 1000
""")
  assert rtl.status == "ok"


@pytest.mark.parametrize("addr,pc", [(-1, 2), (DEFAULT.PSUM_TILES, 2), (DEFAULT.PSUM_TILES - 1, None)])
def test_psum_range_trap(addr, pc):
  rtl = check(f"""
  LI s1, {addr}
  VFILL v2, 7
  PEPI.BRQ v3, [s1 + 0], v2, v2
  VST v3, [s0 + 0]
  HALT
.dump vmem 0 1
.dump sreg
.run 1000
""")
  if pc is None:
    assert rtl.status == "ok"
  else:
    assert (rtl.status, rtl.trap, rtl.pc) == ("trap", "psum_out_of_range", pc)


@pytest.mark.parametrize("seed", range(4))
def test_random_mix(seed):
  rng = np.random.default_rng([20261202, seed])
  tiles = rng.integers(-1 << 31, 1 << 31, (8, N, N))
  tiles[7, 1] = rng.integers(-4, 68, N)  # shifts around the clamp
  lines = ["  MLW [s0 + 6]"] + [f"  VLD v{k + 1}, [s0 + {k}]" for k in range(8)]
  for i in range(24):
    r = rng.random()
    d, b, q = (int(x) for x in rng.integers(1, 16, 3))
    p = int(rng.integers(0, 8))
    if r < .5:
      m = MODES[int(rng.integers(0, 4))]
      lines.append(f"  PEPI{m} v{d}, [s0 + {p}], v{b}" + (f", v{q}" if "Q" in m else ""))
    elif r < .65:
      lines.append(f"  MMUL [s0 + {p}], [s0 + {int(rng.integers(0, 6))}], 1, {int(rng.integers(0, 2))}")
    elif r < .8:
      lines.append(f"  PST v{b}, [s0 + {p}]")
    else:
      lines.append(f"  VADD v{d}, v{b}, v{q}")
  lines += [f"  VST v{k}, [s0 + {16 + k}]" for k in range(16)] + ["  HALT"]
  lines += [f".vmem {k} {tile(tiles[k])}" for k in range(8)] + [f".psum {k} {tile(tiles[7 - k])}" for k in range(8)]
  lines += [".dump vmem 16 16", ".dump psum 0 8", ".run 10000"]
  assert check("\n".join(lines)).status == "ok"


def test_arithmetic_sweep():
  """Many lanes through the requantiser: 64 PSUM tiles of mixed classes (full int32, near the
  saturation bounds, ties) against 8 bias and 8 parameter tiles of mixed multipliers and shifts."""
  rng = np.random.default_rng(77)
  P = DEFAULT.PSUM_TILES
  acc = np.concatenate([rng.integers(-1 << 31, 1 << 31, (P // 4, N, N)), rng.integers(-2000, 2000, (P // 4, N, N)),
                        rng.integers(-1 << 20, 1 << 20, (P // 4, N, N)),
                        rng.choice([-1 << 31, (1 << 31) - 1, 0, -1, 1, 127 << 8, -(128 << 8), (127 << 8) + 128], (P // 4, N, N))])
  bias = rng.choice([0, 1, -1, 1 << 30, rng.integers(-1 << 31, 1 << 31)], (8, N, N)).astype(np.int64)
  q = rng.integers(-1 << 31, 1 << 31, (8, N, N))
  for t in range(8):
    q[t, 0] = rng.choice([rng.integers(-1 << 31, 1 << 31, N), rng.integers(0, 1 << 16, N), np.resize([1, -1, 1 << 30, -1 << 31], N)][t % 3])
    q[t, 1] = rng.choice([rng.integers(0, 64, N), rng.integers(-70, 80, N), np.resize([0, 1, 8, 62, 63, 64, -1, 31], N)][t % 3])
  lines = [f"  VLD v{1 + k}, [s0 + {k}]" for k in range(8)] + [f"  VLD v{9 + k}, [s0 + {8 + k}]" for k in range(4)]
  for i in range(192):
    m = MODES[i % 4]
    lines += [f"  PEPI{m} v13, [s0 + {i % P}], v{1 + (i // 4) % 8}" + (f", v{9 + (i // 8) % 4}" if "Q" in m else ""),
              f"  VST v13, [s0 + {16 + i}]"]
  lines.append("  HALT")
  lines += [f".psum {k} {tile(acc[k])}" for k in range(P)] + [f".vmem {k} {tile(bias[k])}" for k in range(8)]
  lines += [f".vmem {8 + k} {tile(q[k])}" for k in range(4)] + [".dump vmem 16 192", ".run 100000"]
  assert check("\n".join(lines)).status == "ok"


# N = 8 (its own build, shared with tests/test_cosim.py::test_gather_scatter_n8; nightly)
@pytest.mark.nightly
def test_every_mode_n8():
  from tinytpu.config import Config
  cfg = Config(N=8, VMEM_TILES=256)
  cosim.build(cfg)
  rng, n = np.random.default_rng(8), 8
  acc, bias, q = rng.integers(-1 << 31, 1 << 31, (3, n, n))
  q[0], q[1] = np.resize([-1 << 31, (1 << 31) - 1, 1, -1, 0, 1 << 12], n), np.resize([-1, 64, 63, 0, 1, 20, 33, 7], n)
  lines = ["  VLD v1, [s0 + 1]", "  VLD v2, [s0 + 2]"]
  lines += [f"  PEPI{m} v{3 + i}, [s0 + {i % 2}], v1" + (", v2" if "Q" in m else "") for i, m in enumerate(MODES * 2)]
  lines += [f"  VST v{3 + i}, [s0 + {10 + i}]" for i in range(8)] + ["  HALT"]
  lines += [f".psum 0 {tile(acc)}", f".psum 1 {tile(acc // 65536)}", f".vmem 1 {tile(bias)}", f".vmem 2 {tile(q)}",
            ".dump vmem 10 8", ".run 1000"]
  assert check("\n".join(lines), cfg).status == "ok"
