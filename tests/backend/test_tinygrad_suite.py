"""tinygrad's own test/test_tiny.py (from the 0.14.0 source distribution, fetched once into build/)
run with DEV=TINYTPU: every test passes or is skipped by tinygrad itself for device reasons."""
import os
import pathlib
import re
import subprocess
import sys
import tarfile

ROOT = pathlib.Path(__file__).resolve().parents[2]
SRC = ROOT / "build" / "tinygrad-0.14.0"


def fetch_test_tiny() -> pathlib.Path:
  dst = SRC / "test" / "test_tiny.py"
  if not dst.exists():
    (ROOT / "build").mkdir(exist_ok=True)
    subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--no-binary", ":all:", "tinygrad==0.14.0",
                    "-d", str(ROOT / "build")], check=True)
    with tarfile.open(ROOT / "build" / "tinygrad-0.14.0.tar.gz") as tf:
      tf.extract("tinygrad-0.14.0/test/test_tiny.py", ROOT / "build", filter="data")
  return dst


def test_tinygrad_test_tiny():
  path = fetch_test_tiny()
  env = dict(os.environ, DEV="TINYTPU")
  r = subprocess.run([sys.executable, "-m", "pytest", "-p", "tinytpu", "-p", "no:cacheprovider", "-o", "addopts=", "--rootdir", str(path.parent), str(path)],
                     cwd=path.parent.parent, env=env, capture_output=True, text=True, timeout=1800)
  summary = r.stdout.strip().splitlines()[-1] if r.stdout.strip() else r.stderr[-2000:]
  print(f"test_tiny.py on TINYTPU ({env.get('TINYTPU_SIM', 'rtl')}): {summary}")
  passed = int(m[1]) if (m := re.search(r"(\d+) passed", summary)) else 0
  assert r.returncode == 0 and passed >= 19, r.stdout[-4000:] + r.stderr[-2000:]
