"""The two-core chip's golden model (golden/chip.py) and chip bundle format (tinytpu/chipbundle.py):
handoffs through HBM with SIG.SEND/SIG.WAIT, the interleaving-independent semantics, deadlocks,
no_such_core, and the bundle checks. The programs are shared with tests/rtl/test_chip.py."""
import numpy as np
import pytest

from tinytpu import chipbundle
from tinytpu.chipbundle import ChipDeadlock
from tinytpu.config import DEFAULT
from tinytpu.golden import chip as golden_chip
from tinytpu.golden import interp
from tinytpu.records import BundleError

N = DEFAULT.N


def tile(vals) -> str:
  return " ".join(str(int(v)) for v in np.asarray(vals).reshape(-1))


def chip_text(core0: str, core1: str, shared: str = "", run: int = 20000) -> str:
  asm = lambda src: "\n".join("asm " + ln.strip() for ln in src.strip().splitlines() if ln.strip())
  return f"tinytpu-chip 1 N={N} VMEM_TILES=1024 PSUM_TILES=64\n{shared.strip()}\ncore 0\n{asm(core0)}\ncore 1\n{asm(core1)}\nrun {run}\n"


X0 = np.arange(N * N, dtype=np.int64).reshape(N, N) - 5

# producer/consumer: core 0 doubles HBM tile 0 into HBM tile 1 and signals; core 1 waits, reads it,
# adds 3 and writes HBM tile 2
PRODUCER = """
DMA.IN [s0 + 0], [s0 + 0], 1
VLD v1, [s0 + 0]
VADD v1, v1, v1
VST v1, [s0 + 1]
DMA.OUT [s0 + 1], [s0 + 1], 1
LI s1, 1
SIG.SEND s1, 0
HALT
"""
CONSUMER = """
SIG.WAIT 0, 1
DMA.IN [s0 + 5], [s0 + 1], 1
VLD v2, [s0 + 5]
VFILL v3, 3
VADD v2, v2, v3
VST v2, [s0 + 6]
DMA.OUT [s0 + 2], [s0 + 6], 1
HALT
"""


def producer_consumer() -> str:
  return chip_text(PRODUCER, CONSUMER, f"hbm 0 {tile(X0)}\ndump hbm 0 3") + ""


# ping-pong: ROUNDS times core 0 adds 1 and hands the tile to core 1 (HBM 10, flag 0), core 1
# doubles it and hands it back (HBM 11, flag 1)
ROUNDS = 4
PING = f"""
LI s1, 1
VLD v1, [s0 + 0]
VFILL v2, 1
LOOPI {ROUNDS}, end
VADD v1, v1, v2
VST v1, [s0 + 1]
DMA.OUT [s0 + 10], [s0 + 1], 1
SIG.SEND s1, 0
SIG.WAIT 1, 1
DMA.IN [s0 + 2], [s0 + 11], 1
VLD v1, [s0 + 2]
end:
VST v1, [s0 + 3]
HALT
"""
PONG = f"""
LOOPI {ROUNDS}, end
SIG.WAIT 0, 1
DMA.IN [s0 + 0], [s0 + 10], 1
VLD v1, [s0 + 0]
VADD v1, v1, v1
VST v1, [s0 + 1]
DMA.OUT [s0 + 11], [s0 + 1], 1
SIG.SEND s0, 1
end:
HALT
"""


def ping_pong() -> str:
  t = chip_text(PING, PONG, "dump hbm 10 2")
  return t.replace("core 0\n", f"core 0\nvmem 0 {tile(X0)}\ndump vmem 3 1\n", 1)


def ping_pong_expected() -> np.ndarray:
  x = X0.copy()
  for _ in range(ROUNDS): x = (x + 1) * 2
  return x


def _core1_first(ms):
  """Run both machines to the end in another interleaving: core 1 first, one instruction budget more each round."""
  done, budget = [None, None], 1
  while None in done:
    for k in (1, 0):
      if done[k] is None:
        st = ms[k].run(ms[k].retired + budget)
        if st[0] in ("ok", "trap"):
          done[k] = st
    budget += 1
  return done

