import pytest

from tinytpu.config import Config, ConfigError, DEFAULT


def test_defaults_match_architecture():
  assert (DEFAULT.N, DEFAULT.VMEM_TILES, DEFAULT.PSUM_TILES, DEFAULT.IMEM_WORDS) == (4, 1024, 64, 4096)
  assert (DEFAULT.VREGS, DEFAULT.SREGS) == (16, 16)
  assert DEFAULT.lanes == 16


@pytest.mark.parametrize("kw", [dict(N=8), dict(N=16), dict(VMEM_TILES=64), dict(PSUM_TILES=8), dict(IMEM_WORDS=256)])
def test_other_legal_configs(kw):
  c = Config(**kw)
  assert c.sv_params()["N"] == c.N


@pytest.mark.parametrize("kw, msg", [
  (dict(N=3), "N=3 must be a power of two"),
  (dict(N=1), "N=1 must be a power of two >= 2"),
  (dict(N=32), "N=32 must be <= 16"),
  (dict(VMEM_TILES=32), "VMEM_TILES=32"),
  (dict(VMEM_TILES=100), "VMEM_TILES=100"),
  (dict(PSUM_TILES=4), "PSUM_TILES=4"),
  (dict(IMEM_WORDS=128), "IMEM_WORDS=128"),
  (dict(N="4"), "must be an int"),
  (dict(VREGS=8), "fixed at 16"),
  (dict(NOC_NODES=1), "NOC_NODES=1 must be an int in"),
  (dict(NOC_LINK_LATENCY=0), "NOC_LINK_LATENCY=0 must be an int in"),
  (dict(NOC_LINK_LATENCY=True), "NOC_LINK_LATENCY=True"),
])
def test_bad_configs_name_the_field(kw, msg):
  with pytest.raises(ConfigError, match=msg):
    Config(**kw)


def test_from_str_and_name():
  c = Config.from_str("N=8, VMEM_TILES=256")
  assert c == Config(N=8, VMEM_TILES=256)
  assert c.name == "N8_V256_P64_I4096"
  assert c.verilator_args()[0] == "-GN=8"
  with pytest.raises(ConfigError, match="cannot parse"):
    Config.from_str("M=3")
  with pytest.raises(ConfigError, match="not an integer"):
    Config.from_str("N=four")


def test_noc_params_and_name():
  assert DEFAULT.noc_params() == {"NODES": 4, "LINK_LATENCY": 2, "PW": 16 * 32}
  assert "_R" not in DEFAULT.name  # only a non-default network names itself
  c = Config.from_str("N=8 NOC_NODES=3 NOC_LINK_LATENCY=1")
  assert c.name.endswith("_R3L1") and c.noc_params() == {"NODES": 3, "LINK_LATENCY": 1, "PW": 64 * 32}
