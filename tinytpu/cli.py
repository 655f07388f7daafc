"""`python -m tinytpu <command>`: one entry point for every tool of the project."""
from __future__ import annotations

import importlib
import os
import subprocess
import sys

# command -> ("module" or "module:function", help); the function (default main) takes argv, returns the exit code
COMMANDS = {
  "gen": ("tinytpu.gen", "generate rtl/tinytpu_pkg.sv and doc/isa.md from the ISA table (--check: fail if stale)"),
  "doctor": ("tinytpu.cli", "print tool versions and fail if one is missing or wrong"),
  "lint": ("tinytpu.cli", "verilator --lint-only -Wall on every RTL module; in a clone also ruff and the layer check (--rtl, --python: one side)"),
  "run": ("tinytpu.run", "run a bundle on the RTL co-sim (default), --golden or --both; print the result"),
  "run-chip": ("tinytpu.run:chip_main", "run a chip bundle (two cores, doc/chip.md) on the chip co-sim (default), --golden or --both; print the result"),
  "asm": ("tinytpu.run:asm_main", "assemble a TASM file into a bundle: asm file.tasm -o bundle.txt"),
  "disasm": ("tinytpu.run:disasm_main", "disassemble a bundle or a file of hex words into TASM"),
  "bench": ("tinytpu.bench", "the benchmark suite through tinygrad on the RTL: cycles, elems/cycle, MAC utilisation (--json out.json)"),
  "noc-bench": ("tinytpu.noc_bench", "the on-chip network on the RTL: latency/throughput curve and saturation link utilisation (doc/noc.md; --json out.json)"),
  "profile": ("tinytpu.profile", "run a bundle on the RTL with per-cycle events: instruction mix, unit busy, stalls (--trace-events out.json, --html out.html)"),
  "demo": ("tinytpu.demo", "train an int8 MLP on scikit-learn's digits and run its inference on TINYTPU"),
  "mutate": ("tinytpu.mutate", "mutation testing of the RTL: mutants built from a copy of rtl/, each run in its unit's environment (--per-file K --files a.sv,b.sv --list)"),
  "triage": ("tinytpu.triage", "run an ONNX model or a script on TINYTPU: per kernel its lowering, cycles, utilisation; failures with where the fix belongs"),
  "fuzz": ("tinytpu.fuzz", "random tinygrad programs on TINYTPU against tinygrad's PYTHON device (--seeds N --seed S --index I --sim golden)"),
}

EXPECTED = {"cocotb": "2.1", "pyuvm": "5.0", "tinygrad": "0.14.0"}


def doctor(argv: list[str]) -> int:
  import importlib.metadata as md
  ok = True
  print(f"python     {sys.version.split()[0]}")
  if sys.version_info < (3, 11):
    print("  ERROR: Python >= 3.11 is required"); ok = False
  for pkg in ("verilator", "cocotb", "pyuvm", "tinygrad", "numpy", "pytest"):
    try:
      v = md.version(pkg)
    except md.PackageNotFoundError:
      print(f"{pkg:10s} MISSING (run `make venv`)"); ok = False; continue
    want = EXPECTED.get(pkg)
    bad = want is not None and not v.startswith(want)
    print(f"{pkg:10s} {v}" + (f"   ERROR: expected {want}" if bad else ""))
    ok &= not bad
  from tinytpu import tools
  try:
    out = subprocess.run([tools.verilator_bin(), "--version"], capture_output=True, text=True, env=tools.verilator_env())
    print(f"verilator  {out.stdout.strip() or out.stderr.strip()} ({tools.verilator_root()})")
    ok &= out.returncode == 0
  except (OSError, ImportError) as e:
    print(f"verilator  ERROR: cannot run ({e})"); ok = False
  gxx = tools.gxx_version()
  print(f"g++        {gxx or 'MISSING: install g++'}")
  ok &= gxx is not None
  for tool in ("make", "perl"):
    import shutil
    if not shutil.which(tool):
      print(f"{tool:10s} MISSING"); ok = False
  missing = [p.name for p in tools.rtl_sources() + [tools.RTL / "sim" / "tinytpu_sim.cpp"] if not p.is_file()]
  print(f"sources    {tools.RTL} ({'the clone' if tools.CLONE else 'package data'})" + (f"   ERROR: missing {', '.join(missing)}" if missing else ""))
  ok &= not missing
  builds = sorted(p.name for p in tools.BUILD.glob("*") if p.is_dir()) if tools.BUILD.exists() else []
  how = "the clone's build/" if tools.CLONE and tools.BUILD == tools.CLONE / "build" else \
    "TINYTPU_BUILD_DIR" if os.environ.get("TINYTPU_BUILD_DIR") else "per-user cache"
  print(f"builds     {', '.join(builds) or 'none cached'} (under {tools.BUILD}, {how})")
  print("doctor: ok" if ok else "doctor: FAILED")
  return 0 if ok else 1


