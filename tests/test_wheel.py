"""A real wheel (setup.py, tinytpu/tools.py): the RTL, the co-sim's C++ and the generated package are
package data; outside a clone the sources come from there and builds go to a per-user cache folder
(TINYTPU_BUILD_DIR overrides it); in the clone (the editable install) they stay rtl/ and build/.

make test: the wheel's contents and the path resolution of an unpacked wheel (cheap). Nightly: a
fresh virtual environment, `pip install <clone>` with its dependencies from the package registry,
then `python -m tinytpu doctor` and a tinygrad program on the RTL."""
import json
import os
import pathlib
import shutil
import subprocess
import sys
import zipfile

import pytest

from tinytpu import tools

ROOT = tools.CLONE
# the sources a wheel is made of: package folder -> folder of the clone (setup.py FOLDERS, and rtl/)
FOLDERS = {"tinytpu": "tinytpu", "tinytpu/golden": "golden", "tinytpu/backend": "backend", "tinytpu/tb": "tb",
           "tinytpu/regress": "regress", "tinytpu/rtl": "rtl"}
SKIP = shutil.ignore_patterns("__pycache__", "*.egg-info", "*.pyc")

pytestmark = pytest.mark.skipif(ROOT is None, reason="needs a clone")


def copy_sources(dst: pathlib.Path) -> pathlib.Path:
  """The package's sources in a folder of their own: a build leaves build/ and egg-info beside them,
  and the clone's build/ holds the co-sims."""
  for d in (*FOLDERS.values(), "startup"):
    shutil.copytree(ROOT / d, dst / d, ignore=SKIP)
  for f in ("setup.py", "pyproject.toml"):
    shutil.copy(ROOT / f, dst / f)
  return dst


def env_outside(**extra) -> dict[str, str]:
  """This environment without anything that points into the clone or at a build folder."""
  e = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "TINYTPU_BUILD_DIR", "XDG_CACHE_HOME", "DEV")
       and not k.startswith("PYTEST_")}
  e.update(extra)
  return e


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> pathlib.Path:
  tmp = tmp_path_factory.mktemp("wheel")
  src = copy_sources(tmp / "src")
  stale = src / "build" / "setuptools" / "lib" / "tinytpu" / "removed_module.py"  # what an earlier build left behind
  stale.parent.mkdir(parents=True)
  stale.write_text("")
  r = subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation", "-w", str(tmp / "dist"), str(src)],
                     capture_output=True, text=True, timeout=600, cwd=tmp)
  assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-3000:]
  (whl,) = (tmp / "dist").glob("tinytpu-*.whl")
  return whl


@pytest.fixture(scope="module")
def site(wheel, tmp_path_factory) -> pathlib.Path:
  """The wheel unpacked as pip would into site-packages (a wheel is a zip of exactly that)."""
  d = tmp_path_factory.mktemp("site")
  with zipfile.ZipFile(wheel) as z:
    z.extractall(d)
  return d


def expected_files() -> set[str]:
  out = set()
  for pkg, folder in FOLDERS.items():
    for f in (ROOT / folder).rglob("*"):
      rel = f.relative_to(ROOT / folder)
      if f.is_file() and "__pycache__" not in rel.parts and f.suffix in (".py", ".sv", ".svh", ".vlt", ".cpp", ".h", ".toml"):
        out.add(f"{pkg}/{rel.as_posix()}")
  return out


def test_wheel_holds_the_design(wheel):
  """Every Python module of the mapped folders, every RTL, header and C++ file, the generated
  tinytpu_pkg.sv as committed, the regression lists, the testbenches' SV tops and the start-up hook."""
  with zipfile.ZipFile(wheel) as z:
    names = set(z.namelist())
    assert z.read("tinytpu/rtl/tinytpu_pkg.sv") == (ROOT / "rtl" / "tinytpu_pkg.sv").read_bytes()
    assert z.read("tinytpu/rtl/sim/tinytpu_sim.cpp") == (ROOT / "rtl" / "sim" / "tinytpu_sim.cpp").read_bytes()
  missing = sorted(expected_files() - names)
  assert missing == [], f"not in the wheel: {missing}"
  for must in ("tinytpu/rtl/sim/sim_top.sv", "tinytpu/rtl/sim/bundle_reader.h", "tinytpu/rtl/lint.vlt", "tinytpu/regress/lists/smoke.toml",
               "tinytpu/tb/kit/__init__.py", "_tinytpu_autoload.py", "tinytpu_device.pth"):
    assert must in names, must
  assert not [n for n in names if n.startswith(("tests/", "build/", "doc/")) or "__pycache__" in n]
  assert "tinytpu/removed_module.py" not in names, "a stale build/lib file went into the wheel"


WHERE = ("import json, tinytpu, tinytpu.tools as t, tinytpu.cosim as c; "
         "print(json.dumps([tinytpu.__file__, t.CLONE and str(t.CLONE), str(t.RTL), str(t.BUILD), [str(p) for p in c._sources()]]))")


def where(site: pathlib.Path, cwd: pathlib.Path, **env) -> list:
  r = subprocess.run([sys.executable, "-c", WHERE], cwd=cwd, env=env_outside(PYTHONPATH=str(site), **env), capture_output=True, text=True, timeout=120)
  assert r.returncode == 0, r.stderr[-3000:]
  return json.loads(r.stdout.strip().splitlines()[-1])


