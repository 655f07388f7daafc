"""HBM regions in bundles (v1 `hbm` records, v2 `binfile`/`hbmbin`/`resultfile` side files,
doc/bundle.md): every rejection reason with its exact message, the same message from the C++ reader
(rtl/sim/bundle_reader.cpp, compiled here with a small driver so it is tested whatever state the RTL
build is in, and through the co-sim binary when it builds), round trips of both versions, hbm result
lines (text and binary), golden model runs of v2 bundles, tinytpu.transport and a measured 16 MB transfer."""
import os
import pathlib
import subprocess

import numpy as np
import pytest

from tinytpu import asm, bundle, transport
from tinytpu.bundle import Bundle, BundleError, Result, diff_results, format_result, parse, parse_result, write
from tinytpu.config import Config
from tinytpu.golden import interp

ROOT = pathlib.Path(__file__).resolve().parent.parent
SIM = ROOT / "rtl" / "sim"
CFG = Config(HBM_TILES=64)                 # small HBM: capacity errors are easy to reach
HDR1 = bundle.header(CFG)                  # tinytpu-bundle 1 ... HBM_TILES=64
HDR2 = bundle.header(CFG, 2)
HALT = asm.assemble("HALT")[0]
L = CFG.lanes


def tile(vals) -> str:
  return " ".join(str(int(v)) for v in np.asarray(vals).ravel())


def tiles(count: int, seed: int = 0, n: int = CFG.N) -> np.ndarray:
  return np.random.default_rng(seed).integers(0, 1 << 32, (count, n, n), dtype=np.uint64).astype(np.uint32)


ZT = tile([0] * L)

# ---------------------------------------------------------------------------------------------
# the C++ reader behind a driver: parses a bundle with a given configuration, then plays an HBM that
# holds the bundle's regions (zero elsewhere) and prints every `dump hbm` through write_hbm_dump()
DRIVER = r"""
#include <cstdlib>
#include <iostream>
#include <sstream>
#include "bundle_reader.h"
int main(int argc, char **argv) {
  if (argc != 9) return 9;
  SimConfig c{atoi(argv[1]), atoi(argv[2]), atoi(argv[3]), atoi(argv[4]), atoll(argv[5]), atoi(argv[6]), atoi(argv[7]), atoi(argv[8])};
  std::stringstream ss;
  ss << std::cin.rdbuf();
  Bundle b;
  try {
    b = parse_bundle(ss.str(), c);
  } catch (BundleError &e) {
    std::cerr << "error line " << e.line << ": " << e.why << "\n";
    return 2;
  }
  const long long L = (long long)c.N * c.N;
  std::cout << "version " << b.version << " regions " << b.hbm.size() << "\n";
  for (auto &d : b.dumps) {
    if (d.kind != "hbm") continue;
    std::vector<uint32_t> lanes((size_t)(d.count * L), 0u);
    for (auto &r : b.hbm)
      for (long long t = 0; t < r.count; t++)
        if (r.addr + t >= d.addr && r.addr + t < d.addr + d.count)
          for (long long l = 0; l < L; l++) lanes[(size_t)((r.addr + t - d.addr) * L + l)] = r.lanes[(size_t)(t * L + l)];
    write_hbm_dump(std::cout, b, d, lanes, c);
  }
  return 0;
}
"""


@pytest.fixture(scope="module")
def reader(tmp_path_factory):
  d = tmp_path_factory.mktemp("reader")
  (d / "driver.cpp").write_text(DRIVER)
  exe = d / "reader"
  r = subprocess.run(["g++", "-std=c++17", "-O1", f"-I{SIM}", str(d / "driver.cpp"), str(SIM / "bundle_reader.cpp"), "-o", str(exe)],
                     capture_output=True, text=True)
  assert r.returncode == 0, r.stderr
  return exe


def cpp(exe, text: str, cfg: Config = CFG) -> tuple[int, str, str]:
  args = [cfg.N, cfg.VMEM_TILES, cfg.PSUM_TILES, cfg.IMEM_WORDS, cfg.HBM_TILES, cfg.HBM_LATENCY, cfg.HBM_BW_NUM, cfg.HBM_BW_DEN]
  r = subprocess.run([str(exe), *map(str, args)], input=text, capture_output=True, text=True)
  return r.returncode, r.stdout, r.stderr


