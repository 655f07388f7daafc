"""The golden sequential interpreter: runs a bundle one instruction at a time with the exact
semantics of doc/isa.md and returns its dumps, status, trap and pc.

The model is cycle-free: `cycles` is the count of retired instructions (HALT and an instruction that
raises `imem_out_of_range` included, a trapping instruction not), RDCYCLE reads the count retired
before it, RDPERF reads that count for `retired` and 0 for every timing counter.

For speed the program is predecoded once into one closure per pc. A closure gets the retired count,
performs its instruction and returns None to fall through (where the loop back-edge applies) or the
next pc when it redirects. HALT and traps raise `_Stop`, so a trapping instruction has no effect. A
word that does not decode becomes a closure that traps, so it traps only if it executes.

Choices where doc/isa.md leaves room (the RTL must make the same ones):
- a memory address is the signed base register plus the sign-extended offset, computed exactly
  (no 32-bit wrap) and checked against the memory size;
- LOOP/LOOPI check the loop-stack rules (4 active, nesting) before looking at the count, so a
  skipped loop (count <= 0) traps exactly like one that would push;
- MMUL and MMUL.BF16 check the VMEM source range before the PSUM destination range;
- DMA.IN/DMA.OUT copy at issue (cycle-free; the RTL interlocks so that every program sees that),
  row by row and tile by tile in increasing order (a later copy of a tile wins), after checking
  every row's VMEM range and then every row's HBM range: a trapping DMA copies nothing. DMA.WAIT
  is a no-operation; DMA.CFG sets the shape (rows, hstride, vstride), 1, 0, 0 after reset;
- PEPI.* (PSUM epilogues): the choices are in golden/epilogue.py; the PSUM address traps exactly
  as PLD's;
- SIG.SEND / SIG.WAIT (doc/chip.md): a machine is core `core_id` of `cores`; SIG.SEND traps
  `no_such_core` for sa >= cores, else hands (core, flag) to `self.send` (alone: its own flag) at
  issue; SIG.WAIT consumes `count` from its flag, or blocks: run() then returns status "blocked"
  with the pc of the wait (nothing retired), and a later run() retries it. Alone (golden.run), a
  blocked core never wakes: status timeout at the wait's pc, as the co-sim's watchdog reports.
  The two-core semantics are golden/chip.py's.
- EMB.BAG/EMB.FBAG (SparseCore) look up at issue (cycle-free; the RTL interlocks it against the
  DMA), the choices and the trap order are in golden/sparsecore.py; EMB.WAIT is a no-operation;
  EMB.CFG sets the table (tbase, rows, width, bag), 0, 0, 1, 1 after reset."""
from __future__ import annotations

import numpy as np

from tinytpu import isa
from tinytpu.bundle import Bundle, Result
from tinytpu.config import DEFAULT, Config
from tinytpu.golden import hbm as hbm_store
from tinytpu.golden import epilogue, mxu, sparsecore, xlu
from tinytpu.golden.ops import VPU

M32 = 0xFFFFFFFF


def s32(x: int) -> int:
  return (x ^ 0x80000000) - 0x80000000


class _Stop(Exception):
  def __init__(self, trap: str | None): self.trap = trap  # None: HALT


class _Block(Exception):
  """SIG.WAIT whose flag is below its count: the machine stops before the wait, to be resumed."""


def _trap(name: str):
  def f(n): raise _Stop(name)
  return f


def _nop(n): return None


def _halt(n): raise _Stop(None)


# scalar ALU functions on uint32 Python ints, by SALU mnemonic
_SALU = {
  "SADD": lambda a, b: (a + b) & M32, "SSUB": lambda a, b: (a - b) & M32, "SMUL": lambda a, b: (a * b) & M32,
  "SAND": lambda a, b: a & b, "SOR": lambda a, b: a | b, "SXOR": lambda a, b: a ^ b,
  "SSHL": lambda a, b: (a << (b & 31)) & M32, "SSHR": lambda a, b: a >> (b & 31),
  "SSRA": lambda a, b: (s32(a) >> (b & 31)) & M32,
  "SSLT": lambda a, b: int(s32(a) < s32(b)), "SSLTU": lambda a, b: int(a < b),
}
_BRANCH = {"BEQ": lambda a, b: a == b, "BNE": lambda a, b: a != b,
           "BLT": lambda a, b: s32(a) < s32(b), "BGE": lambda a, b: s32(a) >= s32(b)}


