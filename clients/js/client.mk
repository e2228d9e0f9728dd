# The TypeScript client (npm package `svc`, clients/js). Included from the main Makefile:
#   include clients/js/client.mk
# Needs Node 18+ and npm; installs its dev dependencies (typescript, esbuild) from package-lock.json.
# The integration tests start the real server from .venv/bin/svcm (override with SVCM=...) and are
# skipped, saying why, when it is missing or does not start.

CLIENT_JS_DIR := $(patsubst %/,%,$(dir $(lastword $(MAKEFILE_LIST))))
NPM ?= npm

.PHONY: client-js-test client-js-build client-js-size client-js-clean

## client-js-test: npm ci, tsc --noEmit (strict), build ESM+CJS, node --test (unit + integration)
client-js-test:
	cd $(CLIENT_JS_DIR) && $(NPM) ci --no-audit --no-fund && $(NPM) run typecheck && $(NPM) test

## client-js-build: dist/esm and dist/cjs with .d.ts
client-js-build:
	cd $(CLIENT_JS_DIR) && $(NPM) ci --no-audit --no-fund && $(NPM) run build

## client-js-size: minified and gzipped size of the library
client-js-size: client-js-build
	cd $(CLIENT_JS_DIR) && $(NPM) run size

client-js-clean:
	rm -rf $(CLIENT_JS_DIR)/dist $(CLIENT_JS_DIR)/node_modules
