#!/usr/bin/env bash
# Runs every Go fuzz target in the module for the given time each (default 20s).
# Usage: scripts/fuzz.sh [duration]
set -euo pipefail
cd "$(dirname "$0")/.."
fuzztime=${1:-20s}
found=0
for pkg in $(go list ./...); do
  dir=$(go list -f '{{.Dir}}' "$pkg")
  for target in $(grep -ho '^func Fuzz[A-Za-z0-9_]*' "$dir"/*_test.go 2>/dev/null | sed 's/^func //' | sort -u); do
    found=$((found + 1))
    echo "== fuzz $pkg $target for $fuzztime"
    go test "$pkg" -run '^$' -fuzz "^${target}\$" -fuzztime "$fuzztime"
  done
done
echo "ran $found fuzz targets"
