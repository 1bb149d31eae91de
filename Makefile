# The two commands a newcomer needs: `make demo` and `make test`. Both set up .venv when missing.
VENV := .venv
export OMP_NUM_THREADS ?= 1
export MKL_NUM_THREADS ?= 1
export OPENBLAS_NUM_THREADS ?= 1
# Bytecode caches on (__pycache__/, git-ignored) even where the environment sets PYTHONDONTWRITEBYTECODE (this
# machine does): without them every bench subprocess, Dagster process and training child compiles the repo's modules
# again and each pytest worker rewrites every test file's asserts again (docs/testing.md, "Speed of the suite").
unexport PYTHONDONTWRITEBYTECODE
TEST_WORKERS ?= 2  # pytest-xdist workers for `make test` (the servers and training children wait a lot)

.PHONY: setup demo test test-fast ui benchmarks lint mutation family-check

setup:
	@scripts/bootstrap.sh

demo: setup
	$(VENV)/bin/bench demo

test: setup
	@scripts/system_deps.sh  # Chromium (browser test), Redis and PostgreSQL (cluster test): Debian packages
	$(VENV)/bin/lint-imports  # the architecture contract (pyproject.toml [tool.importlinter], docs/architecture.md)
	$(VENV)/bin/python -m pytest -q -n $(TEST_WORKERS) --durations=25  # a file's tests stay on one worker (--dist loadfile); the 25 slowest are listed

test-fast: setup  # the edit loop: unit, pure and property tests; no Dagster runs, dbt, servers or training
	$(VENV)/bin/python -m pytest -q -n $(TEST_WORKERS) -m "not slow and not integration"

ui: setup
	$(VENV)/bin/bench ui

benchmarks: setup
	$(VENV)/bin/python benchmarks/import_time.py
	$(VENV)/bin/python benchmarks/verify_speed.py

lint: setup
	$(VENV)/bin/ruff check .

family-check: setup  # every trainable family's smoke size: train, kill + resume bit for bit, predict (docs/models.md)
	$(VENV)/bin/bench models check --all

mutation: setup  # mutmut over the pure modules (slow, not in CI): docs/testing.md lists the survivors
	@scripts/mutation.sh
