"""The embedding_bag benchmark (`make bench`, issue 17): a 10k-row int32 table of 64-wide rows
(4 tiles at N = 4), 64 bags of 16 indices, on the RTL co-simulation, two ways:

- the SparseCore: one EMB.BAG (doc/sparsecore.md);
- the VPU path: an assembly program that copies the index list to VMEM (DMA.IN), then per bag
  extracts each index (VEXTRACT), copies its row (one DMA.IN of 4 tiles) and sums the rows with
  VLD + VADD, software-pipelined (bag b+1's rows are copied while bag b is summed, two VMEM
  buffers), each pooled row back to HBM by DMA.OUT. VGATHER does not help here: a row is whole
  tiles, and the table (40000 tiles) does not fit VMEM, so the row copies are the gather.

Both results are checked against the golden interpreter (the same pooled rows); reported: cycles
and rows (lookups) per cycle. The HBM moves one tile a cycle, so either is bounded by 1 / (row
tiles + a little) rows a cycle."""
from __future__ import annotations

import numpy as np

from tinytpu import asm, bundle, cosim, randemb
from tinytpu.config import DEFAULT, Config

ROWS, WIDTH_ELEMS, BAG, BAGS = 10_000, 64, 16, 64


def _data(cfg: Config, seed: int = 0):
  rng = np.random.default_rng(seed)
  L = cfg.N * cfg.N
  W = -(-WIDTH_ELEMS // L)
  table = rng.integers(-1000, 1000, (ROWS, W, cfg.N, cfg.N)).astype(np.int32).view(np.uint32)
  ind = rng.integers(0, ROWS, BAGS * BAG)
  return table, ind, W


def vpu_program(cfg: Config, W: int, tbase: int, idx: int, dst: int) -> str:
  """The VPU-path TASM (see the module doc); VMEM: index tiles at 0.., row buffers A/B, staging."""
  L = cfg.N * cfg.N
  assert BAG == L, "one index tile per bag"
  itiles = BAGS
  bufa, bufb = itiles, itiles + BAG * W
  stage = bufb + BAG * W
  sh = W.bit_length() - 1
  assert 1 << sh == W
  def fetch(src_off: int) -> list[str]:  # bag's rows into buffer s14 (index tile at s12 + src_off)
    out = [f"  VLD v1, [s12 + {src_off}]"]
    for j in range(BAG):
      out += [f"  VEXTRACT s1, v1, {j // cfg.N}, {j % cfg.N}", "  SSHL s1, s1, s2", "  SADD s1, s1, s10",
              f"  DMA.IN [s14 + {j * W}], [s1 + 0], {W}"]
    return out
  def accumulate() -> list[str]:  # buffer s13 summed into staging s9, copied to HBM s11
    out = []
    for k in range(W):
      out.append(f"  VLD v2, [s13 + {k}]")
      for j in range(1, BAG):
        out += [f"  VLD v{3 + j % 2}, [s13 + {j * W + k}]", f"  VADD v2, v2, v{3 + j % 2}"]
      out.append(f"  VST v2, [s9 + {k}]")
    out.append(f"  DMA.OUT [s11 + 0], [s9 + 0], {W}")
    return out
  swap = ["  SSUB s13, s15, s13", "  SSUB s14, s15, s14", "  SSUB s9, s8, s9", f"  SADDI s11, s11, {W}", "  SADDI s12, s12, 1"]
  lines = [f"  LI s10, {tbase}", f"  LI s11, {dst}", f"  LI s1, {idx}", f"  DMA.IN [s0 + 0], [s1 + 0], {itiles}",
           f"  LI s2, {sh}", "  LI s12, 0", f"  LI s13, {bufa}", f"  LI s14, {bufb}", f"  LI s15, {bufa + bufb}",
           f"  LI s9, {stage}", f"  LI s8, {2 * stage + W}",
           "  SSUB s14, s15, s14"]  # the prologue fetches bag 0 into buffer A
  lines += fetch(0) + ["  SSUB s14, s15, s14"]
  body = fetch(1) + accumulate() + swap
  lines += [f"  LOOPI {BAGS - 1}, {len(body) + 1}"] + body + accumulate() + ["  DMA.WAIT", "  HALT"]
  return "\n".join(lines)


def measure(cfg: Config = DEFAULT) -> dict:
  table, ind, W = _data(cfg)
  tbase, idx, dst_sc, dst_vpu = 0, ROWS * W, ROWS * W + 100, ROWS * W + 100 + BAGS * W
  cosim.build(cfg)
  b_sc = randemb.bag_bundle(table, ind, BAG, False, cfg, tbase=tbase, idx=idx, dst=dst_sc, max_cycles=2_000_000)
  b_vpu = asm.assemble_bundle(vpu_program(cfg, W, tbase, idx, dst_vpu) + f"\n.dump hbm {dst_vpu} {BAGS * W}\n.run 2000000\n", cfg)
  b_vpu.hbm = b_sc.hbm
  from tinytpu.golden import interp
  out = {"rows": ROWS, "width": WIDTH_ELEMS, "bag": BAG, "bags": BAGS, "lookups": BAG * BAGS}
  want = None
  for name, b in (("sparsecore", b_sc), ("vpu", b_vpu)):
    rtl, gold = cosim.run_bundle(b, cfg), interp.run(b)
    diffs = bundle.diff_results(rtl, gold)
    got = rtl.dumps[-1][2]
    assert not diffs and rtl.status == "ok", f"embedding_bag {name}: RTL != golden: {diffs[:3]} {rtl.status} {rtl.trap}"
    if want is None: want = got
    assert np.array_equal(got, want), f"embedding_bag {name}: pooled rows differ from the SparseCore's"
    out[name] = {"cycles": rtl.cycles, "rows_per_cycle": BAG * BAGS / rtl.cycles, "instructions": rtl.perf["retired"]}
  return out


def report(res: dict) -> str:
  sc, v = res["sparsecore"], res["vpu"]
  return (f"embedding_bag ({res['rows']} x {res['width']} int32 table, {res['bags']} bags of {res['bag']}): "
          f"SparseCore {sc['cycles']} cycles, {sc['rows_per_cycle']:.3f} rows/cycle; VPU gather path (DMA + VADD) "
          f"{v['cycles']} cycles, {v['rows_per_cycle']:.3f} rows/cycle ({v['cycles'] / sc['cycles']:.2f}x the SparseCore's cycles)")


if __name__ == "__main__":
  print(report(measure()))
