"""The two-core chip on the RTL (rtl/chip.sv through rtl/sim/chip/sim_chip.sv, doc/chip.md): handoffs
through HBM with SIG.SEND/SIG.WAIT (producer/consumer, ping-pong), both cores on HBM at once, the
no_such_core trap, the deadlock report, bundle rejection by the C++ reader, the zero-load latency
of a remote HBM read (exact), the SparseCore on node 3 (lookups from either core, from both at
once, a trap on one core, a handoff of pooled rows), and a random two-core lockstep (EMB items
included) against golden/chip.py. Expected values
come from numpy and the golden model, never from the RTL."""
import numpy as np
import pytest

from tinytpu import bundle, chipbundle, chipsim, cosim, isa, randdma, randprog
from tinytpu.chipbundle import ChipBundle, ChipDeadlock
from tinytpu.config import DEFAULT
from tinytpu.golden import chip as golden_chip
from tinytpu.records import BundleError, diff_results

from tests.golden.test_chip import (BAD, DEADLOCK0, DEADLOCK1, EMB_BAG_PC, X0, chip_text, emb_chip, emb_expected,
                                    emb_handoff, emb_prog, ping_pong, ping_pong_expected, producer_consumer, tile,
                                    vmem_tiles)


def same_as_golden(cb: ChipBundle):
  rtl, gold = chipsim.run_chip(cb), golden_chip.run(cb)
  for k, (a, b) in enumerate(zip(rtl.cores, gold.cores)):
    assert not diff_results(a, b), f"core {k}: {diff_results(a, b)}"
  for (ka, aa, va), (kb, ab, vb) in zip(rtl.dumps, gold.dumps):
    assert (ka, aa) == (kb, ab)
    np.testing.assert_array_equal(va, vb)
  return rtl, gold


def test_producer_consumer():
  rtl, _ = same_as_golden(chipbundle.parse(producer_consumer()))
  hbm = rtl.dumps[0][2].view(np.int32)
  np.testing.assert_array_equal(hbm[2], X0 * 2 + 3)
  assert rtl.cores[1].perf["stall_sig"] > 0  # the consumer really waited for the producer


def test_ping_pong():
  rtl, _ = same_as_golden(chipbundle.parse(ping_pong()))
  np.testing.assert_array_equal(rtl.cores[0].dumps[0][2].view(np.int32), ping_pong_expected())
  assert rtl.cycles == max(c.cycles for c in rtl.cores)


HAMMER_T = 96  # tiles each core moves each way


def hammer(core: int, idle_other: bool = False) -> str:
  """Core `core` copies HAMMER_T tiles of its own HBM range into VMEM, adds 1, writes them back to
  another range; the other core does the same on its own ranges (or only halts)."""
  def prog(k):
    src, dst = 1000 * (k + 1), 1000 * (k + 1) + 500
    return f"""LI s1, {src}
LI s2, {dst}
DMA.IN [s0 + 0], [s1 + 0], {HAMMER_T}
VFILL v2, 1
LOOPI {HAMMER_T}, end
VLD v1, [s3 + 0]
VADD v1, v1, v2
VST v1, [s3 + 0]
SADDI s3, s3, 1
end:
DMA.OUT [s2 + 0], [s0 + 0], {HAMMER_T}
DMA.WAIT
HALT"""
  rng = np.random.default_rng(17)
  data = {k: rng.integers(-1000, 1000, size=(HAMMER_T, DEFAULT.N, DEFAULT.N)) for k in (0, 1)}
  shared = "\n".join(f"hbm {1000 * (k + 1) + i} {tile(data[k][i])}" for k in (0, 1) for i in range(HAMMER_T))
  shared += "".join(f"\ndump hbm {1000 * (k + 1) + 500} {HAMMER_T}" for k in (0, 1))
  progs = [prog(0), prog(1)]
  if idle_other: progs[1 - core] = "HALT"
  return chip_text(progs[0], progs[1], shared, run=200000), data


