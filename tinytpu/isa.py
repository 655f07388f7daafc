"""The ISA table: the single definition of every TinyTPU instruction and its encoding.

Everything else is generated from or checked against this file: `rtl/tinytpu_pkg.sv`, `doc/isa.md`,
the assembler/disassembler and the golden decoder.

Instruction word (64 bits, one layout for every instruction):

  63    56 55    48 47 44 43 40 39 36 35 32 31                             0
  [  op   ][  fn   ][ rd  ][ ra  ][ rb  ][ rc  ][            imm             ]
                                                [   immhi     ][   immlo    ]

`op` selects the instruction (or the unit, for SALU/BRANCH/VPU/XLU), `fn` the function within it.
Every bit an instruction does not use must be zero, otherwise it is an illegal instruction; this
makes the disassembly of every legal word exact.
"""
from __future__ import annotations

import dataclasses
from typing import Optional

# ---------------------------------------------------------------------------------------------
# fields: name -> (lsb, width)
FIELDS: dict[str, tuple[int, int]] = {
  "op": (56, 8), "fn": (48, 8),
  "rd": (44, 4), "ra": (40, 4), "rb": (36, 4), "rc": (32, 4),
  "imm": (0, 32), "immhi": (16, 16), "immlo": (0, 16),
}
WORD_BITS = 64


def field_mask(name: str) -> int:
  lsb, w = FIELDS[name]
  return ((1 << w) - 1) << lsb


# ---------------------------------------------------------------------------------------------
# operand kinds
#   sreg    scalar register s0..s15 in a 4-bit field
#   vreg    vector register v0..v15 in a 4-bit field
#   simm    signed immediate (two's complement in the field)
#   uimm    unsigned immediate, range lo..hi (hi may name a config limit: "N-1")
#   target  PC-relative signed offset, written as a label or a number (lo: a lower bound if not 0)
#   mem     `[sX + imm]`: base scalar register plus signed immediate (two fields), addressing `space`:
#           vmem (a VMEM tile), psum (a PSUM tile), hbm (an HBM tile) or elem (VMEM elements
#           sX + imm + va[l], one a lane);
#           `span` names the operand giving the count of consecutive tiles (MMUL's T), else one tile
# roles: every operand is read unless `write` (spec prefix `out `): the instruction writes the
# register, or for a memory operand the memory (its base register is always read). The operand's
# class (`cls`) is vector, scalar, memory or immediate.
KIND_CLASS = {"sreg": "scalar", "vreg": "vector", "mem": "memory", "simm": "immediate", "uimm": "immediate", "target": "immediate"}
MEM_SPACES = ("vmem", "psum", "hbm", "elem")


@dataclasses.dataclass(frozen=True)
class Operand:
  name: str
  kind: str
  field: str                      # for mem: the immediate field; base register in `base`
  base: Optional[str] = None      # mem only: field holding the base scalar register
  lo: int = 0                     # uimm: the minimum; target: a lower bound when not 0
  hi: Optional[int | str] = None  # uimm only: None = field max, "N-1" = lane index
  write: bool = False             # the instruction writes what the operand names (see roles above)
  space: Optional[str] = None     # mem only: vmem, psum or elem
  span: Optional[str] = None      # mem only: the operand counting the tiles (None: one tile)

  def fields(self) -> tuple[str, ...]:
    return (self.base, self.field) if self.kind == "mem" else (self.field,)

  @property
  def cls(self) -> str:
    return KIND_CLASS[self.kind]

  @property
  def role(self) -> str:
    """`read vector`, `write scalar`, `read memory`, `read immediate`..."""
    return f"{'write' if self.write else 'read'} {self.cls}"

  @property
  def written(self) -> bool:
    """The instruction writes this register operand (its destination vd or sd)."""
    return self.write and self.kind in ("sreg", "vreg")


def _ops(spec: str) -> tuple[Operand, ...]:
  """Compact operand spec: 'out vd:vreg:rd, addr:mem:ra+imm:vmem, T:uimm:fn:1:255, dst:mem:ra+immhi:psum:T'
  (`out `: a written operand; uimm name:uimm:field[:lo[:hi]]; target name:target:field[:lo];
  mem name:mem:base+field:space[:span])."""
  out = []
  for part in filter(None, (p.strip() for p in spec.split(","))):
    write = part.startswith("out ")
    bits = part.removeprefix("out ").split(":")
    name, kind = bits[0], bits[1]
    if kind == "mem":
      base, fld = bits[2].split("+")
      out.append(Operand(name, kind, fld, base=base, write=write, space=bits[3], span=bits[4] if len(bits) > 4 else None))
    elif kind == "uimm":
      lo = int(bits[3]) if len(bits) > 3 else 0
      hi = bits[4] if len(bits) > 4 else None
      out.append(Operand(name, kind, bits[2], lo=lo, hi=(hi if hi is None or not hi.lstrip("-").isdigit() else int(hi)), write=write))
    elif kind == "target":
      out.append(Operand(name, kind, bits[2], lo=int(bits[3]) if len(bits) > 3 else 0, write=write))
    else:
      out.append(Operand(name, kind, bits[2], write=write))
  return tuple(out)


# Datapaths: what executes an instruction, name -> (in the SXU, fixed latency, what). The SXU
# executes its own (no vector issue); the others are issued to the TensorCore's vector side
# (rtl/tensorcore.sv). `fixed latency`: the issue-to-write-back latency that the datapath's
# structure realises (a register stage in tensorcore.sv, a memory's registered read), which the
# table's latency column must then say (check_table refuses anything else: change the RTL first);
# None where the datapath follows the table (the VPU delays each result to vpu_latency(fn)) or
# writes no vector register.
DATAPATHS: dict[str, tuple[bool, Optional[int], str]] = {
  "ctrl": (True, None, "issue control: no operation, HALT, FENCE"),
  "salu": (True, None, "the scalar ALU (one per issue slot)"),
  "branch": (True, None, "the next-pc logic: branches and jumps"),
  "loop": (True, None, "the loop stack"),
  "counter": (True, None, "the cycle and performance counters"),
  "extract": (True, None, "a lane of VRF read port a into a scalar register"),
  "vld": (False, 1, "VMEM's core read port on the load channel (registered read), VRF write port 1"),
  "vst": (False, None, "VMEM's core write port on the store channel"),
  "pld": (False, 1, "PSUM's core read port (registered read)"),
  "pst": (False, None, "PSUM's core write port"),
  "mov": (False, 1, "the move register mov_q of tensorcore.sv"),
  "vpu": (False, None, "the VPU (rtl/vpu.sv delays every function to vpu_latency(fn))"),
  "xlu": (False, 1, "the XLU (one register stage, rtl/xlu.sv)"),
  "gather": (False, 2, "VMEM's read port in element mode, then the hold register gth_q of tensorcore.sv"),
  "scatter": (False, None, "VMEM's write port in element mode"),
  "mxu": (False, None, "the MXU command register and queue"),
  "dma": (False, None, "the DMA engine's command queue (rtl/dma.sv): copies between HBM and VMEM in the background"),
  "dmacfg": (True, None, "the SXU's DMA shape registers (rows, HBM row stride, VMEM row stride)"),
  "sync": (True, None, "the SXU's signal flags and the core's signal port (doc/chip.md)"),
  "epi": (False, 2, "PSUM's core read port (registered read), then the epilogue stage of rtl/epi.sv (its result register res_q)"),
  # --- SparseCore (doc/sparsecore.md) ---
  "emb": (False, None, "the SparseCore's command port (rtl/sparsecore.sv): embedding-bag lookups between HBM tiles in the background"),
  "embcfg": (True, None, "the SXU's SparseCore table registers (table base, rows, row width, bag size)"),
}
# the VRF write-back sources, in code order (tinytpu_pkg::wb_e); VLD writes through port 1, the
# others through port 0 selected by this code
WB_SOURCES = ("vpu", "xlu", "vld", "pld", "mov", "gather", "epi")