# ---------------------------------------------------------------------------------------------
# every rejection reason: (bundle text, line, exact message); {bin} is a 4-tile side file, {dir} a directory
def _b(*records, hdr=HDR1):
  return "\n".join([hdr, *records]) + "\n"


REJECT = {
  "hbm value count": (_b("hbm 0 1 2 3", "run 5"), 2, "hbm 0: expected 16 values (N*N, N=4), got 3"),
  "hbm no address": (_b("hbm", "run 5"), 2, "hbm needs an address and 16 values"),
  "hbm value range": (_b("hbm 1 " + ZT[:-1] + "4294967296", "run 5"), 2, "value 4294967296 out of range [-2^31, 2^32-1]"),
  "hbm address beyond capacity": (_b(f"hbm 64 {ZT}", "run 5"), 2, "hbm address 64 out of range [0, 64)"),
  "hbm address negative": (_b(f"hbm -1 {ZT}", "run 5"), 2, "hbm address -1 out of range [0, 64)"),
  "hbm duplicate": (_b(f"hbm 3 {ZT}", f"hbm 4 {ZT}", f"hbm 3 {ZT}", "run 5"), 4, "hbm 3 already preloaded on line 2"),
  "dump hbm beyond capacity": (_b("dump hbm 60 8", "run 5"), 2, "dump hbm 60..67 out of range [0, 64)"),
  "dump hbm count": (_b("dump hbm 3 0", "run 5"), 2, "dump hbm count 0 must be >= 1"),
  "dump hbm args": (_b("dump hbm 3", "run 5"), 2, "`dump hbm` takes an address and a tile count, got 1 values"),
  "dump kind": (_b("dump dram 3 1", "run 5"), 2, "cannot dump 'dram' (expected vmem, psum, hbm or sreg)"),
  "dump nothing": (_b("dump", "run 5"), 2, "dump needs vmem, psum, hbm or sreg"),
  "v2 record in v1": (_b("binfile {bin}", "run 5"), 2, "record `binfile` needs a version 2 bundle (header `tinytpu-bundle 2 ...`)"),
  "unknown record v2": (_b("poke 1", "run 5", hdr=HDR2), 2,
                        "unknown record 'poke' (expected one of vmem, psum, hbm, sreg, inst, asm, dump, run, binfile, hbmbin, resultfile)"),
  "unknown record v1": (_b("poke 1", "run 5"), 2, "unknown record 'poke' (expected one of vmem, psum, hbm, sreg, inst, asm, dump, run)"),
  "version": (_b("run 5", hdr=HDR1.replace(" 1 ", " 3 ")), 1, "unsupported bundle version 3 (this reader reads versions 1 and 2)"),
  "header field": (_b("run 5", hdr=HDR1 + " HBM=3"), 1, "bad header field 'HBM=3' (expected N=, VMEM_TILES=, PSUM_TILES=, optional "
                   "IMEM_WORDS=, HBM_TILES=, HBM_LATENCY=, HBM_BW_NUM=, HBM_BW_DEN=)"),
  "header hbm mismatch": (_b("run 5", hdr=HDR1.replace("HBM_TILES=64", "HBM_TILES=128")), 1,
                          "config mismatch: bundle has HBM_TILES=128, the model has HBM_TILES=64"),
  "header hbm latency mismatch": (_b("run 5", hdr=HDR2 + " HBM_LATENCY=7"), 1,
                                  "config mismatch: bundle has HBM_LATENCY=7, the model has HBM_LATENCY=100"),
  "missing header": ("# nothing\n", 2, f"missing header `{HDR1}`"),
  "binfile missing": (_b("binfile {bin}.nope", "run 5", hdr=HDR2), 2, "binfile '{bin}.nope': No such file or directory"),
  "binfile directory": (_b("binfile {dir}", "run 5", hdr=HDR2), 2, "binfile '{dir}' is not a regular file"),
  "binfile twice": (_b("binfile {bin}", "binfile {bin}", "run 5", hdr=HDR2), 3, "duplicate `binfile` (first on line 2)"),
  "binfile no path": (_b("binfile", "run 5", hdr=HDR2), 2, "binfile takes one path (no spaces, `#` or `;`), got 0 values"),
  "binfile two paths": (_b("binfile {bin} {bin}", "run 5", hdr=HDR2), 2, "binfile takes one path (no spaces, `#` or `;`), got 2 values"),
  "hbmbin before binfile": (_b("hbmbin 0 1 0", "binfile {bin}", "run 5", hdr=HDR2), 2, "hbmbin needs a `binfile` record before it"),
  "hbmbin arity": (_b("binfile {bin}", "hbmbin 0 1", "run 5", hdr=HDR2), 3, "hbmbin takes an address, a tile count and a byte offset, got 2 values"),
  "hbmbin malformed": (_b("binfile {bin}", "hbmbin 0 one 0", "run 5", hdr=HDR2), 3, "malformed number 'one'"),
  "hbmbin address": (_b("binfile {bin}", "hbmbin 64 1 0", "run 5", hdr=HDR2), 3, "hbmbin address 64 out of range [0, 64)"),
  "hbmbin count zero": (_b("binfile {bin}", "hbmbin 0 0 0", "run 5", hdr=HDR2), 3, "hbmbin count 0 out of range [1, 64]"),
  "hbmbin count huge": (_b("binfile {bin}", "hbmbin 0 99999999999999999999999999999999999999999 0", "run 5", hdr=HDR2), 3,
                        "hbmbin count 99999999999999999999999999999999999999999 out of range [1, 64]"),
  "hbmbin offset unaligned": (_b("binfile {bin}", "hbmbin 0 1 6", "run 5", hdr=HDR2), 3, "hbmbin offset 6 must be a multiple of 4 in [0, 2^62)"),
  "hbmbin offset negative": (_b("binfile {bin}", "hbmbin 0 1 -4", "run 5", hdr=HDR2), 3, "hbmbin offset -4 must be a multiple of 4 in [0, 2^62)"),
  "hbmbin truncated side file": (_b("binfile {bin}", "hbmbin 0 3 128", "run 5", hdr=HDR2), 3,
                                 "hbmbin 0 3: needs bytes 128..319 of binfile '{bin}', which has 256 bytes (truncated side file?)"),
  "region beyond capacity": (_b("binfile {bin}", "hbmbin 62 4 0", "run 5", hdr=HDR2), 3,
                             "hbm region 0 (tiles 62..65): outside the HBM capacity [0, 64) (HBM_TILES)"),
  "region overlap": (_b("binfile {bin}", f"hbm 9 {ZT}", f"hbm 10 {ZT}", "hbmbin 20 2 0", "hbmbin 10 4 0", "run 5", hdr=HDR2), 6,
                     "hbm region 2 (tiles 10..13) overlaps hbm region 0 (tiles 9..10)"),
  "regions touching are fine, then overlap": (_b("binfile {bin}", f"hbm 9 {ZT}", "hbmbin 10 2 0", "hbmbin 11 1 0", "run 5", hdr=HDR2), 5,
                                              "hbm region 2 (tiles 11..11) overlaps hbm region 1 (tiles 10..11)"),
  "region overlap text after binary": (_b("binfile {bin}", "hbmbin 8 4 0", f"hbm 11 {ZT}", "run 5", hdr=HDR2), 4,
                                       "hbm region 1 (tiles 11..11) overlaps hbm region 0 (tiles 8..11)"),
  "resultfile twice": (_b("resultfile /tmp/x", "resultfile /tmp/y", "run 5", hdr=HDR2), 3, "duplicate `resultfile` (first on line 2)"),
  "resultfile no path": (_b("resultfile", "run 5", hdr=HDR2), 2, "resultfile takes one path (no spaces, `#` or `;`), got 0 values"),
}


