# duckicelake — see README.md. Every target is safe to run on a fresh clone.
SHELL := /bin/bash
GO ?= go
BIN := bin
VERSION ?= $(shell git describe --always --dirty 2>/dev/null || echo dev)
FUZZTIME ?= 20s
CONFORMANCE_ARGS ?=

.PHONY: all build versitygw venv test unit vet bench fuzz run up down clean conformance interop-trino

all: build

build:
	@mkdir -p $(BIN)
	$(GO) build -ldflags "-X main.version=$(VERSION)" -o $(BIN)/duckicelake ./cmd/duckicelake

# versitygw: the S3 backend of the dev stack and the tests, built into bin/.
versitygw:
	./scripts/versitygw.sh

# venv: the pinned Python test environment in .venv (DuckDB + extensions, boto3, pytest…).
venv:
	./scripts/venv.sh

vet:
	$(GO) vet ./...

# unit: Go tests only, without the stack (tests that need it skip unless
# CI=true), with -race and -shuffle=on like make test (scripts/gotest.sh;
# TEST_GO_RACE=0 for a quicker run without the race detector).
unit:
	./scripts/gotest.sh ./...

# test: every test — go vet, the venv, builds, then versitygw + the gateway +
# Postgres on free ports in a temporary directory, go test and pytest against
# them, one summary line. scripts/test.sh lists the env vars tests read.
test:
	./scripts/test.sh

# conformance: the Iceberg REST Compatibility Kit (Maven Central, Java 17+)
# against the catalog of a fresh stack; prints "conformance: N passed, N
# failed, N skipped". Fails only when the kit cannot run (CONFORMANCE_ARGS=
# --strict: on any failing test). test/conformance/README.md.
conformance:
	./scripts/conformance.sh $(CONFORMANCE_ARGS)

# interop-trino: Trino 476 (tar.gz and CLI from Maven Central, Java 24+) as
# a real Iceberg client of a fresh stack, with DuckDB on the same tables
# (test/engines/interop_trino.py); prints "trino: N passed, N failed". Spark
# runs in make test (test/engines/test_spark.py).
interop-trino:
	./scripts/trino.sh

bench:
	./scripts/bench.sh

# fuzz: a short run of every fuzz target (FUZZTIME each).
fuzz:
	./scripts/fuzz.sh $(FUZZTIME)

# run: the dev stack on its fixed ports (versitygw :7070, gateway :9000,
# admin :8181, state in .dev/) in the foreground until Ctrl-C.
run:
	./scripts/run.sh

# up/down: the same stack in the background (scripts/stack.sh).
up: build versitygw
	./scripts/stack.sh up

down:
	./scripts/stack.sh down

clean:
	rm -rf $(BIN) .dev