def test_producer_consumer_golden():
  r = golden_chip.run(chipbundle.parse(producer_consumer()))
  assert [c.status for c in r.cores] == ["ok", "ok"] and r.deadlock is None
  hbm = r.dumps[0][2].view(np.int32)
  np.testing.assert_array_equal(hbm[1], X0 * 2)
  np.testing.assert_array_equal(hbm[2], X0 * 2 + 3)


def test_ping_pong_golden():
  r = golden_chip.run(chipbundle.parse(ping_pong()))
  assert [c.status for c in r.cores] == ["ok", "ok"]
  np.testing.assert_array_equal(r.cores[0].dumps[0][2].view(np.int32), ping_pong_expected())


def test_schedule_does_not_change_the_result():
  """The semantics are interleaving-independent: running core 1 first (a reversed chip) gives the
  same end state for a correctly synchronised program."""
  cb = chipbundle.parse(ping_pong())
  a = golden_chip.run(cb)
  ms = golden_chip.machines(cb)
  # a different schedule: core 1 first, one instruction budget at a time
  _core1_first(ms)
  got = ms[0].dump("vmem", 3, 1)[0][2]
  np.testing.assert_array_equal(got, a.cores[0].dumps[0][2])


DEADLOCK0 = "SIG.WAIT 0, 1\nHALT"
DEADLOCK1 = "NOP\nSIG.WAIT 2, 1\nHALT"


def test_deadlock_both_wait():
  cb = chipbundle.parse(chip_text(DEADLOCK0, DEADLOCK1))
  r = golden_chip.run(cb)
  assert [(c.status, c.pc) for c in r.cores] == [("timeout", 0), ("timeout", 1)]
  assert r.deadlock == "core 0 waits at pc 0 (SIG.WAIT 0, 1); core 1 waits at pc 1 (SIG.WAIT 2, 1)"
  with pytest.raises(ChipDeadlock, match=r"core 0 waits at pc 0 .*core 1 waits at pc 1"):
    golden_chip.run(cb, check=True)


def test_deadlock_waiting_on_a_halted_core():
  r = golden_chip.run(chipbundle.parse(chip_text("LI s1, 1\nSIG.SEND s1, 0\nHALT", "SIG.WAIT 0, 2\nHALT")))
  assert r.cores[0].status == "ok" and (r.cores[1].status, r.cores[1].pc) == ("timeout", 0)
  assert r.deadlock == "core 0 halted; core 1 waits at pc 0 (SIG.WAIT 0, 2)"


def test_no_such_core_trap():
  r = golden_chip.run(chipbundle.parse(chip_text("LI s1, 2\nSIG.SEND s1, 0\nHALT", "HALT")))
  assert (r.cores[0].status, r.cores[0].trap, r.cores[0].pc) == ("trap", "no_such_core", 1)
  assert r.cores[1].status == "ok" and r.deadlock is None


def test_single_core_signals_itself_or_traps():
  from tinytpu import bundle
  b = bundle.parse(f"tinytpu-bundle 1 N={N} VMEM_TILES=1024 PSUM_TILES=64\nasm SIG.SEND s0, 3\nasm SIG.WAIT 3, 1\nasm SIG.WAIT 3, 1\nasm HALT\nrun 100\n")
  r = interp.run(b)
  assert (r.status, r.pc) == ("timeout", 2)  # one signal to itself, the second wait never passes
  b = bundle.parse(f"tinytpu-bundle 1 N={N} VMEM_TILES=1024 PSUM_TILES=64\nasm LI s1, 1\nasm SIG.SEND s1, 0\nasm HALT\nrun 100\n")
  r = interp.run(b)
  assert (r.status, r.trap, r.pc) == ("trap", "no_such_core", 1)


