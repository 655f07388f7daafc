"""The list scheduler keeps every dependence: random straight-line blocks (loads, stores, gathers,
scatters, VPU ops, scalar pointer updates over a few tiles) give the same VMEM and scalar registers
on the golden model before and after scheduling, and a block with independent chains interleaves."""
import collections

import numpy as np
import pytest

from tinytpu import asm
from tinytpu.backend import peephole, regalloc, schedule, vcode
from tinytpu.bundle import Bundle
from tinytpu.backend.vcode import SR, Ins, Label, Mem
from tinytpu.config import DEFAULT
from tinytpu.golden import interp

TILES = 6  # data tiles 0..5; spills go above


def _random_block(rng: np.random.Generator) -> list[tuple]:
  code, vals, s1 = [], [], 3
  def val():
    return vals[rng.integers(len(vals))]
  for _ in range(rng.integers(8, 40)):
    k = rng.integers(7) if vals else 0
    if k == 0:
      v = vcode.VT("ld")
      code.append(Ins("VLD", v, Mem(rng.integers(2), rng.integers(3))))  # s1 in [0, 3]
      vals.append(v)
    elif k == 1:
      code.append(Ins("VST", val(), Mem(rng.integers(2), rng.integers(3))))
    elif k == 2:
      v = vcode.VT("op")
      code.append(Ins(str(rng.choice(["VADD", "VSUB", "VMUL", "VXOR"])), v, val(), val()))
      vals.append(v)
    elif k == 3:  # element accesses: the lane values masked to addresses inside the data tiles
      idx, v = vcode.VT("idx"), vcode.VT("g")
      code.append(Ins("VAND", idx, val(), mask))
      code.append(Ins("VGATHER", v, idx, Mem(0, 0)))
      vals.append(v)
    elif k == 4:
      idx = vcode.VT("idx")
      code.append(Ins("VAND", idx, val(), mask))
      code.append(Ins("VSCATTER", val(), idx, ones, Mem(0, 0)))
    elif k == 5:
      step = int(rng.choice([d for d in (-1, 1) if 0 <= s1 + d <= 3]))
      code.append(Ins("SADDI", SR(1), SR(1), step))
      s1 += step
    else:
      v = vcode.VT("f")
      code.append(Ins("VFILL", v, int(rng.integers(-5, 5))))
      vals.append(v)
  return code


mask, ones = vcode.VT("mask"), vcode.VT("ones")


def _run(code: list[tuple], data: dict) -> tuple:
  prologue = [Ins("VFILL", mask, TILES * 16 - 1), Ins("VFILL", ones, 1), Ins("LI", SR(1), 3)]
  text, _, _ = regalloc.allocate(prologue + code + [Ins("HALT")], TILES + 2)
  b = Bundle(config=DEFAULT, program=asm.assemble(text, DEFAULT.N), vmem=dict(data),
             dumps=[("vmem", 0, TILES), ("sreg", 0, 16)])
  r = interp.run(b)
  assert r.status == "ok", (r.status, r.trap, text)
  return r.dumps


@pytest.mark.parametrize("seed", range(40))
def test_schedule_keeps_semantics(seed):
  rng = np.random.default_rng(seed)
  data = {t: rng.integers(0, 1 << 32, (4, 4), dtype=np.uint64).astype(np.uint32) for t in range(TILES)}
  code = _random_block(rng)
  got, exp = _run(schedule.schedule(code, regalloc.NPHYS), data), _run(code, data)
  for (k, a, x), (_, _, y) in zip(got, exp):
    np.testing.assert_array_equal(x, y, err_msg=f"{k} {a}")


def test_schedule_fills_load_bubbles():
  a, b, c, d = (vcode.VT(n) for n in "abcd")
  code = [Ins("VLD", a, Mem(0, 0)), Ins("VADD", b, a, a), Ins("VST", b, Mem(0, 2)),
          Ins("VLD", c, Mem(0, 1)), Ins("VADD", d, c, c), Ins("VST", d, Mem(0, 3))]
  out = [x.mn for x in schedule.schedule(code, regalloc.NPHYS)]
  assert out == ["VLD", "VLD", "VADD", "VADD", "VST", "VST"]
  # a store to the tile a later load reads stays before it
  code = [Ins("VST", b, Mem(1, 0)), Ins("VLD", c, Mem(2, 0))]
  assert schedule.schedule(code, regalloc.NPHYS) == code


