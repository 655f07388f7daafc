"""The TinyTPU verification kit: runner, items with operand classes, generic valid/ready agent,
scoreboard, coverage and test bases. See doc/verification-kit.md."""
from .runner import build, build_and_run, seed_from_env
from .operands import INT32, INT8, FP32, draw, classify_int32, classify_fp32, classify_int8, INT32_BINS, FP32_BINS, INT8_BINS, f2b, b2f
from .item import Item, random_tile
from .agent import Sig, Tile, Vec, Channel, Driver, QueueDriver, ReadyDriver, Monitor, Agent, Export, pack_tile, unpack_tile, cycles
from .scoreboard import Scoreboard
from .sequence import ItemsSeq
from .coverage import Coverage, Covergroup, CoverageCollector
from .test import Env, BaseTest, params
