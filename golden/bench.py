"""Speed of the golden interpreter: `python -m tinytpu.golden.bench` prints `golden_instr_per_s <n>`.

The program is a loop-heavy mix like a compiled kernel: nested hardware loops with scalar address
arithmetic, VLD/VST, int and fp VPU ops, XLU moves, a branch and a tiled MMUL."""
from __future__ import annotations

import time

import numpy as np

from tinytpu import asm
from tinytpu.bundle import Bundle
from tinytpu.config import Config
from tinytpu.golden import interp

PROGRAM = """
        LI s5, 1
        MLW [s0 + 64]
        LOOPI {outer}, outer_end
          LI s2, 0
          LOOPI 8, inner_end
            VLD v1, [s2 + 0]
            VLD v2, [s2 + 8]
            VADD v3, v1, v2
            VMUL v4, v3, v1
            VMAX v5, v4, v2
            VSEL v6, v5, v3, v4
            XROT v7, v6, 1
            XROTS v8, v7, s2
            XTRANS v9, v8
            VSUM_ROW v10, v9
            VI2F v12, v10
            VFMUL v13, v12, v12
            VST v10, [s2 + 16]
            SADDI s2, s2, 1
            SADD s3, s3, s2
  inner_end:
          MMUL [s0 + 0], [s0 + 16], 8, 1
          PLD v11, [s0 + 3]
          BLT s3, s0, skip
          SADDI s4, s4, 1
  skip:   SXOR s6, s4, s5
  outer_end:
        HALT
"""


def bundle(outer: int = 500, seed: int = 0) -> Bundle:
  """The benchmark bundle: 4 + 127 * outer instructions."""
  cfg = Config(N=4)
  b = asm.assemble_bundle(PROGRAM.format(outer=outer), cfg)
  rng = np.random.default_rng(seed)
  for a in list(range(16)) + [64]:
    b.vmem[a] = rng.integers(-100, 100, (cfg.N, cfg.N)).astype(np.int32).view(np.uint32)
  b.max_cycles = 1 << 40
  return b


def measure(outer: int = 500) -> float:
  """Instructions per second of the golden interpreter on the mixed program (best of 3 runs)."""
  b, best = bundle(outer), 0.0
  for _ in range(3):
    t = time.perf_counter()
    r = interp.run(b)
    dt = time.perf_counter() - t
    assert r.status == "ok", r
    best = max(best, r.cycles / dt)
  return best


if __name__ == "__main__":
  print(f"golden_instr_per_s {measure():.0f}")
