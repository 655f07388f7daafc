"""`make bench` / `python -m tinytpu bench [--json out.json]`: the benchmark suite of
../shared/spec/benchmarks.md through the tinygrad backend, plus co-sim speed, kernel overhead and
golden-model speed. Benchmarks measure; nothing here is asserted by a test.

Appends a row to doc/benchmark_history.tsv and redraws doc/benchmark_history.png."""
from __future__ import annotations

import argparse
import json
import math
import os
import pathlib
import statistics
import subprocess
import sys
import time

import numpy as np

from tinytpu import tools

ROOT = tools.ROOT
HISTORY = ROOT / "doc" / "benchmark_history.tsv"
PLOT = ROOT / "doc" / "benchmark_history.png"
# the reference project's published exec-cycle figures (benchmarks.md §3): name -> elems/cycle
REFERENCE_EXEC = {"add_16": 1.33, "add_256": 1.45, "relu_64": 1.94, "reshape_64": 3.05, "sum_16_scalar": 1.78, "gemm_1x4x4": 1.00}
CHIP_DEVS = ("TINYTPU:0", "TINYTPU:1")
FIRST_11 = ["add_16", "add_256", "relu_64", "reshape_64", "sum_16_scalar", "sum_256_scalar", "rowsum_8x8", "colsum_8x8",
            "gemm_1x4x4", "gemm_4x4x4", "gemm_4x8x4"]


