"""A lowered kernel as its TASM listing, and back.

The renderer's output is the kernel's readable assembly (what tinygrad's `DEBUG=4` prints): the
program, the constant tiles as `.vmem` directives, and what the runtime needs besides the program
as `#@` lines, which TASM reads as comments, so the listing assembles as it is
(`python -m tinytpu asm`):

    #@ kernel r_4_4_4 N=4 vmem_tiles=7 executed=230
    #@ buffer slot=0 dtype=float size=1 base=0 written
    #@ var slot=0 name=i sreg=3
    #@ int8 slot=1 elements=0-63,80-95

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

  def to_bytes(self) -> bytes:
    d = dataclasses.asdict(self) | {
      "const_tiles": {str(t): v.ravel().tolist() for t, v in self.const_tiles.items()},
      "bufs": [[b.slot, _NAME[b.dtype], b.size, b.base] for b in self.bufs],
      "int8_checks": [[s, e.tolist()] for s, e in self.int8_checks]}
    return json.dumps(d).encode()

  @staticmethod
  def from_bytes(data: bytes) -> "Compiled":
    d = json.loads(data)
    N = d["N"]
    d["const_tiles"] = {int(t): np.array(v, dtype=np.uint32).reshape(N, N) for t, v in d["const_tiles"].items()}
    d["bufs"] = [BufInfo(s, _DTYPES[dt], size, base) for s, dt, size, base in d["bufs"]]
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


def render(name: str, k) -> str:
  """The listing of a lowered kernel (backend.lower.Kernel)."""
  head = [f"#@ kernel {name} N={k.N} vmem_tiles={k.vmem_tiles} executed={k.executed if k.executed is not None else '-'}"]
  head += [f"#@ buffer slot={b.slot} dtype={_NAME[b.dtype]} size={b.size} base={b.base}" + (" written" if b.slot in k.written else "")
           for b in k.bufs]
  head += [f"#@ var slot={s} name={n} sreg={r}" for s, n, r in k.var_regs]
  head += [f"#@ int8 slot={s} elements={_runs(e)}" for s, e in k.int8_checks]
  tiles = [f".vmem {t} {' '.join(str(v & 0xFFFFFFFF) for v in vals)}" for t, vals in sorted(k.const_tiles.items())]
  return "\n".join(head) + "\n" + k.asm + "\n".join(tiles) + "\n"


_FIELD = re.compile(r"(\w+)=(\S+)")


def compile_listing(text: str, cfg: Config) -> Compiled:
  """A listing back into its program and layout (AsmError for a malformed program)."""
  meta = [ln[3:].split() for ln in text.splitlines() if ln.startswith("#@ ")]
  kern = next(m for m in meta if m[0] == "kernel")
  kv = lambda m: dict(_FIELD.findall(" ".join(m[1:])))
  top = kv(kern)
  if int(top["N"]) != cfg.N:
    raise ValueError(f"TINYTPU kernel {kern[1]}: listing is for N={top['N']}, the backend core has N={cfg.N}")
  if int(top["vmem_tiles"]) > cfg.VMEM_TILES:  # before the assembler finds an address past the end
    raise RuntimeError(f"TINYTPU kernel {kern[1]}: needs {top['vmem_tiles']} VMEM tiles, the core has {cfg.VMEM_TILES} "
                       "(every buffer of a kernel must fit in VMEM: no HBM/DMA yet)")
  bufs, written, var_regs, checks = [], [], [], []
  for m in meta:
    f = kv(m)
    if m[0] == "buffer":
      bufs.append(BufInfo(int(f["slot"]), _DTYPES[f["dtype"]], int(f["size"]), int(f["base"])))
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
  return Compiled(kern[1], cfg.N, list(b.program), dict(b.vmem), bufs, written, var_regs, int(top["vmem_tiles"]), checks,
                  None if top["executed"] == "-" else int(top["executed"]))
