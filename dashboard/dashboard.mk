# The dashboard (dashboard/: Preact + esbuild), built into the Python package as
# src/svc/static/dashboard/ (committed, so `pip install .` serves it without Node).
# Included from the main Makefile:
#   include dashboard/dashboard.mk
# Needs Node 18+ and npm; installs pinned dev dependencies from package-lock.json.

DASHBOARD_DIR := $(patsubst %/,%,$(dir $(lastword $(MAKEFILE_LIST))))
DASHBOARD_OUT := $(DASHBOARD_DIR)/../src/svc/static/dashboard
DASHBOARD_SRC := $(wildcard $(DASHBOARD_DIR)/src/*) $(DASHBOARD_DIR)/build.mjs \
	$(DASHBOARD_DIR)/scripts/make-map.mjs $(DASHBOARD_DIR)/package.json \
	$(DASHBOARD_DIR)/package-lock.json $(DASHBOARD_DIR)/tsconfig.json
NPM ?= npm

.PHONY: dashboard dashboard-size dashboard-check dashboard-clean

## dashboard: npm ci, type check and build, when a source is newer than the built output
dashboard: $(DASHBOARD_OUT)/manifest.json

$(DASHBOARD_OUT)/manifest.json: $(DASHBOARD_SRC)
	cd $(DASHBOARD_DIR) && $(NPM) ci --no-audit --no-fund && $(NPM) run typecheck && $(NPM) run build
	@touch $@

## dashboard-size: raw and gzipped size of every built file (fails past 150 KB gzipped)
dashboard-size:
	cd $(DASHBOARD_DIR) && $(NPM) ci --no-audit --no-fund && $(NPM) run size

## dashboard-check: the committed build is what the sources build to
dashboard-check:
	cd $(DASHBOARD_DIR) && $(NPM) ci --no-audit --no-fund && \
	tmp=$$(mktemp -d) && node build.mjs --out $$tmp >/dev/null && \
	diff -r $$tmp ../src/svc/static/dashboard && rm -rf $$tmp && echo "dashboard: build is up to date"

dashboard-clean:
	rm -rf $(DASHBOARD_DIR)/node_modules $(DASHBOARD_DIR)/.cache
