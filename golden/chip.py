"""The golden model of the two-core chip (doc/chip.md): two golden Machines sharing one HBM store.

Semantics (interleaving-independent for programs whose cores touch the same HBM tiles only across a
signal: a write before a SIG.SEND, the read after the SIG.WAIT it satisfies, and the other way round):
- every core runs its own program with the single-core semantics (golden/interp.py), DMAs copying
  at issue into the shared HBM;
- SIG.SEND core, flag adds one to that core's flag at issue (the RTL's release makes every earlier
  DMA of the sender complete first, which the golden model's copy-at-issue already is);
- SIG.WAIT flag, count blocks while the flag is below count, then subtracts count;
- EMB.BAG/EMB.FBAG (the SparseCore on node 3, shared by both cores) look up at issue in the shared
  HBM with their core's EMB.CFG, as on one core (golden/sparsecore.py); the RTL's per-core interlock
  orders a core's DMAs after its own lookups and SIG.SEND after them (release), and a lookup's HBM
  ranges count like a DMA's for the synchronisation rule below, so which core's lookup the RTL's
  arbiter serves first cannot change a correctly synchronised program's result (doc/chip.md);
- the schedule: cores in turn (0, 1, 0, ...), each running until it halts, traps, times out or
  blocks; a blocked core is retried on its turn. A signal only ever raises a flag and a waiting
  core consumes only what it waits for, so which core runs first changes when a wait passes, never
  what a correctly synchronised program computes;
- a deadlock: every core that has not finished is blocked and a full round made no progress (both
  cores waiting, or one waiting on a core that halted or trapped). Those cores get status
  "timeout" at their SIG.WAIT's pc (what the RTL's watchdog reports) and ChipResult.deadlock names
  every core's pc (chipbundle.deadlock_report, the RTL runner's words); run(check=True) raises
  ChipDeadlock with that message instead.

`cycles` of a core is its retired count (as golden.run's); the chip's is the largest."""
from __future__ import annotations

from tinytpu import isa
from tinytpu.chipbundle import ChipBundle, ChipDeadlock, ChipResult, deadlock_report
from tinytpu.config import CHIP_CORES
from tinytpu.golden import hbm as hbm_store
from tinytpu.golden.interp import Machine
from tinytpu.records import Result


def machines(cb: ChipBundle) -> list[Machine]:
  """The chip's cores, loaded, sharing one HBM (the shared preloads in it) and each other's flags."""
  cfg = cb.config
  shared = hbm_store.HBM(cfg.HBM_TILES, cfg.N)
  for a, tiles in cb.hbm: shared.write(a, tiles)
  ms = [Machine(cfg, core_id=k, cores=CHIP_CORES) for k in range(CHIP_CORES)]
  for m, b in zip(ms, cb.cores):
    m.hbm = shared
    m.load(b)
  for m in ms:
    m.send = lambda core, flag: ms[core].signal(flag)
  return ms


def run(cb: ChipBundle, check: bool = False) -> ChipResult:
  ms = machines(cb)
  status: list[tuple | None] = [None] * len(ms)  # a finished core's (status, trap, pc)
  blocked: dict[int, int] = {}
  while True:
    progress = False
    for k, m in enumerate(ms):
      if status[k] is not None: continue
      before = (m.retired, list(m.flags))
      st = m.run(cb.max_cycles)
      if st[0] == "blocked":
        blocked[k] = st[2]
        progress |= (m.retired, m.flags) != before
      else:
        status[k] = st
        blocked.pop(k, None)
        progress = True
    if all(s is not None for s in status): break
    if not progress:  # every unfinished core waits and a whole round moved nothing
      break
  for k, pc in blocked.items(): status[k] = ("timeout", None, pc)
  results = []
  for k, (m, b) in enumerate(zip(ms, cb.cores)):
    s, trap, pc = status[k]
    dumps = [x for what, addr, count in b.dumps for x in m.dump(what, addr, count)]
    perf = {name: 0 for name, _ in isa.PERF_COUNTERS}
    perf["retired"] = m.retired
    results.append(Result(dumps=dumps, cycles=m.retired, perf=perf, status=s, trap=trap, pc=pc))
  dumps = [x for what, addr, count in cb.dumps for x in ms[0].dump(what, addr, count)]
  r = ChipResult(cores=results, dumps=dumps, cycles=max(c.cycles for c in results))
  r.deadlock = deadlock_report(cb, r) if blocked else None
  if check and r.deadlock:
    raise ChipDeadlock(f"deadlock: {r.deadlock}")
  return r
