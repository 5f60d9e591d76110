# iostudy entry points. `make help` lists the targets; `make demo` and `make test` are the two a
# newcomer needs. Every target runs from the repo root and works from a fresh clone with
# ../shared beside it.

SHELL := bash
.SHELLFLAGS := -eu -o pipefail -c
.DEFAULT_GOAL := help
# Also quiets the "Entering directory" lines of the make that CMake generates.
MAKEFLAGS += --no-print-directory

PYTHON ?= python3
CMAKE_BUILD_TYPE ?= RelWithDebInfo
JOBS ?= 2

BUILD_DIR := build
RUNTIME_BUILD := $(BUILD_DIR)/runtime
CHECKS_BUILD := $(BUILD_DIR)/reframe-checks
FSWALK_BUILD := $(BUILD_DIR)/fswalk
VENV := .venv
LOCK := analysis/requirements.lock
# The venv is rebuilt when any of these change; their sha256 sums are kept in the stamp.
VENV_INPUTS := $(LOCK) analysis/pyproject.toml
VENV_STAMP := $(VENV)/.lock-stamp
PIP_TOOLS := pip-tools==7.6.2
# The Slurm test cluster (ci/cluster): its state directory, and optionally another node count.
CLUSTER_STATE ?= build/cluster
# make spack: the system whose site facts (configs/systems/<SYSTEM>/spack/) Spack builds against
SYSTEM ?= local
CLUSTER_NODES ?=

# Only trees and files that exist: the lists grow as the project does.
PY_DIRS := $(wildcard analysis runtime/tests runtime/bench ci/tests ci/cluster ci/check_*.py ci/kernel_limits.py configs reframe-checks spack-env conftest.py)
C_FILES := $(wildcard runtime/src/*.[ch] runtime/tools/*.c runtime/tests/programs/*.[ch] runtime/tests/unit/*.c runtime/bench/*.c \
	analysis/src/fswalk/*.c \
	ci/tests/reframe/src/*.c reframe-checks/src/*.[ch] reframe-checks/src/*/*.[ch])

.PHONY: help setup apt-packages build-runtime build-checks build-fswalk venv test test-fast test-runtime \
	test-python test-cluster lint demo bench bench-cli bench-runtime bench-analysis bench-fsstats bench-report bench-diagnose bench-compare format clean lock cluster-up \
	cluster-down spack spack-check

help: ## list the targets
	@echo "usage: make TARGET   (variables: PYTHON=$(PYTHON) CMAKE_BUILD_TYPE=$(CMAKE_BUILD_TYPE) JOBS=$(JOBS))"
	@awk 'BEGIN {FS = ":.*## "} /^[a-z-]+:.*## / {printf "  %-14s %s\n", $$1, $$2}' $(MAKEFILE_LIST)

setup: apt-packages build-runtime build-checks build-fswalk venv ## install apt packages, build the runtime and benchmarks, create .venv

apt-packages: ## install the Debian packages of ci/apt-packages.txt that are missing
	ci/install-apt-packages.sh ci/apt-packages.txt

build-runtime: apt-packages ## configure and build the C runtime in build/runtime
	@test -f runtime/CMakeLists.txt || \
		{ echo "error: runtime/CMakeLists.txt is missing, cannot build the runtime" >&2; exit 1; }
	cmake -S runtime -B $(RUNTIME_BUILD) -DCMAKE_BUILD_TYPE=$(CMAKE_BUILD_TYPE)
	cmake --build $(RUNTIME_BUILD) -j$(JOBS)

build-checks: apt-packages ## configure and build iostudy's own benchmarks in build/reframe-checks
	cmake -S reframe-checks/src -B $(CHECKS_BUILD) -DCMAKE_BUILD_TYPE=$(CMAKE_BUILD_TYPE)
	cmake --build $(CHECKS_BUILD) -j$(JOBS)

build-fswalk: apt-packages ## configure and build the walker of `iostudy fsstats scan` in build/fswalk
	cmake -S analysis/src/fswalk -B $(FSWALK_BUILD) -DCMAKE_BUILD_TYPE=$(CMAKE_BUILD_TYPE)
	cmake --build $(FSWALK_BUILD) -j$(JOBS)

venv: apt-packages ## create .venv from the lock (again only when the lock or pyproject changed)
	@if sha256sum --status -c $(VENV_STAMP) 2>/dev/null; then \
		echo "venv: $(VENV) matches $(VENV_INPUTS)"; \
	else \
		echo "venv: creating $(VENV) from $(LOCK)"; \
		rm -rf $(VENV); \
		$(PYTHON) -m venv $(VENV); \
		$(VENV)/bin/pip install --require-hashes -r $(LOCK); \
		$(VENV)/bin/pip install --no-deps -e analysis; \
		sha256sum $(VENV_INPUTS) > $(VENV_STAMP); \
	fi

