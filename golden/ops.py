"""The registry of VPU reference functions, keyed by the VPU function names of the ISA table.

Every function takes (a, b, c): uint32 arrays of shape (..., N, N) holding raw lane bits (unused
operands are ignored) and returns a new uint32 array of the same shape."""
from tinytpu.golden import fpops, intops

VPU = {**intops.OPS, **fpops.OPS}
