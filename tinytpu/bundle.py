"""Bundle format v1 and v2 (doc/bundle.md): the one text format every runner reads (golden
interpreter, RTL co-simulation, backend), and the result format they all print. Version 2 adds
binary side files for large HBM payloads (`binfile`/`hbmbin` in, `resultfile` out); Transfer (at the
end) moves a Bundle object to a runner that way and reads its answer back.

A bundle is a header, memory and scalar preloads, the program (`inst` words or `asm` lines), the
dumps to print after the run and the `run` record with the watchdog limit. Parsing goes through the
TASM assembler (tinytpu/asm.py), so every record is checked by exactly one piece of code.

The records themselves (Bundle, Result, the checks, the result lines) live one layer down in
tinytpu/records.py and are re-exported here; this module adds parse() and write(), which need the
assembler, so that `bundle.parse`, `bundle.Result` and the rest are found in one place."""
from __future__ import annotations

import atexit
import dataclasses
import os
import pathlib
import re
import tempfile

import numpy as np

from tinytpu import asm, isa
from tinytpu.config import DEFAULT, Config
from tinytpu.records import (DEFAULT_RUN, MAGIC, MAX_RUN, RECORDS, RECORDS_V2, VERSION, VERSIONS, Bundle, BundleError,  # noqa: F401
                             Result, check_dump, check_hbm_regions, check_run, check_sreg, check_tile, check_value, diff_results,
                             format_result, header, ints, parse_header, parse_int, parse_result, read_header)


# ---------------------------------------------------------------------------------------------
def parse(text: str, config: Config | None = None) -> Bundle:
  """Parse and validate a bundle. `config` is the built model's configuration (the header must match
  it); None takes the configuration from the header. Raises BundleError("error line L: why")."""
  lines = text.splitlines()
  cfg, run_line, version = None, None, 1
  body: list[tuple[int, str]] = []  # TASM lines for the assembler, with their bundle line numbers
  for ln, raw in enumerate(lines, 1):
    s = raw.split("#", 1)[0].strip()
    if not s:
      continue
    try:
      if cfg is None:
        cfg, version = read_header(s, config)
        continue
      rec, rest = (s.split(None, 1) + [""])[:2]
      if rec == "run" and run_line is not None:
        raise ValueError(f"duplicate `run` (first on line {run_line})")
      if run_line is not None:
        raise ValueError(f"record `{rec}` after `run` (line {run_line}): `run` must be the last record")
      if version == 1 and rec in RECORDS_V2 and rec not in RECORDS:
        raise ValueError(f"record `{rec}` needs a version 2 bundle (header `{MAGIC} 2 ...`)")
      if rec not in (RECORDS if version == 1 else RECORDS_V2):
        raise ValueError(f"unknown record {rec!r} (expected one of {', '.join(RECORDS if version == 1 else RECORDS_V2)})")
      if rec == "asm":
        if rest.strip().startswith("."):
          raise ValueError("an `asm` record holds an instruction or label, not a directive")
        body.append((ln, rest))
      elif rec == "inst":
        body.append((ln, ".word " + rest))
      else:
        if rec == "run":
          run_line = ln
        body.append((ln, f".{rec} {rest}"))
    except ValueError as e:
      raise BundleError(ln, str(e)) from None
  if cfg is None:
    raise BundleError(len(lines) + 1, f"missing header `{header(config or DEFAULT)}`")
  if run_line is None:
    raise BundleError(len(lines) + 1, "missing `run <watchdog cycles>` record")
  try:
    return asm.assemble_lines(body, cfg, floats=False)
  except asm.AsmError as e:
    raise BundleError(e.line, e.why) from None


def _disasm_comment(w: int, N: int, pc: int) -> str:
  try:
    return asm.disassemble_word(w, N)
  except isa.IllegalInstruction as e:
    return f"pc {pc}: {e}"


_PATH = re.compile(r"[^\s#;]+")


def write(b: Bundle, version: int = VERSION, binfile: str | os.PathLike | None = None,
          resultfile: str | os.PathLike | None = None) -> str:
  """The bundle as text (parse(write(b)) == b, except that HBM regions written as `hbm` text records
  that touch, one ending where the next begins, come back as one region: the same HBM contents).
  Instructions carry their disassembly as a comment.

  version=2 with `binfile`: every HBM region goes to that file as raw little-endian uint32 lanes
  (one `hbmbin` record each; the file is created, or overwritten and cut to size); `resultfile` (or b.resultfile)
  names where the runner writes the lanes of `dump hbm` regions. Raises ValueError on HBM regions
  that overlap or leave HBM_TILES, naming the region."""
  if version not in VERSIONS:
    raise ValueError(f"unsupported bundle version {version} (this writer writes versions 1 and 2)")
  resultfile = resultfile if resultfile is not None else b.resultfile
  if version == 1 and (binfile is not None or resultfile is not None):
    raise ValueError("side files (binfile, resultfile) need bundle version 2")
  for what, p in (("binfile", binfile), ("resultfile", resultfile)):
    if p is not None and not _PATH.fullmatch(str(p)):
      raise ValueError(f"{what} path {str(p)!r} must be non-empty without whitespace, `#` or `;`")
  check_hbm_regions(b.config, b.hbm)
  out = [header(b.config, version)]
  if binfile is not None:
    out.append(f"binfile {binfile}")
  if resultfile is not None:
    out.append(f"resultfile {resultfile}")
  out += [f"vmem {a} {ints(t)}" for a, t in b.vmem.items()]
  out += [f"psum {a} {ints(t)}" for a, t in b.psum.items()]
  if binfile is not None:
    # overwritten in place, then cut to size: rewriting the pages of an existing file (a side file
    # a server reuses) is much cheaper than allocating new ones
    fd = os.open(binfile, os.O_RDWR | os.O_CREAT, 0o644)
    try:
      off = 0
      for a, tiles in b.hbm:
        out.append(f"hbmbin {a} {len(tiles)} {off}")
        mv = memoryview(np.ascontiguousarray(tiles, dtype="<u4")).cast("B")
        while mv:
          n = os.pwrite(fd, mv, off)
          mv, off = mv[n:], off + n
      os.ftruncate(fd, off)
    finally:
      os.close(fd)
  else:
    out += [f"hbm {a + i} {ints(t)}" for a, tiles in b.hbm for i, t in enumerate(tiles)]
  out += [f"sreg {r} {np.uint32(v).view(np.int32)}" for r, v in b.sregs.items()]
  out += [f"inst 0x{w:016x}  # {_disasm_comment(w, b.config.N, pc)}" for pc, w in enumerate(b.program)]
  out += [f"dump {k} {a} {c}" if k != "sreg" else "dump sreg" for k, a, c in b.dumps]
  out.append(f"run {b.max_cycles}")
  return "\n".join(out) + "\n"


