#!/usr/bin/env bash
# make bench: benchmarks (see bench/RESULTS.md for the recorded runs).
#
#   scripts/bench.sh                Go micro-benchmarks (sigv4, gateway).
#   scripts/bench.sh s3 [FLAGS…]    S3 load side by side: starts versitygw (posix, over a
#                                   temporary directory) and, in front of that same backend,
#                                   a bare TCP relay (bench/cmd/tcprelay: no HTTP, no auth,
#                                   splice; the floor of any proxy hop), the gateway and
#                                   versitygw's own s3 proxy mode, on free ports; runs
#                                   bench/cmd/s3bench against the four, interleaved, and
#                                   reports every figure against the backend direct and
#                                   against the relay (ratios per round: median, min–max).
#                                   FLAGS go to s3bench (e.g. -ops get1k,put1k -duration 5s).
#                                   Stops everything afterwards.
#   scripts/bench.sh compare REV [FLAGS…]
#                                   two builds side by side in one run: builds REV (default
#                                   $BASELINE_REV) from `git archive` in the temporary
#                                   directory (removed afterwards) and this worktree's code;
#                                   starts the whole stack (Postgres and the catalog too)
#                                   with this build's serve and a second serve of REV's
#                                   build on the same config, backend and catalog; runs
#                                   s3bench (direct, relay, gateway-old, gateway-new;
#                                   FLAGS go to it) and LoadTable cache hits at c=32
#                                   (bench/cmd/httpbench on demo.events, written by DuckDB
#                                   in 20 INSERTs by bench/loadtable.py; plain and with
#                                   vended credentials), each interleaved round by round
#                                   (old, new, then new, old…), reporting medians, the spread
#                                   over rounds and the ratio new/old per round.
#                                   BENCH_HTTPBENCH_FLAGS: httpbench's (default
#                                   "-rounds 5 -duration 5s -warmup 1s"). First, before
#                                   the stack starts, the Go benchmarks of BENCH_GO_PKGS
#                                   (default ./gateway; "" skips them) of both trees, test
#                                   binaries run alternately BENCH_GO_ROUNDS times (3;
#                                   BENCH_GO_BENCH, BENCH_GO_BENCHTIME: -bench ., 1s),
#                                   set side by side by bench/cmd/benchcmp. Needs the venv.
#   scripts/bench.sh governance [FLAGS…]
#                                   governance's cost (issue 10), all in one run on the whole
#                                   stack: bench/governance.py writes 100 tables and authors
#                                   1,000 policies (200 masks, 800 row filters) over REST; then
#                                   s3bench (FLAGS; default -ops get1k) on direct, relay, a
#                                   gateway-only serve (governance off: no catalog, same build,
#                                   backend and keys) and the governed serve, on keys inside a
#                                   governed table's directory, interleaved; the audit trail's
#                                   written/dropped counters over that run against the
#                                   requests the governed gateway answered; LoadTable cache hits
#                                   at c=32 of a governed table (10 policies on it, stamped for
#                                   the caller) against an ungoverned one on the same serve
#                                   (BENCH_HTTPBENCH_FLAGS); and a policy change on one serve →
#                                   enforced by a second serve (p50/p99 over 50 changes).
#   scripts/bench.sh export [--rows N --files N --rounds N --refreshes N --memory-limit M]
#                                   the airtight tier (issue 12): masked-copy build vs DuckDB's
#                                   COPY of the same table, masked vs base scans (PyIceberg,
#                                   DuckDB iceberg), refresh latency after a 1-row INSERT, and
#                                   serve's RSS while exporting (bench/export.py). Needs the venv.
#   scripts/bench.sh direct [--rows N --tables N --vends N --rotations N --rounds N]
#                                   DuckLake-direct (issue 11): ducklake-credentials vend
#                                   latency over HTTP (warm, and after each mask change:
#                                   new masking views), and one query over the vended
#                                   reader role's ATTACH (RLS) vs the owner's, alternating
#                                   (bench/direct.py). Needs the venv.
#   scripts/bench.sh mcp [--runs N] MCP query latency over a 1M-row masked table vs DuckDB
#                                   over the masked copy directly (bench/mcp_query.py), on a
#                                   stack it starts. Needs the venv.
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
# Env: BENCH_KEEP=1 keeps the temporary directory (logs); BENCH_PKGS for the Go benchmarks;
# BENCH_HOLD=1 (compare, governance) keeps the stack up after the run — the serves' pids, the
# LoadTable URLs and the token in $scratch/hold.env — until the script is interrupted: to
# profile or measure them (bench/cpu-per-request.sh) without rebuilding the set-up.
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$(pwd)

