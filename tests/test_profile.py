"""The profiler (tinytpu/profile.py, doc/profiler.md) on the RTL co-sim: the per-cycle events add up
to the co-sim's final counters, the instructions it attributes to each cycle are the ones the golden
model executes (per pc), MXU rows and stalls land on the right instructions, a cycle that retires
two instructions (dual issue) is attributed to pc and pc+1, the Perfetto trace and the HTML view are
well formed, the CLI's exit codes, and the backend's TINYTPU_PROFILE hook."""
import collections
import json
import os

import numpy as np
import pytest

from tinytpu import asm, bundle, cosim, isa, profile
from tinytpu.config import DEFAULT
from tinytpu.golden import interp

N = DEFAULT.N
RNG = np.random.default_rng(7)


@pytest.fixture(scope="module", autouse=True)
def _built():
  cosim.build(DEFAULT)


def tile(lo=-100, hi=100) -> str:
  return " ".join(str(int(x)) for x in RNG.integers(lo, hi, size=N * N))


def golden_pc_counts(b: bundle.Bundle) -> tuple[bundle.Result, collections.Counter]:
  """The golden model's result and how often it executed each pc (every predecoded closure
  wrapped with a counter)."""
  m = interp.Machine(b.config)
  m.load(b)
  counts = collections.Counter()
  def counted(f, pc):
    def g(n):
      counts[pc] += 1
      return f(n)
    return g
  m._fns = [counted(f, pc) for pc, f in enumerate(m._fns)]
  status, trap, pc = m.run(b.max_cycles)
  if sum(counts.values()) > m.retired: counts[pc] -= 1  # the trapping instruction ran but did not retire
  dumps = [x for what, addr, count in b.dumps for x in m.dump(what, addr, count)]
  perf = {name: 0 for name, _ in isa.PERF_COUNTERS} | {"retired": m.retired}
  return bundle.Result(dumps=dumps, cycles=m.retired, perf=perf, status=status, trap=trap, pc=pc), counts


def run(tasm: str, name: str) -> tuple[profile.Profile, collections.Counter]:
  b = asm.assemble_bundle(tasm, DEFAULT)
  p = profile.profile_bundle(bundle.write(b), DEFAULT, name)
  gold, counts = golden_pc_counts(b)
  assert not bundle.diff_results(p.result, gold), "the RTL computed something else than the golden model"
  assert p.check() == [], p.check()                     # events == final counters, per-cycle classes agree
  assert p.totals() == p.result.perf                    # the same, spelled out
  assert p.pc_counts() == counts                        # every retired instruction attributed to its pc
  assert p.totals()["retired"] == gold.perf["retired"]
  # every cycle is exactly one of issue, one stall cause, drain
  issue_cycles = len({i.cycle for i in p.issues})
  assert issue_cycles + len(p.stall) + len(p.drain) == p.cycles == p.result.cycles
  return p, counts


def mix_of(p: profile.Profile, counts: collections.Counter) -> collections.Counter:
  """The instruction mix the program text and the golden counts imply."""
  want = collections.Counter()
  for pc, n in counts.items():
    want[isa.decode(p.program[pc], N)[0].mnemonic] += n
  return want


GEMM = f"""
  LI s1, 10
  MLW [s1 + 0]
  MMUL [s0 + 0], [s0 + 0], 4, 0
  MLW [s1 + 1]
  MMUL [s0 + 4], [s0 + 4], 2, 1
  FENCE
  PLD v1, [s0 + 0]
  PLD v2, [s0 + 5]
  VADD v3, v1, v2
  VST v3, [s0 + 20]
  HALT
{chr(10).join(f".vmem {k} {tile()}" for k in range(6))}
.vmem 10 {tile()}
.vmem 11 {tile()}
.dump vmem 20 1
.dump psum 0 6
.run 10000
"""

VPU_LOOP = f"""
  LOOPI 5, end
    VLD v1, [s0 + 0]
    VLD v2, [s0 + 1]
    VFSQRT v3, v1
    VFADD v4, v3, v2
    VADD v5, v4, v1
end: VST v5, [s0 + 2]
  HALT
.vmem 0 {tile(0, 1 << 30)}
.vmem 1 {tile(0, 1 << 30)}
.dump vmem 2 1
.run 10000
"""


def test_gemm_fence():
  p, counts = run(GEMM, "gemm")
  assert p.mix() == mix_of(p, counts)
  # the MXU streams T*N activation rows per MMUL, one per busy cycle, each attributed to its MMUL
  rows = collections.Counter(pc for _, pc in p.mxu)
  assert rows == {2: 4 * N, 4: 2 * N}
  assert p.busy()["MXU"] == p.totals()["mxu_busy"] == 6 * N
  # FENCE (pc 5) waits for both MMULs: every fence stall is there, and there are some
  fence = [pc for _, pc, cause in p.stall if cause == "stall_fence"]
  assert fence and set(fence) == {5}
  # the MXU rows stream while the SXU sits in the FENCE, before the PLDs issue
  pld = min(i.cycle for i in p.issues if i.pc == 6)
  assert max(t for t, _ in p.mxu) < pld
  rep = profile.report(p)
  assert "MMUL" in rep and "stall_fence" in rep and "WARNING" not in rep


