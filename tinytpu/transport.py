"""How a Bundle object reaches a runner and its result comes back (doc/bundle.md, "Version 2").

Small bundles travel as bundle v1 text. A bundle whose HBM preloads or `dump hbm` regions hold at
least BINARY_MIN_LANES lanes travels as bundle v2: its HBM regions go to a side file of raw
little-endian uint32 lanes (`binfile` + one `hbmbin` record per region) and the runner writes the
lanes of its hbm dumps into a result side file (`resultfile`; result lines `hbm <addr> <count>
@<offset>`). Side files live in /dev/shm (memory, no disk) when it is writable, else in the temporary
directory, and are removed when the Transfer closes (and at exit, for any left open).

  with Transfer(b) as t:          # t.text: the bundle text; t.resultfile: None for v1
    out = <run t.text>            # the runner's result text
    res = t.result(out)           # bundle.Result, hbm dumps read from the result file

tinytpu.cosim.run_bundle(b) and Server.run_bundle(b) use it; measure_transfer() times a 16 MB
host-to-sim transfer for the bench.
"""
from __future__ import annotations

import atexit
import dataclasses
import os
import pathlib
import re
import tempfile
import time

import numpy as np

from tinytpu import bundle
from tinytpu.config import DEFAULT, Config
from tinytpu.records import Bundle, Result

BINARY_MIN_LANES = 4096  # HBM lanes (preloaded plus dumped) from which a bundle travels as v2
_LIVE: set[str] = set()  # side files not yet removed


def side_dir() -> str:
  """/dev/shm when it is a writable directory, else the temporary directory."""
  shm = pathlib.Path("/dev/shm")
  return str(shm) if shm.is_dir() and os.access(shm, os.W_OK | os.X_OK) else tempfile.gettempdir()


def hbm_lanes(b: Bundle) -> int:
  """Lanes of HBM payload a run of `b` moves: its preloads and its hbm dumps."""
  return sum(t.size for _, t in b.hbm) + sum(c for k, _, c in b.dumps if k == "hbm") * b.config.lanes


def side_file(kind: str, where: str | None = None) -> str:
  """A new empty side file (removed at exit unless remove()d before)."""
  return _side_file(kind, where)


def remove(path: str) -> None:
  """Remove a side file (no error if it is gone)."""
  _remove(path)


def _side_file(kind: str, where: str | None) -> str:
  fd, path = tempfile.mkstemp(prefix=f"tinytpu-{os.getpid()}-", suffix=f".{kind}.bin", dir=where or side_dir())
  os.close(fd)
  _LIVE.add(path)
  return path


def _remove(path: str) -> None:
  try:
    os.unlink(path)
  except FileNotFoundError:
    pass
  _LIVE.discard(path)


@atexit.register
def _remove_all() -> None:
  for p in list(_LIVE):
    _remove(p)


class Transfer:
  """One bundle on its way to a runner: `text` (v1, or v2 with side files when `binary`, which
  defaults to hbm_lanes(b) >= BINARY_MIN_LANES), `resultfile` (None unless v2 with hbm dumps), and
  result(out) to read the runner's answer. A context manager: closing removes the side files.
  `binfile`: a side file to overwrite instead of a new one (a Server reuses its own: rewriting pages
  costs less than allocating them); it stays when the Transfer closes. The result file is new every
  time (the Result maps it)."""

  def __init__(self, b: Bundle, binary: bool | None = None, where: str | None = None, binfile: str | None = None):
    self.config = b.config
    self.binfile = self.resultfile = None
    self._own_binfile = binfile is None
    self.version = 2 if (hbm_lanes(b) >= BINARY_MIN_LANES if binary is None else binary) else 1
    b = dataclasses.replace(b, resultfile=None)  # the bundle's own transport is not this one's
    try:
      if self.version == 2:
        self.binfile = (_side_file("in", where) if binfile is None else binfile) if b.hbm else None
        self.resultfile = _side_file("out", where) if any(k == "hbm" for k, _, _ in b.dumps) else None
      self.text = bundle.write(b, version=self.version, binfile=self.binfile, resultfile=self.resultfile)
    except BaseException:
      self.close()
      raise

  def result(self, out: str) -> Result:
    """The runner's result text (and the result file, mapped: the file is this Transfer's own) as a
    Result; raises BundleError on bad output."""
    return bundle.parse_result(out, self.config, self.resultfile, mapped=True)

  def close(self) -> None:
    for p in (self.binfile if self._own_binfile else None, self.resultfile):
      if p is not None:
        _remove(p)

  def __enter__(self) -> Transfer:
    return self

  def __exit__(self, *exc) -> None:
    self.close()


