"""The decode part of `rtl/tinytpu_pkg.sv`, generated from the ISA table (tinytpu/isa.py): the
word's fields as a struct, the datapath and write-back source enums, the latencies the datapaths
fix, and `decode(w, n)`, the decoded properties of a word that both SXU issue slots use:
legality (undefined op/fn, reserved bits, operand ranges for the configuration), datapath, issue
class, the registers read and written (from the operand roles), the write-back source and
latency, the memory operands' address paths and the class counters it counts in.

Instructions with the same properties share one case item, so the function stays small."""
from __future__ import annotations

from tinytpu import isa

# the SXU's address paths: a memory operand (space, base field, offset field, span operand) -> the
# dec_t flag prefix (<p>_rd, <p>_wr: the memory is read, written). rtl/sxu.sv computes and checks
# each path's address; a memory operand of another shape needs a path there first.
ADDR_PATHS: dict[tuple, tuple[str, str]] = {
  ("vmem", "ra", "imm", None): ("vt", "a VMEM tile [sa + imm]"),
  ("psum", "ra", "imm", None): ("pt", "a PSUM tile [sa + imm]"),
  ("elem", "rb", "imm", None): ("ve", "VMEM elements sb + imm + va[l]"),
  ("psum", "ra", "immhi", "T"): ("mp", "PSUM tiles [sa + immhi] .. + T-1 (T in fn)"),
  ("vmem", "rb", "immlo", "T"): ("mv", "VMEM tiles [sb + immlo] .. + T-1 (T in fn; DMA.OUT: each row's)"),
  # the DMA's copies: T tiles (in fn) per row, rows and row strides from the SXU's DMA.CFG registers
  ("vmem", "ra", "immhi", "T"): ("dv", "VMEM tiles [sa + immhi] .. + T-1 of each DMA row (T in fn)"),
  ("hbm", "ra", "immhi", "T"): ("ha", "HBM tiles [sa + immhi] .. + T-1 of each DMA row (T in fn)"),
  ("hbm", "rb", "immlo", "T"): ("hb", "HBM tiles [sb + immlo] .. + T-1 of each DMA row (T in fn)"),
  # the SparseCore's EMB.BAG (doc/sparsecore.md): destination and index list, sized by fn and EMB.CFG
  ("hbm", "ra", "immhi", None): ("ed", "the HBM destination tiles [sa + immhi] of an EMB.BAG"),
  ("hbm", "rb", "immlo", None): ("ei", "the HBM index-list tiles [sb + immlo] of an EMB.BAG"),
}
REG_FLAGS = [("rva", "vreg", "ra"), ("rvb", "vreg", "rb"), ("rvc", "vreg", "rc"), ("rvd", "vreg", "rd"),
             ("rsa", "sreg", "ra"), ("rsb", "sreg", "rb")]
WORD_FIELDS = [f for f, (lsb, w) in sorted(isa.FIELDS.items(), key=lambda x: -x[1][0])
               if not any(g != f and lo <= lsb and lsb + w <= lo + gw and gw > w for g, (lo, gw) in isa.FIELDS.items())]
SUB_FIELDS = [f for f in isa.FIELDS if f not in WORD_FIELDS]


class GenError(ValueError):
  pass


def _width(n: int) -> int:
  return max(1, (n - 1).bit_length())


def fn_label(i: isa.Instr) -> str:
  """The case label of an instruction's fn: its enum constant where the package has one."""
  prefix = {isa.OP["SALU"]: "SALU_", isa.OP["BRANCH"]: "BR_", isa.OP["VPU"]: "VPU_", isa.OP["XLU"]: "XLU_"}.get(i.op)
  return prefix + i.mnemonic[1:] if prefix else f"8'd{i.fn}"


def _slice(f: str) -> str:
  return f"w.{f}" if f in WORD_FIELDS else f"w.{_top(f)}[{f.upper()}_LSB - {_top(f).upper()}_LSB +: {f.upper()}_W]"


def _top(f: str) -> str:
  """The word_t field a sub-field (immhi, immlo) lies in."""
  lsb, w = isa.FIELDS[f]
  return next(g for g in WORD_FIELDS if isa.FIELDS[g][0] <= lsb and lsb + w <= sum(isa.FIELDS[g]))


