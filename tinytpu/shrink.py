"""Delta debugging of a random program (tinytpu/randprog.py): drop items of every block, unwrap loops,
cut loop counts to one and drop preloads while the failure still shows. Every branch target of a
program tree is relative, so each candidate the shrinker builds is itself a legal program.

  shrink(prog, bad) -> Program           the smallest program found for which bad(program) holds
"""
from __future__ import annotations

import copy
from typing import TypeVar

from tinytpu.randtree import Loop

Program = TypeVar("Program")  # tinytpu.randprog.Program: `items` (the tree) and the preloads below

PRELOADS = ("vmem", "psum", "sregs", "vdump")  # the parts of a Program besides its items that shrink


def _blocks(items: list, path=()) -> list[tuple]:
  """Paths of every block: () is the top level, (i, j) the body of loop j inside the body of loop i."""
  out = [path]
  for i, it in enumerate(items):
    if isinstance(it, Loop): out += _blocks(it.body, path + (i,))
  return out


def _block_at(items: list, path: tuple) -> list:
  for i in path: items = items[i].body
  return items


def _ddmin(xs: list, bad) -> list:
  """Drop chunks of xs (halves, quarters, ... single elements) while bad(rest) holds."""
  n = 2
  while len(xs) >= 1:
    chunk = max(1, len(xs) // n)
    i, removed = 0, False
    while i < len(xs):
      trial = xs[:i] + xs[i + chunk:]
      if bad(trial):
        xs, removed = trial, True
      else:
        i += chunk
    if chunk == 1 and not removed: break
    if not removed: n = min(len(xs), n * 2)
  return xs


def shrink(prog: Program, bad, max_tries: int = 3000) -> Program:
  """Delta debugging: drop items of every block, unwrap loops (body in place of the loop), cut loop
  counts to 1, drop preloads, while bad(program) still holds."""
  tries = [0]
  def test(p: Program) -> bool:
    if tries[0] >= max_tries: return False
    tries[0] += 1
    try: return bool(bad(p))
    except Exception: return False  # a candidate that breaks the harness is not the bug we are after
  prog = copy.deepcopy(prog)
  changed = True
  while changed and tries[0] < max_tries:
    changed = False
    for path in _blocks(prog.items):
      try: blk = _block_at(prog.items, path)
      except (IndexError, AttributeError): continue  # the block went away in this pass
      def with_block(xs, path=path):
        p = copy.deepcopy(prog)
        blk = _block_at(p.items, path)
        blk[:] = copy.deepcopy(xs)
        return p
      new = _ddmin(list(blk), lambda xs: test(with_block(xs)))
      if len(new) < len(blk):
        prog, changed = with_block(new), True
    for path in _blocks(prog.items)[1:]:  # loops: unwrap, then one iteration
      try: lp = _block_at(prog.items, path[:-1])[path[-1]]
      except (IndexError, AttributeError): continue
      if not isinstance(lp, Loop): continue
      p = copy.deepcopy(prog)
      blk = _block_at(p.items, path[:-1])
      blk[path[-1]:path[-1] + 1] = copy.deepcopy(lp.body)
      if test(p):
        prog, changed = p, True
        break  # paths moved
      if lp.bound > 1 or lp.mn == "LOOP":  # one iteration, no count set-up
        p = copy.deepcopy(prog)
        blk = _block_at(p.items, path[:-1])
        blk[path[-1]] = Loop([], "LOOPI", 1, 1, copy.deepcopy(lp.body))
        if test(p): prog, changed = p, True
    for kind in PRELOADS:
      keys = _ddmin(list(getattr(prog, kind)), lambda ks, kind=kind: test(_keep(prog, kind, ks)))
      if len(keys) < len(getattr(prog, kind)):
        prog, changed = _keep(prog, kind, keys), True
  return prog


def _keep(prog: Program, kind: str, keys: list) -> Program:
  p = copy.deepcopy(prog)
  old = getattr(prog, kind)
  setattr(p, kind, {k: v for k, v in old.items() if k in keys} if isinstance(old, dict) else list(keys))
  return p


