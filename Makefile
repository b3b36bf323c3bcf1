# turnstream: the two set-up commands are `make dev` and `make test`.
# `make help` lists every target.

GO        ?= go
LINT      := $(GO) tool -modfile=tools/go.mod golangci-lint
FUZZTIME  ?= 10s
# Fuzz targets as package:Target; `make fuzz FUZZTIME=5m` runs each longer.
FUZZ_TARGETS := ./pkg/protocol:FuzzDecodeTurnEvent ./pkg/protocol:FuzzDecodeContent

.DEFAULT_GOAL := help

.PHONY: help
help: ## List the targets.
	@awk 'BEGIN {FS = ":.*## "} /^[a-zA-Z0-9_-]+:.*## / {printf "  %-22s %s\n", $$1, $$2}' $(MAKEFILE_LIST)

.PHONY: deps
deps: ## Install the pinned test dependencies (dynalite via npm ci, Go modules).
	@command -v node >/dev/null || { echo "make: Node.js is required for the DynamoDB tests (dynalite); install Node 20+" >&2; exit 1; }
	npm ci --no-audit --no-fund --loglevel=error
	$(GO) mod download

.PHONY: test
test: deps ## Everything: vet, the race-enabled suite (memory store and dynalite), brief fuzzing.
	$(GO) vet ./...
	$(GO) test -race -count=1 -timeout 15m ./...
	$(MAKE) --no-print-directory fuzz FUZZTIME=$(FUZZTIME)

.PHONY: fuzz
fuzz: ## Run each fuzz target for FUZZTIME (default 10s).
	@set -e; for t in $(FUZZ_TARGETS); do \
		pkg=$${t%%:*}; name=$${t##*:}; \
		echo "fuzz $$pkg $$name ($(FUZZTIME))"; \
		$(GO) test -run='^$$' -fuzz="^$$name$$" -fuzztime=$(FUZZTIME) $$pkg; \
	done

.PHONY: lint
lint: ## gofmt check and the pinned golangci-lint (errcheck, govet, ineffassign, staticcheck, unused).
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi
	$(LINT) run ./...

.PHONY: fmt
fmt: ## Format the Go code.
	gofmt -w $$(git ls-files '*.go')

.PHONY: bench
bench: deps ## Run the Go benchmarks (each reports its own baseline in the same run).
	$(GO) test -run='^$$' -bench=. -benchmem -count=1 ./...
