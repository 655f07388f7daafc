"""`python -m tinytpu triage model.onnx|script.py`: run a model on TINYTPU and say, kernel by kernel,
what tinygrad produced, how the backend lowered it (MXU / VPU / gather), its cycles and unit
utilisation; for a failure, the exact missing UOp, dtype or primitive and whether the fix belongs
in the backend, the hardware, tinygrad's ONNX import or the model. Ends with a one-line verdict
(../shared/spec/workflow.md §2). Exit code 0 only when the model ran end to end with no host work.

An ONNX file runs through tinygrad's OnnxRunner with random inputs of its declared shapes
(symbolic dimensions get --dim); a script runs as `__main__` with DEV=TINYTPU."""
from __future__ import annotations

import argparse
import dataclasses
import os
import re
import runpy
import sys
import traceback

import numpy as np

@dataclasses.dataclass
class KernelRow:
  name: str
  words: int
  lowering: str     # MXU, VPU or VPU+gather
  cycles: int = 0
  mxu_busy: int = 0
  vpu_ops: int = 0
  retired: int = 0


@dataclasses.dataclass
class Finding:
  where: str        # backend / hardware / tinygrad ONNX import / model / tinygrad
  what: str         # the missing UOp, dtype or primitive
  message: str


def classify(e: BaseException) -> Finding:
  """Where the fix for a failure belongs, from the exception and its traceback."""
  msg = f"{type(e).__name__}: {e}".splitlines()[0]
  frames = [f.filename for f in traceback.extract_tb(e.__traceback__)]
  if m := re.search(r"TINYTPU cannot lower (Ops\.\w+) \(([^)]*)\): (.*)", msg):
    op, dt, why = m.groups()
    hw = re.search(r"lanes are 32 bits|no 32-bit lane form|only 32-bit lane dtypes", why)
    return Finding("hardware" if hw else "backend", f"{op} on {dt}: {why}", msg)
  if "VMEM tiles, the core has" in msg:
    return Finding("hardware", "HBM/DMA: the kernel's buffers exceed VMEM (issue [4/6])", msg)
  if "more than the watchdog allows" in msg:
    return Finding("backend", "a kernel too long to run (the schedule tinygrad produced; hoisting or a better lowering)", msg)
  if "outside int8" in msg:
    return Finding("model", "MXU operands must be int8: quantise the model's weights and activations", msg)
  # the runner's KernelError: "kernel K: trap <code> at pc=P" / "timeout at pc=P" / "RTL and golden model differ"
  if "RTL and golden model differ" in msg or re.search(r"TINYTPU kernel \S+: (trap \w+|timeout) at pc=", msg):
    return Finding("backend", "the lowering emitted a program that traps or diverges (a bug: report it)", msg)
  if any("tinygrad/nn/onnx" in f for f in frames) or isinstance(e, NotImplementedError) and "onnx" in msg.lower():
    return Finding("tinygrad ONNX import", "an ONNX operator or attribute tinygrad's OnnxRunner does not implement", msg)
  if any("/tinygrad/" in f for f in frames[-3:]):
    return Finding("tinygrad", "tinygrad itself refused the program", msg)
  return Finding("model", "the model or script failed before reaching TINYTPU", msg)


class Recorder:
  """Hooks on the device: one KernelRow per launched kernel, with its counters; and every kernel
  tinygrad launched on another device (host work)."""
  def __init__(self):
    self.rows: list[KernelRow] = []
    self.host: dict[str, int] = {}  # device -> kernels launched there

  def __enter__(self):
    from tinygrad.engine import realize
    from tinytpu import asm
    from tinytpu.backend import device, runner
    self._call, self._run, self._rt = device.TinyTPUProgram.__call__, runner.run, realize.get_runtime
    rows, orig_call, orig_run, orig_rt, host = self.rows, self._call, self._run, self._rt, self.host
    def get_runtime(dev, *a, **kw):
      if (d := str(dev).split(":")[0]) != "TINYTPU":
        host[d] = host.get(d, 0) + 1
      return orig_rt(dev, *a, **kw)
    realize.get_runtime = get_runtime
    def call(prog, *a, **kw):
      text = [asm.disassemble([w], prog.kernel.N).split()[0] for w in prog.kernel.words]
      low = "MXU" if "MMUL" in text else "VPU+gather" if "VGATHER" in text or "VSCATTER" in text else "VPU"
      rows.append(KernelRow(device._plain(prog.name), len(text), low))
      return orig_call(prog, *a, **kw)
    def run(b, name="kernel"):  # single-core launches (chip launches go through runner.run_chip)
      res = orig_run(b, name)
      if rows:
        r = rows[-1]
        r.cycles, r.mxu_busy = res.cycles, res.perf.get("mxu_busy", 0)
        r.vpu_ops, r.retired = res.perf.get("vpu_ops", 0), res.perf.get("retired", 0)
      return res
    device.TinyTPUProgram.__call__, runner.run = call, run
    return self

  def __exit__(self, *exc):
    from tinygrad.engine import realize
    from tinytpu.backend import device, runner
    device.TinyTPUProgram.__call__, runner.run, realize.get_runtime = self._call, self._run, self._rt