@dataclasses.dataclass(frozen=True)
class Instr:
  mnemonic: str
  op: int
  fn: Optional[int]        # None: the fn field is not part of the opcode
  operands: tuple[Operand, ...]
  unit: str                # sxu, vmem, vpu, xlu, mxu
  sem: str                 # exact semantics, for doc/isa.md
  latency: int = 1         # cycles from issue to result (VPU/XLU); documented for the others
  group: str = ""
  traps: str = ""
  datapath: str = "ctrl"   # a DATAPATHS name
  issue: str = ""          # dual-issue class (ISSUE_CLASSES), "" = never pairs
  perf: str = ""           # the class counter of PERF_COUNTERS it counts in (vpu_ops, xlu_ops, mem_ops)

  @property
  def used_mask(self) -> int:
    m = field_mask("op")
    if self.fn is not None:
      m |= field_mask("fn")
    for o in self.operands:
      for f in o.fields():
        m |= field_mask(f)
    return m

  @property
  def fixed_bits(self) -> int:
    w = self.op << FIELDS["op"][0]
    if self.fn is not None:
      w |= self.fn << FIELDS["fn"][0]
    return w

  @property
  def syntax(self) -> str:
    parts = []
    for o in self.operands:
      parts.append(f"[s{o.base[-1]} + {o.field}]" if o.kind == "mem" else o.name)
    return self.mnemonic + (" " + ", ".join(parts) if parts else "")

  # register use by field, from the operand roles (what the SXU's interlocks and the backend need)
  def reg_fields(self, kind: str, write: bool) -> tuple[str, ...]:
    """Fields of the registers of `kind` (sreg, vreg) the instruction writes (write) or reads
    (a memory operand's base register is a read scalar register)."""
    out = [o.field for o in self.operands if o.kind == kind and o.write == write]
    if kind == "sreg" and not write:
      out += [o.base for o in self.operands if o.kind == "mem"]
    return tuple(out)

  @property
  def wb(self) -> Optional[str]:
    """The VRF write-back source of its result (a WB_SOURCES name), None if it writes no vector register."""
    return self.datapath if self.reg_fields("vreg", True) else None

  @property
  def mems(self) -> tuple[Operand, ...]:
    return tuple(o for o in self.operands if o.kind == "mem")

  @property
  def in_sxu(self) -> bool:
    return DATAPATHS[self.datapath][0]


# ---------------------------------------------------------------------------------------------
# opcodes (op field). 0x00 is reserved so that an all-zero word is illegal.
OP = {
  "NOP": 0x01, "HALT": 0x02, "FENCE": 0x03,
  "LI": 0x04, "SALU": 0x05, "SADDI": 0x06,
  "BRANCH": 0x08, "JMP": 0x09, "LOOP": 0x0A, "LOOPI": 0x0B, "LBREAK": 0x0C,
  "RDCYCLE": 0x0D, "RDPERF": 0x0E,
  "VSPLAT": 0x10, "VEXTRACT": 0x11,
  "VLD": 0x20, "VST": 0x21, "PLD": 0x22, "PST": 0x23, "VMOV": 0x24, "VZERO": 0x25, "VFILL": 0x26,
  "VGATHER": 0x27, "VSCATTER": 0x28, "PEPI": 0x29,
  "VPU": 0x30, "XLU": 0x40, "MLW": 0x50, "MMUL": 0x51, "MMULBF": 0x52,
  "DMAIN": 0x60, "DMAOUT": 0x61, "DMAWAIT": 0x62, "DMACFG": 0x63,
  "SIGSEND": 0x78, "SIGWAIT": 0x79,
  "EMBBAG": 0x7A, "EMBBAGF": 0x7B, "EMBWAIT": 0x7C, "EMBCFG": 0x7D,  # SparseCore (doc/sparsecore.md)
}

TRAP_CODES = ["ok", "illegal_instruction", "vmem_out_of_range", "psum_out_of_range",
              "imem_out_of_range", "loop_stack", "timeout", "hbm_out_of_range", "no_such_core",
              "emb_index_out_of_range"]
TRAP = {name: i for i, name in enumerate(TRAP_CODES)}

# hardware performance counters, read by RDPERF and printed on the `perf` line
PERF_COUNTERS = [
  ("retired", "instructions retired (issued and completed, HALT included)"),
  ("mxu_busy", "cycles the MXU spent streaming activation rows"),
  ("vpu_ops", "VPU instructions issued"),
  ("xlu_ops", "XLU instructions issued"),
  ("mem_ops", "VLD/VST/PLD/PST/PEPI*/VMOV/VZERO/VFILL instructions issued"),
  ("stall_raw", "issue stalls waiting for a result of an earlier instruction (read after write)"),
  ("stall_waw", "issue stalls to keep write order with an earlier, still running instruction"),
  ("stall_unit", "issue stalls because the target unit is busy (MXU queue full, multi-cycle VPU busy)"),
  ("stall_fence", "cycles spent in FENCE waiting for background units"),
  ("dma_busy", "cycles the DMA engine had a command queued or in flight"),
  ("dma_tiles", "tiles the DMA engine moved (HBM reads of DMA.IN plus HBM writes of DMA.OUT)"),
  ("stall_dma", "issue stalls of an instruction touching tiles an in-flight DMA owns (and of DMA.WAIT)"),
  ("stall_sig", "issue stalls of SIG.WAIT waiting for its flag (doc/chip.md)"),
]
PERF = {name: i for i, (name, _) in enumerate(PERF_COUNTERS)}

LOOP_DEPTH = 4
# core-to-core signals (doc/chip.md): flags per core, each a 32-bit counter (SIG.SEND adds one,
# SIG.WAIT waits for `count` and subtracts it)
SIG_FLAGS = 8
# SparseCore (doc/sparsecore.md): the widest table row in tiles (the size of its bag accumulator)
EMB_W_MAX = 16
# the DMA engine's command queue (rtl/dma.sv, doc/hbm.md): DMA.IN/DMA.OUT commands it holds before
# a further one waits at issue (the backend's HBM prologue issues at most this many: backend/stream.py)
DMA_QDEPTH = 4

