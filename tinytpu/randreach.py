"""Items that take the random programs (tinytpu/randprog.py) beyond the well-behaved core
(issue [3/6] item 2, doc/random.md):

- **far tiles**: VLD/VST/PLD (or PEPI.*)/PST/MLW at any tile of VMEM or PSUM (the first, the last, anywhere),
  each far tile the program touches dumped at the end;
- **backward branches**: a loop made of `LI c; body; SADDI c, c, -1; BNE c, s0, body` on a counter
  register the rest of the program never uses, so its count is exact;
- **writes to s0**: scalar results aimed at s0 (which stays 0);
- **traps** (`traps=True`, at most one per program, in a share TRAP_PROGRAMS of them): an undefined
  opcode, a defined one with a reserved bit set, an operand out of range, a VMEM/PSUM access one
  tile past the end or below 0, a DMA past VMEM's end or outside HBM (tinytpu/randdma.py), LBREAK
  outside every loop, a JMP out of the program, a branch out
  of a loop body (the loop stays on the stack: a later LOOP may then trap loop_stack), or a
  watchdog shorter than the program (timeout). RTL and golden must agree on the trap and its pc.
"""
from __future__ import annotations

import numpy as np

from tinytpu import isa
from tinytpu.randtree import BackLoop, Branch, Loop, Op

SALU = [i.mnemonic for i in isa.INSTRS if i.op == isa.OP["SALU"]]
FAR_MAX = 6            # far tiles per program, at most
TRAP_PROGRAMS = 0.12   # share of programs (traps=True) that carry one trap item
TRAP_KINDS = ("undefined", "reserved", "range", "vmem_oob", "psum_oob", "lbreak0", "jmp_out", "loop_exit", "timeout")


class ReachItems:
  """Mixed into randprog._Gen (uses rng, N, config, sp, s(), w(), far, free)."""

  def far_item(self) -> list:
    r, c = self.rng, self.config
    f = str(r.choice(["vld", "vst", "pld", "pst", "mlw"]))
    space = "psum" if f in ("pld", "pst") else "vmem"
    size = c.PSUM_TILES if space == "psum" else c.VMEM_TILES
    known = [a for s, a in self.far if s == space]
    if known and (len(self.far) >= FAR_MAX or r.random() < .5):
      a = int(r.choice(known))
    else:
      a = int(r.choice([size - 1, size // 2, int(r.integers(0, size))]))
      if (space, a) not in self.far:
        self.far.append((space, a))
    b, off = self.s(), int(r.integers(-3, 4))
    regs = {"vd": self.v()} if f in ("vld", "pld") else {} if f == "mlw" else {"vs": self.v()}
    if f == "pld" and self.epi_rng.random() < .5:  # the far tile through an epilogue (its own stream)
      return [Op([self.w("LI", sd=b, imm=a - off), self.pepi(regs["vd"], b, off)], "far_pepi")]
    return [Op([self.w("LI", sd=b, imm=a - off), self.w(f.upper(), addr=off, addr_base=b, **regs)], "far_" + f)]

  def s0_item(self) -> list:
    r = self.rng
    if r.random() < .5:
      return [Op([self.w(str(r.choice(SALU)), sd=0, sa=self.s(), sb=self.s())], "s0")]
    return [Op([self.w("LI", sd=0, imm=int(r.integers(-1000, 1000)))], "s0")]

  def back_loop(self, depth: int, mult: int) -> list:
    if not self.free:
      return []
    c = self.free.pop()
    n = int(self.rng.integers(1, max(2, min(4, 32 // mult)) + 1))
    body = self.block(depth, mult * n, int(self.rng.integers(1, 5)))
    self.free.append(c)
    return [BackLoop(c, n, body)]

  def trap_item(self, kind: str) -> list:
    """One item that traps when it runs (timeout: nothing here, the watchdog is cut in bundle())."""
    r, c, N = self.rng, self.config, self.N
    if kind == "undefined":
      used = {i.op for i in isa.INSTRS}
      op = int(r.choice([x for x in range(256) if x not in used]))
      return [Op([op << isa.FIELDS["op"][0] | int(r.integers(0, 1 << 32))], "trap_undefined")]
    if kind == "reserved":
      ins = isa.BY_MNEMONIC[str(r.choice(["NOP", "VADD", "VLD", "FENCE", "XTRANS", "HALT"]))]
      free = [b for b in range(isa.WORD_BITS) if not (ins.used_mask >> b) & 1]
      return [Op([ins.fixed_bits | 1 << int(r.choice(free))], "trap_reserved")]
    if kind == "range":  # an operand outside its range: XBCOL's column past N-1, LOOPI's end < 2
      if r.random() < .5:
        w = isa.BY_MNEMONIC["XBCOL"].fixed_bits | (N + int(r.integers(0, 8))) << isa.FIELDS["imm"][0]
      else:
        w = isa.BY_MNEMONIC["LOOPI"].fixed_bits | 1 << isa.FIELDS["immhi"][0] | int(r.integers(0, 2))
      return [Op([w], "trap_range")]
    if kind in ("vmem_oob", "psum_oob"):
      size = c.VMEM_TILES if kind == "vmem_oob" else c.PSUM_TILES
      a = size + int(r.integers(0, 3)) if r.random() < .6 else -1 - int(r.integers(0, 3))
      b, mn = self.s(), ("VLD" if r.random() < .5 else "VST") if kind == "vmem_oob" else ("PLD" if r.random() < .5 else "PST")
      regs = {"vd": self.v()} if mn in ("VLD", "PLD") else {"vs": self.v()}
      if mn == "PLD" and self.epi_rng.random() < .5:  # PEPI traps with PLD's rule (its own stream)
        return [Op([self.w("LI", sd=b, imm=a), self.pepi(regs["vd"], b, 0)], "trap_" + kind)]
      return [Op([self.w("LI", sd=b, imm=a), self.w(mn, addr=0, addr_base=b, **regs)], "trap_" + kind)]
    if kind == "lbreak0":
      return [Op([self.w("LBREAK")], "trap_lbreak0")]
    if kind == "jmp_out":
      return [Op([self.w("JMP", target=int(r.choice([c.IMEM_WORDS, -1 - int(r.integers(0, 50)), 5000])))], "trap_jmp_out")]
    if kind == "loop_exit":  # a branch out of a LOOPI body, then another loop
      inner = [Branch("BEQ", 0, 0, 0, exit=True), Op([self.w("NOP")], "nop")]
      return [Loop([], "LOOPI", 2, 2, inner)] + [Loop([], "LOOPI", 1, 1, [Op([self.w("NOP")], "nop")])]
    return []


def choose_trap(rng: np.random.Generator, dma: bool) -> str | None:
  """The program's trap on purpose, or None (most programs); `dma_oob` and `emb_oob` only with DMA items."""
  kinds = TRAP_KINDS + (("dma_oob",) * 2 + ("emb_oob",) * 2 if dma else ())  # emb_oob: tinytpu/randemb.py
  return str(rng.choice(kinds)) if rng.random() < TRAP_PROGRAMS else None
