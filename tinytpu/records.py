"""Bundle format records, versions 1 and 2 (doc/bundle.md): the Bundle and Result every runner shares (golden
interpreter, RTL co-simulation, backend), the checks of every record (shared with the assembler, they
raise ValueError(why)), the header, and the result lines: format_result / parse_result / diff_results.

This is the records layer: it knows the ISA and the configuration, not the assembler. Reading and
writing a whole bundle (its program goes through the TASM assembler) is tinytpu/bundle.py."""
from __future__ import annotations

import dataclasses
import mmap
import os
import re
import sys

import numpy as np

from tinytpu import isa
from tinytpu.config import DEFAULT, Config, ConfigError

MAGIC, VERSION = "tinytpu-bundle", 1  # VERSION: what write() writes unless asked for another
VERSIONS = (1, 2)
RECORDS = ("vmem", "psum", "hbm", "sreg", "inst", "asm", "dump", "run")
# version 2 adds binary payloads in side files: `binfile <path>` (the side file of raw little-endian
# uint32 lanes), `hbmbin <addr> <count> <offset>` (an HBM region read from it) and `resultfile
# <path>` (where a runner writes the lanes of `dump hbm` regions: result lines `hbm <addr> <count> @<offset>`)
RECORDS_V2 = RECORDS + ("binfile", "hbmbin", "resultfile")
DEFAULT_RUN = 1_000_000  # watchdog cycles when a TASM file has no `.run`
MAX_RUN = (1 << 63) - 1


class BundleError(ValueError):
  def __init__(self, line: int, why: str):
    self.line, self.why = line, why
    super().__init__(f"error line {line}: {why}")

  def __reduce__(self):  # picklable with its arguments (a process pool sends exceptions back)
    return BundleError, (self.line, self.why)


@dataclasses.dataclass(eq=False)
class Bundle:
  config: Config = DEFAULT
  vmem: dict[int, np.ndarray] = dataclasses.field(default_factory=dict)  # tile address -> (N, N) uint32
  psum: dict[int, np.ndarray] = dataclasses.field(default_factory=dict)
  sregs: dict[int, int] = dataclasses.field(default_factory=dict)        # register -> uint32 value
  program: list[int] = dataclasses.field(default_factory=list)           # 64-bit words
  dumps: list[tuple[str, int, int]] = dataclasses.field(default_factory=list)  # (kind, addr, count)
  max_cycles: int = DEFAULT_RUN
  # HBM preloads as regions: (first tile, (count, N, N) uint32), disjoint and inside HBM_TILES
  # (check_hbm_regions); tiles outside every region read zero
  hbm: list[tuple[int, np.ndarray]] = dataclasses.field(default_factory=list)
  # bundle v2 `resultfile`: where a runner writes the lanes of `dump hbm` regions (transport, not
  # content: left out of ==)
  resultfile: str | None = None

  def __eq__(self, other) -> bool:  # tiles are arrays: compare them lane by lane, record order included
    if not isinstance(other, Bundle):
      return NotImplemented
    same_tiles = lambda x, y: list(x) == list(y) and all(np.array_equal(x[k], y[k]) for k in x)
    return (self.config, self.sregs, self.program, self.dumps, self.max_cycles) == \
      (other.config, other.sregs, other.program, other.dumps, other.max_cycles) and \
      same_tiles(self.vmem, other.vmem) and same_tiles(self.psum, other.psum) and \
      [a for a, _ in self.hbm] == [a for a, _ in other.hbm] and all(np.array_equal(x, y) for (_, x), (_, y) in zip(self.hbm, other.hbm))


@dataclasses.dataclass
class Result:
  # ("vmem"|"psum", addr, (N, N) uint32) per tile, ("sreg", 0, (16,) uint32), ("hbm", addr, (count, N, N) uint32) per dump
  dumps: list[tuple[str, int, np.ndarray]]
  cycles: int
  perf: dict[str, int]                      # every name of isa.PERF_COUNTERS
  status: str                               # "ok" | "trap" | "timeout"
  trap: str | None = None                   # trap code name when status == "trap"
  pc: int | None = None                     # pc of the trap / of the next instruction at timeout


# ---------------------------------------------------------------------------------------------
# numbers and record checks, shared with the assembler (they raise ValueError(why))
_INT = re.compile(r"[+-]?(0x[0-9a-f]+|0b[01]+|[0-9]+)", re.I)