@pytest.fixture(scope="module")
def side(tmp_path_factory):
  d = tmp_path_factory.mktemp("side")
  (d / "four.bin").write_bytes(tiles(4, 1).astype("<u4").tobytes())  # 4 tiles: 256 bytes
  (d / "adir").mkdir()
  return {"bin": str(d / "four.bin"), "dir": str(d / "adir")}


@pytest.mark.parametrize("reason", list(REJECT))
def test_reject(reason, side, reader):
  text, line, msg = (x.format(**side) if isinstance(x, str) else x for x in REJECT[reason])
  with pytest.raises(BundleError) as e:
    parse(text, CFG)
  assert str(e.value) == f"error line {line}: {msg}"
  rc, out, err = cpp(reader, text)
  assert (rc, out, err.strip()) == (2, "", str(e.value)), f"C++ reader on {reason}"


def test_region_overlap_names_the_later_region_in_address_order(side):
  # region 0 (5..5) sorts after region 1 (4..5): region 0 is named, at its line
  with pytest.raises(BundleError) as e:
    parse(_b(f"binfile {side['bin']}", f"hbm 5 {ZT}", "hbmbin 4 2 0", "run 5", hdr=HDR2), CFG)
  assert str(e.value) == "error line 3: hbm region 0 (tiles 5..5) overlaps hbm region 1 (tiles 4..5)"