# ---------------------------------------------------------------------------------------------
# VPU functions: (name, arity, latency, group, semantics). arity: 1 = unary (`vd, va`),
# 2 = binary (`vd, va, vb`), 3 = ternary (see VSEL/VMAC/VFMAC syntax).
_VPU: list[tuple[str, int, int, str, str]] = [
  # int32 arithmetic
  ("ADD", 2, 1, "int32 arithmetic", "a + b mod 2^32"),
  ("SUB", 2, 1, "int32 arithmetic", "a - b mod 2^32"),
  ("MUL", 2, 1, "int32 arithmetic", "low 32 bits of a * b"),
  ("CDIV", 2, 4, "int32 arithmetic", "signed division truncating toward zero; a / 0 = 0; INT_MIN / -1 = INT_MIN"),
  ("CMOD", 2, 4, "int32 arithmetic", "a - CDIV(a, b) * b (sign of a); a % 0 = a; INT_MIN % -1 = 0"),
  ("NEG", 1, 1, "int32 arithmetic", "-a mod 2^32 (NEG INT_MIN = INT_MIN)"),
  ("ABS", 1, 1, "int32 arithmetic", "|a| mod 2^32 (ABS INT_MIN = INT_MIN)"),
  ("SIGN", 1, 1, "int32 arithmetic", "-1, 0 or 1 by the sign of a"),
  ("RELU", 1, 1, "int32 arithmetic", "max(a, 0), signed"),
  ("MAX", 2, 1, "int32 arithmetic", "signed maximum"),
  ("MIN", 2, 1, "int32 arithmetic", "signed minimum"),
  ("MAXU", 2, 1, "int32 arithmetic", "unsigned maximum"),
  ("MINU", 2, 1, "int32 arithmetic", "unsigned minimum"),
  ("SATADD", 2, 1, "int32 arithmetic", "a + b clamped to [INT_MIN, INT_MAX]"),
  ("SATSUB", 2, 1, "int32 arithmetic", "a - b clamped to [INT_MIN, INT_MAX]"),
  ("ABSDIFF", 2, 1, "int32 arithmetic", "|a - b| computed exactly, clamped to INT_MAX"),
  # int32 compare
  ("CMPLT", 2, 1, "int32 compare", "1 if a < b (signed) else 0"),
  ("CMPLTU", 2, 1, "int32 compare", "1 if a < b (unsigned) else 0"),
  ("CMPEQ", 2, 1, "int32 compare", "1 if a == b else 0"),
  ("CMPNE", 2, 1, "int32 compare", "1 if a != b else 0"),
  # bits
  ("AND", 2, 1, "bits", "a & b"),
  ("OR", 2, 1, "bits", "a | b"),
  ("XOR", 2, 1, "bits", "a ^ b"),
  ("NOT", 1, 1, "bits", "~a"),
  ("SHL", 2, 1, "bits", "a << (b & 31)"),
  ("SHR", 2, 1, "bits", "a >> (b & 31), logical"),
  ("SRA", 2, 1, "bits", "a >> (b & 31), arithmetic"),
  ("ROTL", 2, 1, "bits", "rotate a left by b & 31"),
  ("ROTR", 2, 1, "bits", "rotate a right by b & 31"),
  ("CLZ", 1, 1, "bits", "count of leading zero bits (32 for a = 0)"),
  ("CTZ", 1, 1, "bits", "count of trailing zero bits (32 for a = 0)"),
  ("POPCNT", 1, 1, "bits", "count of one bits"),
  ("BREV8", 1, 1, "bits", "reverse the byte order of a (bswap32)"),
  # narrow ints
  ("SEXT8", 1, 1, "narrow ints", "sign-extend the low 8 bits (cast to int8)"),
  ("SEXT16", 1, 1, "narrow ints", "sign-extend the low 16 bits (cast to int16)"),
  ("ZEXT8", 1, 1, "narrow ints", "zero-extend the low 8 bits (cast to uint8)"),
  ("ZEXT16", 1, 1, "narrow ints", "zero-extend the low 16 bits (cast to uint16)"),
  # packed int8: 4 signed bytes per lane, byte i = bits [8i+7:8i]
  ("P8ADD", 2, 1, "packed int8", "per byte: a + b saturated to [-128, 127]"),
  ("P8SUB", 2, 1, "packed int8", "per byte: a - b saturated to [-128, 127]"),
  ("P8MAX", 2, 1, "packed int8", "per byte: signed maximum"),
  ("P8MIN", 2, 1, "packed int8", "per byte: signed minimum"),
  ("P8NEG", 1, 1, "packed int8", "per byte: -a saturated (-(-128) = 127)"),
  ("P8RELU", 1, 1, "packed int8", "per byte: max(a, 0)"),
  ("P8ABS", 1, 1, "packed int8", "per byte: |a| saturated (|-128| = 127)"),
  ("P8SIGN", 1, 1, "packed int8", "per byte: -1, 0 or 1"),
  ("P8CMPLT", 2, 1, "packed int8", "per byte: 0xFF if a < b (signed) else 0x00"),
  ("P8CMPEQ", 2, 1, "packed int8", "per byte: 0xFF if a == b else 0x00"),
  ("P8MULLO", 2, 1, "packed int8", "per byte: low 8 bits of the 16-bit product a * b"),
  ("P8MULHI", 2, 1, "packed int8", "per byte: high 8 bits of the signed 16-bit product a * b"),
  ("P8ABSDIFF", 2, 1, "packed int8", "per byte: |a - b| saturated to 127"),
  # fp32 arithmetic
  ("FADD", 2, 2, "fp32 arithmetic", "IEEE-754 binary32 a + b, round to nearest even, subnormals kept"),
  ("FSUB", 2, 2, "fp32 arithmetic", "IEEE a - b, RNE"),
  ("FMUL", 2, 2, "fp32 arithmetic", "IEEE a * b, RNE"),
  ("FDIV", 2, 6, "fp32 arithmetic", "IEEE a / b, RNE (x/0 = ±inf, 0/0 = NaN)"),
  ("FRECIP", 1, 6, "fp32 arithmetic", "IEEE 1 / a, RNE (1/±0 = ±inf)"),
  ("FSQRT", 1, 6, "fp32 arithmetic", "IEEE sqrt(a), RNE (sqrt(-0) = -0, negative gives NaN)"),
  ("FNEG", 1, 1, "fp32 arithmetic", "flip the sign bit (NaN payload kept)"),
  ("FABS", 1, 1, "fp32 arithmetic", "clear the sign bit (NaN payload kept)"),
  ("FSIGN", 1, 1, "fp32 arithmetic", "1.0 if a > 0, -1.0 if a < 0, a itself for ±0, NaN for NaN"),
  ("FMAX", 2, 1, "fp32 arithmetic", "maximum; a NaN operand gives NaN; max(-0, +0) = +0"),
  ("FMIN", 2, 1, "fp32 arithmetic", "minimum; a NaN operand gives NaN; min(-0, +0) = -0"),
  ("FTRUNC", 1, 1, "fp32 arithmetic", "round toward zero to an integral value (sign of zero kept)"),
  # fp32 compare
  ("FCMPLT", 2, 1, "fp32 compare", "1 if a < b else 0 (0 if either is NaN; -0 < +0 is false)"),
  ("FCMPEQ", 2, 1, "fp32 compare", "1 if a == b else 0 (-0 == +0; NaN equals nothing)"),
  ("FCMPNE", 2, 1, "fp32 compare", "1 if a != b else 0 (1 if either is NaN)"),
  # conversions
  ("I2F", 1, 2, "conversions", "int32 to fp32, RNE"),
  ("U2F", 1, 2, "conversions", "uint32 to fp32, RNE"),
  ("F2I", 1, 2, "conversions", "fp32 to int32 truncating toward zero, saturating to [INT_MIN, INT_MAX]; NaN gives 0"),
  ("F2BF16", 1, 1, "conversions", "fp32 to bf16 (RNE) in the low 16 bits, high bits 0; NaN gives 0x7FC0"),
  ("BF162F", 1, 1, "conversions", "bf16 in the low 16 bits to fp32 (exact: the bits shifted left by 16)"),
  # transcendental (fixed-point algorithms, see doc/transcendental.md)
  ("FEXP2", 1, 8, "transcendental", "2^a by the documented fixed-point algorithm"),
  ("FLOG2", 1, 8, "transcendental", "log2(a) by the documented fixed-point algorithm"),
  ("FSIN", 1, 8, "transcendental", "sin(a) by the documented fixed-point algorithm"),
  ("FCOS", 1, 8, "transcendental", "cos(a) by the documented fixed-point algorithm"),
  # pair rotate and ternary
  ("FROTPAIR", 2, 2, "pair rotate", "lane pairs (2p, 2p+1), c = b[2p], s = b[2p+1]: out[2p] = x0*c - x1*s, out[2p+1] = x0*s + x1*c (fp32, each product and the sum rounded)"),
  ("IROTPAIR", 2, 1, "pair rotate", "as FROTPAIR in int32 wrap arithmetic"),
  ("SEL", 3, 1, "ternary", "vd = vc != 0 ? va : vb (syntax VSEL vd, vc, va, vb)"),
  ("MAC", 3, 1, "ternary", "vd = va * vb + vc, int32 wrap (syntax VMAC vd, va, vb, vc)"),
  ("FMAC", 3, 2, "ternary", "vd = va * vb + vc, fp32 with two roundings like numpy a*b+c"),
]
# reductions: int SUM MAX MIN PROD and fp FSUM FMAX FMIN FPROD over three scopes
for _r, _fp in (("SUM", 0), ("MAX", 0), ("MIN", 0), ("PROD", 0), ("FSUM", 1), ("FMAX", 1), ("FMIN", 1), ("FPROD", 1)):
  for _scope, _what in (("ROW", "each row's result in every lane of that row"),
                        ("COL", "each column's result in every row of that column"),
                        ("TILE", "the tile's result in every lane")):
    _lat = (4 if _scope != "TILE" else 6) if _fp else 1
    _order = " (pairwise tree, see doc/isa.md §Reductions)" if _fp else ""
    _VPU.append((f"{_r}_{_scope}", 1, _lat, "reductions", f"{_r.lower()} reduction{_order}: {_what}"))