def parse_int(tok: str) -> int:
  """Decimal, 0x hex or 0b binary, with an optional sign."""
  if not _INT.fullmatch(tok):
    raise ValueError(f"malformed number {tok!r}")
  return int(tok, 0) if not re.fullmatch(r"[+-]?0+[0-9]+", tok) else int(tok, 10)


def check_value(v: int, what: str = "value") -> int:
  """A 32-bit lane or register value given as int32 or uint32; returns the uint32 bits."""
  if not -(1 << 31) <= v <= (1 << 32) - 1:
    raise ValueError(f"{what} {v} out of range [-2^31, 2^32-1]")
  return v & 0xFFFFFFFF


def _space(config: Config, kind: str) -> int:
  return {"vmem": config.VMEM_TILES, "psum": config.PSUM_TILES, "hbm": config.HBM_TILES}[kind]


def hbm_regions_problem(config: Config, regions: list[tuple[int, np.ndarray]]) -> tuple[int, str] | None:
  """The first problem of a list of HBM preload regions as (index of the region named, why), or None.
  Shapes and capacity are checked region by region first, then overlaps (in address order)."""
  spans = []
  for k, (addr, tiles) in enumerate(regions):
    what = f"hbm region {k} (tiles {addr}..{addr + len(tiles) - 1})"
    if tiles.ndim != 3 or tiles.shape[1:] != (config.N, config.N) or tiles.dtype != np.uint32 or not len(tiles):
      return k, f"{what}: expected a non-empty (count, {config.N}, {config.N}) uint32 array, got {tiles.dtype} {tiles.shape}"
    if addr < 0 or addr + len(tiles) > config.HBM_TILES:
      return k, f"{what}: outside the HBM capacity [0, {config.HBM_TILES}) (HBM_TILES)"
    spans.append((addr, addr + len(tiles), k))
  spans.sort()
  for (a0, e0, k0), (a1, e1, k1) in zip(spans, spans[1:]):
    if a1 < e0:
      return k1, f"hbm region {k1} (tiles {a1}..{e1 - 1}) overlaps hbm region {k0} (tiles {a0}..{e0 - 1})"
  return None


def check_hbm_regions(config: Config, regions: list[tuple[int, np.ndarray]]) -> None:
  """HBM preload regions must be (count, N, N) uint32 arrays inside [0, HBM_TILES) and disjoint;
  raises ValueError naming the region."""
  if (p := hbm_regions_problem(config, regions)) is not None:
    raise ValueError(p[1])


def check_tile(config: Config, kind: str, addr: int, vals: list[int]) -> np.ndarray:
  if not 0 <= addr < _space(config, kind):
    raise ValueError(f"{kind} address {addr} out of range [0, {_space(config, kind)})")
  if len(vals) != config.lanes:
    raise ValueError(f"{kind} {addr}: expected {config.lanes} values (N*N, N={config.N}), got {len(vals)}")
  return np.array([check_value(v) for v in vals], dtype=np.uint32).reshape(config.N, config.N)


def check_sreg(r: int, v: int) -> int:
  if not 0 <= r < 16:
    raise ValueError(f"scalar register {r} out of range [0, 16)")
  v = check_value(v)
  if r == 0 and v != 0:
    raise ValueError("s0 is hardwired to 0 and cannot be preloaded")
  return v


def check_dump(config: Config, kind: str, args: list[int]) -> tuple[str, int, int]:
  if kind == "sreg":
    if args:
      raise ValueError("`dump sreg` takes no arguments (it dumps all 16 registers)")
    return ("sreg", 0, 16)
  if kind not in ("vmem", "psum", "hbm"):
    raise ValueError(f"cannot dump {kind!r} (expected vmem, psum, hbm or sreg)")
  if len(args) != 2:
    raise ValueError(f"`dump {kind}` takes an address and a tile count, got {len(args)} values")
  addr, count, size = args[0], args[1], _space(config, kind)
  if count < 1:
    raise ValueError(f"dump {kind} count {count} must be >= 1")
  if not 0 <= addr < size or addr + count > size:
    raise ValueError(f"dump {kind} {addr}..{addr + count - 1} out of range [0, {size})")
  return (kind, addr, count)


def check_run(limit: int) -> int:
  if not 1 <= limit <= MAX_RUN:
    raise ValueError(f"run limit {limit} out of range [1, 2^63-1]")
  return limit


HEADER_FIELDS = ("N", "VMEM_TILES", "PSUM_TILES", "IMEM_WORDS", "HBM_TILES", "HBM_LATENCY", "HBM_BW_NUM", "HBM_BW_DEN")


