"""The DMA engine and the HBM model at core level (rtl/dma.sv, rtl/hbm.sv, the SXU's DMA interlocks):
directed and random DMA programs on the co-simulation, every architectural result (VMEM, PSUM,
registers, status, trap, trap pc, retired count) against the golden interpreter, which is the
oracle, HBM through `.hbm` preloads (straight into the co-sim's sparse store) and `dump hbm`
(read from it), and the cycle counts of long copies against the timing rule of doc/hbm.md ("RTL"
section), never against the RTL itself.

Timing rule (doc/hbm.md), HBM latency LAT, bandwidth NUM/DEN, B(k) = floor(k * DEN / NUM): the
program `LI; DMA.CFG; DMA.IN (n tiles); DMA.WAIT; HALT` runs 7 + LAT + B(n-1) cycles, the same with
DMA.OUT 9 + LAT + B(n-1)."""
from collections import Counter

import numpy as np
import pytest

from tinytpu import asm, bundle, cosim, isa
from tinytpu.config import DEFAULT, Config
from tinytpu.golden import interp

N = DEFAULT.N
L = N * N
RNG = np.random.default_rng(20261202)
SLOW = Config(HBM_LATENCY=37, HBM_BW_NUM=1, HBM_BW_DEN=3)
FAST = Config(HBM_LATENCY=1, HBM_BW_NUM=2, HBM_BW_DEN=3)  # the shortest latency (tiny FIFOs), a fractional rate


@pytest.fixture(scope="module", autouse=True)
def _built():
  cosim.build(DEFAULT)


def vmem_init(tiles: int, seed: int = 0) -> str:
  r = np.random.default_rng(seed)
  return "\n".join(f".vmem {t} " + " ".join(str(int(v)) for v in r.integers(-(1 << 31), (1 << 31) - 1, L, endpoint=True))
                   for t in range(tiles))


def run(b: bundle.Bundle, cfg: Config = DEFAULT) -> bundle.Result:
  """The RTL's result of a bundle, checked against the golden model's."""
  rtl, gold = cosim.server(cfg).run(bundle.write(b)), interp.run(b)
  diffs = bundle.diff_results(rtl, gold)
  assert not diffs, "RTL != golden:\n  " + "\n  ".join(diffs[:20])
  assert rtl.perf["retired"] == gold.perf["retired"]
  return rtl


def check(src: str, cfg: Config = DEFAULT) -> bundle.Result:
  return run(asm.assemble_bundle(src, cfg), cfg)


# ---------------------------------------------------------------------------------------------
# traps: the code and the pc, and nothing of a trapping DMA copied (earlier DMAs complete)
TRAPS = [
  # (program body, trap, pc)
  ("DMA.IN [s0 + -1], [s0 + 0], 1", "vmem_out_of_range", 0),
  ("DMA.IN [s0 + 1020], [s0 + 0], 5", "vmem_out_of_range", 0),
  ("LI s1, 0\nDMA.CFG s1, 3, 400\nDMA.IN [s0 + 200], [s0 + 0], 30", "vmem_out_of_range", 2),     # rows leave VMEM
  ("DMA.IN [s0 + 0], [s0 + -1], 1", "hbm_out_of_range", 0),
  ("LI s1, 1048000\nDMA.IN [s0 + 0], [s1 + 1000], 2", "hbm_out_of_range", 1),                    # the top of HBM
  ("LI s1, -10\nDMA.CFG s1, 4, 1\nDMA.IN [s0 + 0], [s0 + 20], 4", "hbm_out_of_range", 2),       # negative hstride below 0
  ("LI s1, 1000\nDMA.CFG s1, 3, 2\nLI s2, 1046000\nDMA.OUT [s2 + 576], [s0 + 0], 2", "hbm_out_of_range", 3),
  ("DMA.OUT [s0 + 0], [s0 + -3], 2", "vmem_out_of_range", 0),
  ("DMA.OUT [s0 + -1], [s0 + -1], 2", "vmem_out_of_range", 0),                                   # VMEM is checked first
  ("DMA.IN [s0 + -1], [s0 + -1], 2", "vmem_out_of_range", 0),
  ("DMA.OUT [s0 + 5], [s0 + 0], 4\nDMA.IN [s0 + 8], [s0 + 5], 4\nDMA.IN [s0 + 0], [s0 + -7], 1", "hbm_out_of_range", 2),
]


