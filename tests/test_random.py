"""Random programs (tinytpu/randprog.py): RTL and golden in lockstep on many seeds, the shrinker on a
fake mismatch, and what the generator covers (every family, dynamically: taken and not-taken branches,
LBREAK, skipped and 4-deep loops, MXU work overlapping conflicting and independent vector work).

  TINYTPU_SEED_BASE=<first seed> SEEDS=<count> pytest tests/test_random.py
"""
import os
import pathlib
import subprocess
import sys

import numpy as np
import pytest

from tinytpu import bundle, isa, randcheck, randprog, shrink
from tinytpu.config import DEFAULT
from tinytpu.golden import interp

BASE = int(os.environ.get("TINYTPU_SEED_BASE", "1000"))
SEEDS = int(os.environ.get("SEEDS", "50"))
COVER = range(BASE, BASE + 50)  # the seeds the lockstep test runs by default


def mnemonics(words):
  """The decoded words; a word that traps on purpose (illegal, reserved bits set) has no mnemonic."""
  out = []
  for w in words:
    try:
      out.append(isa.decode(w, DEFAULT.N))
    except isa.IllegalInstruction:
      pass
  return out


# ---------------------------------------------------------------------------------------------
def test_probe_finds_every_op_alike():
  """`randcheck --probe`: each VPU function, XLU op and gather alone on random operands agrees
  between RTL and golden (RTL_MISSING_VPU is empty); each probe program holds the op it names."""
  from tinytpu import cosim
  cosim.build(DEFAULT)
  for mn in ("VFSQRT", "VADD", *randprog.XLU, *randprog.ELEM):
    assert mn in {i.mnemonic for i, _ in mnemonics(randprog.single_op(mn, 3).words)}, mn
  for bad in ("HALT", "VNOPE"):
    with pytest.raises(ValueError, match=f"single_op: '{bad}' is not"):
      randprog.single_op(bad)
  try:
    assert randcheck.probe(DEFAULT, seed=3) == []
  finally:
    randcheck.close_servers()


def test_lockstep_rtl_golden():
  from tinytpu import cosim
  cosim.build(DEFAULT)
  try:
    fails = [r for seed in range(BASE, BASE + SEEDS) if (r := randcheck.check(seed, DEFAULT)) is not None]
  finally:
    randcheck.close_servers()
  assert not fails, f"{len(fails)}/{SEEDS} seeds differ:\n\n" + "\n\n".join(fails)


def test_command_line_runs_seeds_and_refuses_bad_arguments():
  """`python -m tinytpu.randcheck` (what the nightly's random groups and every report's reproduce
  line run): seeds in lockstep with exit 0, and a bad --include refused before any simulation."""
  from tinytpu import cosim
  cosim.build(DEFAULT)
  root = pathlib.Path(__file__).resolve().parent.parent
  run = lambda *a: subprocess.run([sys.executable, "-m", "tinytpu.randcheck", *a], cwd=root, capture_output=True, text=True, timeout=900)  # noqa: E731
  r = run("--seed", str(BASE), "--seeds", "2")
  assert r.returncode == 0 and f"seed {BASE}: ok" in r.stdout and "2/2 seeds agree" in r.stdout, r.stdout + r.stderr
  r = run("--include", "FNOPE")
  assert r.returncode == 2 and "--include: not VPU functions: FNOPE" in r.stderr, r.stderr
  line = randcheck.repro(BASE, DEFAULT, randprog.LENGTH, True)
  assert line.startswith(".venv/bin/python -m tinytpu.randcheck --seed ") and "--trace out.vcd" in line