def header(config: Config, version: int = VERSION) -> str:
  fields = dict(config.header_fields())
  if config.IMEM_WORDS != DEFAULT.IMEM_WORDS:  # only non-default sizes need saying
    fields["IMEM_WORDS"] = config.IMEM_WORDS
  for k in ("HBM_TILES", "HBM_LATENCY", "HBM_BW_NUM", "HBM_BW_DEN"):
    if getattr(config, k) != getattr(DEFAULT, k):
      fields[k] = getattr(config, k)
  return f"{MAGIC} {version} " + " ".join(f"{k}={v}" for k, v in fields.items())


def parse_header(text: str, config: Config | None) -> Config:
  return read_header(text, config)[0]


def read_header(text: str, config: Config | None) -> tuple[Config, int]:
  """The configuration and the format version of a header line."""
  toks = text.split()
  if toks[0] != MAGIC:
    raise ValueError(f"missing header: expected `{header(config or DEFAULT)}`, got {toks[0]!r}")
  if len(toks) < 2 or toks[1] not in ("1", "2"):
    raise ValueError(f"unsupported bundle version {toks[1] if len(toks) > 1 else '(none)'} (this reader reads versions 1 and 2)")
  version = int(toks[1])
  got: dict[str, int] = {}
  for t in toks[2:]:
    k, sep, v = t.partition("=")
    if not sep or k not in HEADER_FIELDS:
      raise ValueError(f"bad header field {t!r} (expected N=, VMEM_TILES=, PSUM_TILES=, optional {'=, '.join(HEADER_FIELDS[3:])}=)")
    if k in got:
      raise ValueError(f"header field {k} given twice")
    got[k] = parse_int(v)
  for k in ("N", "VMEM_TILES", "PSUM_TILES"):
    if k not in got:
      raise ValueError(f"header is missing {k}=")
  if config is None:
    try:
      return Config(**got), version
    except ConfigError as e:
      raise ValueError(str(e)) from None
  for k in HEADER_FIELDS:  # the fields given must match the model; one left out takes the model's value
    v = got.get(k, getattr(config, k))
    if getattr(config, k) != v:
      raise ValueError(f"config mismatch: bundle has {k}={v}, the model has {k}={getattr(config, k)}")
  return config, version


def ints(a) -> str:
  """Tile or register values as signed decimal text, the way bundles and results write them."""
  return " ".join(map(str, np.asarray(a, dtype=np.uint32).view(np.int32).ravel().tolist()))


# ---------------------------------------------------------------------------------------------
# results
def format_result(r: Result, resultfile: str | os.PathLike | None = None) -> str:
  """The result lines of software.md §3: the dumps (one line per tile, one per hbm region, in dump
  order), cycles, perf, status. With `resultfile` (bundle v2) the lanes of hbm dumps go to that
  file as raw little-endian uint32, one after the other, and their lines are `hbm <addr> <count> @<offset>`."""
  out = []
  side = open(resultfile, "wb") if resultfile is not None else None
  try:
    for kind, addr, vals in r.dumps:
      if kind == "hbm" and side is not None:
        out.append(f"hbm {addr} {len(vals)} @{side.tell()}")
        side.write(memoryview(np.ascontiguousarray(vals, dtype="<u4")).cast("B"))
      else:
        out.append(f"sreg {ints(vals)}" if kind == "sreg" else f"hbm {addr} {len(vals)} {ints(vals)}" if kind == "hbm" else f"{kind} {addr} {ints(vals)}")
  finally:
    if side is not None:
      side.close()
  out.append(f"cycles {r.cycles}")
  out.append("perf " + " ".join(f"{name}={r.perf.get(name, 0)}" for name, _ in isa.PERF_COUNTERS))
  if r.status == "ok":
    out.append("status ok")
  elif r.status == "trap":
    out.append(f"status trap {r.trap} pc={r.pc}")
  elif r.status == "timeout":
    out.append(f"status timeout pc={r.pc}")
  else:
    raise ValueError(f"unknown status {r.status!r}")
  return "\n".join(out) + "\n"


def _hbm_values(toks: list[str]) -> np.ndarray:
  """Decimal lanes the fast way (a 16 MB dump is 4M of them); any other spelling, or a value out of
  range, goes through parse_int / check_value for the message or the value."""
  joined = "".join(toks)
  try:  # int() would take `1_000` and non-ASCII digits, which parse_int refuses
    v = np.array(toks, dtype=np.int64) if joined.isascii() and "_" not in joined else None
  except (ValueError, OverflowError):
    v = None
  if v is None or (len(v) and (v.min() < -(1 << 31) or v.max() > (1 << 32) - 1)):
    return np.array([check_value(parse_int(t)) for t in toks], dtype=np.uint32)
  return v.astype(np.uint32)


