"""The one configuration object: it drives the SV parameters, the golden model, the assembler and
the backend. Defaults and legal ranges come from architecture.md section 2."""
from __future__ import annotations

import dataclasses


class ConfigError(ValueError):
  pass


N_MAX = 16  # lane indices and VEXTRACT's row/column fields are 4 bits


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
  # HBM (doc/hbm.md): capacity in tiles, and the timing of the RTL model (the golden model is
  # cycle-free and uses the capacity only): read latency in cycles from request to data, write
  # latency to acknowledge, and bandwidth HBM_BW_NUM / HBM_BW_DEN tiles per cycle (at most 1: a
  # core's DMA port moves one tile a cycle)
  HBM_TILES: int = 1 << 20
  HBM_LATENCY: int = 100
  HBM_BW_NUM: int = 1
  HBM_BW_DEN: int = 1
  # on-chip network (doc/noc.md): endpoints on the ring (2 TensorCores, HBM, SparseCore) and the
  # pipeline registers of every link (>= 1)
  NOC_NODES: int = 4
  NOC_LINK_LATENCY: int = 2

  # (name, minimum) for every parameter that must be a power of two
  _POW2_MIN = (("N", 2), ("VMEM_TILES", 64), ("PSUM_TILES", 8), ("IMEM_WORDS", 256), ("HBM_TILES", 64))
  _HBM_DEFAULT = (1 << 20, 100, 1, 1)
  _NOC_DEFAULT = (4, 2)

  def __post_init__(self):
    for name, lo in self._POW2_MIN:
      v = getattr(self, name)
      if not isinstance(v, int) or isinstance(v, bool):
        raise ConfigError(f"config: {name} must be an int, got {v!r}")
      if not _is_pow2(v) or v < lo:
        raise ConfigError(f"config: {name}={v} must be a power of two >= {lo}")
    if self.N > N_MAX:
      raise ConfigError(f"config: N={self.N} must be <= {N_MAX} (lane indices and VEXTRACT fields are 4 bits)")
    if self.VMEM_TILES > 1 << 20 or self.PSUM_TILES > 1 << 16 or self.IMEM_WORDS > 1 << 16:
      raise ConfigError(f"config: memory sizes out of range (VMEM_TILES <= 2^20, PSUM_TILES <= 2^16, IMEM_WORDS <= 2^16): {self}")
    for name in ("HBM_LATENCY", "HBM_BW_NUM", "HBM_BW_DEN"):
      v = getattr(self, name)
      if not isinstance(v, int) or isinstance(v, bool):
        raise ConfigError(f"config: {name} must be an int, got {v!r}")
    if self.HBM_TILES > 1 << 26:
      raise ConfigError(f"config: HBM_TILES={self.HBM_TILES} must be <= 2^26")
    if not 1 <= self.HBM_LATENCY <= 1024:
      raise ConfigError(f"config: HBM_LATENCY={self.HBM_LATENCY} must be in [1, 1024] cycles")
    if not 1 <= self.HBM_BW_NUM <= self.HBM_BW_DEN <= 64:
      raise ConfigError(f"config: HBM bandwidth {self.HBM_BW_NUM}/{self.HBM_BW_DEN} tiles per cycle: need 1 <= HBM_BW_NUM <= HBM_BW_DEN <= 64")
    for name, lo, hi in (("NOC_NODES", 2, 16), ("NOC_LINK_LATENCY", 1, 16)):
      v = getattr(self, name)
      if not isinstance(v, int) or isinstance(v, bool) or not lo <= v <= hi:
        raise ConfigError(f"config: {name}={v!r} must be an int in [{lo}, {hi}]")
    if self.VREGS != 16 or self.SREGS != 16:
      raise ConfigError("config: VREGS and SREGS are fixed at 16")

  @property
  def lanes(self) -> int:
    """Lanes per tile (N*N)."""
    return self.N * self.N

  @property
  def name(self) -> str:
    """Stable name of this configuration, used for build directories."""
    base = f"N{self.N}_V{self.VMEM_TILES}_P{self.PSUM_TILES}_I{self.IMEM_WORDS}"
    if self.hbm_fields() != self._HBM_DEFAULT:  # only a non-default HBM names itself
      base += f"_H{self.HBM_TILES}_L{self.HBM_LATENCY}_B{self.HBM_BW_NUM}of{self.HBM_BW_DEN}"
    if (self.NOC_NODES, self.NOC_LINK_LATENCY) != self._NOC_DEFAULT:
      base += f"_R{self.NOC_NODES}L{self.NOC_LINK_LATENCY}"
    return base

  def hbm_fields(self) -> tuple[int, int, int, int]:
    return (self.HBM_TILES, self.HBM_LATENCY, self.HBM_BW_NUM, self.HBM_BW_DEN)

  @property
  def hbm_bw(self) -> float:
    """HBM bandwidth in tiles per cycle."""
    return self.HBM_BW_NUM / self.HBM_BW_DEN

  def header_fields(self) -> dict[str, int]:
    """The configuration fields a bundle header carries."""
    return {"N": self.N, "VMEM_TILES": self.VMEM_TILES, "PSUM_TILES": self.PSUM_TILES}

  def sv_params(self) -> dict[str, int]:
    """Top-level SystemVerilog parameters (passed to Verilator as -G)."""
    return {"N": self.N, "VMEM_TILES": self.VMEM_TILES, "PSUM_TILES": self.PSUM_TILES, "IMEM_WORDS": self.IMEM_WORDS,
            "HBM_TILES": self.HBM_TILES, "HBM_LATENCY": self.HBM_LATENCY, "HBM_BW_NUM": self.HBM_BW_NUM, "HBM_BW_DEN": self.HBM_BW_DEN}

  def noc_params(self) -> dict[str, int]:
    """Parameters of rtl/noc.sv (one flit carries one tile). Not in sv_params() yet: the co-sim top
    has no network; the chip top will take them."""
    return {"NODES": self.NOC_NODES, "LINK_LATENCY": self.NOC_LINK_LATENCY, "PW": self.lanes * 32}

  def verilator_args(self) -> list[str]:
    return [f"-G{k}={v}" for k, v in self.sv_params().items()]

  @classmethod
  def from_str(cls, s: str) -> "Config":
    """Parse `N=8,VMEM_TILES=256` (comma or space separated)."""
    kw = {}
    for part in s.replace(",", " ").split():
      k, sep, v = part.partition("=")
      if not sep or k not in {f.name for f in dataclasses.fields(cls)}:
        raise ConfigError(f"config: cannot parse {part!r} (expected NAME=value with NAME in N, VMEM_TILES, PSUM_TILES, IMEM_WORDS, HBM_TILES, HBM_LATENCY, HBM_BW_NUM, HBM_BW_DEN, NOC_NODES, NOC_LINK_LATENCY)")
      try:
        kw[k] = int(v, 0)
      except ValueError:
        raise ConfigError(f"config: {k}={v!r} is not an integer") from None
    return cls(**kw)


DEFAULT = Config()
# the chip (doc/chip.md): two TensorCores on NoC nodes 0 and 1, the HBM controller on node 2, the
# SparseCore's port on node 3; a core's SIG.SEND names cores 0 .. CHIP_CORES-1
CHIP_CORES = 2
CHIP_HBM_NODE = 2
CHIP_SPARSE_NODE = 3
