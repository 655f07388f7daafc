"""Scalar register spilling (backend/spill.py): kernels that need more than the SXU's 15 scalar
registers even lowered frugally are lowered with their coldest scalar registers spilled through
vector registers (VSPLAT / VEXTRACT, and the vector allocator's VMEM tiles). Programs compared with
numpy / torch; without spilling both tinygrad programs here raise NotImplementedError (issue 12's
test_simple_conv_transpose3d and test_slice_fancy_indexing_dim_inject_none, at smaller shapes)."""
import numpy as np
import pytest

import tinytpu  # noqa: F401  registers the device
from tinygrad import Tensor

from tinytpu import asm
from tinytpu.backend import lower, loops, regalloc, spill
from tinytpu.backend.vcode import SR, VT, Ins, Label, Mem
from tinytpu.config import DEFAULT
from tinytpu.golden import interp


@pytest.fixture
def spilled(monkeypatch, fresh_programs):
  """The names of the kernels rendered in the test whose scalar registers spill.py reallocated."""
  names = []
  real = lower.reallocate
  def spy(code, pinned, kernel):
    out, origin = real(code, pinned, kernel)
    if out is not code:
      names.append(kernel)
    return out, origin
  monkeypatch.setattr(lower, "reallocate", spy)
  return names


def test_conv_transpose3d_spills(spilled):
  """A 3-D transposed convolution: 9 nested ranges (5 output, 4 reduce) plus the HBM window registers."""
  torch = pytest.importorskip("torch")
  rng = np.random.default_rng(3)
  x = rng.standard_normal((2, 2, 4, 4, 4)).astype(np.float32)
  w = rng.standard_normal((2, 3, 3, 3, 3)).astype(np.float32)
  out = Tensor(x, device="TINYTPU").conv_transpose2d(Tensor(w, device="TINYTPU")).numpy()
  ref = torch.nn.functional.conv_transpose3d(torch.tensor(x), torch.tensor(w)).numpy()
  np.testing.assert_allclose(out, ref, rtol=1e-5, atol=1e-5)
  assert spilled, "the kernel fit in the scalar registers: the test no longer covers spilling"


def test_fancy_indexing_with_none_spills(spilled):
  """Fancy indexing with an injected dimension: a gather loop nest 5 deep (the SXU's stack has 4)
  with no register left to count the outer loop in branches."""
  rng = np.random.default_rng(5)
  x = rng.standard_normal((2, 5, 6, 5, 3, 4)).astype(np.float32)
  i, j = rng.integers(-1, 1, (2, 1, 1, 1, 1, 1)), rng.integers(0, 1, (1, 3, 1, 1, 1, 1))
  o, p = rng.integers(0, 4, (2, 1, 1, 5, 1, 1)), rng.integers(0, 1, (1, 1, 1, 1, 6, 1))
  T = lambda a: Tensor(a.astype(np.int32), device="TINYTPU")
  out = Tensor(x, device="TINYTPU")[T(i), T(j), None, T(o), T(p)].numpy()
  np.testing.assert_array_equal(out, x[i, j, None, o, p])
  assert spilled, "the kernel fit in the scalar registers: the test no longer covers spilling"


def test_fitting_code_is_unchanged():
  code = [Ins("LI", SR(r), r) for r in range(1, 16)] + [Ins("HALT")]
  assert spill.reallocate(code, set())[0] is code


def _pressure(names: int, counts: list[int]) -> list:
  """`names` scalar registers (s1, s2, ... past s15) set to 1..names before a nest of hardware loops
  (counts, outer first, deeper than the SXU's stack), all read in the innermost body: acc += each;
  the sum ends in s1 and in VMEM tile 0."""
  acc, regs = 1, list(range(2, names + 2))
  code = [Ins("LI", SR(acc), 0)] + [Ins("LI", SR(r), r - 1) for r in regs]
  code += [Ins("LOOPI", n, f"E{d}") for d, n in enumerate(counts)]
  code += [Ins("SADD", SR(acc), SR(acc), SR(r)) for r in regs]
  for d in reversed(range(len(counts))):
    code += [Label(f"E{d}"), Ins("SADDI", SR(regs[d]), SR(regs[d]), 0)]  # a loop ends strictly inside the one around it
  v = VT("out")
  return code + [Ins("VSPLAT", v, SR(acc)), Ins("VST", v, Mem(0, 0)), Ins("HALT")]


@pytest.mark.parametrize("names,counts", [(18, [2, 3]), (20, [2, 2, 3, 2, 2]), (30, [3])])
def test_spilled_registers_run(names, counts):
  """More names than registers, each read in a loop nest: after legalise (branch-loop counters past
  s15) and the reallocation, the golden model computes the sum, and the static count of retired
  instructions (spill code included) is what it retires."""
  code = loops.legalise(_pressure(names, counts), virtual=True)
  out, origin = spill.reallocate(code, set())
  assert max(r for c in out if isinstance(c, Ins) for o in c.ops for r in ([o.n] if isinstance(o, SR) else [])) < DEFAULT.SREGS
  assert any(isinstance(c, Ins) and c.mn == "VEXTRACT" for c in out)
  text, _, weights = regalloc.allocate(out, 8)
  per = [0] * len(code)
  for k, i in enumerate(origin):
    per[i] += weights[k]
  b = asm.assemble_bundle(text, DEFAULT)
  b.dumps += [("vmem", 0, 1), ("sreg", 0, 16)]
  res = interp.run(b)
  assert res.status == "ok", (res.status, res.trap)
  trips = int(np.prod(counts))
  tile = next(t for kind, _, t in res.dumps if kind == "vmem")
  assert (tile == trips * names * (names + 1) // 2).all()
  assert loops.executed(code, per) == res.perf["retired"]


def test_cold_registers_spill_first():
  """The registers read only outside the loop spill; the ones read in the innermost body stay."""
  code = [Ins("LI", SR(r), r) for r in range(1, 21)] + [Ins("LOOPI", 4, "E")]
  code += [Ins("SADD", SR(1), SR(1), SR(r)) for r in range(2, 10)] + [Label("E")]
  code += [Ins("SADD", SR(1), SR(1), SR(r)) for r in range(10, 21)] + [Ins("HALT")]
  phys, spilled, scratch = spill.assign(code, set(), 1)
  assert spilled and all(r >= 10 for r in spilled)
  assert len(scratch) == 1 and scratch[0] not in {phys[r] for r in phys if r not in spilled}