def _suite():
  """name -> (build inputs, compute, work elements, MACs or 0). Inputs are realised before timing."""
  from tinygrad import Tensor, dtypes
  D = "TINYTPU"
  rng = np.random.default_rng(0)
  i32 = lambda a: Tensor(np.asarray(a, dtype=np.int32), device=D)
  i8 = lambda *s: Tensor(rng.integers(-128, 128, s).astype(np.int8), device=D).cast(dtypes.int32)
  f32 = lambda *s: Tensor(rng.standard_normal(s).astype(np.float32), device=D)
  S = {
    "add_16": (lambda: (i32(np.arange(16)), i32(np.arange(16))), lambda a, b: a + b, 16, 0),
    "add_256": (lambda: (i32(np.arange(256)), i32(np.arange(256))), lambda a, b: a + b, 256, 0),
    "relu_64": (lambda: (i32(np.arange(64) - 32),), lambda a: a.relu(), 64, 0),
    "reshape_64": (lambda: (i32(np.arange(64)),), lambda a: a.reshape(8, 8).clone(), 64, 0),
    "sum_16_scalar": (lambda: (i32(np.arange(16)),), lambda a: a.sum(), 16, 0),
    "sum_256_scalar": (lambda: (i32(np.arange(256)),), lambda a: a.sum(), 256, 0),
    "rowsum_8x8": (lambda: (i32(np.arange(64).reshape(8, 8)),), lambda a: a.sum(axis=1), 64, 0),
    "colsum_8x8": (lambda: (i32(np.arange(64).reshape(8, 8)),), lambda a: a.sum(axis=0), 64, 0),
    "gemm_1x4x4": (lambda: (i32([[1, 2, 3, 4]]), i32(np.eye(4))), lambda a, b: a @ b, 16, 16),
    "gemm_4x4x4": (lambda: (i32(np.arange(16).reshape(4, 4)), i32(np.eye(4))), lambda a, b: a @ b, 64, 64),
    "gemm_4x8x4": (lambda: (i32(np.arange(32).reshape(4, 8)), i32(np.ones((8, 4)))), lambda a, b: a @ b, 128, 128),
    "gemm_64x64x64": (lambda: (i8(64, 64), i8(64, 64)), lambda a, b: a @ b, 64 ** 3, 64 ** 3),
    "gemm_256x256x256": (lambda: (i8(256, 256), i8(256, 256)), lambda a, b: a @ b, 256 ** 3, 256 ** 3),
    # int8 MLP, batch 16: the hidden layer is requantised to int8 (>> 8, clipped) so the second matmul runs on the MXU too
    "mlp_784_128_10": (lambda: (i8(16, 784), i8(784, 128), i32(rng.integers(-5000, 5000, 128)), i8(128, 10)),
                       lambda x, w1, b1, w2: ((x @ w1 + b1).relu() >> 8).minimum(127) @ w2,
                       16 * 784 * 128 + 16 * 128 * 10, 16 * 784 * 128 + 16 * 128 * 10),
    # int8 convolutions: cin, kh, kw reduce together on the MXU (implicit GEMMs)
    "conv_int8_8x16x16_k3": (lambda: (i8(1, 8, 16, 16), i8(16, 8, 3, 3)), lambda x, w: x.conv2d(w), 16 * 14 * 14, 16 * 14 * 14 * 8 * 9),
    "conv_int8_32x32x32_k3": (lambda: (i8(1, 32, 32, 32), i8(32, 32, 3, 3)), lambda x, w: x.conv2d(w), 32 * 30 * 30, 32 * 30 * 30 * 32 * 9),
    # the CNN demo's int8 network (tinytpu/demo_cnn.py) on a batch of 64 images, random weights
    "cnn_digits": (lambda: (_cnn_prepare(), Tensor(rng.integers(0, 17, (64, 1, 8, 8)).astype(np.int8), device=D).cast(dtypes.int32))[1:],
                   lambda x: _CNN["model"](x), 64, 64 * _cnn_macs()),
    # LeNet-5 (int8 weights and activations, requantised by >> 8 and clipped like mlp_784_128_10), one 28x28 image
    "lenet5_int8": (lambda: (i8(1, 1, 28, 28), i8(6, 1, 5, 5), i8(16, 6, 5, 5), i8(400, 120), i8(120, 84), i8(84, 10)),
                    lambda x, c1, c2, f1, f2, f3: _lenet(x, c1, c2, f1, f2, f3), 1, _LENET_MACS),
    # from HBM (doc/hbm.md): an int32 add of 1M elements streams 3 tiles through the DMA per tile computed
    "add_1M": (lambda: (i32(np.arange(1 << 20)), i32(np.arange(1 << 20)[::-1].copy())), lambda a, b: a + b, 1 << 20, 0),
    # the int8 MLP at batch 256
    "mlp_784_128_10_b256": (lambda: (i8(256, 784), i8(784, 128), i32(rng.integers(-5000, 5000, 128)), i8(128, 10)),
                            lambda x, w1, b1, w2: ((x @ w1 + b1).relu() >> 8).minimum(127) @ w2,
                            256 * 784 * 128 + 256 * 128 * 10, 256 * 784 * 128 + 256 * 128 * 10),
    "gemm_1024x1024x1024": (lambda: (i8(1024, 1024), i8(1024, 1024)), lambda a, b: a @ b, 1024 ** 3, 1024 ** 3),
    "gemm_512x512x512": (lambda: (i8(512, 512), i8(512, 512)), lambda a, b: a @ b, 512 ** 3, 512 ** 3),
    # the same on the two-core chip (doc/chip.md): A's rows split over TINYTPU:0 and TINYTPU:1, B on both, one chip launch
    "gemm_512x512x512_sharded": (lambda: (i8(512, 512).shard(CHIP_DEVS, axis=0), i8(512, 512).to(CHIP_DEVS)), lambda a, b: a @ b,
                                 512 ** 3, 512 ** 3),
    # bfloat16 buffers on the MXU's bf16 mode (MMUL.BF16: exact products, fp32 sums, a bf16 result)
    "gemm_bf16_256x256x256": (lambda: (f32(256, 256).cast(dtypes.bfloat16), f32(256, 256).cast(dtypes.bfloat16)), lambda a, b: a @ b,
                              256 ** 3, 256 ** 3),
    "softmax_16x64": (lambda: (f32(16, 64),), lambda a: a.softmax(1), 16 * 64, 0),
    # tinygrad's nn.Embedding(10000, 64), 256 bags of 16 summed (emb(idx).sum(1)): EMB.FBAG on the SparseCore
    # (backend/embedding.py); elems/cycle = rows gathered per cycle (the embedding_bag bench below: the same lookup by hand)
    "embedding_10000x64_bag16": (lambda: (f32(10000, 64), Tensor(rng.integers(0, 10000, (256, 16)).astype(np.int32), device=D)),
                                 _embedding_bag, 256 * 16, 0),
    "elementwise_fp32_4096": (lambda: (f32(4096), f32(4096), f32(4096)), lambda x, y, z: x * y + z.exp2(), 4096, 0),
  }
  return S


