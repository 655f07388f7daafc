"""Bundle format v1: parse/write round trip, one test per rejection reason, the result format, result
diffs, and the command line (run/asm/disasm) through subprocesses."""
import importlib.util
import os
import pathlib
import subprocess
import sys

import numpy as np
import pytest

from tinytpu import isa
from tinytpu.bundle import Bundle, BundleError, Result, diff_results, format_result, parse, parse_result, write
from tinytpu.config import Config

ROOT = pathlib.Path(__file__).resolve().parent.parent
HDR = "tinytpu-bundle 1 N=4 VMEM_TILES=1024 PSUM_TILES=64"
ZEROS = " ".join(["0"] * 16)
HALT = 0x0200000000000000


def _random_bundle(rng, cfg):
  lanes = lambda: rng.integers(0, 1 << 32, (cfg.N, cfg.N), dtype=np.uint64).astype(np.uint32)
  vmem = {int(a): lanes() for a in rng.choice(cfg.VMEM_TILES, 5, replace=False)}
  vmem[0] = np.array(([0x80000000, 0xFFFFFFFF, 0x7FFFFFFF, 1] + [7] * 256)[:cfg.lanes], dtype=np.uint32).reshape(cfg.N, cfg.N)
  psum = {int(a): lanes() for a in rng.choice(cfg.PSUM_TILES, 3, replace=False)}
  sregs = {int(r): int(rng.integers(0, 1 << 32)) for r in rng.choice(np.arange(1, 16), 6, replace=False)}
  program = [0x3000123000000000, 0x20004200FFFFFFFD, 0x0B00000000030002, 0x0100000000000000, HALT]
  dumps = [("vmem", 3, 2), ("psum", cfg.PSUM_TILES - 1, 1), ("sreg", 0, 16)]
  return Bundle(cfg, vmem, psum, sregs, program, dumps, 12345)


def _same(a: Bundle, b: Bundle):
  assert a.config == b.config and a.sregs == b.sregs and a.program == b.program
  assert a.dumps == b.dumps and a.max_cycles == b.max_cycles
  for x, y in ((a.vmem, b.vmem), (a.psum, b.psum)):
    assert list(x) == list(y)  # record order kept
    for k in x:
      assert y[k].dtype == np.uint32 and y[k].shape == x[k].shape
      np.testing.assert_array_equal(x[k], y[k])


@pytest.mark.parametrize("cfg", [Config(), Config(N=8, VMEM_TILES=256, PSUM_TILES=16), Config(N=2, IMEM_WORDS=256)])
def test_write_parse_round_trip(cfg):
  b = _random_bundle(np.random.default_rng(cfg.N), cfg)
  text = write(b)
  _same(b, parse(text))
  _same(b, parse(text, cfg))


def test_parse_hand_written():
  text = f"""# a bundle
{HDR}
vmem 7 1 -1 0xFFFFFFFF -2147483648 4294967295 0x10 0 0   0 0 0 0 0 0 0 00012  # comment
psum 63 {ZEROS}
sreg 15 -2
asm   LI s1, 5
inst 0x3000123000000000
asm top: NOP
asm   BNE s1, s0, top
inst 0x0200000000000000
dump vmem 7 1
dump sreg

run 99
# trailing comment
"""
  b = parse(text)
  assert b.config == Config()
  exp = np.zeros(16, dtype=np.uint32)
  exp[:6] = [1, 0xFFFFFFFF, 0xFFFFFFFF, 0x80000000, 0xFFFFFFFF, 16]
  exp[15] = 12
  np.testing.assert_array_equal(b.vmem[7], exp.reshape(4, 4))
  assert list(b.psum) == [63] and not b.psum[63].any()
  assert b.sregs == {15: 0xFFFFFFFE}
  # labels in asm records around an inst record: BNE at pc 3 -> top at pc 2
  assert b.program == [0x0400100000000005, 0x3000123000000000, 0x0100000000000000, 0x08010100FFFFFFFF, HALT]
  assert b.dumps == [("vmem", 7, 1), ("sreg", 0, 16)]
  assert b.max_cycles == 99


