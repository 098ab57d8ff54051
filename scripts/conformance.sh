#!/usr/bin/env bash
# make conformance: the Apache Iceberg REST Compatibility Kit against
# duckicelake's catalog (test/conformance/, README.md there).
#
#   scripts/conformance.sh [--strict] [--keep]
#   scripts/conformance.sh --reference [--strict]
#
# Without DUCKICELAKE_CATALOG_URL it builds bin/duckicelake (and versitygw),
# starts the stack (scripts/stack.sh: versitygw, a private Postgres with the
# DuckLake catalog that `duckicelake init` creates, and `duckicelake serve`,
# whose admin listener serves the catalog under /v1/) on free ports in a
# scratch directory, runs the kit with the stack's OAuth2 client (every
# scope), prints the result and stops everything. The last line is
#
#   conformance: N passed, N failed, N skipped
#
# Env:
#   DUCKICELAKE_CATALOG_URL          run against this catalog instead (base URL
#                                    without /v1); nothing is started then
#   DUCKICELAKE_CATALOG_CREDENTIAL   its OAuth2 client "id:secret" (none: no auth)
#   DUCKICELAKE_CATALOG_WAREHOUSE    the warehouse to ask it for (default lake)
#   RCK_PROPERTIES, RCK_TIMEOUT, RCK_VENDED   passed on (test/conformance/run.sh)
#
# Options: --strict exits 1 when a kit test failed; --keep keeps the scratch
# directory (logs, Postgres, S3 files); --reference runs the kit against
# Iceberg's own reference server instead (a check of the harness).
#
# Exit status: 0 when the kit ran, whatever it found (unless --strict); 3
# when it could not run (the stack did not start, Maven or Java missing, the
# kit's artifacts not resolvable, no test executed).
set -uo pipefail
cd "$(dirname "$0")/.."
repo=$(pwd)

strict=() keep=0 reference=0
for a in "$@"; do
  case $a in
    --strict) strict=(--strict) ;;
    --keep) keep=1 ;;
    --reference) reference=1 ;;
    -h | --help)
      sed -n '2,/^set -uo/p' "$0" | sed '$d; s/^# \{0,1\}//'
      exit 0
      ;;
    *)
      echo "conformance.sh: unknown argument $a" >&2
      exit 64
      ;;
  esac
done

if ((reference)); then
  exec test/conformance/run.sh --reference "${strict[@]}"
fi

if [[ -n ${DUCKICELAKE_CATALOG_URL:-} ]]; then
  RCK_URI=$DUCKICELAKE_CATALOG_URL RCK_CREDENTIAL=${DUCKICELAKE_CATALOG_CREDENTIAL:-} \
    RCK_WAREHOUSE=${DUCKICELAKE_CATALOG_WAREHOUSE:-lake} \
    exec test/conformance/run.sh "${strict[@]}"
fi

# shellcheck source=scripts/stack.sh
source scripts/stack.sh

cannot() {
  echo "conformance: the kit could not run: $*" >&2
  exit 3
}

step() { echo "== conformance: $*"; }

step "build"
mkdir -p bin
go build -o bin/duckicelake ./cmd/duckicelake || cannot "go build ./cmd/duckicelake failed"
scripts/versitygw.sh >/dev/null || cannot "scripts/versitygw.sh failed"

scratch=$(mktemp -d "${TMPDIR:-/tmp}/duckicelake-conformance.XXXXXX")
# Traversable by the postgres user that owns the private cluster when we are root.
chmod 755 "$scratch"
finish() {
  local rc=$?
  stack_stop
  # serve's log beside the kit's, for whoever reads the failures.
  [[ -f ${STACK_DIR:-}/duckicelake.log ]] && cp "$STACK_DIR/duckicelake.log" test/conformance/target/ 2>/dev/null
  if ((keep || rc != 0)); then
    echo "conformance: logs and data kept in $scratch"
  else
    rm -rf "$scratch"
  fi
  exit "$rc"
}
stack_traps finish

step "stack"
stack_isolated_init "$scratch"
bucket=$STACK_BUCKET
stack_start_versitygw || cannot "versitygw did not start"
stack_start_catalog || cannot "Postgres or duckicelake init failed (log: $STACK_PG_DIR/postgres.log)"
stack_start_gateway || cannot "duckicelake serve did not start (log: $STACK_DIR/duckicelake.log)"
[[ ${STACK_GATEWAY_UP:-0} == 1 ]] || cannot "bin/duckicelake has no serve command"
[[ $STACK_CATALOG == 1 ]] || cannot "the stack has no catalog"
url=$STACK_CATALOG_URL

# The kit reports every test as failed when the catalog is not there at all;
# say so plainly first.
code=$(curl -s -o "$scratch/config.json" -w '%{http_code}' -m 5 "$url/v1/config?warehouse=$bucket") || code=000
case $code in
  200) echo "catalog: $url/v1/config answers 200" ;;
  *) echo "catalog: $url/v1/config answers $code ($(head -c 200 "$scratch/config.json" 2>/dev/null)); is the catalog mounted by serve?" ;;
esac

step "kit"
RCK_URI=$url RCK_CREDENTIAL=$STACK_CATALOG_CREDENTIAL RCK_WAREHOUSE=$bucket \
  test/conformance/run.sh "${strict[@]}"
rc=$?
if ((rc != 0 && rc != 1)); then
  echo "conformance: serve's log: $STACK_DIR/duckicelake.log" >&2
fi
exit "$rc"
