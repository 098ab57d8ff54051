#!/usr/bin/env bash
# make run: builds everything, brings up the local stack on its dev ports
# (versitygw on 127.0.0.1:7070 over .dev/s3/, the gateway on 127.0.0.1:9000,
# admin/metrics on 127.0.0.1:8181), writes .dev/stack.env, prints a minted demo
# credential with a DuckDB snippet, and runs until Ctrl-C, which stops all of it.
#
# Every port and path is overridable; see scripts/stack.sh for the list
# (DUCKICELAKE_DEV_DIR, DUCKICELAKE_S3_PORT, DUCKICELAKE_GATEWAY_ADDR,
# DUCKICELAKE_ADMIN_ADDR, DUCKICELAKE_BUCKET, DUCKICELAKE_S3_ENDPOINT…).
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$(pwd)
# shellcheck source=scripts/stack.sh
source scripts/stack.sh

echo "== build"
mkdir -p bin
go build -ldflags "-X main.version=$(git describe --always --dirty 2>/dev/null || echo dev)" \
  -o bin/duckicelake ./cmd/duckicelake
echo "bin/duckicelake built"
scripts/versitygw.sh
# The venv carries DuckDB and its httpfs extension for the snippet below
# (DuckDB cannot download extensions here). Seconds when it is up to date.
venv_ok=0
if [[ ${DUCKICELAKE_NO_VENV:-0} != 1 ]]; then
  if scripts/venv.sh; then venv_ok=1; else echo "run: scripts/venv.sh failed; the DuckDB snippet needs it" >&2; fi
fi

stack_init
stopping=0
shutdown() {
  ((stopping)) && return
  stopping=1
  echo
  echo "== stopping the stack"
  stack_stop
  echo "stopped."
}
trap shutdown EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

echo "== start (state in $STACK_DIR)"
stack_up

bucket=$STACK_BUCKET
if [[ ${STACK_GATEWAY_UP:-0} != 1 ]]; then
  cat <<EOF

The gateway is not part of this build yet ($STACK_BIN has no serve command), so
only the S3 backend runs: $STACK_S3_ENDPOINT (root keys in $STACK_ENV_FILE).
EOF
else
  echo "== demo credential (principal demo, read/write under s3://$bucket/demo/, 12 hours)"
  minted=$("$STACK_BIN" creds mint --principal demo --grant "$bucket:demo/:rw" --ttl 12h --config "$STACK_CONFIG")
  echo "$minted"
  # The same credential for the snippet below: its text output has one
  # "AWS_ACCESS_KEY_ID   value" line per part.
  key=$(awk '$1 == "AWS_ACCESS_KEY_ID" { print $2; exit }' <<<"$minted")
  secret=$(awk '$1 == "AWS_SECRET_ACCESS_KEY" { print $2; exit }' <<<"$minted")
  token=$(awk '$1 == "AWS_SESSION_TOKEN" { print $2; exit }' <<<"$minted")
  if [[ -z $key || -z $secret || -z $token ]]; then
    # The text layout changed: mint one for the snippet in the stable env format.
    creds=$("$STACK_BIN" creds mint --principal demo --grant "$bucket:demo/:rw" --ttl 12h --config "$STACK_CONFIG" --format env)
    key=$(sed -n 's/^AWS_ACCESS_KEY_ID=//p' <<<"$creds")
    secret=$(sed -n 's/^AWS_SECRET_ACCESS_KEY=//p' <<<"$creds")
    token=$(sed -n 's/^AWS_SESSION_TOKEN=//p' <<<"$creds")
  fi
  [[ -n $key && -n $secret && -n $token ]] || stack_die "creds mint printed no credential"
  creds=$(printf 'AWS_ACCESS_KEY_ID=%s\nAWS_SECRET_ACCESS_KEY=%s\nAWS_SESSION_TOKEN=%s' "$key" "$secret" "$token")
  # The demo credential goes in a file of its own (0600) for scripts.
  (
    umask 077
    printf '%s\n' "$creds" >"$STACK_DIR/demo.env"
  )

  demo_sql=$STACK_DIR/demo.sql
  (umask 077; cat >"$demo_sql") <<EOF
-- DuckDB 1.5.x through the gateway with the demo credential (scripts/run.sh).
-- The two SETs make LOAD httpfs take the extension from the venv (DuckDB
-- cannot download it here); a DuckDB that can download needs only LOAD httpfs.
SET extension_directory = '$repo/.venv/duckdb-extensions';
SET autoinstall_known_extensions = false;
LOAD httpfs;
CREATE OR REPLACE SECRET demo (
  TYPE S3, KEY_ID '$key', SECRET '$secret',
  SESSION_TOKEN '$token',
  ENDPOINT '$STACK_GATEWAY_ADDR', URL_STYLE 'path', USE_SSL false, REGION '$STACK_REGION'
);
COPY (SELECT range AS id, 'row ' || range AS label FROM range(1000))
  TO 's3://$bucket/demo/x.parquet' (FORMAT parquet);
SELECT count(*) AS n, sum(id) AS total FROM read_parquet('s3://$bucket/demo/*.parquet');
EOF
  echo
  echo "== DuckDB snippet (also in $demo_sql)"
  cat "$demo_sql"
  echo
  echo "Run it as is with the venv's DuckDB:"
  echo "  .venv/bin/python -c 'import sys, duckdb; print(duckdb.connect().execute(sys.stdin.read()).fetchall())' < $demo_sql"
  ((venv_ok)) || echo "  (after scripts/venv.sh has created .venv)"
fi

cat <<EOF

== running
  S3 backend  $STACK_S3_ENDPOINT  (bucket $bucket$([[ $STACK_EXTERNAL_S3 == 1 ]] || echo ", files in $STACK_S3_ROOT"))
EOF
if [[ ${STACK_GATEWAY_UP:-0} == 1 ]]; then
  cat <<EOF
  gateway     http://$STACK_GATEWAY_ADDR
  admin       http://$STACK_ADMIN_ADDR  (/healthz, /readyz, /metrics)
  config      $STACK_CONFIG
EOF
fi
cat <<EOF
  stack.env   $STACK_ENV_FILE  (set -a; . $STACK_ENV_FILE; set +a)
  logs        $STACK_DIR/*.log
Ctrl-C stops everything.
EOF

# Wait until Ctrl-C, or until one of the processes dies (then stop the rest).
while :; do
  for pid in "${STACK_PIDS[@]}"; do
    if ! kill -0 "$pid" 2>/dev/null; then
      echo "stack: process $pid exited; see the logs in $STACK_DIR" >&2
      exit 1
    fi
  done
  sleep 1
done
