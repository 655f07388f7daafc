"""The bundle tools of the command line: `run` (golden and/or RTL), `asm` (TASM -> bundle) and `disasm`
(bundle or hex words -> TASM). Exit codes: 0 status ok, 1 trap/timeout (or RTL and golden differ),
2 a bad input file, 3 the RTL co-simulation is not available."""
from __future__ import annotations

import argparse
import importlib.util
import pathlib
import sys

from tinytpu import asm, bundle, isa
from tinytpu.config import Config, ConfigError

NO_RTL = "RTL co-simulation is not built in this tree yet; use --golden"


def _read(path: str) -> str:
  return sys.stdin.read() if path == "-" else pathlib.Path(path).read_text()


def _err(msg: str, code: int = 2) -> int:
  print(msg, file=sys.stderr)
  return code


def run_rtl(text: str, config: Config) -> bundle.Result:
  """Run bundle text on the RTL co-simulation (tinytpu.cosim, when this tree has it)."""
  if importlib.util.find_spec("tinytpu.cosim") is None:
    raise FileNotFoundError(NO_RTL)
  from tinytpu import cosim
  r = cosim.run_bundle(text, config)
  return r if isinstance(r, bundle.Result) else bundle.parse_result(r, config)


def run_golden(b: bundle.Bundle) -> bundle.Result:
  try:
    from tinytpu.golden import interp
  except ImportError as e:
    raise FileNotFoundError(f"the golden interpreter cannot be imported: {e}") from None
  return interp.run(b)


def main(argv: list[str]) -> int:
  ap = argparse.ArgumentParser(prog="python -m tinytpu run", description="run a bundle and print its result (exit 0 only on status ok)")
  ap.add_argument("bundle", help="bundle file, or - for stdin")
  which = ap.add_mutually_exclusive_group()
  which.add_argument("--golden", action="store_true", help="run the golden interpreter instead of the RTL")
  which.add_argument("--both", action="store_true", help="run both, print the RTL result and fail on any difference")
  ap.add_argument("--config", help="the model's configuration, e.g. N=8,VMEM_TILES=256 (default: the bundle header's)")
  args = ap.parse_args(argv)
  try:
    text = _read(args.bundle)
    b = bundle.parse(text, Config.from_str(args.config) if args.config else None)
  except (OSError, ValueError) as e:  # BundleError, ConfigError
    return _err(str(e))
  try:
    r = run_golden(b) if args.golden else run_rtl(text, b.config)
    if args.both and (diffs := bundle.diff_results(r, run_golden(b))):
      sys.stdout.write(bundle.format_result(r))
      return _err("RTL and golden results differ (RTL != golden):\n  " + "\n  ".join(diffs), 1)
  except FileNotFoundError as e:
    return _err(str(e), 3)
  except bundle.BundleError as e:  # the co-sim loader's own validation
    return _err(str(e))
  sys.stdout.write(bundle.format_result(r))
  return 0 if r.status == "ok" else 1


def asm_main(argv: list[str]) -> int:
  ap = argparse.ArgumentParser(prog="python -m tinytpu asm", description="assemble a TASM file into a bundle")
  ap.add_argument("file", help="TASM file, or - for stdin")
  ap.add_argument("-o", "--output", help="bundle file to write (default: stdout)")
  ap.add_argument("--config", help="configuration, e.g. N=8,VMEM_TILES=256 (default: the default config)")
  args = ap.parse_args(argv)
  try:
    b = asm.assemble_bundle(_read(args.file), Config.from_str(args.config) if args.config else Config())
  except asm.AsmError as e:
    return _err(f"error {e}")
  except (OSError, ConfigError) as e:
    return _err(str(e))
  text = bundle.write(b)
  if args.output:
    pathlib.Path(args.output).write_text(text)
  else:
    sys.stdout.write(text)
  return 0


def parse_hex_words(text: str) -> list[int]:
  """One 64-bit hex word a line (0x optional, `#` comments); ValueError('error line L: why')."""
  words = []
  for ln, raw in enumerate(text.splitlines(), 1):
    for t in raw.split("#", 1)[0].split():
      try:
        w = int(t, 16)
      except ValueError:
        raise ValueError(f"error line {ln}: malformed hex word {t!r}") from None
      if not 0 <= w < 1 << isa.WORD_BITS:
        raise ValueError(f"error line {ln}: {t} is not a 64-bit word")
      words.append(w)
  return words


def disasm_main(argv: list[str]) -> int:
  ap = argparse.ArgumentParser(prog="python -m tinytpu disasm",
                               description="disassemble a bundle (into a TASM file that `asm` turns back into it) or a file of hex words")
  ap.add_argument("file", help="bundle or hex word file, or - for stdin")
  ap.add_argument("--config", help="configuration (default: the bundle header's, or the default config for hex words)")
  args = ap.parse_args(argv)
  try:
    text = _read(args.file)
    config = Config.from_str(args.config) if args.config else None
    first = next((s for s in (l.split("#", 1)[0].strip() for l in text.splitlines()) if s), "")
    if first.startswith(bundle.MAGIC):
      out = asm.bundle_to_tasm(bundle.parse(text, config))
    else:
      out = asm.disassemble(parse_hex_words(text), (config or Config()).N)
  except (OSError, ValueError) as e:  # BundleError, ConfigError, IllegalInstruction
    return _err(str(e))
  sys.stdout.write(out)
  return 0


def chip_main(argv: list[str]) -> int:
  """`run-chip bundle.txt [--golden | --both]`: a chip bundle (doc/chip.md) on the RTL chip co-sim,
  the golden model, or both with a per-core diff. Exit 0 both cores ok, 1 a trap, timeout, deadlock
  or difference, 2 a bad bundle."""
  ap = argparse.ArgumentParser(prog="python -m tinytpu run-chip")
  ap.add_argument("bundle")
  g = ap.add_mutually_exclusive_group()
  g.add_argument("--golden", action="store_true")
  g.add_argument("--both", action="store_true")
  a = ap.parse_args(argv)
  from tinytpu import chipbundle, chipsim
  try:
    cb = chipbundle.parse(_read(a.bundle))
  except bundle.BundleError as e:
    return _err(str(e))
  res = chipsim.run_golden(cb) if a.golden else chipsim.run_chip(cb)
  print(chipbundle.format_chip_result(res, cb.config), end="")
  bad = any(c.status != "ok" for c in res.cores)
  if a.both:
    gold = chipsim.run_golden(cb)
    for k, (x, y) in enumerate(zip(res.cores, gold.cores)):
      for d in bundle.diff_results(x, y):
        print(f"core {k}: RTL and golden differ: {d}", file=sys.stderr)
        bad = True
  return 1 if bad else 0
