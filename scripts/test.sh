#!/usr/bin/env bash
# make test: Go unit tests, then (as they arrive) the suites that need the
# real stack. Prints a summary line per suite and fails if any fails.
set -euo pipefail
cd "$(dirname "$0")/.."
go test -count=1 ./...
