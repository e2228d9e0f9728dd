# svc at the edge (edge/: the TypeScript handler and its adapters; docs/edge.md). Included from
# the main Makefile; paths are relative to the repository root, where make runs.
#
#   make edge-deps   npm ci in edge/ when its lock file changed: typescript, esbuild and the
#                    runtimes the tests run the edge in (workerd, edge-runtime with
#                    @edge-runtime/vm, bun; bun, workerd and esbuild run their install scripts,
#                    allowed by name in edge/package.json), nothing downloaded at run time
#   make edge        type-check and build the bundles into src/svc/static/edge/ (committed, so
#                    that `svcm deploy --edge` works from an installed package without Node)
#   make edge-check  type-check, and fail if the committed bundles are not the build of edge/src

EDGE_DIR     ?= edge
EDGE_NPM     ?= npm
EDGE_MODULES := $(EDGE_DIR)/node_modules/.package-lock.json

.PHONY: edge edge-deps edge-check

$(EDGE_MODULES): $(EDGE_DIR)/package.json $(EDGE_DIR)/package-lock.json
	cd $(EDGE_DIR) && $(EDGE_NPM) ci --no-audit --no-fund && touch node_modules/.package-lock.json

edge-deps: $(EDGE_MODULES)

edge: $(EDGE_MODULES)
	cd $(EDGE_DIR) && node_modules/.bin/tsc --noEmit -p tsconfig.json && node build.mjs

edge-check: $(EDGE_MODULES)
	cd $(EDGE_DIR) && node_modules/.bin/tsc --noEmit -p tsconfig.json && node build.mjs --check
