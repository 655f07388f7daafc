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

from tinytpu import asm
from tinytpu.backend import chiplaunch, embedding, epilogue, hbm, listing, lower, optable, runner
from tinytpu.bundle import Bundle
from tinytpu.config import Config

CLOCK_HZ = 1e9  # nominal clock: reported kernel time = cycles / CLOCK_HZ
# The backend's core, or the one TINYTPU_BACKEND_CONFIG names ("N=8,VMEM_TILES=8192"): the
# architecture's configuration (config.py: VMEM_TILES = 1024, 64 KB at N = 4). Buffers live in HBM;
# kernels larger than VMEM stream their lane loop (stream.py, windows.py), reduce loops (rstream.py,
# rblock.py) or MXU operand blocks (mxu_stream.py, mxu_plan.py) through it. 256 PSUM tiles keep a
# GEMM's result block resident across its K blocks (64 would split a 64x64 result in four column
# groups and stage every K block four times).
BACKEND_DEFAULT = "PSUM_TILES=256"


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


# Launch guards by kind (the JSON records a kernel carries beside its listing): the buffer slots each
# reads, and why it fails for these values (None: it holds), else the kernel runs its fallback.
GUARD_KINDS = {
  "requant": (epilogue.requant_slots, epilogue.requant_refusal),        # PEPI.BRQ drains (epilogue.py)
  "sparsecore": (embedding.sparsecore_slots, embedding.sparsecore_refusal),  # EMB lookups (embedding.py)
}