def range_checks(i: isa.Instr) -> list[str]:
  """SV conditions (on `w`, the word_t, and `n`, the configuration's N) that make the word illegal
  because an operand is outside its range (isa.operand_range, a target's lower bound)."""
  out = []
  for o in i.operands:
    x, fmax = _slice(o.field), (1 << isa.FIELDS[o.field][1]) - 1
    if o.kind == "uimm":
      if o.lo > 0:
        out.append(f"32'({x}) < 32'd{o.lo}")
      if o.hi == "N-1":
        out.append(f"32'({x}) >= n")
      elif o.hi is not None and int(o.hi) < fmax:
        out.append(f"32'({x}) > 32'd{int(o.hi)}")
      elif o.hi is not None and not isinstance(o.hi, int):
        raise GenError(f"{i.mnemonic}: operand {o.name}: no SV form for the bound {o.hi!r}")
    elif o.kind == "target" and o.lo:
      out.append(f"$signed({x}) < {o.lo}")
  return out


def properties(i: isa.Instr) -> dict[str, str]:
  """dec_t field -> SV value of one instruction (fields at their reset value left out)."""
  p: dict[str, str] = {"dp": f"DP_{i.datapath.upper()}"}
  if not i.in_sxu:
    p["vec"] = "1'b1"
  if i.issue:
    p["issue"] = f"ISSUE_{i.issue.upper()}"
  for flag, kind, f in REG_FLAGS:
    if f in i.reg_fields(kind, False):
      p[flag] = "1'b1"
  if i.reg_fields("vreg", True):
    p["wvd"] = "1'b1"
  if i.reg_fields("sreg", True):
    p["wsd"] = "1'b1"
  if i.wb:
    p["wb"] = f"WB_{i.wb.upper()}"
  if i.latency != 1:
    p["lat"] = f"4'd{i.latency}"
  for o in i.mems:
    key = (o.space, o.base, o.field, o.span)
    if key not in ADDR_PATHS:
      raise GenError(f"{i.mnemonic}: memory operand {o.name} ({o.space} at {o.base} + {o.field}, span {o.span}) has no "
                     f"address path in rtl/sxu.sv (tinytpu/gen_decode.py ADDR_PATHS)")
    if o.span is not None and next(x for x in i.operands if x.name == o.span).field != "fn":
      raise GenError(f"{i.mnemonic}: the SXU takes a tile count from fn only")
    p[f"{ADDR_PATHS[key][0]}_{'wr' if o.write else 'rd'}"] = "1'b1"
  if i.perf:
    p[f"cnt_{i.perf.removesuffix('_ops')}"] = "1'b1"
  if bad := range_checks(i):
    p["bad"] = " || ".join(bad)
  return p


def struct_fields() -> list[tuple[str, str, str]]:
  """(SV type, name, comment) of dec_t, in order."""
  F = [("logic", "illegal", "undefined op/fn, a reserved bit set or an operand out of range"),
       ("logic", "vec", "issued to the vector side (else the SXU executes it)"),
       ("dp_e", "dp", "datapath (isa.DATAPATHS)"), ("issue_e", "issue", "dual-issue class")]
  F += [("logic", flag, f"reads {'vector' if kind == 'vreg' else 'scalar'} register {f}") for flag, kind, f in REG_FLAGS]
  F += [("logic", "wvd", "writes vector register rd"), ("logic", "wsd", "writes scalar register rd"),
        ("wb_e", "wb", "write-back source of the vector result"), ("logic [3:0]", "lat", "cycles from issue to write-back")]
  for prefix, what in ADDR_PATHS.values():
    F += [("logic", f"{prefix}_rd", f"reads {what}"), ("logic", f"{prefix}_wr", f"writes {what}")]
  F += [("logic", f"cnt_{c.removesuffix('_ops')}", f"counted in {c}") for c in isa.PERF_CLASSES]
  return F


def _enum(name: str, items: list[tuple[str, int, str]]) -> list[str]:
  w = _width(len(items))
  L = [f"  typedef enum logic [{w - 1}:0] {{"]
  for k, (n, v, doc) in enumerate(items):
    L.append(f"    {n} = {w}'d{v}{',' if k < len(items) - 1 else ''}  // {doc}")
  L.append(f"  }} {name};")
  return L


def _assigns(props: dict[str, str], indent: str) -> list[str]:
  out = []
  for k, v in props.items():
    out.append(f"{indent}d.illegal |= {v};" if k == "bad" else f"{indent}d.{k} = {v};")
  return out


