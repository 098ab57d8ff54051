#!/usr/bin/env bash
# The local stack: versitygw (S3 backend, posix mode), a private Postgres
# holding the DuckLake catalog (scripts/pg.sh; `duckicelake init` creates the
# catalog with data path s3://<bucket>/data/) and `duckicelake serve`: the
# gateway in front of the backend, and the Iceberg REST catalog with the
# admin endpoints. Sourced by scripts/run.sh, scripts/test.sh,
# scripts/conformance.sh and scripts/bench.sh; also a command of its own:
#
#   scripts/stack.sh up     start the stack in the background, write stack.env, return
#   scripts/stack.sh down   stop what `up` started (by the pids it recorded)
#   scripts/stack.sh env    print stack.env
#
# Settings (env; defaults are the dev stack's):
#   DUCKICELAKE_DEV_DIR        state directory (default <repo>/.dev): s3/ (the backend's
#                              files), pg/ (Postgres), keys, duckicelake.toml, logs, stack.env
#   DUCKICELAKE_S3_PORT        versitygw port (default 7070) on DUCKICELAKE_S3_HOST (127.0.0.1)
#   DUCKICELAKE_S3_ENDPOINT    use this S3 backend instead of starting versitygw; needs
#                              DUCKICELAKE_S3_ACCESS_KEY and DUCKICELAKE_S3_SECRET_KEY
#                              (and DUCKICELAKE_S3_REGION, default us-east-1)
#   DUCKICELAKE_GATEWAY_ADDR   gateway listen address (default 127.0.0.1:9000)
#   DUCKICELAKE_ADMIN_ADDR     admin/catalog/metrics listen address (default 127.0.0.1:8181)
#   DUCKICELAKE_BUCKET         the bucket to create and use (default lake)
#   DUCKICELAKE_PG_PORT        the private Postgres's port (default 5433), on 127.0.0.1
#   DUCKICELAKE_PG_DSN         use this Postgres database for the catalog instead of
#                              starting one (`duckicelake init` runs against it)
#   DUCKICELAKE_STACK_CATALOG=0  no Postgres and no catalog: the gateway only
#   DUCKICELAKE_PORTS=free     pick free ports instead of the defaults (tests do)
#   VERSITYGW_BIN, DUCKICELAKE_BIN   binaries (default bin/versitygw, bin/duckicelake)

# stack_repo is the repository root, whoever sources this file from wherever.
stack_repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)

stack_log() { echo "stack: $*" >&2; }
stack_die() {
  echo "stack: error: $*" >&2
  return 1
}

# stack_random_hex N prints N random bytes as lower-case hex.
stack_random_hex() { od -An -N"$1" -tx1 /dev/urandom | tr -d ' \n'; }

