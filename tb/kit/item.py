"""Sequence item base: declared random fields drawn from weighted operand classes."""
from __future__ import annotations

import random

import numpy as np
from pyuvm import uvm_sequence_item

from . import operands


class Item(uvm_sequence_item):
  """Base transaction. Subclasses declare `rand_fields = {field: table}` where table is an operand
  class table ("int32", "int8", "fp32" or a dict) or a list of choices (uniform) or a
  (lo, hi) range; `randomize(rng)` fills them, remembers each field's class in `self.cls[field]`,
  then calls `post_randomize()` for constraints that tie fields together."""
  rand_fields: dict = {}

  def __init__(self, name: str = "item", **kw):
    super().__init__(name)
    self._base_keys = set(vars(self)) | {"_base_keys", "cls"}  # pyuvm's own bookkeeping, not fields
    self.cls: dict[str, str] = {}
    for f in self.rand_fields: setattr(self, f, None)
    for k, v in kw.items(): setattr(self, k, v)

  def randomize(self, rng: random.Random, **fixed) -> "Item":
    for f, spec in self.rand_fields.items():
      if f in fixed:
        setattr(self, f, fixed[f]); continue
      if isinstance(spec, tuple) and len(spec) == 2 and all(isinstance(x, int) for x in spec):
        setattr(self, f, rng.randint(*spec))
      elif isinstance(spec, list):
        setattr(self, f, rng.choice(spec))
      else:
        self.cls[f], v = operands.draw(spec, rng)
        setattr(self, f, v)
    self.post_randomize(rng)
    return self

  def post_randomize(self, rng: random.Random): pass

  def fields(self) -> dict:
    return {k: v for k, v in vars(self).items() if k not in self._base_keys and not k.startswith("_")}

  def __str__(self):
    def fmt(v):
      if isinstance(v, np.ndarray): return "tile" + np.array2string(v, formatter={"int": lambda x: f"{int(x):08x}"}, max_line_width=200).replace("\n", "")
      return f"0x{v:x}" if isinstance(v, int) and not isinstance(v, bool) and v >= 1 << 16 else repr(v)
    body = " ".join(f"{k}={fmt(v)}" for k, v in self.fields().items() if v is not None)
    return f"{type(self).__name__}({body})"


def random_tile(rng: random.Random, n: int, table="int32", only=None) -> tuple[np.ndarray, list[str]]:
  """An N x N uint32 tile with each lane drawn from an operand class table; returns (tile, classes)."""
  vals, cls = [], []
  for _ in range(n * n):
    c, v = operands.draw(table, rng, only)
    vals.append(v); cls.append(c)
  return np.array(vals, dtype=np.uint32).reshape(n, n), cls