_RESULTFILE = re.compile(r"^[ \t]*resultfile[ \t]+([^\s#;]+)", re.M)


def resultfile_of(text: str) -> str | None:
  """The `resultfile` a v2 bundle text names (the runner writes its hbm dumps there), or None."""
  if "resultfile" not in text:
    return None
  m = _RESULTFILE.search(text)
  return m[1] if m else None


# ---------------------------------------------------------------------------------------------
def measure_transfer(mb: int = 16, config: Config = DEFAULT, cosim: bool = True, seed: int = 0, runs: int = 3) -> dict:
  """Time moving an `mb` MB HBM region as bundle v2; every figure in milliseconds.

  Python side: `write_ms` (bundle text and a new side file), `parse_ms` (bundle.parse with the side
  file: what a Python runner pays), `result_write_ms` (format_result into a result file), `result_read_ms`
  (parse_result of it: mapped, so the pages are paid when read); `python_ms` = write + parse + result read.

  Co-simulation (`cosim`), through the shared server of `config` (Server.run_bundle, which rewrites
  one input side file), each from the call to the Result: `cosim_in_first_ms`, the region to the
  sim the first time (a new side file), `cosim_in_ms`, the same once the side file exists (median of
  `runs`): the host-to-sim transfer (write, the binary mapping the side file and preloading its HBM
  store, reset and HALT, two one-tile dumps checked); `cosim_roundtrip_ms`, the region in and all of
  it dumped back through the result file (median of `runs`). `cosim_ok`: every tile came back intact;
  `cosim_error` says why the co-sim leg did not run. `ok`: every check passed."""
  from tinytpu import asm
  tiles = mb * (1 << 20) // (config.lanes * 4)
  if tiles < 1 or tiles > config.HBM_TILES:
    raise ValueError(f"measure_transfer: {mb} MB is {tiles} tiles, HBM holds [1, {config.HBM_TILES}] (HBM_TILES)")
  data = np.random.default_rng(seed).integers(0, 1 << 32, (tiles, config.N, config.N), dtype=np.uint64).astype(np.uint32)
  halt = asm.assemble("HALT", config.N)
  b = Bundle(config, program=halt, hbm=[(0, data)], dumps=[("hbm", 0, tiles)], max_cycles=1000)
  out: dict = {"mb": mb, "lanes": int(data.size), "tiles": tiles}
  ms = lambda a, z: round((z - a) * 1e3, 2)
  t0 = time.perf_counter()
  with Transfer(b, binary=True) as t:
    t1 = time.perf_counter()
    back = bundle.parse(t.text, config)
    t2 = time.perf_counter()
    text = bundle.format_result(Result([("hbm", 0, back.hbm[0][1])], 1, {}, "ok"), t.resultfile)
    t3 = time.perf_counter()
    got = t.result(text)
    t4 = time.perf_counter()
    ok = len(back.hbm) == 1 and np.array_equal(back.hbm[0][1], data) and np.array_equal(got.dumps[0][2], data)
  out.update(write_ms=ms(t0, t1), parse_ms=ms(t1, t2), result_write_ms=ms(t2, t3), result_read_ms=ms(t3, t4),
             python_ms=round(ms(t0, t1) + ms(t1, t2) + ms(t3, t4), 2), python_ok=bool(ok))
  if cosim:
    try:
      from tinytpu import cosim as _cosim
      srv = _cosim.server(config)
      srv.run_bundle(Bundle(config, program=halt, max_cycles=1000))  # a started server, outside the timing
      one_way = Bundle(config, program=halt, hbm=[(0, data)], dumps=[("hbm", 0, 1), ("hbm", tiles - 1, 1)], max_cycles=1000)
      good = True
      times: dict[str, list[float]] = {"in": [], "rt": []}
      for what, bb in (("in", one_way), ("rt", b)):
        for _ in range(1 + runs if what == "in" else runs):
          t0 = time.perf_counter()
          r = srv.run_bundle(bb)
          times[what].append(ms(t0, time.perf_counter()))
          exp = [data[:1], data[-1:]] if what == "in" else [data]
          good = good and r.status == "ok" and len(r.dumps) == len(exp) and all(np.array_equal(d[2], e) for d, e in zip(r.dumps, exp))
      med = lambda v: float(np.median(v))
      out.update(cosim_in_first_ms=times["in"][0], cosim_in_ms=med(times["in"][1:]), cosim_roundtrip_ms=med(times["rt"]), cosim_ok=bool(good))
      ok = ok and good
    except Exception as e:  # noqa: BLE001  the bench reports why the co-sim leg did not run
      out["cosim_error"] = f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"
      ok = False
  out["ok"] = bool(ok)
  return out
