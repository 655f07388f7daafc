"""A lowered kernel as its TASM listing, and back.

The renderer's output is the kernel's readable assembly (what tinygrad's `DEBUG=4` prints): the
program, the constant tiles as `.vmem` directives, and what the runtime needs besides the program
as `#@` lines, which TASM reads as comments, so the listing assembles as it is
(`python -m tinytpu asm`):

    #@ kernel r_4_4_4 N=4 vmem_tiles=7 executed=230
    #@ buffer slot=0 dtype=float size=1 base=0 over=0,0 read written
    #@ var slot=0 name=i sreg=3
    #@ int8 slot=1 elements=0-63,80-95

Every buffer lives in HBM: `read` marks the ones the launch must place there (the program DMAs
them in), `written` the ones it dumps back, `over` the HBM tiles a chunked kernel's DMAs touch
before and after the buffer (backend/stream.py). An `LI` that loads an HBM address carries a
`# hbm slot=k` comment: the compiler lists it as a relocation (pc, slot, offset), which the
device patches with the buffer's HBM tile at launch.

The compiler turns a listing into a `Compiled` record (program words, constant tiles, layout),
serialised as JSON for tinygrad's program cache."""
from __future__ import annotations

import dataclasses
import json
import re

import numpy as np
from tinygrad.dtype import DType, dtypes

from tinytpu import asm
from tinytpu.config import Config

# the lane dtypes by their listing names
_DTYPES = {"int32": dtypes.int32, "uint32": dtypes.uint32, "float32": dtypes.float32, "bool": dtypes.bool, "int8": dtypes.int8,
           "uint8": dtypes.uint8, "int16": dtypes.int16, "uint16": dtypes.uint16, "bfloat16": dtypes.bfloat16}
_NAME = {dt: n for n, dt in _DTYPES.items()}


@dataclasses.dataclass
class BufInfo:
  slot: int
  dtype: DType
  size: int
  base: int  # first element address in VMEM (a multiple of N*N)
  read: bool = True     # placed in HBM before the launch (the program DMAs it in)
  over: tuple = (0, 0)  # HBM tiles touched before / after the buffer


@dataclasses.dataclass
class Compiled:
  """What a kernel launch needs: the program, its constant tiles and the buffer layout."""
  name: str
  N: int
  words: list[int]
  const_tiles: dict[int, np.ndarray]             # VMEM tile -> (N, N) uint32
  bufs: list[BufInfo]
  written: list[int]                             # slots the kernel stores to
  var_regs: list[tuple[int, str, int]]           # (slot, variable name, scalar register) in slot order
  vmem_tiles: int
  int8_checks: list[tuple[int, np.ndarray]]      # (slot, element indices) that must hold int8 values
  executed: int | None                           # instructions retired (None: symbolic loop counts)
  relocs: list = dataclasses.field(default_factory=list)  # (pc, slot, tile offset): LI immediates = HBM tile of slot + offset
  guards: list = dataclasses.field(default_factory=list)  # launch guard records (JSON, device.GUARD_KINDS): all must hold
  fallback: str | None = None                    # the program to run when a guard fails, as to_bytes() text (None: an error names the guard)

  def to_bytes(self) -> bytes:
    d = dataclasses.asdict(self) | {
      "const_tiles": {str(t): v.ravel().tolist() for t, v in self.const_tiles.items()},
      "bufs": [[b.slot, _NAME[b.dtype], b.size, b.base, b.read, list(b.over)] for b in self.bufs],
      "int8_checks": [[s, e.tolist()] for s, e in self.int8_checks]}
    return json.dumps(d).encode()

  @staticmethod
  def from_bytes(data: bytes) -> "Compiled":
    d = json.loads(data)
    N = d["N"]
    d["const_tiles"] = {int(t): np.array(v, dtype=np.uint32).reshape(N, N) for t, v in d["const_tiles"].items()}
    d["bufs"] = [BufInfo(s, _DTYPES[dt], size, base, rd, tuple(ov)) for s, dt, size, base, rd, ov in d["bufs"]]
    d["relocs"] = [tuple(r) for r in d["relocs"]]
    d["var_regs"] = [tuple(v) for v in d["var_regs"]]
    d["int8_checks"] = [(s, np.array(e, dtype=np.int64)) for s, e in d["int8_checks"]]
    return Compiled(**d)


def _runs(elems) -> str:
  """Sorted element indices as a,b-c runs."""
  e = np.unique(np.asarray(elems, dtype=np.int64))
  if not len(e):
    return "-"
  cut = np.flatnonzero(np.diff(e) != 1) + 1
  return ",".join(f"{r[0]}" if len(r) == 1 else f"{r[0]}-{r[-1]}" for r in np.split(e, cut))


def _unruns(s: str) -> np.ndarray:
  if s == "-":
    return np.zeros(0, dtype=np.int64)
  parts = [tuple(int(x) for x in p.split("-")) for p in s.split(",")]
  return np.concatenate([np.arange(p[0], p[-1] + 1) for p in parts]).astype(np.int64)


FALLBACK = "#@ fallback"


