"""Bundle format v1 and v2 (doc/bundle.md): the one text format every runner reads (golden
interpreter, RTL co-simulation, backend), and the result format they all print. Version 2 adds
binary side files for large HBM payloads (`binfile`/`hbmbin` in, `resultfile` out).

A bundle is a header, memory and scalar preloads, the program (`inst` words or `asm` lines), the
dumps to print after the run and the `run` record with the watchdog limit. Parsing goes through the
TASM assembler (tinytpu/asm.py), so every record is checked by exactly one piece of code.

The records themselves (Bundle, Result, the checks, the result lines) live one layer down in
tinytpu/records.py and are re-exported here; this module adds parse() and write(), which need the
assembler, so that `bundle.parse`, `bundle.Result` and the rest are found in one place."""
from __future__ import annotations

import os
import re

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


