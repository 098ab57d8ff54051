#!/usr/bin/env bash
# The Go tests of make test and make unit: go test -race -shuffle=on over
# PKGS, then, without -race, the tests that skipped themselves under the race
# detector (testsupport.SkipUnderRace: they count allocations, which the
# detector changes), so every test runs once and is counted once. Prints a
# line per package (a failing package's names its -shuffle seed: rerun with
# go test -race -shuffle=SEED -run TEST ./PKG) and the full output of every
# failed test.
#
# usage: scripts/gotest.sh [--counts FILE] [PKGS...]   (PKGS default ./...)
# Ends with "N passed, N failed, N skipped" (and writes "passed failed
# skipped" to FILE); exits non-zero on a failure.
# Env: TEST_GO_RACE=0 runs without the race detector (and so nothing twice);
# TEST_GO_TIMEOUT (default 40m) per go test run.
set -uo pipefail
cd "$(dirname "$0")/.."
counts=
if [[ ${1:-} == --counts ]]; then
  counts=$2
  shift 2
fi
(($# > 0)) || set -- ./...
timeout=${TEST_GO_TIMEOUT:-40m}
work=$(mktemp -d "${TMPDIR:-/tmp}/gotest.XXXXXX")
trap 'rm -rf "$work"' EXIT

race=(-race)
[[ ${TEST_GO_RACE:-1} == 0 ]] && race=()
echo "go test ${race[*]} -shuffle=on $*"

go test "${race[@]}" -shuffle=on -count=1 -timeout "$timeout" -json "$@" 2>&1 |
  python3 scripts/testsummary.py go "$work/race.counts" "$work/deferred"
rc=${PIPESTATUS[0]}
if [[ -s $work/race.counts ]]; then
  read -r p f s <"$work/race.counts"
else
  p=0 f=1 s=0
fi
# go test failing with no failed test counted (e.g. a vet error in a test
# build that testsummary could not attribute) is still a failure.
((rc != 0 && f == 0)) && f=1

if [[ -s $work/deferred ]]; then
  mapfile -t pkgs < <(cut -d' ' -f1 "$work/deferred" | sort -u)
  # A subtest that skipped itself reruns with its top-level test.
  names=$(cut -d' ' -f2 "$work/deferred" | cut -d/ -f1 | sort -u | paste -sd'|')
  echo "without -race (testsupport.SkipUnderRace): $names"
  go test -shuffle=on -count=1 -timeout "$timeout" -json -run "^($names)\$" "${pkgs[@]}" 2>&1 |
    python3 scripts/testsummary.py go "$work/norace.counts"
  rc2=${PIPESTATUS[0]}
  if [[ -s $work/norace.counts ]]; then
    read -r p2 f2 s2 <"$work/norace.counts"
  else
    p2=0 f2=1 s2=0
  fi
  ((rc2 != 0 && f2 == 0)) && f2=1
  p=$((p + p2)) f=$((f + f2)) s=$((s + s2))
fi
[[ -n $counts ]] && echo "$p $f $s" >"$counts"
echo "$p passed, $f failed, $s skipped"
((f == 0))