@pytest.mark.parametrize("body,trap,pc", TRAPS)
def test_traps(body, trap, pc):
  r = check(f"{vmem_init(8)}\n{body}\nHALT\n.dump vmem 0 16\n.run 20000")
  assert (r.status, r.trap, r.pc) == ("trap", trap, pc)


def test_illegal_shapes():
  """DMA.CFG rows = 0 and a DMA with T = 0 are illegal instructions (the decode's range checks)."""
  for mn, vals, pc in [("DMA.CFG", {"hstride": 1, "rows": 0, "vstride": 0}, 1), ("DMA.IN", {"dst": 0, "dst_base": 0, "src": 0, "src_base": 0, "T": 0}, 1)]:
    b = asm.assemble_bundle("LI s1, 3\nNOP\nHALT\n.run 1000")
    ins = isa.BY_MNEMONIC[mn]
    word = ins.fixed_bits
    for o in ins.operands:  # a hand encoding without the range check of isa.encode
      lsb, w = isa.FIELDS[o.field]
      word |= (vals[o.name] & ((1 << w) - 1)) << lsb
      if o.kind == "mem": word |= vals[o.name + "_base"] << isa.FIELDS[o.base][0]
    b.program[pc] = word
    r = run(b)
    assert (r.status, r.trap, r.pc) == ("trap", "illegal_instruction", pc)


# ---------------------------------------------------------------------------------------------
# copies
def test_round_trip_and_sequential_order():
  """DMA.OUT then DMA.IN of the same HBM tiles, back to back (the HBM interlock orders them)."""
  r = check(f"""{vmem_init(16, 1)}
  DMA.OUT [s0 + 4096], [s0 + 0], 16
  DMA.IN [s0 + 100], [s0 + 4096], 16
  DMA.OUT [s0 + 4100], [s0 + 100], 3
  DMA.IN [s0 + 200], [s0 + 4096], 8
  HALT
.dump vmem 100 16
.dump vmem 200 8
.run 20000""")
  assert r.status == "ok" and r.perf["stall_dma"] > 0 and r.perf["dma_tiles"] == 16 + 16 + 3 + 8


def hbm_init(addr: int, tiles: int, seed: int) -> str:
  r = np.random.default_rng(seed)
  return "\n".join(f".hbm {addr + t} " + " ".join(str(int(v)) for v in r.integers(-(1 << 31), (1 << 31) - 1, L, endpoint=True))
                   for t in range(tiles))


def test_hbm_preload_and_dump():
  """Preloaded HBM regions (bottom, middle and top of HBM) read by DMA.IN, DMA.OUT results dumped;
  unwritten tiles read zero."""
  top = DEFAULT.HBM_TILES - 8
  r = check(f"""{hbm_init(0, 8, 7)}
{hbm_init(123456, 20, 8)}
{hbm_init(top, 8, 9)}
  LI s1, 123456
  LI s2, {top}
  DMA.IN [s0 + 0], [s0 + 0], 8
  DMA.IN [s0 + 8], [s1 + 0], 20
  DMA.IN [s0 + 28], [s2 + 0], 8
  DMA.OUT [s1 + 10], [s0 + 0], 4
  DMA.OUT [s2 + -4], [s0 + 28], 8
  DMA.OUT [s1 + 1000], [s0 + 40], 2
  HALT
.dump vmem 0 36
.dump hbm 0 8
.dump hbm 123456 24
.dump hbm {top - 4} 12
.dump hbm 124456 2
.dump hbm 500000 3
.run 20000""")
  assert r.status == "ok"