def test_write_rejects_bad_regions(tmp_path):
  b = Bundle(CFG, program=[HALT], hbm=[(10, tiles(4)), (12, tiles(1))])
  with pytest.raises(ValueError, match=r"^hbm region 1 \(tiles 12..12\) overlaps hbm region 0 \(tiles 10..13\)$"):
    write(b)
  b.hbm = [(60, tiles(5))]
  with pytest.raises(ValueError, match=r"^hbm region 0 \(tiles 60..64\): outside the HBM capacity \[0, 64\) \(HBM_TILES\)$"):
    write(b, version=2, binfile=tmp_path / "x.bin")
  b.hbm = [(0, tiles(1).astype(np.int32))]
  with pytest.raises(ValueError, match="expected a non-empty"):
    write(b)
  b.hbm = []
  with pytest.raises(ValueError, match="need bundle version 2"):
    write(b, binfile=tmp_path / "x.bin")
  with pytest.raises(ValueError, match="must be non-empty without whitespace"):
    write(b, version=2, resultfile=tmp_path / "a b.bin")
  with pytest.raises(ValueError, match="unsupported bundle version 3"):
    write(b, version=3)


def test_the_rejections_cover_every_v2_record():
  msgs = " ".join(r[2] for r in REJECT.values())
  for what in ("binfile", "hbmbin", "resultfile", "hbm region", "truncated side file", "already preloaded", "HBM_TILES"):
    assert what in msgs


# ---------------------------------------------------------------------------------------------
# round trips
def _hbm_bundle(cfg=CFG) -> Bundle:
  return Bundle(cfg, vmem={3: tiles(1, 5, cfg.N)[0]}, sregs={2: 7}, program=[HALT],
                dumps=[("hbm", 0, 12), ("vmem", 3, 1), ("hbm", 40, 3)], max_cycles=99,
                hbm=[(2, tiles(3, 2, cfg.N)), (40, tiles(1, 3, cfg.N)), (7, tiles(4, 4, cfg.N))])


def test_v1_round_trip():
  b = _hbm_bundle()
  text = write(b)
  assert "hbm 2 " in text and "hbm 4 " in text and "dump hbm 0 12" in text and text.startswith(HDR1 + "\n")
  assert parse(text, CFG) == b and parse(text) == b
  # TASM: .hbm records
  assert asm.assemble_bundle(asm.bundle_to_tasm(b), CFG) == b


def test_v1_consecutive_tiles_are_one_region():
  t = tiles(3)
  b = parse(_b(f"hbm 5 {tile(t[0])}", f"vmem 0 {ZT}", f"hbm 6 {tile(t[1])}", f"hbm 7 {tile(t[2])}", f"hbm 9 {ZT}", f"hbm 8 {ZT}", "run 5"), CFG)
  assert [(a, len(x)) for a, x in b.hbm] == [(5, 3), (9, 1), (8, 1)]
  np.testing.assert_array_equal(b.hbm[0][1], t)
  # touching regions come back merged from text: same HBM contents
  m = Bundle(CFG, program=[HALT], hbm=[(0, t[:2]), (2, t[2:])])
  back = parse(write(m), CFG)
  assert [(a, len(x)) for a, x in back.hbm] == [(0, 3)] and np.array_equal(back.hbm[0][1], t)
  assert parse(write(m, version=2, binfile=transport.side_dir() + f"/tinytpu-test-{os.getpid()}.bin"), CFG) == m
  os.unlink(transport.side_dir() + f"/tinytpu-test-{os.getpid()}.bin")