def _embedding_bag(table, idx):
  from tinygrad import nn
  emb = nn.Embedding(*table.shape)
  emb.weight = table
  return emb(idx).sum(1)


def _lenet(x, c1, c2, f1, f2, f3):
  q = lambda t: (t >> 8).clip(0, 127)  # noqa: E731  ReLU and requantise to int8
  h = q(x.conv2d(c1, padding=2)).max_pool2d(2)
  h = q(h.conv2d(c2)).max_pool2d(2).reshape(1, 400)
  return q(q(h @ f1) @ f2) @ f3


_LENET_MACS = 28 * 28 * 6 * 25 + 10 * 10 * 16 * 6 * 25 + 400 * 120 + 120 * 84 + 84 * 10

_CNN: dict = {}


def _cnn_prepare():
  """The CNN's weights on the device before the timed run."""
  from tinytpu import demo_cnn
  _CNN["model"] = demo_cnn.tinytpu_model(demo_cnn.random_quantnet())


def _cnn_macs() -> int:
  from tinytpu import demo_cnn
  return demo_cnn.macs_per_image()


# kernels run at another configuration, each in its own process (the backend's configuration is fixed per process)
# the backend's default is the architecture's 64 KB VMEM (1024 tiles at N = 4: operands stream from
# HBM); the @2MB rows hold every operand of these kernels resident in a 2 MB VMEM, the streaming's cost
RESIDENT_VMEM = "VMEM_TILES=32768 PSUM_TILES=256"
OTHER_CONFIGS = {"gemm_256x256x256@N16": ("gemm_256x256x256", "N=16 VMEM_TILES=2048 PSUM_TILES=256"),
                 "gemm_256x256x256@2MB": ("gemm_256x256x256", RESIDENT_VMEM),
                 "conv_int8_8x16x16_k3@2MB": ("conv_int8_8x16x16_k3", RESIDENT_VMEM),
                 "conv_int8_32x32x32_k3@2MB": ("conv_int8_32x32x32_k3", RESIDENT_VMEM),
                 "lenet5_int8@2MB": ("lenet5_int8", RESIDENT_VMEM),
                 "cnn_digits@2MB": ("cnn_digits", RESIDENT_VMEM),
                 # the default VMEM (1024 tiles, 1 MB at N = 16) with the backend's 256 PSUM tiles
                 "gemm_1024x1024x1024@N16": ("gemm_1024x1024x1024", "N=16 PSUM_TILES=256"),
                 # TINYTPU is the chip's core 0 (TINYTPU_CHIP=1), the backend's configuration
                 "gemm_512x512x512_sharded": ("gemm_512x512x512_sharded", None)}
CHIP_KERNELS = ("gemm_512x512x512_sharded",)  # run with TINYTPU_CHIP=1
SPEEDUPS = {"gemm_512x512x512_sharded": "gemm_512x512x512"}  # two cores against one: the row's `speedup`
# run only through OTHER_CONFIGS (too slow at N = 4)
ONLY_ELSEWHERE = ("gemm_1024x1024x1024", "gemm_512x512x512_sharded")
# run only when named with --only (none since gemm_1024x1024x1024@N16 runs with 256 PSUM tiles: its
# row groups of 16 tiles keep the MXU at 0.99, about 10 minutes of the N = 16 co-sim; at 64 PSUM
# tiles its groups were one row tile and it did not finish in 50 minutes)
ON_REQUEST: tuple[str, ...] = ()