def test_strided_2d_negative_hstride_and_overlapping_rows():
  check(f"""{vmem_init(40, 2)}
  LI s1, -7
  DMA.CFG s1, 5, 6
  LI s2, 5000
  DMA.OUT [s2 + 0], [s0 + 0], 4
  LI s3, 3
  DMA.CFG s3, 4, 2
  DMA.IN [s0 + 300], [s2 + -28], 5
  LI s4, 2
  DMA.CFG s4, 6, 9
  DMA.OUT [s2 + 100], [s0 + 20], 4
  LI s5, 1
  DMA.CFG s5, 3, 1
  DMA.IN [s0 + 400], [s2 + 100], 12
  DMA.IN [s0 + 500], [s2 + -30], 4
  DMA.WAIT
  HALT
.dump vmem 300 20
.dump vmem 400 20
.dump vmem 500 8
.run 50000""")


def test_dma_in_then_vld_and_vst_then_dma_out():
  r = check(f"""{vmem_init(8, 3)}
  DMA.OUT [s0 + 64], [s0 + 0], 8
  DMA.IN [s0 + 10], [s0 + 64], 8
  VLD v1, [s0 + 12]
  VADD v2, v1, v1
  VST v2, [s0 + 3]
  DMA.OUT [s0 + 200], [s0 + 0], 8
  VST v1, [s0 + 0]
  VLD v3, [s0 + 5]
  DMA.IN [s0 + 30], [s0 + 200], 8
  VLD v4, [s0 + 31]
  VST v4, [s0 + 40]
  HALT
.dump vmem 0 48
.run 20000""")
  assert r.perf["stall_dma"] > 0


def test_dma_against_mmul():
  """MLW and MMUL reading tiles a DMA.IN writes wait; a DMA.IN into tiles the MXU still reads waits."""
  src = f"""{vmem_init(24, 4)}
  DMA.OUT [s0 + 1000], [s0 + 0], 24
  DMA.IN [s0 + 40], [s0 + 1000], 16
  MLW [s0 + 40]
  MMUL [s0 + 0], [s0 + 41], 8, 0
  MMUL [s0 + 8], [s0 + 0], 16, 1
  DMA.IN [s0 + 4], [s0 + 1008], 8
  MMUL [s0 + 24], [s0 + 4], 8, 0
  FENCE
  HALT
.dump psum 0 32
.dump vmem 0 64
.run 50000"""
  r = check(src)
  assert r.perf["stall_dma"] > 0 and r.perf["mxu_busy"] > 0


def test_full_queue_stalls_issue():
  body = "\n".join(f"  DMA.IN [s0 + {16 * k}], [s0 + {16 * k + 5000}], 16" for k in range(10))
  r = check(f"{body}\n  VLD v1, [s0 + 3]\n  HALT\n.dump vmem 0 160\n.run 50000")
  assert r.perf["stall_unit"] > 0 and r.perf["dma_tiles"] == 160


def test_halt_and_trap_wait_for_the_engine():
  """A HALT or a trap right after a long DMA still completes it (the dump sees every tile)."""
  check(f"{vmem_init(4, 5)}\n  DMA.OUT [s0 + 10], [s0 + 0], 4\n  DMA.IN [s0 + 100], [s0 + 10], 200\n  HALT\n.dump vmem 100 200\n.run 50000")
  r = check(f"{vmem_init(4, 6)}\n  DMA.OUT [s0 + 10], [s0 + 0], 4\n  DMA.IN [s0 + 100], [s0 + 8], 200\n  VLD v1, [s0 + -1]\n  HALT\n.dump vmem 100 200\n.run 50000")
  assert r.trap == "vmem_out_of_range" and r.pc == 2


# ---------------------------------------------------------------------------------------------
# timing: a 1000-tile copy against the rule of doc/hbm.md
def expected_cycles(direction: str, n: int, cfg: Config) -> int:
  b = (n - 1) * cfg.HBM_BW_DEN // cfg.HBM_BW_NUM  # B(n-1): the bucket is full when the copy starts
  return (7 if direction == "in" else 9) + cfg.HBM_LATENCY + b