def test_header_imem_words():
  b = parse("tinytpu-bundle 1 N=4 VMEM_TILES=64 PSUM_TILES=8 IMEM_WORDS=256\nrun 1\n")
  assert b.config == Config(VMEM_TILES=64, PSUM_TILES=8, IMEM_WORDS=256)


# ---------------------------------------------------------------------------------------------
# one test per rejection reason: (text, line, message fragment)
def _b(*records, header=HDR):
  return "\n".join([header, *records]) + "\n"


REJECT = {
  "missing header": ("# nothing\nrun 5\n", 2, "missing header"),
  "empty file": ("# only a comment\n", 2, "missing header"),
  "wrong version": (_b("run 5", header="tinytpu-bundle 3 N=4 VMEM_TILES=1024 PSUM_TILES=64"), 1,
                    "unsupported bundle version 3 (this reader reads versions 1 and 2)"),
  "header field missing": (_b("run 5", header="tinytpu-bundle 1 N=4 VMEM_TILES=1024"), 1, "header is missing PSUM_TILES="),
  "header field unknown": (_b("run 5", header=HDR + " M=3"), 1, "bad header field 'M=3'"),
  "bad config": (_b("run 5", header="tinytpu-bundle 1 N=3 VMEM_TILES=1024 PSUM_TILES=64"), 1, "N=3 must be a power of two"),
  "value count": (_b("vmem 0 1 2 3", "run 5"), 2, "vmem 0: expected 16 values (N*N, N=4), got 3"),
  "value too big": (_b("vmem 0 " + "0 " * 15 + "4294967296", "run 5"), 2, "value 4294967296 out of range [-2^31, 2^32-1]"),
  "value too small": (_b("sreg 1 -2147483649", "run 5"), 2, "value -2147483649 out of range"),
  "vmem address": (_b(f"vmem 1024 {ZEROS}", "run 5"), 2, "vmem address 1024 out of range [0, 1024)"),
  "psum address": (_b(f"psum -1 {ZEROS}", "run 5"), 2, "psum address -1 out of range [0, 64)"),
  "sreg address": (_b("sreg 16 0", "run 5"), 2, "scalar register 16 out of range [0, 16)"),
  "sreg s0": (_b("sreg 0 3", "run 5"), 2, "s0 is hardwired to 0"),
  "dump vmem address": (_b("dump vmem 1023 2", "run 5"), 2, "dump vmem 1023..1024 out of range [0, 1024)"),
  "dump psum address": (_b("dump psum 64 1", "run 5"), 2, "dump psum 64..64 out of range [0, 64)"),
  "dump sreg args": (_b("dump sreg 3", "run 5"), 2, "`dump sreg` takes no arguments"),
  "unknown record": (_b("poke 1 2", "run 5"), 2, "unknown record 'poke'"),
  "malformed number": (_b("sreg 1 0x1g", "run 5"), 2, "malformed number '0x1g'"),
  "fp literal": (_b("sreg 1 1.5f", "run 5"), 2, "malformed number '1.5f'"),
  "duplicate preload": (_b(f"vmem 2 {ZEROS}", f"vmem 2 {ZEROS}", "run 5"), 3, "vmem 2 already preloaded on line 2"),
  "duplicate run": (_b("run 5", "run 6"), 3, "duplicate `run` (first on line 2)"),
  "record after run": (_b("run 5", "inst 0x0200000000000000"), 3, "record `inst` after `run` (line 2)"),
  "missing run": (_b("inst 0x0200000000000000", "# end"), 4, "missing `run <watchdog cycles>` record"),
  "run limit": (_b("run -1"), 2, "run limit -1 out of range"),
  "word too wide": (_b("inst 0x10000000000000000", "run 5"), 2, "is not a 64-bit value"),
  "asm error": (_b("asm NOP", "asm JMP nowhere", "run 5"), 3, "undefined label 'nowhere'"),
  "asm directive": (_b("asm .run 5", "run 5"), 2, "holds an instruction or label, not a directive"),
}