def sv_decode(instrs: list[isa.Instr] | None = None) -> list[str]:
  """The package lines: enums, fixed latencies, word_t, dec_t and decode()."""
  instrs = isa.INSTRS if instrs is None else instrs
  isa.check_table(instrs)  # a table the decode or the datapaths cannot follow generates nothing
  L = ["  // Datapaths (isa.DATAPATHS): what executes an instruction."]
  L += _enum("dp_e", [(f"DP_{d.upper()}", k, doc) for k, (d, (_s, _l, doc)) in enumerate(isa.DATAPATHS.items())])
  L += ["", "  // VRF write-back sources (isa.WB_SOURCES): VLD on write port 1, the others on port 0."]
  L += _enum("wb_e", [(f"WB_{d.upper()}", k, isa.DATAPATHS[d][2]) for k, d in enumerate(isa.WB_SOURCES)])
  L += ["", "  // Latencies the datapaths realise by their structure (isa.DATAPATHS), not parameters: the table",
        "  // must say the same (isa.check_table refuses anything else; change the RTL first)."]
  for d, (_s, lat, doc) in isa.DATAPATHS.items():
    if lat is not None:
      L.append(f"  localparam int unsigned LAT_{d.upper()} = {lat};  // {doc}")
  L += ["", "  // The fields of an instruction word (isa.FIELDS); a word is a word_t."]
  L.append("  typedef struct packed {")
  pos = isa.WORD_BITS
  for f in WORD_FIELDS:
    lsb, w = isa.FIELDS[f]
    if lsb + w != pos:
      raise GenError(f"the fields do not tile the word at bit {pos}")
    pos = lsb
    L.append(f"    logic [{w - 1}:0] {f};")
  if pos != 0:
    raise GenError("the fields do not tile the word down to bit 0")
  L.append("  } word_t;")
  for f in SUB_FIELDS:
    L.append(f"  // {f}: w.{_top(f)}[{f.upper()}_LSB - {_top(f).upper()}_LSB +: {f.upper()}_W]")
  L += ["", "  // The decoded properties of a word (both SXU issue slots)."]
  L.append("  typedef struct packed {")
  for t, n, doc in struct_fields():
    L.append(f"    {t + ' ' + n + ';':24s} // {doc}")
  L.append("  } dec_t;")
  L += ["", "  // Decode a word for a core with n x n tiles (operand ranges such as lane indices depend on n)."]
  L.append("  function automatic dec_t decode(input word_t w, input int unsigned n);")
  L.append("    dec_t d;")
  L.append("    logic [WORD_BITS-1:0] m;")
  L.append("    d = '0;")
  L.append("    d.lat = 4'd1;")
  L.append("    m = used_mask(w.op, w.fn);")
  L.append("    d.illegal = (m == '0) || ((w & ~m) != '0);")
  L.append("    unique case (w.op)")
  by_op: dict[int, list[isa.Instr]] = {}
  for i in instrs:
    by_op.setdefault(i.op, []).append(i)
  names = {v: k for k, v in isa.OP.items()}
  for op, items in sorted(by_op.items()):
    props = [properties(i) for i in items]
    common = {k: v for k, v in props[0].items() if all(p.get(k) == v for p in props)}
    label = f"OP_{names[op]}" if op in names else f"8'h{op:02x}"
    L.append(f"      {label}: begin  // {', '.join(i.mnemonic for i in items) if len(items) <= 4 else names.get(op, hex(op)) + ' functions'}")
    L += _assigns(common, "        ")
    if items[0].fn is not None:
      groups: dict[tuple, list[isa.Instr]] = {}
      for i, p in zip(items, props):
        rest = tuple((k, v) for k, v in p.items() if k not in common)
        groups.setdefault(rest, []).append(i)
      if any(groups):
        L.append("        unique case (w.fn)")
        for rest, gi in groups.items():
          if rest:
            L.append(f"          {', '.join(fn_label(i) for i in gi)}: begin")
            L += _assigns(dict(rest), "            ")
            L.append("          end")
        L.append("          default: ;")
        L.append("        endcase")
    L.append("      end")
  L.append("      default: ;")
  L.append("    endcase")
  L.append("    return d;")
  L.append("  endfunction")
  return L
