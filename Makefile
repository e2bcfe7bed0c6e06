# Needle: the few top-level verbs. `make test` runs every test of every module;
# `make demo` runs the main job. See README.md.
SHELL := /bin/bash
MVN   ?= mvn -B -ntp
PYTHON ?= python3

.PHONY: help check check-java check-rust lint-python test test-with-cluster test-without-cluster test-without-cluster-quiet test-cluster-tool test-python-package test-long test-differential demo demo-filters test-java test-python python-package test-rust s3-server s3-test-server build bench-filters bench-partition-index bench-data-lake bench-data-lake-object-store bench-data-lake-datafusion bench-scheme1 bench-scheme2 calibrate-latency cluster clean

help:
	@echo "make demo           a Cassandra node with and without Needle, side by side (a minute or two)"
	@echo "make demo-filters   the filters alone: three-state answers, Bloom against cuckoo"
	@echo "make test           run every test of every module"
	@echo "make check          the quick tier: unit tests, lints and formatters, no server (about 5 minutes from a clean clone)"
	@echo "make test-long      the randomized Cassandra tests at 10 to 25 times their operations (a few hours)"
	@echo "make test-differential OPS=N  the differential Cassandra test with N operations"
	@echo "make build          build the Java modules (skip tests)"
	@echo "make cluster        start a local 3-node Cassandra cluster with Needle (deploy/needle-cluster)"
	@echo "make bench-filters  JMH: Needle's filters against CuckooFilter4J, fastfilter_java, Guava"
	@echo "make bench-partition-index  the partition index against the published numbers"
	@echo "make bench-data-lake  point lookups in up to 5,000 Parquet files: DuckDB alone against DuckDB over Needle's candidates"
	@echo "make bench-data-lake-object-store  the same on an S3-compatible server 20 ms away: Needle against DuckDB, DataFusion alone against DataFusion with Needle (about 30 minutes)"
	@echo "make bench-data-lake-datafusion  point lookups in 5,000 Parquet files through DataFusion: alone against DataFusion with Needle's table provider"
	@echo "make calibrate-latency  what the emulated internode latency adds, per profile (a few minutes)"
	@echo "make bench-scheme1  Tables 1-5 of the 2022 Journal of Big Data paper, stock against Needle (about 25 minutes)"
	@echo "make bench-scheme2  Tables 6-9 (node filters) on 4 nodes at lan and az latency, Tables 10-13 (the load,"
	@echo "                    CPU and network) on 6 nodes, then the staleness probe (Tables 6, 7 and 9 about"
	@echo "                    45 minutes, Table 8 about 11 per profile, 10-13 about 35, the probe about 30)"
	@echo "make bench-NAME     one experiment, bench/experiments/NAME.json (e.g. bench-scheme1-table2,"
	@echo "                    bench-range-mixes; ARGS=\"--scale 0.1\" for a quick run)"
	@echo "make clean          remove build output"

# Two lanes at once, since the cluster tests leave part of the two cores idle: the tests that start
# Cassandra nodes, one after another at normal priority (their output as it comes), and the rest
# (Rust, the Python package, lint) at the lowest CPU priority, their output shown when they finish.
# The low lane runs in a session of its own whose scheduling group is at nice 19: with Linux's
# automatic process groups, nice alone only orders processes within one session, and each Cassandra
# node has its own. Ctrl-C stops both lanes.
TEST_LOG := $(CURDIR)/target/test-without-cluster.log
test:
	@$(MAKE) --no-print-directory -j2 test-with-cluster test-without-cluster-quiet

# The lane with clusters: the integration tests, two at a time on loopback blocks of their own
# (127.0.1.x and 127.0.2.x, see java/needle-cassandra/pom.xml), then the cluster tool's tests on 127.0.0.x.
test-with-cluster:
	@$(MAKE) --no-print-directory test-java
	@$(MAKE) --no-print-directory test-cluster-tool

test-without-cluster:
	@$(MAKE) --no-print-directory test-rust
	@$(MAKE) --no-print-directory test-python-package