def test_tasm_hbm_directive():
  b = asm.assemble_bundle(f"  HALT\n.hbm 3 {tile(range(16))}\n.hbm 4 1.5f {' '.join(['0'] * 15)}\n.dump hbm 3 2\n", CFG)
  assert [(a, len(x)) for a, x in b.hbm] == [(3, 2)] and b.hbm[0][1][1, 0, 0] == 0x3FC00000 and b.dumps == [("hbm", 3, 2)]
  with pytest.raises(asm.AsmError, match="line 2: hbm address 64 out of range"):
    asm.assemble_bundle(f"HALT\n.hbm 64 {ZT}\n", CFG)


def test_v2_round_trip(tmp_path):
  b = _hbm_bundle()
  text = write(b, version=2, binfile=tmp_path / "in.bin", resultfile=tmp_path / "out.bin")
  assert text.splitlines()[:3] == [HDR2, f"binfile {tmp_path / 'in.bin'}", f"resultfile {tmp_path / 'out.bin'}"]
  assert [ln for ln in text.splitlines() if ln.startswith("hbmbin")] == ["hbmbin 2 3 0", "hbmbin 40 1 192", "hbmbin 7 4 256"]
  assert (tmp_path / "in.bin").stat().st_size == 8 * 64
  b2 = parse(text, CFG)
  assert b2 == b and b2.resultfile == str(tmp_path / "out.bin") and all(t.dtype == np.uint32 for _, t in b2.hbm)
  # v2 may carry text records too, and a v2 bundle without side files is v1 with another header
  assert parse(write(b, version=2), CFG) == b
  # a v2 bundle read back is written again with its result file
  assert f"resultfile {tmp_path / 'out.bin'}" in write(b2, version=2)


@pytest.mark.parametrize("n", [2, 8])
def test_v2_round_trip_other_n(tmp_path, n):
  cfg = Config(N=n, VMEM_TILES=256, PSUM_TILES=16, HBM_TILES=128)
  b = _hbm_bundle(cfg)
  assert parse(write(b, version=2, binfile=tmp_path / "in.bin"), cfg) == b


# ---------------------------------------------------------------------------------------------
# results
def _res(dumps):
  return Result(dumps, 5, {name: 0 for name in bundle.isa.PERF}, "ok")


def test_hbm_result_lines_text_and_binary(tmp_path):
  t = tiles(3, 9)
  r = _res([("hbm", 4, t), ("sreg", 0, np.arange(16, dtype=np.uint32)), ("hbm", 60, t[:1])])
  text = format_result(r)
  assert text.splitlines()[0] == f"hbm 4 3 {bundle.ints(t)}"
  assert diff_results(r, parse_result(text, CFG)) == []
  text2 = format_result(r, tmp_path / "res.bin")
  assert text2.splitlines()[0] == "hbm 4 3 @0" and text2.splitlines()[2] == "hbm 60 1 @192"
  assert (tmp_path / "res.bin").stat().st_size == 4 * 64
  r2 = parse_result(text2, CFG, tmp_path / "res.bin")
  assert diff_results(r, r2) == [] and r2.dumps[0][2].shape == (3, 4, 4) and r2.dumps[0][2].dtype == np.uint32


