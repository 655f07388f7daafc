"""`python -m tinytpu noc-bench [--json out.json] [--no-plot]` (also run by `make bench`): the on-chip
network (rtl/noc.sv, doc/noc.md) under uniform random traffic to the other nodes, on the RTL in its
pyuvm env (tb/noc/tests.py::NocBench, every packet checked by the scoreboard: a loss fails the run).

- the latency / throughput curve: offered load per node swept from 0.05 to 1 packet per cycle; per
  point the accepted throughput, the mean network latency (inject to eject) and the mean total
  latency (creation to eject: the source queue included), measured over a window after a warm-up;
- the saturation point (every node offering a packet every cycle): sustained link utilisation.

Writes doc/noc_curve.json and draws doc/noc_curve.png (matplotlib, as doc/benchmark_history.png;
skipped without it). Configuration: NOC_NODES and NOC_LINK_LATENCY of tinytpu.config (the backend
configuration, TINYTPU_BACKEND_CONFIG, or --config)."""
from __future__ import annotations

import argparse
import json
import os
import pathlib
import sys
import tempfile

from tinytpu import tools
from tinytpu.config import DEFAULT, Config

CURVE_JSON = tools.ROOT / "doc" / "noc_curve.json"
CURVE_PNG = tools.ROOT / "doc" / "noc_curve.png"


def measure(cfg: Config = DEFAULT, seed: int = 1) -> dict:
  """Run NocBench on the RTL; returns its JSON (points, saturation, zero-load latencies)."""
  from tinytpu.tb import kit
  srcs = [tools.RTL / "noc_fifo.sv", tools.RTL / "noc_router.sv", tools.RTL / "noc.sv"]
  with tempfile.TemporaryDirectory() as d:
    out = pathlib.Path(d) / "noc.json"
    kit.build_and_run("noc", srcs, "tinytpu.tb.noc.tests", cfg.noc_params(), testcase="NocBench", seed=seed,
                      extra_env={"TINYTPU_NOC_BENCH": str(out)})
    return json.loads(out.read_text())


def plot(res: dict, path: pathlib.Path = CURVE_PNG) -> bool:
  try:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
  except ImportError:
    return False
  pts = res["points"]
  x = [p["offered"] for p in pts]
  fig, axes = plt.subplots(1, 2, figsize=(10, 3.4))
  axes[0].plot(x, [p["accepted"] for p in pts], marker="o", label="accepted")
  axes[0].plot(x, [min(v, res["saturation"]["ideal_per_node"]) for v in x], linestyle="--", label="ideal (link bound)")
  axes[0].set_xlabel("offered load (packets / cycle / node)", fontsize=8)
  axes[0].set_title("accepted throughput (packets / cycle / node)", fontsize=9)
  axes[0].legend(fontsize=7)
  axes[1].plot(x, [p["latency_mean"] for p in pts], marker="o", label="network (inject to eject)")
  axes[1].plot(x, [p["total_latency_mean"] for p in pts], marker="s", label="total (source queue included)")
  axes[1].set_yscale("log")
  axes[1].set_xlabel("offered load (packets / cycle / node)", fontsize=8)
  axes[1].set_title("mean latency (cycles)", fontsize=9)
  axes[1].legend(fontsize=7)
  fig.suptitle(f"NoC ring, {res['nodes']} nodes, link latency {res['link_latency']}, uniform random; "
               f"saturation link utilisation {res['saturation']['link_util_mean']:.3f}", fontsize=9)
  fig.tight_layout()
  fig.savefig(path, dpi=80)
  return True


def report(res: dict) -> str:
  lines = [f"NoC ring: {res['nodes']} nodes, link latency {res['link_latency']}, {res['payload_bits']}-bit payload, {res['pattern']}",
           f"zero-load latency by hops: {res['zero_load_latency_by_hops']}",
           f"{'offered':>8s} {'accepted':>9s} {'lat mean':>9s} {'lat p99':>8s} {'total lat':>10s} {'link util':>10s} {'max inj wait':>12s}"]
  for p in res["points"]:
    f = lambda v, spec: format(v, spec) if v is not None else "-"  # noqa: E731
    lines.append(f"{p['offered']:8.2f} {p['accepted']:9.3f} {f(p['latency_mean'], '9.1f')} {f(p['latency_p99'], '8d')} "
                 f"{f(p['total_latency_mean'], '10.1f')} {sum(p['link_util']) / len(p['link_util']):10.3f} {p['max_inject_wait']:12d}")
  s = res["saturation"]
  lines.append(f"saturation: link utilisation {s['link_util_mean']:.3f} (min link {s['link_util_min']:.3f}), accepted "
               f"{s['accepted_per_node']:.3f} packets/cycle/node of the ideal {s['ideal_per_node']:.3f}, "
               f"{s['delivered']} packets delivered, none lost")
  return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
  ap = argparse.ArgumentParser(prog="python -m tinytpu noc-bench", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
  ap.add_argument("--json", help="also write the results here")
  ap.add_argument("--config", help="configuration, e.g. NOC_LINK_LATENCY=4 (default: TINYTPU_BACKEND_CONFIG or the default)")
  ap.add_argument("--seed", type=int, default=1)
  ap.add_argument("--no-record", action="store_true", help="do not write doc/noc_curve.json and doc/noc_curve.png")
  args = ap.parse_args(argv)
  cfg = Config.from_str(args.config or os.environ.get("TINYTPU_BACKEND_CONFIG", ""))
  res = measure(cfg, args.seed)
  print(report(res))
  if args.json:
    pathlib.Path(args.json).write_text(json.dumps(res, indent=1))
  if not args.no_record and tools.CLONE is not None:
    CURVE_JSON.write_text(json.dumps(res, indent=1) + "\n")
    print(f"written {CURVE_JSON}" + (f" and {CURVE_PNG}" if plot(res) else " (no matplotlib: no plot)"))
  return 0


if __name__ == "__main__":
  sys.exit(main())