test: test-runtime test-python test-cluster lint ## run every test and the format checks (what CI runs)

# --no-tests=error: a build that registers no test must not pass (like pytest's exit status 5).
test-runtime: setup ## run the runtime's CTest suite
	ctest --test-dir $(RUNTIME_BUILD) --output-on-failure --no-tests=error

# Test paths, options and the tiers' marks come from pytest.ini; exit status 5 (no tests
# collected) fails too. pytest-xdist spreads the tests over PYTEST_WORKERS processes, each taking
# the next test as it frees up (worksteal: the longest tests do not queue behind one worker);
# then the tests marked exclusive (they measure performance) run alone, as the references were
# measured: after a sync, so that the disk is not still writing back the parallel tests' files
# (a CI run saw an I/O-model write at 17.7 MiB/s, under its 100 MiB/s floor, without it).
# A selection (PYTEST_ARGS) may leave one of the two phases without a test.
PYTEST_WORKERS ?= 3
PYTEST_XDIST = -n $(PYTEST_WORKERS) --dist worksteal
# The fast tier: every test without a mark of a slower tier (pytest.ini lists them).
FAST_TIER = not (campaign or browser or workflow or slow or exclusive)
test-python: setup ## run pytest (runtime/tests, analysis/tests, reframe-checks/tests, ci/cluster)
	@phase() { $(VENV)/bin/python -m pytest "$$@" $(PYTEST_ARGS); s=$$?; \
		if [ $$s -eq 5 ] && [ -n "$(PYTEST_ARGS)" ]; then s=0; fi; return $$s; }; \
	status=0; \
	phase $(PYTEST_XDIST) -m "not exclusive" || status=$$?; \
	sync; \
	phase -m exclusive || status=$$?; \
	exit $$status

test-fast: setup ## the inner loop: unit and component tests (no campaign, cluster, browser, workflow)
	$(VENV)/bin/python -m pytest $(PYTEST_XDIST) -m "$(FAST_TIER)" $(PYTEST_ARGS)

# ci/tests is named here, not in pytest.ini's testpaths, so that test-python needs no cluster.
# The cluster is stopped whatever happens (trap), and the status is pytest's unless only the
# stop failed. cluster-up's last line of output is the env file the tests read.
# PYTEST_ARGS='-k mpi' runs a selection.
test-cluster: setup ## stand up the Slurm test cluster, run ci/tests on it, stop it
	@log=$$(mktemp); \
	stop() { status=$$?; $(MAKE) cluster-down || [ $$status -ne 0 ] || status=1; \
		rm -f "$$log"; exit $$status; }; \
	trap stop EXIT; trap 'exit 130' INT; trap 'exit 143' TERM; \
	$(MAKE) cluster-up | tee "$$log"; \
	env_file=$$(tail -n 1 "$$log"); \
	echo "test-cluster: IOSTUDY_CLUSTER_ENV=$$env_file"; \
	IOSTUDY_CLUSTER_ENV="$$env_file" $(VENV)/bin/python -m pytest ci/tests $(PYTEST_ARGS)

lint: venv ## check Python with ruff, the package's layers with import-linter, C with clang-format
	$(VENV)/bin/ruff check $(PY_DIRS)
	$(VENV)/bin/lint-imports analysis/pyproject.toml
	$(VENV)/bin/python ci/check_sizes.py
	$(VENV)/bin/python ci/check_c_sizes.py
	$(VENV)/bin/python ci/check_commands.py
	$(VENV)/bin/ruff format --check $(PY_DIRS)
	$(if $(C_FILES),clang-format --dry-run --Werror $(C_FILES))

demo: setup ## the quick campaign on this machine, the workflow, a new report version
	ci/demo.sh

# The last line of output is the env file to source; `@` keeps make's echo off that line.
cluster-up: venv ## start the Slurm test cluster as root (CLUSTER_STATE, CLUSTER_NODES)
	@CLUSTER_STATE=$(CLUSTER_STATE) CLUSTER_NODES=$(CLUSTER_NODES) ci/cluster/cluster-up.sh

cluster-down: ## stop the Slurm test cluster, remove its namespaces (keeps its state)
	@CLUSTER_STATE=$(CLUSTER_STATE) ci/cluster/cluster-down.sh

# DARSHAN_LIB: a Darshan 3.5.0 libdarshan.so (non-MPI) measured beside iostudy; BENCH_RUNS: the
# alternating wall-time rounds (at least 30: each overhead comes with its 95 % interval). The
# workload's ext4 run makes a loop device: as root only (else it says "not measured"); its
# glusterfs run needs a test cluster with the volume, IOSTUDY_CLUSTER_ENV=<cluster-up's env file>.
DARSHAN_LIB ?=
BENCH_RUNS ?= 40
bench-runtime: setup ## instructions per call and wall-time overhead of the runtime (DARSHAN_LIB: beside Darshan's)
	$(VENV)/bin/python runtime/bench/bench_runtime.py --build $(RUNTIME_BUILD) --runs $(BENCH_RUNS) \
		$(if $(DARSHAN_LIB),--darshan $(DARSHAN_LIB))

