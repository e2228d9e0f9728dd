# The browser script (issue 4). Included from the main Makefile; paths are relative to the
# repository root, where make runs.
#
#   make tracker        npm ci (when the lock file changed) and build src/svc/static/svc.js
#                       when its sources are newer than it; fails above the size budget
#   make tracker-size   print the built file's size: minified, gzip -9, brotli -q 11
#   make tracker-check  rebuild into a temporary file and fail if the committed build differs
#                       (CI: the committed svc.js is what `pip install .` serves)
#
# The built file is committed, so installing and running the service never needs Node. When
# Node/npm are missing, `make tracker` warns and keeps the committed build.

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
	@$(TRACKER_PYTHON) -c "import gzip, sys, importlib.util as u; \
	d = open(sys.argv[1], 'rb').read(); \
	br = __import__('brotli') if u.find_spec('brotli') else None; \
	print(f'{sys.argv[1]}: {len(d)} bytes minified, {len(gzip.compress(d, 9, mtime=0))} gzipped' \
	  + (f', {len(br.compress(d, quality=11))} brotli' if br else '') \
	  + ' (budget 1,024 / 600; Plausible 1,341 minified; Umami 2,442 / 1,399)')" $(TRACKER_OUT)

tracker-check: $(TRACKER_MODULES)
	@tmp=$$(mktemp --suffix=.js) && \
	(cd $(TRACKER_DIR) && $(TRACKER_NODE) build.mjs --out=$$tmp) && \
	if cmp -s $$tmp $(TRACKER_OUT); then echo "tracker: $(TRACKER_OUT) matches its sources"; rm -f $$tmp; \
	else echo "tracker: $(TRACKER_OUT) is not the build of $(TRACKER_DIR)/src/svc.js: run make tracker and commit it" >&2; rm -f $$tmp; exit 1; fi
