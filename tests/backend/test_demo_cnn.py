"""The CNN demo (tinytpu/demo_cnn.py): its int8 model on TINYTPU against the same model in numpy,
bit for bit, with the convolutions and the dense head on the MXU; its ONNX export through tinygrad's
OnnxRunner on TINYTPU against the float numpy model. A short training keeps this fast; `make
demo-cnn` trains fully."""
import numpy as np
import pytest

from tinytpu import demo_cnn, digits
from tests.backend.test_backend import _mxu_kernels


@pytest.fixture(scope="module")
def trained():
  x_tr, y_tr, x_te, y_te = digits.load()
  net = demo_cnn.train(x_tr, y_tr, epochs=5)
  return net, demo_cnn.quantise(net, x_tr), x_te, y_te


def test_training_learns(trained):
  net, q, x_te, y_te = trained
  assert (net.forward(x_te.reshape(-1, 1, 8, 8)).argmax(1) == y_te).mean() > 0.8
  assert (demo_cnn.infer_numpy(q, x_te) == y_te).mean() > 0.8  # the int8 model keeps the float one's skill


def test_requant_multipliers_fit_int32(trained):
  _, q, _, _ = trained
  # |accumulator| * multiplier must not overflow int32 on the device
  assert q.m1.max() * (127 * 9 * 16 + np.abs(q.b1).max()) < 2 ** 31
  assert q.m2.max() * (127 * 9 * demo_cnn.C1 * 127 + np.abs(q.b2).max()) < 2 ** 31


def test_int8_cnn_on_tinytpu_is_bit_exact_and_on_the_mxu(trained):
  _, q, x_te, _ = trained
  got, mxu = _mxu_kernels(lambda: demo_cnn.tinytpu_model(q)(x_te[:12]).numpy())
  np.testing.assert_array_equal(got, demo_cnn.logits_numpy(q, x_te[:12]))
  assert mxu >= 3  # conv1, conv2 and the dense head


def test_onnx_export_through_onnx_runner(trained, tmp_path):
  net, _, x_te, _ = trained
  path = str(tmp_path / "cnn.onnx")
  demo_cnn.export_onnx(net, path)
  got = demo_cnn.onnx_logits(path, x_te[:7], batch=4)  # a short last batch
  np.testing.assert_allclose(got, net.forward(x_te[:7].reshape(-1, 1, 8, 8)), rtol=1e-4, atol=1e-4)
