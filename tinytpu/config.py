"""The one configuration object: it drives the SV parameters, the golden model, the assembler and
the backend. Defaults and legal ranges come from architecture.md section 2."""
from __future__ import annotations

import dataclasses


class ConfigError(ValueError):
  pass


def _is_pow2(x: int) -> bool:
  return x > 0 and (x & (x - 1)) == 0


@dataclasses.dataclass(frozen=True)
class Config:
  N: int = 4              # array rows = cols = sublanes = lanes
  VMEM_TILES: int = 1024  # N x N int32 tiles of scratchpad
  PSUM_TILES: int = 64    # N x N int32 tiles of MXU accumulator memory
  IMEM_WORDS: int = 4096  # 64-bit program words
  VREGS: int = 16
  SREGS: int = 16

  # (name, minimum) for every parameter that must be a power of two
  _POW2_MIN = (("N", 2), ("VMEM_TILES", 64), ("PSUM_TILES", 8), ("IMEM_WORDS", 256))

  def __post_init__(self):
    for name, lo in self._POW2_MIN:
      v = getattr(self, name)
      if not isinstance(v, int) or isinstance(v, bool):
        raise ConfigError(f"config: {name} must be an int, got {v!r}")
      if not _is_pow2(v) or v < lo:
        raise ConfigError(f"config: {name}={v} must be a power of two >= {lo}")
    if self.N > 16:
      raise ConfigError(f"config: N={self.N} must be <= 16 (lane indices and VEXTRACT fields are 4 bits)")
    if self.VMEM_TILES > 1 << 20 or self.PSUM_TILES > 1 << 16 or self.IMEM_WORDS > 1 << 16:
      raise ConfigError(f"config: memory sizes out of range (VMEM_TILES <= 2^20, PSUM_TILES <= 2^16, IMEM_WORDS <= 2^16): {self}")
    if self.VREGS != 16 or self.SREGS != 16:
      raise ConfigError("config: VREGS and SREGS are fixed at 16")

  @property
  def lanes(self) -> int:
    """Lanes per tile (N*N)."""
    return self.N * self.N

  @property
  def name(self) -> str:
    """Stable name of this configuration, used for build directories."""
    return f"N{self.N}_V{self.VMEM_TILES}_P{self.PSUM_TILES}_I{self.IMEM_WORDS}"

  def header_fields(self) -> dict[str, int]:
    """The configuration fields a bundle header carries."""
    return {"N": self.N, "VMEM_TILES": self.VMEM_TILES, "PSUM_TILES": self.PSUM_TILES}

  def sv_params(self) -> dict[str, int]:
    """Top-level SystemVerilog parameters (passed to Verilator as -G)."""
    return {"N": self.N, "VMEM_TILES": self.VMEM_TILES, "PSUM_TILES": self.PSUM_TILES, "IMEM_WORDS": self.IMEM_WORDS}

  def verilator_args(self) -> list[str]:
    return [f"-G{k}={v}" for k, v in self.sv_params().items()]

  @classmethod
  def from_str(cls, s: str) -> "Config":
    """Parse `N=8,VMEM_TILES=256` (comma or space separated)."""
    kw = {}
    for part in s.replace(",", " ").split():
      k, sep, v = part.partition("=")
      if not sep or k not in {f.name for f in dataclasses.fields(cls)}:
        raise ConfigError(f"config: cannot parse {part!r} (expected NAME=value with NAME in N, VMEM_TILES, PSUM_TILES, IMEM_WORDS)")
      try:
        kw[k] = int(v, 0)
      except ValueError:
        raise ConfigError(f"config: {k}={v!r} is not an integer") from None
    return cls(**kw)


DEFAULT = Config()
