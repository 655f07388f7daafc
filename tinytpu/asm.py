"""TASM, the TinyTPU assembler and disassembler (doc/tasm.md). Table-driven: every mnemonic, operand
kind, field and range comes from tinytpu/isa.py, so a new instruction needs no change here.

  loop:  VLD v1, [s1 + 4]     # labels, `#` or `;` comments, case-insensitive mnemonics
         LOOPI 8, end         # targets: a label, or a number relative to this instruction's pc
  end:   HALT
  .vmem 4 1 2 3 ... 1.5f      # data directives: .vmem/.psum/.hbm addr v*N*N, .sreg r v, .dump, .run, .word
                              # (and bundle v2's .binfile path, .hbmbin addr count offset, .resultfile path)
"""
from __future__ import annotations

import math
import os
import re
import stat

import numpy as np

from tinytpu import isa
from tinytpu.config import DEFAULT, Config
from tinytpu.records import (DEFAULT_RUN, Bundle, check_dump, check_run, check_sreg, check_tile, check_value, hbm_regions_problem, header,
                             parse_int, read_side)


class AsmError(ValueError):
  def __init__(self, line: int, why: str):
    self.line, self.why = line, why
    super().__init__(f"line {line}: {why}")

  def __reduce__(self):  # picklable with its arguments: tinygrad's compile pool sends exceptions back
    return AsmError, (self.line, self.why)


_LABEL = re.compile(r"([A-Za-z_][\w.]*)\s*:(.*)")
_NAME = re.compile(r"[A-Za-z_][\w.]*")
_FLOAT = re.compile(r"[+-]?((\d+\.?\d*|\.\d+)(e[+-]?\d+)?|inf|nan)f", re.I)


def parse_value(tok: str, floats: bool = True) -> int:
  """A 32-bit value: an integer, or (floats=True) an fp32 literal like `1.5f`, `-2e-3f`, `inff`, `nanf`
  giving its bit pattern."""
  if floats and _FLOAT.fullmatch(tok):
    f = float(tok[:-1])
    with np.errstate(over="ignore"):
      v = np.float32(f)
    if np.isinf(v) and not math.isinf(f):
      raise ValueError(f"fp32 literal {tok} overflows fp32")
    return int(v.view(np.uint32))
  return parse_int(tok)


def _reg(tok: str, kind: str) -> int:
  m = re.fullmatch(r"([sv])(\d+)", tok.strip(), re.I)
  if not m or m[1].lower() != kind[0] or not 0 <= int(m[2]) <= 15:
    raise ValueError(f"expected a {'scalar' if kind == 'sreg' else 'vector'} register {kind[0]}0..{kind[0]}15, got {tok!r}")
  return int(m[2])


def _mem(tok: str) -> tuple[int, int]:
  """`[sX + imm]`, `[sX - imm]`, `[sX]` or `[imm]` -> (base register, offset)."""
  if not (tok.startswith("[") and tok.endswith("]")):
    raise ValueError(f"expected a memory operand [sX + imm], [sX] or [imm], got {tok!r}")
  s = tok[1:-1].strip()
  m = re.fullmatch(r"(s\d+)\s*(?:([+-])\s*(\S+))?", s, re.I)
  if m is None:
    return 0, parse_int(s)
  base = _reg(m[1], "sreg")
  off = parse_int(m[3]) if m[3] else 0
  return base, -off if m[2] == "-" else off


def _in_range(ins: isa.Instr, o: isa.Operand, v: int, N: int) -> int:
  lo, hi = isa.operand_range(o, N)
  if o.kind == "simm" and isa.FIELDS[o.field][1] == 32 and hi < v <= (1 << 32) - 1:
    v -= 1 << 32  # a 32-bit immediate may be written as its unsigned bits (0xFFFFFFFF, fp32 literals)
  if not lo <= v <= hi:
    raise ValueError(f"{ins.mnemonic}: operand {o.name}={v} out of range [{lo}, {hi}]")
  return v


