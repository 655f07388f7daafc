"""pyuvm environment of the XLU (rtl/xlu.sv), built on tb/kit.

The XLU takes an op every cycle and answers one cycle later, in order, so the kit's in-order
scoreboard fits; this one also checks that every result comes exactly one cycle after its op.
Golden model: tinytpu.golden.xlu.OPS, f(a, vi, k, r0, c0)."""
from __future__ import annotations

import random

import numpy as np

from tinytpu import isa
from tinytpu.golden.xlu import OPS as GOLDEN
from tinytpu.tb import kit

FNS = list(isa.XLU_FNS)  # index = fn code
ROTS = [i.mnemonic for i in isa.INSTRS if i.datapath == "xlu" and any(o.name in ("k", "sk") for o in i.operands)]  # rotate by an amount
M32 = 0xFFFFFFFF


def k_classes(n: int) -> dict:
  """Rotate amounts: the interesting residues mod N and the 32-bit extremes."""
  return {
    "zero": (2, lambda r: 0),
    "one": (2, lambda r: 1),
    "n_minus_1": (2, lambda r: n - 1),
    "n": (1, lambda r: n),
    "mid": (2, lambda r: r.randint(2, max(2, n - 2))),
    "negative": (2, lambda r: r.randint(-4 * n, -1) & M32),
    "large": (2, lambda r: r.randint(4 * n, 0x7FFFFFFF)),
    "extreme": (1, lambda r: r.choice((0x7FFFFFFF, 0x80000000, M32))),
  }


def classify_k(k: int, n: int) -> str:
  if k == 0: return "zero"
  if k == 1: return "one"
  if k == n - 1: return "n_minus_1"
  if k == n: return "n"
  if k in (0x7FFFFFFF, 0x80000000, M32): return "extreme"
  if 2 <= k <= n - 2: return "mid"
  if k >= 0x80000000: return "negative"
  return "large"


def idx_tile(rng: random.Random, n: int, kind: str) -> np.ndarray:
  L = n * n
  if kind == "identity": v = list(range(L))
  elif kind == "reverse": v = list(range(L))[::-1]
  elif kind == "permutation": v = rng.sample(range(L), L)
  elif kind == "repeat": v = [rng.randrange(L)] * L
  elif kind == "wrapped": v = [rng.randrange(L) + L * rng.randint(1, 1 << 20) for _ in range(L)]  # only i mod N*N counts
  else: v = [rng.getrandbits(32) for _ in range(L)]
  return np.array(v, dtype=np.uint32).reshape(n, n)


IDX_KINDS = ["identity", "reverse", "permutation", "repeat", "wrapped", "random"]


class XluReq(kit.Item):
  """One XLU op: fn (name), a, idx tiles, k, r0, c0, tag, delay."""
  def make(self, rng: random.Random, n: int, fn: str, tag: int, delay: int = 0, k=None, r0=None, c0=None, kind=None):
    self.fn, self.tag, self.delay = fn, tag, delay
    self.a = kit.random_tile(rng, n, "int32")[0]
    self.kind = kind or rng.choice(IDX_KINDS)
    self.idx = idx_tile(rng, n, self.kind)
    self.k = kit.draw(k_classes(n), rng)[1] if k is None else k & M32
    self.r0 = rng.randrange(n) if r0 is None else r0
    self.c0 = rng.randrange(n) if c0 is None else c0
    return self


class XluRsp(kit.Item):
  pass


class FnPort(kit.Sig):
  def put(self, dut, v): self.handle(dut).value = isa.XLU_FNS[v]
  def get(self, dut): return FNS[self.handle(dut).value.to_unsigned()]


class XluScoreboard(kit.Scoreboard):
  def predict(self, req):
    exp = GOLDEN[req.fn](req.a.copy(), req.idx.copy(), req.k, req.r0, req.c0)
    return {"result": np.asarray(exp, dtype=np.uint32), "tag": req.tag, "cycle": req.cycle + 1}