def run_elsewhere(name: str) -> dict:
  kernel, config = OTHER_CONFIGS[name]
  env = {**os.environ, **({"TINYTPU_BACKEND_CONFIG": config} if config else {}), **({"TINYTPU_CHIP": "1"} if name in CHIP_KERNELS else {})}
  r = subprocess.run([sys.executable, "-m", "tinytpu.bench", "--child", kernel], capture_output=True, text=True, env=env)
  if r.returncode != 0:
    raise RuntimeError(f"{config}: {(r.stderr or r.stdout).strip().splitlines()[-1:]}")
  return {**json.loads(r.stdout.strip().splitlines()[-1]), "name": name}


def run_kernel(name, build, compute, elems, macs, N):
  """One kernel's row; on the chip (sharded inputs) its cycles are the chip launches' (both cores
  at once), MAC utilisation over the cores that ran, the roofline's compute bound per core and its
  bandwidth bound the shared HBM's."""
  from tinytpu.backend import chiplaunch, runner
  from tinytpu.backend.device import backend_config
  ins = [t.realize() for t in build()]
  chiplaunch.flush()
  runner.reset_stats()
  runs = list(runner.CHIP_RUNS)
  compute(*ins).realize()
  chiplaunch.flush()
  cycles = runner.STATS["cycles"]
  cores = max(1, sum(r > s for r, s in zip(runner.CHIP_RUNS, runs)))
  row = {"name": name, "cycles": cycles, "kernels": runner.STATS["kernels"],
         "elems_per_cycle": elems / cycles if cycles else None} | ({"cores": cores} if cores > 1 else {})
  if macs:
    row["mac_util"] = macs / (cores * N * N) / cycles if cycles else None
  return row | roofline(cycles, macs // cores, runner.STATS.get("dma_tiles"), N, backend_config().hbm_bw)


def roofline(cycles: int, macs: int, dma_tiles: int | None, N: int, bw: float) -> dict:
  """The kernel against its two bounds: compute (MACs / N^2 per cycle, MXU kernels only) and HBM
  bandwidth (tiles the DMA moved / tiles per cycle). `bound` names the larger, `of_bound` is
  bound cycles / cycles (1.0: at the roof), `hbm_util` the share of cycles the HBM was moving a tile."""
  if not cycles or dma_tiles is None:
    return {}
  compute = macs / (N * N) if macs else 0.0
  memory = dma_tiles / bw
  out = {"dma_tiles": dma_tiles, "hbm_util": memory / cycles}
  if compute or memory:
    out |= {"bound": "compute" if compute >= memory else "bandwidth", "of_bound": max(compute, memory) / cycles}
  return out


def sim_speed(config) -> float:
  """Simulated cycles per wall second of the co-sim binary alone, on a long GEMM-heavy bundle."""
  from tinytpu import bundle, cosim
  from tinytpu.golden import bench as gbench
  b = gbench.bundle(400)
  b.config, b.max_cycles = config, 50_000_000
  text = bundle.write(b)
  exe = cosim.build(config)
  t0 = time.perf_counter()
  r = subprocess.run([str(exe), "-"], input=text, capture_output=True, text=True)
  wall = time.perf_counter() - t0
  res = bundle.parse_result(r.stdout, config)
  return res.cycles / wall


def kernel_overhead_ms(repeats: int = 15) -> float:
  """Median wall time of one small kernel end to end (render is cached after the first, as in
  tinygrad; bundle, simulate, parse) minus its simulated work at the measured sim speed."""
  from tinygrad import Tensor
  a = Tensor(np.arange(16, dtype=np.int32), device="TINYTPU").realize()
  times = []
  for _ in range(repeats + 1):
    t0 = time.perf_counter()
    (a + a).realize()  # the same kernel every time: tinygrad's caches hold its program after the first
    times.append(time.perf_counter() - t0)
  return statistics.median(times[1:]) * 1e3


def host_transfer_ms() -> dict:
  """Moving a 16 MB buffer into the co-sim's HBM and back (bundle v2's binary payloads:
  tinytpu/transport.py), in milliseconds."""
  from tinytpu import transport
  return transport.measure_transfer(mb=16)


def geomean(xs):
  xs = [x for x in xs if x]
  return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else None


def git_commit() -> str:
  r = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True)
  return r.stdout.strip() or "unknown"


