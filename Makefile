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

.PHONY: help run test setup lint typecheck pytest services chromium bench clean

help:
	@echo "make run    set up and run svc on http://$(HOST):$(PORT) (data in $(DATA))"
	@echo "make test   set up and run every test, ruff and mypy"
	@echo "make bench  run the benchmarks in bench/ (figures go to docs/benchmarks.md by hand)"

$(STAMPS):
	@mkdir -p $(STAMPS)

$(STAMPS)/venv: pyproject.toml | $(STAMPS)
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[dev]'
	@touch $@

setup: $(STAMPS)/venv tracker dashboard

run: setup
	$(VENV)/bin/svcm serve --host $(HOST) --port $(PORT) --data-dir $(DATA)

# Debian's Chromium for the browser tests (never a downloaded browser).
chromium:
	@command -v chromium >/dev/null 2>&1 || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; }

# PostgreSQL and Redis from Debian, started for the tests.
services:
	@bash scripts/test-services.sh > $(STAMPS)/services.env
	@cat $(STAMPS)/services.env

lint: $(STAMPS)/venv
	$(VENV)/bin/ruff check src tests bench
	$(VENV)/bin/ruff format --check src tests bench

typecheck: $(STAMPS)/venv
	$(VENV)/bin/mypy

pytest: $(STAMPS)/venv tracker dashboard chromium services client-js-build
	set -a && source $(STAMPS)/services.env && set +a && \
	$(PY) -m pytest $(PYTEST_ARGS)

test: lint typecheck pytest client-js-test

bench: setup
	$(PY) bench/run_all.py

clean:
	rm -rf $(STAMPS) build *.egg-info

include tracker/tracker.mk
include clients/js/client.mk
include dashboard/dashboard.mk
