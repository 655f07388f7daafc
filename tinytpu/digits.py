"""scikit-learn's bundled 8x8 digits, split the same way for every demo (tinytpu/demo.py, demo_cnn.py)."""
import numpy as np


def load(seed: int = 0):
  from sklearn.datasets import load_digits
  d = load_digits()
  x, y = d.data.astype(np.float32), d.target.astype(np.int64)
  idx = np.random.default_rng(seed).permutation(len(x))
  n_test = len(x) // 5
  te, tr = idx[:n_test], idx[n_test:]
  return x[tr], y[tr], x[te], y[te]
