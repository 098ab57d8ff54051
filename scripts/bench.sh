#!/usr/bin/env bash
# make bench: benchmarks (see bench/RESULTS.md for the recorded runs).
#
#   scripts/bench.sh                Go micro-benchmarks (sigv4, gateway).
#   scripts/bench.sh s3 [FLAGS…]    S3 load side by side: starts versitygw (posix, over a
#                                   temporary directory), the gateway and versitygw's own s3
#                                   proxy mode in front of the same backend, on free ports,
#                                   and runs bench/cmd/s3bench against the three, interleaved;
#                                   FLAGS go to s3bench (e.g. -ops get1k,put1k -duration 5s).
#                                   Stops everything afterwards.
#   scripts/bench.sh raw [FLAGS…]   read-after-write (DESIGN §10): starts the whole stack
#                                   (with Postgres and the catalog) on free ports; DuckDB
#                                   commits N INSERTs into a DuckLake table, and after each
#                                   the catalog is polled with LoadTable until it shows the
#                                   new snapshot — on the stack's serve (eager path on) and
#                                   on a second serve with catalog.eager=false (lazy), from
#                                   the same instant. Prints p50/p90/p99 and writes JSON to
#                                   $BENCH_OUT (default .dev/bench/raw-<UTC time>.json).
#                                   FLAGS go to test/e2e/lakestack.py raw (--inserts 50,
#                                   --rows 1). Needs the venv (scripts/venv.sh).
#
# Env: BENCH_KEEP=1 keeps the temporary directory (logs); BENCH_PKGS for the Go benchmarks.
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$(pwd)

mode=${1:-}
if [[ $mode != s3 && $mode != raw ]]; then
  # shellcheck disable=SC2086
  exec go test -run '^$' -bench . -benchmem ${BENCH_PKGS:-./sigv4/... ./gateway/...} "$@"
fi
shift

# shellcheck source=scripts/stack.sh
source scripts/stack.sh

mkdir -p bin
go build -o bin/duckicelake ./cmd/duckicelake
[[ $mode == s3 ]] && go build -o bin/s3bench ./bench/cmd/s3bench
scripts/versitygw.sh
[[ $mode == raw ]] && scripts/venv.sh

scratch=$(mktemp -d "${TMPDIR:-/tmp}/duckicelake-bench.XXXXXX")
# Traversable by the postgres user that owns the private cluster when we are root.
chmod 755 "$scratch"
for v in $(compgen -e | grep '^DUCKICELAKE_'); do
  case $v in DUCKICELAKE_STACK_LOG_LEVEL) ;; *) unset "$v" ;; esac
done
export DUCKICELAKE_DEV_DIR=$scratch DUCKICELAKE_PORTS=free
# Access logs cost the gateway time per request; benchmarks keep warnings only.
export DUCKICELAKE_STACK_LOG_LEVEL=${DUCKICELAKE_STACK_LOG_LEVEL:-warn}
# The S3 benchmark measures the gateway alone: no Postgres, no catalog.
[[ $mode == s3 ]] && export DUCKICELAKE_STACK_CATALOG=0
stack_init
cleanup() {
  stack_stop
  if [[ ${BENCH_KEEP:-0} == 1 ]]; then echo "kept $scratch"; else rm -rf "$scratch"; fi
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

stack_up

if [[ $mode == raw ]]; then
  [[ ${STACK_GATEWAY_UP:-0} == 1 && $STACK_CATALOG == 1 ]] || stack_die "the stack has no catalog"
  out=${BENCH_OUT:-$repo/.dev/bench/raw-$(date -u +%Y%m%dT%H%M%SZ).json}
  mkdir -p "$(dirname "$out")"
  echo "== read-after-write (stack: $STACK_CATALOG_URL, eager; a second serve with catalog.eager=false, lazy)"
  DUCKICELAKE_TEST_CATALOG_URL=$STACK_CATALOG_URL DUCKICELAKE_TEST_CATALOG_CREDENTIAL=$STACK_CATALOG_CREDENTIAL \
    DUCKICELAKE_TEST_CATALOG_DSN=$STACK_PG_DSN_KV DUCKICELAKE_TEST_DATA_PATH=$STACK_DATA_PATH \
    DUCKICELAKE_TEST_GATEWAY=http://$STACK_GATEWAY_ADDR DUCKICELAKE_TEST_CONFIG=$STACK_CONFIG \
    DUCKICELAKE_TEST_S3_REGION=$STACK_REGION DUCKICELAKE_BIN=$STACK_BIN \
    .venv/bin/python test/e2e/lakestack.py raw --out "$out" "$@"
  exit
fi

read -r proxyport < <(stack_free_ports 1)
stack_start_vgw_proxy "127.0.0.1:$proxyport"

# The last field names the process whose resident memory s3bench samples.
targets=(-target "direct|$STACK_S3_ENDPOINT|$STACK_S3_ACCESS_KEY|$STACK_S3_SECRET_KEY||$STACK_S3_PID")
if [[ ${STACK_GATEWAY_UP:-0} == 1 ]]; then
  creds=$("$STACK_BIN" creds mint --config "$STACK_CONFIG" --principal bench \
    --grant "$STACK_BUCKET:bench/:rw" --ttl 12h --format env)
  key=$(sed -n 's/^AWS_ACCESS_KEY_ID=//p' <<<"$creds")
  secret=$(sed -n 's/^AWS_SECRET_ACCESS_KEY=//p' <<<"$creds")
  token=$(sed -n 's/^AWS_SESSION_TOKEN=//p' <<<"$creds")
  targets+=(-target "gateway|http://$STACK_GATEWAY_ADDR|$key|$secret|$token|$STACK_GATEWAY_PID")
else
  echo "bench: no gateway in this build; measuring the backend and versitygw's proxy only" >&2
fi
targets+=(-target "vgw-proxy|$STACK_PROXY_ENDPOINT|$STACK_S3_ACCESS_KEY|$STACK_S3_SECRET_KEY||$STACK_PROXY_PID")

echo "== s3bench: $(printf "%s\n" "${targets[@]}" | grep "|" | cut -d"|" -f1 | paste -sd, -)"
bin/s3bench "${targets[@]}" -bucket "$STACK_BUCKET" -prefix bench/ "$@"