@pytest.mark.parametrize("reason", list(REJECT))
def test_reject(reason):
  text, line, frag = REJECT[reason]
  with pytest.raises(BundleError) as e:
    parse(text)
  assert str(e.value).startswith(f"error line {line}: ") and frag in str(e.value), str(e.value)
  assert e.value.line == line


def test_reject_config_mismatch():
  with pytest.raises(BundleError) as e:
    parse(_b("run 5", header="tinytpu-bundle 1 N=8 VMEM_TILES=1024 PSUM_TILES=64"), Config(N=4))
  assert str(e.value) == "error line 1: config mismatch: bundle has N=8, the model has N=4"
  with pytest.raises(BundleError, match="bundle has PSUM_TILES=64, the model has PSUM_TILES=128"):
    parse(_b("run 5"), Config(PSUM_TILES=128))


def test_reject_program_too_long():
  cfg = Config(IMEM_WORDS=256)
  ok = _b(*["inst 0x0100000000000000"] * 256, "run 5")
  assert len(parse(ok, cfg).program) == 256
  with pytest.raises(BundleError, match=r"^error line 258: program longer than IMEM_WORDS=256"):
    parse(_b(*["asm NOP"] * 257, "run 5"), cfg)


# ---------------------------------------------------------------------------------------------
# results
def _result(**kw):
  t = np.arange(16, dtype=np.uint32).reshape(4, 4)
  t[0, 0] = 0xFFFFFFFF
  s = np.zeros(16, dtype=np.uint32)
  s[1] = 0x80000000
  r = dict(dumps=[("vmem", 2, t), ("psum", 0, t + 1), ("sreg", 0, s)], cycles=40,
           perf={name: i for i, (name, _) in enumerate(isa.PERF_COUNTERS)}, status="ok")
  return Result(**{**r, **kw})


def test_format_result_exact():
  assert format_result(_result()) == (
    "vmem 2 -1 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15\n"
    "psum 0 0 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16\n"
    "sreg 0 -2147483648 0 0 0 0 0 0 0 0 0 0 0 0 0 0\n"
    "cycles 40\n"
    "perf " + " ".join(f"{name}={i}" for i, (name, _) in enumerate(isa.PERF_COUNTERS)) + "\n"
    "status ok\n")
  assert format_result(_result(dumps=[], status="trap", trap="vmem_out_of_range", pc=7)).endswith("status trap vmem_out_of_range pc=7\n")
  assert format_result(_result(dumps=[], status="timeout", pc=3)).endswith("status timeout pc=3\n")


@pytest.mark.parametrize("kw", [{}, dict(status="trap", trap="loop_stack", pc=12), dict(status="timeout", pc=0, dumps=[])])
def test_result_round_trip(kw):
  r = _result(**kw)
  r2 = parse_result(format_result(r), Config())
  assert (r2.cycles, r2.perf, r2.status, r2.trap, r2.pc) == (r.cycles, r.perf, r.status, r.trap, r.pc)
  assert diff_results(r, r2, ignore_timing=False) == []
  assert [d[:2] for d in r2.dumps] == [d[:2] for d in r.dumps]


@pytest.mark.parametrize("text, line, frag", [
  ("cycles 1\nperf retired=1\nstatus ok\n", 2, "perf line is missing mxu_busy"),
  ("vmem 0 1 2\n", 1, "expected 16 values"),
  ("cycles 1\nstatus bad\n", 2, "bad status line"),
  ("cycles 1\n", 2, "missing `perf` line"),
  ("hello\n", 1, "unknown result line 'hello'"),
])
def test_parse_result_rejects(text, line, frag):
  with pytest.raises(BundleError) as e:
    parse_result(text, Config())
  assert e.value.line == line and frag in str(e.value)