_VPU += [
  ("ARGMAX_ROW", 1, 1, "reductions", "index of the first signed int32 maximum of each row, in every lane of the row"),
  ("ARGMIN_ROW", 1, 1, "reductions", "index of the first signed int32 minimum of each row, in every lane of the row"),
  ("FARGMAX_ROW", 1, 2, "reductions", "index of the first fp32 maximum of each row (a NaN counts as the maximum, like numpy)"),
  ("FARGMIN_ROW", 1, 2, "reductions", "index of the first fp32 minimum of each row (a NaN counts as the minimum, like numpy)"),
]

# XLU functions: (name, operand spec, semantics)
_XLU: list[tuple[str, str, str]] = [
  ("XROT", "vd:vreg:rd, va:vreg:ra, k:simm:imm", "vd[r][c] = va[r][(c + k) mod N]"),
  ("XROTS", "vd:vreg:rd, va:vreg:ra, sk:sreg:rb", "vd[r][c] = va[r][(c + sk) mod N] (k from a scalar register)"),
  ("XSROT", "vd:vreg:rd, va:vreg:ra, k:simm:imm", "vd[r][c] = va[(r + k) mod N][c]"),
  ("XSROTS", "vd:vreg:rd, va:vreg:ra, sk:sreg:rb", "vd[r][c] = va[(r + sk) mod N][c] (k from a scalar register)"),
  ("XBCOL", "vd:vreg:rd, va:vreg:ra, c0:uimm:imm:0:N-1", "vd[r][c] = va[r][c0]"),
  ("XBROW", "vd:vreg:rd, va:vreg:ra, r0:uimm:imm:0:N-1", "vd[r][c] = va[r0][c]"),
  ("XBSCALAR", "vd:vreg:rd, va:vreg:ra, r0:uimm:immhi:0:N-1, c0:uimm:immlo:0:N-1", "every lane = va[r0][c0]"),
  ("XTRANS", "vd:vreg:rd, va:vreg:ra", "vd[r][c] = va[c][r]"),
  ("XSHUF", "vd:vreg:rd, va:vreg:ra, vi:vreg:rb", "vd[r][c] = va[i div N][i mod N], i = vi[r][c] mod N*N"),
]

# ---------------------------------------------------------------------------------------------
_MEM_TRAP_V = "vmem_out_of_range if the address is outside [0, VMEM_TILES)"
_MEM_TRAP_P = "psum_out_of_range if the address is outside [0, PSUM_TILES)"
_DMA_SHAPE = ("for r < rows, t < T (rows, hstride, vstride: the DMA shape DMA.CFG set last, 1, 0, 0 after reset), "
              "rows in increasing order, tiles in increasing order (a later copy of a tile wins)")
_DMA_SYNC = ("Asynchronous: the DMA engine copies in the background, in command order; the SXU interlocks every "
             "later access to the copy's VMEM and HBM tiles (and a DMA touching tiles the MXU still reads), so "
             "every program sees the copy complete, as if it ran at issue")
_DMA_TRAPS = ("vmem_out_of_range if a row's VMEM tiles are outside [0, VMEM_TILES); then hbm_out_of_range if a row's "
              "HBM tiles are outside [0, HBM_TILES); a trapping DMA copies nothing")
_EMB_SEM = ("for every bag b < B (B = the fn field), in increasing b: x_j = the int32 lanes of element (b*bag + j) of the "
            "index list, element e being lane e mod N*N of HBM tile i + e div N*N (i = sb + immlo); every x_j must be in "
            "[0, rows) (signed); row r of the table is HBM tiles tbase + r*width .. + width-1; HBM[d + b*width + k] "
            "(d = sa + immhi, k < width) = ")
