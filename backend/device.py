"""The tinygrad `TINYTPU` device: renderer, compiler, allocator and program.

Every buffer lives in HBM: the allocator gives it a tile range of the core's HBM (hbm.HbmAllocator).
Each kernel launch is a fresh simulation, so the host keeps the mirror of every buffer: a launch
writes one bundle (the buffers the kernel reads as HBM regions at their tiles, the program with
its HBM addresses patched in, dumps of the HBM ranges it writes), runs it on the runner chosen by
`TINYTPU_SIM` (`rtl` default, `golden`, `both`), then copies the dumped tiles back."""
from __future__ import annotations

import os
import re
import sys
import types

import numpy as np
from tinygrad.device import Allocator, Compiled, Compiler, Program
from tinygrad.dtype import dtypes
from tinygrad.renderer import Renderer
from tinygrad.uop.ops import Ops

from tinytpu.backend import epilogue, hbm, listing, lower, optable, runner
from tinytpu.bundle import Bundle
from tinytpu.config import Config

CLOCK_HZ = 1e9  # nominal clock: reported kernel time = cycles / CLOCK_HZ
# The backend's core, or the one TINYTPU_BACKEND_CONFIG names ("N=8,VMEM_TILES=8192"). Buffers live
# in HBM and kernels larger than VMEM stream their lane loop through it (backend/stream.py), but the
# default keeps a 32768-tile VMEM (2 MB at N = 4) until two pieces land: the MXU schedule does not
# stream its operand blocks from HBM yet (at the architecture's 1024 tiles a 64x64x64 int8 GEMM
# falls back to the VPU: 20x the instructions), and a reduce loop is not chunked yet (a sum of 2^20
# elements splits into r_256_4096, whose every output tile reads 4096 tiles). 256 PSUM tiles keep a
# GEMM's result block resident across its K blocks (64 would split a 64x64 result in four column
# groups and stage every K block four times).
BACKEND_DEFAULT = "VMEM_TILES=32768 PSUM_TILES=256"


def backend_config() -> Config:
  return Config.from_str(os.environ.get("TINYTPU_BACKEND_CONFIG", BACKEND_DEFAULT))


class TinyTPURenderer(Renderer):
  device = "TINYTPU"
  has_local = False
  has_shared = False
  supports_float4 = False
  global_max = None
  local_max = None
  code_for_op = {op: None for op in optable.NATIVE_OPS}

  def __init__(self, target=None):
    if target is not None:
      super().__init__(target)
    self.cfg = backend_config()

  def render(self, uops) -> str:
    """The kernel's TASM listing (backend/listing.py): what DEBUG=4 prints and the compiler reads."""
    uops = list(uops)
    sink = next((u for u in uops if u.op is Ops.SINK), None)
    name = _plain(getattr(sink.arg, "name", "kernel")) if sink is not None and sink.arg is not None else "kernel"
    try:
      k = lower.lower_kernel(uops, self.cfg)
    except NotImplementedError as e:
      if name in str(e):
        raise
      raise NotImplementedError(f"{e} (kernel {name})") from e  # which kernel of the schedule, for the user
    return listing.render(name, k)

  def supported_dtypes(self):
    return set(optable.SUPPORTED_DTYPES)


class TinyTPUCompiler(Compiler):
  def compile(self, src: str) -> bytes:
    return listing.compile_listing(src, backend_config()).to_bytes()


TinyTPURenderer.compiler = TinyTPUCompiler()


def to_lanes(mv: memoryview, dt, n: int) -> np.ndarray:
  """A host buffer as 32-bit lanes (narrow ints sign/zero-extended, bools as 0/1, bfloat16 as the
  fp32 bit pattern of its value)."""
  a = np.frombuffer(mv, dtype=_np(dt), count=n)
  if dt == dtypes.bfloat16:
    return a.astype(np.uint32) << 16
  return a.view(np.uint32) if a.dtype.itemsize == 4 else a.astype(np.int32).view(np.uint32)


