#!/usr/bin/env bash
# make test: every test. go vet; the pinned Python venv; builds; starts the
# stack on free ports in a temporary directory (never the dev ports or .dev/):
# the S3 backend (versitygw), a private Postgres with the DuckLake catalog
# (`duckicelake init`), and `duckicelake serve` (gateway + Iceberg REST
# catalog); runs `go test ./...` and pytest over test/ (test/e2e goes through
# that running stack) against them; stops everything; prints one summary line
# "N passed, N failed" across all suites and exits non-zero on any failure.
#
# Tests find the stack through these variables (unset when that part is not up):
#   DUCKICELAKE_TEST_GATEWAY        http://127.0.0.1:PORT, the gateway
#   DUCKICELAKE_TEST_ADMIN          http://127.0.0.1:PORT, admin/catalog (/readyz, /metrics)
#   DUCKICELAKE_TEST_CONFIG         the duckicelake.toml the gateway runs with
#                                   (`duckicelake creds mint --config` takes it)
#   DUCKICELAKE_TEST_MINT_KEYS      the minting key file ("id:hex secret", also in that config)
#   DUCKICELAKE_TEST_ROOT_ACCESS_KEY, DUCKICELAKE_TEST_ROOT_SECRET_KEY   the gateway's
#                                   operator root credential (config [root])
#   DUCKICELAKE_TEST_S3_ENDPOINT    http://127.0.0.1:PORT, the backend, direct
#   DUCKICELAKE_TEST_S3_ACCESS_KEY, DUCKICELAKE_TEST_S3_SECRET_KEY   its root keys
#   DUCKICELAKE_TEST_S3_REGION      us-east-1
#   DUCKICELAKE_TEST_S3_ROOT        the backend's posix directory (bucket = top dir)
#   DUCKICELAKE_TEST_BUCKET         lake
#   DUCKICELAKE_TEST_PG_DSN         postgres://… of the stack's private cluster; tests create
#                                   their own databases in it (internal/testsupport/pgtest)
#   DUCKICELAKE_TEST_CATALOG_URL    http://127.0.0.1:PORT, the running Iceberg REST catalog
#                                   (base URL, without /v1; warehouse "lake")
#   DUCKICELAKE_TEST_CATALOG_CREDENTIAL   its OAuth2 client "dev:<secret>" (every scope)
#   DUCKICELAKE_TEST_CATALOG_DSN    the stack's DuckLake catalog database, libpq key=value
#                                   form (DuckDB: ATTACH 'ducklake:postgres:<dsn>')
#   DUCKICELAKE_TEST_DATA_PATH      the catalog's data path, s3://lake/data/
#   DUCKICELAKE_TEST_DIR            scratch directory, removed afterwards
#   DUCKICELAKE_BIN                 bin/duckicelake
#   DUCKICELAKE_PYTHON              .venv/bin/python
#   VERSITYGW_BIN                   bin/versitygw
# With CI=true, a test that needs a part of the stack that is missing fails
# instead of skipping.
#
# Go tests (internal/testsupport reads these variables for them: a typed view
# and "require this part" helpers) run with -race and -shuffle=on through
# scripts/gotest.sh; a failing package's line names its shuffle seed, and
# go test's -json output stays in the scratch directory (go-test.json) when
# it is kept.
#
# Options (env): TEST_GO_PKGS (default ./...), TEST_GO_RACE=0 (no race
# detector), TEST_GO_TIMEOUT (default 40m), TEST_PYTEST_ARGS (extra pytest
# args), TEST_SKIP_PYTHON=1, TEST_KEEP=1 (keep the scratch directory).
set -uo pipefail
cd "$(dirname "$0")/.."
repo=$(pwd)
# shellcheck source=scripts/stack.sh
source scripts/stack.sh

passed=0 failed=0 skipped=0
summary=()
t0=$SECONDS