def test_vpu_loop_raw():
  p, counts = run(VPU_LOOP, "vpu_loop")
  assert p.mix() == mix_of(p, counts)
  assert p.mix()["VFSQRT"] == 5 and p.mix()["VST"] == 1 and p.mix()["LOOPI"] == 1
  # VFADD (pc 4) reads the 6-cycle VFSQRT's result: it waits on RAW in every iteration
  raw = collections.Counter(pc for _, pc, cause in p.stall if cause == "stall_raw")
  assert raw[4] >= 5
  assert set(raw) <= {2, 3, 4, 5, 6}  # only instructions with a producer in flight wait
  b = p.busy()
  assert b["VPU"] == 15 and b["VMEM"] == 11 and b["MXU"] == 0
  assert p.vpu_in_flight() == 5 * (isa.VPU_LATENCY["FSQRT"] + isa.VPU_LATENCY["FADD"] + isa.VPU_LATENCY["ADD"])


def test_trap_is_drain_and_timeout():
  p, _ = run("""
  VLD v1, [s0 + 0]
  LI s1, 100000
  VLD v2, [s1 + 0]
  HALT
.run 100
""", "trap")
  assert p.result.status == "trap" and p.result.trap == "vmem_out_of_range" and p.result.pc == 2
  assert [i.pc for i in p.issues] == [0, 1]
  # a timeout: the watchdog stops the capture mid-run, check() may differ but analysis works
  b = asm.assemble_bundle("l: JMP l\n.run 50", DEFAULT)
  t = profile.profile_bundle(bundle.write(b), DEFAULT, "spin")
  assert t.result.status == "timeout" and t.mix()["JMP"] >= 40


# a loop at the top of IMEM that runs for more than 2^17 cycles: the profiler's per-cycle capture
# holds over a long run and at pcs with their high bits set (the events' pc and cycle registers in
# sim_top, whose upper bits no short program reaches; the nightly's code coverage counts on it)
HIGH_PC = DEFAULT.IMEM_WORDS - 8
LONG_LOOP = "\n".join(["  JMP far", *["  NOP"] * (HIGH_PC - 1), """far:
  LOOPI 3, outer
    LOOPI 23000, inner
      SADDI s1, s1, 1
      SADDI s1, s1, 1
inner: NOP
outer: HALT
.dump vmem 0 1
.run 1000000
"""])


@pytest.mark.nightly
def test_long_run_at_high_pcs():
  p, counts = run(LONG_LOOP, "long_loop")
  assert p.result.status == "ok" and p.cycles > 1 << 17, p.cycles
  assert min(pc for pc in counts if pc) == HIGH_PC and max(counts) == DEFAULT.IMEM_WORDS - 3
  assert p.mix()["SADDI"] == 2 * 3 * 23000 and counts[HIGH_PC + 2] == 3 * 23000


def test_dual_issue_attribution():
  """A synthetic events table: cycle 1 retires two (pc 1 and, as a dual-issue SXU does, pc 2)."""
  prog = asm.assemble("VLD v1, [s0 + 0]\nVLD v2, [s0 + 1]\nVADD v3, v1, v1\nVST v3, [s0 + 2]\nHALT", DEFAULT.N)
  names = [n for n, _ in isa.PERF_COUNTERS]
  rows = [  # cycle, pc, deltas by name
    (0, 0, {"retired": 1, "mem_ops": 1}),
    (1, 1, {"retired": 2, "mem_ops": 1, "vpu_ops": 1}),
    (2, 3, {"stall_raw": 1}),
    (3, 3, {"retired": 2, "mem_ops": 1}),
    (4, 0, {}),
  ]
  ev = profile.Events(np.array([r[0] for r in rows]), np.array([r[1] for r in rows]),
                      np.array([[r[2].get(n, 0) for n in names] for r in rows]), names)
  tot = {n: int(sum(r[2].get(n, 0) for r in rows)) for n in names}
  res = bundle.Result(dumps=[], cycles=5, perf=tot, status="ok", trap=None, pc=None)
  p = profile.analyze("dual", prog, DEFAULT, res, ev)
  assert [(i.cycle, i.pc) for i in p.issues] == [(0, 0), (1, 1), (1, 2), (3, 3), (3, 4)]
  assert p.mix() == {"VLD": 2, "VADD": 1, "VST": 1, "HALT": 1} and p.paired() == 2
  assert p.check() == [] and "dual issue" in profile.report(p)
  assert p.busy()["VMEM"] == 3 and p.busy()["VPU"] == 1
  # a wrong attribution shows: claim the pair in cycle 1 moved no vpu_op
  ev.delta[1, names.index("vpu_ops")] = 0
  res.perf["vpu_ops"] = 0
  assert any(b.startswith("vpu_ops: cycle 1") for b in profile.analyze("dual", prog, DEFAULT, res, ev).check())


