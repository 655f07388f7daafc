"""The profiler (doc/profiler.md): where the cycles of one kernel go, from the hardware performance
counters of the RTL co-simulation sampled every cycle.

`tinytpu-sim --events out.tsv` writes one line per cycle the core runs: the cycle, the pc the SXU
issued from (or stalled on: its pc_o, the first instruction of the cycle) and the delta of every
counter of isa.PERF_COUNTERS in that cycle. A cycle that retires k instructions issued pc, pc+1, ..
pc+k-1 (k = 2 on a dual-issue SXU, whose second slot is always pc+1). From that table and the
program this module derives, per kernel:

  - the instruction mix by mnemonic and by unit (the ISA table's unit column),
  - busy cycles per unit, stall cycles by cause, drain cycles, IPC,
  - a text report, a Chrome/Perfetto trace (`--trace-events`) and a self-contained HTML pipeline view.

Every total is a sum of the per-cycle deltas. check() compares the totals with the final counters
the co-sim reports, and the instructions attributed to every cycle with that cycle's vpu_ops,
xlu_ops and mem_ops deltas (so a wrong pc attribution shows).

  python -m tinytpu profile bundle.txt [--trace-events out.json] [--html out.html] [--window A:B]
  TINYTPU_PROFILE=dir (backend/runner.py): one report, trace and HTML per tinygrad kernel
"""
from __future__ import annotations

import argparse
import collections
import dataclasses
import html
import json
import os
import pathlib
import sys
import tempfile

import numpy as np

from tinytpu import bundle, isa
from tinytpu.config import Config

COUNTERS = [name for name, _ in isa.PERF_COUNTERS]
STALLS = [name for name in COUNTERS if name.startswith("stall_")]
UNITS = list(dict.fromkeys(i.unit.upper() for i in isa.INSTRS))  # the ISA table's units, in table order
TRACKS = ["SXU", "VPU", "XLU", "VMEM", "MXU cmd", "MXU", "DMA", "EMB", "stall"]  # rows of the trace and the HTML view
DRAIN = "drain"  # a cycle that neither issued nor stalled: after HALT or a trap, waiting for background units
WINDOW = 2000    # cycles the HTML view draws by default
# which instructions the class counters count (the ISA table's Instr.perf, decoded the same way by rtl/sxu.sv)
COUNTED = isa.PERF_COUNTED


@dataclasses.dataclass
class Events:
  """The table of `tinytpu-sim --events`: one row per running cycle."""
  cycle: np.ndarray  # (C,) cycle number, 0 = the first cycle after start
  pc: np.ndarray     # (C,) pc issued from or stalled on (after HALT/a trap: the trap pc)
  delta: np.ndarray  # (C, counters) per-cycle increments, columns in `names` order
  names: list[str]

  def col(self, name: str) -> np.ndarray: return self.delta[:, self.names.index(name)]


def read_events(path: str | os.PathLike) -> Events:
  lines = pathlib.Path(path).read_text().split("\n", 1)
  head = lines[0].split("\t")
  if head[:2] != ["cycle", "pc"]:
    raise ValueError(f"{path}: not an events table (header {lines[0]!r})")
  # parsed in numpy, not as a list of Python strings: a long kernel has millions of cells
  a = np.fromstring(lines[1] if len(lines) > 1 else "", dtype=np.int64, sep=" ").reshape(-1, len(head))
  return Events(a[:, 0], a[:, 1], a[:, 2:], head[2:])


def capture(text: str, config: Config, keep: str | os.PathLike | None = None) -> tuple[bundle.Result, Events]:
  """Run bundle text on the RTL with event capture (the table is kept at `keep` if given); raises
  bundle.BundleError on a bad bundle."""
  from tinytpu import cosim
  with tempfile.TemporaryDirectory() as d:
    path = pathlib.Path(keep or pathlib.Path(d, "events.tsv"))
    res = cosim.run_bundle(text, config, events=path)
    return res, read_events(path)


@dataclasses.dataclass
class Issue:
  cycle: int
  pc: int
  ins: isa.Instr | None  # None: the word does not decode (it traps)
  text: str              # disassembly