def render(name: str, k) -> str:
  """The listing of a lowered kernel (backend.lower.Kernel). A kernel with requantising PSUM drains
  (backend/epilogue.py) lists its launch guards (`#@ guard {json}`), then after a `#@ fallback` line
  the whole listing of the same kernel without them, which the launch runs when a guard fails."""
  text = _render(name, k) + "".join(f"#@ guard {json.dumps(g, separators=(',', ':'))}\n" for g in k.guards)
  return text if k.fallback is None else text + FALLBACK + "\n" + _render(name, k.fallback)


def _render(name: str, k) -> str:
  head = [f"#@ kernel {name} N={k.N} vmem_tiles={k.vmem_tiles} executed={k.executed if k.executed is not None else '-'}"]
  win = lambda s: k.windows.get(s)  # noqa: E731
  head += [f"#@ buffer slot={b.slot} dtype={_NAME[b.dtype]} size={b.size} base={b.base} over={w.over[0] if w else 0},{w.over[1] if w else 0}"
           + (" read" if w is None or w.read else "") + (" written" if b.slot in k.written else "") for b in k.bufs for w in [win(b.slot)]]
  head += [f"#@ var slot={s} name={n} sreg={r}" for s, n, r in k.var_regs]
  head += [f"#@ int8 slot={s} elements={_runs(e)}" for s, e in k.int8_checks]
  tiles = [f".vmem {t} {' '.join(str(v & 0xFFFFFFFF) for v in vals)}" for t, vals in sorted(k.const_tiles.items())]
  return "\n".join(head) + "\n" + k.asm + "\n".join(tiles) + "\n"


_FIELD = re.compile(r"(\w+)=(\S+)")


def compile_listing(text: str, cfg: Config) -> Compiled:
  """A listing back into its program and layout (AsmError for a malformed program)."""
  if FALLBACK + "\n" in text:
    main, alt = text.split(FALLBACK + "\n", 1)
    c = compile_listing(main, cfg)
    c.fallback = compile_listing(alt, cfg).to_bytes().decode()
    return c
  meta = [ln[3:].split() for ln in text.splitlines() if ln.startswith("#@ ")]
  kern = next(m for m in meta if m[0] == "kernel")
  kv = lambda m: dict(_FIELD.findall(" ".join(m[1:])))
  top = kv(kern)
  if int(top["N"]) != cfg.N:
    raise ValueError(f"TINYTPU kernel {kern[1]}: listing is for N={top['N']}, the backend core has N={cfg.N}")
  if int(top["vmem_tiles"]) > cfg.VMEM_TILES:  # before the assembler finds an address past the end
    raise RuntimeError(f"TINYTPU kernel {kern[1]}: needs {top['vmem_tiles']} VMEM tiles (one chunk's windows, tables and spills), "
                       f"the core has {cfg.VMEM_TILES}")
  bufs, written, var_regs, checks = [], [], [], []
  for m in meta:
    f = kv(m)
    if m[0] == "buffer":
      over = tuple(int(x) for x in f.get("over", "0,0").split(","))
      bufs.append(BufInfo(int(f["slot"]), _DTYPES[f["dtype"]], int(f["size"]), int(f["base"]), "read" in m or "over" not in f, over))
      if m[-1] == "written":
        written.append(int(f["slot"]))
    elif m[0] == "var":
      var_regs.append((int(f["slot"]), f["name"], int(f["sreg"])))
    elif m[0] == "int8":
      checks.append((int(f["slot"]), _unruns(f["elements"])))
  try:
    b = asm.assemble_bundle(text, cfg)
  except asm.AsmError as e:  # name the kernel: the listing's line alone does not say which one
    raise asm.AsmError(e.line, f"TINYTPU kernel {kern[1]}: {e.why}") from None
  relocs = _relocs(text)
  if len(relocs) and max(pc for pc, _, _ in relocs) >= len(b.program):
    raise ValueError(f"TINYTPU kernel {kern[1]}: relocation past the program's end")
  guards = [json.loads(ln[len("#@ guard "):]) for ln in text.splitlines() if ln.startswith("#@ guard ")]
  return Compiled(kern[1], cfg.N, list(b.program), dict(b.vmem), bufs, written, var_regs, int(top["vmem_tiles"]), checks,
                  None if top["executed"] == "-" else int(top["executed"]), relocs, guards)


_RELOC = re.compile(r"#\s*hbm slot=(\d+)")


def _relocs(text: str) -> list[tuple[int, int, int]]:
  """(pc, slot, offset) of every `LI sX, off  # hbm slot=k` line, pcs counted as the assembler does."""
  out, pc = [], 0
  for raw in text.splitlines():
    s = re.split(r"[#;]", raw, maxsplit=1)[0].strip()
    while m := asm._LABEL.match(s):
      s = m[2].strip()
    if not s or s.startswith("."):
      continue
    if (m := _RELOC.search(raw)) is not None:
      out.append((pc, int(m[1]), asm.parse_value(s.split(",")[-1].strip(), floats=False)))
    pc += 1
  return out


def patch(words: list[int], relocs: list, hbm: dict[int, int]) -> list[int]:
  """The program with every relocated LI immediate set to its buffer's HBM tile plus the offset."""
  out = list(words)
  for pc, slot, off in relocs:
    out[pc] = (out[pc] & ~0xFFFFFFFF) | ((hbm[slot] + off) & 0xFFFFFFFF)
  return out
