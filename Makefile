# The README's two commands: `make demo` (the whole flow, locally) and `make test` (the whole suite).
# Both set up everything they need from a fresh clone.
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
SAM_VENV := .venv-sam
LAMBDA_PYTHON ?= $(shell pyenv prefix 3.12 2>/dev/null || pyenv prefix 3.12.1 2>/dev/null)

.PHONY: setup setup-sam demo test test-fast lint bench clean

# A shell with PYTHONDONTWRITEBYTECODE set (some sandboxes and CI images) would make every
# Python process compile Airflow, SQLAlchemy, pydantic... from source again: an Airflow import
# costs 3.8 s of CPU without .pyc files, 2.1 s with them, and test_backfill_dag 51 -> 40 s.
# uv installs no .pyc either; the first import writes them (into .venv and gitignored __pycache__).
unexport PYTHONDONTWRITEBYTECODE

# pytest-xdist workers. The slow groups (tests/conftest.py) mostly wait on Airflow's scheduler
# and Spark, so `make test` runs more workers than the 2 cores it is sized for; the fast suite
# is CPU-bound: one worker per core.
TEST_WORKERS ?= 4
FAST_WORKERS ?= 2
XDIST := --dist loadscope --no-loadscope-reorder

setup: $(VENV)/.installed

$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(VENV)/bin/pip install -q --upgrade uv
	$(VENV)/bin/uv pip install -q --python $(PY) -e '.[dev]'
	touch $@

# aws-sam-cli pins versions that clash with the app: it gets its own virtualenv.
setup-sam: $(SAM_VENV)/.installed

$(SAM_VENV)/.installed: $(VENV)/.installed
	$(PYTHON) -m venv $(SAM_VENV)
	$(VENV)/bin/uv pip install -q --python $(SAM_VENV)/bin/python 'aws-sam-cli>=1.120'
	touch $@

demo: setup
	$(PY) -m backfill_local.demo

test: setup setup-sam
	SAM_CLI=$(CURDIR)/$(SAM_VENV)/bin/sam LAMBDA_PYTHON_PREFIX=$(LAMBDA_PYTHON) $(PY) -m pytest -q -n $(TEST_WORKERS) $(XDIST)

test-fast: setup
	$(PY) -m pytest -q -m "not slow" -n $(FAST_WORKERS) $(XDIST)

lint: setup
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/mypy

# Every benchmark, or one (`make bench BENCH=trigger`); each rewrites its row of the table in
# docs/performance.md with its last BENCH line, the load average and the date.
bench: setup
	$(PY) benchmarks/report.py $(BENCH)

clean:
	rm -rf $(VENV) $(SAM_VENV) .aws-sam .pytest_cache .demo