mode=${1:-}
if [[ $mode != s3 && $mode != raw && $mode != compare && $mode != governance && $mode != mcp && $mode != export && $mode != direct ]]; then
  # shellcheck disable=SC2086
  exec go test -run '^$' -bench . -benchmem ${BENCH_PKGS:-./sigv4/... ./gateway/...} "$@"
fi
shift
if [[ $mode == compare ]]; then
  rev=${BASELINE_REV:-}
  if [[ $# -gt 0 && $1 != -* ]]; then
    rev=$1
    shift
  fi
  [[ -n $rev ]] || {
    echo "bench: compare needs a revision: scripts/bench.sh compare REV (or BASELINE_REV=REV)" >&2
    exit 2
  }
  old_commit=$(git rev-parse --verify "$rev^{commit}")
  old_name=$(git rev-parse --short "$old_commit")
  new_name=$(git describe --always --dirty)
fi

# shellcheck source=scripts/stack.sh
source scripts/stack.sh

mkdir -p bin
go build -o bin/duckicelake ./cmd/duckicelake
if [[ $mode != raw ]]; then
  go build -o bin/s3bench ./bench/cmd/s3bench
  go build -o bin/tcprelay ./bench/cmd/tcprelay
fi
[[ $mode == compare || $mode == governance ]] && go build -o bin/httpbench ./bench/cmd/httpbench
scripts/versitygw.sh
[[ $mode != s3 ]] && scripts/venv.sh

scratch=$(mktemp -d "${TMPDIR:-/tmp}/duckicelake-bench.XXXXXX")
# Traversable by the postgres user that owns the private cluster when we are root.
chmod 755 "$scratch"
for v in $(compgen -e | grep '^DUCKICELAKE_'); do
  case $v in DUCKICELAKE_STACK_LOG_LEVEL | DUCKICELAKE_PPROF) ;; *) unset "$v" ;; esac
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