@dataclasses.dataclass
class Profile:
  name: str
  config: Config
  program: list[int]
  result: bundle.Result
  events: Events
  issues: list[Issue]                      # every retired instruction, in order
  stall: list[tuple[int, int, str]]        # (cycle, pc, cause) of every stall cycle
  drain: list[int]                         # cycles that neither issued nor stalled
  mxu: list[tuple[int, int | None]]        # (cycle, pc of the MMUL streaming or None) of every MXU busy cycle

  @property
  def cycles(self) -> int: return len(self.events.cycle)

  def totals(self) -> dict[str, int]:
    return {n: int(self.events.delta[:, i].sum()) for i, n in enumerate(self.events.names)}

  def check(self) -> list[str]:
    """Differences between the events and the co-sim: the sums of the deltas against the final
    counters, the rows against the cycles, and per cycle the instructions attributed to it against
    its vpu_ops/xlu_ops/mem_ops deltas. None expected, except after a timeout (the watchdog stops
    the capture, not the core)."""
    bad = [f"{n}: events sum {v} != counter {self.result.perf.get(n)}" for n, v in self.totals().items() if v != self.result.perf.get(n)]
    if self.cycles != self.result.cycles:
      bad.append(f"cycles: {self.cycles} event rows != {self.result.cycles} cycles")
    ev = self.events
    for n, ops in COUNTED.items():
      if n not in ev.names: continue
      got = np.zeros(len(ev.cycle), np.int64)
      np.add.at(got, np.searchsorted(ev.cycle, [i.cycle for i in self.issues if i.ins is not None and i.ins.mnemonic in ops]).astype(np.int64), 1)
      if len(wrong := np.nonzero(got != ev.col(n))[0]):
        k = int(wrong[0])
        bad.append(f"{n}: cycle {ev.cycle[k]} (pc {ev.pc[k]}): the instructions attributed to it make {got[k]}, the counter moved {ev.col(n)[k]}")
    return bad

  def mix(self) -> collections.Counter:
    return collections.Counter(i.ins.mnemonic if i.ins else "(illegal)" for i in self.issues)

  def pc_counts(self) -> collections.Counter:
    """How often each pc retired."""
    return collections.Counter(i.pc for i in self.issues)

  def paired(self) -> int:
    """Cycles that retired more than one instruction (dual issue)."""
    return sum(1 for n in collections.Counter(i.cycle for i in self.issues).values() if n > 1)

  def unit_mix(self) -> collections.Counter:
    return collections.Counter(unit_of(i.ins) for i in self.issues)

  def busy(self) -> dict[str, int]:
    """Busy cycles per unit: SXU/VPU/XLU/VMEM = cycles in which an instruction of that unit issued
    (every unit accepts one instruction per cycle and the VPU is pipelined, so an op occupies its
    unit one cycle however long its latency); MXU = cycles it streamed activation rows (mxu_busy);
    DMA = cycles the DMA engine had a command queued or in flight (dma_busy)."""
    b = {u: len({i.cycle for i in self.issues if unit_of(i.ins) == u}) for u in UNITS}
    b["MXU"] = len(self.mxu)
    if "DMA" in b and "dma_busy" in self.events.names:
      b["DMA"] = int(np.count_nonzero(self.events.col("dma_busy")))
    return b

  def vpu_in_flight(self) -> int:
    """VPU op-cycles in flight: the sum of the latencies (ISA table) of the VPU instructions issued."""
    return sum(i.ins.latency for i in self.issues if unit_of(i.ins) == "VPU")


def unit_of(ins: isa.Instr | None) -> str:
  return ins.unit.upper() if ins else "SXU"


def _decode(word: int, N: int) -> tuple[isa.Instr | None, dict[str, int], str]:
  from tinytpu import asm
  try:
    ins, vals = isa.decode(word, N)
    return ins, vals, asm.disassemble_word(word, N)
  except isa.IllegalInstruction as e:
    return None, {}, f"illegal: {e}"