def _encode(text: str, pc: int, labels: dict[str, tuple[int, int]], N: int) -> int:
  mnem, _, rest = text.partition(" ")
  ins = isa.BY_MNEMONIC.get(mnem.upper())
  if ins is None:
    raise ValueError(f"unknown mnemonic {mnem!r}")
  toks = [t.strip() for t in rest.split(",")] if rest.strip() else []
  if len(toks) != len(ins.operands):
    raise ValueError(f"{ins.mnemonic} takes {len(ins.operands)} operands ({ins.syntax}), got {len(toks)}")
  vals: dict[str, int] = {}
  for o, t in zip(ins.operands, toks):
    if not t:
      raise ValueError(f"{ins.mnemonic}: operand {o.name} is empty")
    if o.kind in ("sreg", "vreg"):
      vals[o.name] = _reg(t, o.kind)
    elif o.kind == "mem":
      vals[o.name + "_base"], off = _mem(t)
      vals[o.name] = _in_range(ins, o, off, N)
    elif o.kind == "target":
      if _NAME.fullmatch(t):
        if t not in labels:
          raise ValueError(f"undefined label {t!r}")
        v = labels[t][0] - pc
      else:
        v = parse_int(t)
      vals[o.name] = _in_range(ins, o, v, N)
    elif ins.mnemonic == "RDPERF" and t.lower() in isa.PERF:
      vals[o.name] = isa.PERF[t.lower()]
    else:
      wide = o.kind == "simm" and isa.FIELDS[o.field][1] == 32  # 32-bit immediates may be fp32 literals
      vals[o.name] = _in_range(ins, o, parse_value(t, floats=wide), N)
  return isa.encode(ins, vals, N)  # raises ValueError on the checks beyond ranges (LOOP end >= 2)


def _values(rest: str, floats: bool) -> list[int]:
  return [parse_value(t, floats) for t in re.split(r"[\s,]+", rest.strip()) if t]


