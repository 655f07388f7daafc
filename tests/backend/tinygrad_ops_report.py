"""pytest plugin for runs of tinygrad's test_ops (`-p tinygrad_ops_report --ops-report out.json`).

Writes one record per test node: outcome (passed / failed / error / skipped), the phases its
failures happened in, the first failure message, the skip reason and the time taken; while the
run goes, each finished node is appended to `out.json.progress` (one JSON line: what a run that
is killed part-way leaves). It reads
pytest's report objects rather than the terminal text, and it aggregates unittest subtests: pytest
reports a TestCase method whose `subTest`s failed as passed, with the failures as separate
subtest reports.

The phase of a failure comes from the failing traceback: inside test_ops' helper_test_op after the
torch gradients exist (`torch_grads` is bound) it is `backward`, anywhere else `forward`.

Imports nothing from TinyTPU or tinygrad: the process under test must get its device from the
installed start-up hook alone."""
import json

import pytest

PHASE = "tinytpu_phase"


def pytest_addoption(parser):
  parser.addoption("--ops-report", default=None, help="write per-test outcomes of this run as JSON to this path")


def phase_of(tb) -> str:
  while tb is not None:
    f = tb.tb_frame
    if f.f_code.co_name == "helper_test_op" and "torch_grads" in f.f_locals:
      return "backward"
    tb = tb.tb_next
  return "forward"


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item, call):
  rep = yield
  if rep.failed and call.excinfo is not None:  # a new list: pytest shares item.user_properties with the report
    rep.user_properties = [*rep.user_properties, (PHASE, phase_of(call.excinfo.tb))]
  return rep


def _message(report) -> str:
  crash = getattr(report.longrepr, "reprcrash", None)
  text = crash.message if crash is not None else str(report.longrepr)
  ctx = getattr(report, "context", None)  # a failing subTest: say which
  sub = f"[subtest {ctx.msg or ''}{ctx.kwargs}] " if ctx is not None else ""
  return sub + " ".join(text.split())[:400]


class Collector:
  def __init__(self, path: str):
    self.path, self.tests = path, {}
    open(path + ".progress", "w").close()

  def pytest_runtest_logreport(self, report):
    t = self.tests.setdefault(report.nodeid, {"outcome": "passed", "phases": [], "message": "", "skip": None, "duration": 0.0})
    t["duration"] = round(t["duration"] + report.duration, 3)
    if report.skipped:
      t["outcome"] = "skipped" if t["outcome"] == "passed" else t["outcome"]
      t["skip"] = report.longrepr[2].removeprefix("Skipped: ") if isinstance(report.longrepr, tuple) else str(report.longrepr)
    elif report.failed:
      t["outcome"] = "failed" if report.when == "call" and t["outcome"] != "error" else "error"
      phase = dict(report.user_properties).get(PHASE, "forward")
      t["phases"] = sorted({*t["phases"], phase})
      t["message"] = t["message"] or _message(report)
    if report.when == "teardown":
      with open(self.path + ".progress", "a") as f:
        f.write(json.dumps({report.nodeid: t}) + "\n")

  def pytest_sessionfinish(self, session):
    with open(self.path, "w") as f:
      json.dump(self.tests, f, indent=1, sort_keys=True)


def pytest_configure(config):
  path = config.getoption("--ops-report")
  if path and not hasattr(config, "workerinput"):  # xdist: the controller sees every worker's reports
    config.pluginmanager.register(Collector(path), "tinygrad_ops_collector")