def test_both_cores_hammer_hbm():
  text, data = hammer(0)
  rtl, _ = same_as_golden(chipbundle.parse(text))
  for k in (0, 1):
    np.testing.assert_array_equal(rtl.dumps[k][2].view(np.int32), data[k] + 1)
  alone_text, _ = hammer(0, idle_other=True)
  alone = chipsim.run_chip(chipbundle.parse(alone_text))
  # contention: with both cores on the one HBM port the same copy takes longer than alone
  assert rtl.cores[0].cycles > alone.cores[0].cycles
  assert rtl.cycles > alone.cycles
  print(f"hammer: alone {alone.cores[0].cycles} cycles, both {rtl.cores[0].cycles} / {rtl.cores[1].cycles}")


def test_no_such_core_trap():
  rtl, _ = same_as_golden(chipbundle.parse(chip_text("LI s1, 2\nSIG.SEND s1, 0\nHALT", "NOP\nHALT")))
  assert (rtl.cores[0].status, rtl.cores[0].trap, rtl.cores[0].pc) == ("trap", "no_such_core", 1)
  assert rtl.cores[1].status == "ok"


def test_deadlock_is_reported_with_both_pcs():
  cb = chipbundle.parse(chip_text(DEADLOCK0, DEADLOCK1, run=3000))
  rtl, gold = chipsim.run_chip(cb), golden_chip.run(cb)
  assert [(c.status, c.pc) for c in rtl.cores] == [("timeout", 0), ("timeout", 1)]
  assert rtl.deadlock == gold.deadlock == "core 0 waits at pc 0 (SIG.WAIT 0, 1); core 1 waits at pc 1 (SIG.WAIT 2, 1)"
  assert rtl.cores[0].perf["stall_sig"] > 2900  # the watchdog stopped it, it did not hang
  with pytest.raises(ChipDeadlock, match="core 0 waits at pc 0.*core 1 waits at pc 1"):
    chipsim.run_chip(cb, check=True)
  # one core waiting on a core that halted
  cb = chipbundle.parse(chip_text("LI s1, 1\nSIG.SEND s1, 0\nHALT", "SIG.WAIT 0, 2\nHALT", run=3000))
  assert chipsim.run_chip(cb).deadlock == golden_chip.run(cb).deadlock == "core 0 halted; core 1 waits at pc 0 (SIG.WAIT 0, 2)"


@pytest.mark.parametrize("text,line,why", [b for b in BAD if "asm" not in b[2] and "BOGUS" not in b[0]],
                         ids=lambda x: str(x)[:30] if isinstance(x, str) else None)
def test_cpp_reader_rejects_like_python(text, line, why):
  """The C++ reader of the chip binary gives the Python reader's line and message (a third core
  named, a missing or repeated section, HBM inside a section)."""
  text = "\n".join(ln.replace("asm HALT", "inst 0x0200000000000000") for ln in text.splitlines()) + "\n"
  rc, out, err = chipsim.run_raw(text)
  assert rc == 2 and err.strip() == f"error line {line}: {why}", (out, err)
  with pytest.raises(BundleError):
    chipbundle.parse(text)


def chip_extra(c, prog: str, shared: str = "", dumps: str = "") -> tuple[int, list]:
  """Extra cycles of `prog` on each chip core (the other core halts) over the single-core sim_top,
  both of configuration c: (the extra, equal for both cores; each chip run's result)."""
  body = "\n".join("asm " + x for x in prog.splitlines())
  single = cosim.run_bundle(bundle.parse(f"{bundle.header(c)}\n{shared}\n{body}\nrun 20000\n"), c)
  assert single.status == "ok"
  out, runs = [], []
  for k in (0, 1):
    progs = ["HALT", "HALT"]
    progs[k] = prog
    text = chip_text(*progs, shared + dumps, run=20000)
    r = chipsim.run_chip(chipbundle.parse(text.replace(bundle.header(DEFAULT)[len("tinytpu-bundle"):], bundle.header(c)[len("tinytpu-bundle"):]), c))
    assert r.cores[k].status == "ok"
    out.append(r.cores[k].cycles - single.cycles)
    runs.append(r)
  assert out[0] == out[1], out
  return out[0], runs