def copy_1000(direction: str, cfg: Config) -> bundle.Result:
  op = "DMA.IN [s0 + 0], [s0 + 0], 250" if direction == "in" else "DMA.OUT [s0 + 0], [s0 + 0], 250"
  return check(f"  LI s1, 250\n  DMA.CFG s1, 4, 250\n  {op}\n  DMA.WAIT\n  HALT\n.dump vmem 0 4\n.dump vmem 996 4\n.run 100000", cfg)


@pytest.mark.parametrize("direction", ["in", "out"])
def test_copy_1000_tiles_cycles(direction):
  r = copy_1000(direction, DEFAULT)
  assert r.cycles == expected_cycles(direction, 1000, DEFAULT), r.cycles
  assert r.perf["dma_tiles"] == 1000
  # the engine is busy at least while the tiles stream (latency + one tile a cycle), never longer than the run
  assert DEFAULT.HBM_LATENCY + 999 <= r.perf["dma_busy"] <= r.cycles, r.perf


def test_dma_busy_counts_the_drain_after_halt():
  # no DMA.WAIT: HALT drains the copy, and the engine's busy cycles count there too
  r = check("  LI s1, 250\n  DMA.CFG s1, 4, 250\n  DMA.IN [s0 + 0], [s0 + 0], 250\n  HALT\n.dump vmem 0 4\n.run 100000", DEFAULT)
  assert r.perf["dma_tiles"] == 1000 and DEFAULT.HBM_LATENCY + 999 <= r.perf["dma_busy"] <= r.cycles, r.perf


@pytest.mark.nightly
@pytest.mark.parametrize("cfg", [SLOW, FAST], ids=["lat37_bw1of3", "lat1_bw2of3"])
@pytest.mark.parametrize("direction", ["in", "out"])
def test_copy_1000_tiles_other_hbm(direction, cfg):
  """Non-default HBM timing (a co-sim build each: nightly)."""
  r = copy_1000(direction, cfg)
  assert r.cycles == expected_cycles(direction, 1000, cfg), r.cycles


@pytest.mark.nightly
@pytest.mark.parametrize("cfg", [SLOW, FAST], ids=["lat37_bw1of3", "lat1_bw2of3"])
def test_random_programs_other_hbm(cfg):
  for seed in range(20):
    run(random_program(seed, cfg), cfg)