class XluCoverage(kit.CoverageCollector):
  """fn x k class (rotations), fn x r0/c0 (broadcasts), XSHUF index kind, back-to-back fn pairs."""
  unit = "xlu"

  def define(self, cov):
    self.n = int(kit.params().get("N", 4))
    cov.cross("rot_x_k", ROTS, list(k_classes(self.n)))
    cov.bins("bcast", [("XBCOL", c) for c in range(self.n)] + [("XBROW", r) for r in range(self.n)] +
             [("XBSCALAR", r, c) for r in range(self.n) for c in range(self.n)])
    cov.bins("shuf_idx", ["identity", "reverse", "permutation", "repeat", "wrapped", "other"])
    cov.pairs("fn_pairs", FNS)
    self.prev = None

  def sample(self, req):
    fn = req.fn
    if fn in ROTS: self.cov.hit("rot_x_k", (fn, classify_k(req.k, self.n)))
    if fn == "XBCOL": self.cov.hit("bcast", (fn, req.c0))
    if fn == "XBROW": self.cov.hit("bcast", (fn, req.r0))
    if fn == "XBSCALAR": self.cov.hit("bcast", (fn, req.r0, req.c0))
    if fn == "XSHUF": self.cov.hit("shuf_idx", self.classify_idx(req.idx))
    self.cov.pair("fn_pairs", fn, back_to_back=self.prev is not None and req.cycle == self.prev + 1)
    self.prev = req.cycle

  def classify_idx(self, idx) -> str:
    L = self.n * self.n
    v = [int(x) for x in idx.ravel()]
    if v == list(range(L)): return "identity"
    if v == list(range(L))[::-1]: return "reverse"
    if len(set(v)) == 1: return "repeat"
    if sorted(v) == list(range(L)): return "permutation"
    if all(x >= L for x in v) and all(x < (1 << 24) * L for x in v): return "wrapped"
    return "other"


class XluEnv(kit.Env):
  sb_cls = XluScoreboard

  def build_phase(self):
    n = int(kit.params().get("N", 4))
    lw = max(1, (n - 1).bit_length())
    tile = kit.Tile
    req = kit.Channel({"fn": FnPort("fn_i"), "a": tile("a_i"), "idx": tile("idx_i"), "k": "k_i",
                       "r0": "r0_i", "c0": "c0_i", "tag": "tag_i"}, XluReq, valid="valid_i")
    rsp = kit.Channel({"result": tile("result_o"), "tag": "tag_o"}, XluRsp, valid="valid_o")
    self.req = kit.Agent("req", self, req, self.dut)
    self.rsp = kit.Agent("rsp", self, rsp, self.dut, active=False)
    self.sb = self.sb_cls("sb", self)
    self.cov = XluCoverage("cov", self)
    assert lw == len(self.dut.r0_i), "r0_i is log2(N) bits"

  def connect_phase(self):
    self.req.ap.connect(self.sb.req_export)
    self.rsp.ap.connect(self.sb.rsp_export)
    self.req.ap.connect(self.cov.export(self.cov.sample))


def directed(n: int, rng: random.Random) -> list[XluReq]:
  """Every rotation by every residue and the extremes, every broadcast position, the transpose,
  and XSHUF with every index kind."""
  items = []
  def add(fn, **kw): items.append(XluReq(f"{fn}{len(items)}").make(rng, n, fn, len(items) & 0xFF, **kw))
  for fn in ROTS:
    for k in list(range(-n - 1, 2 * n + 2)) + [0x7FFFFFFF, 0x80000000, M32, M32 - n, 1 << 20]:
      add(fn, k=k)
  for i in range(n):
    add("XBCOL", c0=i); add("XBROW", r0=i)
    for j in range(n): add("XBSCALAR", r0=i, c0=j)
  for _ in range(3): add("XTRANS")
  for kind in IDX_KINDS:
    for _ in range(2): add("XSHUF", kind=kind)
  return items


def random_items(n: int, rng: random.Random, count: int) -> list[XluReq]:
  w = [3 if f == "XBSCALAR" else 1 for f in FNS]  # N*N broadcast positions to reach
  return [XluReq(f"r{i}").make(rng, n, rng.choices(FNS, weights=w)[0], i & 0xFF, rng.choice([0, 0, 0, 0, 1, 2]))
          for i in range(count)]
