"""Random program generator (doc/random.md); its lockstep check is tinytpu/randcheck.py and its
shrinker tinytpu/shrink.py.

  generate(seed, config) -> Bundle       a legal, terminating program mixing every instruction family
  program(seed, config) -> Program       the same as a tree, for the shrinker

A program is a tree: a block is a list of items, an item is a straight-line group of words (`Op`, which
carries its own address and count set-up so it is legal wherever it lands), a forward `Branch` that
skips whole items of its own block, or a `Loop` with a body block. Every target is pc-relative, so the
shrinker can drop any item or unwrap any loop and the emitted program stays legal: in range, properly
nested, ending in HALT and bounded (loop counts are small constants or masked data).

  python -m tinytpu.randcheck --seed S ...   (the generator's command line is its lockstep's)
"""
from __future__ import annotations

import dataclasses

import numpy as np

from tinytpu import asm, isa, randdma, randemb, randreach
from tinytpu.randtree import BackLoop, Branch, Loop, Op  # noqa: F401  (re-exported: randprog.Op ...)
from tinytpu.bundle import Bundle
from tinytpu.config import DEFAULT, Config

# VPU functions the RTL does not implement yet (`python -m tinytpu.randcheck --probe` finds them):
# delete a name here once its RTL lands
# whether programs copy through HBM (DMA.IN/DMA.OUT/DMA.CFG/DMA.WAIT, tinytpu/randdma.py) by default
DMA = True
# whether a share of the programs end in a trap or timeout on purpose (randreach.TRAP_PROGRAMS)
TRAPS = True
RTL_MISSING_VPU: tuple[str, ...] = ()  # VPU functions the RTL lacks (none since the transcendentals landed)
VPU_FNS = [f for f in isa.VPU_FNS if f not in RTL_MISSING_VPU]
SALU = [i.mnemonic for i in isa.INSTRS if i.op == isa.OP["SALU"]]
CBRANCH = [i.mnemonic for i in isa.INSTRS if i.datapath == "branch" and i.reg_fields("sreg", False)]  # BEQ..BGE
ELEM = [i.mnemonic for i in isa.INSTRS if any(o.space == "elem" for o in i.mems)]  # VGATHER, VSCATTER
XLU = list(isa.XLU_FNS)
TIMING = "s15"     # RDCYCLE and timing RDPERF write only here; nothing reads it and the epilogue overwrites it
SINK = 15
VW, PW = 16, 16    # the VMEM / PSUM tiles programs touch (PSUM capped by the configuration)
MAX_T = 8
LENGTH = 120       # static program words, roughly
# an op of one of these dual-issue classes (isa.ISSUE_CLASS, by its last word) is often followed by an
# independent VLD/VST, which may pair with it; a VLD/VST (load, store) by the other kind
PAIR_BEFORE_MEM = ("compute", "scalar")
M32 = 0xFFFFFFFF

FP_SPECIAL = [0x00000000, 0x80000000, 0x7F800000, 0xFF800000, 0x7FC00000, 0xFFC00001, 0x7FA00000,
              0x00000001, 0x807FFFFF, 0x00800000, 0x7F7FFFFF, 0xFF7FFFFF, 0x3F800000, 0xBF800000,
              0x3F000000, 0x40000000, 0x40400000, 0x3FC00000, 0x4B000000, 0x4F000000, 0xCF000000,
              0x4EFFFFFF, 0x3EFFFFFF, 0x7F000000, 0x0C000000]
INT_EDGE = [0x80000000, 0x7FFFFFFF, 0x80000001, 0x7FFFFFFE, 0xFFFF, 0x8000, 0xFFFF8000, 0x7F, 0x80, 0xFF,
            0xFFFFFF80, 0x10000, 31, 32, 33, 0x01010101, 0x80808080, 0x7F7F7F7F]
CLASSES = ("zero", "one", "small", "edge", "rand", "fpspec", "fp", "int8")
FLAVORS = {  # weights of CLASSES per tile flavor
  "int":  (1, 1, 3, 1, 2, 0, 0, 1),
  "fp":   (.5, .3, 0, 0, 0, 1.5, 5, 0),
  "int8": (1, 1, 1, 0, 0, 0, 0, 5),
  "any":  (1, 1, 1, 1, 1, 1, 1, 1),
}
FLAVORS = {k: np.array(w) / sum(w) for k, w in FLAVORS.items()}


