"""`make demo`: an int8 MLP classifier for scikit-learn's bundled 8x8 digits, trained on the host with
numpy, quantised, and run for the whole test split through tinygrad on the TINYTPU device (the RTL
co-simulation unless TINYTPU_SIM says otherwise)."""
from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np

from tinytpu.digits import load

HIDDEN = 32


def train(x, y, epochs: int = 200, lr: float = 0.1, seed: int = 0):
  """A 64-32-10 ReLU MLP trained with full-batch gradient descent and momentum."""
  rng = np.random.default_rng(seed)
  xs = x / 16.0
  w1 = rng.standard_normal((64, HIDDEN)).astype(np.float32) * np.sqrt(2 / 64)
  b1 = np.zeros(HIDDEN, np.float32)
  w2 = rng.standard_normal((HIDDEN, 10)).astype(np.float32) * np.sqrt(2 / HIDDEN)
  b2 = np.zeros(10, np.float32)
  params = [w1, b1, w2, b2]
  vel = [np.zeros_like(p) for p in params]
  onehot = np.eye(10, dtype=np.float32)[y]
  for _ in range(epochs):
    h = np.maximum(xs @ w1 + b1, 0)
    z = h @ w2 + b2
    p = np.exp(z - z.max(1, keepdims=True))
    p /= p.sum(1, keepdims=True)
    dz = (p - onehot) / len(x)
    dh = (dz @ w2.T) * (h > 0)
    grads = [xs.T @ dh, dh.sum(0), h.T @ dz, dz.sum(0)]
    for p_, v, g in zip(params, vel, grads):
      v *= 0.9
      v -= lr * g
      p_ += v
  return w1 / 16.0, b1, w2, b2  # fold the input scaling into w1: the model takes raw 0..16 pixels


def quantise(w1, b1, w2, b2, x_cal):
  """Symmetric int8 weights; int32 biases in the accumulator scale; a power-of-two requantisation of
  the hidden layer calibrated on training data so it fits int8."""
  s1 = np.abs(w1).max() / 127
  w1q = np.round(w1 / s1).astype(np.int8)
  b1q = np.round(b1 / s1).astype(np.int32)
  h = np.maximum(x_cal.astype(np.int32) @ w1q.astype(np.int32) + b1q, 0)
  shift = max(0, int(np.ceil(np.log2(max(1, h.max()) / 127))))
  s2 = np.abs(w2).max() / 127
  w2q = np.round(w2 / s2).astype(np.int8)
  b2q = np.round(b2 / (s1 * (1 << shift) * s2)).astype(np.int32)
  return w1q, b1q, shift, w2q, b2q


def infer_numpy(x, w1q, b1q, shift, w2q, b2q):
  h = np.maximum(x.astype(np.int32) @ w1q.astype(np.int32) + b1q, 0) >> shift
  h = np.minimum(h, 127)
  return (h @ w2q.astype(np.int32) + b2q).argmax(1)


def infer_tinytpu(x, q, batch: int, progress):
  from tinytpu.backend.device import register
  register()  # the start-up hook does it too, unless TINYTPU_AUTOLOAD=0
  from tinygrad import Tensor, dtypes
  from tinytpu.backend import runner
  w1q, b1q, shift, w2q, b2q = q
  D = "TINYTPU"
  W1, B1 = Tensor(w1q, device=D).cast(dtypes.int32), Tensor(b1q, device=D)
  W2, B2 = Tensor(w2q, device=D).cast(dtypes.int32), Tensor(b2q, device=D)
  preds = []
  runner.reset_stats()
  for i in range(0, len(x), batch):
    xb = Tensor(x[i:i + batch].astype(np.int8), device=D).cast(dtypes.int32)
    h = ((xb @ W1 + B1).relu() >> shift).minimum(127)
    preds.append((h @ W2 + B2).argmax(1).numpy())
    progress(min(i + batch, len(x)), len(x), runner.STATS["cycles"])
  return np.concatenate(preds), runner.STATS["cycles"]


def main(argv: list[str] | None = None) -> int:
  ap = argparse.ArgumentParser(prog="python -m tinytpu demo", description=__doc__)
  ap.add_argument("--batch", type=int, default=60)
  ap.add_argument("--limit", type=int, default=0, help="only the first LIMIT test images (0: all)")
  ap.add_argument("--model", choices=["mlp", "cnn"], default="mlp", help="the int8 MLP, or the conv net (tinytpu/demo_cnn.py)")
  ap.add_argument("--no-onnx", action="store_true", help="cnn: skip the ONNX export and its run through tinygrad's OnnxRunner")
  args = ap.parse_args(argv)
  os.environ.setdefault("TINYTPU_SIM", "rtl")
  if args.model == "cnn":
    from tinytpu import demo_cnn
    return demo_cnn.main(args)
  x_tr, y_tr, x_te, y_te = load()
  if args.limit:
    x_te, y_te = x_te[:args.limit], y_te[:args.limit]
  t0 = time.time()
  w1, b1, w2, b2 = train(x_tr, y_tr)
  float_acc = (np.maximum(x_te @ w1 + b1, 0) @ w2 + b2).argmax(1).__eq__(y_te).mean()
  q = quantise(w1, b1, w2, b2, x_tr)
  print(f"digits: {len(x_tr)} train / {len(x_te)} test images, 64-{HIDDEN}-10 MLP trained on the host in {time.time() - t0:.1f} s")
  print(f"float reference accuracy   {100 * float_acc:6.2f} %")
  print(f"int8 numpy reference       {100 * (infer_numpy(x_te, *q) == y_te).mean():6.2f} %")

  def progress(done, total, cycles):
    bar = "#" * (30 * done // total)
    sys.stdout.write(f"\rTINYTPU ({os.environ['TINYTPU_SIM']}) [{bar:30s}] {done}/{total} images, {cycles} cycles")
    sys.stdout.flush()

  if os.environ["TINYTPU_SIM"] != "golden":
    from tinytpu import cosim
    from tinytpu.backend.device import backend_config
    print(f"building the Verilator co-simulation of {backend_config().name} (once; cached under build/) ...", flush=True)
    cosim.build(backend_config())
  t0 = time.time()
  pred, cycles = infer_tinytpu(x_te, q, args.batch, progress)
  wall = time.time() - t0
  acc = (pred == y_te).mean()
  macs = len(x_te) * (64 * HIDDEN + HIDDEN * 10)
  from tinytpu.backend.device import backend_config
  util = macs / (backend_config().N ** 2) / max(1, cycles)
  print(f"\nint8 accuracy on TINYTPU   {100 * acc:6.2f} %  (float reference {100 * float_acc:.2f} %)")
  print(f"cycles {cycles}  ({cycles / len(x_te):.0f} per image), MAC utilisation {util:.3f}, wall {wall:.1f} s")
  agree = (pred == infer_numpy(x_te, *q)).mean()
  print(f"agreement with the int8 numpy model: {100 * agree:.2f} %")
  return 0 if agree == 1.0 else 1
