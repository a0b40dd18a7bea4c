# clusterbench: the two commands are `make demo` and `make test` (as root, on Debian).
PYTHON ?= python3
export PYTHON

.PHONY: setup setup-test setup-base demo test lint unit integration bench clean

setup:
	@bash scripts/setup.sh

setup-test:
	@bash scripts/setup.sh --test

# Without the MySQL root file system: the demo runs Galera only.
setup-base:
	@bash scripts/setup.sh --no-rootfs

demo: setup-base
	@bash scripts/demo.sh

lint: setup-test
	$(PYTHON) -m ruff check src tests benchmarks
	$(PYTHON) -m mypy

unit: setup-test
	$(PYTHON) -m pytest -q tests/unit

integration: setup-test
	$(PYTHON) -m pytest -q -x tests/integration

# Bytecode caches stay on for the tests, also where the caller's environment turns them off: every
# pytest process would otherwise rewrite and compile every test module again (5 s of CPU each) and
# every `clusterbench` process the tests start would compile what it imports.
unexport PYTHONDONTWRITEBYTECODE

# The test files run on TEST_WORKERS workers at once (most tests wait on servers, not on CPUs).
# A test that fails there runs again with the machine to itself (its timing assertions are written
# for that; both results stay in the log). Then the tests marked `alone` run one at a time.
TEST_WORKERS ?= 4

test: setup-test
	$(PYTHON) -m ruff check src tests benchmarks
	$(PYTHON) -m mypy
	$(PYTHON) -m pytest -q -n $(TEST_WORKERS) --dist loadfile --no-loadscope-reorder -m "not alone" --durations=30 tests || \
	  $(PYTHON) -m pytest -q --last-failed --last-failed-no-failures none -m "not alone" tests
	$(PYTHON) -m pytest -q -m alone --durations=10 tests

bench: setup
	$(PYTHON) benchmarks/bringup.py
	$(PYTHON) benchmarks/optimizer_replay.py

clean:
	rm -rf .pytest_cache .mypy_cache .ruff_cache .setup-stamp