def read_side(path: str | os.PathLike, offset: int, nbytes: int, what: str, mapped: bool = False) -> np.ndarray:
  """`nbytes` bytes of a side file from `offset` as uint32 lanes (raw little endian); ValueError
  naming `what`, the bytes and the file size when the file is missing or short. `mapped` maps the
  file copy-on-write instead of copying it (for a file nobody rewrites while the array lives, such
  as a result file of tinytpu.transport: removing the file leaves the mapping valid)."""
  try:
    size = os.stat(path).st_size
  except OSError as e:
    raise ValueError(f"{what} {str(path)!r}: {os.strerror(e.errno)}") from None
  if offset + nbytes > size:
    raise ValueError(f"needs bytes {offset}..{offset + nbytes - 1} of {what} {str(path)!r}, which has {size} bytes (truncated side file?)")
  try:
    if mapped and sys.byteorder == "little":
      base = offset // mmap.ALLOCATIONGRANULARITY * mmap.ALLOCATIONGRANULARITY
      with open(path, "rb") as f:
        m = mmap.mmap(f.fileno(), offset - base + nbytes, flags=mmap.MAP_PRIVATE,
                      prot=mmap.PROT_READ | mmap.PROT_WRITE, offset=base)
      return np.frombuffer(m, dtype=np.uint32, count=nbytes // 4, offset=offset - base)
    v = np.fromfile(path, dtype="<u4", count=nbytes // 4, offset=offset)
  except OSError as e:
    raise ValueError(f"{what} {str(path)!r}: {os.strerror(e.errno) if e.errno else e}") from None
  if v.nbytes != nbytes:
    raise ValueError(f"short read of {what} {str(path)!r} at byte {offset}")
  return v.astype(np.uint32, copy=False)


def _parse_hbm_line(toks: list[str], config: Config, resultfile, mapped: bool) -> tuple[str, int, np.ndarray]:
  if len(toks) < 2:
    raise ValueError("`hbm` needs an address, a tile count and the values")
  addr, count = parse_int(toks[0]), parse_int(toks[1])
  if count < 1:
    raise ValueError(f"hbm count {count} must be >= 1")
  if addr < 0 or addr + count > config.HBM_TILES:
    raise ValueError(f"hbm {addr}..{addr + count - 1} out of range [0, {config.HBM_TILES})")
  L = config.lanes
  if len(toks) == 3 and toks[2].startswith("@"):
    off = parse_int(toks[2][1:])
    if resultfile is None:
      raise ValueError(f"hbm {addr} {count} @{off}: a binary dump needs the bundle's result file (parse_result(..., resultfile=))")
    if off < 0 or off % 4:
      raise ValueError(f"hbm offset {off} must be a non-negative multiple of 4")
    try:
      lanes = read_side(resultfile, off, count * L * 4, "result file", mapped)
    except ValueError as e:
      raise ValueError(f"hbm {addr} {count}: {e}") from None
  else:
    if len(toks) - 2 != count * L:
      raise ValueError(f"hbm {addr} {count}: expected {count * L} values (count*N*N, N={config.N}), got {len(toks) - 2}")
    lanes = _hbm_values(toks[2:])
  return ("hbm", addr, lanes.reshape(count, config.N, config.N))


def parse_result(text: str, config: Config, resultfile: str | os.PathLike | None = None, mapped: bool = False) -> Result:
  """Read what format_result() writes (from any runner); `resultfile` is the bundle's (v2) result
  file holding the lanes of `hbm <addr> <count> @<offset>` lines (`mapped`: mapped copy-on-write,
  not copied, see read_side). Raises BundleError("error line L: why")."""
  dumps: list[tuple[str, int, np.ndarray]] = []
  cycles = perf = status = None
  trap = pc = None
  lines = text.splitlines()
  for ln, raw in enumerate(lines, 1):
    s = raw.split("#", 1)[0].strip()
    if not s:
      continue
    rec, *toks = s.split()
    try:
      if status is not None:
        raise ValueError(f"line `{rec}` after `status`")
      if rec in ("vmem", "psum"):
        if not toks:
          raise ValueError(f"`{rec}` needs an address")
        dumps.append((rec, parse_int(toks[0]), check_tile(config, rec, parse_int(toks[0]), [parse_int(t) for t in toks[1:]])))
      elif rec == "hbm":
        dumps.append(_parse_hbm_line(toks, config, resultfile, mapped))
      elif rec == "sreg":
        if len(toks) != 16:
          raise ValueError(f"sreg: expected 16 values, got {len(toks)}")
        dumps.append(("sreg", 0, np.array([check_value(parse_int(t)) for t in toks], dtype=np.uint32)))
      elif rec == "cycles":
        if len(toks) != 1:
          raise ValueError("`cycles` takes one value")
        cycles = parse_int(toks[0])
      elif rec == "perf":
        perf = {}
        for t in toks:
          k, sep, v = t.partition("=")
          if not sep or k not in isa.PERF:
            raise ValueError(f"bad perf counter {t!r}")
          perf[k] = parse_int(v)
        if missing := [n for n in isa.PERF if n not in perf]:
          raise ValueError(f"perf line is missing {', '.join(missing)}")
      elif rec == "status":
        if toks == ["ok"]:
          status = "ok"
        elif len(toks) == 3 and toks[0] == "trap" and toks[1] in isa.TRAP and toks[2].startswith("pc="):
          status, trap, pc = "trap", toks[1], parse_int(toks[2][3:])
        elif len(toks) == 2 and toks[0] == "timeout" and toks[1].startswith("pc="):
          status, pc = "timeout", parse_int(toks[1][3:])
        else:
          raise ValueError(f"bad status line {s!r}")
      else:
        raise ValueError(f"unknown result line {rec!r}")
    except ValueError as e:
      raise BundleError(ln, str(e)) from None
  for what, v in (("cycles", cycles), ("perf", perf), ("status", status)):
    if v is None:
      raise BundleError(len(lines) + 1, f"missing `{what}` line")
  return Result(dumps, cycles, perf, status, trap, pc)


def diff_results(a: Result, b: Result, ignore_timing: bool = True) -> list[str]:
  """Human-readable differences between two results; [] if they agree. Timing (cycles and every perf
  counter but `retired`) is compared only with ignore_timing=False. Two timeouts agree on status alone
  when timing is ignored: where a watchdog stops depends on timing."""
  out = []
  for what in ("status", "trap", "pc"):
    if getattr(a, what) != getattr(b, what) and not (what == "pc" and a.status == b.status == "timeout" and ignore_timing):
      out.append(f"{what}: {getattr(a, what)} != {getattr(b, what)}")
  if a.status == b.status == "timeout" and ignore_timing:
    return out
  for name in isa.PERF:
    if (name == "retired" or not ignore_timing) and a.perf.get(name) != b.perf.get(name):
      out.append(f"perf {name}: {a.perf.get(name)} != {b.perf.get(name)}")
  if not ignore_timing and a.cycles != b.cycles:
    out.append(f"cycles: {a.cycles} != {b.cycles}")
  ka, kb = [d[:2] for d in a.dumps], [d[:2] for d in b.dumps]
  if ka != kb:
    out.append(f"dumped tiles differ: {ka} != {kb}")
    return out
  for (kind, addr, va), (_, _, vb) in zip(a.dumps, b.dumps):
    va, vb = np.asarray(va, dtype=np.uint32), np.asarray(vb, dtype=np.uint32)
    where = "sreg" if kind == "sreg" else f"{kind} {addr}"
    if va.shape != vb.shape:
      out.append(f"{where}: shape {va.shape} != {vb.shape}")
      continue
    if kind == "hbm":  # name the tile by its HBM address
      bad = np.flatnonzero(va != vb)
      for f in bad[:8].tolist():
        t, r, c = np.unravel_index(f, va.shape)
        x, y = va[t, r, c], vb[t, r, c]
        out.append(f"hbm {addr + t} [{r}][{c}] (dump hbm {addr} tile {t}): {x:#010x} ({np.uint32(x).view(np.int32)}) != {y:#010x} ({np.uint32(y).view(np.int32)})")
      if len(bad) > 8:
        out.append(f"{where}: ... {len(bad) - 8} more lanes differ")
      continue
    bad = np.argwhere(va != vb)
    for idx in bad[:8]:
      i = tuple(idx.tolist())
      lane = f"s{i[0]}" if kind == "sreg" else "[" + "][".join(map(str, i)) + "]"
      out.append(f"{where} {lane}: {va[i]:#010x} ({np.uint32(va[i]).view(np.int32)}) != {vb[i]:#010x} ({np.uint32(vb[i]).view(np.int32)})")
    if len(bad) > 8:
      out.append(f"{where}: ... {len(bad) - 8} more lanes differ")
  return out
