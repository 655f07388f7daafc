"""RTL style rules the linter does not check.

One exit per function: the pinned Verilator counts a line/branch coverage point at the end of its
block, so a case item or if branch left by `return` never counts (the nightly's code coverage then
reports lines the tests run as missed). Every function of rtl/ (and rtl/sim/) has at most one
`return`, as its last statement; the branches assign a result variable instead."""
import pathlib
import re

from tinytpu import tools


def _blank(m: re.Match) -> str:
  """A comment or string literal as spaces, its newlines kept (so offsets keep their line)."""
  return re.sub(r"[^\n]", " ", m.group(0))


def code_only(text: str) -> str:
  return re.sub(r'//[^\n]*|/\*.*?\*/|"(?:\\.|[^"\\\n])*"', _blank, text, flags=re.S)


def functions(text: str):
  """(name, offset of `function`, body) of every function ... endfunction (DPI imports have no body)."""
  code = code_only(text)
  for m in re.finditer(r"\bfunction\b", code):
    if re.search(r"\bimport\s*$", code[code.rfind(";", 0, m.start()) + 1:m.start()]):
      continue
    end = re.compile(r"\bendfunction\b").search(code, m.end())
    assert end is not None, f"function at offset {m.start()} without endfunction"
    header_end = code.index(";", m.end())
    header = code[m.end():header_end]
    name = re.findall(r"([A-Za-z_]\w*)\s*(?:\(|$)", header.split("(")[0] + "(")[-1]
    yield name, m.start(), code[header_end + 1:end.start()]


def exit_problems(path: pathlib.Path) -> list[str]:
  text = path.read_text()
  out = []
  for name, at, body in functions(text):
    line = text.count("\n", 0, at) + 1
    rets = list(re.finditer(r"\breturn\b", body))
    where = f"{path.relative_to(tools.ROOT) if path.is_relative_to(tools.ROOT) else path}:{line}: function {name}"
    if len(rets) > 1:
      out.append(f"{where}: {len(rets)} returns (one exit per function: assign a result, return it last)")
    elif rets and body[body.index(";", rets[0].end()) + 1:].strip():
      out.append(f"{where}: its return is not its last statement")
  return out


def rtl_files() -> list[pathlib.Path]:
  return sorted(tools.RTL.rglob("*.sv"))


def test_every_function_has_one_exit_at_its_end():
  files = rtl_files()
  assert len(files) > 10 and any(p.name == "fp32_pkg.sv" for p in files)
  problems = [p for f in files for p in exit_problems(f)]
  assert not problems, "\n".join(problems)


def test_the_exit_check_sees_early_returns(tmp_path):
  bad = tmp_path / "bad.sv"
  bad.write_text("""package p;
  // return in a comment does not count; nor does "return" in a string
  import "DPI-C" function int imported();
  function automatic logic [7:0] one(logic [1:0] s);
    logic [7:0] res;
    res = '0;
    unique case (s)
      2'd0:    res = 8'd1;
      default: res = 8'd2;
    endcase
    return res;
  endfunction
  function automatic logic two(logic x);
    if (x) return 1'b1;
    return 1'b0;
  endfunction
  function automatic logic [3:0] early(logic x);
    begin
      return {3'd0, x};
    end
  endfunction
endpackage
""")
  assert [p.split(": ", 1)[1] for p in exit_problems(bad)] == [
    "function two: 2 returns (one exit per function: assign a result, return it last)",
    "function early: its return is not its last statement"]
  assert exit_problems(bad)[0].startswith(f"{bad}:13: ")


def support_regions_without_coverage_off(text: str) -> list[int]:
  """Lines opening an `// assertion support: begin` region (logic only assertions read, which the
  mutation runner skips) whose next line is not `/*verilator coverage_off*/`, or closing one not
  preceded by `/*verilator coverage_on*/`: such logic would count in the design's code coverage."""
  lines, bad = text.splitlines(), []
  for i, t in enumerate(lines):
    if "// assertion support: begin" in t and (i + 1 >= len(lines) or "/*verilator coverage_off*/" not in lines[i + 1]):
      bad.append(i + 1)
    if "// assertion support: end" in t and (i == 0 or "/*verilator coverage_on*/" not in lines[i - 1]):
      bad.append(i + 1)
  return bad


def test_assertion_support_has_no_code_coverage():
  """vmem's one-hot of the DMA port's last write (TILES bits, never toggled in a bench without DMA)
  brought its toggle coverage under the floor in the nightly at 07f3f78."""
  bad = {p.name: b for p in sorted(tools.RTL.glob("*.sv")) if (b := support_regions_without_coverage_off(p.read_text()))}
  assert not bad, f"assertion support regions without coverage_off/coverage_on (file: lines): {bad}"
  assert support_regions_without_coverage_off("  // assertion support: begin\n  logic x;\n  // assertion support: end\n") == [1, 3]


def test_cosim_clock_advances_simulation_time():
  """The assertions leave out time 0 (rtl/assert.svh); the co-sims' clock (rtl/sim/sim_clock.h)
  left the context's time at 0, so no assertion of sim_top or sim_chip could fire until the mutation
  runner's chip mutants (an endpoint's error flag set from reset) survived. Each half cycle must
  advance it."""
  text = (tools.RTL / "sim" / "sim_clock.h").read_text()
  half = text[text.index("void half(int clk)"):]
  half = half[:half.index("\n  }") + 4]
  assert "ctx->timeInc(" in half, half