def record(result: dict) -> None:
  """Append one row to the history and redraw the plot."""
  cols = ["date", "commit", "geomean_11", "geomean_6_exec", "gemm_64x64x64_mac_util", "sim_cycles_per_s", "kernel_overhead_ms", "golden_instr_per_s"]
  if not HISTORY.exists():
    HISTORY.write_text("\t".join(cols) + "\n")
  gemm = next((k.get("mac_util") for k in result["kernels"] if k["name"] == "gemm_64x64x64"), None)
  vals = [time.strftime("%Y-%m-%d"), git_commit(), result["geomean_11"], result["geomean_6_exec"], gemm,
          result["sim_cycles_per_s"], result["kernel_overhead_ms"], result["golden_instr_per_s"]]
  with HISTORY.open("a") as f:
    f.write("\t".join(f"{v:.4g}" if isinstance(v, float) else str(v) for v in vals) + "\n")
  try:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
  except ImportError:
    return
  rows = [l.split("\t") for l in HISTORY.read_text().splitlines()[1:] if l.strip()]
  fig, axes = plt.subplots(1, 3, figsize=(12, 3.2))
  for ax, (col, label) in zip(axes, [(2, "geomean elems/cycle (11)"), (3, "geomean exec elems/cycle (6)"), (5, "co-sim cycles/s")]):
    ys = [float(r[col]) if r[col] not in ("None", "") else float("nan") for r in rows]
    ax.plot(range(len(ys)), ys, marker="o")
    ax.set_title(label, fontsize=9)
    ax.set_xticks(range(len(ys)), [r[1] for r in rows], rotation=45, fontsize=7)
  fig.tight_layout()
  fig.savefig(PLOT, dpi=80)


