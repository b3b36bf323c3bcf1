# turnstream: the two set-up commands are `make dev` and `make test`.
# `make help` lists every target.

GO        ?= go
# npm ci, then the one fix the pinned dynalite needs (scripts/patch-dynalite.mjs).
NPM_CI    = npm ci --no-audit --no-fund --loglevel=error && $(NODE) scripts/patch-dynalite.mjs
LINT      := $(GO) tool -modfile=tools/go.mod golangci-lint
# Fuzz budget per target. `make test` uses an execution count, not a duration:
# go1.26's fuzz coordinator can fail a duration-bounded run with a spurious
# "context deadline exceeded" when -fuzztime expires while a worker is busy
# (golang/go#75804, fixed in go1.27). `make fuzz FUZZTIME=5m` fuzzes longer.
FUZZTIME  ?= 50000x
# Fuzz targets as package:Target.
FUZZ_TARGETS := ./pkg/protocol:FuzzDecodeTurnEvent ./pkg/protocol:FuzzDecodeContent \
                ./pkg/protocol:FuzzParseJSON ./pkg/sessionapi/internal/artifactsfuzz:FuzzPutArtifacts

.DEFAULT_GOAL := help

.PHONY: help
help: ## List the targets.
	@awk 'BEGIN {FS = ":.*## "} /^[a-zA-Z0-9_-]+:.*## / {printf "  %-22s %s\n", $$1, $$2}' $(MAKEFILE_LIST)

.PHONY: deps
deps: rie ## Install the pinned test dependencies (npm ci: dynalite and the clients/js tools; Go modules; the Lambda runtime interface emulator; Chromium).
	@command -v node >/dev/null || { echo "make: Node.js is required for the DynamoDB tests (dynalite) and clients/js; install Node 20+" >&2; exit 1; }
	$(NPM_CI)
	$(GO) mod download
	@$(MAKE) --no-print-directory chromium

# The browser tests drive Debian's Chromium (CHROMIUM=/path to use another).
# As root on Debian it is installed when missing; otherwise a missing browser
# is reported here, and the browser tests fail in CI (CI=true) or say loudly
# that they skipped.
CHROMIUM ?= /usr/bin/chromium
.PHONY: chromium
chromium: ## Install Debian's chromium for the browser tests when it is missing (as root).
	@if [ ! -x "$(CHROMIUM)" ]; then \
		if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
			echo "make: installing chromium for the browser tests"; \
			apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y chromium; \
		else \
			echo "make: $(CHROMIUM) is missing: install chromium (apt-get install -y chromium) for the browser tests" >&2; \
			if [ "$$CI" = true ]; then exit 1; fi; \
		fi; \
	fi

# Every Go build of `make test` is race-enabled, so that each package
# compiles once (the provider SDKs are the slow part of a cold build):
# vet, the tests, the bootstraps the smoke test, the runtime path test and
# turnbench's quick run start (built here, before any timed test:
# internal/lambdabin) and the
# dev server and turnctl the clients/js tests build.
TEST_BOOTSTRAPS := bin/test-bootstraps
RACE_GOFLAGS    := $(strip $(GOFLAGS) -race)

.PHONY: test
test: deps ## Everything: vet, the race-enabled Go suite (memory store and dynalite), the clients/js and browser tests, brief fuzzing.
	$(GO) vet -race ./...
	@$(MAKE) --no-print-directory test-bootstraps
	# -vet=off: the line above vetted every package, test files included.
	TURNSTREAM_BOOTSTRAPS=$(CURDIR)/$(TEST_BOOTSTRAPS) $(GO) test -race -vet=off -count=1 -timeout 15m ./...
	# The turn bootstrap and the dev server with the optional openai provider and MCP client built in (TURN_PROVIDERS=openai TURN_TOOLS=mcp).
	$(GO) vet -race -tags provider.openai,tools.mcp ./functions/turn ./cmd/devserver
	$(GO) test -race -vet=off -count=1 -tags provider.openai,tools.mcp ./functions/turn
	$(GO) test -race -vet=off -count=1 -tags provider.openai,tools.mcp -run 'TestRealModels' ./cmd/devserver
	GOFLAGS="$(RACE_GOFLAGS)" $(MAKE) --no-print-directory js-test
	@# The browser tests mostly wait on slowed echo models and the fuzzing
	@# is CPU-bound: they run side by side (a cold run saves about 90 s),
	@# and both must pass. No test depends on the machine's speed.
	@GOFLAGS="$(RACE_GOFLAGS)" $(MAKE) --no-print-directory browser-test > $(TEST_BOOTSTRAPS)/browser-test.log 2>&1 & b=$$!; \
		$(MAKE) --no-print-directory fuzz FUZZTIME=$(FUZZTIME); f=$$?; \
		wait $$b; r=$$?; cat $(TEST_BOOTSTRAPS)/browser-test.log; \
		if [ $$r -ne 0 ]; then echo "make test: the browser tests failed" >&2; fi; \
		test $$f -eq 0 -a $$r -eq 0