test-without-cluster-quiet:
	@mkdir -p $(dir $(TEST_LOG))
	@echo "tests without a cluster: running at the lowest priority, output in $(TEST_LOG) when they finish"
	@setsid bash -c 'echo 19 > /proc/self/autogroup 2>/dev/null; exec nice -n 19 $(MAKE) --no-print-directory test-without-cluster' \
	  > $(TEST_LOG) 2>&1 & lane=$$!; trap 'kill -- -$$lane 2>/dev/null' INT TERM; wait $$lane; rc=$$?; \
	  echo "----- tests without a cluster (exit $$rc) -----"; cat $(TEST_LOG); exit $$rc

# The quick tier, for the edit-run loop: every unit test, lint and formatter check, but no test that
# starts a server (a Cassandra node: the integration tests, the cluster tool's; the S3-compatible
# one: the Rust feature s3-tests, in test-rust) and not the Python package (its virtualenv, its native module's build and its
# tests). Java and Rust run side by side (each mostly keeps one core busy), each lane's output
# shown when it ends.
check: lint-python
	@$(MAKE) --no-print-directory -j2 --output-sync=target check-java check-rust
	$(PYTHON) -m pytest -q bench/plot bench/jvm-filters

check-java:
	cd java && $(MVN) -DskipITs install

# Clippy lints the workspace's crates while they are compiled for the tests: `cargo clippy` would
# build every dependency a second time (type-checked only, a build of its own: two of the five
# minutes this lane took from a clean clone). This is how `cargo clippy` itself runs clippy-driver
# (as the compiler's wrapper for the workspace's crates, its arguments in CLIPPY_ARGS), with `cargo
# test` instead of `cargo check`; the dependencies compile once, with plain rustc.
CLIPPY_BUILD := RUSTC_WORKSPACE_WRAPPER=clippy-driver CLIPPY_ARGS="-D__CLIPPY_HACKERY__warnings__CLIPPY_HACKERY__"
check-rust:
	cd rust && cargo fmt --all -- --check
	cd rust && $(CLIPPY_BUILD) cargo test --all-targets --no-run $(RUST_FEATURES)
	cd rust && $(CLIPPY_BUILD) $(RUST_TEST_ENV) cargo test $(RUST_FEATURES)

test-java:
	cd java && $(MVN) install

# The cluster tool's tests (they start real nodes), the result summaries' tests and the Python
# package's; ruff checks the style and mypy the Python package's types against the stub of its
# native module (both pinned in requirements-lint.txt, installed once into a private virtualenv).
LINT_VENV := $(or $(NEEDLE_CACHE),$(HOME)/.cache/needle)/venv-lint
PY_VENV := $(or $(NEEDLE_CACHE),$(HOME)/.cache/needle)/venv-python
# Each virtualenv is made again only when its requirements file's content changes: its stamp is
# named after the content's hash (a file's time would make every fresh clone look newer than the
# virtualenv in the cache).
requirements-hash = $(shell sha256sum $(1) | cut -c1-16)
PY_STAMP := $(PY_VENV)/installed-$(call requirements-hash,python/requirements-test.txt)
LINT_STAMP := $(LINT_VENV)/installed-$(call requirements-hash,requirements-lint.txt)

LINT_PATHS := deploy deploy/needle-cluster deploy/repro/commitlog-loss-check bench/plot bench/data-lake bench/jvm-filters bench/partition-index python
lint-python: $(LINT_STAMP)
	$(LINT_VENV)/bin/ruff check $(LINT_PATHS)
	$(LINT_VENV)/bin/ruff format --check $(LINT_PATHS)
	$(LINT_VENV)/bin/mypy --config-file python/pyproject.toml python/needle
	$(LINT_VENV)/bin/mypy --config-file deploy/pyproject.toml deploy/needle_cluster

test-python: test-cluster-tool test-python-package

# The cluster tool's tests start real nodes.
test-cluster-tool:
	$(PYTHON) -m pytest -q deploy/tests