def main(argv: list[str] | None = None) -> int:
  ap = argparse.ArgumentParser(prog="python -m tinytpu bench", description=__doc__)
  ap.add_argument("--json", help="write the results as JSON here")
  ap.add_argument("--only", help="comma-separated kernel names")
  ap.add_argument("--no-record", action="store_true", help="do not append to doc/benchmark_history.tsv")
  ap.add_argument("--child", help=argparse.SUPPRESS)  # run one kernel, print its row as JSON
  args = ap.parse_args(argv)
  os.environ.setdefault("TINYTPU_SIM", "rtl")
  from tinytpu.backend.device import backend_config, register
  register()  # the start-up hook does it too, unless TINYTPU_AUTOLOAD=0
  from tinytpu.golden import bench as gbench
  N = backend_config().N
  suite = _suite()
  if args.child:
    print(json.dumps(run_kernel(args.child, *suite[args.child], N)))
    return 0
  names = args.only.split(",") if args.only else [n for n in suite if n not in ONLY_ELSEWHERE] + [n for n in OTHER_CONFIGS if n not in ON_REQUEST]
  if not args.only and ON_REQUEST:
    print(f"not run unless named with --only: {', '.join(ON_REQUEST)} (slow, see ON_REQUEST)")
  kernels, by_name = [], {}
  print(f"TinyTPU benchmarks, N={N}, runner {os.environ['TINYTPU_SIM']}")
  print(f"{'kernel':24s} {'cycles':>10s} {'kernels':>7s} {'elems/cycle':>11s} {'MAC util':>8s} {'reference':>9s}")
  for name in names:
    try:
      row = run_elsewhere(name) if name in OTHER_CONFIGS else run_kernel(name, *suite[name], N)
    except Exception as e:  # a benchmark that cannot run is reported, not hidden
      row = {"name": name, "cycles": None, "elems_per_cycle": None, "error": f"{type(e).__name__}: {e}"[:200]}
    kernels.append(row)
    epc, util = row.get("elems_per_cycle"), row.get("mac_util")
    print(f"{name:24s} {row['cycles'] if row['cycles'] is not None else 'ERROR':>10} {row.get('kernels', ''):>7} "
          f"{(f'{epc:.3f}' if epc else '-'):>11s} {(f'{util:.3f}' if util else '-'):>8s} {REFERENCE_EXEC.get(name, ''):>9}"
          + (f"  {row['error']}" if "error" in row else ""))
    if name in SPEEDUPS and row.get("cycles") and by_name.get(SPEEDUPS[name], {}).get("cycles"):
      row["speedup"] = by_name[SPEEDUPS[name]]["cycles"] / row["cycles"]
      print(f"{'':24s} {row.get('cores', 1)} cores: {row['speedup']:.2f}x the cycles of {SPEEDUPS[name]} on one core")
    by_name[name] = row
    if row.get("bound"):
      print(f"{'':24s} roofline: {row['bound']}-bound, {row['of_bound']:.2f} of the bound; HBM {row['dma_tiles']} tiles, "
            f"{row['hbm_util']:.2f} of its bandwidth")
  by = {k["name"]: k for k in kernels}
  g11 = geomean([by[n]["elems_per_cycle"] for n in FIRST_11 if n in by])
  g6 = geomean([by[n]["elems_per_cycle"] for n in REFERENCE_EXEC if n in by])
  speed = sim_speed(backend_config()) if os.environ["TINYTPU_SIM"] != "golden" else None
  overhead = kernel_overhead_ms()
  gips = gbench.measure()
  transfer = host_transfer_ms()
  result = {"kernels": kernels, "geomean_11": g11, "geomean_6_exec": g6, "sim_cycles_per_s": speed,
            "kernel_overhead_ms": overhead, "golden_instr_per_s": gips, "N": N, "runner": os.environ["TINYTPU_SIM"],
            "host_transfer_16mb": transfer}
  fmt = lambda v, f: format(v, f) if v is not None else "-"
  print(f"geomean elems/cycle, first 11: {fmt(g11, '.3f')} (reference total-cycle geomean 0.663)")
  print(f"geomean exec elems/cycle, 6 with reference figures: {fmt(g6, '.3f')} (reference 1.65)")
  print(f"co-sim speed: {fmt(speed, ',.0f')} cycles/s   kernel overhead: {overhead:.1f} ms   golden: {gips:,.0f} instr/s")
  if transfer:
    print("host-to-sim transfer of 16 MB: " + ", ".join(f"{k} {v:.1f} ms" if isinstance(v, float) else f"{k} {v}" for k, v in transfer.items()))
  if not args.only:  # the on-chip network (doc/noc.md): its curve and saturation utilisation
    from tinytpu import noc_bench
    try:
      noc = noc_bench.measure()
      print(noc_bench.report(noc))
      result["noc"] = noc
      if not args.no_record and tools.CLONE is not None:
        noc_bench.CURVE_JSON.write_text(json.dumps(noc, indent=1) + "\n")
        noc_bench.plot(noc)
    except (AssertionError, OSError) as e:  # reported, not hidden
      print(f"noc bench: ERROR {str(e).splitlines()[0][:200]}")
      result["noc"] = {"error": str(e)[:500]}
  if not args.only:  # --- SparseCore (doc/sparsecore.md): embedding_bag, the SparseCore against the VPU path ---
    from tinytpu import emb_bench
    try:
      emb = emb_bench.measure()
      print(emb_bench.report(emb))
      result["embedding_bag"] = emb
    except (AssertionError, OSError) as e:
      print(f"embedding_bag: ERROR {str(e).splitlines()[0][:200]}")
      result["embedding_bag"] = {"error": str(e)[:500]}
  if args.json:
    pathlib.Path(args.json).write_text(json.dumps(result, indent=1))
  if not args.no_record and tools.CLONE is None:
    print("not a clone: the history (doc/benchmark_history.tsv) is not recorded")
  elif not args.no_record:
    record(result)
  return 0


if __name__ == "__main__":
  sys.exit(main())
