"""golden/mxu.py's MMUL.BF16 against an independent scalar formula in the documented order
(doc/isa.md): every product and sum computed exactly in Python floats (double) and rounded once
to float32, s = x0*w0, then s = s + xk*wk for k = 1..N-1, then PSUM + s when acc = 1. A double
holds every bf16 x bf16 product exactly and rounds an fp32 + fp32 sum to a double that rounds to
the correctly rounded fp32 (53 >= 2*24 + 2), so each step is one IEEE fp32 op.

Seeded: TINYTPU_SEED=<n> reproduces a run (the seed is in every failure message)."""
import os

import numpy as np
import pytest

from tinytpu import asm
from tinytpu.config import Config
from tinytpu.golden import interp, mxu

SEED = int(os.environ.get("TINYTPU_SEED", "20261202"))
QNAN = 0x7FC00000


def f32(x: float) -> float:
  with np.errstate(all="ignore"):
    return float(np.float32(x))


def bits(x: float) -> int:
  return QNAN if x != x else int(np.float32(x).view(np.uint32))


def val(lane: int, bf16: bool = True) -> float:
  return float(np.uint32(lane & (0xFFFF0000 if bf16 else 0xFFFFFFFF)).view(np.float32))


def mmul_ref(old, acts, wtile, acc):
  """Nested lists of uint32 lanes: old/acts (T, N, N), wtile (N, N)."""
  n = len(wtile)
  out = []
  for t in range(len(acts)):
    tile = []
    for r in range(n):
      row = []
      for c in range(n):
        s = f32(val(acts[t][r][0]) * val(wtile[0][c]))
        for k in range(1, n):
          s = f32(s + f32(val(acts[t][r][k]) * val(wtile[k][c])))
        if acc:
          s = f32(val(old[t][r][c], bf16=False) + s)
        row.append(bits(s))
      tile.append(row)
    out.append(tile)
  return out


class H(int):
  """A bf16 given by its 16 bits."""


def bf(x) -> int:
  """The fp32 lane of a bf16 value given as a number (exact in bf16) or as its 16 bits (an H)."""
  return (int(x) << 16) if isinstance(x, H) else int(np.float32(x).view(np.uint32))


def lanes(rng, shape, kind):
  """bf16 lanes (low 16 bits zero) of a class, or with garbage low bits (`dirty`)."""
  if kind == "normal":  # random sign, exponent within +-2^20 of 1, random 7-bit fraction
    e = rng.integers(127 - 20, 127 + 21, shape)
    v = (rng.integers(0, 2, shape) << 15) | (e << 7) | rng.integers(0, 128, shape)
  elif kind == "any":  # every bf16 pattern: subnormals, inf, NaN, huge and tiny
    v = rng.integers(0, 1 << 16, shape)
  elif kind == "edge":
    pool = [0x0000, 0x8000, 0x0001, 0x8001, 0x007F, 0x0080, 0x3F80, 0xBF80, 0x7F7F, 0xFF7F, 0x7F80, 0xFF80, 0x7FC0,
            0x7F81, 0x4000, 0x3400, 0x0C00, 0x1F80, 0x5F80]
    v = rng.choice(pool, shape)
  else:
    raise ValueError(kind)
  return (np.asarray(v, np.uint32) << 16).astype(np.uint32)


@pytest.mark.parametrize("n", [4, 8, 16])
@pytest.mark.parametrize("T", [1, 3])
def test_mmul_bf16_random(n, T):
  rng = np.random.default_rng([SEED, 10, n, T])
  for akind, wkind in (("normal", "normal"), ("any", "normal"), ("normal", "any"), ("edge", "edge"), ("any", "any")):
    acts = lanes(rng, (T, n, n), akind)
    wtile = lanes(rng, (n, n), wkind)
    old = np.where(rng.random((T, n, n)) < .5, lanes(rng, (T, n, n), "normal") | rng.integers(0, 1 << 16, (T, n, n)).astype(np.uint32),
                   rng.integers(0, 1 << 32, (T, n, n), dtype=np.uint32)).astype(np.uint32)
    keep = (acts.copy(), old.copy(), wtile.copy())
    for acc in (0, 1):
      got = mxu.mmul_bf16(old, acts, wtile, acc)
      assert got.dtype == np.uint32 and got.shape == (T, n, n)
      want = mmul_ref(old.tolist(), acts.tolist(), wtile.tolist(), acc)
      assert got.tolist() == want, f"n={n} T={T} acts={akind} w={wkind} acc={acc} (seed {SEED})"
    assert all(np.array_equal(a, b) for a, b in zip((acts, old, wtile), keep)), "mmul_bf16 mutated an input"


