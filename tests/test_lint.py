"""`verilator --lint-only -Wall` is clean on every RTL module (make lint), waivers only in rtl/lint.vlt."""
import subprocess
import sys

from tinytpu import tools


def test_rtl_is_lint_clean():
  r = subprocess.run([sys.executable, "-m", "tinytpu", "lint"], capture_output=True, text=True, cwd=tools.ROOT)
  assert r.returncode == 0, r.stdout[-6000:] + r.stderr[-2000:]


def test_every_waiver_has_a_reason():
  lines = (tools.RTL / "lint.vlt").read_text().splitlines()
  for i, line in enumerate(lines):
    if line.strip().startswith("lint_off"):
      assert i > 0 and lines[i - 1].strip().startswith("//"), f"rtl/lint.vlt:{i + 1}: waiver without a reason comment"
  for src in tools.rtl_sources():
    assert "lint_off" not in src.read_text(), f"{src.name}: inline lint waiver (put it in rtl/lint.vlt with a reason)"
