"""TinyTPU: importing the package registers the tinygrad `TINYTPU` device."""


def _register_device():
  try:
    from tinytpu.backend.device import register
  except ImportError:  # tinygrad is not installed: the RTL/golden tools still work
    return
  register()


_register_device()