@pytest.mark.parametrize("line, why", [
  ("hbm 4", "`hbm` needs an address, a tile count and the values"),
  ("hbm 4 2 1 2 3", "hbm 4 2: expected 32 values (count*N*N, N=4), got 3"),
  ("hbm 4 0", "hbm count 0 must be >= 1"),
  ("hbm 62 3 @0", "hbm 62..64 out of range [0, 64)"),
  ("hbm 4 1 @0", "hbm 4 1 @0: a binary dump needs the bundle's result file (parse_result(..., resultfile=))"),
  ("hbm 4 1 @x", "malformed number 'x'"),
])
def test_parse_result_rejects(line, why):
  with pytest.raises(BundleError) as e:
    parse_result(line + "\ncycles 1\n", CFG)
  assert str(e.value) == f"error line 1: {why}"


def test_parse_result_rejects_bad_result_file(tmp_path):
  (tmp_path / "r.bin").write_bytes(b"\0" * 100)
  for line, why in (("hbm 4 2 @0", f"hbm 4 2: needs bytes 0..127 of result file '{tmp_path / 'r.bin'}', which has 100 bytes (truncated side file?)"),
                    ("hbm 4 1 @2", "hbm offset 2 must be a non-negative multiple of 4")):
    with pytest.raises(BundleError) as e:
      parse_result(line + "\n", CFG, tmp_path / "r.bin")
    assert str(e.value) == f"error line 1: {why}"
  with pytest.raises(BundleError, match="result file '.*nope': No such file or directory"):
    parse_result("hbm 4 1 @0\n", CFG, tmp_path / "nope")


def test_diff_results_names_the_hbm_tile_and_lane():
  t = tiles(300, 3)
  u = t.copy()
  u[257, 1, 2] ^= 4
  d = diff_results(_res([("hbm", 10, t)]), _res([("hbm", 10, u)]))
  assert d == [f"hbm 267 [1][2] (dump hbm 10 tile 257): {t[257, 1, 2]:#010x} ({np.uint32(t[257, 1, 2]).view(np.int32)}) != "
               f"{u[257, 1, 2]:#010x} ({np.uint32(u[257, 1, 2]).view(np.int32)})"]
  u[:] = 0
  d = diff_results(_res([("hbm", 10, t)]), _res([("hbm", 10, u)]))
  assert len(d) == 9 and d[-1].startswith("hbm 10: ... ") and d[0].startswith("hbm 10 [0][0] (dump hbm 10 tile 0)")
  assert diff_results(_res([("hbm", 10, t)]), _res([("hbm", 10, t[:2])])) == ["hbm 10: shape (300, 4, 4) != (2, 4, 4)"]


def test_hbm_text_values_parse_like_parse_int():
  vals = ["0x10", "-1", "00012", "4294967295"] + ["0"] * 12
  r = parse_result(f"hbm 0 1 {' '.join(vals)}\ncycles 1\nperf {' '.join(f'{n}=0' for n in bundle.isa.PERF)}\nstatus ok\n", CFG)
  assert r.dumps[0][2].ravel()[:4].tolist() == [16, 0xFFFFFFFF, 12, 0xFFFFFFFF]
  for bad, why in (("1_0", "malformed number '1_0'"), ("4294967296", "value 4294967296 out of range")):
    with pytest.raises(BundleError, match=why):
      parse_result(f"hbm 0 1 {bad} {' '.join(['0'] * 15)}\n", CFG)


# ---------------------------------------------------------------------------------------------
# golden model on v2 bundles: DMA between HBM regions and VMEM
PROG = """
  LI s1, 5
  DMA.IN [s0 + 0], [s1 + 0], 4       # HBM 5..8 -> VMEM 0..3
  VLD v1, [s0 + 1]
  VADD v1, v1, v1
  VST v1, [s0 + 1]
  DMA.OUT [s0 + 30], [s0 + 0], 4     # VMEM 0..3 -> HBM 30..33
  HALT
"""


def _dma_bundle() -> Bundle:
  b = asm.assemble_bundle(PROG + ".dump hbm 0 40\n.dump vmem 0 4\n.run 1000\n", CFG)
  b.hbm = [(5, tiles(4, 11)), (50, tiles(10, 12))]
  return b