def round_trip_extra(c) -> int:
  """doc/chip.md: what the rings add to an HBM access's round trip."""
  return 3 + c.NOC_NODES * (c.NOC_LINK_LATENCY + 1)


def remote_read_extra(c, tiles: int = 1) -> tuple[int, int]:
  """(measured, predicted) extra cycles of a `tiles`-tile DMA.IN + DMA.WAIT + HALT on each chip core
  over the single-core sim_top of configuration c."""
  got, _ = chip_extra(c, f"DMA.IN [s0 + 0], [s0 + 0], {tiles}\nDMA.WAIT\nHALT")
  return got, round_trip_extra(c)


def test_remote_read_latency():
  """doc/chip.md: a read's round trip on the chip is HBM_LATENCY + 3 + NOC_NODES*(NOC_LINK_LATENCY+1)
  cycles, so a one-tile DMA.IN + DMA.WAIT + HALT takes exactly that much longer than on the
  single-core sim_top (HBM_LATENCY): 15 cycles more at the defaults, for either core."""
  got, want = remote_read_extra(DEFAULT)
  assert got == want == 15


@pytest.mark.nightly
def test_remote_read_latency_other_timing():
  """The same rule at another HBM latency and one-cycle links (two more builds)."""
  from tinytpu.config import Config
  got, want = remote_read_extra(Config(HBM_LATENCY=37, NOC_LINK_LATENCY=1))
  assert got == want == 11


# the chip sizes each core's DMA tag FIFO for the round trip over the rings (HBM_LATENCY + the
# extra), so a long read still moves a tile a cycle: the extra stays the one-tile figure. At the
# defaults a power of two hides a wrong size (100 + 2 and 100 + 15 + 2 both give 128 entries); at
# HBM_LATENCY 29 with one-cycle links the HBM alone gives 32 entries against a 40-cycle round trip
BANDWIDTH_TIMING = {"HBM_LATENCY": 29, "NOC_LINK_LATENCY": 1}


def test_remote_read_bandwidth():
  """A 64-tile DMA.IN on either chip core takes exactly the one-tile extra more than on sim_top."""
  got, want = remote_read_extra(DEFAULT, 64)
  assert got == want == 15


@pytest.mark.nightly
def test_remote_read_bandwidth_other_timing():
  """The same at an HBM latency where the tag FIFO's size depends on the extra (two more builds):
  29 + 2 -> 32 entries for the HBM alone, 29 + 11 + 2 -> 64 for the round trip over the rings."""
  from tinytpu.config import Config
  got, want = remote_read_extra(Config(**BANDWIDTH_TIMING), 64)
  assert got == want == 11


# the SparseCore's tag FIFO is sized for the round trip over the rings too (chip.sv), so a long
# gather still reads a row tile a cycle; one bag of 64 indices (the 4 index tiles IDEPTH buffers)
# of two-tile rows: 128 row reads, two pooled tiles, then a DMA.IN of them
GATHER_ROWS, GATHER_W, GATHER_BAG = 64, 2, 64


def gather_extra(c) -> tuple[int, int]:
  """(measured, predicted) extra cycles of the gather on each chip core over sim_top. doc/chip.md:
  five dependent HBM steps (the check pass, the index fetch, the rows, the writes' acknowledges,
  the DMA.IN) each a round trip's extra longer, plus the arbiter's cycle; the pooled tiles equal numpy's."""
  rng = np.random.default_rng(44)
  table = rng.integers(-2**31, 2**31, (GATHER_ROWS * GATHER_W, DEFAULT.N * DEFAULT.N))
  idx = rng.integers(0, GATHER_ROWS, GATHER_BAG)
  shared = "\n".join([f"hbm {1000 + i} {tile(t)}" for i, t in enumerate(table)] +
                     [f"hbm {3000 + i} {tile(t)}" for i, t in enumerate(idx.reshape(-1, DEFAULT.N * DEFAULT.N))])
  prog = f"""LI s1, 1000
LI s2, {GATHER_ROWS}
EMB.CFG s1, s2, {GATHER_W}, {GATHER_BAG}
LI s3, 3000
LI s4, 4000
EMB.BAG [s4 + 0], [s3 + 0], 1
DMA.IN [s0 + 0], [s4 + 0], {GATHER_W}
HALT"""
  got, runs = chip_extra(c, prog, shared, f"\ndump hbm 4000 {GATHER_W}")
  rows = table.reshape(GATHER_ROWS, GATHER_W * DEFAULT.N * DEFAULT.N)[idx]
  want = rows.astype(np.int64).sum(0).astype(np.uint32).reshape(GATHER_W, -1)  # wraps like int32
  for r in runs:
    np.testing.assert_array_equal(np.asarray(r.dumps[0][2]).reshape(GATHER_W, -1).astype(np.uint32), want)
  return got, 5 * round_trip_extra(c) + 1