def assemble_lines(lines: list[tuple[int, str]], config: Config, floats: bool = True) -> Bundle:
  """Assemble numbered TASM lines (code and data directives) into a Bundle. `floats` allows fp32
  literals in data directives. Raises AsmError("line L: why")."""
  b = Bundle(config=config, max_cycles=DEFAULT_RUN)
  labels: dict[str, tuple[int, int]] = {}  # name -> (pc, line)
  code: list[tuple[int, str | int]] = []   # (line, instruction text or a checked .word)
  seen: dict[tuple[str, int], int] = {}    # (space, address) -> line of its preload
  run_line = None
  # HBM regions in record order: (first tile, tiles (a list while `hbm` records extend it), line of
  # its first record); `.hbm` continues the region of the HBM record just before it when that was
  # an `.hbm` of the tile before
  regions: list[tuple[int, list | np.ndarray, int]] = []
  hbm_next = None                            # the tile an `.hbm` record would continue the last region with
  binfile = None                             # (path, line) of `.binfile`
  result_line = None
  for ln, raw in lines:
    try:
      s = re.split(r"[#;]", raw, maxsplit=1)[0].strip()
      while m := _LABEL.match(s):
        if m[1] in labels:
          raise ValueError(f"duplicate label {m[1]!r} (first on line {labels[m[1]][1]})")
        labels[m[1]] = (len(code), ln)
        s = m[2].strip()
      if not s:
        continue
      if not s.startswith("."):
        code.append((ln, " ".join(s.split())))
      else:
        d, _, rest = s.partition(" ")
        d, toks = d.lower(), rest.split()
        if d in (".vmem", ".psum"):
          if not toks:
            raise ValueError(f"{d[1:]} needs an address and {config.lanes} values")
          addr = parse_int(toks[0])
          tile = check_tile(config, d[1:], addr, _values(rest.strip()[len(toks[0]):], floats))
          if (d, addr) in seen:
            raise ValueError(f"{d[1:]} {addr} already preloaded on line {seen[d, addr]}")
          seen[d, addr] = ln
          (b.vmem if d == ".vmem" else b.psum)[addr] = tile
        elif d == ".hbm":
          if not toks:
            raise ValueError(f"hbm needs an address and {config.lanes} values")
          addr = parse_int(toks[0])
          tile = check_tile(config, "hbm", addr, _values(rest.strip()[len(toks[0]):], floats))
          if (d, addr) in seen:
            raise ValueError(f"hbm {addr} already preloaded on line {seen[d, addr]}")
          seen[d, addr] = ln
          if hbm_next == addr:
            regions[-1][1].append(tile)
          else:
            regions.append((addr, [tile], ln))
          hbm_next = addr + 1
        elif d == ".binfile":
          if len(toks) != 1:
            raise ValueError(f"binfile takes one path (no spaces, `#` or `;`), got {len(toks)} values")
          if binfile is not None:
            raise ValueError(f"duplicate `binfile` (first on line {binfile[1]})")
          try:
            st = os.stat(toks[0])
          except OSError as e:
            raise ValueError(f"binfile {toks[0]!r}: {os.strerror(e.errno)}") from None
          if not stat.S_ISREG(st.st_mode):
            raise ValueError(f"binfile {toks[0]!r} is not a regular file")
          binfile = (toks[0], ln)
        elif d == ".hbmbin":
          if len(toks) != 3:
            raise ValueError(f"hbmbin takes an address, a tile count and a byte offset, got {len(toks)} values")
          addr, count, off = (parse_int(t) for t in toks)
          if binfile is None:
            raise ValueError("hbmbin needs a `binfile` record before it")
          if not 0 <= addr < config.HBM_TILES:
            raise ValueError(f"hbmbin address {addr} out of range [0, {config.HBM_TILES})")
          if not 1 <= count <= config.HBM_TILES:
            raise ValueError(f"hbmbin count {count} out of range [1, {config.HBM_TILES}]")
          if not 0 <= off < 1 << 62 or off % 4:
            raise ValueError(f"hbmbin offset {off} must be a multiple of 4 in [0, 2^62)")
          try:
            lanes = read_side(binfile[0], off, count * config.lanes * 4, "binfile")
          except ValueError as e:
            raise ValueError(f"hbmbin {addr} {count}: {e}") from None
          regions.append((addr, lanes.reshape(count, config.N, config.N), ln))
          hbm_next = None
        elif d == ".resultfile":
          if len(toks) != 1:
            raise ValueError(f"resultfile takes one path (no spaces, `#` or `;`), got {len(toks)} values")
          if result_line is not None:
            raise ValueError(f"duplicate `resultfile` (first on line {result_line})")
          b.resultfile, result_line = toks[0], ln
        elif d == ".sreg":
          vals = _values(rest, floats)
          if len(vals) != 2:
            raise ValueError(f"sreg takes a register number and a value, got {len(vals)} values")
          v = check_sreg(vals[0], vals[1])
          if (d, vals[0]) in seen:
            raise ValueError(f"sreg {vals[0]} already preloaded on line {seen[d, vals[0]]}")
          seen[d, vals[0]] = ln
          b.sregs[vals[0]] = v
        elif d == ".dump":
          if not toks:
            raise ValueError("dump needs vmem, psum, hbm or sreg")
          b.dumps.append(check_dump(config, toks[0].lower(), [parse_int(t) for t in toks[1:]]))
        elif d == ".run":
          if run_line is not None:
            raise ValueError(f"duplicate `run` (first on line {run_line})")
          if len(toks) != 1:
            raise ValueError(f"run takes one watchdog limit in cycles, got {len(toks)} values")
          b.max_cycles, run_line = check_run(parse_int(toks[0])), ln
        elif d == ".word":
          if len(toks) != 1:
            raise ValueError(f"an instruction word is one value, got {len(toks)}")
          w = parse_int(toks[0])
          if not 0 <= w < 1 << isa.WORD_BITS:
            raise ValueError(f"instruction word {toks[0]} is not a 64-bit value")
          # an illegal word is legal bundle content: the core traps with illegal_instruction when it runs
          code.append((ln, w))
        else:
          raise ValueError(f"unknown directive {d!r} (expected .vmem, .psum, .hbm, .sreg, .dump, .run, .word, .binfile, .hbmbin or .resultfile)")
      if len(code) > config.IMEM_WORDS:
        raise ValueError(f"program longer than IMEM_WORDS={config.IMEM_WORDS}")
    except ValueError as e:
      raise AsmError(ln, str(e)) from None
  b.hbm = [(a, np.stack(t) if isinstance(t, list) else t) for a, t, _ in regions]
  if (p := hbm_regions_problem(config, b.hbm)) is not None:  # overlaps, a binary region past HBM_TILES
    raise AsmError(regions[p[0]][2], p[1])
  for pc, (ln, item) in enumerate(code):
    try:
      b.program.append(item if isinstance(item, int) else _encode(item, pc, labels, config.N))
    except ValueError as e:
      raise AsmError(ln, str(e)) from None
  return b


