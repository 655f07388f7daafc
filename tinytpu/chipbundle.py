"""The chip bundle (doc/chip.md): one program per TensorCore of the two-core chip, one shared HBM.

  tinytpu-chip 1 N=4 VMEM_TILES=1024 PSUM_TILES=64   the header: a bundle header's fields
  hbm ... / dump hbm ... (v2: binfile, hbmbin, resultfile)
                                                     shared records, before the first section
  core 0                                             a core's section: vmem, psum, sreg, inst,
  ...                                                asm and dump vmem|psum|sreg records
  core 1
  ...
  run <limit>                                        the last record: the chip's watchdog

Every section is checked by the single-core parser (tinytpu.bundle.parse) with its own records and
the line numbers of this text; a `core` of a core the chip does not have, a section given twice
or missing, an HBM record inside a section, a core record before the first section are errors on
their line. The result (format_chip_result) prints the shared HBM dumps, the chip's cycles, then
per core `core <k>` and its single-core result lines (dumps, cycles, perf, status)."""
from __future__ import annotations

import dataclasses

from tinytpu import bundle, isa
from tinytpu.config import CHIP_CORES, DEFAULT, Config
from tinytpu.records import MAGIC, Bundle, BundleError, Result, format_result, parse_result

CHIP_MAGIC = "tinytpu-chip"
SHARED = ("hbm", "hbmbin", "binfile", "resultfile")  # records of the shared section (and `dump hbm`)


@dataclasses.dataclass
class ChipBundle:
  config: Config
  cores: list[Bundle]              # per core: program, VMEM/PSUM/sreg preloads, its dumps (no HBM)
  hbm: list = dataclasses.field(default_factory=list)    # shared HBM preload regions (Bundle.hbm's form)
  dumps: list = dataclasses.field(default_factory=list)  # shared ("hbm", addr, count) dumps
  max_cycles: int = bundle.DEFAULT_RUN


@dataclasses.dataclass
class ChipResult:
  cores: list[Result]              # per core: its dumps, cycles, perf, status, trap, pc
  dumps: list                      # the shared hbm dumps
  cycles: int                      # chip cycles: from the start until the last core is done
  deadlock: str | None = None      # the golden model's or the runner's deadlock report


class ChipDeadlock(RuntimeError):
  """Every core that has not finished waits on SIG.WAIT and nothing can wake it (the message names
  each core's pc and what it waits for)."""


def _sub(header: str, lines: list[tuple[int, str]], run: tuple[int, str], config: Config | None) -> Bundle:
  """One section as a single-core bundle, errors on the chip bundle's lines."""
  rows = [(0, header)] + lines + [run]
  try:
    return bundle.parse("\n".join(r for _, r in rows) + "\n", config)
  except BundleError as e:
    raise BundleError(rows[min(e.line, len(rows)) - 1][0] or 1, e.why) from None


def parse(text: str, config: Config | None = None) -> ChipBundle:
  """Parse and check a chip bundle (errors: BundleError on the offending line)."""
  lines = text.splitlines()
  header, hdr_ln, cur, run = None, 0, None, None
  shared: list[tuple[int, str]] = []
  cores: dict[int, list[tuple[int, str]]] = {}
  where: dict[int, int] = {}
  for ln, raw in enumerate(lines, 1):
    s = raw.split("#", 1)[0].strip()
    if not s:
      continue
    tok = s.split()
    if header is None:
      if tok[0] != CHIP_MAGIC:
        raise BundleError(ln, f"a chip bundle starts with `{CHIP_MAGIC} 1 N=...` (got {tok[0]!r}; a `{MAGIC}` is a single-core bundle)")
      header, hdr_ln = " ".join([MAGIC] + tok[1:]), ln
      continue
    if run is not None:
      raise BundleError(ln, f"record `{tok[0]}` after `run` (line {run[0]}): `run` must be the last record")
    if tok[0] == "run":
      run = (ln, s)
    elif tok[0] == "core":
      try:
        k = int(tok[1], 0) if len(tok) == 2 else None
      except ValueError:
        k = None
      if k is None:
        raise BundleError(ln, "`core` takes one core number")
      if not 0 <= k < CHIP_CORES:
        raise BundleError(ln, f"core {k}: the chip has {CHIP_CORES} cores (0..{CHIP_CORES - 1})")
      if k in cores:
        raise BundleError(ln, f"core {k}: a second section (the first on line {where[k]})")
      cores[k], where[k], cur = [], ln, k
    elif tok[0] in SHARED or (tok[0] == "dump" and len(tok) > 1 and tok[1] == "hbm"):
      if cur is not None:
        raise BundleError(ln, f"`{' '.join(tok[:2]) if tok[0] == 'dump' else tok[0]}` inside the section of core {cur}: "
                              "HBM is shared, its records come before the first `core`")
      shared.append((ln, raw))
    elif cur is None:
      raise BundleError(ln, f"record `{tok[0]}` before the first `core` section (only HBM records are shared)")
    else:
      cores[cur].append((ln, raw))
  if header is None:
    raise BundleError(len(lines) + 1, f"missing header `{CHIP_MAGIC} 1 N=...`")
  if run is None:
    raise BundleError(len(lines) + 1, "missing `run <watchdog cycles>` record")
  for k in range(CHIP_CORES):
    if k not in cores:
      raise BundleError(run[0], f"missing `core {k}` section (the chip runs {CHIP_CORES} programs)")
  sh = _sub(header, shared, run, config)
  cfg = sh.config
  subs = [_sub(header, cores[k], run, cfg) for k in range(CHIP_CORES)]
  del hdr_ln
  return ChipBundle(config=cfg, cores=subs, hbm=sh.hbm, dumps=list(sh.dumps), max_cycles=sh.max_cycles)