@pytest.mark.parametrize("n", [4, 8])
def test_low_16_bits_ignored(n):
  rng = np.random.default_rng([SEED, 11, n])
  acts, wtile = lanes(rng, (2, n, n), "any"), lanes(rng, (n, n), "any")
  dirty = lambda x: x | rng.integers(0, 1 << 16, x.shape).astype(np.uint32)
  old = rng.integers(0, 1 << 32, (2, n, n), dtype=np.uint32)
  for acc in (0, 1):
    assert mxu.mmul_bf16(old, dirty(acts), dirty(wtile), acc).tolist() == mxu.mmul_bf16(old, acts, wtile, acc).tolist()


def one(xs, ws, old=None, acc=0):
  """The result lane [0][0] of a one-tile MMUL.BF16 whose row 0 is xs and weight column 0 is ws."""
  n = len(xs)
  acts = np.zeros((1, n, n), np.uint32)
  acts[0, 0] = [bf(x) for x in xs]
  w = np.zeros((n, n), np.uint32)
  w[:, 0] = [bf(x) for x in ws]
  o = np.full((1, n, n), old if old is not None else 0, np.uint32)
  got = mxu.mmul_bf16(o, acts, w, acc)
  assert got[0, 0, 0] == mmul_ref(o.tolist(), acts.tolist(), w.tolist(), acc)[0][0][0]
  return int(got[0, 0, 0])


def test_specials():
  big, inf = 2.0**127, float("inf")
  # products exact: (1 + 2^-7)^2 = 1 + 2^-6 + 2^-14 needs 15 bits, kept
  assert one([1 + 2**-7, 0, 0, 0], [1 + 2**-7, 0, 0, 0]) == bits(1 + 2**-6 + 2**-14)
  # overflow to inf: of a product, and of a sum of finite products; -inf likewise
  assert one([big, 0, 0, 0], [4.0, 0, 0, 0]) == 0x7F800000
  assert one([H(0x7F7F), H(0x7F7F), 0, 0], [1.0, 1.0, 0, 0]) == 0x7F800000
  assert one([-big, 0, 0, 0], [4.0, 0, 0, 0]) == 0xFF800000
  # NaN: inf * 0, inf - inf, a NaN operand with a payload, inf + NaN: always the canonical NaN
  assert one([inf, 1, 1, 1], [0.0, 1, 1, 1]) == QNAN
  assert one([inf, -inf, 0, 0], [1.0, 1.0, 0, 0]) == QNAN
  assert one([H(0x7F81), 1, 1, 1], [1.0, 1, 1, 1]) == QNAN
  assert one([H(0xFFC1), 0, 0, 0], [0.0, 0, 0, 0]) == QNAN
  assert one([inf, 0, 0, 0], [1.0, 0, 0, 0], old=0xFF800000, acc=1) == QNAN
  assert one([1.0, 0, 0, 0], [1.0, 0, 0, 0], old=0x7FC12345, acc=1) == QNAN
  assert one([inf, 2, 0, 0], [1.0, 3, 0, 0]) == 0x7F800000
  # negative zero: every product -0 gives -0 (the sum starts at the first product, not at +0)
  assert one([-0.0, 0.0, -1.0, 0.0], [1.0, -1.0, 0.0, -2.0]) == 0x80000000
  assert one([-0.0] * 4, [1.0] * 4, old=0x80000000, acc=1) == 0x80000000
  assert one([-0.0] * 4, [1.0] * 4, old=0x00000000, acc=1) == 0x00000000
  assert one([1.0, -1.0, 0, 0], [1.0, 1.0, 0, 0]) == 0x00000000  # exact cancellation is +0
  # subnormals: bf16 subnormal operands, products that underflow (rounded to even), to zero with sign
  assert one([H(0x0001), 0, 0, 0], [1.0, 0, 0, 0]) == 0x00010000  # 2^-133, a subnormal fp32
  assert one([2.0**-75, 0, 0, 0], [2.0**-75, 0, 0, 0]) == 0x00000000  # 2^-150: a tie, to even (0)
  assert one([1.5 * 2.0**-75, 0, 0, 0], [2.0**-75, 0, 0, 0]) == 0x00000001  # 1.5 * 2^-150 rounds up to 2^-149
  assert one([-(2.0**-80), -0.0, -0.0, -0.0], [2.0**-80, 1.0, 1.0, 1.0]) == 0x80000000  # underflow keeps the sign
  assert one([-(2.0**-80), 0, 0, 0], [2.0**-80, 0, 0, 0]) == 0x00000000  # -0 + +0 = +0
  assert one([2.0**-70, 2.0**-70, 0, 0], [2.0**-70, 2.0**-70, 0, 0]) == 0x00000400  # 2^-140 + 2^-140 = 2^-139 = 2^10 * 2^-149
  assert one([H(0x0080), H(0x8001), 0, 0], [1.0, 1.0, 0, 0]) == 0x007F0000  # min normal - a subnormal