# stack_free_ports N prints N distinct TCP ports that were free on 127.0.0.1
# a moment ago (all held open together so they differ).
stack_free_ports() {
  local n=$1
  if command -v python3 >/dev/null 2>&1; then
    python3 - "$n" <<'EOF'
import socket, sys
socks = []
for _ in range(int(sys.argv[1])):
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    socks.append(s)
print(" ".join(str(s.getsockname()[1]) for s in socks))
EOF
    return
  fi
  # No Python: probe random high ports; a refused connect means nobody listens.
  local ports=() p
  while ((${#ports[@]} < n)); do
    p=$((20000 + RANDOM % 40000))
    [[ " ${ports[*]} " == *" $p "* ]] && continue
    if ! (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then ports+=("$p"); fi
  done
  echo "${ports[*]}"
}

# stack_port_busy ADDR succeeds when something accepts connections on host:port.
stack_port_busy() {
  local host=${1%:*} port=${1##*:}
  (exec 3<>"/dev/tcp/$host/$port") 2>/dev/null
}

# stack_wait_http URL SECONDS [PID] waits until URL answers with any HTTP status
# (or 2xx when STACK_WAIT_OK=1); fails early when PID dies.
stack_wait_http() {
  local url=$1 secs=$2 pid=${3:-} code deadline=$((SECONDS + $2))
  while ((SECONDS < deadline)); do
    if [[ -n $pid ]] && ! kill -0 "$pid" 2>/dev/null; then
      return 1
    fi
    code=$(curl -s -o /dev/null -m 2 -w '%{http_code}' "$url" 2>/dev/null) || code=000
    if [[ ${STACK_WAIT_OK:-0} == 1 ]]; then
      [[ $code == 2?? ]] && return 0
    else
      [[ $code != 000 ]] && return 0
    fi
    sleep 0.2
  done
  return 1
}

# stack_init sets the STACK_* variables from the environment. Call it once
# before anything else.
stack_init() {
  STACK_DIR=${DUCKICELAKE_DEV_DIR:-$stack_repo/.dev}
  mkdir -p "$STACK_DIR"
  STACK_DIR=$(cd "$STACK_DIR" && pwd)
  STACK_BUCKET=${DUCKICELAKE_BUCKET:-lake}
  STACK_REGION=${DUCKICELAKE_S3_REGION:-us-east-1}
  STACK_VGW_BIN=${VERSITYGW_BIN:-$stack_repo/bin/versitygw}
  STACK_BIN=${DUCKICELAKE_BIN:-$stack_repo/bin/duckicelake}
  STACK_CONFIG=$STACK_DIR/duckicelake.toml
  STACK_ENV_FILE=$STACK_DIR/stack.env
  STACK_PIDS=()

  local s3host=${DUCKICELAKE_S3_HOST:-127.0.0.1} s3port gw admin pgport
  if [[ ${DUCKICELAKE_PORTS:-} == free ]]; then
    read -r s3port gw admin pgport < <(stack_free_ports 4)
    gw=127.0.0.1:$gw
    admin=127.0.0.1:$admin
  else
    s3port=${DUCKICELAKE_S3_PORT:-7070}
    gw=${DUCKICELAKE_GATEWAY_ADDR:-127.0.0.1:9000}
    admin=${DUCKICELAKE_ADMIN_ADDR:-127.0.0.1:8181}
    pgport=${DUCKICELAKE_PG_PORT:-5433}
  fi
  STACK_GATEWAY_ADDR=$gw
  STACK_ADMIN_ADDR=$admin
  STACK_CATALOG_URL=http://$admin
  STACK_DATA_PATH=s3://$STACK_BUCKET/data/

  # The catalog's Postgres: a private cluster under the state directory, or
  # DUCKICELAKE_PG_DSN (unless that came from a sourced stack.env).
  STACK_CATALOG=1
  [[ ${DUCKICELAKE_STACK_CATALOG:-1} == 0 ]] && STACK_CATALOG=0
  STACK_PG_DIR=$STACK_DIR/pg
  STACK_PG_PORT=$pgport
  STACK_PG_STARTED=0
  if [[ -n ${DUCKICELAKE_PG_DSN:-} && -z ${DUCKICELAKE_STACK_ENV:-} ]]; then
    STACK_EXTERNAL_PG=1
  else
    STACK_EXTERNAL_PG=0
  fi

  # A shell that sourced a stack.env has DUCKICELAKE_S3_* of that stack's own
  # versitygw; that is not a request for an external backend.
  if [[ -n ${DUCKICELAKE_STACK_ENV:-} ]]; then
    stack_log "ignoring DUCKICELAKE_S3_* from $DUCKICELAKE_STACK_ENV (unset DUCKICELAKE_STACK_ENV to use them as an external backend)"
  fi
  if [[ -n ${DUCKICELAKE_S3_ENDPOINT:-} && -z ${DUCKICELAKE_STACK_ENV:-} ]]; then
    STACK_EXTERNAL_S3=1
    STACK_S3_ENDPOINT=$DUCKICELAKE_S3_ENDPOINT
    STACK_S3_ACCESS_KEY=${DUCKICELAKE_S3_ACCESS_KEY:?DUCKICELAKE_S3_ENDPOINT is set, so set DUCKICELAKE_S3_ACCESS_KEY too}
    STACK_S3_SECRET_KEY=${DUCKICELAKE_S3_SECRET_KEY:?DUCKICELAKE_S3_ENDPOINT is set, so set DUCKICELAKE_S3_SECRET_KEY too}
  else
    STACK_EXTERNAL_S3=0
    STACK_S3_ADDR=$s3host:$s3port
    STACK_S3_ENDPOINT=http://$STACK_S3_ADDR
    STACK_S3_ROOT=$STACK_DIR/s3
    stack_backend_keys
  fi
}

# stack_backend_keys loads the backend's root keys from the state directory,
# generating them on first use so a restarted dev stack keeps its keys.
stack_backend_keys() {
  stack_keyfile "$STACK_DIR/s3-root.env" STACK_S3_ACCESS_KEY "root$(stack_random_hex 8)" \
    STACK_S3_SECRET_KEY "$(stack_random_hex 20)"
}

# stack_keyfile FILE NAME VALUE NAME VALUE sources FILE (0600), first
# writing the two assignments to it when it is empty or missing: keys made
# once and kept across restarts.
stack_keyfile() {
  local f=$1
  if [[ ! -s $f ]]; then
    (
      umask 077
      printf '%s=%s\n%s=%s\n' "$2" "$3" "$4" "$5" >"$f"
    )
  fi
  # shellcheck disable=SC1090
  source "$f"
}

# stack_isolated_init SCRATCH [VAR...] runs stack_init for a throwaway
# stack under SCRATCH/stack on free ports, after unsetting every
# DUCKICELAKE_* variable but DUCKICELAKE_PG_BIN, DUCKICELAKE_STACK_LOG_LEVEL
# and the VARs named: a dev, real-backend or configuration setting must never
# leak in (a DUCKICELAKE_<TABLE>_<KEY> would override the stack's config file).
stack_isolated_init() {
  local scratch=$1 v keep
  shift
  keep=" DUCKICELAKE_PG_BIN DUCKICELAKE_STACK_LOG_LEVEL $* "
  for v in $(compgen -e | grep '^DUCKICELAKE_'); do
    [[ $keep == *" $v "* ]] || unset "$v"
  done
  export DUCKICELAKE_DEV_DIR=$scratch/stack DUCKICELAKE_PORTS=free
  stack_init
}

# stack_traps FUNC runs FUNC on exit, and exits 130 on SIGINT and 143 on
# SIGTERM (so that FUNC still runs and sees the status).
stack_traps() {
  # shellcheck disable=SC2064
  trap "$1" EXIT
  trap 'exit 130' INT
  trap 'exit 143' TERM
}

# stack_track PID records a process this stack started, for stack_stop and `down`.
stack_track() {
  STACK_PIDS+=("$1")
  echo "$1" >>"$STACK_DIR/stack.pids"
}

# stack_start_versitygw starts versitygw in posix mode over $STACK_S3_ROOT with
# the bucket as a directory (posix mode maps top-level directories to buckets).
stack_start_versitygw() {
  [[ $STACK_EXTERNAL_S3 == 1 ]] && {
    stack_log "S3 backend: $STACK_S3_ENDPOINT (external; not started here)"
    return 0
  }
  [[ -x $STACK_VGW_BIN ]] || stack_die "no versitygw at $STACK_VGW_BIN (scripts/versitygw.sh builds it)" || return 1
  if stack_port_busy "$STACK_S3_ADDR"; then
    stack_die "$STACK_S3_ADDR is in use (another stack running? set DUCKICELAKE_S3_PORT)" || return 1
  fi
  mkdir -p "$STACK_S3_ROOT/$STACK_BUCKET"
  local log=$STACK_DIR/versitygw.log
  # Keys go in through the environment, not argv, so `ps` does not show them.
  # --keep-alive: versitygw closes every connection otherwise.
  ROOT_ACCESS_KEY_ID=$STACK_S3_ACCESS_KEY ROOT_SECRET_ACCESS_KEY=$STACK_S3_SECRET_KEY \
    "$STACK_VGW_BIN" --port "$STACK_S3_ADDR" --region "$STACK_REGION" --keep-alive --quiet \
    posix "$STACK_S3_ROOT" >"$log" 2>&1 &
  local pid=$!
  stack_track "$pid"
  STACK_S3_PID=$pid
  if ! stack_wait_http "$STACK_S3_ENDPOINT/" 30 "$pid"; then
    tail -n 20 "$log" >&2
    stack_die "versitygw did not come up on $STACK_S3_ADDR (log: $log)"
    return 1
  fi
  # The bucket directory must show up as a bucket.
  local list
  list=$(curl -sS -m 5 --aws-sigv4 "aws:amz:$STACK_REGION:s3" \
    --user "$STACK_S3_ACCESS_KEY:$STACK_S3_SECRET_KEY" \
    -H 'x-amz-content-sha256: UNSIGNED-PAYLOAD' "$STACK_S3_ENDPOINT/") || true
  if [[ $list != *"<Name>$STACK_BUCKET</Name>"* ]]; then
    echo "$list" >&2
    stack_die "versitygw does not list bucket $STACK_BUCKET"
    return 1
  fi
  stack_log "S3 backend: versitygw on $STACK_S3_ENDPOINT over $STACK_S3_ROOT (pid $pid, log $log), bucket $STACK_BUCKET"
}

# stack_start_vgw_proxy ADDR starts versitygw's own S3 proxy mode on ADDR in
# front of the backend (the nearest peer of the gateway, for benchmarks). It
# takes the backend's root keys on both sides and sets STACK_PROXY_ENDPOINT.
stack_start_vgw_proxy() {
  local addr=$1 log=$STACK_DIR/versitygw-proxy.log
  # It refuses to start while AWS_CA_BUNDLE is set, and needs
  # --disable-data-integrity-check in front of a plain-http backend.
  env -u AWS_CA_BUNDLE \
    ROOT_ACCESS_KEY_ID="$STACK_S3_ACCESS_KEY" ROOT_SECRET_ACCESS_KEY="$STACK_S3_SECRET_KEY" \
    VGW_S3_ACCESS_KEY="$STACK_S3_ACCESS_KEY" VGW_S3_SECRET_KEY="$STACK_S3_SECRET_KEY" \
    "$STACK_VGW_BIN" --port "$addr" --region "$STACK_REGION" --keep-alive --quiet \
    s3 --endpoint "$STACK_S3_ENDPOINT" --region "$STACK_REGION" --use-path-style \
    --disable-data-integrity-check >"$log" 2>&1 &
  local pid=$!
  stack_track "$pid"
  STACK_PROXY_PID=$pid
  STACK_PROXY_ENDPOINT=http://$addr
  if ! stack_wait_http "$STACK_PROXY_ENDPOINT/" 30 "$pid"; then
    tail -n 20 "$log" >&2
    stack_die "versitygw s3 proxy did not come up on $addr (log: $log)"
    return 1
  fi
  stack_log "versitygw s3 proxy: $STACK_PROXY_ENDPOINT -> $STACK_S3_ENDPOINT (pid $pid, log $log)"
}

# stack_start_pg starts the private Postgres (scripts/pg.sh, data in
# $STACK_PG_DIR) unless DUCKICELAKE_PG_DSN names another, and sets
# STACK_PG_DSN (URL form) and STACK_PG_DSN_KV (libpq key=value form, the one
# DuckDB's 'ducklake:postgres:…' ATTACH takes).
stack_start_pg() {
  [[ $STACK_CATALOG == 1 ]] || return 0
  if [[ $STACK_EXTERNAL_PG == 1 ]]; then
    STACK_PG_DSN=$DUCKICELAKE_PG_DSN
    STACK_PG_DSN_KV=$DUCKICELAKE_PG_DSN
    stack_log "postgres: $(stack_redact_dsn "$STACK_PG_DSN") (external; not started here)"
    return 0
  fi
  local pg=(env DUCKICELAKE_PG_DSN= DUCKICELAKE_PG_DIR="$STACK_PG_DIR" DUCKICELAKE_PG_PORT="$STACK_PG_PORT" "$stack_repo/scripts/pg.sh")
  if ! "${pg[@]}" status >/dev/null 2>&1 && stack_port_busy "127.0.0.1:$STACK_PG_PORT"; then
    stack_die "127.0.0.1:$STACK_PG_PORT is in use (another Postgres? set DUCKICELAKE_PG_PORT)" || return 1
  fi
  STACK_PG_DSN=$("${pg[@]}" start) || {
    stack_die "Postgres did not start (log: $STACK_PG_DIR/postgres.log)"
    return 1
  }
  STACK_PG_DSN_KV=$("${pg[@]}" dsn --kv)
  # pg_ctl daemonises: there is no child pid to track; stack_stop stops it
  # by its data directory.
  STACK_PG_STARTED=1
  stack_log "postgres: $(stack_redact_dsn "$STACK_PG_DSN") (data $STACK_PG_DIR; password in $STACK_PG_DIR/password)"
}

# stack_stop_pg stops the private Postgres of this state directory, if it runs.
stack_stop_pg() {
  [[ -d $STACK_PG_DIR/data ]] || return 0
  env DUCKICELAKE_PG_DSN= DUCKICELAKE_PG_DIR="$STACK_PG_DIR" "$stack_repo/scripts/pg.sh" stop >/dev/null || true
  STACK_PG_STARTED=0
}

# stack_redact_dsn hides a password in a DSN for logs.
stack_redact_dsn() { sed -E 's#(://[^:/@]*:)[^@]*@#\1xxxxx@#; s#(password=)[^ ]*#\1xxxxx#' <<<"$1"; }

# stack_init_catalog creates the DuckLake catalog (data path
# s3://<bucket>/data/, in the bucket versitygw serves) unless it exists;
# `duckicelake init` is idempotent and brings the sidecar tables up to date.
stack_init_catalog() {
  [[ $STACK_CATALOG == 1 ]] || return 0
  if ! "$STACK_BIN" help 2>&1 | grep -qE '^ +init\b'; then
    stack_log "catalog: $STACK_BIN has no init command; the catalog stays off"
    STACK_CATALOG=0
    return 0
  fi
  local out
  if ! out=$("$STACK_BIN" init --dsn "$STACK_PG_DSN" --data-path "$STACK_DATA_PATH" 2>&1); then
    echo "$out" >&2
    stack_die "duckicelake init failed"
    return 1
  fi
  stack_log "catalog: $(head -n 1 <<<"$out")"
}

# stack_start_catalog starts Postgres and creates the catalog; on failure the
# stack goes on without a catalog (the gateway alone) and it returns 1.
stack_start_catalog() {
  if stack_start_pg && stack_init_catalog; then
    return 0
  fi
  STACK_CATALOG=0
  return 1
}

# stack_oauth loads (or creates, 0600) the catalog's token key and the dev
# OAuth client "dev" (every scope), kept across restarts so tokens and
# snippets stay valid.
stack_oauth() {
  local f=$STACK_DIR/oauth.env
  if [[ ! -s $f ]]; then
    (
      umask 077
      printf 'STACK_OAUTH_TOKEN_KEY=%s\nSTACK_OAUTH_CLIENT_ID=dev\nSTACK_OAUTH_CLIENT_SECRET=%s\n' \
        "$(stack_random_hex 32)" "$(stack_random_hex 16)" >"$f"
    )
  fi
  chmod 600 "$f"
  # shellcheck disable=SC1090
  source "$f"
  STACK_CATALOG_CREDENTIAL=$STACK_OAUTH_CLIENT_ID:$STACK_OAUTH_CLIENT_SECRET
}

# stack_has_serve succeeds when bin/duckicelake has the serve command.
stack_has_serve() {
  [[ -x $STACK_BIN ]] && "$STACK_BIN" help 2>&1 | grep -qE '^ +serve\b'
}

# stack_mint_key creates the minting key file (0600) on first use: one key,
# id "dev1", 32 random bytes in hex. A restarted stack keeps it, so credentials
# minted earlier stay valid.
stack_mint_key() {
  STACK_MINT_KEY_FILE=$STACK_DIR/mint.key
  if [[ ! -s $STACK_MINT_KEY_FILE ]]; then
    (
      umask 077
      echo "dev1:$(stack_random_hex 32)" >"$STACK_MINT_KEY_FILE"
    )
  fi
  chmod 600 "$STACK_MINT_KEY_FILE"
  IFS=: read -r STACK_MINT_KEY_ID STACK_MINT_KEY_SECRET <"$STACK_MINT_KEY_FILE"
}

# stack_gateway_root loads (or creates) the gateway's operator root credential.
stack_gateway_root() {
  stack_keyfile "$STACK_DIR/gateway-root.env" STACK_ROOT_ACCESS_KEY "DLROOT$(stack_random_hex 7 | tr a-f A-F)" \
    STACK_ROOT_SECRET_KEY "$(stack_random_hex 20)"
}

# stack_write_config writes the configuration (0600: it holds the keys) that
# `duckicelake serve` and `duckicelake creds mint` read. Settings in
# DUCKICELAKE_<TABLE>_<KEY> variables still override it (internal/config).
stack_write_config() {
  stack_mint_key
  stack_gateway_root
  local tmp=$STACK_CONFIG.tmp catalog="# No catalog in this stack (DUCKICELAKE_STACK_CATALOG=0)."
  if [[ $STACK_CATALOG == 1 ]]; then
    stack_oauth
    # The Iceberg REST catalog on the DuckLake catalog in Postgres, served
    # on catalog.listen (/v1/…); [oauth] below.
    catalog="dsn = \"$STACK_PG_DSN\"
data_path = \"$STACK_DATA_PATH\""
  fi
  (
    umask 077
    cat >"$tmp" <<EOF
# Written by scripts/stack.sh for the local stack; rewritten on every start.
# Every setting: duckicelake.example.toml.

[gateway]
listen = "$STACK_GATEWAY_ADDR"
region = "$STACK_REGION"

[catalog]
listen = "$STACK_ADMIN_ADDR"
$catalog

[upstream]
endpoint = "$STACK_S3_ENDPOINT"
region = "$STACK_REGION"
access_key = "$STACK_S3_ACCESS_KEY"
secret_key = "$STACK_S3_SECRET_KEY"
path_style = true

[root]
access_key = "$STACK_ROOT_ACCESS_KEY"
secret_key = "$STACK_ROOT_SECRET_KEY"

[[mint.keys]]
id = "$STACK_MINT_KEY_ID"
secret = "$STACK_MINT_KEY_SECRET"

[log]
level = "${DUCKICELAKE_STACK_LOG_LEVEL:-info}"
format = "json"
EOF
    # Governance's masked exports and authoring checks run embedded DuckDB,
    # which cannot download extensions here: the venv's (scripts/venv.sh).
    if [[ -d $stack_repo/.venv/duckdb-extensions ]]; then
      cat >>"$tmp" <<EOF

[duckdb]
extension_directory = "$stack_repo/.venv/duckdb-extensions"
EOF
    fi
    if [[ $STACK_CATALOG == 1 ]]; then
      cat >>"$tmp" <<EOF

# The catalog's OAuth2 token key and clients; "dev" has every scope.
[oauth]
token_key = "$STACK_OAUTH_TOKEN_KEY"
clients = "$STACK_OAUTH_CLIENT_ID:$STACK_OAUTH_CLIENT_SECRET|*"
EOF
    fi
  )
  mv -f "$tmp" "$STACK_CONFIG"
}

# stack_start_gateway starts `duckicelake serve` and waits for /readyz.
stack_start_gateway() {
  if ! stack_has_serve; then
    stack_log "gateway: $STACK_BIN has no serve command yet; not started"
    STACK_GATEWAY_UP=0
    return 0
  fi
  local a
  for a in "$STACK_GATEWAY_ADDR" "$STACK_ADMIN_ADDR"; do
    if stack_port_busy "$a"; then
      stack_die "$a is in use (another stack running? set DUCKICELAKE_GATEWAY_ADDR / DUCKICELAKE_ADMIN_ADDR)" || return 1
    fi
  done
  stack_write_config
  local log=$STACK_DIR/duckicelake.log
  "$STACK_BIN" serve --config "$STACK_CONFIG" >"$log" 2>&1 &
  local pid=$!
  stack_track "$pid"
  STACK_GATEWAY_PID=$pid
  if ! STACK_WAIT_OK=1 stack_wait_http "http://$STACK_ADMIN_ADDR/readyz" 30 "$pid"; then
    tail -n 20 "$log" >&2
    stack_die "the gateway did not become ready (http://$STACK_ADMIN_ADDR/readyz; log: $log)"
    return 1
  fi
  STACK_GATEWAY_UP=1
  stack_log "gateway: http://$STACK_GATEWAY_ADDR, admin http://$STACK_ADMIN_ADDR (pid $pid, log $log, config $STACK_CONFIG)"
  if [[ $STACK_CATALOG == 1 ]]; then
    stack_log "catalog: $STACK_CATALOG_URL (Iceberg REST, warehouse ${STACK_BUCKET}; OAuth client $STACK_OAUTH_CLIENT_ID)"
  fi
}

# stack_write_env writes stack.env: what scripts need to reach the stack.
stack_write_env() {
  (
    umask 077
    {
      echo "# Written by scripts/stack.sh; source it (set -a; . $STACK_ENV_FILE; set +a) to reach the local stack."
      echo "DUCKICELAKE_STACK_ENV=$STACK_ENV_FILE"
      if [[ ${STACK_GATEWAY_UP:-0} == 1 ]]; then
        echo "DUCKICELAKE_GATEWAY_URL=http://$STACK_GATEWAY_ADDR"
        echo "DUCKICELAKE_ADMIN_URL=http://$STACK_ADMIN_ADDR"
        echo "DUCKICELAKE_CONFIG=$STACK_CONFIG"
        echo "DUCKICELAKE_GATEWAY_ROOT_ACCESS_KEY=$STACK_ROOT_ACCESS_KEY"
        echo "DUCKICELAKE_GATEWAY_ROOT_SECRET_KEY=$STACK_ROOT_SECRET_KEY"
        if [[ $STACK_CATALOG == 1 ]]; then
          echo "DUCKICELAKE_CATALOG_URL=$STACK_CATALOG_URL"
          echo "DUCKICELAKE_CATALOG_CREDENTIAL=$STACK_CATALOG_CREDENTIAL"
        fi
      fi
      if [[ $STACK_CATALOG == 1 ]]; then
        echo "DUCKICELAKE_PG_DSN=$STACK_PG_DSN"
        echo "DUCKICELAKE_PG_DSN_KV='$STACK_PG_DSN_KV'"
        echo "DUCKICELAKE_DATA_PATH=$STACK_DATA_PATH"
      fi
      echo "DUCKICELAKE_S3_ENDPOINT=$STACK_S3_ENDPOINT"
      echo "DUCKICELAKE_S3_REGION=$STACK_REGION"
      echo "DUCKICELAKE_S3_ACCESS_KEY=$STACK_S3_ACCESS_KEY"
      echo "DUCKICELAKE_S3_SECRET_KEY=$STACK_S3_SECRET_KEY"
      echo "DUCKICELAKE_BUCKET=$STACK_BUCKET"
      [[ $STACK_EXTERNAL_S3 == 1 ]] || echo "DUCKICELAKE_S3_ROOT=$STACK_S3_ROOT"
    } >"$STACK_ENV_FILE"
  )
}

# stack_stop stops every process this shell started, newest first: SIGTERM,
# then SIGKILL after 10 s.
stack_stop() {
  local i pid
  for ((i = ${#STACK_PIDS[@]} - 1; i >= 0; i--)); do
    stack_kill "${STACK_PIDS[i]}"
  done
  STACK_PIDS=()
  rm -f "$STACK_DIR/stack.pids"
  if [[ ${STACK_PG_STARTED:-0} == 1 ]]; then
    stack_stop_pg
  fi
}

stack_kill() {
  local pid=$1 n
  kill -0 "$pid" 2>/dev/null || return 0
  kill -TERM "$pid" 2>/dev/null || return 0
  for ((n = 0; n < 100; n++)); do
    kill -0 "$pid" 2>/dev/null || return 0
    sleep 0.1
  done
  stack_log "pid $pid did not stop in 10s; killing"
  kill -KILL "$pid" 2>/dev/null || true
}

# stack_up starts the whole stack; on failure it stops what it started.
stack_up() {
  if [[ -s $STACK_DIR/stack.pids ]]; then
    local p
    for p in $(cat "$STACK_DIR/stack.pids"); do
      if kill -0 "$p" 2>/dev/null; then
        stack_die "a stack from $STACK_DIR already runs (pid $p); scripts/stack.sh down first" || return 1
      fi
    done
    rm -f "$STACK_DIR/stack.pids"
  fi
  stack_start_versitygw || {
    stack_stop
    return 1
  }
  if [[ $STACK_CATALOG == 1 ]]; then
    stack_start_pg && stack_init_catalog || {
      stack_stop
      return 1
    }
  fi
  stack_start_gateway || {
    stack_stop
    return 1
  }
  stack_write_env
}

if [[ ${BASH_SOURCE[0]} == "$0" ]]; then
  set -euo pipefail
  case ${1:-} in
    up)
      stack_init
      stack_up
      # Detach: the processes outlive this shell; `down` stops them.
      disown -a
      stack_log "up; stack.env: $STACK_ENV_FILE; scripts/stack.sh down stops it"
      ;;
    down)
      stack_init
      if [[ -s $STACK_DIR/stack.pids ]]; then
        mapfile -t STACK_PIDS <"$STACK_DIR/stack.pids"
        stack_stop
        stack_log "stopped"
      else
        stack_log "nothing to stop in $STACK_DIR"
      fi
      # `up` leaves Postgres running under its data directory.
      [[ $STACK_EXTERNAL_PG == 1 ]] || stack_stop_pg
      ;;
    env)
      cat "${DUCKICELAKE_DEV_DIR:-$stack_repo/.dev}/stack.env"
      ;;
    *)
      sed -n '2,8p' "$0" | sed 's/^# \{0,1\}//' >&2
      exit 2
      ;;
  esac
fi
