"""`make demo-cnn` / `python -m tinytpu demo --model cnn`: a small conv net for scikit-learn's 8x8
digits, trained on the host with numpy, quantised to int8 with per-channel weight scales, and run
for the test split through tinygrad on TINYTPU: both convolutions and the dense head on the MXU
(implicit GEMMs), the requantisation (multiply, round, shift, clip) in the same kernels. The float
model is also exported to ONNX and run through tinygrad's OnnxRunner on TINYTPU.

Net: 1x8x8 -> conv 3x3 pad 1 (C1) -> ReLU -> maxpool 2 -> conv 3x3 pad 1 (C2) -> ReLU -> maxpool 2
-> dense (C2*2*2 -> 10)."""
from __future__ import annotations

import dataclasses
import os
import sys
import time

import numpy as np

C1, C2 = 8, 16
MULT_BITS = 30  # |accumulator * multiplier| stays below 2^30: int32 without overflow


# ---- float model, numpy (im2col convolutions)

def _im2col(x: np.ndarray) -> np.ndarray:
  """(B, C, H, W) -> (B, H, W, C*9) windows of a 3x3 convolution with padding 1."""
  B, C, H, W = x.shape
  p = np.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1)))
  cols = np.stack([p[:, :, i:i + H, j:j + W] for i in range(3) for j in range(3)], axis=2)  # B, C, 9, H, W
  return cols.transpose(0, 3, 4, 1, 2).reshape(B, H, W, C * 9)


def _col2im(d: np.ndarray, C: int) -> np.ndarray:
  """The adjoint of _im2col: (B, H, W, C*9) -> (B, C, H, W)."""
  B, H, W, _ = d.shape
  d = d.reshape(B, H, W, C, 9).transpose(0, 3, 4, 1, 2)
  out = np.zeros((B, C, H + 2, W + 2), d.dtype)
  for k in range(9):
    i, j = divmod(k, 3)
    out[:, :, i:i + H, j:j + W] += d[:, :, k]
  return out[:, :, 1:-1, 1:-1]