BAD = [
  (chip_text("HALT", "HALT").replace("core 1\n", "core 1\nasm HALT\ncore 2\n"), 7, "core 2: the chip has 2 cores (0..1)"),
  (chip_text("HALT", "HALT").replace("core 1\nasm HALT\n", ""), 5, "missing `core 1` section (the chip runs 2 programs)"),
  (chip_text("HALT", "HALT").replace("core 1\n", "core 0\n"), 5, "core 0: a second section (the first on line 3)"),
  (chip_text("HALT", "HALT").replace("core 1\n", f"core 1\nhbm 0 {tile(X0)}\n"), 6, "`hbm` inside the section of core 1: HBM is shared, its records come before the first `core`"),
  (chip_text("HALT", "HALT", "vmem 0 " + tile(X0)), 2, "record `vmem` before the first `core` section (only HBM records are shared)"),
  (chip_text("HALT", "HALT").replace("asm HALT\ncore 1", "asm BOGUS\ncore 1"), 4, "unknown mnemonic 'BOGUS'"),
  (f"tinytpu-bundle 1 N={N}\nrun 5\n", 1, "a chip bundle starts with `tinytpu-chip 1 N=...` (got 'tinytpu-bundle'; a `tinytpu-bundle` is a single-core bundle)"),
]


@pytest.mark.parametrize("text,line,why", BAD, ids=[w[:30] for _, _, w in BAD])
def test_bad_chip_bundles(text, line, why):
  with pytest.raises(BundleError) as e:
    chipbundle.parse(text)
  assert (e.value.line, e.value.why) == (line, why)


def test_write_parse_round_trip():
  cb = chipbundle.parse(ping_pong())
  again = chipbundle.parse(chipbundle.write(cb))
  assert again.cores == cb.cores and again.dumps == cb.dumps and again.max_cycles == cb.max_cycles
  r = golden_chip.run(cb)
  back = chipbundle.parse_chip_result(chipbundle.format_chip_result(r))
  assert [c.status for c in back.cores] == ["ok", "ok"] and back.cycles == r.cycles
  np.testing.assert_array_equal(back.dumps[0][2], r.dumps[0][2])


# ---------------------------------------------------------------------------------------------
# the SparseCore on node 3 (doc/chip.md "The SparseCore on node 3"): lookups from either core, from
# both at once, a trap on one core, a handoff of pooled rows; the programs are shared with
# tests/rtl/test_chip.py
EMB_TBASE, EMB_ROWS, EMB_W, EMB_BAG = 100, 12, 2, 4
EMB_IDX = (200, 210)  # each core's index list (2 tiles: 32 indices)
EMB_DST = (300, 400)  # each core's pooled rows: 8 int bags then 4 fp bags, 2 tiles each


def emb_table() -> np.ndarray:
  """(rows, width*N*N) float32 values (their bits serve the int bags too)."""
  return np.random.default_rng(33).standard_normal((EMB_ROWS, EMB_W * N * N)).astype(np.float32)


def emb_indices(core: int, bad: int | None = None) -> np.ndarray:
  x = np.random.default_rng(40 + core).integers(0, EMB_ROWS, 2 * N * N)
  if bad is not None: x[bad] = EMB_ROWS  # one index out of range
  return x


def emb_prog(core: int) -> str:
  """EMB.CFG, an int lookup of 8 bags and an fp one of 4 on the same list, then a DMA.IN of the
  pooled rows (it waits for this core's SparseCore work) into VMEM 0..23."""
  return f"""LI s1, {EMB_TBASE}
LI s2, {EMB_ROWS}
EMB.CFG s1, s2, {EMB_W}, {EMB_BAG}
LI s3, {EMB_IDX[core]}
LI s4, {EMB_DST[core]}
EMB.BAG [s4 + 0], [s3 + 0], 8
EMB.FBAG [s4 + 16], [s3 + 0], 4
DMA.IN [s0 + 0], [s4 + 0], 24
HALT"""


EMB_BAG_PC = 5  # the EMB.BAG's pc in emb_prog


def emb_chip(progs: tuple[str, str], bad: tuple = (None, None), dumps_vmem: bool = True, run: int = 20000) -> str:
  t = emb_table().view(np.uint32).reshape(EMB_ROWS * EMB_W, N * N)
  shared = [f"hbm {EMB_TBASE + i} {tile(t[i])}" for i in range(len(t))]
  for k in (0, 1):
    ind = emb_indices(k, bad[k]).reshape(2, N * N)
    shared += [f"hbm {EMB_IDX[k] + i} {tile(ind[i])}" for i in range(2)]
  shared += [f"dump hbm {EMB_DST[k]} 24" for k in (0, 1)]
  text = chip_text(progs[0], progs[1], "\n".join(shared), run=run)
  if dumps_vmem:
    text = text.replace("core 0\n", "core 0\ndump vmem 0 24\n").replace("core 1\n", "core 1\ndump vmem 0 24\n")
  return text