PY_FOLDERS = ["tinytpu", "golden", "backend", "tb", "regress", "tests", "startup", "setup.py"]  # what ruff reads (a clone's)


def lint(argv: list[str]) -> int:
  """RTL and Python lint: `--rtl` or `--python` for one side, both by default (the Python side only in a clone)."""
  want = set(a.lstrip("-") for a in argv) or {"rtl", "python"}
  if bad := want - {"rtl", "python"}:
    print(f"lint: unknown option(s) {', '.join(sorted(bad))} (expected --rtl, --python)"); return 2
  rc = lint_rtl() if "rtl" in want else 0
  return (lint_python() if "python" in want else 0) or rc


def lint_python() -> int:
  """ruff in tinygrad's style ([tool.ruff] in pyproject.toml) and the import layering (tinytpu/layers.py)."""
  from tinytpu import layers, tools
  if tools.CLONE is None:
    print("lint python: not a clone, skipped (ruff reads the repository's sources)")
    return 0
  r = subprocess.run([sys.executable, "-m", "ruff", "check", "--no-cache", "--output-format", "concise", *PY_FOLDERS], cwd=tools.CLONE, capture_output=True, text=True)
  if "No module named ruff" in r.stderr:
    print("lint ruff: MISSING (pip install -e '.[test]')"); return 1
  print(r.stdout.rstrip() if r.returncode else "lint ruff: clean", *([r.stderr.rstrip()] if r.returncode and r.stderr.strip() else []), sep="\n")
  problems = layers.check(tools.CLONE)
  print(*problems, f"lint layers: {len(problems)} problem(s)" if problems else "lint layers: no higher-layer import, no cycle", sep="\n")
  return 1 if r.returncode or problems else 0


def wide_lint_n() -> list[int]:
  """The array widths above every module's default (N = 4) up to the configuration's limit: 8, 16."""
  from tinytpu.config import DEFAULT, N_MAX
  return [n for n in (1 << k for k in range(N_MAX.bit_length())) if DEFAULT.N < n <= N_MAX]


def lint_rtl() -> int:
  """Lint every module (rtl/ and the simulation top in rtl/sim/) as its own top, with the project's
  reviewed waivers."""
  from tinytpu import tools
  srcs = tools.rtl_sources() + sorted((tools.RTL / "sim").glob("*.sv")) + sorted((tools.RTL / "sim" / "chip").glob("*.sv"))
  waivers = [str(tools.RTL / "lint.vlt")] if (tools.RTL / "lint.vlt").exists() else []
  failed = 0
  for src in srcs[1:]:
    cmd = [tools.verilator_bin(), "--lint-only", "-Wall", "--assert", f"-I{tools.RTL}", *waivers, *map(str, srcs), "--top-module", src.stem]
    r = subprocess.run(cmd, capture_output=True, text=True, env=tools.verilator_env())
    status = "ok" if r.returncode == 0 else "FAIL"
    print(f"lint {src.stem:24s} {status}")
    if r.returncode:
      failed += 1
      print(r.stderr)
  # the chip holds every core module: linted again at the widest lanes the builds use, where
  # N*N-lane buses pass Verilator's 8192-bit replication limit (a '0 over them is an error there)
  wide = wide_lint_n()
  for n in wide:
    cmd = [tools.verilator_bin(), "--lint-only", "-Wall", "--assert", f"-I{tools.RTL}", *waivers, *map(str, srcs), "--top-module", "chip", f"-GN={n}"]
    r = subprocess.run(cmd, capture_output=True, text=True, env=tools.verilator_env())
    print(f"lint {f'chip N={n}':24s} {'ok' if r.returncode == 0 else 'FAIL'}")
    if r.returncode:
      failed += 1
      print(r.stderr)
  print(f"lint: {len(srcs) - 1 + len(wide) - failed}/{len(srcs) - 1 + len(wide)} modules and widths clean")
  return 1 if failed else 0


def main(argv: list[str] | None = None) -> int:
  argv = sys.argv[1:] if argv is None else argv
  if not argv or argv[0] in ("-h", "--help") or argv[0] not in COMMANDS:
    print("usage: python -m tinytpu <command> [args]\n\ncommands:")
    for name, (_, h) in COMMANDS.items():
      print(f"  {name:8s} {h}")
    return 0 if argv and argv[0] in ("-h", "--help") else 2
  cmd, rest = argv[0], argv[1:]
  if cmd == "doctor":
    return doctor(rest)
  if cmd == "lint":
    return lint(rest)
  mod, _, fn = COMMANDS[cmd][0].partition(":")
  return getattr(importlib.import_module(mod), fn or "main")(rest)
