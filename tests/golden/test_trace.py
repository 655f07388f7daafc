"""The golden retire trace (golden/trace.py): it agrees with the interpreter's run on random
programs, and records exactly what each instruction wrote."""
import numpy as np
import pytest

from tinytpu import asm, randprog
from tinytpu.golden import interp, trace


@pytest.mark.parametrize("seed", range(40))
def test_trace_agrees_with_run(seed):
  b = randprog.generate(seed, dma=True)
  r, t = interp.run(b), trace.trace(b)
  last = t[-1]
  assert [x.n for x in t] == list(range(len(t)))
  assert len(t) - (last.trap not in (None, "imem_out_of_range")) == r.cycles
  assert last.trap == r.trap
  if r.status == "trap":
    assert last.pc == r.pc


def _lines(src: str, **kw) -> list[str]:
  b = asm.assemble_bundle(src)
  for k, v in kw.items():
    getattr(b, k).update(v) if isinstance(getattr(b, k), dict) else getattr(b, k).extend(v)
  return trace.format_trace(trace.trace(b)).splitlines()


def test_writes_named():
  z = trace.tile_hash(np.zeros((4, 4), np.uint32))
  seven = trace.tile_hash(np.full((4, 4), 7, np.uint32))
  lines = _lines("""
    LI s1, 7
    LI s0, 9
    VSPLAT v2, s1
    VST v2, [s0 + 3]
    VST v2, [s0 + 3]
    VZERO v3
    VST v3, [s0 + 4]
    HALT
  """)
  assert lines == [
    "0 0 LI s1=0x7",
    "1 1 LI",                           # s0 is never written
    f"2 2 VSPLAT v2={seven:#x}",
    f"3 3 VST vmem[3]={seven:#x}",
    "4 4 VST",                          # the same value again: the tile did not change
    f"5 5 VZERO v3={z:#x}",
    "6 6 VST",                          # zero onto a zero tile
    "7 7 HALT"]


def test_dma_and_mmul_tiles():
  lines = _lines("""
    LI s1, 100
    DMA.IN [s0 + 2], [s1 + 0], 2
    MLW [s0 + 2]
    MMUL [s0 + 1], [s0 + 2], 2, 0
    DMA.OUT [s1 + 8], [s0 + 2], 1
    HALT
  """, hbm=[(100, np.arange(32, dtype=np.uint32).reshape(2, 4, 4) + 1)])
  assert lines[1].startswith("1 1 DMA.IN vmem[2]=") and "vmem[3]=" in lines[1]
  assert lines[2] == "2 2 MLW"
  assert lines[3].startswith("3 3 MMUL psum[1]=") and "psum[2]=" in lines[3]
  assert lines[4].startswith("4 4 DMA.OUT hbm[108]=")


def test_trap_ends_the_trace():
  lines = _lines("LI s1, 5000\nVLD v1, [s1 + 0]\nHALT")
  assert lines[-1] == "1 1 VLD trap=vmem_out_of_range"
  lines = _lines("LI s1, 1\nJMP 5")
  assert lines[-1] == "1 1 JMP trap=imem_out_of_range"
