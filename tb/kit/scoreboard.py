"""Scoreboard base: requests and responses arrive from monitors; `predict(req)` (the golden model)
says what each request must produce; responses are compared in order. The first mismatch is
reported with the full transaction, and check_phase fails on any error or missing response."""
from __future__ import annotations

import collections

import numpy as np
from pyuvm import uvm_component

from .agent import Export


def _eq(a, b) -> bool:
  if isinstance(a, np.ndarray) or isinstance(b, np.ndarray): return np.array_equal(np.asarray(a), np.asarray(b))
  return a == b


def _diff(exp, got) -> str:
  if isinstance(exp, np.ndarray) or isinstance(got, np.ndarray):
    e, g = np.asarray(exp, dtype=np.uint32), np.asarray(got, dtype=np.uint32)
    if e.shape != g.shape: return f"shape {g.shape} != expected {e.shape}"
    bad = np.argwhere(e != g)
    lanes = ", ".join(f"{tuple(int(x) for x in i)}: got 0x{int(g[tuple(i)]):08x} expected 0x{int(e[tuple(i)]):08x}" for i in bad[:6])
    return f"{len(bad)} lanes differ ({lanes}{', ...' if len(bad) > 6 else ''})\n    got\n{g}\n    expected\n{e}"
  if isinstance(exp, int) and isinstance(got, int): return f"got 0x{got:x} expected 0x{exp:x}"
  return f"got {got!r} expected {exp!r}"


class Scoreboard(uvm_component):
  """Subclass and override `predict(req) -> dict | None` (expected response fields, or None when
  the request produces no response) and optionally `compare(exp, rsp)`. Connect monitors to
  `req_export` and `rsp_export`."""
  max_errors_logged = 5

  def __init__(self, name, parent):
    super().__init__(name, parent)
    self.req_export = Export("req_export", self, self.write_req)
    self.rsp_export = Export("rsp_export", self, self.write_rsp)
    self.expected = collections.deque()  # (request, expected fields)
    self.errors: list[str] = []
    self.checked = 0

  def predict(self, req) -> dict | None:
    raise NotImplementedError

  def write_req(self, req):
    exp = self.predict(req)
    if exp is not None: self.expected.append((req, exp))

  def write_rsp(self, rsp):
    if not self.expected:
      return self.error(f"unexpected response with no pending request: {rsp}")
    req, exp = self.expected.popleft()
    self.compare(req, exp, rsp)

  def compare(self, req, exp: dict, rsp):
    self.checked += 1
    for f, v in exp.items():
      got = getattr(rsp, f)
      if not _eq(v, got):
        return self.error(f"mismatch #{len(self.errors) + 1} on field '{f}' (check {self.checked}):\n  request  {req}\n  response {rsp}\n  {_diff(v, got)}")

  def error(self, msg: str):
    self.errors.append(msg)
    if len(self.errors) <= self.max_errors_logged: self.logger.error(msg)

  def pending(self) -> int:
    return len(self.expected)

  def check_phase(self):
    if self.pending():
      self.error(f"{self.pending()} expected responses never arrived; first request: {self.expected[0][0]}")
    self.logger.info(f"scoreboard: {self.checked} checked, {len(self.errors)} errors")
    assert not self.errors, f"{len(self.errors)} scoreboard errors; first:\n{self.errors[0]}"