def test_golden_runs_v2_bundles(tmp_path):
  b = _dma_bundle()
  gold = interp.run(b)
  assert gold.status == "ok", bundle.format_result(gold)
  h = gold.dumps[0][2]
  np.testing.assert_array_equal(h[5:9], b.hbm[0][1])
  exp = b.hbm[0][1].copy()
  exp[1] = exp[1] * np.uint32(2)
  np.testing.assert_array_equal(h[30:34], exp)
  text = write(b, version=2, binfile=tmp_path / "in.bin", resultfile=tmp_path / "out.bin")
  b2 = parse(text, CFG)
  r2 = interp.run(b2)
  assert diff_results(gold, r2) == []
  # the result through the result file, as a v2 runner answers
  out = format_result(r2, b2.resultfile)
  assert out.splitlines()[0] == "hbm 0 40 @0"
  assert diff_results(gold, parse_result(out, CFG, b2.resultfile)) == []


# ---------------------------------------------------------------------------------------------
# the C++ reader on good bundles: same regions, hbm dumps as text (v1) and into the result file (v2)
def _halt_result(cpp_out: str) -> str:
  lines = [ln for ln in cpp_out.splitlines() if ln.startswith("hbm ")]
  return "\n".join(lines + ["cycles 1", "perf " + " ".join(f"{n}=1" if n == "retired" else f"{n}=0" for n in bundle.isa.PERF),
                            "status ok"]) + "\n"


@pytest.mark.parametrize("version", [1, 2])
def test_cpp_reader_regions_and_dumps(version, reader, tmp_path):
  b = Bundle(CFG, program=[HALT], max_cycles=10, dumps=[("hbm", 0, 64), ("sreg", 0, 16), ("hbm", 6, 3)],
             hbm=[(2, tiles(3, 2)), (40, tiles(1, 3)), (7, tiles(4, 4)), (63, tiles(1, 5))])
  kw = dict(binfile=tmp_path / "in.bin", resultfile=tmp_path / "out.bin") if version == 2 else {}
  text = write(b, version=version, **kw)
  rc, out, err = cpp(reader, text)
  assert rc == 0, err
  assert out.splitlines()[0] == f"version {version} regions 4"
  gold = interp.run(parse(text, CFG))
  if version == 2:
    assert [ln for ln in out.splitlines()[1:]] == ["hbm 0 64 @0", "hbm 6 3 @4096"]
    assert (tmp_path / "out.bin").stat().st_size == 67 * 64
  res = parse_result(_halt_result(out), CFG, tmp_path / "out.bin" if version == 2 else None)
  assert diff_results(Result([d for d in gold.dumps if d[0] == "hbm"], 1, gold.perf, "ok"), res) == []


def test_cpp_reader_v1_text_regions_merge_like_python(reader):
  text = _b(f"hbm 5 {tile(range(16))}", f"vmem 0 {ZT}", f"hbm 6 {ZT}", f"hbm 9 {ZT}", f"hbm 8 {ZT}", "dump hbm 5 5", "inst 0x0200000000000000",
            "run 5")
  rc, out, err = cpp(reader, text)
  assert rc == 0 and out.splitlines()[0] == "version 1 regions 3", err
  assert out.splitlines()[1] == f"hbm 5 5 {tile(range(16))} " + " ".join(["0"] * 64)


def test_cpp_reader_existing_rejections_still_match(reader):
  # the v1 rejections of tests/test_cosim.py on the driver (default configuration, no RTL needed)
  from tests import test_cosim
  for text in test_cosim.BAD:
    try:
      parse(text, Config())
    except BundleError as e:
      rc, out, err = cpp(reader, text, Config())
      assert (rc, out, err.strip()) == (2, "", str(e)), text[:200]
    else:  # a valid bundle (the v2 header is valid now)
      assert cpp(reader, text, Config())[0] == 0


