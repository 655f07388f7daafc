"""make lint is clean: `verilator --lint-only -Wall` on every RTL module (waivers only in rtl/lint.vlt),
and ruff in tinygrad's style ([tool.ruff] in pyproject.toml) with the import layering on the Python side."""
import subprocess
import sys

from tinytpu import tools


def test_rtl_is_lint_clean():
  r = subprocess.run([sys.executable, "-m", "tinytpu", "lint", "--rtl"], capture_output=True, text=True, cwd=tools.ROOT)
  assert r.returncode == 0, r.stdout[-6000:] + r.stderr[-2000:]


def test_python_is_ruff_clean():
  """Every finding fails, whoever's file it is: fix it, or (rarely) a `# noqa: <code>` with the reason."""
  r = subprocess.run([sys.executable, "-m", "tinytpu", "lint", "--python"], capture_output=True, text=True, cwd=tools.ROOT)
  assert r.returncode == 0 and "lint ruff: clean" in r.stdout, r.stdout[-6000:] + r.stderr[-2000:]


def test_ruff_config_is_tinygrads_style():
  import tomllib
  cfg = tomllib.loads((tools.ROOT / "pyproject.toml").read_text())["tool"]["ruff"]
  assert cfg["indent-width"] == 2 and cfg["line-length"] >= 150 and "F" in cfg["lint"]["select"]
  assert not {"E", "E5", "E50", "E501"} & set(cfg["lint"]["select"]), "long lines are allowed"


def test_every_waiver_has_a_reason():
  lines = (tools.RTL / "lint.vlt").read_text().splitlines()
  for i, line in enumerate(lines):
    if line.strip().startswith("lint_off"):
      assert i > 0 and lines[i - 1].strip().startswith("//"), f"rtl/lint.vlt:{i + 1}: waiver without a reason comment"
  for src in tools.rtl_sources():
    assert "lint_off" not in src.read_text(), f"{src.name}: inline lint waiver (put it in rtl/lint.vlt with a reason)"
