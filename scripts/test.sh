#!/usr/bin/env bash
# make test: every test. go vet; the pinned Python venv; builds; starts the
# S3 backend (versitygw), the gateway and a private Postgres on free ports in a
# temporary directory (never the dev ports or .dev/); runs `go test ./...` and
# pytest over test/ against them; stops everything; prints one summary line
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
#   DUCKICELAKE_TEST_PG_DSN         postgres://… of a private, empty cluster
#   DUCKICELAKE_TEST_DIR            scratch directory, removed afterwards
#   DUCKICELAKE_BIN                 bin/duckicelake
#   DUCKICELAKE_PYTHON              .venv/bin/python
#   VERSITYGW_BIN                   bin/versitygw
# With CI=true, a test that needs a part of the stack that is missing fails
# instead of skipping.
#
# Options (env): TEST_GO_PKGS (default ./...), TEST_PYTEST_ARGS (extra pytest
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
  stack_stop
  if [[ -n ${pg_started:-} ]]; then
    DUCKICELAKE_PG_DIR=$scratch/pg scripts/pg.sh stop || true
  fi
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
trap finish EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

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
# Never inherit a dev, real-backend or configuration setting into the tests
# (DUCKICELAKE_<TABLE>_<KEY> would override the test stack's config file).
for v in $(compgen -e | grep '^DUCKICELAKE_'); do
  case $v in
    DUCKICELAKE_PG_BIN | DUCKICELAKE_DUCKDB_EXTENSIONS | DUCKICELAKE_STACK_LOG_LEVEL) ;;
    *) unset "$v" ;;
  esac
done
export DUCKICELAKE_DEV_DIR=$scratch/stack DUCKICELAKE_PORTS=free
stack_init
# A part that does not come up is a failure, but the suites still run: unit
# tests need no stack, and the others then say what they missed.
if ! stack_start_versitygw; then
  broken versitygw
elif ! stack_start_gateway; then
  broken gateway
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
[[ -n $python ]] && export DUCKICELAKE_PYTHON=$python

unset DUCKICELAKE_TEST_PG_DSN
if [[ -x scripts/pg.sh ]]; then
  read -r pgport < <(stack_free_ports 1)
  if dsn=$(DUCKICELAKE_PG_DSN= DUCKICELAKE_PG_DIR=$scratch/pg DUCKICELAKE_PG_PORT=$pgport scripts/pg.sh start); then
    pg_started=1
    export DUCKICELAKE_TEST_PG_DSN=$dsn
    echo "postgres: $dsn"
  else
    echo "postgres: scripts/pg.sh start failed; tests that need Postgres skip (or fail under CI=true)"
    [[ ${CI:-} == true ]] && broken postgres
  fi
fi
env | grep -E '^(DUCKICELAKE_|VERSITYGW_BIN)' | grep -vE '_(SECRET_KEY|PG_DSN)=' | sort | sed 's/^/  /'

step "go test"
counts=$scratch/go.counts
go test -count=1 -json ${TEST_GO_PKGS:-./...} 2>&1 | python3 scripts/testsummary.py go "$counts"
gorc=${PIPESTATUS[0]}
if [[ -s $counts ]]; then
  read -r p f s <"$counts"
  # go test failing with no failed test counted (e.g. a vet error in a test
  # build that testsummary could not attribute) is still a failure.
  ((gorc != 0 && f == 0)) && f=1
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