def test_trace_and_html(tmp_path):
  p, _ = run(GEMM, "gemm")
  tr = json.loads(json.dumps(profile.trace_events(p)))
  tracks = {e["tid"]: e["args"]["name"] for e in tr["traceEvents"] if e["ph"] == "M" and e["name"] == "thread_name"}
  assert {"SXU", "MXU", "VPU", "XLU", "VMEM"} <= set(tracks.values())
  spans = [e for e in tr["traceEvents"] if e["ph"] == "X"]
  assert spans and all(e["tid"] in tracks and e["dur"] >= 1 and 0 <= e["ts"] < p.cycles for e in spans)
  dur = collections.Counter()
  for e in spans: dur[tracks[e["tid"]]] += e["dur"]
  busy = p.busy()
  assert dur["MXU"] == busy["MXU"] == 6 * N
  assert dur["VMEM"] == busy["VMEM"] == 3 and dur["VPU"] == busy["VPU"] == 1
  assert dur["stall"] == sum(p.totals()[s] for s in profile.STALLS) + len(p.drain)
  page = profile.to_html(p)
  assert page.startswith("<!DOCTYPE html>") and "Summary" in page and "<svg" in page
  assert "http://" not in page and "https://" not in page and "<script" not in page and "<link" not in page
  assert f"<td>cycles</td><td>{p.cycles}</td>" in page and "stall_fence" in page


def test_cli(tmp_path, capsys):
  b = asm.assemble_bundle(VPU_LOOP, DEFAULT)
  good = tmp_path / "loop.txt"
  good.write_text(bundle.write(b))
  tr, page = tmp_path / "t.json", tmp_path / "v.html"
  assert profile.main([str(good), "--trace-events", str(tr), "--html", str(page)]) == 0
  out = capsys.readouterr().out
  assert "kernel loop" in out and "VFSQRT" in out and "stall_raw" in out
  assert json.loads(tr.read_text())["otherData"]["kernel"] == "loop" and "Summary" in page.read_text()
  # missing file, bad bundle, bad window: 2 and a message naming the problem
  assert profile.main([str(tmp_path / "nope.txt")]) == 2
  assert "nope.txt" in capsys.readouterr().err
  bad = tmp_path / "bad.txt"
  bad.write_text(bundle.write(b).replace("inst ", "inst zz", 1))
  assert profile.main([str(bad)]) == 2
  err = capsys.readouterr().err
  assert "bad.txt" in err and "line" in err
  assert profile.main([str(good), "--window", "a:b"]) == 2 and "--window" in capsys.readouterr().err
  # a trapping program: the report still comes out, exit 1
  trap = tmp_path / "trap.txt"
  trap.write_text(bundle.write(asm.assemble_bundle("LI s1, 100000\nVLD v2, [s1 + 0]\nHALT", DEFAULT)))
  assert profile.main([str(trap)]) == 1 and "vmem_out_of_range" in capsys.readouterr().out


def test_runner_hook(tmp_path, monkeypatch, capsys):
  Tensor = pytest.importorskip("tinygrad").Tensor
  from tinytpu.backend import runner
  monkeypatch.setenv("TINYTPU_KEEP", "")
  monkeypatch.setenv("TINYTPU_SIM", "rtl")
  monkeypatch.setenv("TINYTPU_PROFILE", str(tmp_path / "prof"))
  a = np.arange(16, dtype=np.int32)
  out = (Tensor(a, device="TINYTPU") + Tensor(a[::-1].copy(), device="TINYTPU")).numpy()
  np.testing.assert_array_equal(out, a + a[::-1])
  files = sorted(os.listdir(tmp_path / "prof"))
  stems = {f.rsplit(".", 1)[0] for f in files}
  assert len(stems) >= 1 and {f.rsplit(".", 1)[1] for f in files} == {"txt", "json", "html", "bundle"}
  stem = sorted(stems)[-1]
  assert stem[:4].isdigit() and "VADD" in (tmp_path / "prof" / f"{stem}.txt").read_text()
  # the golden model: a one-line note, nothing written
  monkeypatch.setenv("TINYTPU_SIM", "golden")
  monkeypatch.setenv("TINYTPU_PROFILE", str(tmp_path / "golden"))
  monkeypatch.setattr(runner, "_profile_noted", [])
  (Tensor(a, device="TINYTPU") * 3).numpy()
  assert "golden model" in capsys.readouterr().err and not (tmp_path / "golden").exists()
