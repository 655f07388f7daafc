"""golden/epilogue.py (PEPI.B/.BR/.BQ/.BRQ) against a Python-int formula of doc/epilogue.md, and the
PEPI instructions through the interpreter (traps, modes, per-channel parameters).

Seeded: TINYTPU_SEED=<n> reproduces a run (the seed is in every failure message)."""
import os

import numpy as np
import pytest

from tinytpu import asm
from tinytpu.config import DEFAULT, Config
from tinytpu.golden import epilogue, interp

SEED = int(os.environ.get("TINYTPU_SEED", "20261202"))
M = 0xFFFFFFFF


def s32(x): return ((x & M) ^ 0x80000000) - 0x80000000


def ref(acc, bias, vq, mode):
  """Nested lists of unsigned lanes in, out: exact integers, rounding as (p + 2^(k-1)) >> k."""
  n = len(acc)
  out = []
  for r in range(n):
    row = []
    for c in range(n):
      x = s32(acc[r][c] + bias[r][c])
      if mode & 2:
        m, k = s32(vq[0][c]), min(max(s32(vq[1][c]), 0), 63)
        p = x * m
        y = (p + (1 << (k - 1))) >> k if k else p
        x = min(max(y, -128), 127)
      if mode & 1:
        x = max(x, 0)
      row.append(x & M)
    out.append(row)
  return out


def lanes(rng, shape, kind):
  if kind == "acc": return rng.choice([rng.integers(-1 << 31, 1 << 31, shape), rng.integers(-40000, 40000, shape),
                                      np.resize(np.array([-1 << 31, (1 << 31) - 1, 0, -1, 1]), shape)]).astype(np.int64)
  if kind == "mult": return rng.choice([rng.integers(-1 << 31, 1 << 31, shape), rng.integers(0, 1 << 16, shape),
                                       np.resize(np.array([-1 << 31, (1 << 31) - 1, 1, 0, -1, 1 << 30]), shape)]).astype(np.int64)
  return rng.choice([rng.integers(-3, 70, shape), rng.integers(-1 << 31, 1 << 31, shape), np.resize(np.array([0, 1, 31, 32, 62, 63, 64, -1]), shape)]).astype(np.int64)


@pytest.mark.parametrize("n", [2, 4, 8, 16])
@pytest.mark.parametrize("mode", [0, 1, 2, 3])
def test_epilogue_against_ints(n, mode):
  rng = np.random.default_rng([SEED, n, mode])
  for it in range(60):
    acc, bias = (lanes(rng, (n, n), "acc") & M).astype(np.uint32), (lanes(rng, (n, n), "acc") & M).astype(np.uint32)
    vq = np.stack([lanes(rng, n, "mult"), lanes(rng, n, "shift")] + [rng.integers(-1 << 31, 1 << 31, n)] * (n - 2)) & M
    vq = vq.astype(np.uint32)
    got = epilogue.epilogue(acc, bias, vq, mode)
    assert got.dtype == np.uint32 and got.shape == (n, n)
    assert got.tolist() == ref(acc.tolist(), bias.tolist(), vq.tolist(), mode), f"n={n} mode={mode} it={it} (seed {SEED})"


def test_rounding_and_extremes():
  # round half up: ties go toward +inf; exact products of INT_MIN * INT_MIN with every shift
  one = lambda acc, m, k, mode=2: int(np.int32(epilogue.epilogue(np.array([[acc & M]], np.uint32), np.zeros((1, 1), np.uint32),
                                                                  np.array([[m & M], [k & M]], np.uint32)[:, :1].reshape(2, 1), mode)[0, 0]))
  assert [one(x, 1, 1) for x in (-3, -2, -1, 0, 1, 2, 3)] == [-1, -1, 0, 0, 1, 1, 2]
  assert [one(x, 1, 2) for x in (-6, -5, -2, 2, 5, 6)] == [-1, -1, 0, 1, 1, 2]
  assert one(-1 << 31, -1 << 31, 63) == 1 and one(-1 << 31, -1 << 31, 62) == 1 and one(-1 << 31, -1 << 31, 55) == 127
  assert one((1 << 31) - 1, -1 << 31, 63) == 0 and one((1 << 31) - 1, -1 << 31, 61) == -2
  assert one(1000, 1, -5) == 127 and one(1000, 1, 1 << 20) == 0 and one(-1000, 1, -1) == -128  # clamped shifts
  assert one(-1000, 3, 4, 3) == 0 and one(1000, 3, 4, 3) == 127 and one(-1000, 3, 4, 2) == -128


def run(tasm: str, cfg: Config = DEFAULT):
  return interp.run(asm.assemble_bundle(tasm, cfg))


def tile(vals) -> str:
  return " ".join(str(int(v)) for v in np.asarray(vals).ravel())


def test_pepi_in_the_interpreter():
  n, rng = DEFAULT.N, np.random.default_rng([SEED, 99])
  acc = rng.integers(-100000, 100000, (n, n))
  bias = np.tile(rng.integers(-5000, 5000, n), (n, 1))
  vq = np.zeros((n, n), np.int64)
  vq[0], vq[1] = rng.integers(1, 1 << 15, n), rng.integers(8, 20, n)
  text = f"""
  VLD v1, [s0 + 0]
  VLD v2, [s0 + 1]
  LI s3, 2
  PEPI.B v4, [s3 + 3], v1
  PEPI.BR v5, [s3 + 3], v1
  PEPI.BQ v6, [s3 + 3], v1, v2
  PEPI.BRQ v7, [s0 + 5], v1, v2
  VST v4, [s0 + 10]
  VST v5, [s0 + 11]
  VST v6, [s0 + 12]
  VST v7, [s0 + 13]
  HALT
.psum 5 {tile(acc)}
.vmem 0 {tile(bias)}
.vmem 1 {tile(vq)}
.dump vmem 10 4
"""
  res = run(text)
  assert res.status == "ok", res
  u = lambda t: (np.asarray(t).astype(np.int64) & M).astype(np.uint32).tolist()
  want = [ref(u(acc), u(bias), u(vq), mode) for mode in range(4)]
  got = [t.tolist() for _, _, t in res.dumps]
  assert got == want
  assert np.asarray(got[1]).view(np.int32).min() >= 0 and np.asarray(got[2]).view(np.int32).max() <= 127


@pytest.mark.parametrize("addr", [-1, 64, 1 << 20])
def test_pepi_psum_out_of_range(addr):
  res = run(f"""
  LI s1, {addr}
  VFILL v2, 7
  PEPI.BQ v3, [s1 + 0], v2, v2
  HALT
.dump vmem 0 1
""")
  assert (res.status, res.trap, res.pc) == ("trap", "psum_out_of_range", 2)


def test_pepi_assembler_round_trip():
  src = ["PEPI.B v1, [s2 - 3], v4", "PEPI.BR v15, [s15 + 63], v0", "PEPI.BQ v3, [s1], v5, v6", "PEPI.BRQ v7, [5], v8, v9"]
  b = asm.assemble_bundle("\n".join(src) + "\n", DEFAULT)
  assert [asm.disassemble_word(w, DEFAULT.N) for w in b.program] == src
  assert asm.assemble("\n".join(asm.disassemble_word(w) for w in b.program)) == b.program
  for w, mode in zip(b.program, range(4)):
    assert (w >> 56, (w >> 48) & 0xFF) == (0x29, mode)
  with pytest.raises(asm.AsmError):
    asm.assemble_bundle("PEPI.B v1, [s2 + 0], v4, v5\n", DEFAULT)  # no vq without requantising