.PHONY: test-bootstraps
test-bootstraps: ## Build the bootstraps the smoke test, the runtime path test and turnbench -quick run, and the dev server the fate harness runs (host, race-enabled) into bin/test-bootstraps.
	$(GO) build -race -tags lambda.norpc -o $(TEST_BOOTSTRAPS)/ ./functions/turn ./functions/history ./functions/artifacts ./cmd/turnbench/internal/minimal ./cmd/devserver

# ---- clients/js and the demo page -------------------------------------------

JS     := clients/js
NODE   ?= node
TSC    := node_modules/.bin/tsc

.PHONY: js-build
js-build: ## Type-check clients/js, build it (dist/, with .d.ts types) and the demo page (commit internal/demo/assets afterwards).
	@test -x $(TSC) || $(NPM_CI)
	$(TSC) -p $(JS)
	$(NODE) $(JS)/build.mjs

.PHONY: js-test
js-test: ## clients/js: type-check, unit tests (recorded streams cut at every byte, shared Go fixtures), bundle freshness and size, a run against the dev server.
	@test -x $(TSC) || $(NPM_CI)
	$(TSC) -p $(JS) --noEmit
	$(NODE) $(JS)/build.mjs --client
	$(NODE) --test $(JS)/test/*.test.mjs

.PHONY: js-bench
js-bench: ## clients/js: decoder and line splitter speed against JSON.parse of the same lines; the chat page's Markdown per streamed update against plain text (Chromium). Medians, same run.
	$(NODE) $(JS)/build.mjs --client
	$(NODE) $(JS)/bench/decode.bench.mjs
	$(NODE) $(JS)/bench/render.bench.mjs

.PHONY: browser-test
browser-test: ## The demo page in headless Chromium against dev servers; screenshots in clients/js/test-output/screenshots.
	@test -x $(TSC) || $(NPM_CI)
	$(NODE) $(JS)/build.mjs --client
	@# Two files at once: they mostly wait on slowed echo models, each with
	@# its own Chromium and dev servers; no test depends on the machine's speed.
	$(NODE) --test --test-concurrency=2 $(JS)/test/browser/*.test.mjs

.PHONY: docs-screenshots
docs-screenshots: ## Take docs/demo-desktop.png and docs/demo-phone.png again with the browser test that draws them (commit them afterwards).
	@test -x $(TSC) || $(NPM_CI)
	$(NODE) $(JS)/build.mjs --client
	TURNSTREAM_DOCS_SCREENSHOTS=1 $(NODE) --test --test-name-pattern="the docs' screenshots" $(JS)/test/browser/demo.test.mjs

.PHONY: fuzz
fuzz: ## Run each fuzz target for FUZZTIME (default 50000x executions; e.g. FUZZTIME=5m).
	@set -e; for t in $(FUZZ_TARGETS); do \
		pkg=$${t%%:*}; name=$${t##*:}; \
		echo "fuzz $$pkg $$name ($(FUZZTIME))"; \
		$(GO) test -run='^$$' -fuzz="^$$name$$" -fuzztime=$(FUZZTIME) $$pkg; \
	done

.PHONY: lint
lint: cfn-lint ## gofmt check, the pinned golangci-lint (errcheck, govet, ineffassign, staticcheck, unused), the macOS and Windows builds, and cfn-lint on template.yaml.
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi
	$(LINT) run ./...
	GOOS=darwin $(GO) build ./...
	GOOS=windows $(GO) vet ./...

# AWS's linter for CloudFormation (what `sam validate --lint` runs), with
# its informational checks (.cfnlintrc.yaml): it must print nothing. A
# missing cfn-lint fails the run in CI (CI=true) and is reported loudly
# otherwise (pip install cfn-lint).
CFN_LINT ?= cfn-lint
.PHONY: cfn-lint
cfn-lint: ## cfn-lint template.yaml: errors, warnings and informational findings (pip install cfn-lint).
	@if command -v $(CFN_LINT) >/dev/null; then \
		echo "$(CFN_LINT) template.yaml"; $(CFN_LINT) template.yaml; \
	else \
		echo "make: *** cfn-lint is missing: template.yaml was NOT checked against CloudFormation's rules (pip install cfn-lint) ***" >&2; \
		if [ "$$CI" = true ]; then exit 1; fi; \
	fi

.PHONY: fmt
fmt: ## Format the Go code.
	gofmt -w $$(git ls-files '*.go')

.PHONY: bench
bench: deps ## Run the Go benchmarks (each reports its own baseline in the same run).
	$(GO) test -run='^$$' -bench=. -benchmem -count=1 ./...

.PHONY: turnbench
turnbench: deps ## Measure the dev-server wiring on dynalite against the request budgets: one markdown table (docs/benchmarks.md), a few minutes.
	GO=$(GO) TURNSTREAM_RIE_DIR=$(RIE_DIR) $(GO) run ./cmd/turnbench

# ---- Run and deploy (docs/design.md#running-it) -----------------------------

# The three Lambda functions: functions/<dir> builds bin/<dir>/bootstrap.
FUNCTIONS     := turn history artifacts
LAMBDA_ENV    := CGO_ENABLED=0 GOOS=linux GOARCH=arm64
# Optional model providers built into the turn bootstrap, space-separated
# (functions/turn/providers.go): `make build TURN_PROVIDERS=openai` adds the
# openai provider, about 17 MB (docs/providers.md). echo and bedrock are
# always in. An environment variable of the name works too (sam build).
TURN_PROVIDERS ?=
# Optional tool clients built into the turn bootstrap (functions/turn/tools.go):
# `make build TURN_TOOLS=mcp` adds the MCP client for definitions' mcpServers
# (docs/mcp.md).
TURN_TOOLS     ?=
LAMBDA_TAGS    = $(subst $(space),$(comma),$(strip lambda.norpc $(if $(filter turn,$*),$(TURN_PROVIDERS:%=provider.%) $(TURN_TOOLS:%=tools.%))))
comma := ,
space := $(subst ,, )
LAMBDA_FLAGS   = -tags "$(LAMBDA_TAGS)" -trimpath -ldflags "-s -w"
# Where `sam local invoke` (invoke-local) reads its event and which function.
FUNCTION      ?= TurnFunction
EVENT         ?= events/turn-submit.json
# The Lambda runtime interface emulator the smoke test (internal/smoketest)
# runs each bootstrap under; installed once per version into RIE_DIR.
RIE_VERSION   := v0.0.0-20261030222936-bef5c4ba774d
RIE_DIR       ?= $(or $(TURNSTREAM_RIE_DIR),$(or $(XDG_CACHE_HOME),$(HOME)/.cache)/turnstream/aws-lambda-rie-$(RIE_VERSION))
DYNALITE      := node_modules/.bin/dynalite
# dynamodb-local's listen address; sam local's containers reach the host
# only on a non-loopback address (DYNAMODB_LOCAL_HOST=0.0.0.0, trusted networks only).
DYNAMODB_LOCAL_HOST ?= 127.0.0.1
# Where dynamodb-local keeps its tables: empty (the default) means in memory
# only; a folder keeps them on disk (dynalite's LevelDB store, --path).
DYNAMODB_DATA ?=
# Extra flags for `sam local invoke` (invoke-local).
SAM_FLAGS ?=

.PHONY: dev
dev: ## Run the three functions and the demo chat page (http://127.0.0.1:8787/) on 127.0.0.1:8787 (in-memory store, echo model; DYNAMODB_ENDPOINT for DynamoDB). Ctrl-C stops it.
	@GO="$(GO)" sh scripts/build-devserver.sh
	@# On a terminal, job control (set -m) gives the server the terminal's
	@# foreground: Ctrl-C reaches it alone, it shuts down gracefully and
	@# make exits 0 instead of dying of the interrupt.
	@if [ -t 0 ]; then set -m; fi; bin/devserver

.PHONY: turnctl
turnctl: ## Build the terminal client into bin/turnctl (chat, attach, history, usage, validate, conform).
	$(GO) build -o bin/turnctl ./cmd/turnctl

.PHONY: build
build: $(FUNCTIONS:%=bin/%/bootstrap) ## Build the three Lambda bootstraps (linux/arm64, lambda.norpc) into bin/<function>/bootstrap.

# FORCE: the Go build cache decides what is stale, not file times.
bin/%/bootstrap: FORCE
	$(LAMBDA_ENV) $(GO) build $(LAMBDA_FLAGS) -o $@ ./functions/$*

.PHONY: FORCE
FORCE:

# `sam build` (Metadata BuildMethod: makefile) calls these with ARTIFACTS_DIR.
.PHONY: build-TurnFunction build-HistoryFunction build-ArtifactsFunction
build-TurnFunction: bin/turn/bootstrap ## sam build hook: the turn bootstrap into ARTIFACTS_DIR.
	cp $< $(ARTIFACTS_DIR)/bootstrap
build-HistoryFunction: bin/history/bootstrap ## sam build hook: the history bootstrap into ARTIFACTS_DIR.
	cp $< $(ARTIFACTS_DIR)/bootstrap
build-ArtifactsFunction: bin/artifacts/bootstrap ## sam build hook: the artifacts bootstrap into ARTIFACTS_DIR.
	cp $< $(ARTIFACTS_DIR)/bootstrap

# `make deploy REGION=eu-west-1 [STACK=turnstream]`: the region is never
# guessed (docs/deploy.md "Deploy").
STACK  ?= turnstream
REGION ?= $(AWS_REGION)

.PHONY: deploy
deploy: ## sam build && sam deploy --region REGION --stack-name STACK (default turnstream) with samconfig.toml's settings.
	@command -v sam >/dev/null || { echo "make: the AWS SAM CLI is required (https://docs.aws.amazon.com/serverless-application-model/latest/developerguide/install-sam-cli.html)" >&2; exit 1; }
	@test -n "$(REGION)" || { echo "make deploy: name the region: make deploy REGION=<aws region> (or set AWS_REGION)" >&2; exit 1; }
	sam build
	sam deploy --region $(REGION) --stack-name $(STACK)

.PHONY: invoke-local
invoke-local: ## sam local invoke FUNCTION (TurnFunction) with EVENT against DynamoDB Local (samconfig env "local"); SAM_FLAGS adds flags (Linux: SAM_FLAGS="--add-host host.docker.internal:host-gateway").
	@command -v sam >/dev/null || { echo "make: the AWS SAM CLI and Docker are required for sam local invoke" >&2; exit 1; }
	sam build --config-env local
	sam local invoke --config-env local $(FUNCTION) --event $(EVENT) $(SAM_FLAGS)

.PHONY: dynamodb-local
dynamodb-local: ## Run the pinned dynalite on 127.0.0.1:8000 in the foreground (DYNAMODB_ENDPOINT=http://127.0.0.1:8000); data in memory unless DYNAMODB_DATA=<folder>.
	@test -x $(DYNALITE) || $(NPM_CI)
	@if [ -n "$(DYNAMODB_DATA)" ]; then \
		echo "make dynamodb-local: dynalite on http://$(DYNAMODB_LOCAL_HOST):8000, tables kept on disk in $(DYNAMODB_DATA) (delete that folder to start empty)"; \
	else \
		echo "make dynamodb-local: dynalite on http://$(DYNAMODB_LOCAL_HOST):8000, tables IN MEMORY ONLY: stopping it loses every table and item."; \
		echo "  Keep them on disk with DYNAMODB_DATA=<folder>. A running dev server recreates its table, empty, when it is gone."; \
	fi
	$(DYNALITE) --host $(DYNAMODB_LOCAL_HOST) --port 8000 --createTableMs 0 --deleteTableMs 0 --updateTableMs 0 $(if $(DYNAMODB_DATA),--path $(DYNAMODB_DATA))

.PHONY: rie
rie: ## Install the pinned Lambda runtime interface emulator into RIE_DIR (the smoke test also does this on demand).
	@test -x $(RIE_DIR)/aws-lambda-rie || GOBIN=$(RIE_DIR) $(GO) install github.com/aws/aws-lambda-runtime-interface-emulator/cmd/aws-lambda-rie@$(RIE_VERSION)