_EMB_TRAPS = ("hbm_out_of_range if the table [tbase, tbase + rows*width), the index list [i, i + ceil(B*bag / (N*N))) or "
              "the destination [d, d + B*width) leaves [0, HBM_TILES) (checked in that order) or the destination overlaps the "
              "table or the index list; then emb_index_out_of_range "
              "if any index of the list is outside [0, rows); a trapping EMB.BAG writes nothing")
_EMB_SYNC = ("Asynchronous: the SparseCore gathers in the background; it issues only while the DMA engine is idle, and "
             "a DMA waits until the SparseCore is idle, so every program sees the lookup complete at issue")
_S = "SXU"
# PEPI modes by fn (its mnemonic suffix): fn bit 0 applies ReLU last, bit 1 requantises to int8
EPI_RELU, EPI_REQUANT = 1, 2
EPI_MODES = (".B", ".BR", ".BQ", ".BRQ")
EPI_SHIFT_MAX = 63  # a requantising shift is clamped to [0, EPI_SHIFT_MAX]


def _build() -> list[Instr]:
  t: list[Instr] = []
  add = lambda *a, **k: t.append(Instr(*a, **k))
  g = "scalar and control"
  salu = dict(datapath="salu", issue="scalar")
  mov = dict(datapath="mov", issue="compute", perf="mem_ops")
  add("NOP", OP["NOP"], None, (), "sxu", "no operation", group=g, issue="scalar")
  add("HALT", OP["HALT"], None, (), "sxu", "wait for every background unit, then stop with status ok", group=g)
  add("FENCE", OP["FENCE"], None, (), "sxu", "wait until every background unit is idle (timing only)", group=g)
  add("LI", OP["LI"], None, _ops("out sd:sreg:rd, imm:simm:imm"), "sxu", "sd = imm32", group=g, **salu)
  for i, (m, sem) in enumerate([
      ("SADD", "sd = sa + sb"), ("SSUB", "sd = sa - sb"), ("SMUL", "sd = low 32 bits of sa * sb"),
      ("SAND", "sd = sa & sb"), ("SOR", "sd = sa | sb"), ("SXOR", "sd = sa ^ sb"),
      ("SSHL", "sd = sa << (sb & 31)"), ("SSHR", "sd = sa >> (sb & 31), logical"),
      ("SSRA", "sd = sa >> (sb & 31), arithmetic"), ("SSLT", "sd = 1 if sa < sb (signed) else 0"),
      ("SSLTU", "sd = 1 if sa < sb (unsigned) else 0")]):
    add(m, OP["SALU"], i, _ops("out sd:sreg:rd, sa:sreg:ra, sb:sreg:rb"), "sxu", sem + " (int32 wrap)", group=g, **salu)
  add("SADDI", OP["SADDI"], None, _ops("out sd:sreg:rd, sa:sreg:ra, imm:simm:imm"), "sxu", "sd = sa + imm32", group=g, **salu)
  for i, (m, cond) in enumerate([("BEQ", "sa == sb"), ("BNE", "sa != sb"), ("BLT", "sa < sb (signed)"), ("BGE", "sa >= sb (signed)")]):
    add(m, OP["BRANCH"], i, _ops("sa:sreg:ra, sb:sreg:rb, target:target:imm"), "sxu",
        f"if {cond}: pc = pc + target", group=g, datapath="branch", traps="imem_out_of_range if the next pc is outside the program")
  add("JMP", OP["JMP"], None, _ops("target:target:imm"), "sxu", "pc = pc + target", group=g, datapath="branch",
      traps="imem_out_of_range if the next pc is outside the program")
  loop_sem = ("push a loop whose body is pc+1 .. pc+end-1 and which runs `count` times; count = 0 (or negative, "
              "for LOOP) skips to pc+end. After the last body instruction completes without redirecting the pc, "
              "the body restarts while iterations remain, else the loop is popped. A nested loop must end strictly "
              "before the loop around it.")
  add("LOOP", OP["LOOP"], None, _ops("count:sreg:ra, end:target:imm:2"), "sxu", loop_sem + " count = sa (signed).", group=g, datapath="loop",
      traps="illegal_instruction if end < 2; loop_stack if 4 loops are active or the body does not end strictly inside the enclosing loop")
  add("LOOPI", OP["LOOPI"], None, _ops("count:uimm:immhi, end:target:immlo:2"), "sxu", loop_sem + " count = 16-bit unsigned immediate.", group=g, datapath="loop",
      traps="illegal_instruction if end < 2; loop_stack if 4 loops are active or the body does not end strictly inside the enclosing loop")
  add("LBREAK", OP["LBREAK"], None, (), "sxu", "pop the innermost loop and continue after its body", group=g, datapath="loop",
      traps="loop_stack if no loop is active")
  add("RDCYCLE", OP["RDCYCLE"], None, _ops("out sd:sreg:rd"), "sxu", "sd = cycles since start (timing: the golden model gives the count of instructions retired before it)", group=g,
      datapath="counter")
  add("RDPERF", OP["RDPERF"], None, _ops(f"out sd:sreg:rd, counter:uimm:imm:0:{len(PERF_COUNTERS) - 1}"), "sxu",
      "sd = performance counter `counter` (see the counter table; timing-dependent except `retired`)", group=g, datapath="counter")
  add("VSPLAT", OP["VSPLAT"], None, _ops("out vd:vreg:rd, sa:sreg:ra"), "vpu", "every lane of vd = sa", group=g, datapath="mov", issue="compute")
  add("VEXTRACT", OP["VEXTRACT"], None, _ops("out sd:sreg:rd, va:vreg:ra, r:uimm:immhi:0:N-1, c:uimm:immlo:0:N-1"), "sxu",
      "sd = va[r][c]", group=g, datapath="extract")
  g = "vector memory and registers"
  add("VLD", OP["VLD"], None, _ops("out vd:vreg:rd, addr:mem:ra+imm:vmem"), "vmem", "vd = VMEM[sa + imm]", group=g, traps=_MEM_TRAP_V,
      datapath="vld", issue="load", perf="mem_ops")
  add("VST", OP["VST"], None, _ops("vs:vreg:rb, out addr:mem:ra+imm:vmem"), "vmem", "VMEM[sa + imm] = vs", group=g, traps=_MEM_TRAP_V,
      datapath="vst", issue="store", perf="mem_ops")
  add("PLD", OP["PLD"], None, _ops("out vd:vreg:rd, addr:mem:ra+imm:psum"), "vmem", "vd = PSUM[sa + imm]", group=g, traps=_MEM_TRAP_P,
      datapath="pld", perf="mem_ops")
  add("PST", OP["PST"], None, _ops("vs:vreg:rb, out addr:mem:ra+imm:psum"), "vmem", "PSUM[sa + imm] = vs", group=g, traps=_MEM_TRAP_P,
      datapath="pst", perf="mem_ops")
  # PSUM epilogues (doc/epilogue.md): fn bit 0 = ReLU, bit 1 = requantise; golden/epilogue.py
  for mode, suffix in enumerate(EPI_MODES):
    q = mode & EPI_REQUANT
    spec = "out vd:vreg:rd, addr:mem:ra+imm:psum, vb:vreg:rb" + (", vq:vreg:rc" if q else "")
    sem = "x = PSUM[sa + imm] + vb (int32 wrap, lane-wise)"
    if q:
      sem += ("; per lane (r, c), m = vq[0][c] (signed), k = clamp(vq[1][c] signed, 0, 63): "
              "y = clamp(floor((x*m + 2^(k-1)) / 2^k), -128, 127) (exact integers; k = 0: clamp(x*m))")
    else:
      sem += "; y = x"
    if mode & EPI_RELU:
      sem += "; y = max(y, 0)"
    add("PEPI" + suffix, OP["PEPI"], mode, _ops(spec), "vmem", sem + "; vd = y", latency=2, group="PSUM epilogue",
        traps=_MEM_TRAP_P, datapath="epi", perf="mem_ops")
  elem = ("VMEM element e is lane e mod N*N of tile e div N*N; element addresses are sb + imm + va[l] "
          "with va[l] a signed int32")
  add("VGATHER", OP["VGATHER"], None, _ops("out vd:vreg:rd, va:vreg:ra, addr:mem:rb+imm:elem"), "vmem",
      f"vd[l] = VMEM element (sb + imm + va[l]) for every lane l ({elem})", latency=2, group=g, datapath="gather",
      traps="vmem_out_of_range if any lane's element address is outside [0, VMEM_TILES*N*N)")
  add("VSCATTER", OP["VSCATTER"], None, _ops("vs:vreg:rd, va:vreg:ra, vm:vreg:rc, out addr:mem:rb+imm:elem"), "vmem",
      f"for every lane l with vm[l] != 0, in increasing l (a later lane wins): VMEM element (sb + imm + va[l]) = vs[l] ({elem})",
      group=g, datapath="scatter", traps="vmem_out_of_range if any active lane's element address is outside [0, VMEM_TILES*N*N); then no lane is written")
  add("VMOV", OP["VMOV"], None, _ops("out vd:vreg:rd, va:vreg:ra"), "vpu", "vd = va", group=g, **mov)
  add("VZERO", OP["VZERO"], None, _ops("out vd:vreg:rd"), "vpu", "every lane of vd = 0", group=g, **mov)
  add("VFILL", OP["VFILL"], None, _ops("out vd:vreg:rd, imm:simm:imm"), "vpu", "every lane of vd = imm32 (an int or fp32 bits)", group=g, **mov)
  for i, (name, arity, lat, grp, sem) in enumerate(_VPU):
    spec = {1: "out vd:vreg:rd, va:vreg:ra", 2: "out vd:vreg:rd, va:vreg:ra, vb:vreg:rb"}.get(arity)
    if name == "SEL":
      spec = "out vd:vreg:rd, vc:vreg:rc, va:vreg:ra, vb:vreg:rb"
    elif arity == 3:
      spec = "out vd:vreg:rd, va:vreg:ra, vb:vreg:rb, vc:vreg:rc"
    add("V" + name, OP["VPU"], i, _ops(spec), "vpu", sem, latency=lat, group="VPU: " + grp, datapath="vpu", issue="compute", perf="vpu_ops")
  for i, (name, spec, sem) in enumerate(_XLU):
    add(name, OP["XLU"], i, _ops("out " + spec), "xlu", sem, group="XLU", datapath="xlu", issue="compute", perf="xlu_ops")
  add("MLW", OP["MLW"], None, _ops("addr:mem:ra+imm:vmem"), "mxu",
      "W = VMEM[sa + imm]; every later MMUL uses the low 8 bits of each lane as an int8 weight, every later MMUL.BF16 "
      "the high 16 bits as a bf16 weight (whichever mode loaded it: W is the tile, not a mode)", group="MXU", traps=_MEM_TRAP_V,
      datapath="mxu")
  mmul_traps = "vmem_out_of_range if a tile a..a+T-1 is outside VMEM; psum_out_of_range if p..p+T-1 is outside PSUM"
  add("MMUL", OP["MMUL"], None, _ops("out dst:mem:ra+immhi:psum:T, src:mem:rb+immlo:vmem:T, T:uimm:fn:1:255, acc:uimm:rc:0:1"), "mxu",
      "for t < T, r < N, n < N: PSUM[p+t][r][n] (= if acc=0, += if acc=1) sum_k int8(VMEM[a+t][r][k]) * int8(W[k][n]), int32 wrap; "
      "p = sa + immhi, a = sb + immlo (16-bit signed offsets)", group="MXU", datapath="mxu", traps=mmul_traps)
  add("MMUL.BF16", OP["MMULBF"], None, _ops("out dst:mem:ra+immhi:psum:T, src:mem:rb+immlo:vmem:T, T:uimm:fn:1:255, acc:uimm:rc:0:1"), "mxu",
      "MMUL with bf16 operands and fp32 sums: x = bf16(VMEM[a+t][r][k]), w = bf16(W[k][n]) (a lane's high 16 bits, its low 16 "
      "bits ignored); s = x0*w0, then s = s + xk*wk for k = 1..N-1 in that order, every product and sum an fp32 op (RNE, "
      "subnormals kept, NaN canonical); PSUM[p+t][r][n] = s if acc=0, = PSUM[p+t][r][n] + s (fp32) if acc=1", group="MXU",
      datapath="mxu", traps=mmul_traps)
  g = "DMA (HBM)"
  add("DMA.IN", OP["DMAIN"], None, _ops("out dst:mem:ra+immhi:vmem:T, src:mem:rb+immlo:hbm:T, T:uimm:fn:1:255"), "dma",
      f"{_DMA_SHAPE}: VMEM[v + r*vstride + t] = HBM[h + r*hstride + t], v = sa + immhi, h = sb + immlo (16-bit signed "
      f"offsets). {_DMA_SYNC}.", group=g, datapath="dma", traps=_DMA_TRAPS)
  add("DMA.OUT", OP["DMAOUT"], None, _ops("out dst:mem:ra+immhi:hbm:T, src:mem:rb+immlo:vmem:T, T:uimm:fn:1:255"), "dma",
      f"{_DMA_SHAPE}: HBM[h + r*hstride + t] = VMEM[v + r*vstride + t], h = sa + immhi, v = sb + immlo (16-bit signed "
      f"offsets). {_DMA_SYNC}.", group=g, datapath="dma", traps=_DMA_TRAPS)
  add("DMA.WAIT", OP["DMAWAIT"], None, (), "sxu", "wait until every DMA command has completed (timing only: the "
      "interlocks already order every access)", group=g)
  add("DMA.CFG", OP["DMACFG"], None, _ops("hstride:sreg:ra, rows:uimm:immhi:1:65535, vstride:uimm:immlo"), "sxu",
      "set the DMA shape of later DMA.IN/DMA.OUT: rows = rows, hstride = sa (signed, HBM tiles between rows), "
      "vstride = immlo (VMEM tiles between rows); a DMA already issued keeps its shape", group=g, datapath="dmacfg")
  g = "core-to-core signals"
  add("SIG.SEND", OP["SIGSEND"], None, _ops(f"core:sreg:ra, flag:uimm:immlo:0:{SIG_FLAGS - 1}"), "sxu",
      "wait until every DMA command of this core has completed (release: its HBM writes are done and its HBM reads "
      "have their data), then add 1 to flag `flag` of core sa (unsigned; sa may be this core). The signal travels "
      "over the on-chip network and arrives later; signals from one core to one core arrive in order", group=g,
      datapath="sync", traps="no_such_core if sa is not a core of the chip (the single-core co-sim has core 0 only)")
  add("SIG.WAIT", OP["SIGWAIT"], None, _ops(f"flag:uimm:immhi:0:{SIG_FLAGS - 1}, count:uimm:immlo:1:65535"), "sxu",
      "wait until this core's flag `flag` is at least `count`, then subtract `count` from it (flags are 0 at start, "
      "32-bit counters). A wait that no signal can satisfy is a deadlock: the watchdog's timeout at this pc "
      "(the chip reports every core's pc, doc/chip.md)", group=g, datapath="sync")
  # --- SparseCore (doc/sparsecore.md) ---
  g = "SparseCore (embedding bags)"
  bag_ops = "out dst:mem:ra+immhi:hbm, idx:mem:rb+immlo:hbm, B:uimm:fn:1:255"
  add("EMB.BAG", OP["EMBBAG"], None, _ops(bag_ops), "emb",
      _EMB_SEM + "sum over j < bag of row x_j's tile k, lane-wise int32 wrap. " + _EMB_SYNC + ".",
      group=g, datapath="emb", traps=_EMB_TRAPS)
  add("EMB.FBAG", OP["EMBBAGF"], None, _ops(bag_ops), "emb",
      _EMB_SEM + "s, lane-wise fp32: s = row x_0's tile k, then s = s + row x_j's tile k for j = 1 .. bag-1 in that "
      "order (each add IEEE binary32, RNE, subnormals kept, NaN canonical 0x7FC00000). " + _EMB_SYNC + ".",
      group=g, datapath="emb", traps=_EMB_TRAPS)
  add("EMB.WAIT", OP["EMBWAIT"], None, (), "sxu", "wait until the SparseCore is idle (timing only: the interlocks "
      "already order every access)", group=g)
  add("EMB.CFG", OP["EMBCFG"], None, _ops(f"tbase:sreg:ra, rows:sreg:rb, width:uimm:immhi:1:{EMB_W_MAX}, bag:uimm:immlo:1:65535"), "sxu",
      "set the table of later EMB.BAG/EMB.FBAG: table base tbase = sa (HBM tile, signed), rows = sb (unsigned), "
      "row width = immhi tiles, bag size = immlo indices; 0, 0, 1, 1 after reset; an EMB.BAG already issued keeps its "
      "table", group=g, datapath="embcfg")
  return t


