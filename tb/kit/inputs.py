"""Every input of the toplevel is driven by the bench.

An input no bench code ever writes holds whatever the simulator starts it with: 0 in the default
build, a random value under the X-randomised nightly runs (+verilator+rand+reset+2). A unit env
that forgets one then passes or fails by the seed (psum's `mxu_fp_i` turned the mem env's int32
accumulates into fp32 adds for half of the seeds). So the runner lists the toplevel's inputs from
its source (`top_inputs`), the kit records every value the bench writes into a top-level signal
(`WriteRecorder`, installed by `BaseTest`), and a test fails when one of them was never written.
Inputs with a default value in the port list (`input logic x_i = 1'b0`) are optional, and the
clock is started by cocotb's `Clock`, which does not write through a handle."""
from __future__ import annotations

import json
import os
import pathlib
import re

ENV = "TINYTPU_TOP_INPUTS"
# `input [wire|var] [type] [signed] [packed dims] name [= default]`; the type may be an enum (vpu_fn_e)
_PORT = re.compile(r"^\s*input\s+(?:wire\s+|var\s+)?(?:[\w:]+\s+)?(?:signed\s+)?(?:\[[^\]]*\]\s*)*(\w+)\s*(=)?")


def top_inputs(top: str, sources) -> list[str]:
  """The inputs of module `top` without a default value (one port per line, as rtl/ writes them).
  Raises ValueError when no source declares the module: a check on nothing must not pass."""
  head = re.compile(rf"^\s*module\s+{re.escape(top)}\b")
  for src in sources:
    lines = pathlib.Path(src).read_text().splitlines()
    for i, line in enumerate(lines):
      if not head.match(line): continue
      names = []
      for port in lines[i:]:
        m = _PORT.match(port.split("//")[0])
        if m and not m.group(2): names.append(m.group(1))
        if re.match(r"^\s*\);", port): return names
      raise ValueError(f"{src}: module {top}'s port list has no closing ');'")
  raise ValueError(f"no source declares module {top}")


class WriteRecorder:
  """Records the names of the top-level signals written through cocotb handles (any write:
  `.value =`, `.set`, `Immediate`, `Force`). Installed once per simulation process."""
  written: set[str] = set()
  _installed = False

  @classmethod
  def start(cls, top_name: str):
    """A test's start: each test of a simulation drives its own inputs (a later test must not pass
    on what an earlier one wrote)."""
    cls.written.clear()
    if cls._installed: return
    from cocotb import handle
    prefix = top_name + "."
    for klass in vars(handle).values():
      if isinstance(klass, type) and "_set_value" in vars(klass):
        klass._set_value = cls._wrap(klass._set_value, prefix)
    cls._installed = True

  @classmethod
  def _wrap(cls, fn, prefix):
    def recorded(self, *args, **kwargs):
      path = self._path
      if path.startswith(prefix): cls.written.add(re.split(r"[.\[]", path[len(prefix):], maxsplit=1)[0])
      return fn(self, *args, **kwargs)
    return recorded


def required() -> list[str]:
  """The inputs the runner listed for this run. A run that did not come through build_and_run has
  no list: an error, not a check that silently passes on nothing."""
  if ENV not in os.environ:
    raise AssertionError(f"{ENV} is not set: run the tests through kit.build_and_run, which lists the toplevel's inputs")
  return json.loads(os.environ[ENV])


def undriven(clock: str = "clk_i") -> list[str]:
  return [p for p in required() if p != clock and p not in WriteRecorder.written]
