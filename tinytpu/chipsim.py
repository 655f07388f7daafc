"""The two-core chip on the RTL (doc/chip.md): a Verilator build of rtl/sim/chip/sim_chip.sv
(rtl/chip.sv: two TensorCores, two NoC rings, the HBM) with its C++ main rtl/sim/chip/tinytpu_chip.cpp
and the single-core bundle reader, one per configuration under build/<config.name>/chip/, built
like tinytpu.cosim's binary (content-hashed stamp, a file lock).

  build(config) -> path of the binary
  run_chip(ChipBundle | text, config=None, trace=None, check=False) -> ChipResult  (RTL)
  run_golden(ChipBundle | text, check=False) -> ChipResult                       (golden/chip.py)
  Server(config): one process running chip bundles back to back; server(config) the shared one

A core that is still running when the watchdog fires reports `timeout` at its pc; when one of them
waits on a SIG.WAIT, ChipResult.deadlock says where every core is (chipbundle.deadlock_report), and check=True
raises ChipDeadlock with it."""
from __future__ import annotations

import atexit
import os
import re
import subprocess

from tinytpu import chipbundle, cosim, tools
from tinytpu.chipbundle import ChipBundle, ChipDeadlock, ChipResult
from tinytpu.config import DEFAULT, Config
from tinytpu.records import BundleError

CHIP = tools.RTL / "sim" / "chip"


def _sources() -> list:
  return tools.rtl_sources() + [CHIP / "sim_chip.sv", CHIP / "tinytpu_chip.cpp", cosim.SIM / "bundle_reader.cpp",
                                cosim.SIM / "hbm_store.cpp"]


def params(config: Config) -> dict[str, int]:
  """The -G parameters of sim_chip: the core's and HBM's (sv_params) and the rings' (noc_params)."""
  noc = config.noc_params()
  return {**config.sv_params(), "NOC_NODES": noc["NODES"], "NOC_LINK_LATENCY": noc["LINK_LATENCY"]}


def build(config: Config = DEFAULT, trace: bool = False) -> str:
  """Build (or reuse) the chip co-sim binary of `config` (cosim.verilate); returns its path."""
  exe, _ = cosim.verilate("sim_chip", [f"-G{k}={v}" for k, v in params(config).items()], _sources(),
                          tools.BUILD / config.name / ("chip-trace" if trace else "chip"), "tinytpu-chip", cosim._sim_config_h(config),
                          tools.BUILD / f"{config.name}.chip{'.trace' if trace else ''}.lock", trace, "chip co-sim")
  return str(exe)


def _finish(cb: ChipBundle, r: ChipResult, check: bool) -> ChipResult:
  r.deadlock = chipbundle.deadlock_report(cb, r)
  if check and r.deadlock:
    raise ChipDeadlock(f"deadlock: {r.deadlock}")
  return r


def _bundle(b: ChipBundle | str, config: Config | None) -> ChipBundle:
  return b if isinstance(b, ChipBundle) else chipbundle.parse(b, config)


def _answer(out: str, err: str, rc: int, config: Config) -> ChipResult:
  if rc == 2:
    m = re.match(r"error line (\d+): (.*)", (err or out).strip().splitlines()[-1] if (err or out).strip() else "")
    if m:
      raise BundleError(int(m[1]), m[2])
    raise RuntimeError(f"chip co-sim failed (exit {rc}): {err or out}")
  if rc not in (0, 1):
    raise RuntimeError(f"chip co-sim crashed (exit {rc}):\n{out}\n{err}")
  return chipbundle.parse_chip_result(out, config)


def run_raw(text: str, config: Config = DEFAULT) -> tuple[int, str, str]:
  """The binary's exit code, stdout and stderr for a chip bundle text given as is."""
  r = subprocess.run([build(config), "-"], input=text, capture_output=True, text=True, env=cosim.sim_env())
  return r.returncode, r.stdout, r.stderr


def run_chip(b: ChipBundle | str, config: Config | None = None, trace: str | os.PathLike | None = None,
             check: bool = False) -> ChipResult:
  """Run a chip bundle on the RTL (a text goes through chipbundle.parse first: `asm` records)."""
  cb = _bundle(b, config)
  if trace is None:
    return _finish(cb, server(cb.config).run(cb), check)
  exe = build(cb.config, trace=True)
  r = subprocess.run([exe, "--trace", str(trace), "-"], input=chipbundle.write(cb), capture_output=True, text=True, env=cosim.sim_env())
  return _finish(cb, _answer(r.stdout, r.stderr, r.returncode, cb.config), check)


def run_golden(b: ChipBundle | str, config: Config | None = None, check: bool = False) -> ChipResult:
  from tinytpu.golden import chip as golden_chip
  cb = _bundle(b, config)
  return golden_chip.run(cb, check=check)


class Server:
  """One chip co-sim process running chip bundles back to back (reset between them)."""
  def __init__(self, config: Config = DEFAULT):
    self.config = config
    self.proc = subprocess.Popen([build(config), "--server"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=cosim.sim_env())

  def run(self, cb: ChipBundle | str) -> ChipResult:
    text = cb if isinstance(cb, str) else chipbundle.write(cb)
    rc, out = cosim.exchange(self.proc, text, "chip co-sim")
    return _answer(out, "", rc, self.config)

  def close(self) -> None:
    if self.proc.poll() is None:
      self.proc.stdin.close()
      self.proc.wait(timeout=30)


_POOL: dict[Config, Server] = {}


def server(config: Config = DEFAULT) -> Server:
  srv = _POOL.get(config)
  if srv is None or srv.proc.poll() is not None:
    srv = _POOL[config] = Server(config)
  return srv


@atexit.register
def close_servers() -> None:
  for srv in list(_POOL.values()):
    try: srv.close()
    except Exception: srv.proc.kill()
  _POOL.clear()
