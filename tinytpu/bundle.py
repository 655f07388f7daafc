"""Bundle format v1 (doc/bundle.md): the one text format every runner reads (golden interpreter,
RTL co-simulation, backend), and the result format they all print.

A bundle is a header, memory and scalar preloads, the program (`inst` words or `asm` lines), the
dumps to print after the run and the `run` record with the watchdog limit. Parsing goes through the
TASM assembler (tinytpu/asm.py), so every record is checked by exactly one piece of code.

The records themselves (Bundle, Result, the checks, the result lines) live one layer down in
tinytpu/records.py and are re-exported here; this module adds parse() and write(), which need the
assembler, so that `bundle.parse`, `bundle.Result` and the rest are found in one place."""
from __future__ import annotations

import numpy as np

from tinytpu import asm, isa
from tinytpu.config import DEFAULT, Config
from tinytpu.records import (DEFAULT_RUN, MAGIC, MAX_RUN, RECORDS, VERSION, Bundle, BundleError, Result, check_dump, check_run,  # noqa: F401
                             check_sreg, check_tile, check_value, diff_results, format_result, header, ints, parse_header,
                             parse_int, parse_result)


# ---------------------------------------------------------------------------------------------
def parse(text: str, config: Config | None = None) -> Bundle:
  """Parse and validate a bundle. `config` is the built model's configuration (the header must match
  it); None takes the configuration from the header. Raises BundleError("error line L: why")."""
  lines = text.splitlines()
  cfg, run_line = None, None
  body: list[tuple[int, str]] = []  # TASM lines for the assembler, with their bundle line numbers
  for ln, raw in enumerate(lines, 1):
    s = raw.split("#", 1)[0].strip()
    if not s:
      continue
    try:
      if cfg is None:
        cfg = parse_header(s, config)
        continue
      rec, rest = (s.split(None, 1) + [""])[:2]
      if rec == "run" and run_line is not None:
        raise ValueError(f"duplicate `run` (first on line {run_line})")
      if run_line is not None:
        raise ValueError(f"record `{rec}` after `run` (line {run_line}): `run` must be the last record")
      if rec not in RECORDS:
        raise ValueError(f"unknown record {rec!r} (expected one of {', '.join(RECORDS)})")
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


def write(b: Bundle) -> str:
  """The bundle as text (parse(write(b)) == b). Instructions carry their disassembly as a comment."""
  out = [header(b.config)]
  out += [f"vmem {a} {ints(t)}" for a, t in b.vmem.items()]
  out += [f"psum {a} {ints(t)}" for a, t in b.psum.items()]
  out += [f"sreg {r} {np.uint32(v).view(np.int32)}" for r, v in b.sregs.items()]
  out += [f"inst 0x{w:016x}  # {_disasm_comment(w, b.config.N, pc)}" for pc, w in enumerate(b.program)]
  out += [f"dump {k} {a} {c}" if k != "sreg" else "dump sreg" for k, a, c in b.dumps]
  out.append(f"run {b.max_cycles}")
  return "\n".join(out) + "\n"


