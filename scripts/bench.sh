#!/usr/bin/env bash
# make bench: Go micro-benchmarks (see bench/RESULTS.md for the recorded runs).
set -euo pipefail
cd "$(dirname "$0")/.."
go test -run '^$' -bench . -benchmem ./sigv4/... "$@"