# ---------------------------------------------------------------------------------------------
# transport: how a Bundle object reaches a runner and its result comes back (doc/bundle.md,
# "Transport"; tinytpu/transport.py re-exports these and measures them)
BINARY_MIN_LANES = 4096  # HBM lanes (preloaded plus dumped) from which a bundle travels as v2
_LIVE: set[str] = set()  # side files not yet removed


def side_dir() -> str:
  """/dev/shm when it is a writable directory, else the temporary directory."""
  shm = pathlib.Path("/dev/shm")
  return str(shm) if shm.is_dir() and os.access(shm, os.W_OK | os.X_OK) else tempfile.gettempdir()


def hbm_lanes(b: Bundle) -> int:
  """Lanes of HBM payload a run of `b` moves: its preloads and its hbm dumps."""
  return sum(t.size for _, t in b.hbm) + sum(c for k, _, c in b.dumps if k == "hbm") * b.config.lanes


def side_file(kind: str, where: str | None = None) -> str:
  """A new empty side file (removed at exit unless remove()d before)."""
  return _side_file(kind, where)


def remove_side_file(path: str) -> None:
  """Remove a side file (no error if it is gone)."""
  _remove(path)


def _side_file(kind: str, where: str | None) -> str:
  fd, path = tempfile.mkstemp(prefix=f"tinytpu-{os.getpid()}-", suffix=f".{kind}.bin", dir=where or side_dir())
  os.close(fd)
  _LIVE.add(path)
  return path


def _remove(path: str) -> None:
  try:
    os.unlink(path)
  except FileNotFoundError:
    pass
  _LIVE.discard(path)


@atexit.register
def _remove_all() -> None:
  for p in list(_LIVE):
    _remove(p)


class Transfer:
  """One bundle on its way to a runner: `text` (v1, or v2 with side files when `binary`, which
  defaults to hbm_lanes(b) >= BINARY_MIN_LANES), `resultfile` (None unless v2 with hbm dumps), and
  result(out) to read the runner's answer. A context manager: closing removes the side files.
  `binfile`: a side file to overwrite instead of a new one (a Server reuses its own: rewriting pages
  costs less than allocating them); it stays when the Transfer closes. The result file is new every
  time (the Result maps it)."""

  def __init__(self, b: Bundle, binary: bool | None = None, where: str | None = None, binfile: str | None = None):
    self.config = b.config
    self.binfile = self.resultfile = None
    self._own_binfile = binfile is None
    self.version = 2 if (hbm_lanes(b) >= BINARY_MIN_LANES if binary is None else binary) else 1
    b = dataclasses.replace(b, resultfile=None)  # the bundle's own transport is not this one's
    try:
      if self.version == 2:
        self.binfile = (_side_file("in", where) if binfile is None else binfile) if b.hbm else None
        self.resultfile = _side_file("out", where) if any(k == "hbm" for k, _, _ in b.dumps) else None
      self.text = write(b, version=self.version, binfile=self.binfile, resultfile=self.resultfile)
    except BaseException:
      self.close()
      raise

  def result(self, out: str) -> Result:
    """The runner's result text (and the result file, mapped: the file is this Transfer's own) as a
    Result; raises BundleError on bad output."""
    return parse_result(out, self.config, self.resultfile, mapped=True)

  def close(self) -> None:
    for p in (self.binfile if self._own_binfile else None, self.resultfile):
      if p is not None:
        _remove(p)

  def __enter__(self) -> Transfer:
    return self

  def __exit__(self, *exc) -> None:
    self.close()


_RESULTFILE = re.compile(r"^[ \t]*resultfile[ \t]+([^\s#;]+)", re.M)


def resultfile_of(text: str) -> str | None:
  """The `resultfile` a v2 bundle text names (the runner writes its hbm dumps there), or None."""
  if "resultfile" not in text:
    return None
  m = _RESULTFILE.search(text)
  return m[1] if m else None