def _pool(x: np.ndarray):
  B, C, H, W = x.shape
  v = x.reshape(B, C, H // 2, 2, W // 2, 2)
  m = v.max(axis=(3, 5))
  return m, (v == m[:, :, :, None, :, None])


def _unpool(d: np.ndarray, mask: np.ndarray) -> np.ndarray:
  B, C, h, w = d.shape
  first = mask & (np.cumsum(np.cumsum(mask, 3), 5) == 1)  # one winner per window
  return (first * d[:, :, :, None, :, None]).reshape(B, C, 2 * h, 2 * w)


@dataclasses.dataclass
class FloatNet:
  w1: np.ndarray  # (C1, 1, 3, 3)
  b1: np.ndarray
  w2: np.ndarray  # (C2, C1, 3, 3)
  b2: np.ndarray
  w3: np.ndarray  # (C2*4, 10)
  b3: np.ndarray

  def forward(self, x: np.ndarray, keep: bool = False):
    c1 = _im2col(x)
    a1 = c1 @ self.w1.reshape(C1, -1).T + self.b1  # B, 8, 8, C1
    r1 = np.maximum(a1, 0).transpose(0, 3, 1, 2)
    p1, m1 = _pool(r1)
    c2 = _im2col(p1)
    a2 = c2 @ self.w2.reshape(C2, -1).T + self.b2
    r2 = np.maximum(a2, 0).transpose(0, 3, 1, 2)
    p2, m2 = _pool(r2)
    f = p2.reshape(len(x), -1)
    z = f @ self.w3 + self.b3
    return (z, (c1, a1, m1, p1, c2, a2, m2, f)) if keep else z


def train(x: np.ndarray, y: np.ndarray, epochs: int = 30, lr: float = 0.05, batch: int = 64, seed: int = 0) -> FloatNet:
  """Minibatch SGD with momentum on inputs scaled to [0, 1]; the scale is folded into w1 at the end
  so the model takes raw 0..16 pixels."""
  rng = np.random.default_rng(seed)
  he = lambda *s: (rng.standard_normal(s) * np.sqrt(2 / np.prod(s[1:]))).astype(np.float32)
  net = FloatNet(he(C1, 1, 3, 3), np.zeros(C1, np.float32), he(C2, C1, 3, 3), np.zeros(C2, np.float32),
                 (rng.standard_normal((C2 * 4, 10)) * np.sqrt(2 / (C2 * 4))).astype(np.float32), np.zeros(10, np.float32))
  names = ["w1", "b1", "w2", "b2", "w3", "b3"]
  vel = {n: np.zeros_like(getattr(net, n)) for n in names}
  xs = (x / 16.0).astype(np.float32).reshape(-1, 1, 8, 8)
  onehot = np.eye(10, dtype=np.float32)[y]
  for _ in range(epochs):
    order = rng.permutation(len(xs))
    for s in range(0, len(xs), batch):
      b = order[s:s + batch]
      z, (c1, a1, m1, p1, c2, a2, m2, f) = net.forward(xs[b], keep=True)
      p = np.exp(z - z.max(1, keepdims=True))
      p /= p.sum(1, keepdims=True)
      dz = (p - onehot[b]) / len(b)
      g = {"w3": f.T @ dz, "b3": dz.sum(0)}
      dp2 = (dz @ net.w3.T).reshape(len(b), C2, 2, 2)
      da2 = (_unpool(dp2, m2).transpose(0, 2, 3, 1)) * (a2 > 0)
      g["w2"], g["b2"] = (da2.reshape(-1, C2).T @ c2.reshape(-1, C1 * 9)).reshape(net.w2.shape), da2.sum((0, 1, 2))
      dp1 = _col2im(da2 @ net.w2.reshape(C2, -1), C1)
      da1 = (_unpool(dp1, m1).transpose(0, 2, 3, 1)) * (a1 > 0)
      g["w1"], g["b1"] = (da1.reshape(-1, C1).T @ c1.reshape(-1, 9)).reshape(net.w1.shape), da1.sum((0, 1, 2))
      for n in names:
        vel[n] = 0.9 * vel[n] - lr * g[n]
        setattr(net, n, getattr(net, n) + vel[n])
  net.w1 = net.w1 / 16.0
  return net


# ---- int8 model: per-channel weight scales, a multiply-and-shift requantisation per channel

@dataclasses.dataclass
class QuantNet:
  w1: np.ndarray  # int8 (C1, 1, 3, 3)
  b1: np.ndarray  # int32 in the accumulator's scale
  m1: np.ndarray  # int32 multiplier and shift per channel: q = clip((acc * m + 2^(s-1)) >> s, 0, 127)
  s1: np.ndarray
  w2: np.ndarray
  b2: np.ndarray
  m2: np.ndarray
  s2: np.ndarray
  w3: np.ndarray  # int8 (C2*4, 10)
  b3: np.ndarray


def _weights(w: np.ndarray, axis: int):
  """Symmetric int8 per output channel (axis): (int8 weights, scale per channel)."""
  red = tuple(i for i in range(w.ndim) if i != axis)
  s = np.maximum(np.abs(w).max(axis=red), 1e-8) / 127
  shape = [1] * w.ndim
  shape[axis] = -1
  return np.clip(np.round(w / s.reshape(shape)), -127, 127).astype(np.int8), s


def _requant(scale: np.ndarray, acc_max: float):
  """scale ~ m / 2^shift per channel, m as large as int32 arithmetic allows for accumulators up to
  acc_max (every channel keeps the same relative precision)."""
  bits = max(1, MULT_BITS - int(np.ceil(np.log2(max(2.0, acc_max)))))
  shift = np.maximum(1, bits - np.ceil(np.log2(scale)).astype(np.int64) - 1)
  m = np.round(scale * (2.0 ** shift)).astype(np.int64)
  if m.max() >= (1 << bits) or shift.max() >= 31:  # not representable: the model's scales are out of range
    raise ValueError(f"requantisation: multiplier {m.max()} needs more than {bits} bits or shift {shift.max()} >= 31 "
                     f"(scale {scale.min():.3g}..{scale.max():.3g}, accumulators up to {acc_max:.3g})")
  return m.astype(np.int32), shift.astype(np.int32)


def quantise(net: FloatNet, x_cal: np.ndarray) -> QuantNet:
  """Activations after each ReLU+pool in [0, 127] with a scale per layer calibrated on x_cal (raw
  pixels are the int8 input at scale 1), folded into the next layer's weights before those are
  quantised per output channel."""
  xs = x_cal.reshape(-1, 1, 8, 8).astype(np.float32)
  _, (_, _, _, p1, _, _, _, f) = net.forward(xs, keep=True)
  # one scale per layer output (a scale per channel, folded into the next weights, measured worse:
  # the next layer's per-channel weight scales then lose the small channels)
  sa1 = np.full(C1, max(p1.max(), 1e-8) / 127)
  sa2 = np.full(C2, max(f.max(), 1e-8) / 127)
  w1q, sw1 = _weights(net.w1, 0)
  b1q = np.round(net.b1 / sw1).astype(np.int32)
  acc1 = np.abs(_im2col(xs) @ w1q.reshape(C1, -1).T.astype(np.float32) + b1q).max()
  m1, s1 = _requant(sw1 / sa1, acc1)
  w2q, sw2 = _weights(net.w2 * sa1.reshape(1, C1, 1, 1), 0)  # in units of layer 1's int8 output
  b2q = np.round(net.b2 / sw2).astype(np.int32)
  acc2 = 127 * C1 * 9 * 127 + np.abs(b2q).max()
  m2, s2 = _requant(sw2 / sa2, acc2)
  # the logits keep one scale (a scale per class would reorder the argmax)
  w3 = net.w3 * np.repeat(sa2, 4)[:, None]
  sw3 = max(np.abs(w3).max(), 1e-8) / 127
  w3q = np.clip(np.round(w3 / sw3), -127, 127).astype(np.int8)
  b3q = np.round(net.b3 / sw3).astype(np.int32)
  return QuantNet(w1q, b1q, m1, s1, w2q, b2q, m2, s2, w3q, b3q)


def _np_conv(x: np.ndarray, w: np.ndarray, b: np.ndarray) -> np.ndarray:
  """int32 3x3 pad-1 convolution, NCHW."""
  C = w.shape[0]
  a = _im2col(x.astype(np.int64)) @ w.reshape(C, -1).T.astype(np.int64) + b
  return a.transpose(0, 3, 1, 2)


def _np_requant(a: np.ndarray, m: np.ndarray, s: np.ndarray) -> np.ndarray:
  m, s = m.reshape(1, -1, 1, 1).astype(np.int64), s.reshape(1, -1, 1, 1).astype(np.int64)
  return np.clip((np.maximum(a, 0) * m + (1 << (s - 1))) >> s, 0, 127)


def logits_numpy(q: QuantNet, x: np.ndarray) -> np.ndarray:
  """The int8 model in numpy: what TINYTPU must reproduce bit for bit."""
  h = x.reshape(-1, 1, 8, 8).astype(np.int64)
  h = _pool(_np_requant(_np_conv(h, q.w1, q.b1), q.m1, q.s1))[0]
  h = _pool(_np_requant(_np_conv(h, q.w2, q.b2), q.m2, q.s2))[0]
  return h.reshape(len(h), -1) @ q.w3.astype(np.int64) + q.b3


def infer_numpy(q: QuantNet, x: np.ndarray) -> np.ndarray:
  return logits_numpy(q, x).argmax(1)


def tinytpu_model(q: QuantNet):
  """x (raw pixels) -> the int8 model's int32 logits as a tinygrad Tensor on TINYTPU."""
  from tinygrad import Tensor, dtypes
  i32 = lambda a: Tensor(np.ascontiguousarray(a), device="TINYTPU").cast(dtypes.int32)
  i32 = lambda a: Tensor(np.ascontiguousarray(a), device="TINYTPU").cast(dtypes.int32).realize()  # noqa: E731
  chan = lambda v: i32(v.reshape(1, -1, 1, 1))
  L1 = i32(q.w1), chan(q.b1), chan(q.m1), chan(1 << (q.s1 - 1)), chan(q.s1)
  L2 = i32(q.w2), chan(q.b2), chan(q.m2), chan(1 << (q.s2 - 1)), chan(q.s2)
  W3, B3 = i32(q.w3), i32(q.b3)
  def layer(h, w, b, m, r, s):
    a = (h.conv2d(w, padding=1) + b).relu()
    return ((a * m + r) >> s).minimum(127).max_pool2d(2)
  def model(x):
    """x: raw pixels as numpy, or an int32 Tensor (B, 1, 8, 8) on TINYTPU."""
    h = x if isinstance(x, Tensor) else Tensor(np.ascontiguousarray(x.reshape(-1, 1, 8, 8).astype(np.int8)), device="TINYTPU").cast(dtypes.int32)
    h = layer(layer(h, *L1), *L2)
    return h.reshape(h.shape[0], -1) @ W3 + B3
  return model


def infer_tinytpu(q: QuantNet, x: np.ndarray, batch: int, progress):
  from tinytpu.backend import runner
  model, preds = tinytpu_model(q), []
  runner.reset_stats()
  for i in range(0, len(x), batch):
    preds.append(model(x[i:i + batch]).argmax(1).numpy())
    progress(min(i + batch, len(x)), len(x), runner.STATS["cycles"])
  return np.concatenate(preds), runner.STATS["cycles"]


def random_quantnet(seed: int = 0) -> QuantNet:
  """A QuantNet of random int8 weights (make bench's cnn_digits: the demo's shapes, no training)."""
  rng = np.random.default_rng(seed)
  w = lambda *s: rng.integers(-127, 128, s).astype(np.int8)  # noqa: E731
  b = lambda n: rng.integers(-2000, 2000, n).astype(np.int32)  # noqa: E731
  m = lambda n: rng.integers(1 << 10, 1 << 11, n).astype(np.int32)  # noqa: E731
  return QuantNet(w(C1, 1, 3, 3), b(C1), m(C1), np.full(C1, 14, np.int32), w(C2, C1, 3, 3), b(C2), m(C2), np.full(C2, 18, np.int32),
                  w(C2 * 4, 10), b(10))


def macs_per_image() -> int:
  return 8 * 8 * C1 * 9 + 4 * 4 * C2 * C1 * 9 + C2 * 4 * 10


# ---- ONNX: the float model as a file, run by tinygrad's OnnxRunner

def export_onnx(net: FloatNet, path: str) -> None:
  import onnx
  from onnx import TensorProto, helper, numpy_helper
  inits = [numpy_helper.from_array(np.ascontiguousarray(a.astype(np.float32)), n) for n, a in
           (("w1", net.w1), ("b1", net.b1), ("w2", net.w2), ("b2", net.b2), ("w3", net.w3), ("b3", net.b3))]
  inits.append(numpy_helper.from_array(np.array([-1, C2 * 4], np.int64), "flat"))
  conv = lambda i, w, b, o: helper.make_node("Conv", [i, w, b], [o], kernel_shape=[3, 3], pads=[1, 1, 1, 1])
  pool = lambda i, o: helper.make_node("MaxPool", [i], [o], kernel_shape=[2, 2], strides=[2, 2])
  nodes = [conv("x", "w1", "b1", "a1"), helper.make_node("Relu", ["a1"], ["r1"]), pool("r1", "p1"),
           conv("p1", "w2", "b2", "a2"), helper.make_node("Relu", ["a2"], ["r2"]), pool("r2", "p2"),
           helper.make_node("Reshape", ["p2", "flat"], ["f"]), helper.make_node("Gemm", ["f", "w3", "b3"], ["logits"])]
  graph = helper.make_graph(nodes, "digits_cnn", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 1, 8, 8])],
                            [helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["batch", 10])], inits)
  model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], producer_name="tinytpu.demo_cnn")
  onnx.checker.check_model(model)
  onnx.save(model, path)