def value(rng: np.random.Generator, flavor: str = "any") -> int:
  """One 32-bit value from a weighted class: zero, +-1, small, int edges, random bits, fp32 specials..."""
  c = CLASSES[rng.choice(len(CLASSES), p=FLAVORS[flavor])]
  if c == "zero": return 0
  if c == "one": return int(rng.choice([1, M32]))
  if c == "small": return int(rng.integers(-16, 17)) & M32
  if c == "edge": return int(rng.choice(INT_EDGE))
  if c == "rand": return int(rng.integers(0, 1 << 32))
  if c == "fpspec": return int(rng.choice(FP_SPECIAL))
  if c == "fp": return int(np.float32(rng.standard_normal() * 10.0 ** rng.integers(-4, 5)).view(np.uint32))
  return int(rng.integers(-128, 128)) & M32


def tile(rng: np.random.Generator, N: int) -> np.ndarray:
  flavor = str(rng.choice(list(FLAVORS)))
  return np.array([value(rng, flavor) for _ in range(N * N)], np.uint32).reshape(N, N)


def s32(x: int) -> int:
  return (x & M32) - ((x & 0x80000000) << 1)


def word(mn: str, N: int, **vals) -> int:
  return isa.encode(isa.BY_MNEMONIC[mn], vals, N)


# ---------------------------------------------------------------------------------------------
# the program tree (items: tinytpu/randtree.py)
@dataclasses.dataclass
class Program:
  config: Config
  items: list
  vmem: dict[int, np.ndarray]
  psum: dict[int, np.ndarray]
  sregs: dict[int, int]
  vdump: list[int]          # vregs stored by the epilogue to VMEM tiles VW, VW+1, ...
  sink: int                 # the value the epilogue writes into s15
  hbm: tuple[int, np.ndarray] | None = None  # the HBM window (first tile, (HW, N, N)): preloaded and dumped
  far: list = dataclasses.field(default_factory=list)  # (space, tile) touched outside the low tiles: dumped
  timeout: int | None = None  # a watchdog shorter than the program (a timeout on purpose)

  def words(self) -> list[int]:
    N = self.config.N
    epi = [word("VST", N, vs=v, addr=VW + i, addr_base=0) for i, v in enumerate(self.vdump)]
    epi += [word("LI", N, sd=SINK, imm=self.sink), word("HALT", N)]
    return _emit(self.items, 0, N) + epi

  def bundle(self) -> Bundle:
    words = self.words()
    dumps = [("vmem", 0, VW + len(self.vdump)), ("psum", 0, pw(self.config)), ("sreg", 0, 16)]
    dumps += [("hbm", self.hbm[0], len(self.hbm[1]))] if self.hbm is not None else []
    low = {"vmem": VW + len(self.vdump), "psum": pw(self.config)}
    dumps += [(sp, a, 1) for sp, a in sorted(set(self.far)) if a >= low[sp]]
    limit = self.timeout if self.timeout is not None else watchdog(self.items, len(words), self.config)
    return Bundle(config=self.config, vmem=dict(self.vmem), psum=dict(self.psum), sregs=dict(self.sregs),
                  program=words, dumps=dumps, max_cycles=limit,
                  hbm=[(self.hbm[0], self.hbm[1].copy())] if self.hbm is not None else [])

  def tasm(self) -> str:
    return asm.bundle_to_tasm(self.bundle())


def pw(config: Config) -> int:
  return min(PW, config.PSUM_TILES)