def test_schedule_pairs_loads_and_stores():
  # the model's issue cycles (doc/core.md, dual issue): a load and a store pair in either order,
  # except a store then a load of the same tile; two loads or two stores never pair
  a, b, c = (vcode.VT(n) for n in "abc")
  def cycles(*code):
    out = schedule._block([Ins(*x) for x in code], collections.Counter(), regalloc.NPHYS)
    return [(cyc, x.mn) for cyc, x in out]
  assert cycles(("VLD", a, Mem(0, 0)), ("VST", b, Mem(0, 0))) == [(0, "VLD"), (0, "VST")]
  assert cycles(("VLD", a, Mem(0, 0)), ("VST", b, Mem(0, 1))) == [(0, "VLD"), (0, "VST")]
  assert cycles(("VST", b, Mem(0, 1)), ("VLD", a, Mem(0, 0))) == [(0, "VST"), (0, "VLD")]
  assert cycles(("VST", b, Mem(0, 0)), ("VLD", a, Mem(0, 0))) == [(0, "VST"), (1, "VLD")]
  assert cycles(("VST", b, Mem(1, 0)), ("VLD", a, Mem(2, 0))) == [(0, "VST"), (1, "VLD")]  # maybe one tile
  assert cycles(("VLD", a, Mem(0, 0)), ("VLD", c, Mem(0, 1))) == [(0, "VLD"), (1, "VLD")]
  assert cycles(("VST", b, Mem(0, 0)), ("VST", c, Mem(0, 1))) == [(0, "VST"), (1, "VST")]
  # a store of the loaded register waits for it (no bypass inside a pair)
  assert cycles(("VLD", a, Mem(0, 0)), ("VST", a, Mem(0, 1))) == [(0, "VLD"), (1, "VST")]
  # relu over 4 tiles: the stores are the class with the most left, so the VLD at 3 takes a store
  # as its mate rather than a VRELU: VLD | VLD + VRELU | VLD + VRELU | VLD + VST | VRELU + VST |
  # VRELU + VST | VST (the longest path alone would leave two stores unpaired: 8 cycles)
  code = []
  for t in range(4):
    x, y = vcode.VT("x"), vcode.VT("y")
    code += [("VLD", x, Mem(0, t)), ("VRELU", y, x), ("VST", y, Mem(0, 4 + t))]
  got = cycles(*code)
  assert max(c for c, _ in got) == 6 and len({c for c, _ in got}) == 7, got


def _acc_block(rng: np.random.Generator) -> list[tuple]:
  """Accumulator shapes the lowering emits (fill with 0, add, move back), some inside a loop."""
  accs = [vcode.VT(f"acc{i}") for i in range(2)]
  code = [Ins("VFILL", a, 0) for a in accs]
  def step():
    a, x, t = accs[rng.integers(2)], vcode.VT("x"), vcode.VT("t")
    out = [Ins("VLD", x, Mem(0, rng.integers(3))), Ins("VADD", t, a, x), Ins("VMOV", a, t)]
    if rng.integers(2):
      out.append(Ins("VFILL", accs[rng.integers(2)], int(rng.integers(2))))
    return out
  for _ in range(rng.integers(1, 4)):
    code += step()
  k, inv, t, acc2 = vcode.VT("k"), vcode.VT("inv"), vcode.VT("t"), vcode.VT("acc2")
  code += [Ins("VFILL", k, int(rng.integers(1, 9))), Ins("VFILL", acc2, 0)]
  # an invariant product inside the loop (hoisted in front of it), added into an accumulator
  code += [Ins("LOOPI", 3, "Lend")] + step() + [Ins("VMUL", inv, k, k), Ins("VADD", t, acc2, inv),
           Ins("VMOV", acc2, t)] + step() + [Label("Lend"), Ins("VST", acc2, Mem(0, 3))]
  for _ in range(rng.integers(1, 3)):
    code += step()
  return code + [Ins("VST", accs[0], Mem(0, 4)), Ins("VST", accs[1], Mem(0, 5))]


@pytest.mark.parametrize("seed", range(30))
def test_peephole_keeps_semantics(seed):
  rng = np.random.default_rng(100 + seed)
  data = {t: rng.integers(0, 1 << 32, (4, 4), dtype=np.uint64).astype(np.uint32) for t in range(TILES)}
  code = _acc_block(rng) + _random_block(rng)
  opt = peephole.optimize(code)
  assert len(opt) < len(code)  # the accumulator shapes always leave something to remove
  assert [c.mn for c in opt if isinstance(c, Ins)].index("VMUL") < [c.mn for c in opt if isinstance(c, Ins)].index("LOOPI")  # the invariant left the loop
  for (k, a, x), (_, _, y) in zip(_run(schedule.schedule(opt, regalloc.NPHYS), data), _run(code, data)):
    np.testing.assert_array_equal(x, y, err_msg=f"{k} {a}")