def emb_expected(core: int) -> np.ndarray:
  """The 24 pooled tiles of emb_prog(core) from numpy: 8 int32 bags (wrapping sums of the rows'
  bits) then 4 fp32 bags (a left fold in index order), (24, N*N) uint32."""
  t = emb_table()
  ti = t.view(np.uint32).astype(np.uint64)
  x = emb_indices(core)
  ints = [(ti[x[b * EMB_BAG:(b + 1) * EMB_BAG]].sum(0) & 0xFFFFFFFF).astype(np.uint32) for b in range(8)]
  fps = []
  for b in range(4):
    s = t[x[b * EMB_BAG]].copy()
    for j in range(1, EMB_BAG): s = (s + t[x[b * EMB_BAG + j]]).astype(np.float32)
    fps.append(s.view(np.uint32))
  return np.concatenate(ints + fps).reshape(24, N * N)


def vmem_tiles(dumps) -> np.ndarray:
  """A core's `dump vmem 0 24` as (24, N*N) uint32 (one dump record a tile)."""
  return np.stack([np.asarray(d[2]).reshape(N * N) for d in dumps]).view(np.uint32)


def emb_handoff() -> str:
  """Core 0 pools its rows and signals; core 1 waits and copies core 0's pooled rows into VMEM 0..23
  (the SIG.SEND's release covers the SparseCore's writes)."""
  sender = emb_prog(0).replace("DMA.IN [s0 + 0], [s4 + 0], 24\n", "LI s5, 1\nSIG.SEND s5, 0\n")
  receiver = f"SIG.WAIT 0, 1\nLI s4, {EMB_DST[0]}\nDMA.IN [s0 + 0], [s4 + 0], 24\nHALT"
  return emb_chip((sender, receiver))


def test_emb_on_either_core_golden():
  """A lookup on core k of the chip is the single-core lookup: numpy's pooled rows in HBM and VMEM."""
  for k in (0, 1):
    progs = ["HALT", "HALT"]
    progs[k] = emb_prog(k)
    r = golden_chip.run(chipbundle.parse(emb_chip(tuple(progs))))
    assert [c.status for c in r.cores] == ["ok", "ok"]
    np.testing.assert_array_equal(r.dumps[k][2].reshape(24, N * N), emb_expected(k))
    np.testing.assert_array_equal(vmem_tiles(r.cores[k].dumps), emb_expected(k))


def test_emb_both_cores_and_schedule_golden():
  """Both cores look up at once (one table, their own lists and destinations), in the default
  schedule and in core 1 first, one instruction at a time: the same end state."""
  cb = chipbundle.parse(emb_chip((emb_prog(0), emb_prog(1))))
  a = golden_chip.run(cb)
  for k in (0, 1):
    np.testing.assert_array_equal(a.dumps[k][2].reshape(24, N * N), emb_expected(k))
  ms = golden_chip.machines(cb)
  _core1_first(ms)
  for k in (0, 1):
    np.testing.assert_array_equal(vmem_tiles(ms[k].dump("vmem", 0, 24)), vmem_tiles(a.cores[k].dumps))


def test_emb_trap_and_handoff_golden():
  r = golden_chip.run(chipbundle.parse(emb_chip((emb_prog(0), emb_prog(1)), bad=(None, 17))))
  assert (r.cores[1].status, r.cores[1].trap, r.cores[1].pc) == ("trap", "emb_index_out_of_range", EMB_BAG_PC)
  assert r.cores[0].status == "ok" and not r.dumps[1][2].any()  # a trapping lookup writes nothing
  r = golden_chip.run(chipbundle.parse(emb_handoff()))
  np.testing.assert_array_equal(vmem_tiles(r.cores[1].dumps), emb_expected(0))