def assemble_bundle(text: str, config: Config = DEFAULT) -> Bundle:
  """A whole TASM file (code and data directives) as a Bundle; no `.run` gives run DEFAULT_RUN."""
  return assemble_lines(list(enumerate(text.splitlines(), 1)), config)


def assemble(text: str, N: int = 4) -> list[int]:
  """The instruction words of a TASM text (data directives are checked against the default memory sizes)."""
  return assemble_bundle(text, Config(N=N)).program


# ---------------------------------------------------------------------------------------------
def _operand_text(ins: isa.Instr, o: isa.Operand, vals: dict[str, int]) -> str:
  v = vals[o.name]
  if o.kind in ("sreg", "vreg"):
    return f"{o.kind[0]}{v}"
  if o.kind == "mem":
    base = vals[o.name + "_base"]
    if base == 0:
      return f"[{v}]"
    return f"[s{base}]" if v == 0 else f"[s{base} {'-' if v < 0 else '+'} {abs(v)}]"
  if ins.mnemonic == "RDPERF":
    return isa.PERF_COUNTERS[v][0]
  return str(v)


def _decode(w: int, N: int, pc: int | None) -> tuple[isa.Instr, dict[str, int]]:
  try:
    return isa.decode(w, N)
  except isa.IllegalInstruction as e:
    where = f"pc {pc}: " if pc is not None else ""
    raise isa.IllegalInstruction(f"{where}illegal word 0x{w:016x}: {e}") from None


def disassemble_word(w: int, N: int = 4, pc: int | None = None) -> str:
  """One word as TASM text; raises isa.IllegalInstruction naming the word and why it is illegal."""
  ins, vals = _decode(w, N, pc)
  return " ".join([ins.mnemonic, ", ".join(_operand_text(ins, o, vals) for o in ins.operands)]).strip()


def disassemble(words: list[int], N: int = 4) -> str:
  """TASM text of a program, one instruction a line; assemble() gives the same words back. Branch and
  loop targets stay pc-relative numbers, with the absolute target in a comment."""
  out = []
  for pc, w in enumerate(words):
    try:
      ins, vals = isa.decode(w, N)
    except isa.IllegalInstruction as e:
      out.append(f"{'.word 0x%016x' % w:32s}# {pc}: illegal: {e}")
      continue
    line = disassemble_word(w, N, pc)
    tgt = [pc + vals[o.name] for o in ins.operands if o.kind == "target"]
    out.append(f"{line:32s}# {pc}: -> {tgt[0]}" if tgt else f"{line:32s}# {pc}")
  return "\n".join(out) + "\n" if out else ""


def bundle_to_tasm(b: Bundle) -> str:
  """A bundle as a TASM file: assemble_bundle(bundle_to_tasm(b), b.config) gives b back."""
  ints = lambda t: " ".join(map(str, np.asarray(t, dtype=np.uint32).view(np.int32).ravel().tolist()))
  out = [f"# {header(b.config)}"]
  out += [f".vmem {a} {ints(t)}" for a, t in b.vmem.items()]
  out += [f".psum {a} {ints(t)}" for a, t in b.psum.items()]
  out += [f".hbm {a + i} {ints(t)}" for a, tiles in b.hbm for i, t in enumerate(tiles)]
  out += [f".sreg {r} {check_value(v) - ((v & 0x80000000) << 1)}" for r, v in b.sregs.items()]
  out += disassemble(b.program, b.config.N).splitlines()
  out += [f".dump {k} {a} {c}" if k != "sreg" else ".dump sreg" for k, a, c in b.dumps]
  out.append(f".run {b.max_cycles}")
  return "\n".join(out) + "\n"
