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
#
# Env: BENCH_KEEP=1 keeps the temporary directory (logs); BENCH_PKGS for the Go benchmarks.
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$(pwd)

if [[ ${1:-} != s3 ]]; then
  # shellcheck disable=SC2086
  exec go test -run '^$' -bench . -benchmem ${BENCH_PKGS:-./sigv4/... ./gateway/...} "$@"
fi
shift

# shellcheck source=scripts/stack.sh
source scripts/stack.sh

mkdir -p bin
go build -o bin/duckicelake ./cmd/duckicelake
go build -o bin/s3bench ./bench/cmd/s3bench
scripts/versitygw.sh

scratch=$(mktemp -d "${TMPDIR:-/tmp}/duckicelake-bench.XXXXXX")
for v in $(compgen -e | grep '^DUCKICELAKE_'); do
  case $v in DUCKICELAKE_STACK_LOG_LEVEL) ;; *) unset "$v" ;; esac
done
export DUCKICELAKE_DEV_DIR=$scratch DUCKICELAKE_PORTS=free
# Access logs cost the gateway time per request; benchmarks keep warnings only.
export DUCKICELAKE_STACK_LOG_LEVEL=${DUCKICELAKE_STACK_LOG_LEVEL:-warn}
stack_init
cleanup() {
  stack_stop
  if [[ ${BENCH_KEEP:-0} == 1 ]]; then echo "kept $scratch"; else rm -rf "$scratch"; fi
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

stack_up
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
