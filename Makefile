# Developer and CI entry points. The logic lives in scripts/; `make help` lists
# the targets.
#
#   make test                 Redis up (standalone + 3-node cluster), go test -race, short fuzz pass
#   make test PKG=./tasks     the same for some packages only (the fuzz pass still covers all)
#   make sdk-deps             the MCP and A2A SDK clients the tests run (npm ci; make test does it)
#   make bench BENCH=Apply    benchmarks against the test Redis, also saved to .tmp/bench.txt
#   make run ARGS='-h'        the server, with the embedded store unless TASKHOOK_REDIS_URL is set;
#                             its development secret is kept in .tmp/dev-secret

SHELL := bash
.SHELLFLAGS := -euo pipefail -c
.DEFAULT_GOAL := help
# test runs its steps in order (tests, then fuzzing) even under -j.
.NOTPARALLEL:

GO           ?= go
PKG          ?= ./...
BENCH        ?= .
BENCHTIME    ?= 1s
FUZZTIME     ?= 1000x
TEST_TIMEOUT ?= 12m
ARGS         ?=
BIN          ?= bin/taskhook
# What taskhook --version and /v1/info report (make build).
VERSION      ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)

TEST_ENV := scripts/test-env.sh
# The official MCP TypeScript SDK's client that package mcp's tests run, with
# the SDK pinned in its package.json and package-lock.json.
SDK_CLIENTS := mcp/testdata/sdkclient a2a/testdata/jsclient

export GO FUZZTIME

.PHONY: help build run test test-go sdk-deps fuzz bench screenshots fmt fmt-check vet services-up services-down clean

help: ## list the targets
	@awk 'BEGIN {FS = ":.*## "} /^[a-z-]+:.*## / {printf "  %-14s %s\n", $$1, $$2}' $(MAKEFILE_LIST)

build: ## static binary in bin/taskhook
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags='-s -w -X github.com/taskhook/taskhook/app.Version=$(VERSION)' -o $(BIN) ./cmd/server

run: ## build and start the server (flags in ARGS=...); Ctrl-C stops it
	scripts/run.sh $(ARGS)

test: sdk-deps ## start Redis, run every test with -race, then fuzz each target for FUZZTIME
	$(TEST_ENV) exec -- $(MAKE) --no-print-directory test-go fuzz

test-go: ## go test -race on PKG (needs the environment of scripts/test-env.sh)
	$(GO) test -race -count=1 -timeout $(TEST_TIMEOUT) $(PKG)

# Installs each client whose node_modules is missing or older than its lock file.
# Without npm it only says so: the tests that need an SDK then skip (and fail under CI=true).
sdk-deps: ## install the SDK clients the tests run (npm ci in mcp/testdata/sdkclient and a2a/testdata/jsclient)
	@for dir in $(SDK_CLIENTS); do \
		stamp=$$dir/node_modules/.package-lock.json; \
		if [ -f "$$stamp" ] && [ ! $$dir/package-lock.json -nt "$$stamp" ]; then continue; fi; \
		if ! command -v npm >/dev/null 2>&1; then \
			echo "sdk-deps: npm not found: the SDK client tests will skip (and fail under CI=true)"; exit 0; \
		fi; \
		npm ci --prefix $$dir --no-audit --no-fund; \
	done

fuzz: ## run each fuzz target for FUZZTIME (needs the environment of scripts/test-env.sh)
	scripts/fuzz.sh

bench: ## benchmarks (BENCH=regex, PKG=./...) against the test Redis; output also in .tmp/bench.txt
	@mkdir -p .tmp
	$(TEST_ENV) exec -- $(GO) test -run='^$$' -bench='$(BENCH)' -benchtime=$(BENCHTIME) -benchmem -count=1 $(PKG) | tee .tmp/bench.txt

screenshots: ## the browser tests of channels/web (Redis up as for test), saving their screenshots into docs/screenshots
	$(TEST_ENV) exec -- env TASKHOOK_TEST_SCREENSHOTS=$(CURDIR)/docs/screenshots $(GO) test -count=1 \
		-run 'TestConsoleAnswersLive|TestAnswerPageInBrowser|TestConsoleShowsWhoAnswered|TestConsoleOpensTaskInView|TestConsoleSignInRequest|TestConsoleShowsFailures|TestConsoleEndedTasks|TestSigninPageInBrowser' \
		./channels/web

fmt: ## gofmt the module
	$(GO) fmt ./...

fmt-check: ## fail when a file is not gofmt-ed
	@out=$$(gofmt -l $$($(GO) list -f '{{.Dir}}' ./...)); \
	if [ -n "$$out" ]; then echo "not gofmt-ed:"; echo "$$out"; exit 1; fi

vet: ## go vet
	$(GO) vet ./...

services-up: ## start the test Redis for interactive work (export what scripts/test-env.sh env prints)
	$(TEST_ENV) up >/dev/null

services-down: ## stop what services-up started (and leftovers of killed runs)
	$(TEST_ENV) down

clean: services-down ## stop the test Redis, remove bin/ and .tmp/
	rm -rf bin .tmp
