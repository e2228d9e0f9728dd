# The browser script (issue 4). Included from the main Makefile; paths are relative to the
# repository root, where make runs.
#
#   make tracker        npm ci (when the lock file changed) and build src/svc/static/svc.js and
#                       the 31 builds with opt-in extensions, svc.<names>.js (issue 20), when
#                       the sources are newer; fails above a size budget
#   make tracker-size   print the sizes: the default build's, what each extension adds, the
#                       largest combination's (minified, gzip -9, brotli -q 11)
#   make tracker-check  rebuild into a temporary directory and fail if a committed build
#                       differs or is missing or left over (CI: the committed files are what
#                       `pip install .` serves)
#
# The built files are committed, so installing and running the service never needs Node. When
# Node/npm are missing, `make tracker` warns and keeps the committed builds.

TRACKER_DIR    ?= tracker
TRACKER_OUT    ?= src/svc/static/svc.js
TRACKER_PYTHON ?= $(if $(wildcard .venv/bin/python),.venv/bin/python,python3)
TRACKER_NPM    ?= npm
TRACKER_NODE   ?= node

TRACKER_SOURCES := $(TRACKER_DIR)/src/svc.js $(TRACKER_DIR)/build.mjs $(TRACKER_DIR)/package-lock.json
# npm ci writes this file last; it stands for "node_modules matches the lock file".
TRACKER_MODULES := $(TRACKER_DIR)/node_modules/.package-lock.json

.PHONY: tracker tracker-size tracker-check

tracker: $(TRACKER_OUT)

$(TRACKER_MODULES): $(TRACKER_DIR)/package.json $(TRACKER_DIR)/package-lock.json
	@if command -v $(TRACKER_NPM) >/dev/null 2>&1; then \
		cd $(TRACKER_DIR) && $(TRACKER_NPM) ci --no-audit --no-fund && touch node_modules/.package-lock.json; \
	else \
		echo "tracker: npm not found; keeping the committed $(TRACKER_OUT)" >&2; \
	fi

$(TRACKER_OUT): $(TRACKER_SOURCES) $(TRACKER_MODULES)
	@if command -v $(TRACKER_NODE) >/dev/null 2>&1 && [ -d $(TRACKER_DIR)/node_modules ]; then \
		cd $(TRACKER_DIR) && $(TRACKER_NODE) build.mjs --check; \
	else \
		echo "tracker: node or node_modules missing; keeping the committed $(TRACKER_OUT)" >&2; \
	fi

tracker-size:
	@$(TRACKER_PYTHON) $(TRACKER_DIR)/sizes.py $(dir $(TRACKER_OUT))

tracker-check: $(TRACKER_MODULES)
	@tmp=$$(mktemp -d) && \
	(cd $(TRACKER_DIR) && $(TRACKER_NODE) build.mjs --out=$$tmp) && \
	if diff -q $$tmp $(dir $(TRACKER_OUT)) 2>&1 | grep 'svc[.a-z0-9]*\.js' >&2; then \
	  echo "tracker: the builds in $(dir $(TRACKER_OUT)) are not those of $(TRACKER_DIR)/src/svc.js: run make tracker and commit them" >&2; rm -rf $$tmp; exit 1; \
	else echo "tracker: the 32 builds in $(dir $(TRACKER_OUT)) match their sources"; rm -rf $$tmp; fi