def test_sparsecore_gather_bandwidth():
  """A 128-row-tile gather on either core takes exactly five round trips' extra + 1 more than on sim_top."""
  got, want = gather_extra(DEFAULT)
  assert got == want == 76


@pytest.mark.nightly
def test_sparsecore_gather_bandwidth_other_timing():
  """The same at BANDWIDTH_TIMING, where the SparseCore's tag FIFO (1 << clog2(latency + 2)) holds 32
  entries for the HBM alone against a 40-cycle round trip, 64 when sized for the rings."""
  from tinytpu.config import Config
  got, want = gather_extra(Config(**BANDWIDTH_TIMING))
  assert got == want == 56

# ---------------------------------------------------------------------------------------------
# random two-core lockstep
HANDOFF = 1 << 19  # the handoff tile (or one a window further when a random window holds it)


def random_chip(seed: int) -> ChipBundle:
  """Two random programs of tinytpu.randprog (DMA and EMB items on, no traps on purpose: each core's
  lookups use tables, index lists and destinations in its own window) on disjoint HBM windows,
  then a synchronised handoff: core 0 writes its VMEM tile 0 to HBM[HANDOFF] and signals, core 1
  waits and reads it into its VMEM tile 0 (dumped). Racy by design would be a bug of the test: the
  windows are disjoint and the handoff tile is outside both."""
  c = DEFAULT
  p0 = randprog.program(seed, c, traps=False, dma=True, emb=True)
  w0 = range(p0.hbm[0], p0.hbm[0] + randdma.HW)
  j = 0
  while True:
    p1 = randprog.program(seed * 1000 + 7 + j, c, traps=False, dma=True, emb=True)
    w1 = range(p1.hbm[0], p1.hbm[0] + randdma.HW)
    if not (set(w0) & set(w1)): break
    j += 1
  handoff = next(h for h in range(HANDOFF, HANDOFF + 3 * randdma.HW, randdma.HW) if h not in w0 and h not in w1)
  b0, b1 = p0.bundle(), p1.bundle()
  sink0, sink1 = b0.program[-2], b1.program[-2]  # LI s15, sink before HALT
  w = lambda mn, **v: randprog.word(mn, c.N, **v)
  one = w("DMA.CFG", hstride=0, rows=1, vstride=0)  # the random program may leave a multi-row shape
  h0 = [one, w("LI", sd=15, imm=handoff), w("DMA.OUT", dst=0, dst_base=15, src=0, src_base=0, T=1), w("LI", sd=15, imm=1),
        w("SIG.SEND", core=15, flag=0), sink0, w("HALT")]
  h1 = [w("SIG.WAIT", flag=0, count=1), one, w("LI", sd=15, imm=handoff), w("DMA.IN", dst=0, dst_base=0, src=0, src_base=15, T=1),
        sink1, w("HALT")]
  cores = []
  for b, h in ((b0, h0), (b1, h1)):
    cores.append(bundle.Bundle(config=c, vmem=b.vmem, psum=b.psum, sregs=b.sregs, program=b.program[:-2] + h,
                               dumps=[d for d in b.dumps if d[0] != "hbm"], max_cycles=b.max_cycles))
  hbm = [b0.hbm[0], b1.hbm[0]]
  dumps = [d for b in (b0, b1) for d in b.dumps if d[0] == "hbm"] + [("hbm", handoff, 1)]
  return ChipBundle(config=c, cores=cores, hbm=sorted(hbm, key=lambda r: r[0]), dumps=dumps,
                    max_cycles=2 * (b0.max_cycles + b1.max_cycles) + 20000)


