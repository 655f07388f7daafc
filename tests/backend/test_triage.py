"""`python -m tinytpu triage`: the demo's ONNX file runs end to end (exit 0, kernels listed with their
lowering); an unsupported dtype, host work and each kind of failure get their line, where the fix
belongs, and exit 1."""
import subprocess
import sys

import pytest

from tinytpu import demo_cnn, digits, triage


@pytest.fixture(scope="module")
def onnx_file(tmp_path_factory):
  x_tr, y_tr, _, _ = digits.load()
  path = tmp_path_factory.mktemp("triage") / "digits_cnn.onnx"
  demo_cnn.export_onnx(demo_cnn.train(x_tr[:100], y_tr[:100], epochs=1), str(path))
  return path


def _triage(*args, sim="golden"):
  import os
  r = subprocess.run([sys.executable, "-m", "tinytpu", "triage", *map(str, args)], capture_output=True, text=True, timeout=900,
                     env={**os.environ, "TINYTPU_SIM": sim})
  return r.returncode, r.stdout + r.stderr


def test_demo_onnx_runs_end_to_end(onnx_file):
  code, out = _triage(onnx_file, "--dim", "2")
  assert code == 0, out
  assert "verdict: ran end to end on TINYTPU with no host work" in out
  assert "r_2_16_4_4_8_3_3" in out and "output logits: shape (2, 10)" in out  # conv2 of a batch of 2, the logits


def test_unsupported_dtype(tmp_path):
  script = tmp_path / "f64.py"
  script.write_text("from tinygrad import Tensor, dtypes\nprint((Tensor([1.0, 2.0], dtype=dtypes.float64) * 2).numpy())\n")
  code, out = _triage(script)
  assert code == 1, out
  assert "FAILED [hardware] Ops.PARAM on dtypes.double" in out and "(kernel " in out
  assert "verdict: did not run end to end on TINYTPU: hardware: Ops.PARAM on dtypes.double" in out


def test_unsupported_onnx_operator(tmp_path):
  import onnx
  from onnx import TensorProto, helper
  io = [helper.make_tensor_value_info(n, TensorProto.FLOAT, [2, 3]) for n in ("x", "y")]
  graph = helper.make_graph([helper.make_node("FooBarOp", ["x"], ["y"], domain="com.example")], "bad", io[:1], io[1:])
  path = tmp_path / "bad_op.onnx"
  onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("com.example", 1)]), str(path))
  code, out = _triage(path)
  assert code == 1 and "Traceback" not in out, out
  assert "FAILED [tinygrad ONNX import] an ONNX operator or attribute tinygrad's OnnxRunner does not implement" in out
  assert "verdict: did not run end to end on TINYTPU: tinygrad ONNX import" in out


def test_host_work_fails_the_verdict(tmp_path):
  script = tmp_path / "host.py"
  script.write_text("from tinygrad import Tensor\nprint(((Tensor([1, 2]).to('PYTHON') * 2).to('TINYTPU') + 1).numpy())\n")
  code, out = _triage(script)
  assert code == 1 and "host work on PYTHON (1 kernels)" in out, out


def test_missing_file():
  code, out = _triage("/nonexistent/model.onnx")
  assert code == 2 and "no such file" in out


@pytest.mark.parametrize("exc, where, what", [
  (RuntimeError("TINYTPU kernel r_1: needs 70000 VMEM tiles, the core has 1024"), "hardware", "HBM/DMA"),
  (RuntimeError("TINYTPU kernel r_2: retires 9 instructions (at least 4 cycles), more than the watchdog allows"), "backend", "too long"),
  (ValueError("TINYTPU kernel r_3: matmul operand buffer 1 holds values in [0, 300], outside int8 [-128, 127]"), "model", "int8"),
  (NotImplementedError("TINYTPU cannot lower Ops.IF (dtypes.void): nested IF (kernel r_4)"), "backend", "Ops.IF on dtypes.void"),
  (NotImplementedError("TINYTPU cannot lower Ops.CAST (dtypes.long): cast dtypes.int -> dtypes.long: only 32-bit lane dtypes (int32)"),
   "hardware", "Ops.CAST on dtypes.long"),
  (RuntimeError("TINYTPU kernel E_4: trap vmem_out_of_range at pc=7; bundle kept in build/x.bundle"), "backend", "traps"),
  (RuntimeError("TINYTPU kernel E_5: timeout at pc=3; bundle kept in build/x.bundle"), "backend", "traps"),
  (ValueError("the trapezoid rule needs two points"), "model", "before reaching TINYTPU"),  # a word containing "trap"
])
def test_classify(exc, where, what):
  f = triage.classify(exc)
  assert f.where == where and what in f.what, f
