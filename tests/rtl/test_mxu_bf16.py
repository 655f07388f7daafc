"""MMUL.BF16 programs on the RTL co-simulation against the golden interpreter, at N = 4 and N = 8
(N = 8 is nightly: its own build): a tiled bf16 GEMM accumulating fp32 over K blocks, fp32
specials in the operands and in PSUM, MMUL and MMUL.BF16 interleaved on one weight tile with
vector work reading the results, and random mixes of both modes."""
import numpy as np
import pytest

from tinytpu import asm, bundle, cosim
from tinytpu.config import Config
from tinytpu.golden import interp

CONFIGS = {4: Config(N=4), 8: Config(N=8, VMEM_TILES=256)}


def check(tasm: str, cfg: Config) -> bundle.Result:
  b = asm.assemble_bundle(tasm, cfg)
  rtl, gold = cosim.run_bundle(bundle.write(b), cfg), interp.run(b)
  diffs = bundle.diff_results(rtl, gold)
  assert not diffs, "RTL != golden:\n  " + "\n  ".join(diffs) + "\n" + bundle.format_result(rtl)
  assert (rtl.status, rtl.trap) == ("ok", None), bundle.format_result(rtl)
  return rtl


def bf16_lanes(rng, shape, specials=0.0, dirty=0.0) -> np.ndarray:
  """fp32 patterns of bf16 values (normal, near 1); `specials` of them +-0, subnormal, +-inf or
  NaN; `dirty` of them with their ignored low 16 bits set."""
  v = (rng.integers(0, 2, shape) << 15) | (rng.integers(127 - 10, 127 + 11, shape) << 7) | rng.integers(0, 128, shape)
  pool = np.array([0x0000, 0x8000, 0x0001, 0x807F, 0x0080, 0x7F80, 0xFF80, 0x7FC0, 0x7F81, 0x7F7F, 0xFF7F])
  v = np.where(rng.random(shape) < specials, rng.choice(pool, shape), v)
  lanes = (v.astype(np.uint32) << 16).astype(np.uint32)
  return np.where(rng.random(shape) < dirty, lanes | rng.integers(1, 1 << 16, shape).astype(np.uint32), lanes).astype(np.uint32)


def data(kind: str, addr: int, tiles) -> list[str]:
  return [f".{kind} {addr + i} " + " ".join(str(int(x)) for x in np.asarray(t).ravel()) for i, t in enumerate(tiles)]


def gemm_program(n: int, mt: int, kt: int, nt: int, rng, specials=0.0, dirty=0.0) -> str:
  """C (mt x nt tiles) = A (mt x kt) @ B (kt x nt) in bf16 with fp32 sums: for each (j, k) one MLW
  of B[k][j] and one MMUL.BF16 over the mt row tiles of A's K slice k, accumulating for k > 0.
  A's K slice k holds tiles k*mt .. k*mt+mt-1 from VMEM 0; B[k][j] at VMEM 200 + k*nt + j;
  C[:, j] at PSUM j*mt."""
  a = bf16_lanes(rng, (kt * mt, n, n), specials, dirty)
  b = bf16_lanes(rng, (kt * nt, n, n), specials, dirty)
  lines = data("vmem", 0, a) + data("vmem", 200, b)
  for j in range(nt):
    for k in range(kt):
      lines += [f"  MLW [s0 + {200 + k * nt + j}]", f"  MMUL.BF16 [s0 + {j * mt}], [s0 + {k * mt}], {mt}, {int(k > 0)}"]
  lines += ["  HALT", f".dump psum 0 {mt * nt}"]
  return "\n".join(lines)


@pytest.mark.parametrize("n", [4, 8])
def test_bf16_gemm(n):
  rng = np.random.default_rng([20261202, n])
  cfg = CONFIGS[n]
  cosim.build(cfg)
  check(gemm_program(n, 3, 4, 2, rng), cfg)
  check(gemm_program(n, 2, 3, 2, rng, specials=0.15, dirty=0.3), cfg)