def lockstep(seed: int):
  cb = random_chip(seed)
  rtl, gold = same_as_golden(cb)
  assert [c.status for c in gold.cores] == ["ok", "ok"], gold.cores
  np.testing.assert_array_equal(rtl.cores[1].dumps[0][2], gold.cores[0].dumps[0][2])  # the handoff arrived


EMB_SEEDS = (5, 6)  # seeds whose programs look up on both cores (test_random_lockstep_has_lookups)


@pytest.mark.parametrize("seed", [*range(3), *EMB_SEEDS])
def test_random_two_core_lockstep(seed):
  lockstep(seed)


@pytest.mark.nightly
@pytest.mark.parametrize("seed", range(3, 40))
def test_random_two_core_lockstep_long(seed):
  lockstep(seed)


def test_random_lockstep_has_lookups():
  """The lockstep's programs do reach the SparseCore from both cores (randemb items) in EMB_SEEDS."""
  for seed in EMB_SEEDS:
    names = [[isa.decode(w, DEFAULT.N)[0].mnemonic for w in b.program] for b in random_chip(seed).cores]
    assert all(any(n in ("EMB.BAG", "EMB.FBAG") for n in ns) for ns in names), (seed, names)


# ---------------------------------------------------------------------------------------------
# the SparseCore on node 3
def test_emb_from_either_core():
  """A lookup (int and fp) from core 0, then from core 1, the other core idle: RTL = golden = numpy;
  the cycles against the same program on the single-core co-sim (sim_top: the SparseCore next to
  the core) are printed."""
  b = bundle.parse(f"{bundle.header(DEFAULT)}\n" + "\n".join("asm " + x for x in emb_prog(0).splitlines()) + "\n" +
                   "\n".join(ln for ln in emb_chip(("HALT", "HALT"), dumps_vmem=False).splitlines() if ln.startswith("hbm ")) +
                   "\ndump vmem 0 24\nrun 20000\n")
  single = cosim.run_bundle(b)
  assert single.status == "ok"
  np.testing.assert_array_equal(vmem_tiles(single.dumps), emb_expected(0))
  for k in (0, 1):
    progs = ["HALT", "HALT"]
    progs[k] = emb_prog(k)
    rtl, _ = same_as_golden(chipbundle.parse(emb_chip(tuple(progs))))
    np.testing.assert_array_equal(vmem_tiles(rtl.cores[k].dumps), emb_expected(k))
    np.testing.assert_array_equal(rtl.dumps[k][2].reshape(24, -1), emb_expected(k))
    print(f"emb core {k}: chip {rtl.cores[k].cycles} cycles, single-core {single.cycles}")
    # each of the program's dependent HBM steps (per lookup: check, index fetch, rows, write acks;
    # then the DMA.IN) is a chip round trip, RT_EXTRA cycles longer than sim_top's: 152 cycles more
    rt_extra = 3 + DEFAULT.NOC_NODES * (DEFAULT.NOC_LINK_LATENCY + 1)
    assert single.cycles < rtl.cores[k].cycles <= single.cycles + 10 * (rt_extra + 1)


def test_emb_both_cores_contend():
  """Both cores look up at once: one lookup at a time on the SparseCore, the other core's waits at
  its EMB.BAG (stall_unit), every check answer and busy goes to its own core, DMAs wait for their
  own core's lookups; results equal golden and numpy."""
  rtl, _ = same_as_golden(chipbundle.parse(emb_chip((emb_prog(0), emb_prog(1)))))
  alone = chipsim.run_chip(chipbundle.parse(emb_chip((emb_prog(0), "HALT"))))
  for k in (0, 1):
    np.testing.assert_array_equal(vmem_tiles(rtl.cores[k].dumps), emb_expected(k))
  assert max(c.cycles for c in rtl.cores) > alone.cores[0].cycles + 100  # the lookups took turns
  print(f"emb contention: alone {alone.cores[0].cycles}, both {rtl.cores[0].cycles} / {rtl.cores[1].cycles}")


