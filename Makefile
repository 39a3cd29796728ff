# The README's two commands: `make demo` (the whole flow, locally) and `make test` (the whole suite).
# Both set up everything they need from a fresh clone.
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
SAM_VENV := .venv-sam
LAMBDA_PYTHON ?= $(shell pyenv prefix 3.12 2>/dev/null || pyenv prefix 3.12.1 2>/dev/null)

.PHONY: setup setup-sam setup-browser demo test test-fast lint bench clean

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

# The package is installed editable; backfill_local and spark_jobs are not in its wheel, so the
# virtualenv gets the repository's `local/` and root on its path (backfill-repo.pth).

$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(VENV)/bin/pip install -q --upgrade uv
	$(VENV)/bin/uv pip install -q --python $(PY) -e '.[dev]'
	$(PY) -c 'import pathlib, sysconfig; pathlib.Path(sysconfig.get_paths()["purelib"], "backfill-repo.pth").write_text("$(CURDIR)/local\n$(CURDIR)\n")'
	touch $@

# aws-sam-cli pins versions that clash with the app: it gets its own virtualenv.
setup-sam: $(SAM_VENV)/.installed

$(SAM_VENV)/.installed: $(VENV)/.installed
	$(PYTHON) -m venv $(SAM_VENV)
	$(VENV)/bin/uv pip install -q --python $(SAM_VENV)/bin/python 'aws-sam-cli>=1.120'
	touch $@

# The Backfills page's browser tests (tests/ui) drive Debian's chromium through its chromedriver:
# installed with apt when missing and this is root (CI, the dev machines), else said how.
setup-browser:
	@if [ -x /usr/bin/chromium ] && [ -x /usr/bin/chromedriver ]; then exit 0; fi; \
	if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
		apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q chromium chromium-driver; \
	else \
		echo "setup-browser: /usr/bin/chromium and /usr/bin/chromedriver are missing; as root run" \
			"'apt-get install chromium chromium-driver' (Debian), then make test again" >&2; exit 1; \
	fi

demo: setup
	$(PY) -m backfill_local.demo

test: setup setup-sam setup-browser
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