def analyze(name: str, program: list[int], config: Config, result: bundle.Result, ev: Events) -> Profile:
  N = config.N
  dec = [_decode(w, N) for w in program]
  retired, mxu_busy = ev.col("retired"), ev.col("mxu_busy")
  stall_cols = np.stack([ev.col(s) for s in STALLS], 1) if len(ev.cycle) else np.zeros((0, len(STALLS)), np.int64)
  issues, stall, drain, mxu = [], [], [], []
  streams: collections.deque = collections.deque()  # [pc, rows left] of every MMUL not yet streamed
  for t, pc, r, sv, mb in zip(ev.cycle.tolist(), ev.pc.tolist(), retired.tolist(), stall_cols.tolist(), mxu_busy.tolist()):
    # an issue cycle retires 1 instruction (2 with a dual-issue SXU: the second is taken to be pc+1)
    for k in range(r):
      ins, vals, text = dec[pc + k] if pc + k < len(dec) else (None, {}, "outside the program")
      issues.append(Issue(t, pc + k, ins, text))
      if ins is not None and ins.mnemonic in ("MMUL", "MMUL.BF16"):
        streams.append([pc + k, vals["T"] * N])  # T tiles of N activation rows, one row per busy cycle
    if r == 0:
      cause = next((s for s, v in zip(STALLS, sv) if v), None)
      if cause: stall.append((t, pc, cause))
      else: drain.append(t)
    # the MXU streams its MMULs in order: a busy cycle belongs to the oldest one with rows left
    for _ in range(mb):
      mxu.append((t, streams[0][0] if streams else None))
      if streams:
        streams[0][1] -= 1
        if streams[0][1] == 0: streams.popleft()
  return Profile(name, config, list(program), result, ev, issues, stall, drain, mxu)


def profile_bundle(text: str, config: Config | None = None, name: str = "kernel") -> Profile:
  """Parse (bundle.BundleError on a bad bundle), run with event capture and analyse."""
  b = bundle.parse(text, config)
  res, ev = capture(bundle.write(b), b.config)
  return analyze(name, b.program, b.config, res, ev)


# ---------------------------------------------------------------------------------------------
# the text report
def _pct(n: int, total: int) -> str: return f"{100 * n / total:5.1f}%" if total else "     -"


def report(p: Profile) -> str:
  C, res = p.cycles, p.result
  tot = p.totals()
  st = res.status + (f" {res.trap} pc={res.pc}" if res.status == "trap" else f" pc={res.pc}" if res.status == "timeout" else "")
  ipc = tot["retired"] / C if C else 0.0
  issue_cycles = len({i.cycle for i in p.issues})
  out = [f"kernel {p.name}: N={p.config.N}, {len(p.program)} instructions, status {st}",
         f"cycles {C}   retired {tot['retired']}   IPC {ipc:.3f}", "",
         "cycles by what the issue stage did:",
         f"  {'issue':12s} {issue_cycles:9d} {_pct(issue_cycles, C)}"]
  if pairs := p.paired():
    out.append(f"  {'  of which':12s} {pairs:9d} {_pct(pairs, C)}   retired 2 instructions (dual issue)")
  for s in STALLS:
    out.append(f"  {s:12s} {tot[s]:9d} {_pct(tot[s], C)}")
  out.append(f"  {DRAIN:12s} {len(p.drain):9d} {_pct(len(p.drain), C)}   (no issue, no stall: after HALT or a trap, background units finishing)")
  busy = p.busy()
  why = {"SXU": "scalar and control instructions issued", "VPU": f"issue cycles (pipelined; {p.vpu_in_flight()} op-cycles in flight)",
         "XLU": "issue cycles", "VMEM": "VLD/VST/PLD/PST/VGATHER/VSCATTER issue cycles", "MXU": "mxu_busy: activation rows streamed",
         "DMA": "dma_busy: a DMA command queued or in flight", "EMB": "issue cycles of SparseCore lookups (doc/sparsecore.md)"}
  out += ["", "unit busy cycles:"] + [f"  {u:12s} {busy[u]:9d} {_pct(busy[u], C)}   {why[u]}" for u in UNITS]
  um = p.unit_mix()
  out += ["", "instruction mix by unit:"] + [f"  {u:12s} {um.get(u, 0):9d} {_pct(um.get(u, 0), tot['retired'])}" for u in UNITS]
  out += ["", "instruction mix by mnemonic:"]
  out += [f"  {m:12s} {n:9d} {_pct(n, tot['retired'])}" for m, n in sorted(p.mix().items(), key=lambda kv: (-kv[1], kv[0]))]
  if p.stall:
    dec = {pc: _decode(p.program[pc], p.config.N) if pc < len(p.program) else (None, {}, "?") for pc in {pc for _, pc, _ in p.stall}}
    dis = lambda pc: dec[pc][2]
    waits = collections.Counter((dec[pc][0].mnemonic if dec[pc][0] else "?", cause) for _, pc, cause in p.stall)
    out += ["", "stall cycles by the instruction that waited:"]
    out += [f"  {m:12s} {cause:12s} {n:7d} {_pct(n, C)}" for (m, cause), n in waits.most_common(8)]
    out += ["", "top stall sites (pc: the instruction that waited):"]
    for (pc, cause), n in collections.Counter((pc, cause) for _, pc, cause in p.stall).most_common(8):
      out.append(f"  pc {pc:<5d} {dis(pc):32s} {cause:12s} {n:7d}")
  out += ["", "hardware counters (each the sum of its per-cycle deltas):"]
  out += [f"  {n:12s} {tot.get(n, 0):9d}   {desc}" for n, desc in isa.PERF_COUNTERS]
  if bad := p.check():
    out.append("WARNING: events differ from the final counters: " + "; ".join(bad))
  return "\n".join(out) + "\n"


