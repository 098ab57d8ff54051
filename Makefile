# duckicelake — see README.md. Every target is safe to run on a fresh clone.
SHELL := /bin/bash
GO ?= go
BIN := bin
VERSION ?= $(shell git describe --always --dirty 2>/dev/null || echo dev)
FUZZTIME ?= 20s

.PHONY: all build test unit vet bench fuzz run clean

all: build

build:
	@mkdir -p $(BIN)
	$(GO) build -ldflags "-X main.version=$(VERSION)" -o $(BIN)/duckicelake ./cmd/duckicelake

vet:
	$(GO) vet ./...

# unit: Go tests that need nothing but Go.
unit:
	$(GO) test ./...

# test: every test — Go unit tests, then the end-to-end and interop suites
# against a real backend and real clients (scripts/test.sh starts them).
test: build vet
	./scripts/test.sh

bench:
	./scripts/bench.sh

# fuzz: a short run of every fuzz target (FUZZTIME each).
fuzz:
	./scripts/fuzz.sh $(FUZZTIME)

run: build
	./scripts/run.sh

clean:
	rm -rf $(BIN) .dev