def test_per_instruction_lockstep():
  """The RTL's retire trace equals the golden model's instruction by instruction (tinytpu/lockstep.py:
  registers and every VMEM/PSUM tile's values) on a short run of seeds, and a planted divergence
  (one golden register value or tile write changed) is found at its instruction."""
  from tinytpu import lockstep
  from tinytpu.golden import trace as gtrace
  bad = {seed: d for seed in range(BASE, BASE + 12) if (d := lockstep.divergence(randprog.generate(seed, DEFAULT)))}
  assert not bad, "\n".join(f"seed {s}: " + "\n  ".join(d) for s, d in bad.items())
  # the planted changes need a vector, a scalar, a VMEM and a PSUM tile write: the first seed of
  # COVER whose program has them all (the nightly reseeds BASE)
  vregs, sregs = {f"v{x}" for x in range(16)}, {f"s{x}" for x in range(1, 15)}
  def plantable(gold):
    w = lambda pred, lo=0: any(pred(x[0]) for r in gold[lo:] for x in r.writes)
    tile = lambda mem: any(r.mnemonic != "DMA.IN" and any(x[0].startswith(mem) for x in r.writes) for r in gold)
    return w(vregs.__contains__, 11) and w(sregs.__contains__) and tile("vmem[") and tile("psum[")
  full = lambda seed: lockstep._full_dumps(randprog.generate(seed, DEFAULT, traps=False))
  seed = next((s for s in COVER if plantable(gtrace.trace(full(s)))), None)
  assert seed is not None, f"no seed in {COVER} writes a vector and a scalar register and a VMEM and a PSUM tile"
  b = full(seed)
  gold, rtl = gtrace.trace(b), lockstep.rtl_trace(b)
  assert lockstep.compare(b, gold, rtl, timeout=False) == []
  k = next(i for i, r in enumerate(gold) if i > 10 and any(w[0] in vregs for w in r.writes))
  j = next(j for j, w in enumerate(gold[k].writes) if w[0] in vregs)
  gold[k].writes[j] = (gold[k].writes[j][0], gold[k].writes[j][1] ^ 1)
  rep = lockstep.compare(b, gold, rtl, timeout=False)
  assert rep and rep[0].startswith(f"first divergence at retired instruction {k} (pc {gold[k].pc}"), rep
  k2 = next(i for i, r in enumerate(gold) if any(w[0] in sregs for w in r.writes))
  gold = gtrace.trace(b)
  j2 = next(j for j, w in enumerate(gold[k2].writes) if w[0] in sregs)
  gold[k2].writes[j2] = (gold[k2].writes[j2][0], gold[k2].writes[j2][1] + 1)
  rep = lockstep.compare(b, gold, rtl, timeout=False)
  assert rep and rep[0].startswith(f"first divergence at retired instruction {k2} ") and "scalar write" in rep[0], rep
  # memory tiles: a planted change of one golden VMEM or PSUM tile write (not a DMA's) is found at its instruction
  for mem in ("vmem[", "psum["):
    gold = gtrace.trace(b)
    k3 = next((i for i, r in enumerate(gold) if r.mnemonic != "DMA.IN" and any(w[0].startswith(mem) for w in r.writes)), None)
    assert k3 is not None, f"seed {seed} writes no {mem}...] tile"
    j3 = next(j for j, w in enumerate(gold[k3].writes) if w[0].startswith(mem))
    gold[k3].writes[j3] = (gold[k3].writes[j3][0], gold[k3].writes[j3][1] ^ 1)
    rep = lockstep.compare(b, gold, rtl, timeout=False)
    assert rep and rep[0].startswith(f"first divergence at retired instruction {k3} ") and gold[k3].writes[j3][0] in rep[0], rep


def test_core_coverage_from_the_retire_trace(tmp_path, monkeypatch):
  """tinytpu/corecov.py bins retires, stalls, pairs, outcomes, loop depths and MXU hazard distances
  of RTL runs into the `core` coverage document: the retired bins hit are exactly the instructions
  the golden model retires on the same programs, and so are the outcomes."""
  import json
  from tinytpu import corecov
  from tinytpu.golden import trace as gtrace
  monkeypatch.setenv("TINYTPU_COVERAGE_DIR", str(tmp_path))
  seeds = range(BASE, BASE + 10)
  cov = corecov.run(seeds, DEFAULT)
  g = cov.groups
  retired, outcomes = set(), set()
  for seed in seeds:
    b = randprog.generate(seed, DEFAULT, dma=randprog.DMA)
    retired |= {r.mnemonic for r in gtrace.trace(b)}
    r = interp.run(b)
    outcomes.add(r.trap if r.status == "trap" else r.status)
  hit = lambda name: {k for k, n in g[name].hits.items() if n}
  assert hit("retired") == {g["retired"].key(m) for m in retired} & set(g["retired"].hits), cov.report()
  assert hit("outcome") == {g["outcome"].key(o) for o in outcomes}, cov.report()
  assert g["pair"].pct() == 100 and g["loop_depth"].pct() == 100 and g["retired"].pct() > 50, cov.report()
  assert g["datapath_x_stall"].hits[g["datapath_x_stall"].key(("vpu", "raw"))] > 0, cov.report()
  assert not any(x.illegal for x in g.values()), {n: x.illegal for n, x in g.items() if x.illegal}
  doc = json.loads(pathlib.Path(cov.write("t")).read_text())
  assert doc["unit"] == "core" and set(doc["groups"]) == set(g)


