# The TypeScript client (npm package `svc`, clients/js). Included from the main Makefile:
#   include clients/js/client.mk
# Needs Node 18+ and npm; installs its dev dependencies (typescript, esbuild) from package-lock.json.
# The integration tests start the real server from .venv/bin/svcm (override with SVCM=...) and are
# skipped, saying why, when it is missing or does not start.

CLIENT_JS_DIR := $(patsubst %/,%,$(dir $(lastword $(MAKEFILE_LIST))))
NPM ?= npm

# npm ci writes this file last; it stands for "node_modules matches the lock file" (one npm ci
# for the build and the tests, which may run side by side).
CLIENT_JS_MODULES := $(CLIENT_JS_DIR)/node_modules/.package-lock.json

.PHONY: client-js-deps client-js-test client-js-build client-js-size client-js-clean

$(CLIENT_JS_MODULES): $(CLIENT_JS_DIR)/package.json $(CLIENT_JS_DIR)/package-lock.json
	cd $(CLIENT_JS_DIR) && $(NPM) ci --no-audit --no-fund && touch node_modules/.package-lock.json

## client-js-deps: npm ci when the lock file changed
client-js-deps: $(CLIENT_JS_MODULES)

## client-js-test: tsc --noEmit (strict), build ESM+CJS, node --test (unit + integration)
client-js-test: $(CLIENT_JS_MODULES)
	cd $(CLIENT_JS_DIR) && $(NPM) run typecheck && $(NPM) test

## client-js-build: dist/esm and dist/cjs with .d.ts
client-js-build: $(CLIENT_JS_MODULES)
	cd $(CLIENT_JS_DIR) && $(NPM) run build

## client-js-size: minified and gzipped size of the library
client-js-size: client-js-build
	cd $(CLIENT_JS_DIR) && $(NPM) run size

client-js-clean:
	rm -rf $(CLIENT_JS_DIR)/dist $(CLIENT_JS_DIR)/node_modules
