"""Functional coverage with named bins: crosses (e.g. opcode x operand class), back-to-back pairs,
and custom bin sets. Writes build/coverage/<unit>_<config>.json with per-bin hits."""
from __future__ import annotations

import itertools
import json
import os
import pathlib

from pyuvm import uvm_component

from tinytpu import tools
from .agent import Export


class Covergroup:
  """A named set of bins; `hit(bin)` counts a bin (unknown bins are counted as 'illegal')."""
  def __init__(self, name: str, bins, goal: int = 1):
    self.name, self.goal = name, goal
    self.hits = {self.key(b): 0 for b in bins}
    self.illegal: dict[str, int] = {}

  @staticmethod
  def key(b) -> str: return "x".join(map(str, b)) if isinstance(b, tuple) else str(b)

  def hit(self, b, n: int = 1):
    k = self.key(b)
    if k in self.hits: self.hits[k] += n
    else: self.illegal[k] = self.illegal.get(k, 0) + n

  def covered(self) -> int: return sum(v >= self.goal for v in self.hits.values())
  def pct(self) -> float: return 100.0 * self.covered() / max(1, len(self.hits))
  def missing(self) -> list[str]: return [k for k, v in self.hits.items() if v < self.goal]


class Coverage:
  """All covergroups of one unit."""
  def __init__(self, unit: str, config: str | None = None):
    self.unit, self.config = unit, config or os.environ.get("TINYTPU_CONFIG", "default")
    self.groups: dict[str, Covergroup] = {}
    self._prev: dict[str, object] = {}

  def bins(self, name: str, bins, goal: int = 1) -> Covergroup:
    self.groups[name] = Covergroup(name, list(bins), goal); return self.groups[name]

  def cross(self, name: str, *axes, goal: int = 1) -> Covergroup:
    return self.bins(name, itertools.product(*axes), goal)

  def pairs(self, name: str, values, goal: int = 1) -> Covergroup:
    """Back-to-back pairs (a then b) of the values seen by `pair(name, v)`."""
    return self.bins(name, itertools.product(values, values), goal)

  def hit(self, name: str, b, n: int = 1): self.groups[name].hit(b, n)

  def pair(self, name: str, v, back_to_back: bool = True):
    """Record v after the previous value of this group (a pair only if back_to_back)."""
    if back_to_back and name in self._prev: self.groups[name].hit((self._prev[name], v))
    self._prev[name] = v

  def break_pair(self, name: str): self._prev.pop(name, None)

  def total(self) -> tuple[int, int]:
    return sum(g.covered() for g in self.groups.values()), sum(len(g.hits) for g in self.groups.values())

  def pct(self) -> float:
    c, t = self.total(); return 100.0 * c / max(1, t)

  def report(self) -> str:
    lines = [f"coverage {self.unit} {self.config}: {self.pct():.1f}% ({'/'.join(map(str, self.total()))} bins)"]
    for g in self.groups.values():
      miss = g.missing()
      lines.append(f"  {g.name:24s} {g.pct():5.1f}% ({g.covered()}/{len(g.hits)})" + (f" missing: {', '.join(miss[:8])}{' ...' if len(miss) > 8 else ''}" if miss else ""))
    return "\n".join(lines)

  def to_json(self) -> dict:
    return {"unit": self.unit, "config": self.config, "pct": self.pct(), "covered": self.total()[0], "bins": self.total()[1],
            "groups": {n: {"pct": g.pct(), "goal": g.goal, "hits": g.hits, "illegal": g.illegal} for n, g in self.groups.items()}}

  def write(self, test: str | None = None) -> str:
    # TINYTPU_COVERAGE_DIR gives each regression job its own folder (doc/regress.md)
    d = pathlib.Path(os.environ.get("TINYTPU_COVERAGE_DIR") or tools.BUILD / "coverage"); d.mkdir(parents=True, exist_ok=True)
    p = d / f"{self.unit}_{self.config}{'_' + test if test else ''}.json"
    p.write_text(json.dumps(self.to_json(), indent=1)); return str(p)


class CoverageCollector(uvm_component):
  """Subscribe with `connect(monitor.ap, self.sample_x)`; define bins in `define(cov)`; the report
  phase logs the % hit per group and writes the JSON."""
  unit = "unit"

  def __init__(self, name, parent):
    super().__init__(name, parent)
    self.cov = Coverage(self.unit)
    self.define(self.cov)
    self.exports: list[Export] = []

  def define(self, cov: Coverage): pass

  def export(self, fn) -> Export:
    e = Export(f"export{len(self.exports)}", self, fn); self.exports.append(e); return e

  def report_phase(self):
    test = getattr(self.parent.parent, "get_type_name", lambda: None)() if self.parent else None
    path = self.cov.write(test)
    self.logger.info(self.cov.report() + f"\n  written to {path}")