# count SUITE PASSED FAILED SKIPPED adds a suite's results to the totals.
count() {
  passed=$((passed + $2))
  failed=$((failed + $3))
  skipped=$((skipped + $4))
  summary+=("$(printf '%-8s %d passed, %d failed, %d skipped' "$1" "$2" "$3" "$4")")
}
# broken STEP records a failed step that is not a test suite (vet, build…).
broken() {
  failed=$((failed + 1))
  summary+=("$(printf '%-8s FAILED' "$1")")
}
step() { echo; echo "== $* ($((SECONDS - t0))s)"; }

finish() {
  local rc=$?
  step "stop"
  # Stops Postgres too (stack_start_pg started it).
  stack_stop
  if [[ -n ${scratch:-} && -d $scratch ]]; then
    if [[ ${TEST_KEEP:-0} == 1 || $failed -gt 0 ]]; then
      echo "logs and data kept in $scratch"
    else
      rm -rf "$scratch"
    fi
  fi
  echo
  echo "== summary ($((SECONDS - t0))s)"
  local line
  for line in "${summary[@]}"; do echo "  $line"; done
  if ((failed == 0 && rc != 0)); then
    # Something outside the suites broke (the trap fired on an error).
    failed=1
  fi
  echo "$passed passed, $failed failed, $skipped skipped"
  if ((failed > 0)); then exit 1; fi
  exit 0
}
stack_traps finish

step "go vet"
go vet ./... || broken vet

step "python venv"
python=
if [[ ${TEST_SKIP_PYTHON:-0} == 1 ]]; then
  echo "skipped (TEST_SKIP_PYTHON=1)"
elif [[ -x scripts/venv.sh ]]; then
  if scripts/venv.sh; then
    python=$repo/.venv/bin/python
  else
    echo "scripts/venv.sh failed"
    broken venv
  fi
else
  echo "scripts/venv.sh does not exist yet; the Python suites do not run"
  [[ ${CI:-} == true ]] && broken venv
fi

step "build"
mkdir -p bin
if ! go build -o bin/duckicelake ./cmd/duckicelake; then
  broken build
  exit 1
fi
echo "bin/duckicelake built"
if ! scripts/versitygw.sh; then
  broken build
  exit 1
fi

step "start the stack on free ports"
scratch=$(mktemp -d "${TMPDIR:-/tmp}/duckicelake-test.XXXXXX")
# Traversable by the postgres user that owns the private cluster when we are root.
chmod 755 "$scratch"
# Never inherit a dev, real-backend or configuration setting into the tests.
stack_isolated_init "$scratch" DUCKICELAKE_DUCKDB_EXTENSIONS
# A part that does not come up is a failure, but the suites still run: unit
# tests need no stack, and the others then say what they missed.
if ! stack_start_versitygw; then
  broken versitygw
else
  # Without Postgres the gateway still starts, alone; the suites that need
  # the catalog then say so.
  stack_start_catalog || broken postgres
  stack_start_gateway || broken gateway
fi
stack_write_env
export DUCKICELAKE_TEST_DIR=$scratch
export DUCKICELAKE_TEST_S3_ENDPOINT=$STACK_S3_ENDPOINT
export DUCKICELAKE_TEST_S3_ACCESS_KEY=$STACK_S3_ACCESS_KEY
export DUCKICELAKE_TEST_S3_SECRET_KEY=$STACK_S3_SECRET_KEY
export DUCKICELAKE_TEST_S3_REGION=$STACK_REGION
export DUCKICELAKE_TEST_S3_ROOT=$STACK_S3_ROOT
export DUCKICELAKE_TEST_BUCKET=$STACK_BUCKET
export DUCKICELAKE_BIN=$STACK_BIN
export VERSITYGW_BIN=$STACK_VGW_BIN
if [[ ${STACK_GATEWAY_UP:-0} == 1 ]]; then
  export DUCKICELAKE_TEST_GATEWAY=http://$STACK_GATEWAY_ADDR
  export DUCKICELAKE_TEST_ADMIN=http://$STACK_ADMIN_ADDR
  export DUCKICELAKE_TEST_CONFIG=$STACK_CONFIG
  export DUCKICELAKE_TEST_MINT_KEYS=$STACK_MINT_KEY_FILE
  export DUCKICELAKE_TEST_ROOT_ACCESS_KEY=$STACK_ROOT_ACCESS_KEY
  export DUCKICELAKE_TEST_ROOT_SECRET_KEY=$STACK_ROOT_SECRET_KEY
