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

The machinery lives in tinytpu/bundle.py (the layer the co-simulation may import) and is
re-exported here; tinytpu.cosim.run_bundle(b) and Server.run_bundle(b) use it. measure_transfer()
times a 16 MB host-to-sim transfer for the bench.
"""
from __future__ import annotations

import time

import numpy as np

from tinytpu import bundle
from tinytpu.bundle import BINARY_MIN_LANES, Transfer, hbm_lanes, remove_side_file, resultfile_of, side_dir, side_file  # noqa: F401
from tinytpu.config import DEFAULT, Config
from tinytpu.records import Bundle, Result


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