def test_fixed_order():
  """Left to right down the column: 1 + 2^-24 ties back to 1 three times; any other order (a tree,
  the small terms first) would give 1 + 2^-22 (1 + 3*2^-24, a tie, to even)."""
  assert one([1.0, 2.0**-24, 2.0**-24, 2.0**-24], [1.0] * 4) == bits(1.0)
  assert one([2.0**-24, 2.0**-24, 0.0, 1.0], [1.0] * 4) == bits(1 + 2**-23)
  # and PSUM is added last: (old = 1) + (2^-24 + 2^-24) = 1 + 2^-23, not ((1 + 2^-24) + 2^-24) = 1
  assert one([2.0**-24, 2.0**-24, 0, 0], [1.0] * 4, old=bf(1.0), acc=1) == bits(1 + 2**-23)


def test_interp_mixes_modes():
  """MLW keeps the whole tile: MMUL reads its low 8 bits as int8, MMUL.BF16 its high 16 bits."""
  n = 4
  rng = np.random.default_rng([SEED, 12])
  w = lanes(rng, (n, n), "normal") | rng.integers(0, 256, (n, n)).astype(np.uint32)
  a = lanes(rng, (2, n, n), "normal") | rng.integers(0, 256, (2, n, n)).astype(np.uint32)
  old = lanes(rng, (2, n, n), "normal")
  line = lambda kind, addr, tiles: [f".{kind} {addr + i} " + " ".join(map(str, t.ravel())) for i, t in enumerate(tiles)]
  src = [*line("vmem", 0, [w]), *line("vmem", 1, a), *line("psum", 2, old),
         "  MLW [s0 + 0]", "  MMUL [s0 + 0], [s0 + 1], 2, 0", "  MMUL.BF16 [s0 + 2], [s0 + 1], 2, 1",
         "  MMUL.BF16 [s0 + 4], [s0 + 1], 1, 0", "  HALT", ".dump psum 0 5"]
  r = interp.run(asm.assemble_bundle("\n".join(src), Config(N=n)))
  assert (r.status, r.trap) == ("ok", None), r
  p = np.stack([x[2] for x in r.dumps if x[0] == "psum"])
  assert p[0:2].tolist() == mxu.mmul(None, a, mxu.weights(w), 0).tolist()
  assert p[2:4].tolist() == mmul_ref(old.tolist(), a.tolist(), w.tolist(), 1)
  assert p[4:5].tolist() == mmul_ref(None, a[:1].tolist(), w.tolist(), 0)
