"""The layers of tinytpu/layers.py: statically (every import, ast) no module imports a higher layer and
no modules import each other in a cycle; dynamically, each layer imported in a fresh interpreter pulls
in nothing of a higher layer, no third-party package above it (the assembler without tinygrad), and
has no side effect: no device registered, no tinygrad patched, nothing written, environment untouched."""
import json
import os
import subprocess
import sys
import textwrap

import pytest

from tinytpu import layers, tools

ROOT = tools.CLONE
MODS = layers.modules(ROOT) if ROOT is not None else {}

# imports the modules given, then reports what they brought in and what they changed
PROBE = textwrap.dedent("""
  import importlib, json, os, sys, threading
  start = set(sys.modules)  # the interpreter's own start, the start-up hook included
  before = (dict(os.environ), list(sys.meta_path), os.getcwd(), threading.active_count(), sorted(os.listdir(".")))
  for m in sys.argv[1:]:
    importlib.import_module(m)
  h = sys.modules.get("tinygrad.codegen.opt.heuristic")
  after = (dict(os.environ), list(sys.meta_path), os.getcwd(), threading.active_count(), sorted(os.listdir(".")))
  print(json.dumps({"modules": sorted(set(sys.modules) - start), "changed": [k for k, a, b in zip(("environ", "meta_path", "cwd", "threads", "files"), before, after) if a != b],
                    "patched": h is not None and hasattr(h.hand_coded_optimizations, "tinytpu")}))
""")


def probe(mods: list[str], tmp_path) -> dict:
  env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH",) and not k.startswith("PYTEST_")}
  r = subprocess.run([sys.executable, "-c", PROBE, *mods], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
  assert r.returncode == 0, r.stderr[-3000:]
  return json.loads(r.stdout.strip().splitlines()[-1])


def in_layer(i: int) -> list[str]:
  return sorted(m for m in MODS if layers.layer_of(m) == i and m != "tinytpu.__main__")  # __main__ runs the command line


pytestmark = pytest.mark.skipif(ROOT is None, reason="needs a clone")


def test_every_module_has_a_layer():
  assert MODS and [m for m in MODS if layers.layer_of(m) is None] == []


def test_no_higher_layer_import_and_no_cycle():
  problems = layers.check(ROOT)
  assert not problems, "\n".join(problems)


@pytest.mark.parametrize("i", range(len(layers.LAYERS)), ids=layers.NAMES)
def test_layer_imports_nothing_above_it(i, tmp_path):
  mods = in_layer(i)
  got = probe(mods, tmp_path)
  above = sorted(m for m in got["modules"] if (j := layers.layer_of(m)) is not None and j > i)
  third = sorted({m.split(".")[0] for m in got["modules"] if (f := layers.third_party_floor(m)) is not None and f > i})
  assert above == [] and third == [], f"importing the {layers.NAMES[i]} layer pulled in {above or ''} {third or ''}"
  assert "tinygrad.runtime.ops_tinytpu" not in got["modules"], "an import registered the device"
  # the one import-time effect: loading tinytpu.backend.device installs its optimisation policy into
  # tinygrad, since tinygrad's compile-pool processes get that module by unpickling the renderer
  assert not got["patched"] or i >= layers.NAMES.index("backend"), "an import below the backend patched tinygrad"
  assert got["changed"] == [], f"importing the {layers.NAMES[i]} layer changed {got['changed']}"


@pytest.mark.parametrize("mod", ["tinytpu", "tinytpu.asm", "tinytpu.bundle", "tinytpu.records", "tinytpu.isa"])
def test_low_modules_alone(mod, tmp_path):
  """The assembler and below, one at a time: no tinygrad, no backend, no simulator."""
  got = probe([mod], tmp_path)
  bad = [m for m in got["modules"] if m.split(".")[0] in ("tinygrad", "torch", "cocotb", "pyuvm")
         or m.startswith(("tinytpu.backend", "tinytpu.golden", "tinytpu.cosim", "tinytpu.tb"))]
  assert bad == [], f"import {mod} pulled in {bad}"


def _tree(tmp_path, files: dict[str, str]):
  for rel, text in files.items():
    p = tmp_path / rel
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(textwrap.dedent(text))
  return tmp_path


def test_checker_finds_a_cycle_and_a_higher_import(tmp_path):
  """The asm <-> bundle cycle this layering removed (a function-level import counts), an assembler
  importing tinygrad, a golden module importing the backend (through importlib), relative imports in
  a cycle, records importing an undeclared module, and a module in no layer."""
  root = _tree(tmp_path, {
    "tinytpu/__init__.py": "",
    "tinytpu/asm.py": "from tinytpu.bundle import Bundle\nimport tinygrad\n",
    "tinytpu/bundle.py": "def parse():\n  from tinytpu import asm\n",
    "tinytpu/records.py": "from tinytpu import stray\n",
    "tinytpu/stray.py": "",
    "startup/other_hook.py": "",
    "golden/__init__.py": "",
    "golden/interp.py": "import importlib\nimportlib.import_module('tinytpu.backend.device')\n",
    "backend/__init__.py": "", "backend/device.py": "from . import runner\n", "backend/runner.py": "from .device import x\n",
  })
  problems = layers.check(root)
  text = "\n".join(problems)
  assert "import cycle: tinytpu.asm <-> tinytpu.bundle" in text, text
  assert "import cycle: tinytpu.backend.device <-> tinytpu.backend.runner" in text, text
  assert "tinytpu.asm (assembler) imports tinygrad" in text, text
  assert "tinytpu.golden.interp (simulators) imports tinytpu.backend.device (backend)" in text, text
  assert "tinytpu.records (records) imports tinytpu.stray (apps)" in text, text  # an undeclared module is an app
  assert "module other_hook is in no layer" in text, text


def test_lint_runs_the_layer_check():
  r = subprocess.run([sys.executable, "-m", "tinytpu.layers"], capture_output=True, text=True, cwd=ROOT)
  assert r.returncode == 0 and "no cycle" in r.stdout, r.stdout + r.stderr