def test_unpacked_wheel_finds_its_package_data_and_the_cache(site, tmp_path):
  home = tmp_path / "home"
  home.mkdir()
  init, clone, rtl, build, srcs = where(site, tmp_path, HOME=str(home))
  assert pathlib.Path(init).is_relative_to(site), f"imported the clone's tinytpu ({init}), not the wheel's"
  assert clone is None and pathlib.Path(rtl) == site / "tinytpu" / "rtl"
  assert srcs and all(pathlib.Path(s).is_file() and pathlib.Path(s).is_relative_to(site) for s in srcs)
  b = pathlib.Path(build)
  assert b.parent == home / ".cache" / "tinytpu" and b.name.startswith("0.1.0-"), build
  assert where(site, tmp_path, HOME=str(home))[3] == build, "the cache folder must be stable across runs"
  assert pathlib.Path(where(site, tmp_path, HOME=str(home), XDG_CACHE_HOME=str(tmp_path / "xdg"))[3]).parent == tmp_path / "xdg" / "tinytpu"
  assert where(site, tmp_path, HOME=str(home), TINYTPU_BUILD_DIR=str(tmp_path / "mine"))[3] == str(tmp_path / "mine")


def test_unpacked_wheel_runs_the_golden_model_and_doctor(site, tmp_path):
  """The command line works from the wheel alone (the golden model: no build needed), doctor names
  the package data and the cache."""
  bundle = tmp_path / "b.tasm"
  bundle.write_text("LI s1, 5\nSADDI s1, s1, 2\nHALT\n.dump sreg\n")
  e = env_outside(PYTHONPATH=str(site), HOME=str(tmp_path))
  r = subprocess.run([sys.executable, "-m", "tinytpu", "asm", str(bundle), "-o", str(tmp_path / "b.txt")], cwd=tmp_path, env=e, capture_output=True, text=True)
  assert r.returncode == 0, r.stdout + r.stderr
  r = subprocess.run([sys.executable, "-m", "tinytpu", "run", "--golden", str(tmp_path / "b.txt")], cwd=tmp_path, env=e, capture_output=True, text=True)
  assert r.returncode == 0 and "status ok" in r.stdout and "sreg 0 7 " in r.stdout, r.stdout + r.stderr
  r = subprocess.run([sys.executable, "-m", "tinytpu", "doctor"], cwd=tmp_path, env=e, capture_output=True, text=True, timeout=120)
  assert f"sources    {site / 'tinytpu' / 'rtl'} (package data)" in r.stdout and "per-user cache" in r.stdout, r.stdout


def test_clone_uses_its_own_folders():
  """The editable install (this environment) keeps the clone's rtl/ and build/."""
  assert tools.RTL == ROOT / "rtl" and tools.PACKAGE == ROOT / "tinytpu"
  if not os.environ.get("TINYTPU_BUILD_DIR"):
    assert tools.BUILD == ROOT / "build"


@pytest.mark.nightly
def test_fresh_venv_installs_the_clone_and_runs_tinygrad_on_the_rtl(tmp_path):
  """`pip install <clone>` (not -e) into a new virtual environment, dependencies from the package
  registry (cached), then doctor and DEV=TINYTPU on the RTL from outside the clone: the co-sim is
  built from the package data into the per-user cache."""
  src = copy_sources(tmp_path / "clone")
  venv = tmp_path / "venv"
  subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=300)
  py = venv / "bin" / "python"
  e = env_outside(XDG_CACHE_HOME=str(tmp_path / "cache"), PIP_CACHE_DIR=os.environ.get("PIP_CACHE_DIR", str(pathlib.Path.home() / ".cache" / "pip")))
  e.pop("VIRTUAL_ENV", None)
  e["PATH"] = f"{venv / 'bin'}{os.pathsep}{e.get('PATH', '')}"
  r = subprocess.run([str(py), "-m", "pip", "install", "-q", str(src)], cwd=tmp_path, env=e, capture_output=True, text=True, timeout=1500)
  assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
  r = subprocess.run([str(py), "-m", "tinytpu", "doctor"], cwd=tmp_path, env=e, capture_output=True, text=True, timeout=300)
  assert r.returncode == 0 and "doctor: ok" in r.stdout and "(package data)" in r.stdout, r.stdout + r.stderr
  code = "from tinygrad import Tensor; print((Tensor([1, 2, 3]) + 1).tolist())"
  r = subprocess.run([str(py), "-c", code], cwd=tmp_path, env={**e, "DEV": "TINYTPU", "TINYTPU_SIM": "rtl"}, capture_output=True, text=True, timeout=1500)
  assert r.returncode == 0 and r.stdout.strip().splitlines()[-1] == "[2, 3, 4]", r.stdout[-2000:] + r.stderr[-3000:]
  exes = list((tmp_path / "cache" / "tinytpu").glob("0.1.0-*/*/sim/tinytpu-sim"))
  assert len(exes) == 1, f"the co-sim was not built in the per-user cache: {list((tmp_path / 'cache').rglob('*'))[:20]}"
  from tinytpu.backend.device import BACKEND_DEFAULT
  from tinytpu.config import Config
  assert not (src / "build" / Config.from_str(BACKEND_DEFAULT).name).exists()