def _emit(items: list, depth: int, N: int, body: bool = False) -> list[int]:
  """Words of a block; targets are relative, so a block emits the same words wherever it sits."""
  items = [it for it in items if not (depth == 0 and isinstance(it, Op) and it.tag == "lbreak")]
  if body and (not items or isinstance(items[-1], (Loop, Branch, BackLoop))):
    items = items + [Op([word("NOP", N)], "nop")]  # a body ends in a plain instruction (nesting rule, back-edge)
  parts = []
  for it in items:
    if isinstance(it, Op): parts.append(list(it.words))
    elif isinstance(it, Branch): parts.append([0])  # filled below
    elif isinstance(it, BackLoop):  # LI c, n; body; SADDI c, c, -1; BNE c, s0, <body start>
      inner = _emit(it.body, depth, N)
      parts.append([word("LI", N, sd=it.counter, imm=it.count)] + inner +
                   [word("SADDI", N, sd=it.counter, sa=it.counter, imm=-1), word("BNE", N, sa=it.counter, sb=0, target=-(len(inner) + 1))])
    else:
      inner = _emit(it.body, depth + 1, N, body=True)
      loop = word("LOOP", N, count=it.count, end=len(inner) + 1) if it.mn == "LOOP" else \
        word("LOOPI", N, count=it.count, end=len(inner) + 1)
      parts.append(list(it.pre) + [loop] + inner)
  starts = np.cumsum([0] + [len(p) for p in parts]).tolist()
  for i, it in enumerate(items):
    if isinstance(it, Branch):
      t = len(items) if it.exit else min(i + 1 + it.skip, len(items) - 1 if body else len(items))  # a body's branch stays in the body
      off = starts[t] - starts[i]
      parts[i] = [word("JMP", N, target=off) if it.mn == "JMP" else word(it.mn, N, sa=it.sa, sb=it.sb, target=off)]
  return [w for p in parts for w in p]


