"""The start-up hook (startup/_tinytpu_autoload.py via site-packages/tinytpu_device.pth, setup.py):
TINYTPU in any Python process of the environment, without `import tinytpu`, and a Python start
that imports nothing heavy until tinygrad asks for the device."""
import json
import os
import pathlib
import shutil
import site
import subprocess
import sys
import zipfile

import pytest

from tests.backend import tinygrad_ops

ROOT = pathlib.Path(__file__).resolve().parents[2]
PTH = "tinytpu_device.pth"

# computes on whatever DEV says, then reports where it ran and what the start had imported
PROGRAM = """
import sys
at_start = sorted(m for m in sys.modules if m.split('.')[0] in ('tinytpu', 'tinygrad', 'numpy'))
from tinygrad import Tensor, Device
a = Tensor([[1.0, 2.0], [3.0, 4.0]])
out = ((a + 1) * a).sum(axis=1).tolist(), (a @ a).tolist(), Tensor([3, 1, 2]).cumsum().tolist()
print(repr((at_start, out, Device.DEFAULT, type(Device[Device.DEFAULT]).__module__)))
"""
EXPECTED = ([8.0, 32.0], [[7.0, 10.0], [15.0, 22.0]], [3, 4, 6])


def fresh(code: str, tmp_path, **env) -> subprocess.CompletedProcess:
  """A new interpreter of this environment, outside the repository, with nothing on PYTHONPATH."""
  e = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "TINYTPU_AUTOLOAD", "DEV") and not k.startswith("PYTEST_")}
  e.update(env)
  return subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env=e, capture_output=True, text=True, timeout=600)


def test_pth_is_installed():
  dirs = [*site.getsitepackages(), site.getusersitepackages()]
  found = [pathlib.Path(d, PTH) for d in dirs if pathlib.Path(d, PTH).is_file()]
  assert found, f"no {PTH} in {dirs}: the environment predates the hook; reinstall (make venv, or pip install -e .)"
  assert found[0].read_text() == "import _tinytpu_autoload\n"


def test_tinytpu_without_import(tmp_path):
  r = fresh(PROGRAM, tmp_path, DEV="TINYTPU", TINYTPU_SIM="golden")
  assert r.returncode == 0, r.stderr[-3000:]
  at_start, out, dev, module = eval(r.stdout.strip().splitlines()[-1])
  assert at_start == [], f"imported before tinygrad asked for a device: {at_start}"
  assert (out, dev, module) == (EXPECTED, "TINYTPU", "tinytpu.backend.device")


def test_hook_is_what_makes_it_work(tmp_path):
  """Without the finder the same program fails as it did before the hook existed."""
  r = fresh(PROGRAM, tmp_path, DEV="TINYTPU", TINYTPU_SIM="golden", TINYTPU_AUTOLOAD="0")
  assert r.returncode != 0 and "No module named 'tinygrad.runtime.ops_tinytpu'" in r.stderr, r.stdout + r.stderr[-2000:]


def test_start_imports_nothing_heavy(tmp_path):
  r = fresh("import sys, json; print(json.dumps([sorted(sys.modules), [getattr(f, '__module__', '') for f in sys.meta_path]]))", tmp_path)
  assert r.returncode == 0, r.stderr
  mods, finders = json.loads(r.stdout)
  assert "_tinytpu_autoload" in mods and "_tinytpu_autoload" in finders, "the start-up hook did not run"
  heavy = [m for m in mods if m.split(".")[0] in ("tinytpu", "tinygrad", "numpy", "torch")]
  assert heavy == [], f"Python's start imported {heavy}"


def test_tinygrad_cpu_is_untouched_or_served_as_register_says(tmp_path):
  """No DEV: tinygrad picks its default device. register() serves CPU with a TinyTPU core only
  when clang is missing; the hook follows the same rule, found out by the process itself."""
  code = ("import shutil, os\nclang = shutil.which(os.environ.get('CC', 'clang')) is not None\n" + PROGRAM +
          "import sys\nprint(clang, getattr(sys.modules.get('tinygrad.runtime.ops_cpu'), '_tinytpu', False))")
  r = fresh(code, tmp_path, TINYTPU_SIM="golden")
  assert r.returncode == 0, r.stderr[-3000:]
  *_, line, last = r.stdout.strip().splitlines()
  clang, served = last.split()
  assert served == str(clang == "False"), r.stdout
  if clang == "False":
    assert eval(line)[1:3] == (EXPECTED, "CPU")


def test_wheel_ships_the_hook(tmp_path):
  """A regular (non-editable) wheel holds the .pth and the module at its top, with RECORD lines.
  Built from a copy of the sources: setuptools leaves build/lib and egg-info next to them."""
  src = tmp_path / "src"
  for d in ("tinytpu", "backend", "golden", "tb", "regress", "startup", "rtl"):
    shutil.copytree(ROOT / d, src / d, ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
  for f in ("setup.py", "pyproject.toml"):
    shutil.copy(ROOT / f, src / f)
  r = subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(tmp_path), str(src)],
                     capture_output=True, text=True, timeout=600)
  assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
  (whl,) = tmp_path.glob("tinytpu-*.whl")
  with zipfile.ZipFile(whl) as z:
    record = z.read(next(n for n in z.namelist() if n.endswith(".dist-info/RECORD"))).decode().splitlines()
    assert z.read(PTH) == b"import _tinytpu_autoload\n" and "_tinytpu_autoload.py" in z.namelist()
  assert any(line.startswith(f"{PTH},sha256=") for line in record) and any(line.startswith("_tinytpu_autoload.py,sha256=") for line in record)


SUBSET = ["TestOps::test_add", "TestOps::test_mul", "TestOps::test_sum", "TestOps::test_matmul_simple", "TestOps::test_cumsum"]


def test_xdist_workers_get_the_device():
  """tinygrad's test_ops under pytest-xdist with DEV=TINYTPU and no `-p tinytpu`: every worker
  process gets the device from the hook alone."""
  try:
    tinygrad_ops.find_tests_dir()
  except LookupError as e:
    pytest.fail(str(e))
  run = tinygrad_ops.run_ops(SUBSET, workers=2, per_test_timeout=300, timeout=1200, env={"TINYTPU_SIM": "golden"}, report="autoload-report.json")
  problems = tinygrad_ops.judge(run, tinygrad_ops.load_manifest(), SUBSET)
  assert not problems, "\n".join(problems)
  assert [run.results[t]["outcome"] for t in SUBSET] == ["passed"] * len(SUBSET), run.results