# ---------------------------------------------------------------------------------------------
# transport
def test_transfer_chooses_v2_for_large_payloads_and_cleans_up():
  small = Bundle(CFG, program=[HALT], hbm=[(0, tiles(2))], dumps=[("hbm", 0, 2)])
  with transport.Transfer(small) as t:
    assert t.version == 1 and t.resultfile is None and t.text.startswith(HDR1)
  big = Bundle(Config(), program=[HALT], hbm=[(0, tiles(transport.BINARY_MIN_LANES // 16))], dumps=[("hbm", 0, 300)])
  with transport.Transfer(big) as t:
    assert t.version == 2 and "hbmbin 0 256 0" in t.text
    files = [t.binfile, t.resultfile]
    assert all(os.path.exists(p) for p in files) and files[0].startswith(transport.side_dir())
    gold = interp.run(parse(t.text, Config()))
    res = t.result(format_result(gold, t.resultfile))
    assert diff_results(gold, res) == []
  assert not any(os.path.exists(p) for p in files)
  assert transport.resultfile_of("tinytpu-bundle 2 N=4\nresultfile /dev/shm/x.bin  # c\nrun 1\n") == "/dev/shm/x.bin"
  assert transport.resultfile_of("tinytpu-bundle 1 N=4\nrun 1\n") is None


def test_measure_transfer_16mb_python_side():
  m = transport.measure_transfer(16, cosim=False)
  assert m["ok"] and m["python_ok"] and m["lanes"] == 4 << 20 and m["tiles"] == 1 << 18
  print(f"\n16 MB transfer, Python side: {m}")
  with pytest.raises(ValueError, match="HBM holds"):
    transport.measure_transfer(1, Config(HBM_TILES=64), cosim=False)


# ---------------------------------------------------------------------------------------------
# the co-sim binary (tinytpu.cosim.build of the default configuration)
@pytest.fixture(scope="module")
def sim():
  from tinytpu import cosim
  try:
    cosim.build(Config())
  except RuntimeError as e:
    pytest.skip(f"the co-sim binary does not build in this tree: {str(e).splitlines()[0]}")
  return cosim


@pytest.mark.parametrize("reason", list(REJECT))
def test_cosim_binary_agrees_with_python(reason, side, sim):
  """The REJECT bundles with the default configuration's header: the binary rejects with Python's
  message, or runs what Python accepts (a capacity error at HBM_TILES=64 is no error at 2^20)."""
  text = REJECT[reason][0].format(**side).replace(HDR1, bundle.header(Config())).replace(HDR2, bundle.header(Config(), 2))
  rc, out, err = sim.run_raw(text, Config())
  try:
    parse(text, Config())
  except BundleError as e:
    assert (rc, out, err.strip()) == (2, "", str(e))
  else:
    assert rc in (0, 1), err


@pytest.mark.parametrize("binary", [False, True])
def test_cosim_runs_hbm_bundles_like_golden(binary, sim):
  b = _dma_bundle()
  b.config = Config()
  b = asm.assemble_bundle(asm.bundle_to_tasm(b), Config())
  with transport.Transfer(b, binary=binary) as t:
    assert t.version == (2 if binary else 1)
    rtl = sim.run_bundle(t.text, Config())
    gold = interp.run(b)
    assert diff_results(rtl, gold) == [], bundle.format_result(rtl)
  # a Bundle object: the transport picks the version
  assert diff_results(sim.run_bundle(b), gold) == []
  with sim.Server(Config()) as srv:
    for _ in range(2):
      assert diff_results(srv.run_bundle(b), gold) == []


def test_cosim_16mb_transfer(sim):
  m = transport.measure_transfer(16, runs=1)
  print(f"\n16 MB transfer: {m}")  # the time is the bench's (make bench); a test asserts correctness
  assert m["ok"] and m["cosim_ok"] and "cosim_error" not in m, m
  assert {"write_ms", "parse_ms", "result_read_ms", "python_ms", "cosim_in_first_ms", "cosim_in_ms", "cosim_roundtrip_ms"} <= set(m)


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads a file whatever its mode")
def test_unreadable_binfile(tmp_path, reader):
  p = tmp_path / "locked.bin"
  p.write_bytes(b"\0" * 64)
  p.chmod(0)
  text = _b(f"binfile {p}", "hbmbin 0 1 0", "run 5", hdr=HDR2)
  with pytest.raises(BundleError) as e:
    parse(text, CFG)
  assert str(e.value) == f"error line 3: hbmbin 0 1: binfile '{p}': Permission denied"
  rc, out, err = cpp(reader, text)
  assert (rc, out, err.strip()) == (2, "", str(e.value))