# ---------------------------------------------------------------------------------------------
def trace(b: bundle.Bundle):
  """Run the golden model and record what executed: (pc, mnemonic, operands, sregs before, outcome)."""
  m = interp.Machine(b.config)
  m.load(b)
  log = []
  def wrap(pc, f):
    try:
      ins, o = isa.decode(m.program[pc], m.N)
    except isa.IllegalInstruction:  # a trap on purpose: it runs as it is
      return f
    def g(n):
      before = list(m.sregs)
      r = f(n)
      log.append((pc, ins.mnemonic, o, before, r, len(m.loops)))
      return r
    return g
  m._fns = [wrap(pc, f) for pc, f in enumerate(m._fns)]
  status = m.run(b.max_cycles)
  return status, log, m.retired


def addr(o, s, name="addr"):
  return interp.s32(s[o[name + "_base"]]) + o[name]


# the core-to-core signals are generated by the two-core random lockstep (tests/rtl/test_chip.py,
# random_chip: a SIG.SEND/SIG.WAIT handoff between two randprog programs) and their trap by the
# chip's directed tests; the single-core generator leaves them out so every seed keeps its program
CHIP_ONLY_INSTRS = {"SIG.SEND", "SIG.WAIT"}
CHIP_ONLY_TRAPS = {"no_such_core"}


def test_generator_covers_every_family():
  seen, taken, not_taken, hits = set(), set(), set(), dict.fromkeys(
    ["lbreak", "loop_skipped", "depth4", "mxu_conflict", "mxu_independent"], 0)
  tacc = set()
  for seed in COVER:
    b = randprog.generate(seed, DEFAULT, dma=True, traps=False)  # every family, no trap on purpose
    for ins, o in mnemonics(b.program):
      seen.add(ins.mnemonic)
      if ins.mnemonic in ("MMUL", "MMUL.BF16"): tacc.add((ins.mnemonic, o["T"], o["acc"]))
    status, log, retired = trace(b)
    assert status == ("ok", None, None), f"seed {seed}: {status}"
    assert retired * 20 < b.max_cycles, f"seed {seed}: the watchdog margin is too thin"
    last_mmul = None  # (index in log, src range, dst range)
    for i, (pc, mn, o, s, r, depth) in enumerate(log):
      if mn in ("BEQ", "BNE", "BLT", "BGE"):
        (taken if r is not None else not_taken).add(mn)
      hits["lbreak"] += mn == "LBREAK"
      hits["loop_skipped"] += mn in ("LOOP", "LOOPI") and r != pc + 1
      hits["depth4"] += depth == isa.LOOP_DEPTH
      if mn in ("MMUL", "MMUL.BF16"):
        a, p = addr(o, s, "src"), addr(o, s, "dst")
        last_mmul = (i, range(a, a + o["T"]), range(p, p + o["T"]))
      elif last_mmul and i - last_mmul[0] <= 4:
        _, src, dst = last_mmul
        if mn in ("VST", "MLW") and addr(o, s) in src or (mn in ("PST", "PLD") or mn.startswith("PEPI")) and addr(o, s) in dst:
          hits["mxu_conflict"] += 1
        if isa.BY_MNEMONIC[mn].unit in ("vpu", "xlu"):
          hits["mxu_independent"] += 1
  want = {i.mnemonic for i in isa.INSTRS} - {"V" + f for f in randprog.RTL_MISSING_VPU} - {"HALT"}
  want -= CHIP_ONLY_INSTRS
  assert not want - seen, f"never generated: {sorted(want - seen)}"
  assert taken == not_taken == {"BEQ", "BNE", "BLT", "BGE"}, (taken, not_taken)
  assert {(T, acc) for _, T, acc in tacc} == {(T, acc) for T in range(1, 9) for acc in (0, 1)}, sorted(tacc)
  assert {(mn, acc) for mn, _, acc in tacc} == {(mn, acc) for mn in ("MMUL", "MMUL.BF16") for acc in (0, 1)}, sorted(tacc)
  assert all(v > 0 for v in hits.values()), hits