else
  unset DUCKICELAKE_TEST_GATEWAY DUCKICELAKE_TEST_ADMIN DUCKICELAKE_TEST_CONFIG DUCKICELAKE_TEST_MINT_KEYS \
    DUCKICELAKE_TEST_ROOT_ACCESS_KEY DUCKICELAKE_TEST_ROOT_SECRET_KEY
fi
unset DUCKICELAKE_TEST_CATALOG_URL DUCKICELAKE_TEST_CATALOG_CREDENTIAL DUCKICELAKE_TEST_CATALOG_DSN DUCKICELAKE_TEST_DATA_PATH
if [[ ${STACK_GATEWAY_UP:-0} == 1 && $STACK_CATALOG == 1 ]]; then
  export DUCKICELAKE_TEST_CATALOG_URL=$STACK_CATALOG_URL
  export DUCKICELAKE_TEST_CATALOG_CREDENTIAL=$STACK_CATALOG_CREDENTIAL
  export DUCKICELAKE_TEST_CATALOG_DSN=$STACK_PG_DSN_KV
  export DUCKICELAKE_TEST_DATA_PATH=$STACK_DATA_PATH
fi
[[ -n $python ]] && export DUCKICELAKE_PYTHON=$python

# The Go suites create their own databases in the stack's cluster.
unset DUCKICELAKE_TEST_PG_DSN
if [[ ${STACK_PG_STARTED:-0} == 1 ]]; then
  export DUCKICELAKE_TEST_PG_DSN=$STACK_PG_DSN
  echo "postgres: $(stack_redact_dsn "$STACK_PG_DSN")"
else
  echo "postgres: not running; tests that need Postgres skip (or fail under CI=true)"
fi
env | grep -E '^(DUCKICELAKE_|VERSITYGW_BIN)' | grep -vE '_(SECRET_KEY|PG_DSN|CREDENTIAL)=' | sort |
  sed -E 's/^/  /; s/(password=)[^ ]*/\1xxxxx/'

step "go test"
counts=$scratch/go.counts
# shellcheck disable=SC2086 # TEST_GO_PKGS is a list
TEST_GO_JSON=$scratch/go-test.json scripts/gotest.sh --counts "$counts" ${TEST_GO_PKGS:-./...}
if [[ -s $counts ]]; then
  read -r p f s <"$counts"
  count go "$p" "$f" "$s"
else
  count go 0 1 0
fi

step "pytest"
if [[ -z $python ]]; then
  echo "no venv; pytest not run"
elif ! find test -name 'test_*.py' -o -name '*_test.py' | grep -q .; then
  echo "no Python tests under test/ yet"
else
  "$python" -m pytest test -p no:cacheprovider -q -rfEs --junitxml="$scratch/pytest.xml" ${TEST_PYTEST_ARGS:-}
  prc=$?
  if ((prc == 5)); then
    echo "pytest collected no tests"
    count pytest 0 0 0
  elif [[ -s $scratch/pytest.xml ]] && python3 scripts/testsummary.py junit "$scratch/pytest.xml" "$scratch/py.counts"; then
    read -r p f s <"$scratch/py.counts"
    ((prc != 0 && f == 0)) && f=1
    count pytest "$p" "$f" "$s"
  else
    count pytest 0 1 0
  fi
fi