def run_onnx(path: str, dim: int, seed: int) -> None:
  from tinygrad import Context, Tensor, dtypes
  from tinygrad.nn.onnx import OnnxRunner
  rng = np.random.default_rng(seed)
  with Context(DEV="TINYTPU"):
    runner = OnnxRunner(path)
    feeds = {}
    for name, spec in runner.graph_inputs.items():
      shape = tuple(d if isinstance(d, int) else dim for d in spec.shape)
      dt = spec.dtype
      data = rng.standard_normal(shape).astype(np.float32) if dtypes.is_float(dt) else rng.integers(0, 4, shape)
      feeds[name] = Tensor(data, device="TINYTPU").cast(dt)
    for name, out in runner(feeds).items():
      print(f"output {name}: shape {tuple(out.shape)} {out.dtype}")
      out.realize()


def run_script(path: str) -> None:
  from tinygrad import Context
  with Context(DEV="TINYTPU"):
    runpy.run_path(path, run_name="__main__")


def report(rows: list[KernelRow], findings: list[Finding], host: set[str], N: int) -> bool:
  print(f"{'kernel':32s} {'lowering':11s} {'words':>6s} {'cycles':>10s} {'MXU util':>9s} {'VPU ops/cyc':>11s}")
  for r in rows:
    util = r.mxu_busy / r.cycles if r.cycles else 0.0
    print(f"{r.name[:32]:32s} {r.lowering:11s} {r.words:6d} {r.cycles:10d} {util:9.3f} {r.vpu_ops / max(1, r.cycles):11.3f}")
  total = sum(r.cycles for r in rows)
  by = {k: sum(r.cycles for r in rows if r.lowering == k) for k in ("MXU", "VPU", "VPU+gather")}
  print(f"{len(rows)} kernels, {total} cycles: " + ", ".join(f"{k} {v} ({100 * v / max(1, total):.0f}%)" for k, v in by.items()))
  for f in findings:
    print(f"FAILED [{f.where}] {f.what}\n       {f.message}")
  if host:
    print(f"host work: tinygrad also ran on {', '.join(sorted(host))}")
  ok = not findings and not host and bool(rows)
  verdict = "ran end to end on TINYTPU with no host work" if ok else \
    "did not run end to end on TINYTPU: " + "; ".join([f"{f.where}: {f.what}" for f in findings] +
                                                       ([f"host work on {', '.join(sorted(host))}"] if host else []) +
                                                       ([] if rows or findings else ["no kernel reached TINYTPU"]))
  print(f"verdict: {verdict}")
  return ok


def main(argv: list[str] | None = None) -> int:
  ap = argparse.ArgumentParser(prog="python -m tinytpu triage", description=__doc__.split("\n\n")[0])
  ap.add_argument("target", help="an .onnx file or a Python script")
  ap.add_argument("--dim", type=int, default=1, help="the size of an ONNX input's symbolic dimensions (default 1)")
  ap.add_argument("--seed", type=int, default=0, help="seed of the random ONNX inputs")
  args = ap.parse_args(argv)
  os.environ.setdefault("TINYTPU_SIM", "rtl")
  if not os.path.isfile(args.target):
    print(f"triage: {args.target}: no such file", file=sys.stderr)
    return 2
  from tinytpu.backend.device import backend_config, register
  register()
  findings: list[Finding] = []
  with Recorder() as rec:
    try:
      if args.target.endswith(".onnx"):
        run_onnx(args.target, args.dim, args.seed)
      else:
        run_script(args.target)
    except SystemExit as e:
      if e.code not in (0, None):
        findings.append(Finding("model", f"the script exited with {e.code}", f"SystemExit: {e.code}"))
    except Exception as e:  # noqa: BLE001  every failure is reported, classified
      findings.append(classify(e))
  host = {f"{d} ({n} kernels)" for d, n in rec.host.items()}
  print(f"triage of {args.target} on TINYTPU ({os.environ['TINYTPU_SIM']}, {backend_config().name})")
  return 0 if report(rec.rows, findings, host, backend_config().N) else 1
