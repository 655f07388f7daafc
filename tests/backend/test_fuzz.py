"""The differential fuzzer (tinytpu/fuzz.py, fuzzgen.py, fuzzprog.py; doc/fuzz.md): random tinygrad programs on TINYTPU against
tinygrad's PYTHON device. The smoke run is 200 programs of a fixed seed on the golden model, in four
chunks so pytest-xdist spreads them; the nightly run is 5000 programs of today's seed."""
import io
import math
import os
import pathlib
import subprocess
import sys

import pytest

from tinytpu import fuzz, fuzzgen, fuzzprog

ROOT = pathlib.Path(__file__).resolve().parents[2]
SMOKE_SEED, SMOKE_PROGRAMS, SMOKE_CHUNKS = 20240601, 200, 4
FAULT_SEED = 5


@pytest.fixture(autouse=True)
def golden(monkeypatch):
  """The fuzzer's budget is set for the golden model, whatever TINYTPU_TEST_SIM says."""
  monkeypatch.setenv("TINYTPU_SIM", "golden")
  monkeypatch.delenv("TINYTPU_FUZZ_FAULT", raising=False)


def _run(seed, count, start=0, **kw):
  out = io.StringIO()
  s = fuzz.fuzz(seed, count, start, out=out, **kw)
  return s, out.getvalue()


@pytest.mark.parametrize("chunk", range(SMOKE_CHUNKS))
def test_smoke(chunk):
  n = SMOKE_PROGRAMS // SMOKE_CHUNKS
  s, text = _run(SMOKE_SEED, n, chunk * n, max_shrinks=2, shrink_seconds=60)
  print(text)
  failures = len(s.failures)
  assert s.programs == n
  assert failures == 0, f"{failures} failures in programs {chunk * n}..{chunk * n + n - 1} of seed {SMOKE_SEED}:\n" + \
    "\n".join(rep for _, _, rep in s.failures)


def _first_caught(kind, seed=FAULT_SEED):
  """The first program of seed where a fault in `kind` shows in the output (it can be masked, e.g. by a compare)."""
  for i in range(500):
    prog = fuzzgen.generate(seed, i)
    if kind in (o.kind for o in prog.ops) and fuzzprog.check(prog).kind == "ok" and (o := fuzzprog.check(prog, kind)).kind == "fail":
      return i, prog, o
  raise AssertionError(f"no program of seed {seed} catches a fault in {kind}")


def test_planted_fault_is_found_and_shrunk():
  i, prog, o = _first_caught("max")
  assert o.sig == ("mismatch",), o
  small, runs = fuzz.shrink(prog, lambda p: (c := fuzzprog.check(p, "max")).kind == "fail" and c.sig == o.sig)
  assert [op.kind for op in small.ops] == ["max"], fuzz.snippet(small)
  assert all(math.prod(x.shape) <= 2 for x in small.inputs), small.inputs
  s, text = _run(FAULT_SEED, 1, i, fault="max")
  assert len(s.failures) == 1 and s.line() in text
  assert f"reproduce: python -m tinytpu fuzz --seed {FAULT_SEED} --index {i}" in text
  assert fuzz.snippet(small).splitlines()[5] in text  # the shrunk snippet is printed


def test_fault_free_program_passes():
  s, text = _run(FAULT_SEED, 5, 0)
  assert s.programs == 5 and "fuzz: 5 programs" in text


def test_reproducer_command_reproduces():
  i = _first_caught("add")[0]
  s, text = _run(FAULT_SEED, 1, i, fault="add")
  assert len(s.failures) == 1
  env = dict(os.environ, TINYTPU_FUZZ_FAULT="add", TINYTPU_SIM="golden")
  r = subprocess.run([sys.executable, "-m", "tinytpu", "fuzz", "--seed", str(FAULT_SEED), "--index", str(i)],
                     cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
  assert r.returncode == 1, r.stdout + r.stderr
  assert s.failures[0][2] in r.stdout  # the same failure, shrunk to the same program
  assert f"fuzz: 1 programs, 1 mismatches, 0 unsupported, seed {FAULT_SEED}" in r.stdout


def test_snippet_runs_standalone():
  for i in range(8):
    prog = fuzzgen.generate(FAULT_SEED, i)
    if fuzzprog.check(prog).kind == "ok":
      exec(compile(fuzz.snippet(prog), f"<program {i}>", "exec"), {})  # asserts TINYTPU == PYTHON itself


def test_no_wide_dtypes():
  """Every value of every program is one of TinyTPU's dtypes (no float64/int64/half)."""
  for i in range(60):
    _, v, _ = fuzzprog.build(fuzzgen.generate(FAULT_SEED, i), "PYTHON", empty=True)
    assert v.dtype in fuzzprog.DTYPES


@pytest.mark.nightly
@pytest.mark.parametrize("chunk", range(10))
def test_nightly(chunk):
  seed, n = fuzz.today_seed(), 500
  s, text = _run(seed, n, chunk * n, max_shrinks=3)
  print(f"fuzz nightly: seed {seed}, programs {chunk * n}..{chunk * n + n - 1}\n{text}")
  failures = len(s.failures)
  assert failures == 0, f"seed {seed}: " + "\n".join(rep for _, _, rep in s.failures)


def test_no_domain_guard_over_int_min():
  """abs(INT_MIN) wraps to INT_MIN in tinygrad, also after a cast (it moves abs across the cast), so
  the `.abs() + 0.5` guard of log2/recip/sqrt cannot keep a value that may be INT_MIN in their
  domain (seed 20261206 index 1728: a NaN in a min-reduce, where PYTHON's answer depends on the
  order): the generator refuses such an op, and abs's bounds admit INT_MIN."""
  wide = fuzzprog.Val("int32", (3,), -2 ** 31, 5)
  unary = lambda k, a: fuzzprog.render(fuzzprog.Op("y", k, ("x",)), [a])  # noqa: E731
  for k in ("log2", "recip", "sqrt"):
    with pytest.raises(fuzzprog.Invalid):
      unary(k, wide)
  assert unary("log2", fuzzprog.Val("int32", (3,), -5, 5))[1][0] == -1.0  # log2(0.5): the guard holds
