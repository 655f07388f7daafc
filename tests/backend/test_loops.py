"""Loop-depth legalisation: nests deeper than the SXU's loop stack run with their outer loops as
counted branch loops, giving the same result on the golden model; without the pass the same program
traps `loop_stack` (so the test sees the hardware limit it works around)."""
import pytest

from tinytpu import asm, isa
from tinytpu.backend import loops, regalloc, vcode
from tinytpu.backend.vcode import SR, Ins, Label, Mem
from tinytpu.config import DEFAULT
from tinytpu.golden import interp


def nest(counts: list, reg_counts: bool = False) -> list[tuple]:
  """Loops nested as counts (outer first) around `s1 += 1`, with a vector value defined before the
  loops and read in the innermost body (its register must stay live across the branch loops)."""
  v, acc = vcode.VT("v"), vcode.VT("acc")
  code = [Ins("VFILL", v, 3), Ins("VFILL", acc, 0), Ins("LI", SR(1), 0)]
  for d, n in enumerate(counts):
    if reg_counts:
      code += [Ins("LI", SR(8 + d), n), Ins("LOOP", SR(8 + d), f"E{d}")]
    else:
      code.append(Ins("LOOPI", n, f"E{d}"))
  code += [Ins("SADDI", SR(1), SR(1), 1), Ins("VADD", acc, acc, v)]
  for d in reversed(range(len(counts))):
    code.append(Label(f"E{d}"))
    code.append(Ins("SADDI", SR(2), SR(2), 1))  # a loop ends strictly inside the one around it
  code += [Ins("VST", acc, Mem(0, 0)), Ins("HALT")]
  return code


def run(code: list[tuple]):
  text, _, _ = regalloc.allocate(code, 8)
  b = asm.assemble_bundle(text, DEFAULT)
  b.dumps += [("vmem", 0, 1), ("sreg", 0, 16)]
  return interp.run(b)


@pytest.mark.parametrize("counts,reg", [([2, 3, 1, 2, 2, 3], False), ([3, 2, 2, 2, 2], True), ([2, 0, 3, 2, 2], False),
                                        ([2, 2, 2, 2], False)])
def test_deep_nests_run(counts, reg):
  code = nest(counts, reg)
  total = 1
  for n in counts:
    total *= n
  if len(counts) > isa.LOOP_DEPTH and all(counts):
    assert run(code).trap == "loop_stack"  # the hardware limit is real
  legal = loops.legalise(code)
  res = run(legal)
  assert res.status == "ok", (res.status, res.trap)
  assert loops.executed(legal) == res.perf["retired"]
  regs = next(t for kind, _, t in res.dumps if kind == "sreg")
  assert int(regs[1]) == total
  tile = next(t for kind, _, t in res.dumps if kind == "vmem")
  assert (tile == 3 * total).all()
  kept = sum(1 for c in loops.legalise(code) if isinstance(c, Ins) and c.mn in loops.HW_LOOPS)
  assert kept == min(len(counts), isa.LOOP_DEPTH)  # the innermost loops stay in hardware


def test_no_register_left_is_refused():
  code = nest([2] * 6)
  code[:0] = [Ins("LI", SR(r), 0) for r in range(2, 16)]  # every scalar register in use
  with pytest.raises(NotImplementedError, match=r"kernel k: loops nest 6 deep \(the SXU has 4\)"):
    loops.legalise(code, "k")


def test_executed_count_matches_the_golden_model(monkeypatch):
  """The static count of retired instructions (the watchdog pre-check) against what the golden
  model retires, for kernels with lane loops, reduce loops, unrolled and MXU code."""
  import numpy as np
  from tinygrad import Tensor, dtypes
  from tinytpu.backend import device, runner
  seen = []
  call = device.TinyTPUProgram.__call__
  def spy(self, *a, **kw):
    before = runner.STATS["instructions"]
    out = call(self, *a, **kw)
    seen.append((self.name, self.kernel.executed, runner.STATS["instructions"] - before))
    return out
  monkeypatch.setattr(device.TinyTPUProgram, "__call__", spy)
  x = np.arange(6 * 70, dtype=np.int32).reshape(6, 70) % 50 - 25
  t = Tensor(x, device="TINYTPU")
  (t.sum(1) + t.max(0).sum()).realize()
  (t.cast(dtypes.int8).cast(dtypes.int32) @ t.T.cast(dtypes.int8).cast(dtypes.int32)).realize()
  (Tensor(np.ones(5000, np.float32), device="TINYTPU") * 3).realize()
  assert len(seen) >= 3
  for name, est, retired in seen:
    assert est == retired, (name, est, retired)


def test_watchdog_refuses_before_running(monkeypatch):
  import numpy as np
  from tinygrad import Tensor
  monkeypatch.setenv("TINYTPU_WATCHDOG", "50")
  with pytest.raises(RuntimeError, match=r"TINYTPU kernel .*: retires \d+ instructions .* more than the watchdog allows \(50 cycles"):
    (Tensor(np.ones((40, 40), np.float32), device="TINYTPU").sum(1) * 2).realize()