def test_diff_results():
  a = _result()
  assert diff_results(a, _result()) == []
  b = _result(cycles=99, perf={**a.perf, "stall_raw": 0})
  assert diff_results(a, b) == []  # timing ignored
  assert diff_results(a, b, ignore_timing=False) == ["perf stall_raw: 5 != 0", "cycles: 40 != 99"]
  assert diff_results(a, _result(perf={**a.perf, "retired": 3})) == ["perf retired: 0 != 3"]
  t = a.dumps[0][2].copy()
  t[1, 2] = 0x80000000
  d = diff_results(a, _result(dumps=[("vmem", 2, t), *a.dumps[1:]]))
  assert d == ["vmem 2 [1][2]: 0x00000006 (6) != 0x80000000 (-2147483648)"]
  s = a.dumps[2][2].copy()
  s[5] = 1
  assert diff_results(a, _result(dumps=[*a.dumps[:2], ("sreg", 0, s)])) == ["sreg s5: 0x00000000 (0) != 0x00000001 (1)"]
  assert diff_results(a, _result(dumps=a.dumps[:1]))[0].startswith("dumped tiles differ")
  d = diff_results(a, _result(status="trap", trap="psum_out_of_range", pc=4))
  assert d == ["status: ok != trap", "trap: None != psum_out_of_range", "pc: None != 4"]
  # where two watchdogs fire depends on timing
  assert diff_results(_result(status="timeout", pc=1), _result(status="timeout", pc=5, dumps=[])) == []
  assert diff_results(_result(status="timeout", pc=1), _result(status="timeout", pc=5), ignore_timing=False) == ["pc: 1 != 5"]


# ---------------------------------------------------------------------------------------------
# command line
def _cli(*args, stdin=None, env_extra=None):
  env = {**os.environ, **(env_extra or {})}
  return subprocess.run([sys.executable, "-m", "tinytpu", *args], capture_output=True, text=True, cwd=ROOT, input=stdin, env=env)


TASM = """
  LI s1, 3
  VFILL v1, -2
  loop: VADD v1, v1, v1
  SADDI s1, s1, -1
  BNE s1, s0, loop
  VST v1, [s0 + 5]
  HALT
.vmem 5 """ + ZEROS + """
.dump vmem 5 1
.dump sreg
.run 1000
"""


def test_cli_asm_disasm_round_trip(tmp_path):
  (tmp_path / "p.tasm").write_text(TASM)
  r = _cli("asm", str(tmp_path / "p.tasm"), "-o", str(tmp_path / "b.txt"))
  assert r.returncode == 0, r.stderr
  b = parse((tmp_path / "b.txt").read_text())
  assert b.program[4] == 0x08010100FFFFFFFE and b.dumps == [("vmem", 5, 1), ("sreg", 0, 16)] and b.max_cycles == 1000
  r = _cli("disasm", str(tmp_path / "b.txt"))
  assert r.returncode == 0, r.stderr
  r2 = _cli("asm", "-", stdin=r.stdout)
  assert r2.returncode == 0 and r2.stdout == (tmp_path / "b.txt").read_text()


def test_cli_asm_error(tmp_path):
  (tmp_path / "bad.tasm").write_text("NOP\nVADD v1, v2\n")
  r = _cli("asm", str(tmp_path / "bad.tasm"))
  assert r.returncode == 2 and r.stderr.strip() == "error line 2: VADD takes 3 operands (VADD vd, va, vb), got 2"


def test_cli_disasm_hex_words(tmp_path):
  (tmp_path / "w.hex").write_text("# words\n3000123000000000\n0x0200000000000000\n")
  r = _cli("disasm", str(tmp_path / "w.hex"))
  assert r.returncode == 0 and [l.split("#")[0].strip() for l in r.stdout.splitlines()] == ["VADD v1, v2, v3", "HALT"]
  (tmp_path / "w.hex").write_text("3000123000000000\n0000000000000000\n")
  r = _cli("disasm", str(tmp_path / "w.hex"))
  assert r.returncode == 0 and ".word 0x0000000000000000" in r.stdout and "illegal: undefined opcode" in r.stdout


def test_illegal_words_are_bundle_content():
  """An illegal word loads; the core traps with illegal_instruction when (and only when) it runs."""
  b = parse(_b("inst 0x0200000000000000", "inst 0x3005123000000000", "run 5"))
  assert b.program == [0x0200000000000000, 0x3005123000000000]
  assert "pc 1: illegal word 0x3005123000000000: VNEG: reserved bits set" in write(b)
  assert parse(write(b)) == b