def _cost(w: int, c: Config) -> int:
  """Generous cycles one executed word may take (MMUL streams T*N rows, a DMA waits for HBM and
  moves its rows' tiles at the HBM's bandwidth; anything else may wait on them)."""
  try:
    ins, vals = isa.decode(w, c.N)
  except isa.IllegalInstruction:  # a trap on purpose: it ends the program
    return 24
  if ins.mnemonic in ("MMUL", "MMUL.BF16"): return vals["T"] * c.N + 4 * c.N + 24
  if ins.datapath == "dma": return 2 * c.HBM_LATENCY + -(-vals["T"] * randdma.MAX_ROWS * c.HBM_BW_DEN // c.HBM_BW_NUM) * 2 + 24
  if ins.datapath == "emb":  # --- SparseCore: the check and the gather, each a latency and its tiles
    return 3 * c.HBM_LATENCY + (vals["B"] * (randemb.MAX_BAG * randemb.MAX_W + 1) + 8) * 2 * -(-c.HBM_BW_DEN // c.HBM_BW_NUM) + 48
  return 24 + 4 * c.N


def _dyn(items: list, c: Config) -> int:
  """Upper bound of the cycles a block runs (every branch falls through, every loop runs its bound)."""
  tot = 0
  for it in items:
    if isinstance(it, Op): tot += sum(_cost(w, c) for w in it.words)
    elif isinstance(it, Branch): tot += 24
    elif isinstance(it, BackLoop): tot += 24 + it.count * (_dyn(it.body, c) + 72)
    else: tot += 24 * (len(it.pre) + 2) + max(it.bound, 1) * (_dyn(it.body, c) + 24)
  return tot


def watchdog(items: list, nwords: int, c: Config) -> int:
  return 4 * (_dyn(items, c) + 64 * nwords) + 10_000 + 4 * c.HBM_LATENCY


# ---------------------------------------------------------------------------------------------
class _Gen(randdma.DmaItems, randreach.ReachItems, randemb.EmbItems):
  def __init__(self, seed: int, config: Config, length: int, gather: bool, perf_retired: bool, include=(), dma: bool = False,
               traps: bool = False, emb: bool = True):
    self.rng = np.random.default_rng(seed)
    # MMUL's mode (MMUL or MMUL.BF16) from a stream of its own: adding the bf16 mode left every
    # seed's program as it was except for the mnemonic of some MMULs. Their bf16 operands are the
    # tiles' high halves: "fp" tiles give bf16 values with nonzero (ignored) low bits, "any" tiles
    # fp32 specials, int8 tiles +-0, tiny values and NaNs.
    self.mode_rng = np.random.default_rng([seed, 0xBF16])
    self.epi_rng = np.random.default_rng([seed, 0x29])  # PEPI's choices (pepi()), off the main stream
    self.emb_rng = np.random.default_rng([seed, 0xE3B])  # --- SparseCore: EMB items (randemb), off the main stream
    # interlock hazards around gathers, scatters and PEPI (a long VCDIV feeding or racing them, a VLD
    # whose write-back slot a gather booked): extra words, chosen off the main stream
    self.hz_rng = np.random.default_rng([seed, 0x4A2])
    self.emb = emb  # False: no EMB items (a core without a SparseCore: the chip's); the rest of the program is the same
    self.config, self.N, self.length, self.gather, self.perf_retired = config, config.N, length, gather, perf_retired
    self.PW = pw(config)
    self.vpu_fns = [f for f in isa.VPU_FNS if f in VPU_FNS or f in include]
    r = self.rng
    self.sp = [int(x) for x in r.choice(np.arange(1, 15), size=int(r.integers(3, 8)), replace=False)]  # scalar pool
    self.vp = [int(x) for x in r.choice(16, size=int(r.integers(3, 8)), replace=False)]                # vector pool
    self.hot = None   # (a, T, p) of the last MMUL: later memory ops aim at its tiles
    self.nwords = 0
    fam = {"salu": 8, "li": 4, "saddi": 3, "branch": 4, "jmp": 1, "loop": 6, "lbreak": 2, "timing": 1,
           "vsplat": 2, "vextract": 2, "vld": 5, "vst": 4, "pld": 2, "pst": 2, "vmov": 1, "vzero": 1,
           "vfill": 2, "vpu": 22, "xlu": 6, "mlw": 2, "mmul": 4, "fence": 0.5, "nop": 0.3}
    if gather: fam |= {"vgather": 2, "vscatter": 2}
    self.dma, self.vw, self.traps = dma, VW, traps
    # a trap on purpose (chosen first: a program that traps never reaches the epilogue that
    # overwrites s15, so its timing reads go to s0 instead)
    self.trap_kind = randreach.choose_trap(r, dma) if traps else None
    self.sink_reg = 0 if self.trap_kind else SINK
    self.far: list = []
    self.free = [x for x in range(1, 15) if x not in self.sp]  # counters of backward-branch loops
    fam |= {"far": 1.5, "s0": .6, "backloop": 1.5}
    if dma:
      fam |= {"dma": 4, "dmawait": .4}
      self.hbm0 = randdma.hbm_base(r, config.HBM_TILES)
    self.fams, w = list(fam), np.array(list(fam.values()), float)
    self.p = w / w.sum()

  # operands
  def s(self) -> int: return int(self.rng.choice(self.sp))
  def v(self) -> int: return int(self.rng.choice(self.vp))
  def w(self, mn: str, **vals) -> int: return word(mn, self.N, **vals)

  def addr(self, size: int, span: int = 1, lo: int = 0) -> tuple[list[int], int, int]:
    """(set-up words, base register, offset) of an address in [lo, size - span] computed explicitly:
    absolute, LI base + offset, or masked data + offset (a data-dependent address)."""
    r, hi = self.rng, size - span
    a = int(r.integers(lo, hi + 1))
    mode = r.choice(3, p=[.3, .4, .3])
    if mode == 0: return [], 0, a
    b = self.s()
    if mode == 1:
      off = int(r.integers(-3, 4))
      return [self.w("LI", sd=b, imm=a - off)], b, off
    k = int(r.integers(0, int(np.log2(hi - lo + 1)) + 1)) if hi > lo else 0
    mask, t = (1 << k) - 1, self.s()
    off = lo + int(r.integers(0, hi - lo - mask + 1))
    return [self.w("LI", sd=t, imm=mask), self.w("SAND", sd=b, sa=self.s(), sb=t)], b, off

  def vaddr(self, span: int = 1) -> tuple[list[int], int, int]:
    if self.hot is not None and self.rng.random() < .5:  # a tile the MXU may be reading
      a, T, _ = self.hot
      x = a + int(self.rng.integers(0, T))
      return self.addr_at(min(x, VW - span), span)
    return self.addr(VW, span)

  def paddr(self, span: int = 1) -> tuple[list[int], int, int]:
    if self.hot is not None and self.rng.random() < .5:  # a tile the MXU may be writing
      _, T, p = self.hot
      x = p + int(self.rng.integers(0, T))
      return self.addr_at(min(x, self.PW - span), span)
    return self.addr(self.PW, span)

  def addr_at(self, x: int, span: int) -> tuple[list[int], int, int]:
    if self.rng.random() < .5: return [], 0, x
    b, off = self.s(), int(self.rng.integers(-2, 3))
    return [self.w("LI", sd=b, imm=x - off)], b, off

  def pepi(self, vd: int, b: int, off: int) -> int:
    """A PSUM epilogue of a random mode in place of a PLD: its mode and operand registers come from
    epi_rng, so the main stream (and every program's shape) is the one without PEPI."""
    r = self.epi_rng
    mn = "PEPI" + str(r.choice(isa.EPI_MODES))
    regs = {o.name: int(r.choice(self.vp)) for o in isa.BY_MNEMONIC[mn].operands if o.kind == "vreg" and not o.write}
    return self.w(mn, vd=vd, addr=off, addr_base=b, **regs)

  # items
  def item(self, depth: int, mult: int) -> list:
    r = self.rng
    while True:
      f = self.fams[r.choice(len(self.fams), p=self.p)]
      if f == "lbreak" and depth == 0: continue
      if f == "loop" and (depth == isa.LOOP_DEPTH or self.nwords > self.length - 4): continue
      break
    N = self.N
    if f == "salu": return [Op([self.w(str(r.choice(SALU)), sd=self.s(), sa=self.s(), sb=self.s())], "salu")]
    if f == "li": return [Op([self.w("LI", sd=self.s(), imm=s32(value(r)))], "li")]
    if f == "saddi":
      imm = int(r.integers(-8, 9)) if r.random() < .6 else s32(value(r))
      return [Op([self.w("SADDI", sd=self.s(), sa=self.s(), imm=imm)], "saddi")]
    if f in ("branch", "jmp"):
      mn = "JMP" if f == "jmp" else str(r.choice(CBRANCH))
      sa = self.s()
      sb = sa if r.random() < .2 else (0 if r.random() < .3 else self.s())
      return [Branch(mn, sa, sb, int(r.integers(1, 4)))]
    if f == "lbreak":
      lb = Op([self.w("LBREAK")], "lbreak")
      if r.random() < .7:  # mostly conditional: a branch over the LBREAK
        return [Branch(str(r.choice(CBRANCH)), self.s(), self.s(), 1), lb]
      return [lb]
    if f == "loop": return [self.loop(depth, mult)]
    if f == "timing":
      if self.perf_retired and r.random() < .3:  # `retired` is architectural: it may flow anywhere
        return [Op([self.w("RDPERF", sd=self.s(), counter=isa.PERF["retired"])], "rdperf")]
      if r.random() < .4: return [Op([self.w("RDCYCLE", sd=self.sink_reg)], "rdcycle")]
      return [Op([self.w("RDPERF", sd=self.sink_reg, counter=int(r.integers(0, len(isa.PERF_COUNTERS))))], "rdperf")]
    if f == "vsplat": return [Op([self.w("VSPLAT", vd=self.v(), sa=self.s())], "vsplat")]
    if f == "vextract":
      return [Op([self.w("VEXTRACT", sd=self.s(), va=self.v(), r=int(r.integers(N)), c=int(r.integers(N)))], "vextract")]
    if f in ("vld", "vst"):
      pre, b, off = self.vaddr()
      regs = {"vd": self.v()} if f == "vld" else {"vs": self.v()}
      return [Op(pre + [self.w(f.upper(), addr=off, addr_base=b, **regs)], f)]
    if f in ("pld", "pst"):
      pre, b, off = self.paddr()
      regs = {"vd": self.v()} if f == "pld" else {"vs": self.v()}
      if f == "pld" and self.epi_rng.random() < .5:  # half the PSUM reads through an epilogue (PEPI.*)
        h, race = self.hz_rng, []
        if h.random() < .3:  # a divide into the PEPI's destination, or one whose write lands in its slot
          same = h.random() < .5
          race = [self.w("VCDIV", vd=regs["vd"] if same else self.v(), va=self.v(), vb=self.v())]
          race += [] if same else [self.w("NOP")] * int(h.integers(0, 3))
        return [Op(race + pre + [self.pepi(regs["vd"], b, off)], "pepi")]
      return [Op(pre + [self.w(f.upper(), addr=off, addr_base=b, **regs)], f)]
    if f == "vmov": return [Op([self.w("VMOV", vd=self.v(), va=self.v())], "vmov")]
    if f == "vzero": return [Op([self.w("VZERO", vd=self.v())], "vzero")]
    if f == "vfill": return [Op([self.w("VFILL", vd=self.v(), imm=s32(value(r)))], "vfill")]
    if f == "vpu":
      fn = str(r.choice(self.vpu_fns))
      names = [o.name for o in isa.BY_MNEMONIC["V" + fn].operands]
      return [Op([self.w("V" + fn, **{n: self.v() for n in names})], "vpu")]
    if f == "xlu": return [Op([self.xlu()], "xlu")]
    if f == "mlw":
      pre, b, off = self.vaddr()
      return [Op(pre + [self.w("MLW", addr=off, addr_base=b)], "mlw")]
    if f == "mmul": return self.mmul()
    if f == "fence": return [Op([self.w("FENCE")], "fence")]
    if f == "nop": return [Op([self.w("NOP")], "nop")]
    if f in ("dma", "dmawait"): return self.dma_item(f) + self.emb_extra()  # --- SparseCore: EMB items after DMA items
    if f == "far": return self.far_item()
    if f == "s0": return self.s0_item()
    if f == "backloop": return self.back_loop(depth, mult) if self.nwords < self.length - 8 else []
    return [self.gather_op(f)]

  def pair_mem(self, f: str | None = None, near: int | None = None) -> list:
    """A VLD/VST at an absolute address (no scalar dependence) right after a compute or scalar op,
    or a VST/VLD right after a VLD/VST (f, the other kind): the SXU may issue the two together;
    without this such pairs are rare (a load or store mostly follows the LI of its base or the op
    making its data). near: the tile of that neighbour, reused half the time (a VLD + VST of one
    tile pairs, a VST + VLD of one tile must not)."""
    r = self.rng
    f = f or ("vld" if r.random() < .5 else "vst")
    regs = {"vd": self.v()} if f == "vld" else {"vs": self.v()}
    a = near if near is not None and 0 <= near < VW and r.random() < .5 else int(r.integers(0, VW))
    return [Op([self.w(f.upper(), addr=a, addr_base=0, **regs)], f)]

  def xlu(self, mn: str | None = None) -> int:
    r, N, mn = self.rng, self.N, mn or str(self.rng.choice(XLU))
    vals = {"vd": self.v(), "va": self.v()}
    if mn in ("XROT", "XSROT"): vals["k"] = int(r.integers(-2 * N, 2 * N + 1)) if r.random() < .8 else int(r.integers(-(1 << 31), 1 << 31))
    elif mn in ("XROTS", "XSROTS"): vals["sk"] = self.s()
    elif mn == "XBCOL": vals["c0"] = int(r.integers(N))
    elif mn == "XBROW": vals["r0"] = int(r.integers(N))
    elif mn == "XBSCALAR": vals |= {"r0": int(r.integers(N)), "c0": int(r.integers(N))}
    elif mn == "XSHUF": vals["vi"] = self.v()
    return self.w(mn, **vals)

  def mmul(self) -> list:
    r = self.rng
    T, acc = int(r.integers(1, MAX_T + 1)), int(r.integers(0, 2))
    T = min(T, self.PW)
    if self.hot is not None and r.random() < .3:  # accumulate onto the tiles of the MMUL in flight
      _, _, p = self.hot
      p = min(p, self.PW - T)
      dpre, db, doff = self.addr_at(p, T)
    else:
      dpre, db, doff = self.addr(self.PW, T)
    spre, sb, soff = self.addr(VW, T)
    if db and any(isa.get_field(x, "rd") == db for x in spre):  # the source set-up would clobber the destination base
      spre, sb, soff = [], 0, int(r.integers(0, VW - T + 1))
    out = []
    if r.random() < .5:  # fresh weights right before (MLW while an earlier MMUL may still stream)
      pre, b, off = self.addr(VW)
      out.append(Op(pre + [self.w("MLW", addr=off, addr_base=b)], "mlw"))
    mn = "MMUL.BF16" if self.mode_rng.random() < .4 else "MMUL"  # both modes on the same weights and tiles
    out.append(Op(dpre + spre + [self.w(mn, dst=doff, dst_base=db, src=soff, src_base=sb, T=T, acc=acc)], "mmul" if mn == "MMUL" else "mmul_bf16"))
    self.hot = (self.src_tile(spre, sb, soff), T, self.src_tile(dpre, db, doff))
    return out

  def src_tile(self, pre: list[int], b: int, off: int) -> int:
    """The tile an address set-up points at when it is static (else the offset, a nearby guess)."""
    if b and pre and isa.get_field(pre[-1], "op") == isa.OP["LI"]: return isa.sext(isa.get_field(pre[-1], "imm"), 32) + off
    return off

  def gather_op(self, f: str) -> Op:
    r, N = self.rng, self.N
    size = VW * N * N
    k = int(r.integers(0, int(np.log2(size)) + 1))
    mask = (1 << k) - 1
    base = int(r.integers(0, size - mask))
    vt, vi, b = self.v(), self.v(), self.s()
    off = int(r.integers(-4, 5))
    pre = [self.w("VFILL", vd=vt, imm=mask), self.w("VAND", vd=vi, va=self.v(), vb=vt), self.w("LI", sd=b, imm=base - off)]
    h = self.hz_rng
    ones = [x for x in self.vp if x != vi]
    if ones and h.random() < .25:  # the index from a 4-cycle divide by one: the gather/scatter waits for it (RAW)
      one = int(h.choice(ones))
      pre += [self.w("VFILL", vd=one, imm=1), self.w("VCDIV", vd=vi, va=vi, vb=one)]
    if f == "vgather":
      vd = self.v()
      # (the divides below never write the index register: a garbage index would trap)
      if vd != vi and h.random() < .2:  # a divide into the gather's destination lands after it would: WAW
        pre.append(self.w("VCDIV", vd=vd, va=self.v(), vb=self.v()))
      if ones and h.random() < .25:  # a divide whose write lands in the gather's write-back slot (port 0): unit
        pre += [self.w("VCDIV", vd=int(h.choice(ones)), va=self.v(), vb=self.v())] + [self.w("NOP")] * int(h.integers(0, 3))
      return Op(pre + [self.w("VGATHER", vd=vd, va=vi, addr=off, addr_base=b)], f)
    return Op(pre + [self.w("VSCATTER", vs=self.v(), va=vi, vm=self.v(), addr=off, addr_base=b)], f)

  def loop(self, depth: int, mult: int) -> Loop:
    r = self.rng
    hi = max(1, min(4, 32 // mult))
    if r.random() < .4:
      n = int(r.integers(1, hi + 1)) if r.random() < .85 else 0
      lp = Loop([], "LOOPI", n, n, [])
    else:
      c = self.s()
      if r.random() < .5:
        n = int(r.integers(1, hi + 1)) if r.random() < .8 else int(r.integers(-1, 1))
        lp = Loop([self.w("LI", sd=c, imm=n)], "LOOP", c, max(n, 0), [])
      else:  # a data-dependent count: some register masked to 0..hi
        mask = (1 << int(np.log2(hi + 1))) - 1 if hi >= 1 else 0
        t = self.s()
        lp = Loop([self.w("LI", sd=t, imm=mask), self.w("SAND", sd=c, sa=self.s(), sb=t)], "LOOP", c, mask, [])
    self.nwords += len(lp.pre) + 1
    m = mult * max(lp.bound, 1)
    deeper = depth + 1 < isa.LOOP_DEPTH and r.random() < .4  # nests often reach the 4-deep limit
    lp.body = ([self.loop(depth + 1, m)] if deeper else []) + self.block(depth + 1, m, int(r.integers(1, 7)))
    return lp

  def block(self, depth: int, mult: int, n: int) -> list:
    out = []
    for _ in range(n):
      if depth and self.nwords > self.length + 16: break
      items = self.item(depth, mult)
      if not items: continue  # a family with nothing to give here (no free counter register)
      last = items[-1]
      k = isa.lookup(last.words[-1]).issue if isinstance(last, Op) else ""
      if k in PAIR_BEFORE_MEM and self.rng.random() < .25:
        items += self.pair_mem()
      elif k in ("load", "store") and self.rng.random() < .4:
        b = isa.get_field(last.words[-1], "ra")  # the neighbour's tile, when its base is static
        near = self.src_tile(last.words[:-1], b, isa.sext(isa.get_field(last.words[-1], "imm"), 32))
        items += self.pair_mem("vst" if k == "load" else "vld", near)
      self.nwords += sum(len(i.words) if isinstance(i, Op) else 1 for i in items if not isinstance(i, Loop))
      out += items
    return out

  def program(self) -> Program:
    r, N = self.rng, self.N
    items = []
    while self.nwords < self.length:
      items += self.block(0, 1, 1)
    vmem = {a: tile(r, N) for a in range(VW) if r.random() < .9}
    psum = {a: tile(r, N) for a in range(self.PW) if r.random() < .8}
    sregs = {x: value(r) for x in range(1, 15) if r.random() < .8}
    trap, timeout = self.trap_kind, None
    if trap == "timeout":
      timeout = int(r.integers(5, 30))
    elif trap is not None and trap not in ("dma_oob", "emb_oob"):  # (a DMA or EMB item goes out of range instead: randdma, randemb)
      at = int(r.integers(0, len(items) + 1))
      items[at:at] = self.trap_item(trap)
    hbm = None
    if self.dma:
      win = np.stack([tile(r, N) if r.random() < .8 else np.zeros((N, N), np.uint32) for _ in range(randdma.HW)])
      hbm = (self.hbm0, win)
    return Program(self.config, items, vmem, psum, sregs, sorted(self.vp), int(r.integers(0, 1 << 31)), hbm, list(self.far), timeout)


def program(seed: int, config: Config = DEFAULT, length: int = LENGTH, gather: bool = True,
            perf_retired: bool = True, include: tuple = (), dma: bool | None = None, traps: bool | None = None,
            emb: bool = True) -> Program:
  """The program tree of a seed (same seed, same program). `gather` adds VGATHER/VSCATTER;
  `perf_retired` lets `RDPERF sd, retired` (architectural) flow into compared registers; `include`
  takes VPU functions back from RTL_MISSING_VPU (to try an RTL that just gained them); `dma` adds
  HBM copies (default: DMA); `traps` lets a share of the programs end in a trap or a timeout on
  purpose (tinytpu/randreach.py; default: TRAPS); `emb` lets EMB items follow DMA items (randemb)."""
  return _Gen(seed, config, length, gather, perf_retired, include, DMA if dma is None else dma,
              TRAPS if traps is None else traps, emb).program()


def single_op(mnemonic: str, seed: int = 0, config: Config = DEFAULT) -> Op:
  """One VPU, XLU or gather instruction `mnemonic` as the generator draws it (random immediates),
  reading vregs 1..4 and sregs 1..2: the RTL-vs-golden probe's one-instruction programs."""
  if mnemonic not in ELEM and mnemonic not in XLU and mnemonic[1:] not in isa.VPU_FNS:
    raise ValueError(f"single_op: {mnemonic!r} is not a VPU function, an XLU op or a gather")
  g = _Gen(seed, config, 0, True, True)
  g.vp, g.sp = [1, 2, 3, 4], [1, 2]
  if mnemonic in ELEM: return g.gather_op(mnemonic.lower())
  if mnemonic in XLU: return Op([g.xlu(mnemonic)], "xlu")
  return Op([word(mnemonic, config.N, **{o.name: i + 1 for i, o in enumerate(isa.BY_MNEMONIC[mnemonic].operands)})], "vpu")


def generate(seed: int, config: Config = DEFAULT, length: int = LENGTH, gather: bool = True,
             perf_retired: bool = True, include: tuple = (), dma: bool | None = None, traps: bool | None = None) -> Bundle:
  """A legal, terminating bundle: preloads, the program (ending in HALT), dumps of every touched tile
  and the scalar registers, and a watchdog far above the longest possible run."""
  return program(seed, config, length, gather, perf_retired, include, dma, traps).bundle()