class Machine:
  """Architectural state of one TensorCore, zero at reset, and the interpreter over it."""
  def __init__(self, config: Config = DEFAULT, core_id: int = 0, cores: int = 1):
    N = config.N
    self.config, self.N = config, N
    self.sregs: list[int] = [0] * 16                     # uint32 values; s0 is never written
    self.vregs = np.zeros((16, N, N), np.uint32)
    self.vmem = np.zeros((config.VMEM_TILES, N, N), np.uint32)
    self.psum = np.zeros((config.PSUM_TILES, N, N), np.uint32)
    self.hbm = hbm_store.HBM(config.HBM_TILES, N)
    self.dma_shape = (1, 0, 0)                            # DMA.CFG: rows, hstride, vstride
    self.emb_table = (0, 0, 1, 1)                         # EMB.CFG: tbase, rows, width, bag
    self.w = np.zeros((N, N), np.uint32)                 # MXU weight tile (the whole MLW tile: int8 and bf16 views)
    self.loops: list[list[int]] = []                     # [start, last body pc, remaining iterations]
    self.pc, self.retired = 0, 0
    self.program: list[int] = []
    self._fns: list = []
    self.core_id, self.cores = core_id, cores
    self.flags: list[int] = [0] * isa.SIG_FLAGS         # SIG.* flag counters (uint32)
    self.send = lambda core, flag: self.signal(flag)     # SIG.SEND's delivery: golden/chip.py replaces it

  def signal(self, flag: int) -> None:
    """One signal arrives at flag `flag` of this core."""
    self.flags[flag] = (self.flags[flag] + 1) & M32

  def load(self, bundle: Bundle) -> None:
    for a, t in bundle.vmem.items(): self.vmem[a] = t
    for a, t in bundle.psum.items(): self.psum[a] = t
    for a, tiles in bundle.hbm: self.hbm.write(a, tiles)
    for r, x in bundle.sregs.items():
      if r: self.sregs[r] = int(x) & M32
    self.load_program(bundle.program)

  def load_program(self, words: list[int]) -> None:
    self.program = list(words)
    self._fns = [self._compile(w, pc) for pc, w in enumerate(self.program)]

  # ------------------------------------------------------------------------------------------
  def _compile(self, word: int, pc: int):
    try:
      ins, o = isa.decode(word, self.N)
    except isa.IllegalInstruction:
      return _trap("illegal_instruction")
    s, v, vmem, psum, loops, m = self.sregs, self.vregs, self.vmem, self.psum, self.loops, self
    VT, PT = self.config.VMEM_TILES, self.config.PSUM_TILES
    mn, unit = ins.mnemonic, ins.unit
    d, a, b, c = (isa.get_field(word, f) for f in ("rd", "ra", "rb", "rc"))

    if mn in ("NOP", "FENCE"): return _nop
    if mn == "HALT": return _halt
    if mn == "LI":
      if not d: return _nop
      imm = o["imm"] & M32
      def f(n): s[d] = imm
    elif mn == "SADDI":
      if not d: return _nop
      imm = o["imm"]
      def f(n): s[d] = (s[a] + imm) & M32
    elif mn in _SALU:
      if not d: return _nop
      op = _SALU[mn]
      def f(n): s[d] = op(s[a], s[b])
    elif mn in _BRANCH:
      cond, tgt = _BRANCH[mn], pc + o["target"]
      def f(n): return tgt if cond(s[a], s[b]) else None
    elif mn == "JMP":
      tgt = pc + o["target"]
      def f(n): return tgt
    elif mn in isa.HW_LOOPS:
      end = pc + o["end"]
      # the count: a scalar register (signed) or an immediate, as the operand's kind says
      count = (lambda: s32(s[a])) if "ra" in ins.reg_fields("sreg", False) else (lambda k=o["count"]: k)
      # a LOOP never falls through into the back-edge check: it returns its next pc explicitly, and
      # the nesting rule keeps it off the last body pc of the enclosing loop
      def f(n):
        if len(loops) == isa.LOOP_DEPTH or (loops and end - 1 >= loops[-1][1]): raise _Stop("loop_stack")
        k = count()
        if k <= 0: return end
        loops.append([pc + 1, end - 1, k])
        return pc + 1
    elif mn == "LBREAK":
      def f(n):
        if not loops: raise _Stop("loop_stack")
        return loops.pop()[1] + 1
    elif mn == "RDCYCLE":
      if not d: return _nop
      def f(n): s[d] = n & M32
    elif mn == "RDPERF":
      if not d: return _nop
      if o["counter"] != isa.PERF["retired"]:
        def f(n): s[d] = 0
      else:
        def f(n): s[d] = n & M32
    elif mn == "VSPLAT":
      def f(n): v[d] = s[a]
    elif mn == "VEXTRACT":
      if not d: return _nop
      r, col = o["r"], o["c"]
      def f(n): s[d] = int(v[a, r, col])
    elif ins.datapath == "epi":  # a PSUM tile through the epilogue of mode fn into vd
      off, mode = o["addr"], ins.fn
      def f(n):
        x = s32(s[a]) + off
        if not 0 <= x < PT: raise _Stop("psum_out_of_range")
        v[d] = epilogue.epilogue(psum[x], v[b], v[c], mode)
    elif tile := next((x for x in ins.mems if x.space in ("vmem", "psum") and x.span is None), None):
      # one tile [sa + off] of VMEM or PSUM (the operand's space): a load into vd, MLW's weights, or a store
      mem, size, trap = (psum, PT, "psum_out_of_range") if tile.space == "psum" else (vmem, VT, "vmem_out_of_range")
      off = o[tile.name]
      def addr() -> int:
        x = s32(s[a]) + off
        if not 0 <= x < size: raise _Stop(trap)
        return x
      if ins.wb:
        def f(n): v[d] = mem[addr()]
      elif ins.datapath == "mxu":
        def f(n): m.w = mem[addr()].copy()
      else:
        def f(n): mem[addr()] = v[b]
    elif any(x.space == "elem" for x in ins.mems):  # VMEM elements: a gather into vd, or a scatter
      flat, size, off = vmem.reshape(-1), VT * self.N * self.N, o["addr"]  # flat: a view of VMEM elements
      def elems(mask=None) -> np.ndarray:
        x = v[a].view(np.int32).astype(np.int64) + (s32(s[b]) + off)
        if mask is not None: x = x[mask]  # row-major: increasing lane order
        if x.size and (x.min() < 0 or x.max() >= size): raise _Stop("vmem_out_of_range")
        return x
      if ins.wb:
        def f(n): v[d] = flat[elems()]
      else:
        def f(n):
          mask = v[c] != 0
          x, vals = elems(mask), v[d][mask]
          # a later lane wins: keep the last lane writing each element (numpy's repeated-index assignment is unordered)
          _, last = np.unique(x[::-1], return_index=True)
          flat[x[::-1][last]] = vals[::-1][last]
    elif mn == "VMOV":
      def f(n): v[d] = v[a]
    elif mn == "VZERO":
      def f(n): v[d] = 0
    elif mn == "VFILL":
      imm = o["imm"] & M32
      def f(n): v[d] = imm
    elif unit == "vpu":
      op = VPU[mn[1:]]
      arity = isa.VPU_ARITY[mn[1:]]
      if arity == 1:
        def f(n): v[d] = op(v[a], None, None)
      elif arity == 2:
        def f(n): v[d] = op(v[a], v[b], None)
      else:
        def f(n): v[d] = op(v[a], v[b], v[c])
    elif unit == "xlu":
      op = xlu.OPS[mn]
      k, r0, c0 = o.get("k", 0), o.get("r0", 0), o.get("c0", 0)
      if ins.reg_fields("sreg", False):  # the amount from a scalar register
        def f(n): v[d] = op(v[a], None, s32(s[b]), 0, 0)
      elif "rb" in ins.reg_fields("vreg", False):  # an index tile
        def f(n): v[d] = op(v[a], v[b], 0, 0, 0)
      else:
        def f(n): v[d] = op(v[a], None, k, r0, c0)
    elif mn in ("MMUL", "MMUL.BF16"):
      T, acc, doff, soff = o["T"], o["acc"], o["dst"], o["src"]
      run = (lambda old, x, w, acc: mxu.mmul(old, x, mxu.weights(w), acc)) if mn == "MMUL" else mxu.mmul_bf16
      def f(n):
        p, x = s32(s[a]) + doff, s32(s[b]) + soff
        if not (0 <= x and x + T <= VT): raise _Stop("vmem_out_of_range")
        if not (0 <= p and p + T <= PT): raise _Stop("psum_out_of_range")
        psum[p:p + T] = run(psum[p:p + T], vmem[x:x + T], m.w, acc)
    elif mn in ("DMA.IN", "DMA.OUT"):
      T, doff, soff, to_vmem = o["T"], o["dst"], o["src"], mn == "DMA.IN"
      hbm, HT = self.hbm, self.config.HBM_TILES
      def span(base: int, stride: int, rows: int, size: int, trap: str) -> None:
        lo, hi = base + min(0, (rows - 1) * stride), base + max(0, (rows - 1) * stride) + T
        if lo < 0 or hi > size: raise _Stop(trap)
      def f(n):
        rows, hs, vs = m.dma_shape
        d0, s0 = s32(s[a]) + doff, s32(s[b]) + soff
        vb, hb = (d0, s0) if to_vmem else (s0, d0)
        span(vb, vs, rows, VT, "vmem_out_of_range")
        span(hb, hs, rows, HT, "hbm_out_of_range")
        for r in range(rows):
          v0, h0 = vb + r * vs, hb + r * hs
          if to_vmem: vmem[v0:v0 + T] = hbm.read(h0, T)
          else: hbm.write(h0, vmem[v0:v0 + T].copy())
    elif mn == "DMA.WAIT":
      return _nop
    elif mn == "DMA.CFG":
      shape = (o["rows"], o["vstride"])
      def f(n): m.dma_shape = (shape[0], s32(s[a]), shape[1])
    elif mn == "SIG.SEND":
      flag = o["flag"]
      def f(n):
        if s[a] >= m.cores: raise _Stop("no_such_core")
        m.send(s[a], flag)
    elif mn == "SIG.WAIT":
      flag, cnt, flags = o["flag"], o["count"], self.flags
      def f(n):
        if flags[flag] < cnt: raise _Block()
        flags[flag] -= cnt
    # --- SparseCore (doc/sparsecore.md) ---
    elif mn in ("EMB.BAG", "EMB.FBAG"):
      B, doff, ioff, fp, hbm, HT = o["B"], o["dst"], o["idx"], mn == "EMB.FBAG", self.hbm, self.config.HBM_TILES
      def f(n):
        tbase, rows, width, bag = m.emb_table
        dst, idx = s32(s[a]) + doff, s32(s[b]) + ioff
        try:
          sparsecore.check(HT, m.N, tbase, rows, width, bag, B, idx, dst)
          sparsecore.bag_lookup(hbm, m.N, tbase, rows, width, bag, B, idx, dst, fp)
        except sparsecore.EmbTrap as e:
          raise _Stop(e.trap) from None
    elif mn == "EMB.WAIT":
      return _nop
    elif mn == "EMB.CFG":
      width, bag = o["width"], o["bag"]
      def f(n): m.emb_table = (s32(s[a]), s[b], width, bag)
    else:  # an instruction the table gained after this interpreter: fail loudly, but only if it runs
      def f(n): raise NotImplementedError(f"golden interpreter: no semantics for {mn} (pc {pc})")
    return f

  # ------------------------------------------------------------------------------------------
  def run(self, max_cycles: int) -> tuple[str, str | None, int | None]:
    """Execute from self.pc until HALT, a trap or the watchdog; returns (status, trap, pc)."""
    fns, plen, loops = self._fns, len(self._fns), self.loops
    pc, n = self.pc, self.retired
    last = loops[-1][1] if loops else -1  # last body pc of the innermost loop
    status = None
    try:
      if not 0 <= pc < plen: raise _Stop("imem_out_of_range")  # an empty program
      while True:
        if n >= max_cycles:
          status = ("timeout", None, pc)
          break
        npc = fns[pc](n)
        if npc is None:
          npc = pc + 1
          if pc == last:  # the back-edge: restart the body or pop the loop
            top = loops[-1]
            if top[2] > 1:
              top[2] -= 1
              npc = top[0]
            else:
              loops.pop()
              last = loops[-1][1] if loops else -1
        else:
          last = loops[-1][1] if loops else -1
        n += 1
        if not 0 <= npc < plen:  # this instruction completed, its successor is outside the program
          status = ("trap", "imem_out_of_range", pc)
          break
        pc = npc
    except _Stop as e:
      if e.trap is None: n += 1
      status = ("ok", None, None) if e.trap is None else ("trap", e.trap, pc)
    except _Block:
      status = ("blocked", None, pc)
    self.pc, self.retired = pc, n
    return status

  def dump(self, what: str, addr: int, count: int) -> list[tuple[str, int, np.ndarray]]:
    if what == "sreg": return [("sreg", 0, np.array(self.sregs[:count], np.uint32))]
    if what == "hbm":
      if not (0 <= addr and addr + count <= self.config.HBM_TILES): raise ValueError(f"dump hbm {addr} {count}: out of range")
      return [("hbm", addr, self.hbm.read(addr, count))]
    mem = {"vmem": self.vmem, "psum": self.psum}[what]
    if not (0 <= addr and addr + count <= len(mem)): raise ValueError(f"dump {what} {addr} {count}: out of range")
    return [(what, addr + i, mem[addr + i].copy()) for i in range(count)]


def run(bundle: Bundle) -> Result:
  """Execute a bundle on a fresh machine with sequential semantics."""
  m = Machine(bundle.config)
  m.load(bundle)
  status, trap, pc = m.run(bundle.max_cycles)
  if status == "blocked": status = "timeout"  # alone, nothing can wake it: the watchdog
  dumps = [x for what, addr, count in bundle.dumps for x in m.dump(what, addr, count)]
  perf = {name: 0 for name, _ in isa.PERF_COUNTERS}
  perf["retired"] = m.retired
  return Result(dumps=dumps, cycles=m.retired, perf=perf, status=status, trap=trap, pc=pc)