# The corpus size of bench-analysis (copies of the test logs and of logs the runtime writes).
BENCH_LOGS ?= 10000
bench-analysis: setup ## ingest throughput, peak memory and the ratio to job_stats on BENCH_LOGS logs
	$(VENV)/bin/python analysis/bench/bench_ingest.py --logs $(BENCH_LOGS)

# The synthetic store of bench-report (job logs written straight into the tables).
BENCH_JOBS ?= 100000
bench-report: setup ## report build time, peak memory and page size on a store of BENCH_JOBS jobs
	$(VENV)/bin/python analysis/bench/bench_report.py --jobs $(BENCH_JOBS)

# The synthetic store of bench-diagnose (jobs' POSIX, MPI-IO and STDIO records written straight
# into the tables); BASELINE_SRC (below): an older checkout whose diagnose runs beside.
BENCH_DIAG_JOBS ?= 100000
bench-diagnose: setup ## iostudy diagnose time and peak memory on BENCH_DIAG_JOBS jobs (BASELINE_SRC: beside an older checkout)
	$(VENV)/bin/python analysis/bench/bench_diagnose.py --jobs $(BENCH_DIAG_JOBS) \
		$(if $(BASELINE_SRC),--baseline-src $(BASELINE_SRC)/analysis/src)

spack: venv ## build the runtime and every benchmark with Spack for SYSTEM (FRESH=1: ignore the lock)
	@if [ -f configs/systems/$(SYSTEM)/spack/apt-packages.txt ]; then \
		ci/install-apt-packages.sh configs/systems/$(SYSTEM)/spack/apt-packages.txt; fi
	$(VENV)/bin/iostudy spack build --system $(SYSTEM) --jobs $(JOBS) $(if $(FRESH),--fresh)

spack-check: venv ## validate spack-env/spack.yaml and the site scopes (no Spack needed)
	$(VENV)/bin/iostudy spack check

# The tree size of bench-fsstats (files, generated in a temporary folder); PERL_FSSTATS: the
# original fsstats script to compare with when it is not on PATH as `fsstats`.
BENCH_FILES ?= 500000
PERL_FSSTATS ?=
bench-fsstats: setup ## fsstats scan rate and peak memory beside find (and the Perl fsstats) on BENCH_FILES files
	$(VENV)/bin/python analysis/bench/bench_fsstats.py --files $(BENCH_FILES) \
		$(if $(PERL_FSSTATS),--perl-fsstats $(PERL_FSSTATS))

# Trials of bench-compare (each about 38 s; no trial starts after 18 minutes). Root: it makes a
# loop device, the block throttle and a CPU quota (ci/kernel_limits.py).
BENCH_TRIALS ?= 30
bench-compare: setup ## what the regression judgement catches and falsely flags, on real throttled runs (root)
	$(VENV)/bin/python analysis/bench/bench_compare.py --trials $(BENCH_TRIALS)

# BASELINE_SRC: an older checkout (git worktree add SCRATCH COMMIT) measured beside this one.
BASELINE_SRC ?=
bench-cli: venv ## how soon every --help and snakemake -n answer (BASELINE_SRC: beside an older checkout)
	$(VENV)/bin/python analysis/bench/bench_cli.py $(if $(BASELINE_SRC),--baseline-src $(BASELINE_SRC))

bench: bench-runtime bench-analysis bench-fsstats bench-report bench-diagnose bench-compare bench-cli ## run every benchmark

format: venv ## rewrite Python (ruff) and C (clang-format) sources in place
	$(VENV)/bin/ruff check --select I --fix $(PY_DIRS)
	$(VENV)/bin/ruff format $(PY_DIRS)
	$(if $(C_FILES),clang-format -i $(C_FILES))

clean: ## remove build/ (keeps .venv)
	rm -rf $(BUILD_DIR)

# pip-tools lives in a throwaway venv so that it never enters the lock or .venv.
lock: ## regenerate analysis/requirements.lock from analysis/pyproject.toml (needs PyPI)
	tmp=$$(mktemp -d) && trap 'rm -rf "$$tmp"' EXIT && \
	$(PYTHON) -m venv "$$tmp" && "$$tmp/bin/pip" install -q $(PIP_TOOLS) && \
	"$$tmp/bin/pip-compile" --quiet --generate-hashes --extra test --strip-extras \
		--no-emit-index-url --no-emit-find-links -o $(LOCK) analysis/pyproject.toml