ISSUE_CLASSES = ("load", "store", "compute", "scalar")
PERF_CLASSES = ("vpu_ops", "xlu_ops", "mem_ops")


def tables(instrs: list[Instr]) -> dict[str, object]:
  """The lookups derived from an instruction list, by module attribute name (a test gives a copy of
  the table with an extra instruction its own: tests/test_isa_flow.py).
  - ISSUE_CLASS: dual-issue class by mnemonic (doc/core.md): the instruction at pc + 1 may issue
    with the one at pc when their classes differ (and the other rules hold); an instruction of no
    class (Instr.issue "") never pairs. The SXU reads the class from the generated decode.
  - PERF_COUNTED: the instructions each class counter of PERF_COUNTERS counts (Instr.perf).
  - HW_LOOPS: the instructions that push a hardware loop (a loop-stack instruction with a body end)."""
  return {
    "INSTRS": instrs,
    "BY_MNEMONIC": {i.mnemonic: i for i in instrs},
    "BY_CODE": {(i.op, i.fn): i for i in instrs},
    "OPS_WITH_FN": sorted({i.op for i in instrs if i.fn is not None}),
    "ISSUE_CLASS": {i.mnemonic: i.issue for i in instrs if i.issue},
    "PERF_COUNTED": {c: frozenset(i.mnemonic for i in instrs if i.perf == c) for c in PERF_CLASSES},
    "HW_LOOPS": tuple(i.mnemonic for i in instrs if i.datapath == "loop" and any(o.kind == "target" for o in i.operands)),
  }