def test_cli_run_bundle_error(tmp_path):
  (tmp_path / "b.txt").write_text(_b("vmem 0 1 2", "run 5"))
  for flag in ([], ["--golden"], ["--both"]):
    r = _cli("run", *flag, str(tmp_path / "b.txt"))
    assert r.returncode == 2 and r.stderr.strip() == "error line 2: vmem 0: expected 16 values (N*N, N=4), got 2" and r.stdout == ""
  r = _cli("run", "--config", "N=8", str(tmp_path / "b.txt"))
  assert r.returncode == 2 and r.stderr.strip() == "error line 1: config mismatch: bundle has N=4, the model has N=8"


@pytest.mark.skipif(importlib.util.find_spec("tinytpu.cosim") is not None, reason="the RTL co-simulation exists")
def test_cli_run_without_rtl(tmp_path):
  (tmp_path / "b.txt").write_text(_b("inst 0x0200000000000000", "run 5"))
  for flag in ([], ["--both"]):
    r = _cli("run", *flag, str(tmp_path / "b.txt"))
    assert r.returncode == 3 and "RTL co-simulation is not built in this tree yet; use --golden" in r.stderr


def _golden_ok():
  try:
    from tinytpu.golden import interp  # noqa: F401
    return True
  except ImportError:
    return False


@pytest.mark.skipif(not _golden_ok(), reason="the golden interpreter is not in this tree yet")
def test_cli_run_golden(tmp_path):
  (tmp_path / "p.tasm").write_text(TASM)
  assert _cli("asm", str(tmp_path / "p.tasm"), "-o", str(tmp_path / "b.txt")).returncode == 0
  r = _cli("run", "--golden", str(tmp_path / "b.txt"))
  assert r.returncode == 0, r.stderr
  res = parse_result(r.stdout, Config())
  # v1 = -2 doubled three times = -16 in every lane; s1 counted down to 0
  np.testing.assert_array_equal(res.dumps[0][2], np.full((4, 4), -16, dtype=np.int32).view(np.uint32))
  assert res.status == "ok" and res.dumps[1][2].tolist() == [0] * 16
  assert res.perf["retired"] == 2 + 3 * 3 + 2
  (tmp_path / "t.txt").write_text(_b("inst 0x2000000000000400", "run 50"))  # VLD v0, [1024]: outside VMEM
  r = _cli("run", "--golden", str(tmp_path / "t.txt"))
  assert r.returncode == 1 and r.stdout.splitlines()[-1] == "status trap vmem_out_of_range pc=0"


def test_run_exit_codes_in_process(tmp_path, monkeypatch, capsys):
  # the exit code follows the status, whatever runner produced it
  from tinytpu import run
  (tmp_path / "b.txt").write_text(_b("inst 0x0200000000000000", "run 5"))
  for status, code in (("ok", 0), ("trap", 1), ("timeout", 1)):
    res = _result(dumps=[], status=status, trap="loop_stack" if status == "trap" else None, pc=None if status == "ok" else 0)
    monkeypatch.setattr(run, "run_golden", lambda b, res=res: res)
    assert run.main(["--golden", str(tmp_path / "b.txt")]) == code
    assert capsys.readouterr().out == format_result(res)
  # --both: a difference fails with the RTL result on stdout and the differences on stderr
  monkeypatch.setattr(run, "run_rtl", lambda text, cfg: _result(dumps=[], cycles=9))
  monkeypatch.setattr(run, "run_golden", lambda b: _result(dumps=[], perf={**_result().perf, "retired": 1}))
  assert run.main(["--both", str(tmp_path / "b.txt")]) == 1
  out = capsys.readouterr()
  assert out.out.startswith("cycles 9\n") and "perf retired: 0 != 1" in out.err
  monkeypatch.setattr(run, "run_golden", lambda b: _result(dumps=[], cycles=1234))
  assert run.main(["--both", str(tmp_path / "b.txt")]) == 0


def test_bundle_equality():
  b = _random_bundle(np.random.default_rng(0), Config())
  b2 = parse(write(b))
  assert b == b2
  b2.vmem[0][1, 1] ^= 1
  assert b != b2
  assert b != parse(write(b).replace("run 12345", "run 12346"))