def _np(dt) -> np.dtype:
  return {dtypes.int32: np.int32, dtypes.uint32: np.uint32, dtypes.float32: np.float32, dtypes.bool: np.bool_,
          dtypes.int8: np.int8, dtypes.uint8: np.uint8, dtypes.int16: np.int16, dtypes.uint16: np.uint16, dtypes.bfloat16: np.uint16}[dt]


def from_lanes(lanes: np.ndarray, dt) -> np.ndarray:
  if dt == dtypes.float32:
    return lanes.view(np.float32)
  if dt == dtypes.bool:
    return lanes != 0
  if dt == dtypes.bfloat16:
    return (lanes >> 16).astype(np.uint16)  # the kernels keep bf16 values exact in fp32: the low half is 0
  return lanes.view(np.int32).astype(_np(dt))  # narrow ints wrap


def _plain(name: str) -> str:
  """A kernel name without tinygrad's colour codes."""
  return re.sub(r"\x1b\[[0-9;]*m", "", name)


class TinyTPUProgram(Program):
  def __init__(self, dev: "TinyTPUDevice", obj):
    self.dev, self.name = dev, obj.name
    self.kernel = listing.Compiled.from_bytes(obj.lib)
    self.words = self.kernel.words

  def __call__(self, *bufs, vals=(), wait=False, **kw):
    k, cfg = self.kernel, backend_config()
    if cfg.N != k.N:
      raise RuntimeError(f"TINYTPU kernel {_plain(self.name)}: compiled for N={k.N}, the core has N={cfg.N}")
    L = cfg.lanes
    if k.vmem_tiles > cfg.VMEM_TILES:
      raise RuntimeError(f"TINYTPU kernel {_plain(self.name)}: needs {k.vmem_tiles} VMEM tiles, the core has {cfg.VMEM_TILES}")
    by_slot = {info.slot: (info, mv) for info, mv in zip(k.bufs, bufs)}
    if k.guards:  # requantising PSUM drains (backend/epilogue.py): exact for these values, else the SIMT program
      used = {x for g in k.guards for x in (g["a"], g["w"], *(g[p][0] for p in "bmrs"))}
      host = {slot: np.frombuffer(mv.mv, dtype=_np(info.dtype), count=info.size).astype(np.int64)
              for slot, (info, mv) in by_slot.items() if slot in used}
      if not all(epilogue.requant_holds(g, host) for g in k.guards):
        k = listing.Compiled.from_bytes(k.fallback.encode())
    for slot, elems in k.int8_checks:  # the MXU multiplies int8: no silent truncation of wider operands
      info, mv = by_slot[slot]
      vals_ = np.frombuffer(mv.mv, dtype=_np(info.dtype), count=info.size)[elems]
      if len(vals_) and (vals_.min() < -128 or vals_.max() > 127):
        raise ValueError(f"TINYTPU kernel {_plain(self.name)}: matmul operand buffer {slot} ({info.dtype}, {info.size} elements) holds values in "
                         f"[{vals_.min()}, {vals_.max()}], outside int8 [-128, 127]; the MXU multiplies int8 (cast the operands to int8)")
    watchdog = int(os.environ.get("TINYTPU_WATCHDOG", 200_000_000))  # (tinygrad's getenv caches: tests change it)
    if k.executed is not None and k.executed // 2 > watchdog:  # two instructions a cycle at best
      raise RuntimeError(f"TINYTPU kernel {_plain(self.name)}: retires {k.executed} instructions (at least {k.executed // 2} cycles), "
                         f"more than the watchdog allows ({watchdog} cycles, TINYTPU_WATCHDOG); not run")
    place = self.dev.allocator.place(self.name, k.bufs, bufs, L)
    try:
      b = Bundle(config=cfg, program=listing.patch(k.words, k.relocs, place), max_cycles=watchdog)
      for info, buf in zip(k.bufs, bufs):
        if info.read:  # the kernel reads it (or writes it partially): its HBM range holds the buffer
          lanes = to_lanes(buf.mv, info.dtype, info.size)
          pad = np.zeros(-(-info.size // L) * L, dtype=np.uint32)
          pad[:info.size] = lanes
          b.hbm.append((place[info.slot], pad.reshape(-1, cfg.N, cfg.N)))
      b.hbm.sort(key=lambda r: r[0])
      b.vmem.update(k.const_tiles)
      for (_, _, reg), v in zip(k.var_regs, vals):
        b.sregs[reg] = int(v) & 0xFFFFFFFF
      by_slot = {info.slot: info for info in k.bufs}
      for slot in k.written:
        b.dumps.append(("hbm", place[slot], -(-by_slot[slot].size // L)))
      res = runner.run(b, self.name)
    finally:
      self.dev.allocator.unplace(place)
    out = {addr: tiles for kind, addr, tiles in res.dumps if kind == "hbm"}
    for info, buf in zip(k.bufs, bufs):
      if info.slot not in k.written:
        continue
      lanes = out[place[info.slot]].reshape(-1)[:info.size]
      host = np.frombuffer(buf.mv, dtype=_np(info.dtype), count=info.size)
      host[:] = from_lanes(lanes, info.dtype)
    return res.cycles / CLOCK_HZ if wait else None


class TinyTPUAllocator(hbm.HbmAllocator, Allocator):
  def __init__(self, dev):
    Allocator.__init__(self, dev)
    hbm.HbmAllocator.__init__(self, backend_config)


class TinyTPUDevice(Compiled):
  def __init__(self, device: str):
    super().__init__(device, TinyTPUAllocator(self), [TinyTPURenderer], TinyTPUProgram)


def _cpu_unusable() -> bool:
  """tinygrad 0.14's CPU device compiles its helper programs with clang when it opens."""
  import shutil
  return shutil.which(os.environ.get("CC", "clang")) is None


def _no_upcasts(hand_coded):
  """TinyTPU's kernel optimisation policy. A kernel runs SIMT over the N*N lanes of a tile
  (backend/lower.py), so its innermost axis is already vectorised; tinygrad 0.14's hand-coded
  heuristic (made for CPUs and GPUs) upcasts it by 4, which turns contiguous accesses into strided
  gathers and splits accumulators. tinygrad has no per-renderer policy hook, so the heuristic is
  wrapped once: TinyTPU kernels keep their plain shape, other devices are untouched."""
  def policy(k):
    return k.copy() if isinstance(k.ren, TinyTPURenderer) else hand_coded(k)
  policy.tinytpu = True
  return policy


def install_opt_policy():
  """Wrap tinygrad's hand-coded heuristic once per process (apply_opts imports it at each call)."""
  import tinygrad.codegen.opt.heuristic as heuristic
  if not hasattr(heuristic.hand_coded_optimizations, "tinytpu"):
    heuristic.hand_coded_optimizations = _no_upcasts(heuristic.hand_coded_optimizations)


def register():
  """Make `TINYTPU` a tinygrad device, and the default when no other device is usable.

  tinygrad 0.14 materialises device-less tensors (`Tensor(2.0).item()`) on its `CPU` device, which
  cannot open without clang; on such a machine the `CPU` name is served by a TinyTPU core too, so
  those constants are computed on TinyTPU instead of failing."""
  name = "tinygrad.runtime.ops_tinytpu"
  if name not in sys.modules:
    mod = types.ModuleType(name)
    mod.TinyTPUDevice = TinyTPUDevice
    sys.modules[name] = mod
  if _cpu_unusable() and not isinstance(sys.modules.get("tinygrad.runtime.ops_cpu"), types.ModuleType) or \
      (_cpu_unusable() and not hasattr(sys.modules["tinygrad.runtime.ops_cpu"], "_tinytpu")):
    cpu = types.ModuleType("tinygrad.runtime.ops_cpu")
    cpu.CPUDevice, cpu._tinytpu = TinyTPUDevice, True
    sys.modules["tinygrad.runtime.ops_cpu"] = cpu
  install_opt_policy()
  import tinygrad.device as tdev
  if "TINYTPU" not in tdev.ALL_DEVICES:
    tdev.ALL_DEVICES.append("TINYTPU")
  if "TINYTPU" not in tdev.Device._devices:
    tdev.Device._devices.append("TINYTPU")


# tinygrad optimises kernels in its compile pool's processes too, which get this module by unpickling
# the renderer (not through register()): the policy goes with the module
install_opt_policy()
