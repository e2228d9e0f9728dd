# svc: two commands do everything on a fresh machine with Python, Node and apt:
#   make run    set up and run the service on the embedded store (chDB + SQLite)
#   make test   set up and run every test (Python, browser, JS client), ruff and mypy
.DEFAULT_GOAL := help
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMPS := .stamps
HOST ?= 127.0.0.1
PORT ?= 8080
DATA ?= ./data
PYTEST_ARGS ?=
# The Python suite in three processes (pytest-xdist) on two cores, each test file whole on one
# of them: its module-scoped servers and browsers start once. A third process fills the time
# the others wait on a browser, a server's start or a subprocess (1,030 s on two, 913 s on
# three, the same host and code). PYTEST_WORKERS=0 runs it serially.
PYTEST_WORKERS ?= 3

.PHONY: help run test test-deps setup lint typecheck pytest services stop-services test-apt dashboard-deps bench clean

help:
	@echo "make run    set up and run svc on http://$(HOST):$(PORT) (data in $(DATA))"
	@echo "make test   set up and run every test, ruff and mypy"
	@echo "make bench  run the benchmarks in bench/ (bench/run_all.py --record: into bench/results.json and the doc)"

$(STAMPS):
	@mkdir -p $(STAMPS)

# The Python client (clients/python, distribution svc-analytics-client) with the service: the
# service's dev extra requires it, and it is not taken from PyPI. Installed by uv (from PyPI
# with pip; the same versions as pip resolves, downloaded side by side: ~50 s in a fresh
# clone against pip's ~2 min), compiled to bytecode as pip does (where
# PYTHONDONTWRITEBYTECODE is set, every process would compile its imports again).
$(STAMPS)/venv: pyproject.toml clients/python/pyproject.toml | $(STAMPS)
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --disable-pip-version-check uv
	$(VENV)/bin/uv pip install -q --compile-bytecode --python $(PY) \
		-e 'clients/python[test]' -e '.[dev]'
	@touch $@

setup: $(STAMPS)/venv tracker dashboard

# ClickHouse 26.3's engine (chdb-core 26.3.0), the oldest server version svc supports: the
# tests' ClickHouse double parses every statement svc sends with its parser
# (tests/clickhouse_double/parser.py). Another version of chDB than svc's, so a directory of
# its own, not the virtual environment.
$(STAMPS)/clickhouse-26.3: | $(STAMPS)/venv
	rm -rf $@.part && $(PY) -m pip install -q --disable-pip-version-check --no-deps \
		--target $@.part 'chdb-core==26.3.0' && mv $@.part $@

run: setup
	$(VENV)/bin/svcm serve --host $(HOST) --port $(PORT) --data-dir $(DATA)

# Debian's packages for the tests, in one apt-get (dpkg takes one install at a time):
# Chromium for the browser tests (never a downloaded browser), zsh and fish, whose parsers
# check the completion scripts of svcm, and PostgreSQL and Redis (make services).
test-apt:
	@missing=$$(for c in chromium zsh fish redis-server; do command -v $$c >/dev/null 2>&1 || echo $$c; done; \
		ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || echo postgresql); \
	if [ -n "$$missing" ]; then echo "make test: installing" $$missing "with apt"; apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing >/dev/null; fi

# The dashboard's pinned npm packages (axe-core for the accessibility test); the build itself
# is committed, so a fresh clone would otherwise never run npm ci.
dashboard-deps: dashboard
	@test -f dashboard/node_modules/axe-core/axe.min.js || { cd dashboard && $(NPM) ci --no-audit --no-fund >/dev/null; }

# PostgreSQL and Redis from Debian; PostgreSQL is started for the tests and left running (make
# stop-services), the Redis tests start servers of their own.
services: test-apt | $(STAMPS)
	@echo "make test: starting PostgreSQL for the tests (PostgreSQL and Redis installed with apt if missing)"
	@bash scripts/test-services.sh > $(STAMPS)/services.env
	@cat $(STAMPS)/services.env

stop-services:
	-@pg_lsclusters -h 2>/dev/null | awk '{print $$1, $$2}' | while read v n; do pg_ctlcluster $$v $$n stop; done

lint: $(STAMPS)/venv
	$(VENV)/bin/ruff check src tests bench clients/python
	$(VENV)/bin/ruff format --check src tests bench clients/python

typecheck: $(STAMPS)/venv
	$(VENV)/bin/mypy

# What every check needs (defined before the rules that name it: make expands a rule's
# prerequisites as it reads the rule).
TEST_DEPS := $(STAMPS)/venv tracker dashboard dashboard-deps test-apt services client-js-deps edge-deps \
	$(STAMPS)/clickhouse-26.3
test-deps: $(TEST_DEPS)

# The sources are compiled once first: where PYTHONDONTWRITEBYTECODE is set (this CI's shell),
# each of the suite's server processes compiled them again (0.25 s or more of CPU a start).
# The 25 slowest items are listed at the end: the suite has a budget of 15 minutes on 2 cores.
pytest: $(TEST_DEPS) client-js-build
	$(PY) -m compileall -q src tests > /dev/null
	set -a && source $(STAMPS)/services.env && set +a && \
	$(PY) -m pytest -n $(PYTEST_WORKERS) --dist loadfile --durations=25 $(PYTEST_ARGS)

# What `make test` runs, in three steps: what every check needs, installed side by side (pip,
# npm, apt: mostly waiting on the network and the disk); the short checks two at a time; the
# Python suite, which takes both cores itself. -O keeps each job's output together.
test:
	@$(MAKE) --no-print-directory -O -j 6 test-deps
	@$(MAKE) --no-print-directory -O -j 2 lint typecheck client-js-test edge-check
	@$(MAKE) --no-print-directory pytest

bench: setup
	$(PY) bench/run_all.py

clean:
	rm -rf $(STAMPS) build *.egg-info

include tracker/tracker.mk
include clients/js/client.mk
include dashboard/dashboard.mk
include edge/edge.mk