INSTRS: list[Instr] = _build()
_T = tables(INSTRS)
BY_MNEMONIC: dict[str, Instr] = _T["BY_MNEMONIC"]
BY_CODE: dict[tuple[int, Optional[int]], Instr] = _T["BY_CODE"]
OPS_WITH_FN: list[int] = _T["OPS_WITH_FN"]
ISSUE_CLASS: dict[str, str] = _T["ISSUE_CLASS"]
PERF_COUNTED: dict[str, frozenset[str]] = _T["PERF_COUNTED"]
HW_LOOPS: tuple[str, ...] = _T["HW_LOOPS"]
VPU_FNS: dict[str, int] = {name: i for i, (name, *_rest) in enumerate(_VPU)}
VPU_ARITY: dict[str, int] = {name: a for name, a, *_r in _VPU}
VPU_LATENCY: dict[str, int] = {name: lat for name, _a, lat, *_r in _VPU}
# the VPU datapath that computes a function (tinytpu_pkg::vpu_class): whole-tile (reductions, pair
# rotates) or lane-wise, fp32 (every F* function and the conversions) or integer
VPU_CLASSES = ("int_lane", "int_tile", "fp_lane", "fp_tile")
VPU_CLASS: dict[str, str] = {name: ("fp_" if name[0] == "F" or grp == "conversions" else "int_") +
                             ("tile" if grp in ("reductions", "pair rotate") else "lane") for name, _a, _l, grp, _s in _VPU}
XLU_FNS: dict[str, int] = {name: i for i, (name, *_r) in enumerate(_XLU)}


class TableError(ValueError):
  pass


