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
# TEST_GO_TIMEOUT (default 40m) per go test run; TEST_GO_JSON=FILE keeps go
# test's -json output (both passes) in FILE.
set -uo pipefail
cd "$(dirname "$0")/.."
out=
if [[ ${1:-} == --counts ]]; then
  out=$2
  shift 2
fi
(($# > 0)) || set -- ./...
timeout=${TEST_GO_TIMEOUT:-40m}
work=$(mktemp -d "${TMPDIR:-/tmp}/gotest.XXXXXX")
trap 'rm -rf "$work"' EXIT

race=(-race)
[[ ${TEST_GO_RACE:-1} == 0 ]] && race=()
echo "go test ${race[*]} -shuffle=on $*"

# counts FILE RC prints "passed failed skipped" of a testsummary.py counts
# file; go test failing with no failed test counted (a build error
# testsummary could not attribute) is still a failure.
counts() {
  local p=0 f=1 s=0
  [[ -s $1 ]] && read -r p f s <"$1"
  (($2 != 0 && f == 0)) && f=1
  echo "$p $f $s"
}

json=${TEST_GO_JSON:-/dev/null}
go test "${race[@]}" -shuffle=on -count=1 -timeout "$timeout" -json "$@" 2>&1 | tee "$json" |
  python3 scripts/testsummary.py go "$work/race.counts" "$work/deferred"
rc=${PIPESTATUS[0]}
read -r p f s < <(counts "$work/race.counts" "$rc")

if [[ -s $work/deferred ]]; then
  mapfile -t pkgs < <(cut -d' ' -f1 "$work/deferred" | sort -u)
  # A subtest that skipped itself reruns with its top-level test.
  names=$(cut -d' ' -f2 "$work/deferred" | cut -d/ -f1 | sort -u | paste -sd'|')
  echo "go test -shuffle=on -run '^($names)\$' (testsupport.SkipUnderRace, without -race)"
  go test -shuffle=on -count=1 -timeout "$timeout" -json -run "^($names)\$" "${pkgs[@]}" 2>&1 | tee -a "$json" |
    python3 scripts/testsummary.py go "$work/norace.counts"
  rc=${PIPESTATUS[0]}
  read -r p2 f2 s2 < <(counts "$work/norace.counts" "$rc")
  p=$((p + p2)) f=$((f + f2)) s=$((s + s2))
fi
[[ -n $out ]] && echo "$p $f $s" >"$out"
echo "$p passed, $f failed, $s skipped"
((f == 0))