def test_timing_values_never_reach_a_dump():
  """RDCYCLE and the timing RDPERF counters give the RTL's cycle-dependent values: overwrite them with
  garbage in the golden model and every dump must stay the same."""
  rng = np.random.default_rng(0)
  for seed in COVER:
    b = randprog.generate(seed, DEFAULT)
    ref = interp.run(b)
    m = interp.Machine(b.config)
    m.load(b)
    for pc, w in enumerate(m.program):
      try:
        ins, o = isa.decode(w, m.N)
      except isa.IllegalInstruction:  # a trap on purpose, not a timing read
        continue
      timing = ins.mnemonic == "RDCYCLE" or ins.mnemonic == "RDPERF" and o["counter"] != isa.PERF["retired"]
      if timing and o["sd"]:
        m._fns[pc] = lambda n, d=o["sd"]: m.sregs.__setitem__(d, int(rng.integers(0, 1 << 32)))
    st = m.run(b.max_cycles)
    dumps = [x for k, a, c in b.dumps for x in m.dump(k, a, c)]
    got = bundle.Result(dumps, m.retired, ref.perf, *st)
    assert not bundle.diff_results(ref, got), f"seed {seed}: {bundle.diff_results(ref, got)[:4]}"


def test_deterministic_and_legal_text():
  for seed in (1, 2):
    a, b = randprog.generate(seed), randprog.generate(seed)
    assert a == b
    assert bundle.parse(bundle.write(a), DEFAULT) == a  # the bundle text the RTL gets reads back the same
  assert randprog.generate(1) != randprog.generate(2)


def test_generator_reaches_every_trap_and_range():
  """With traps on (the default), a share of the programs end in every trap code and in a timeout;
  far tiles reach the first and last tiles of VMEM and PSUM; backward-branch loops run and s0 is
  written (and stays 0)."""
  traps, far, back, s0 = set(), set(), 0, 0
  for seed in range(BASE, BASE + 500):
    p = randprog.program(seed, DEFAULT, dma=True)
    b = p.bundle()
    r = interp.run(b)
    traps.add(r.trap if r.status == "trap" else r.status)
    far |= {(sp, a) for sp, a in p.far}
    status, log, _ = trace(b)
    for i, (pc, mn, o, s, res, depth) in enumerate(log):
      back += mn == "BNE" and res is not None and res < pc
      s0 += o.get("sd") == 0 and isa.BY_MNEMONIC[mn].datapath == "salu"
  want = set(isa.TRAP_CODES) - CHIP_ONLY_TRAPS  # every trap code, ok and timeout among them
  assert want <= traps, f"never reached: {sorted(want - traps)}"
  for space, size in (("vmem", DEFAULT.VMEM_TILES), ("psum", DEFAULT.PSUM_TILES)):
    assert (space, size - 1) in far, f"the last {space} tile is never touched"
  assert back > 100 and s0 > 50, (back, s0)


# ---------------------------------------------------------------------------------------------
def has(p, *mns):
  got = {ins.mnemonic for ins, _ in mnemonics(p.words())}
  return all(m in got for m in mns)


@pytest.mark.parametrize("want", [("VFDIV", "MMUL"), ("LBREAK",), ("XSHUF", "VSCATTER")])
def test_shrinker_minimises_a_fake_mismatch(want):
  seed = next(s for s in COVER if has(randprog.program(s), *want))
  big = randprog.program(seed)
  calls = []
  def bad(p):
    calls.append(1)
    return has(p, *want)
  small = shrink.shrink(big, bad)
  assert has(small, *want)
  assert len(small.words()) < len(big.words()) // 3
  # the minimised program is still legal and terminating, and holds only what the predicate needs
  r = interp.run(small.bundle())
  assert r.status == "ok", (r.status, r.trap, r.pc, small.tasm())
  body = [ins.mnemonic for ins, _ in mnemonics(small.words())]
  assert len(body) - len(small.vdump) - 2 <= 4 * len(want) + 4, small.tasm()
  assert not small.vdump and not small.vmem and not small.psum and not small.sregs
  assert len(calls) < 3000


def test_shrinker_keeps_a_data_dependent_mismatch():
  """A predicate on the golden result itself (a dumped lane value), like a real RTL mismatch."""
  big = randprog.program(BASE)
  ref = interp.run(big.bundle())
  kind, a, tile = next(d for d in ref.dumps if d[0] == "vmem" and d[1] >= randprog.VW and np.any(d[2]))
  lane = tuple(np.argwhere(tile)[0])
  def bad(p):
    r = interp.run(p.bundle())
    return r.status == "ok" and any(k == kind and x == a and t[lane] == tile[lane] for k, x, t in r.dumps)
  small = shrink.shrink(big, bad)
  assert bad(small) and len(small.words()) < len(big.words())