def _guard_kind(g: dict) -> tuple:
  if g.get("kind") not in GUARD_KINDS:
    raise RuntimeError(f"TINYTPU: a launch guard of unknown kind {g.get('kind')!r} (known: {', '.join(GUARD_KINDS)})")
  return GUARD_KINDS[g["kind"]]


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
    core = self.dev.chip_core()
    host_reads = [chiplaunch.host_range(buf.mv) for info, buf in zip(k.bufs, bufs) if info.read]
    host_writes = [chiplaunch.host_range(buf.mv) for info, buf in zip(k.bufs, bufs) if info.slot in k.written]
    chiplaunch.settle(core, host_reads, host_writes)  # the launches this kernel depends on run first: its checks read the mirrors
    if k.guards:  # requantising PSUM drains, SparseCore lookups: the specialised program for these values, else the fallback
      slots = {x for g in k.guards for x in _guard_kind(g)[0](g)}
      raw = {slot: np.frombuffer(mv.mv, dtype=_np(info.dtype), count=info.size) for slot, (info, mv) in by_slot.items() if slot in slots}
      if refused := [r for g in k.guards if (r := _guard_kind(g)[1](g, raw))]:
        if k.fallback is None:  # the generic program could not be lowered (embedding.py: a table larger than VMEM)
          why = next((g.get("no_fallback") for g in k.guards if g.get("no_fallback")), "no generic program")
          raise RuntimeError(f"TINYTPU kernel {_plain(self.name)}: its launch guard fails ({'; '.join(refused)}) "
                             f"and the generic program cannot run: {why}")
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
    alloc, temps = self.dev.allocator, []
    place = alloc.place(self.name, k.bufs, bufs, L, temps)
    try:
      b = Bundle(config=cfg, program=listing.patch(k.words, k.relocs, place), max_cycles=watchdog)
      b.vmem.update(k.const_tiles)
      for (_, _, reg), v in zip(k.var_regs, vals):
        b.sregs[reg] = int(v) & 0xFFFFFFFF
      by_slot = {info.slot: info for info in k.bufs}
      for slot in k.written:
        b.dumps.append(("hbm", place[slot], -(-by_slot[slot].size // L)))
    except BaseException:
      alloc.unplace(temps)
      raise
    reads = [(info, buf) for info, buf in zip(k.bufs, bufs) if info.read]  # it reads them (or writes them partially)

    def load():
      """The read buffers' HBM ranges from their host mirrors."""
      regions = []
      for info, buf in reads:
        pad = np.zeros(-(-info.size // L) * L, dtype=np.uint32)
        pad[:info.size] = to_lanes(buf.mv, info.dtype, info.size)
        regions.append((place[info.slot], pad.reshape(-1, cfg.N, cfg.N)))
      return sorted(regions, key=lambda r: r[0])

    def finish(res):
      out = {addr: tiles for kind, addr, tiles in res.dumps if kind == "hbm"}
      for info, buf in zip(k.bufs, bufs):
        if info.slot in k.written:
          host = np.frombuffer(buf.mv, dtype=_np(info.dtype), count=info.size)
          host[:] = from_lanes(out[place[info.slot]].reshape(-1)[:info.size], info.dtype)

    if core is None:
      b.hbm = load()
      try:
        res = runner.run(b, self.name)
        finish(res)
      finally:
        alloc.unplace(temps)
      return res.cycles / CLOCK_HZ if wait else None
    item = chiplaunch.Item(core, _plain(self.name), b, [(place[i.slot], -(-i.size // L)) for i, _ in reads], load,
                           host_reads, host_writes, finish, lambda: alloc.unplace(temps))
    chiplaunch.submit(item)  # runs with the other core's kernel (backend/chiplaunch.py)
    if not wait:
      return None
    chiplaunch.flush()
    return item.result.cycles / CLOCK_HZ


class TinyTPUAllocator(hbm.HbmAllocator, Allocator):
  """The device's buffers in HBM (backend/hbm.py): a chip core's in the chip's shared HBM space, the
  single-core co-sim's in its own. Host accesses run the pending chip launch first; a copy between
  two chip cores runs on the chip (backend/chiplaunch.py), any other copy through the host."""
  def __init__(self, dev):
    Allocator.__init__(self, dev)
    own = hbm.HbmSpace()
    hbm.HbmAllocator.__init__(self, backend_config, lambda: chiplaunch.SPACE if dev.chip_core() is not None else own)

  def _copyin(self, dest, src: memoryview):
    chiplaunch.flush()
    super()._copyin(dest, src)

  def _copyout(self, dest: memoryview, src):
    chiplaunch.flush()
    super()._copyout(dest, src)

  def _as_buffer(self, src):
    chiplaunch.flush()
    return super()._as_buffer(src)

  def _transfer(self, dest, src, sz: int, src_dev, dest_dev):
    core = dest_dev.chip_core()
    if core is None or src_dev.chip_core() is None:  # two simulations' HBMs: the host carries it
      chiplaunch.flush()
      dest.mv[:sz] = src.mv[:sz]
      return
    cfg, temps = backend_config(), []
    n = chiplaunch.packed_tiles(sz, cfg)
    try:
      s = src.tile if self.resident(src) and src.tiles >= n else self.temporary("copy", f"the source of a {sz}-byte copy", n, temps)
      d = dest.tile if self.resident(dest) and dest.tiles >= n else self.temporary("copy", f"the destination of a {sz}-byte copy", n, temps)
      prog = asm.assemble(chiplaunch.copy_program(s, d, n, cfg), cfg.N)
    except BaseException:
      self.unplace(temps)
      raise
    b = Bundle(config=cfg, program=prog, dumps=[("hbm", d, n)], max_cycles=int(os.environ.get("TINYTPU_WATCHDOG", 200_000_000)))

    def finish(res):
      out = {addr: tiles for kind, addr, tiles in res.dumps if kind == "hbm"}
      np.frombuffer(dest.mv, dtype=np.uint8, count=sz)[:] = chiplaunch.unpack(out[d], sz)
      chiplaunch.LAUNCHES["copies"] += 1
    chiplaunch.submit(chiplaunch.Item(core, f"copy_{sz}B_core{src_dev.chip_core()}_to_core{core}", b, [(s, n)],
                                      lambda: [(s, chiplaunch.pack(src.mv, sz, cfg))], [chiplaunch.host_range(src.mv[:sz])],
                                      [chiplaunch.host_range(dest.mv[:sz])], finish, lambda: self.unplace(temps)))


def chip_core(device: str) -> int | None:
  """The chip core a device name runs on (doc/chip.md): `TINYTPU:1` is core 1 of the two-core chip,
  `TINYTPU` (tinygrad's name for `TINYTPU:0`) core 0 when TINYTPU_CHIP=1, else the single-core
  co-sim. A device beyond the chip's cores is an error naming it."""
  from tinytpu.config import CHIP_CORES
  _, _, idx = device.partition(":")
  k = int(idx) if idx.isdigit() else 0
  if k >= CHIP_CORES:
    raise RuntimeError(f"{device}: the TinyTPU chip has {CHIP_CORES} cores ({', '.join(f'TINYTPU:{i}' for i in range(CHIP_CORES))})")
  return k if k > 0 or os.environ.get("TINYTPU_CHIP") == "1" else None


class TinyTPUDevice(Compiled):
  def __init__(self, device: str):
    self.tinytpu = device.startswith("TINYTPU")
    if self.tinytpu:
      chip_core(device)  # refuses a core the chip does not have
    super().__init__(device, TinyTPUAllocator(self), [TinyTPURenderer], TinyTPUProgram)

  def chip_core(self) -> int | None:
    """This device's chip core now (TINYTPU_CHIP is read at each launch), None for the single-core co-sim."""
    return chip_core(self.device) if self.tinytpu else None

  def synchronize(self):
    chiplaunch.flush()


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