# ---------------------------------------------------------------------------------------------
# timeline: per track, runs of consecutive cycles with the same label
@dataclasses.dataclass
class Span:
  track: str
  start: int
  dur: int
  name: str
  pc: int | None
  text: str  # what the hover shows


def spans(p: Profile, lo: int = 0, hi: int | None = None) -> list[Span]:
  """Every track's activity in cycles [lo, hi), identical consecutive cycles merged into one span."""
  hi = p.cycles if hi is None else hi
  cells: dict[str, list[tuple[int, str, int | None, str]]] = {t: [] for t in TRACKS}
  by_cycle: dict[tuple[str, int], list[Issue]] = collections.defaultdict(list)
  for i in p.issues:
    if lo <= i.cycle < hi:
      by_cycle[("MXU cmd" if unit_of(i.ins) == "MXU" else unit_of(i.ins), i.cycle)].append(i)
  for (track, t), iss in sorted(by_cycle.items(), key=lambda kv: kv[0][1]):
    name = "+".join(i.ins.mnemonic if i.ins else "illegal" for i in iss)
    cells[track].append((t, name, iss[0].pc, "; ".join(f"pc {i.pc}: {i.text}" for i in iss)))
  for t, pc, cause in p.stall:
    if lo <= t < hi:
      cells["stall"].append((t, cause, pc, f"{cause}: pc {pc} {_decode(p.program[pc], p.config.N)[2] if pc < len(p.program) else ''} waits"))
  for t in p.drain:
    if lo <= t < hi:
      cells["stall"].append((t, DRAIN, None, "drain: no issue, background units finishing"))
  for t, pc in p.mxu:
    if lo <= t < hi:
      cells["MXU"].append((t, "MMUL" if pc is not None else "busy", pc, f"streaming rows of the MMUL at pc {pc}" if pc is not None else "streaming"))
  out = []
  for track in TRACKS:
    cur = None
    for t, name, pc, text in sorted(cells[track], key=lambda c: c[0]):
      if cur and cur.start + cur.dur == t and (cur.name, cur.pc) == (name, pc):
        cur.dur += 1
      else:
        cur = Span(track, t, 1, name, pc, text)
        out.append(cur)
  return out


def trace_events(p: Profile) -> dict:
  """A Chrome/Perfetto trace: one thread per track, ts/dur in cycles shown as microseconds."""
  ev: list[dict] = [{"name": "process_name", "ph": "M", "pid": 1, "args": {"name": f"TinyTPU {p.name}"}}]
  for tid, track in enumerate(TRACKS):
    ev.append({"name": "thread_name", "ph": "M", "pid": 1, "tid": tid, "args": {"name": track}})
    ev.append({"name": "thread_sort_index", "ph": "M", "pid": 1, "tid": tid, "args": {"sort_index": tid}})
  for s in spans(p):
    args = {"cycles": s.dur, "what": s.text}
    if s.pc is not None: args["pc"] = s.pc
    ev.append({"name": s.name, "cat": s.track, "ph": "X", "pid": 1, "tid": TRACKS.index(s.track), "ts": s.start, "dur": s.dur, "args": args})
  return {"traceEvents": ev, "displayTimeUnit": "ns", "otherData": {"kernel": p.name, "cycles": p.cycles, "unit": "1 us = 1 cycle"}}