def test_emb_trap_on_one_core():
  """Core 1's list holds an index out of range: core 1 traps emb_index_out_of_range at its EMB.BAG
  and writes nothing; core 0's lookups, at the same time, complete."""
  rtl, _ = same_as_golden(chipbundle.parse(emb_chip((emb_prog(0), emb_prog(1)), bad=(None, 17))))
  assert (rtl.cores[1].status, rtl.cores[1].trap, rtl.cores[1].pc) == ("trap", "emb_index_out_of_range", EMB_BAG_PC)
  assert rtl.cores[0].status == "ok" and not rtl.dumps[1][2].any()
  np.testing.assert_array_equal(vmem_tiles(rtl.cores[0].dumps), emb_expected(0))
  rtl, _ = same_as_golden(chipbundle.parse(emb_chip((emb_prog(0), emb_prog(1)), bad=(3, None))))
  assert (rtl.cores[0].status, rtl.cores[0].trap, rtl.cores[0].pc) == ("trap", "emb_index_out_of_range", EMB_BAG_PC)
  assert rtl.cores[1].status == "ok"


def test_emb_handoff():
  """Core 0 pools rows and signals core 1, which copies them: SIG.SEND waits for the sender's
  lookups (release), so the receiver sees every pooled row."""
  rtl, _ = same_as_golden(chipbundle.parse(emb_handoff()))
  np.testing.assert_array_equal(vmem_tiles(rtl.cores[1].dumps), emb_expected(0))


def test_single_core_cosim_signals_itself_and_traps_other_cores():
  """sim_top (one core): SIG.SEND to core 0 reaches the core's own flag, to core 1 traps no_such_core;
  a wait no signal satisfies is the watchdog's timeout at its pc. RTL equals golden."""
  from tinytpu.golden import interp
  h = bundle.header(DEFAULT)
  cases = [("SIG.SEND s0, 3\nSIG.SEND s0, 3\nSIG.WAIT 3, 2\nLI s2, 7\nHALT", ("ok", None, None)),
           ("LI s1, 1\nSIG.SEND s1, 3\nHALT", ("trap", "no_such_core", 1)),
           ("SIG.SEND s0, 1\nSIG.WAIT 1, 1\nSIG.WAIT 1, 1\nHALT", ("timeout", None, 2))]
  for prog, want in cases:
    b = bundle.parse(h + "\n" + "\n".join("asm " + x for x in prog.splitlines()) + "\ndump sreg\nrun 500\n")
    rtl, gold = cosim.run_bundle(b), interp.run(b)
    assert (rtl.status, rtl.trap, rtl.pc) == (gold.status, gold.trap, gold.pc) == want, prog
    if want[0] == "ok":
      assert not diff_results(rtl, gold)


def test_signal_latency():
  """doc/chip.md: a signal sent in cycle t (the SIG.SEND's issue, the endpoint injects it at once) is
  counted at core j from t + 2 + H*(NOC_LINK_LATENCY+1), H hops from the sender (4 to itself). A
  SIG.SEND at cycle 1 and a waiting SIG.WAIT; HALT on the receiver then run 5 + H*(L+1) cycles."""
  L = DEFAULT.NOC_LINK_LATENCY
  cases = [(("LI s1, 1\nSIG.SEND s1, 0\nHALT", "SIG.WAIT 0, 1\nHALT"), 1, 1),      # core 0 -> 1: one hop
           (("SIG.WAIT 0, 1\nHALT", "NOP\nSIG.SEND s0, 0\nHALT"), 0, 3),          # core 1 -> 0: three hops
           (("NOP\nSIG.SEND s0, 0\nSIG.WAIT 0, 1\nHALT", "HALT"), 0, 4)]          # core 0 -> itself: the whole ring
  for progs, k, hops in cases:
    r = chipsim.run_chip(chipbundle.parse(chip_text(*progs)))
    assert [c.status for c in r.cores] == ["ok", "ok"]
    assert r.cores[k].cycles == 5 + hops * (L + 1), (progs, r.cores[k].cycles)