def write(cb: ChipBundle) -> str:
  """The chip bundle as text (version 1: HBM as `hbm` records)."""
  def body(b: Bundle) -> list[str]:
    return bundle.write(b, version=1).splitlines()[1:-1]  # no header, no `run`
  shared = Bundle(config=cb.config, hbm=cb.hbm, dumps=list(cb.dumps), max_cycles=cb.max_cycles)
  out = [CHIP_MAGIC + bundle.header(cb.config)[len(MAGIC):]] + body(shared)
  for k, b in enumerate(cb.cores):
    out.append(f"core {k}")
    out += body(dataclasses.replace(b, hbm=[], dumps=[d for d in b.dumps if d[0] != "hbm"]))
  out.append(f"run {cb.max_cycles}")
  return "\n".join(out) + "\n"


def format_chip_result(r: ChipResult, config: Config = DEFAULT) -> str:
  shared = Result(dumps=r.dumps, cycles=r.cycles, perf={}, status="ok")
  out = [line for line in format_result(shared).splitlines() if line.startswith("hbm ")]
  out.append(f"chip cycles {r.cycles}")
  for k, c in enumerate(r.cores):
    out.append(f"core {k}")
    out += format_result(c).splitlines()
  if r.deadlock:
    out.append(f"deadlock {r.deadlock}")
  return "\n".join(out) + "\n"


def parse_chip_result(text: str, config: Config = DEFAULT) -> ChipResult:
  shared, cores, cycles, deadlock = [], [], 0, None
  cur: list[str] | None = None
  for line in text.splitlines():
    if line.startswith("core "):
      cur = []
      cores.append(cur)
    elif line.startswith("chip cycles "):
      cycles = int(line.split()[2])
    elif line.startswith("deadlock "):
      deadlock = line[len("deadlock "):]
    elif cur is None:
      shared.append(line)
    else:
      cur.append(line)
  perf = "perf " + " ".join(f"{n}=0" for n, _ in isa.PERF_COUNTERS)  # the shared part has no counters of its own
  dumps = parse_result("\n".join(shared + ["cycles 0", perf, "status ok"]) + "\n", config).dumps if shared else []
  return ChipResult(cores=[parse_result("\n".join(c) + "\n", config) for c in cores], dumps=dumps, cycles=cycles, deadlock=deadlock)


def waits_at(cb: ChipBundle, k: int, pc: int | None) -> str:
  """What core k's instruction at pc is, for a deadlock report."""
  from tinytpu import asm  # the disassembler
  prog = cb.cores[k].program
  if pc is None or not 0 <= pc < len(prog):
    return "no instruction"
  try:
    return asm.disassemble_word(prog[pc], cb.config.N)
  except Exception as e:  # an illegal word: say so
    return f"illegal word ({e})"


def deadlock_report(cb: ChipBundle, r: ChipResult) -> str | None:
  """Where every core is when a core that timed out waits on SIG.WAIT (None when none does)."""
  waiting = [k for k, c in enumerate(r.cores) if c.status == "timeout" and waits_at(cb, k, c.pc).startswith("SIG.WAIT")]
  if not waiting:
    return None
  parts = []
  for k, c in enumerate(r.cores):
    if k in waiting: parts.append(f"core {k} waits at pc {c.pc} ({waits_at(cb, k, c.pc)})")
    elif c.status == "ok": parts.append(f"core {k} halted")
    elif c.status == "trap": parts.append(f"core {k} trapped {c.trap} at pc {c.pc}")
    else: parts.append(f"core {k} still running at pc {c.pc}")
  return "; ".join(parts)