@pytest.mark.parametrize("n", [4, 8])
def test_bf16_specials_and_psum(n):
  """Overflow, NaN, -0 and subnormals through the array and the fp32 PSUM accumulate, onto PSUM
  tiles preloaded with inf, a NaN payload, -0 and a subnormal."""
  cfg, f = CONFIGS[n], lambda x: int(np.float32(x).view(np.uint32))
  row = lambda vals: np.array([vals + [0] * (n - len(vals))] * n, np.uint32)  # noqa: E731
  acts = [row([f(2.0**127), f(2.0**127)]), row([f(np.inf), f(-1.0)]), row([f(np.inf), f(-np.inf)]), row([0x7F810000, f(1.0)]),
          row([f(-0.0)] * n), row([0x00010000, 0x80030000]), row([f(2.0**-75), f(1.5 * 2.0**-75)]),
          row([f(1.0), f(2.0**-24), f(2.0**-24), f(2.0**-24)])]  # 1 sequentially, 1 + 2^-23 as a tree
  w = np.full((n, n), f(1.0), np.uint32)
  w2 = np.zeros((n, n), np.uint32); w2[0:2] = f(2.0**-75)  # 2^-150 ties to 0, 1.5 * 2^-150 rounds up
  olds = [np.full((n, n), v, np.uint32) for v in (f(np.inf), 0x7FC00001, f(-0.0), 1)]
  lines = data("vmem", 0, acts) + data("vmem", 20, [w, w2]) + data("psum", 0, olds) + [
    "  MLW [s0 + 20]", "  MMUL.BF16 [s0 + 8], [s0 + 0], 8, 0",
    "  MMUL.BF16 [s0 + 0], [s0 + 1], 1, 1", "  MMUL.BF16 [s0 + 1], [s0 + 0], 1, 1",
    "  MMUL.BF16 [s0 + 2], [s0 + 4], 1, 1", "  MMUL.BF16 [s0 + 3], [s0 + 5], 1, 1",
    "  MLW [s0 + 21]", "  MMUL.BF16 [s0 + 16], [s0 + 6], 1, 0", "  HALT", ".dump psum 0 17"]
  check("\n".join(lines), cfg)


@pytest.mark.parametrize("n", [4, 8])
def test_modes_interleaved_with_vector_work(n):
  """One weight tile (int8 low bytes, bf16 high halves) used by MMUL and MMUL.BF16 back to back;
  PLD/VADD/VFADD/VST read and overwrite the MXU's tiles (the interlocks order them)."""
  cfg, rng = CONFIGS[n], np.random.default_rng([7, n])
  w = bf16_lanes(rng, (n, n)) | rng.integers(0, 256, (n, n)).astype(np.uint32)
  a = bf16_lanes(rng, (6, n, n)) | rng.integers(0, 256, (6, n, n)).astype(np.uint32)
  lines = data("vmem", 0, a) + data("vmem", 10, [w]) + [
    "  MLW [s0 + 10]", "  MMUL [s0 + 0], [s0 + 0], 2, 0", "  MMUL.BF16 [s0 + 2], [s0 + 0], 3, 0",
    "  MMUL [s0 + 0], [s0 + 3], 2, 1", "  MMUL.BF16 [s0 + 2], [s0 + 3], 3, 1",
    "  PLD v1, [s0 + 2]", "  VFADD v2, v1, v1", "  VST v2, [s0 + 4]",           # VST into an MMUL source: waits
    "  MMUL.BF16 [s0 + 5], [s0 + 4], 1, 0", "  PLD v3, [s0 + 0]", "  VADD v4, v3, v3",
    "  MLW [s0 + 4]", "  MMUL.BF16 [s0 + 6], [s0 + 1], 2, 0", "  MMUL [s0 + 8], [s0 + 1], 2, 0",
    "  HALT", ".dump psum 0 10", ".dump vmem 0 6", ".dump sreg"]
  check("\n".join(lines), cfg)


@pytest.mark.parametrize("n,seed", [(4, 0), (4, 1), (4, 2), (8, 0)])
def test_random_mixed_modes(n, seed):
  cfg, rng = CONFIGS[n], np.random.default_rng([99, n, seed])
  tiles = [bf16_lanes(rng, (n, n), 0.1, 0.2) if rng.random() < .6 else rng.integers(-128, 128, (n, n)).astype(np.uint32) for _ in range(24)]
  lines = data("vmem", 0, tiles)
  for _ in range(40):
    r = rng.random()
    if r < .25:
      lines.append(f"  MLW [s0 + {rng.integers(0, 24)}]")
    elif r < .85:
      T = int(rng.integers(1, 6))
      mn = "MMUL.BF16" if rng.random() < .6 else "MMUL"
      lines.append(f"  {mn} [s0 + {rng.integers(0, 32 - T)}], [s0 + {rng.integers(0, 24 - T)}], {T}, {rng.integers(0, 2)}")
    else:
      lines += [f"  PLD v1, [s0 + {rng.integers(0, 32)}]", f"  VST v1, [s0 + {rng.integers(0, 24)}]"]
  lines += ["  HALT", ".dump psum 0 32", ".dump vmem 0 24"]
  check("\n".join(lines), cfg)