# ---------------------------------------------------------------------------------------------
# the HTML pipeline view: pure SVG boxes with <title> hovers, no script, no network
COLOURS = {"SXU": "#8da0cb", "VPU": "#66c2a5", "XLU": "#a6d854", "VMEM": "#ffd92f", "MXU cmd": "#e78ac3", "MXU": "#fc8d62", "DMA": "#1b9e77", "EMB": "#b3b3b3",
           "stall_raw": "#e41a1c", "stall_waw": "#984ea3", "stall_unit": "#ff7f00", "stall_fence": "#a65628", "stall_dma": "#666600", DRAIN: "#bbbbbb"}


def _colour(s: Span) -> str:
  return COLOURS.get(s.name, "#999999") if s.track == "stall" else COLOURS[s.track]


def to_html(p: Profile, lo: int = 0, hi: int | None = None) -> str:
  hi = min(p.cycles, lo + WINDOW if hi is None else hi)
  lo = max(0, min(lo, hi))
  n = max(hi - lo, 1)
  px = max(1.0, min(16.0, 1600 / n))  # pixels per cycle
  left, row, top = 70, 22, 24
  W, H = int(left + n * px + 20), top + row * len(TRACKS) + 10
  svg = [f'<svg width="{W}" height="{H}" font-family="monospace" font-size="11">']
  step = next(s for s in (1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10000, 10**9) if s * px >= 50)
  for c in range((lo + step - 1) // step * step, hi + 1, step):
    x = left + (c - lo) * px
    svg.append(f'<line x1="{x:.1f}" y1="{top - 4}" x2="{x:.1f}" y2="{H - 10}" stroke="#eee"/><text x="{x + 2:.1f}" y="{top - 8}" fill="#666">{c}</text>')
  for r, track in enumerate(TRACKS):
    svg.append(f'<text x="4" y="{top + r * row + 15}">{html.escape(track)}</text>')
  for s in spans(p, lo, hi):
    x, y = left + (s.start - lo) * px, top + TRACKS.index(s.track) * row + 2
    w = s.dur * px
    label = f"{s.name} x{s.dur} cycles {s.start}..{s.start + s.dur - 1}: {s.text}"
    svg.append(f'<rect x="{x:.1f}" y="{y}" width="{max(w - 0.5, 0.5):.1f}" height="{row - 4}" fill="{_colour(s)}"><title>{html.escape(label)}</title></rect>')
    if w >= 7 * len(s.name) + 4:
      svg.append(f'<text x="{x + 2:.1f}" y="{y + 13}" pointer-events="none">{html.escape(s.name)}</text>')
  svg.append("</svg>")
  legend = "".join(f'<span class="key"><span class="sw" style="background:{c}"></span>{html.escape(k)}</span>' for k, c in COLOURS.items())
  tot, C = p.totals(), p.cycles
  busy = p.busy()
  rows = [("cycles", C), ("retired", tot["retired"]), ("IPC", f"{tot['retired'] / C:.3f}" if C else "-")]
  rows += [(s, tot[s]) for s in STALLS] + [(DRAIN, len(p.drain))] + [(f"busy {u}", busy[u]) for u in UNITS]
  table = "".join(f"<tr><td>{html.escape(str(k))}</td><td>{v}</td></tr>" for k, v in rows)
  shown = f"cycles {lo}..{hi - 1} of {C}" + ("" if (lo, hi) == (0, C) else " (choose another window with --window A:B)")
  return f"""<!DOCTYPE html>
<html><head><meta charset="utf-8"><title>TinyTPU profile: {html.escape(p.name)}</title>
<style>
body {{ font-family: sans-serif; margin: 16px; }}
table {{ border-collapse: collapse; margin: 8px 0; }} td {{ border: 1px solid #ccc; padding: 2px 8px; }} td:last-child {{ text-align: right; }}
.view {{ overflow-x: auto; border: 1px solid #ccc; }} .key {{ margin-right: 14px; white-space: nowrap; }}
.sw {{ display: inline-block; width: 12px; height: 12px; margin-right: 4px; vertical-align: middle; }}
pre {{ background: #f7f7f7; padding: 8px; }}
</style></head><body>
<h2>TinyTPU profile: {html.escape(p.name)}</h2>
<p>Pipeline view, {shown}. One row per unit (SXU: scalar and control instructions; MXU cmd: MLW/MMUL issued;
MXU: activation rows streamed, named after their MMUL; stall: the cause the issue stage waited, drain: after HALT).
Hover a box for the instruction, pc and cycles.</p>
<div>{legend}</div>
<div class="view">{"".join(svg)}</div>
<h3>Summary</h3>
<table class="summary">{table}</table>
<pre>{html.escape(report(p))}</pre>
</body></html>
"""


# ---------------------------------------------------------------------------------------------
def write_all(p: Profile, stem: str | os.PathLike, window: tuple[int, int | None] = (0, None)) -> list[pathlib.Path]:
  """<stem>.txt (report), <stem>.json (trace) and <stem>.html: what TINYTPU_PROFILE writes per kernel."""
  stem = pathlib.Path(stem)
  outs = [stem.with_suffix(".txt"), stem.with_suffix(".json"), stem.with_suffix(".html")]
  outs[0].write_text(report(p))
  outs[1].write_text(json.dumps(trace_events(p)))
  outs[2].write_text(to_html(p, *window))
  return outs


def kernel(b: bundle.Bundle, name: str, directory: str | os.PathLike, seq: int) -> list[pathlib.Path]:
  """The backend's hook (TINYTPU_PROFILE=dir): profile one kernel bundle into `directory` as
  <seq>_<name>.txt/.json/.html, next to the bundle itself (<seq>_<name>.bundle, for
  `python -m tinytpu profile` or `run`). Runs the bundle again, on its own co-sim process."""
  d = pathlib.Path(directory)
  d.mkdir(parents=True, exist_ok=True)
  stem = d / f"{seq:04d}_{''.join(c if c.isalnum() else '_' for c in name)}"
  text = bundle.write(b)
  stem.with_suffix(".bundle").write_text(text)
  return write_all(profile_bundle(text, b.config, name), stem) + [stem.with_suffix(".bundle")]


def _window(s: str) -> tuple[int, int | None]:
  a, _, b = s.partition(":")
  try:
    return int(a or 0), (int(b) if b else None)
  except ValueError:
    raise ValueError(f"--window {s!r}: expected A:B, cycle numbers (either may be left out)") from None


def main(argv: list[str]) -> int:
  ap = argparse.ArgumentParser(prog="python -m tinytpu profile",
                               description="run a bundle on the RTL co-sim with per-cycle event capture and report where the cycles go "
                                           "(exit 0 status ok, 1 trap/timeout, 2 bad input)")
  ap.add_argument("bundle", help="bundle file, or - for stdin")
  ap.add_argument("--config", help="the model's configuration, e.g. N=8,VMEM_TILES=256 (default: the bundle header's)")
  ap.add_argument("--trace-events", metavar="OUT.json", help="write a Chrome/Perfetto trace (ui.perfetto.dev, chrome://tracing)")
  ap.add_argument("--html", metavar="OUT.html", help="write a self-contained HTML pipeline view")
  ap.add_argument("--window", default="0:", metavar="A:B", help=f"cycles the HTML view draws (default: the first {WINDOW})")
  ap.add_argument("--events", metavar="OUT.tsv", help="also keep the raw per-cycle event table")
  ap.add_argument("--name", help="kernel name in the report (default: the file name)")
  args = ap.parse_args(argv)
  try:
    text = sys.stdin.read() if args.bundle == "-" else pathlib.Path(args.bundle).read_text()
    window = _window(args.window)
    b = bundle.parse(text, Config.from_str(args.config) if args.config else None)
    res, ev = capture(bundle.write(b), b.config, args.events)
  except OSError as e:  # a missing or unreadable file
    print(f"profile: {e.filename or args.bundle}: {e.strerror or e}", file=sys.stderr)
    return 2
  except ValueError as e:  # BundleError (it names the line), ConfigError, a bad --window
    print(f"profile: {e}" if str(e).startswith("--") else f"profile: {args.bundle}: {e}", file=sys.stderr)
    return 2
  p = analyze(args.name or pathlib.Path(args.bundle).stem, b.program, b.config, res, ev)
  sys.stdout.write(report(p))
  try:
    if args.trace_events: pathlib.Path(args.trace_events).write_text(json.dumps(trace_events(p)))
    if args.html: pathlib.Path(args.html).write_text(to_html(p, *window))
  except OSError as e:
    print(f"profile: {e.filename}: {e.strerror or e}", file=sys.stderr)
    return 2
  return 0 if res.status == "ok" else 1