# bench_hold NAME VALUE …: with BENCH_HOLD=1, write the pairs to
# $scratch/hold.env and keep the stack up until interrupted.
bench_hold() {
  [[ ${BENCH_HOLD:-0} == 1 ]] || return 0
  : >"$scratch/hold.env"
  while [[ $# -gt 1 ]]; do
    printf '%s=%s\n' "$1" "$2" >>"$scratch/hold.env"
    shift 2
  done
  echo "== holding the stack up: $scratch/hold.env; interrupt to stop"
  sleep infinity &
  wait $!
}

if [[ $mode == compare ]]; then
  # The other revision's tree, from git's objects: no worktree is registered
  # in the repository, and the source goes with the temporary directory.
  echo "== building $old_name ($rev) beside this worktree's $new_name"
  oldsrc=$scratch/old-src
  mkdir "$oldsrc"
  git archive --format=tar "$old_commit" | tar -x -C "$oldsrc"
  (cd "$oldsrc" && go build -buildvcs=false -o "$scratch/duckicelake-old" ./cmd/duckicelake)
  go build -o bin/benchcmp ./bench/cmd/benchcmp

  # Go micro-benchmarks of both trees, before the stack starts: each round
  # runs the old then the new test binary (reversed every other round).
  go_pkgs=${BENCH_GO_PKGS-./gateway}
  go_rounds=${BENCH_GO_ROUNDS:-3}
  for pkg in $go_pkgs; do
    name=${pkg//[^a-zA-Z0-9]/_}
    (cd "$oldsrc" && go test -buildvcs=false -c -o "$scratch/$name-old.test" "$pkg")
    go test -c -o "$scratch/$name-new.test" "$pkg"
    : >"$scratch/$name-old.txt"
    : >"$scratch/$name-new.txt"
    for ((r = 1; r <= go_rounds; r++)); do
      order=(old new)
      ((r % 2 == 0)) && order=(new old)
      for build in "${order[@]}"; do
        src=$repo
        [[ $build == old ]] && src=$oldsrc
        echo "== go test -bench $pkg: round $r/$go_rounds, $build (load average $(cut -d' ' -f1-3 /proc/loadavg))"
        # A test binary runs in its package's directory, as go test runs it.
        (cd "$src/$pkg" && "$scratch/$name-$build.test" -test.run '^$' -test.bench "${BENCH_GO_BENCH:-.}" \
          -test.benchmem -test.benchtime "${BENCH_GO_BENCHTIME:-1s}" -test.count 1) | tee -a "$scratch/$name-$build.txt" |
          grep '^Benchmark' || true
      done
    done
    echo
    echo "== $pkg: new ($new_name) / old ($old_name), $go_rounds interleaved runs each"
    bin/benchcmp "$scratch/$name-old.txt" "$scratch/$name-new.txt"
    echo
  done
fi

stack_up


# bench_python SCRIPT ARGS… runs a Python benchmark of the venv against the
# running stack, with the variables test/e2e/lakestack.py reads.
bench_python() {
  DUCKICELAKE_TEST_CATALOG_URL=$STACK_CATALOG_URL DUCKICELAKE_TEST_CATALOG_CREDENTIAL=$STACK_CATALOG_CREDENTIAL \
    DUCKICELAKE_TEST_CATALOG_DSN=$STACK_PG_DSN_KV DUCKICELAKE_TEST_DATA_PATH=$STACK_DATA_PATH \
    DUCKICELAKE_TEST_GATEWAY=http://$STACK_GATEWAY_ADDR DUCKICELAKE_TEST_CONFIG=$STACK_CONFIG \
    DUCKICELAKE_TEST_S3_REGION=$STACK_REGION DUCKICELAKE_BIN=$STACK_BIN \
    DUCKICELAKE_TEST_S3_ENDPOINT=$STACK_S3_ENDPOINT DUCKICELAKE_TEST_S3_ACCESS_KEY=$STACK_S3_ACCESS_KEY \
    DUCKICELAKE_TEST_S3_SECRET_KEY=$STACK_S3_SECRET_KEY \
    .venv/bin/python "$@"
}

if [[ $mode == raw ]]; then
  [[ ${STACK_GATEWAY_UP:-0} == 1 && $STACK_CATALOG == 1 ]] || stack_die "the stack has no catalog"
  out=${BENCH_OUT:-$repo/.dev/bench/raw-$(date -u +%Y%m%dT%H%M%SZ).json}
  mkdir -p "$(dirname "$out")"
  echo "== read-after-write (stack: $STACK_CATALOG_URL, eager; a second serve with catalog.eager=false, lazy)"
  bench_python test/e2e/lakestack.py raw --out "$out" "$@"
  exit
fi

if [[ $mode == export ]]; then
  [[ ${STACK_GATEWAY_UP:-0} == 1 && $STACK_CATALOG == 1 ]] || stack_die "the stack has no catalog"
  echo "== the airtight tier: export vs COPY, masked vs base scans, refresh latency, RSS (bench/export.py)"
  bench_python bench/export.py "$@"
  exit
fi

if [[ $mode == direct ]]; then
  [[ ${STACK_GATEWAY_UP:-0} == 1 && $STACK_CATALOG == 1 ]] || stack_die "the stack has no catalog"
  echo "== DuckLake-direct: vend latency, reader role + RLS vs the owner (bench/direct.py)"
  bench_python bench/direct.py "$@"
  exit
fi

if [[ $mode == mcp ]]; then
  [[ ${STACK_GATEWAY_UP:-0} == 1 && $STACK_CATALOG == 1 ]] || stack_die "the stack has no catalog"
  echo "== MCP query over a 1M-row masked table vs DuckDB over the export (bench/mcp_query.py)"
  bench_python bench/mcp_query.py "$@"
  exit
fi

# bench_start_relay starts bench/cmd/tcprelay in front of the backend on a
# free port and sets BENCH_RELAY_ENDPOINT and BENCH_RELAY_PID.
bench_start_relay() {
  local port log=$STACK_DIR/tcprelay.log
  read -r port < <(stack_free_ports 1)
  bin/tcprelay -listen "127.0.0.1:$port" -backend "${STACK_S3_ENDPOINT#http://}" >"$log" 2>&1 &
  BENCH_RELAY_PID=$!
  stack_track "$BENCH_RELAY_PID"
  BENCH_RELAY_ENDPOINT=http://127.0.0.1:$port
  # Through the relay the backend answers: any HTTP status means it relays.
  if ! stack_wait_http "$BENCH_RELAY_ENDPOINT/" 30 "$BENCH_RELAY_PID"; then
    cat "$log" >&2
    stack_die "tcprelay did not come up on 127.0.0.1:$port (log: $log)"
  fi
  stack_log "tcprelay: $BENCH_RELAY_ENDPOINT -> $STACK_S3_ENDPOINT (pid $BENCH_RELAY_PID)"
}

# bench_start_serve BIN NAME [CONFIG] starts one more `serve` of BIN on the
# stack's config or CONFIG (same backend, catalog and keys) on free ports, and sets
# BENCH_SERVE_GATEWAY, BENCH_SERVE_ADMIN and BENCH_SERVE_PID.
bench_start_serve() {
  local bin=$1 name=$2 gw admin log=$STACK_DIR/duckicelake-$2.log config=${3:-$STACK_CONFIG}
  read -r gw admin < <(stack_free_ports 2)
  "$bin" serve --config "$config" -gateway.listen "127.0.0.1:$gw" -catalog.listen "127.0.0.1:$admin" >"$log" 2>&1 &
  BENCH_SERVE_PID=$!
  stack_track "$BENCH_SERVE_PID"
  BENCH_SERVE_GATEWAY=127.0.0.1:$gw
  BENCH_SERVE_ADMIN=127.0.0.1:$admin
  if ! STACK_WAIT_OK=1 stack_wait_http "http://$BENCH_SERVE_ADMIN/readyz" 30 "$BENCH_SERVE_PID"; then
    tail -n 20 "$log" >&2
    stack_die "serve ($name) did not become ready (log: $log)"
  fi
  stack_log "serve ($name): gateway http://$BENCH_SERVE_GATEWAY, admin http://$BENCH_SERVE_ADMIN (pid $BENCH_SERVE_PID)"
}

# bench_gateway_target NAME ADDR PID [PREFIX] prints an s3bench -target for a
# gateway, with a credential minted for PREFIX (default bench/).
bench_gateway_target() {
  local creds key secret token
  creds=$("$STACK_BIN" creds mint --config "$STACK_CONFIG" --principal bench \
    --grant "$STACK_BUCKET:${4:-bench/}:rw" --ttl 12h --format env)
  key=$(sed -n 's/^AWS_ACCESS_KEY_ID=//p' <<<"$creds")
  secret=$(sed -n 's/^AWS_SECRET_ACCESS_KEY=//p' <<<"$creds")
  token=$(sed -n 's/^AWS_SESSION_TOKEN=//p' <<<"$creds")
  echo "$1|http://$2|$key|$secret|$token|$3"
}

bench_start_relay
# The last field names the process whose resident memory s3bench samples.
targets=(-target "direct|$STACK_S3_ENDPOINT|$STACK_S3_ACCESS_KEY|$STACK_S3_SECRET_KEY||$STACK_S3_PID")
# The relay is transparent: its clients sign for the backend's own keys.
targets+=(-target "relay|$BENCH_RELAY_ENDPOINT|$STACK_S3_ACCESS_KEY|$STACK_S3_SECRET_KEY||$BENCH_RELAY_PID")
vs=direct,relay

if [[ $mode == compare ]]; then
  [[ ${STACK_GATEWAY_UP:-0} == 1 && $STACK_CATALOG == 1 ]] || stack_die "the stack has no gateway and catalog"
  # An older build refuses a catalog whose sidecar tables a newer one has
  # migrated, and settings it does not know: it gets its own catalog (a
  # second database of the stack's Postgres, its own data path in the same
  # bucket) and the stack's config without the sections added since
  # (embedded DuckDB's [duckdb]). Same backend, keys and OAuth key.
  env DUCKICELAKE_PG_DSN= DUCKICELAKE_PG_DIR="$STACK_PG_DIR" DUCKICELAKE_PG_PORT="$STACK_PG_PORT" \
    scripts/pg.sh psql -q -c 'CREATE DATABASE ducklake_old' >/dev/null
  old_dsn=${STACK_PG_DSN/\/ducklake\?//ducklake_old?}
  old_dsn_kv=${STACK_PG_DSN_KV/dbname=ducklake/dbname=ducklake_old}
  old_data_path=s3://$STACK_BUCKET/old-data/
  "$scratch/duckicelake-old" init --dsn "$old_dsn" --data-path "$old_data_path" >/dev/null ||
    stack_die "duckicelake init ($old_name) failed"
  old_config=$STACK_DIR/duckicelake-old.toml
  (umask 077 && sed -e '/^\[duckdb\]/,/^$/d' -e "s#^dsn = .*#dsn = \"$old_dsn\"#" \
    -e "s#^data_path = .*#data_path = \"$old_data_path\"#" "$STACK_CONFIG" >"$old_config")
  bench_start_serve "$scratch/duckicelake-old" old "$old_config"
  old_gateway=$BENCH_SERVE_GATEWAY old_admin=$BENCH_SERVE_ADMIN old_serve_pid=$BENCH_SERVE_PID
  targets+=(-target "$(bench_gateway_target "gateway-old" "$old_gateway" "$BENCH_SERVE_PID")")
  targets+=(-target "$(bench_gateway_target "gateway-new" "$STACK_GATEWAY_ADDR" "$STACK_GATEWAY_PID")")
  vs+=,gateway-old
  echo "== gateway: old = $old_name (serve pid $BENCH_SERVE_PID), new = $new_name (pid $STACK_GATEWAY_PID); load average $(cut -d' ' -f1-3 /proc/loadavg)"
  echo "== s3bench: direct, relay, gateway-old, gateway-new"
  bin/s3bench "${targets[@]}" -vs "$vs" -bucket "$STACK_BUCKET" -prefix bench/ "$@"

  echo
  echo "== LoadTable: writing demo.events (DuckDB, 20 INSERTs through the gateway)"
  # The same table in each build's catalog, written through its own gateway.
  loadtable() { # CATALOG_URL DSN_KV DATA_PATH GATEWAY CONFIG
    DUCKICELAKE_TEST_CATALOG_URL=$1 DUCKICELAKE_TEST_CATALOG_CREDENTIAL=$STACK_CATALOG_CREDENTIAL \
      DUCKICELAKE_TEST_CATALOG_DSN=$2 DUCKICELAKE_TEST_DATA_PATH=$3 \
      DUCKICELAKE_TEST_GATEWAY=http://$4 DUCKICELAKE_TEST_CONFIG=$5 \
      DUCKICELAKE_TEST_S3_REGION=$STACK_REGION DUCKICELAKE_BIN=$STACK_BIN \
      .venv/bin/python bench/loadtable.py
  }
  {
    read -r path
    read -r token
  } < <(loadtable "$STACK_CATALOG_URL" "$STACK_PG_DSN_KV" "$STACK_DATA_PATH" "$STACK_GATEWAY_ADDR" "$STACK_CONFIG")
  [[ -n ${token:-} ]] || stack_die "bench/loadtable.py gave no token"
  {
    read -r old_path
    read -r _
  } < <(loadtable "http://$old_admin" "$old_dsn_kv" "$old_data_path" "$old_gateway" "$old_config")
  [[ -n ${old_path:-} ]] || stack_die "bench/loadtable.py gave no path for $old_name"
  # shellcheck disable=SC2206
  hflags=(${BENCH_HTTPBENCH_FLAGS:--rounds 5 -duration 5s -warmup 1s})
  http_targets=(-target "old|http://$old_admin$old_path" -target "new|$STACK_CATALOG_URL$path")
  echo "== LoadTable cache hit, c=32 (load average $(cut -d' ' -f1-3 /proc/loadavg))"
  bin/httpbench "${http_targets[@]}" -vs old -c 32 -header "Authorization: Bearer $token" "${hflags[@]}"
  echo "== LoadTable cache hit, c=32, Accept-Encoding: gzip, deflate as PyIceberg sends it (a build that compresses answers gzip) (load average $(cut -d' ' -f1-3 /proc/loadavg))"
  bin/httpbench "${http_targets[@]}" -vs old -c 32 -header "Authorization: Bearer $token" -header "Accept-Encoding: gzip, deflate" "${hflags[@]}"
  echo "== LoadTable + vended credentials, c=32 (load average $(cut -d' ' -f1-3 /proc/loadavg))"
  bin/httpbench "${http_targets[@]}" -vs old -c 32 -header "Authorization: Bearer $token" \
    -header "X-Iceberg-Access-Delegation: vended-credentials" "${hflags[@]}"
  echo "== done (load average $(cut -d' ' -f1-3 /proc/loadavg))"
  bench_hold OLD_PID "$old_serve_pid" OLD_URL "http://$old_admin$old_path" NEW_PID "$STACK_GATEWAY_PID" \
    NEW_URL "$STACK_CATALOG_URL$path" TOKEN "$token"
  exit
fi

if [[ $mode == governance ]]; then
  [[ ${STACK_GATEWAY_UP:-0} == 1 && $STACK_CATALOG == 1 ]] || stack_die "the stack has no gateway and catalog"
  lake_env=("DUCKICELAKE_TEST_CATALOG_URL=$STACK_CATALOG_URL" "DUCKICELAKE_TEST_CATALOG_CREDENTIAL=$STACK_CATALOG_CREDENTIAL"
    "DUCKICELAKE_TEST_CATALOG_DSN=$STACK_PG_DSN_KV" "DUCKICELAKE_TEST_DATA_PATH=$STACK_DATA_PATH"
    "DUCKICELAKE_TEST_GATEWAY=http://$STACK_GATEWAY_ADDR" "DUCKICELAKE_TEST_CONFIG=$STACK_CONFIG"
    "DUCKICELAKE_TEST_S3_REGION=$STACK_REGION" "DUCKICELAKE_BIN=$STACK_BIN")
  echo "== governance: 100 tables, 1,000 policies (bench/governance.py setup)"
  {
    read -r gov_path
    read -r plain_path
    read -r token
  } < <(env "${lake_env[@]}" .venv/bin/python bench/governance.py setup)
  [[ -n ${token:-} ]] || stack_die "bench/governance.py setup gave no token"
  # Keys inside governed table t0's directory: every request is looked up
  # in the key index and decided by the engine.
  data_key=${STACK_DATA_PATH#s3://$STACK_BUCKET/}
  gov_prefix=${data_key}gov_bench/t0/bench/

  # Governance off: the same build as a gateway only (no catalog), on the
  # same backend and minting keys.
  off_config=$STACK_DIR/duckicelake-off.toml
  sed -e '/^dsn = /d' -e '/^data_path = /d' "$STACK_CONFIG" >"$off_config"
  chmod 600 "$off_config"
  stack_config=$STACK_CONFIG
  STACK_CONFIG=$off_config
  bench_start_serve "$STACK_BIN" off
  STACK_CONFIG=$stack_config
  off_gateway=$BENCH_SERVE_GATEWAY off_pid=$BENCH_SERVE_PID
  targets+=(-target "$(bench_gateway_target gateway-off "$off_gateway" "$off_pid" "$gov_prefix")")
  targets+=(-target "$(bench_gateway_target gateway-gov "$STACK_GATEWAY_ADDR" "$STACK_GATEWAY_PID" "$gov_prefix")")
  vs+=,gateway-off

  metric() { # metric NAME: the sum of a metric's samples on the governed serve
    curl -fsS "$STACK_CATALOG_URL/metrics" | awk -v m="$1" '$1 == m || index($1, m "{") == 1 { s += $2 } END { printf "%d\n", s }'
  }
  req0=$(metric duckicelake_gateway_requests_total)
  w0=$(metric duckicelake_audit_trail_written_total)
  d0=$(metric duckicelake_audit_trail_dropped_total)
  echo "== s3bench: direct, relay, gateway-off, gateway-gov on $STACK_BUCKET/$gov_prefix (load average $(cut -d' ' -f1-3 /proc/loadavg))"
  [[ $# -gt 0 ]] || set -- -ops get1k
  bin/s3bench "${targets[@]}" -vs "$vs" -bucket "$STACK_BUCKET" -prefix "$gov_prefix" "$@"
  sleep 2 # the trail flushes every 200 ms
  req1=$(metric duckicelake_gateway_requests_total)
  w1=$(metric duckicelake_audit_trail_written_total)
  d1=$(metric duckicelake_audit_trail_dropped_total)
  echo "== audit trail over that run: the governed gateway answered $((req1 - req0)) requests;" \
    "$((w1 - w0)) events written to Postgres, $((d1 - d0)) dropped"

  # shellcheck disable=SC2206
  hflags=(${BENCH_HTTPBENCH_FLAGS:--rounds 5 -duration 5s -warmup 1s})
  echo "== LoadTable cache hit, c=32: governed (gov_bench.t0, 2 masks + 8 row filters, stamped) vs ungoverned (gov_bench.plain) (load average $(cut -d' ' -f1-3 /proc/loadavg))"
  bin/httpbench -target "plain|$STACK_CATALOG_URL$plain_path" -target "governed|$STACK_CATALOG_URL$gov_path" -vs plain -c 32 \
    -header "Authorization: Bearer $token" "${hflags[@]}"
  # What PyIceberg (requests), the Java client and Go's net/http send: the
  # cached answers then go gzip-compressed.
  echo "== the same, with Accept-Encoding: gzip, deflate (load average $(cut -d' ' -f1-3 /proc/loadavg))"
  bin/httpbench -target "plain|$STACK_CATALOG_URL$plain_path" -target "governed|$STACK_CATALOG_URL$gov_path" -vs plain -c 32 \
    -header "Authorization: Bearer $token" -header "Accept-Encoding: gzip, deflate" "${hflags[@]}"

  bench_start_serve "$STACK_BIN" second
  echo "== policy change on the stack's serve → enforced by a second serve (load average $(cut -d' ' -f1-3 /proc/loadavg))"
  env "${lake_env[@]}" .venv/bin/python bench/governance.py propagate --a "$STACK_CATALOG_URL" --b "http://$BENCH_SERVE_ADMIN" --n 50
  echo "== done (load average $(cut -d' ' -f1-3 /proc/loadavg))"
  bench_hold PID "$STACK_GATEWAY_PID" GOV_URL "$STACK_CATALOG_URL$gov_path" PLAIN_URL "$STACK_CATALOG_URL$plain_path" TOKEN "$token"
  exit
fi

if [[ ${STACK_GATEWAY_UP:-0} == 1 ]]; then
  targets+=(-target "$(bench_gateway_target gateway "$STACK_GATEWAY_ADDR" "$STACK_GATEWAY_PID")")
else
  echo "bench: no gateway in this build; measuring the backend, the relay and versitygw's proxy only" >&2
fi
read -r proxyport < <(stack_free_ports 1)
stack_start_vgw_proxy "127.0.0.1:$proxyport"
targets+=(-target "vgw-proxy|$STACK_PROXY_ENDPOINT|$STACK_S3_ACCESS_KEY|$STACK_S3_SECRET_KEY||$STACK_PROXY_PID")

echo "== s3bench: $(printf "%s\n" "${targets[@]}" | grep "|" | cut -d"|" -f1 | paste -sd, -) (load average $(cut -d' ' -f1-3 /proc/loadavg))"
bin/s3bench "${targets[@]}" -vs "$vs" -bucket "$STACK_BUCKET" -prefix bench/ "$@"
