"""Golden reference of the PSUM epilogues PEPI.B/.BR/.BQ/.BRQ (doc/epilogue.md): what leaves a PSUM
tile of int32 MXU accumulators on its way into a vector register.

Choices the architecture leaves open, made here (the RTL, rtl/epi.sv, makes the same ones):
- the bias is a whole tile, added lane by lane (acc[r][c] + bias[r][c]), int32 wrap: a per-channel
  bias is a tile whose rows repeat it;
- the requantising parameters are per channel (lane c): the multiplier m = vq[0][c] (signed int32)
  and the right shift k = vq[1][c] (signed int32) clamped to [0, 63] (a negative shift is 0, one
  above 63 is 63: no trap); rows 2.. of vq are ignored;
- rounding is round half up (toward +inf) at the shift: y = floor((x*m + 2^(k-1)) / 2^k) for k > 0,
  y = x*m for k = 0, in exact integer arithmetic (the product needs 64 bits, the rounding add 65);
  computed overflow-free as (p >> k) + bit k-1 of p, p = x*m in int64;
- the requantised value saturates to [-128, 127], written sign-extended into the 32-bit lane;
- ReLU comes last: max(y, 0) on the requantised value (or on acc + bias without requantising)."""
from __future__ import annotations

import numpy as np

from tinytpu.isa import EPI_RELU, EPI_REQUANT, EPI_SHIFT_MAX


def epilogue(acc: np.ndarray, bias: np.ndarray, vq: np.ndarray | None, mode: int) -> np.ndarray:
  """The uint32 N x N tile a PEPI of `mode` (fn: bit 0 ReLU, bit 1 requantise) writes, from the
  uint32 PSUM tile `acc`, the bias tile and (requantising) the parameter tile vq."""
  x = (acc.astype(np.uint32) + bias.astype(np.uint32)).view(np.int32).astype(np.int64)  # int32 wrap
  if mode & EPI_REQUANT:
    q = vq.view(np.int32).astype(np.int64)
    m = q[0][None, :]                                   # per channel: lane c of row 0
    k = np.clip(q[1], 0, EPI_SHIFT_MAX)[None, :]        # lane c of row 1, clamped
    p = x * m                                           # |p| <= 2^62: exact in int64
    half = np.where(k > 0, (p >> np.maximum(k - 1, 0)) & 1, 0)
    x = np.clip((p >> k) + half, -128, 127)
  if mode & EPI_RELU:
    x = np.maximum(x, 0)
  return x.astype(np.int32).view(np.uint32)
