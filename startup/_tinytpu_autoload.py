"""Start-up hook: the tinygrad `TINYTPU` device in every Python process, no `import tinytpu` needed.

site-packages/tinytpu_device.pth (written by setup.py) imports this module when Python starts.
It is a top-level module, not `tinytpu._autoload`, because importing anything inside the tinytpu
package runs tinytpu/__init__.py, which registers the device and so imports tinygrad and numpy.
Here only the standard library is touched: a finder goes to the front of sys.meta_path and answers
for the modules tinygrad 0.14 imports to open a device, `tinygrad.runtime.ops_<name>`:

- ops_tinytpu: always, by calling tinytpu.backend.device.register(), which creates the module;
- ops_cpu: only when register() replaces it (clang is missing, so tinygrad's CPU device cannot
  open); otherwise tinygrad's own module is imported as usual.

TINYTPU_AUTOLOAD=0 leaves the finder out (to see tinygrad without TinyTPU)."""
import os
import sys

OWN = "tinygrad.runtime.ops_tinytpu"
CPU = "tinygrad.runtime.ops_cpu"


class Finder:
  """Meta-path finder and loader for the two modules above. The work happens in find_spec since
  whether ops_cpu is served at all is register()'s decision."""
  _registering = False

  @classmethod
  def find_spec(cls, name, path=None, target=None):
    if name not in (OWN, CPU) or cls._registering:
      return None
    cls._registering = True  # register() imports tinygrad modules: no re-entry from those lookups
    try:
      from tinytpu.backend.device import register
      register()
    except ImportError:
      if name == OWN:
        raise
      return None  # a broken TinyTPU install must not take tinygrad's CPU device down with it
    finally:
      cls._registering = False
    mod = sys.modules.get(name)
    if mod is None or (name == CPU and not getattr(mod, "_tinytpu", False)):
      return None
    from importlib.machinery import ModuleSpec
    return ModuleSpec(name, cls)

  @staticmethod
  def create_module(spec):
    return sys.modules[spec.name]  # the module register() made

  @staticmethod
  def exec_module(module):
    pass


def install():
  if os.environ.get("TINYTPU_AUTOLOAD", "1") != "0" and not any(f is Finder for f in sys.meta_path):
    sys.meta_path.insert(0, Finder)


install()
