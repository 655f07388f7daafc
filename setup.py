"""The one install step pyproject.toml cannot express: the start-up file tinytpu_device.pth.

A .pth file in site-packages whose line starts with `import` runs when Python starts; this one
imports _tinytpu_autoload (startup/), which makes the tinygrad TINYTPU device available without
`import tinytpu`. setuptools puts only packages and modules into site-packages, so the file is
added here, for both kinds of install:
- a regular wheel (`pip install .`): build_py writes it at the top of build_lib, which is the top
  of the wheel, which pip unpacks into site-packages;
- an editable install (`pip install -e .`, PEP 660): the editable wheel is made without build_lib
  (it holds only setuptools' own path finder), so the file is added to the finished wheel, with
  its RECORD line, and pip installs (and uninstalls) it like any other file.

It also lays out the packages, since pyproject.toml cannot compute them: the design's top-level
folders stay where they are in the repository and become tinytpu's subpackages through package_dir
(golden/ is tinytpu.golden, backend/ tinytpu.backend, tb/ tinytpu.tb with every folder under it,
regress/ tinytpu.regress), and rtl/ is package data as tinytpu.rtl (the RTL, the co-sim's C++ and
the generated tinytpu_pkg.sv), which is where tinytpu.tools looks for it outside a clone."""
import base64
import hashlib
import os
import pathlib
import shutil
import zipfile

from setuptools import setup
from setuptools.command.build_py import build_py
from setuptools.command.editable_wheel import editable_wheel

HERE = pathlib.Path(__file__).resolve().parent
# package -> folder of the repository; a folder under one with an __init__.py is a subpackage
FOLDERS = {"tinytpu": "tinytpu", "tinytpu.golden": "golden", "tinytpu.backend": "backend", "tinytpu.tb": "tb", "tinytpu.regress": "regress"}
# data-only packages (folders without an __init__.py) and what they ship; the testbenches' own SV tops too
DATA_ONLY = {"tinytpu.rtl": ["*.sv", "*.svh", "*.vlt"], "tinytpu.rtl.sim": ["*.sv", "*.svh", "*.cpp", "*.h"], "tinytpu.rtl.sim.chip": ["*.sv", "*.cpp"], "tinytpu.regress.lists": ["*.toml"]}


def code_packages() -> list[str]:
  out = []
  for pkg, folder in FOLDERS.items():
    for init in sorted((HERE / folder).rglob("__init__.py")):
      out.append(".".join((pkg, *init.parent.relative_to(HERE / folder).parts)))
  return out


PTH_NAME = "tinytpu_device.pth"  # sorts after __editable__.*.pth, which makes the module importable
PTH_TEXT = b"import _tinytpu_autoload\n"


class BuildPyWithPth(build_py):
  def run(self):
    if not self.editable_mode:  # a module removed from the sources must not linger in build/lib and so in the wheel
      shutil.rmtree(self.build_lib, ignore_errors=True)
    super().run()
    if not self.editable_mode:
      pathlib.Path(self.build_lib, PTH_NAME).write_bytes(PTH_TEXT)

  def get_outputs(self, include_bytecode=True):
    outs = super().get_outputs(include_bytecode)
    return outs if self.editable_mode else [*outs, os.path.join(self.build_lib, PTH_NAME)]


def add_to_wheel(whl: pathlib.Path, name: str, data: bytes):
  """Rewrite the wheel with one more top-level file and its RECORD line (sha256, urlsafe base64)."""
  digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
  tmp = whl.with_name(whl.name + ".part")
  with zipfile.ZipFile(whl) as src:
    if name in src.namelist():
      return
    with zipfile.ZipFile(tmp, "w", zipfile.ZIP_DEFLATED) as dst:
      for info in src.infolist():
        body = src.read(info)
        if info.filename.endswith(".dist-info/RECORD"):
          body += (b"" if body.endswith(b"\n") else b"\n") + f"{name},sha256={digest},{len(data)}\n".encode()
        dst.writestr(info, body)
      dst.writestr(name, data)
  os.replace(tmp, whl)


class EditableWheelWithPth(editable_wheel):
  def run(self):
    super().run()
    wheels = list(pathlib.Path(self.dist_dir).glob("*-0.editable-*.whl"))
    if not wheels:
      raise RuntimeError(f"setup.py: no editable wheel in {self.dist_dir} to add {PTH_NAME} to")
    for whl in wheels:
      add_to_wheel(whl, PTH_NAME, PTH_TEXT)


setup(packages=code_packages() + list(DATA_ONLY), package_dir={"": "startup", **FOLDERS, "tinytpu.rtl": "rtl"},
      package_data={**{p: ["*.sv", "*.svh", "*.toml"] for p in code_packages() if p.startswith("tinytpu.tb")}, **DATA_ONLY},
      py_modules=["_tinytpu_autoload"],  # the start-up hook behind tinytpu_device.pth
      options={"build": {"build_base": "build/setuptools"}},  # a wheel built in a clone: beside, not among, the co-sim builds
      cmdclass={"build_py": BuildPyWithPth, "editable_wheel": EditableWheelWithPth})
