"""The renderer's output is the kernel's TASM listing: it assembles on its own, and the compiled
record (program, constant tiles, layout) survives its serialisation exactly."""
import numpy as np
import pytest

import tinytpu  # noqa: F401  registers the device
from tinygrad import Tensor, dtypes
from tinytpu import asm
from tinytpu.backend import device, listing


def test_listing_is_tasm(sources):
  a = np.arange(-40, 40, dtype=np.int32).reshape(8, 10)
  t = Tensor(a, device="TINYTPU")  # int32 operands of an MXU kernel: checked for int8 range at launch
  np.testing.assert_array_equal((t @ t.T).numpy(), a @ a.T)
  (Tensor(a.astype(np.int8), device="TINYTPU").cast(dtypes.int32).sum(0)).realize()
  assert sources
  cfg = device.backend_config()
  for src in sources:
    assert src.startswith("#@ kernel ")
    b = asm.assemble_bundle(src, cfg)  # the listing alone is a valid TASM file
    c = listing.compile_listing(src, cfg)
    assert c.words == b.program and set(c.const_tiles) == set(b.vmem)
    back = listing.Compiled.from_bytes(c.to_bytes())
    assert back.words == c.words and back.bufs == c.bufs and back.var_regs == c.var_regs and back.written == c.written
    assert all((back.const_tiles[t] == v).all() for t, v in c.const_tiles.items())
    assert [(s, e.tolist()) for s, e in back.int8_checks] == [(s, e.tolist()) for s, e in c.int8_checks]
  assert any("#@ int8 slot=" in s for s in sources) and any(".vmem " in s for s in sources)


def test_listing_for_another_core_is_refused(sources):
  (Tensor([1, 2, 3], device="TINYTPU") + 1).realize()
  src = sources[-1].replace(" N=4 ", " N=8 ", 1)
  with pytest.raises(ValueError, match=r"listing is for N=8, the backend core has N=4"):
    listing.compile_listing(src, device.backend_config())