# The tests build the package's native module without optimizations (the same code, built in a
# fraction of the time) and lint it as it compiles (CLIPPY_BUILD, as for the workspace's tests);
# `make python-package` alone builds it as pip does for a user.
test-python-package: lint-python
	$(CLIPPY_BUILD) $(MAKE) --no-print-directory python-package MATURIN_ARGS="--profile dev"
	$(PYTHON) -m pytest -q bench/plot bench/jvm-filters
	$(PY_VENV)/bin/python -m pytest -q python/tests

# The Python package (python/, built from source by pip through maturin) in a private virtualenv
# with its pinned test dependencies: `pip install ./python` is what a user runs.
python-package: $(PY_STAMP)
	PATH="$(PY_VENV)/bin:$$PATH" MATURIN_PEP517_ARGS="$(MATURIN_ARGS)" $(PY_VENV)/bin/pip install -q --disable-pip-version-check --no-build-isolation ./python

$(PY_STAMP):
	rm -rf $(PY_VENV)
	$(PYTHON) -m venv $(PY_VENV)
	$(PY_VENV)/bin/pip install -q --disable-pip-version-check -r python/requirements-test.txt
	touch $@

$(LINT_STAMP):
	rm -rf $(LINT_VENV)
	$(PYTHON) -m venv $(LINT_VENV)
	$(LINT_VENV)/bin/pip install -q --disable-pip-version-check -r requirements-lint.txt
	touch $@

# The S3-compatible server the object-storage tests and benchmarks start: s3s-fs (Apache-2.0),
# built from crates.io once per machine into the cache the Python environments use. The tests use
# a build without optimizations (about half the build time: `make test` builds it from empty on a
# fresh machine); the benchmarks an optimized one, as they time the requests it answers.
S3_SERVER_VERSION := 0.14.1
S3_CACHE := $(or $(NEEDLE_CACHE),$(HOME)/.cache/needle)
S3_SERVER := $(S3_CACHE)/s3s-fs-$(S3_SERVER_VERSION)
S3_TEST_SERVER := $(S3_CACHE)/s3s-fs-$(S3_SERVER_VERSION)-debug
s3-server: $(S3_SERVER)/bin/s3s-fs
s3-test-server: $(S3_TEST_SERVER)/bin/s3s-fs
$(S3_SERVER)/bin/s3s-fs:
	cargo install s3s-fs --version =$(S3_SERVER_VERSION) --features binary --locked --root $(S3_SERVER)
$(S3_TEST_SERVER)/bin/s3s-fs:
	cargo install s3s-fs --version =$(S3_SERVER_VERSION) --features binary --locked --debug --root $(S3_TEST_SERVER)

# The quick tier's Rust checks with the tests that start an S3-compatible server too (the feature
# s3-tests, in the same build). The Python module, outside the default members, is linted as the
# Python package builds it (test-python-package).
test-rust: s3-test-server
	@$(MAKE) --no-print-directory check-rust \
	  RUST_FEATURES="--features needle-cli/s3-tests,needle-datafusion/s3-tests" \
	  RUST_TEST_ENV="NEEDLE_S3_SERVER=$(S3_TEST_SERVER)/bin/s3s-fs"

# The randomized Cassandra tests at 10 to 25 times the operations of `make test` (a few hours):
# the model-based tests (storage filter; node filters on four nodes), the differential test against
# a twin table, the range index against a model and the stock way (100,000 operations), and a
# table of 12,000 SSTables.
test-long:
	cd java && $(MVN) -pl needle-cassandra -am verify -Dtest=none -Dsurefire.failIfNoSpecifiedTests=false \
	  -Dit.test='ModelBasedIT,DifferentialIT,NodeFilterModelIT,RangeIndexIT,OperationsIT#aTableWithManySSTablesBecomesReady' \
	  -Dneedle.range.ops=100000 -Dneedle.it.ops=100000 -Dneedle.it.ops3=30000 -Dneedle.diff.ops=100000 -Dneedle.diff.ops3=10000 \
	  -Dneedle.nf.nodes=4 -Dneedle.nf.ops=10000 -Dneedle.it.sstables=12000