def check_table(instrs: list[Instr]) -> None:
  """Raise TableError where the table says what decode or the datapath cannot do: duplicate
  encodings, overlapping fields, an unknown datapath, issue or counter class, a register where the
  SXU does not read or write one, a latency its datapath does not follow."""
  def need(ok: bool, why: str):
    if not ok:
      raise TableError(why)
  seen: dict[tuple, str] = {}
  names: set[str] = set()
  for i in instrs:
    key = (i.op, i.fn)
    need(key not in seen, f"duplicate encoding {key} for {i.mnemonic} and {seen.get(key)}")
    need(i.mnemonic not in names, f"duplicate mnemonic {i.mnemonic}")
    seen[key] = i.mnemonic
    names.add(i.mnemonic)
    used = field_mask("op") | (field_mask("fn") if i.fn is not None else 0)
    for o in i.operands:
      for f in o.fields():
        need(not (used & field_mask(f)), f"{i.mnemonic}: operand {o.name} overlaps another field")
        used |= field_mask(f)
      need(o.kind in KIND_CLASS, f"{i.mnemonic}: operand {o.name} has an unknown kind {o.kind}")
      need(o.kind == "mem" or (o.space is None and o.span is None), f"{i.mnemonic}: {o.name}: only a memory operand has a space")
      need(o.kind != "mem" or o.space in MEM_SPACES, f"{i.mnemonic}: {o.name}: memory space {o.space} is none of {MEM_SPACES}")
      need(not o.write or o.kind in ("sreg", "vreg", "mem"), f"{i.mnemonic}: {o.name}: an immediate cannot be written")
    need(i.datapath in DATAPATHS, f"{i.mnemonic}: unknown datapath {i.datapath}")
    need(i.issue in ISSUE_CLASSES + ("",), f"{i.mnemonic}: unknown issue class {i.issue}")
    need(i.perf in PERF_CLASSES + ("",), f"{i.mnemonic}: unknown counter class {i.perf}")
    need(1 <= i.latency <= 15, f"{i.mnemonic}: latency {i.latency} outside 1..15 (the SXU's write-back tables)")
    # the SXU writes a result register through rd, reads scalars through ra/rb (sa, sb) and vectors
    # through the VRF's ports a, b, c and s (ra, rb, rc; rd only as store data)
    for kind in ("sreg", "vreg"):
      need(set(i.reg_fields(kind, True)) <= {"rd"}, f"{i.mnemonic}: a written register must be in rd")
    need(set(i.reg_fields("sreg", False)) <= {"ra", "rb"}, f"{i.mnemonic}: the SXU reads scalar registers from ra and rb only")
    need(len(i.reg_fields("sreg", True) + i.reg_fields("vreg", True)) <= 1, f"{i.mnemonic}: one result register at most")
    need(i.wb is None or i.wb in WB_SOURCES, f"{i.mnemonic}: datapath {i.datapath} has no VRF write-back source (WB_SOURCES)")
    need(not (i.in_sxu and (i.reg_fields("vreg", True) or i.mems)), f"{i.mnemonic}: the SXU datapath {i.datapath} neither writes vector registers nor memory")
    fixed = DATAPATHS[i.datapath][1]
    need(fixed is None or not i.wb or i.latency == fixed,
         f"{i.mnemonic}: latency {i.latency} in the table, but the {i.datapath} datapath realises {fixed} "
         f"({DATAPATHS[i.datapath][2]}): change the RTL first, then DATAPATHS")


check_table(INSTRS)


# ---------------------------------------------------------------------------------------------
# encode / decode of single fields (shared by the assembler and the golden decoder)
def get_field(word: int, name: str) -> int:
  lsb, w = FIELDS[name]
  return (word >> lsb) & ((1 << w) - 1)


def sext(v: int, bits: int) -> int:
  v &= (1 << bits) - 1
  return v - (1 << bits) if v >> (bits - 1) else v


def operand_range(o: Operand, N: int) -> tuple[int, int]:
  """Legal (lo, hi) of an operand's numeric value, inclusive, as its field holds it (a target's
  lower bound `lo`, a loop's end >= 2, is checked on top: decode() and encode())."""
  w = FIELDS[o.field][1]
  if o.kind in ("simm", "target", "mem"):
    return -(1 << (w - 1)), (1 << (w - 1)) - 1
  if o.kind in ("sreg", "vreg"):
    return 0, 15
  hi = o.hi
  if hi is None:
    hi = (1 << w) - 1
  elif hi == "N-1":
    hi = N - 1
  return o.lo, int(hi)


def lookup(word: int) -> Optional[Instr]:
  """The table entry of a word, or None if its op/fn is not defined. Does not check reserved bits."""
  op = get_field(word, "op")
  if op in OPS_WITH_FN:
    return BY_CODE.get((op, get_field(word, "fn")))
  return BY_CODE.get((op, None))


class IllegalInstruction(ValueError):
  pass


def decode(word: int, N: int) -> tuple[Instr, dict[str, int]]:
  """Decode a 64-bit word into its table entry and operand values (registers as indices, immediates
  sign-extended or unsigned as the operand kind says; mem operands give `<name>` = offset and
  `<name>_base` = register). Raises IllegalInstruction with the reason."""
  if not 0 <= word < 1 << WORD_BITS:
    raise IllegalInstruction(f"word {word:#x} is not a 64-bit value")
  ins = lookup(word)
  if ins is None:
    raise IllegalInstruction(f"undefined opcode op={get_field(word, 'op'):#04x} fn={get_field(word, 'fn'):#04x}")
  if word & ~ins.used_mask & ((1 << WORD_BITS) - 1):
    raise IllegalInstruction(f"{ins.mnemonic}: reserved bits set ({word & ~ins.used_mask:#018x})")
  vals: dict[str, int] = {}
  for o in ins.operands:
    raw = get_field(word, o.field)
    w = FIELDS[o.field][1]
    if o.kind in ("simm", "target", "mem"):
      v = sext(raw, w)
    else:
      v = raw
    if (why := _range_error(ins, o, v, N)):
      raise IllegalInstruction(why)
    vals[o.name] = v
    if o.kind == "mem":
      vals[o.name + "_base"] = get_field(word, o.base)
  return ins, vals


def _range_error(ins: Instr, o: Operand, v: int, N: int) -> Optional[str]:
  lo, hi = operand_range(o, N)
  if o.kind == "target" and o.lo and lo <= v < o.lo:  # a loop's end: the body needs one instruction
    return f"{ins.mnemonic}: {o.name}={v} must be >= {o.lo}"
  return None if lo <= v <= hi else f"{ins.mnemonic}: operand {o.name}={v} outside [{lo}, {hi}]"


def encode(ins: Instr, vals: dict[str, int], N: int) -> int:
  """Encode operand values (as decode() returns them) into a word; raises ValueError on a range error."""
  word = ins.fixed_bits
  for o in ins.operands:
    v = vals[o.name]
    if (why := _range_error(ins, o, v, N)):
      raise ValueError(why)
    lsb, w = FIELDS[o.field]
    word |= (v & ((1 << w) - 1)) << lsb
    if o.kind == "mem":
      b = vals[o.name + "_base"]
      if not 0 <= b <= 15:
        raise ValueError(f"{ins.mnemonic}: base register s{b} out of range")
      word |= b << FIELDS[o.base][0]
  return word


def operand_max(mnemonic: str, name: str) -> int:
  """The largest value the ISA table allows for an immediate operand (DMA.IN's T, EMB.BAG's B, ...)."""
  op = next(o for o in BY_MNEMONIC[mnemonic].operands if o.name == name)
  return op.hi if op.hi is not None else (1 << FIELDS[op.field][1]) - 1


def offset_max(mnemonic: str) -> int:
  """The largest memory-operand offset of an instruction (a signed immediate of its field)."""
  op = next(o for o in BY_MNEMONIC[mnemonic].operands if o.kind == "mem")
  return (1 << (FIELDS[op.field][1] - 1)) - 1