# ---------------------------------------------------------------------------------------------
# random DMA programs: small VMEM and HBM windows so copies, loads, stores and MXU work collide
def random_program(seed: int, cfg: Config = DEFAULT, cov: Counter | None = None) -> bundle.Bundle:
  """`cov` counts the (direction, T bin, rows bin) of every DMA the program holds."""
  r = np.random.default_rng(seed)
  rows_now = 1
  hwin = int(r.choice([0, cfg.HBM_TILES - 256, 1 << 15]))  # bottom, top or middle of HBM
  lines = [vmem_init(64, seed), hbm_init(hwin + 8, 32, seed + 1000), f"  LI s9, {hwin}", "  MLW [s0 + 1]"]
  for _ in range(int(r.integers(10, 30))):
    k = r.random()
    if k < 0.2:
      rows, T = int(r.integers(1, 5)), int(r.integers(1, 9))
      hs, vs = int(r.integers(-T - 4, T + 8)), int(r.integers(0, T + 4))
      lines += [f"  LI s1, {hs}", f"  DMA.CFG s1, {rows}, {vs}"]
      rows_now = rows
    elif k < 0.5:
      T, v, h, out = int(r.integers(1, 9)), int(r.integers(0, 64)), int(r.integers(0, 200)), bool(r.random() < 0.5)
      lines.append(f"  DMA.OUT [s9 + {h}], [s0 + {v}], {T}" if out else f"  DMA.IN [s0 + {v}], [s9 + {h}], {T}")
      if cov is not None: cov[("out" if out else "in", t_bin(T), rows_bin(rows_now))] += 1
    elif k < 0.62:
      lines.append(f"  VLD v{int(r.integers(1, 8))}, [s0 + {int(r.integers(0, 64))}]")
    elif k < 0.74:
      lines.append(f"  VST v{int(r.integers(0, 8))}, [s0 + {int(r.integers(0, 64))}]")
    elif k < 0.8:
      lines.append(f"  MLW [s0 + {int(r.integers(0, 64))}]")
    elif k < 0.88:
      T = int(r.integers(1, 6))
      lines.append(f"  MMUL [s0 + {int(r.integers(0, 64 - T))}], [s0 + {int(r.integers(0, 64 - T))}], {T}, {int(r.integers(0, 2))}")
    elif k < 0.93:
      lines.append("  DMA.WAIT" if r.random() < 0.5 else "  FENCE")
    else:
      lines.append(f"  VADD v{int(r.integers(1, 8))}, v{int(r.integers(0, 8))}, v{int(r.integers(0, 8))}")
  # read the HBM window back so its contents are compared too
  lines += ["  LI s1, 1", "  DMA.CFG s1, 1, 0", "  DMA.IN [s0 + 64], [s9 + 0], 208"]
  lines += ["  HALT", ".dump vmem 0 272", ".dump psum 0 64", ".dump sreg", f".dump hbm {hwin} 256", ".run 200000"]
  cfgd = Config(VMEM_TILES=1024, HBM_TILES=cfg.HBM_TILES, HBM_LATENCY=cfg.HBM_LATENCY, HBM_BW_NUM=cfg.HBM_BW_NUM, HBM_BW_DEN=cfg.HBM_BW_DEN)
  return asm.assemble_bundle("\n".join(lines), cfgd)


def t_bin(T: int) -> str: return "1" if T == 1 else "2-4" if T <= 4 else "5+"
def rows_bin(rows: int) -> str: return "1" if rows == 1 else "2+"


SEEDS = range(40)


def test_random_programs_cover_the_shapes():
  """The random programs the blocks below run cover every direction x T x rows bin."""
  cov = Counter()
  for seed in SEEDS: random_program(seed, cov=cov)
  bins = {(d, t, w) for d in ("in", "out") for t in ("1", "2-4", "5+") for w in ("1", "2+")}
  assert bins <= set(cov), f"uncovered DMA shapes: {sorted(bins - set(cov))}"


@pytest.mark.parametrize("block", range(4))
def test_random_programs(block):
  """Ten random programs a block, RTL against golden; they stall on the DMA interlocks."""
  stalls = Counter()
  for seed in SEEDS[block * 10:block * 10 + 10]:
    r = run(random_program(seed))
    stalls.update({k: r.perf[k] for k in ("stall_dma", "dma_tiles")})
  assert stalls["stall_dma"] > 0 and stalls["dma_tiles"] > 0


def test_double_buffering_releases_per_command():
  """Two DMA.INs back to back (buffers A and B): a VLD of A waits for A's last tile only, not for
  B's (the SXU releases a command's tiles when the engine reports it done). By the rule of
  doc/hbm.md at the defaults: A's k-th read is accepted at cycle 2 + k and written at 102 + k, so
  A is done in cycle 117; the VLD issues in 118 and the RDCYCLE after it reads 119 (B is done only
  in 133)."""
  b = asm.assemble_bundle(f"""{hbm_init(1000, 16, 11)}
  DMA.IN [s0 + 0], [s0 + 1000], 16
  DMA.IN [s0 + 16], [s0 + 2000], 16
  VLD v1, [s0 + 0]
  RDCYCLE s1
  HALT
.dump sreg
.run 20000""")
  r = cosim.server(DEFAULT).run(bundle.write(b))
  assert r.status == "ok"
  sregs = next(v for k, _, v in r.dumps if k == "sreg")
  assert int(sregs[1]) == 2 + 15 + DEFAULT.HBM_LATENCY + 2