# The differential test alone, as long as you like: make test-differential OPS=1000000 (25 to 35
# operations per second on one node on two cores, so a million is an overnight run).
OPS ?= 100000
test-differential:
	cd java && $(MVN) -pl needle-cassandra -am verify -Dtest=none -Dsurefire.failIfNoSpecifiedTests=false \
	  -Dit.test='DifferentialIT#oneNode' -Dneedle.diff.ops=$(OPS)

build:
	cd java && $(MVN) -DskipTests install

# A single Cassandra node with Needle: load, delete half, compare lookups, print the table, chart.
demo: build
	bench/needle-bench run bench/experiments/demo.json --out bench/results/demo
	bench/plot/run chart bench/results/demo/results.json
	bench/needle-bench range bench/experiments/range-demo.json --out bench/results/range-demo

demo-filters: build
	java -cp java/needle-filter/target/needle-filter-0.1.0-SNAPSHOT.jar dev.needle.filter.demo.FilterDemo

bench-filters: build
	bench/jvm-filters/run.sh

# Partition index benchmarks (about 20 minutes, 25 GB of scratch space; cold runs need root).
bench-partition-index:
	bench/partition-index/run.sh

# Point lookups in 500 to 5,000 Parquet files by default (the committed run adds 10,000 files, 5.5 GB:
# ARGS="--files 500,1000,2000,5000,10000"): DuckDB alone, with Parquet Bloom filters, and over
# Needle's candidates (cold runs need root). Writing the files takes most of the time;
# ARGS="--data DIR --keep" keeps them, and a later run measures in about 6 minutes.
# ARGS="--files 100,200" for a quick run.
bench-data-lake: python-package
	$(PY_VENV)/bin/pip install -q --disable-pip-version-check -r bench/data-lake/requirements.txt
	$(PY_VENV)/bin/python bench/data-lake/run.py $(ARGS)

bench-data-lake-object-store: python-package s3-server
	cd rust && cargo build --release -p needle-cli
	$(PY_VENV)/bin/pip install -q --disable-pip-version-check -r bench/data-lake/requirements.txt
	$(PY_VENV)/bin/python bench/data-lake/object_store.py $(ARGS)

# Point lookups in 5,000 Parquet files (2.7 GB) through DataFusion, alone and with Needle's table
# provider (rust/needle-datafusion); ARGS="--files 200 --queries 10 --new-queries 2" for a quick run.
bench-data-lake-datafusion: python-package
	cd rust && cargo build --release -p needle-cli
	$(PY_VENV)/bin/python bench/data-lake/datafusion.py $(ARGS)

# The storage-filter tables of the 2022 Journal of Big Data paper (cold runs need root).
bench-scheme1: build
	bench/run-scheme1.sh

bench-scheme2: build
	bench/run-scheme2.sh

# What the emulated network latency (java/needle-testhooks) really adds, per profile: a 3-node cluster
# each (about 2 minutes per profile); bench/results/scheme2/calibration.json.
calibrate-latency: build
	bench/needle-bench calibrate-latency $(ARGS)

# One harness experiment: bench/experiments/NAME.json -> bench/results/NAME/ (results.json, charts).
# Range-query experiments (bench/experiments/range-*.json) run with `needle-bench range`.
bench-%: build
	@test -f bench/experiments/$*.json || { echo "no experiment bench/experiments/$*.json"; exit 2; }
	bench/needle-bench $(if $(filter range-%,$*),range,run) bench/experiments/$*.json $(ARGS)
	$(if $(filter range-%,$*),,bench/plot/run chart bench/results/$*/results.json)

# A 3-node cluster with the Needle plugin, in ./.cluster (stop it with: deploy/needle-cluster down).
cluster: build
	deploy/needle-cluster up -n 3 --with-needle java/needle-cassandra/target/needle-cassandra-0.1.0-SNAPSHOT.jar

clean:
	cd java && $(MVN) -q clean
	cd rust && cargo clean