def onnx_logits(path: str, x: np.ndarray, batch: int) -> np.ndarray:
  from tinygrad import Context, Tensor
  from tinygrad.nn.onnx import OnnxRunner
  with Context(DEV="TINYTPU"):  # the runner puts the initialisers on the default device
    runner = OnnxRunner(path)
    preds = []
    for i in range(0, len(x), batch):
      xb = np.zeros((batch, 1, 8, 8), np.float32)  # the runner binds the batch dimension at its first call: pad the last
      n = len(xb[:len(x) - i])
      xb[:n] = x[i:i + batch].reshape(-1, 1, 8, 8)
      preds.append(runner({"x": Tensor(xb, device="TINYTPU")})["logits"].numpy()[:n])
  return np.concatenate(preds)


def main(args) -> int:
  from tinytpu import digits
  from tinytpu.backend.device import backend_config, register
  register()  # the start-up hook does it too, unless TINYTPU_AUTOLOAD=0
  x_tr, y_tr, x_te, y_te = digits.load()
  if args.limit:
    x_te, y_te = x_te[:args.limit], y_te[:args.limit]
  t0 = time.time()
  net = train(x_tr, y_tr)
  float_acc = (net.forward(x_te.reshape(-1, 1, 8, 8)).argmax(1) == y_te).mean()
  q = quantise(net, x_tr)
  ref = infer_numpy(q, x_te)
  print(f"digits: {len(x_tr)} train / {len(x_te)} test images, conv {C1}-{C2} + dense CNN trained on the host in {time.time() - t0:.1f} s")
  print(f"float reference accuracy   {100 * float_acc:6.2f} %")
  print(f"int8 numpy reference       {100 * (ref == y_te).mean():6.2f} %  (per-channel scales, multiply-and-shift requantisation)")
  if os.environ["TINYTPU_SIM"] != "golden":
    from tinytpu import cosim
    print(f"building the Verilator co-simulation of {backend_config().name} (once; cached) ...", flush=True)
    cosim.build(backend_config())

  def progress(done, total, cycles):
    sys.stdout.write(f"\rTINYTPU ({os.environ['TINYTPU_SIM']}) [{'#' * (30 * done // total):30s}] {done}/{total} images, {cycles} cycles")
    sys.stdout.flush()

  t0 = time.time()
  pred, cycles = infer_tinytpu(q, x_te, args.batch, progress)
  wall = time.time() - t0
  util = len(x_te) * macs_per_image() / backend_config().N ** 2 / max(1, cycles)
  print(f"\nint8 accuracy on TINYTPU   {100 * (pred == y_te).mean():6.2f} %  (float reference {100 * float_acc:.2f} %)")
  print(f"cycles {cycles}  ({cycles / len(x_te):.0f} per image), MAC utilisation {util:.3f}, wall {wall:.1f} s")
  agree = (pred == ref).mean()
  print(f"agreement with the int8 numpy model: {100 * agree:.2f} %")
  status = 0 if agree == 1.0 else 1
  if not args.no_onnx:
    import tempfile
    with tempfile.TemporaryDirectory() as d:
      path = os.path.join(d, "digits_cnn.onnx")
      export_onnx(net, path)
      t0 = time.time()
      opred = onnx_logits(path, x_te, args.batch).argmax(1)
    oacc = (opred == y_te).mean()
    print(f"ONNX float model through tinygrad's OnnxRunner on TINYTPU: accuracy {100 * oacc:6.2f} % "
          f"(float reference {100 * float_acc:.2f} %), {time.time() - t0:.1f} s")
    same = (opred == net.forward(x_te.reshape(-1, 1, 8, 8)).argmax(1)).mean()
    print(f"agreement with the float numpy model: {100 * same:.2f} %")
    status |= 0 if same >= 0.99 else 1
  return status
