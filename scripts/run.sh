#!/usr/bin/env bash
# make run: builds everything, brings up the local stack on its dev ports
# (versitygw on 127.0.0.1:7070 over .dev/s3/, Postgres on 127.0.0.1:5433 in
# .dev/pg/ holding the DuckLake catalog, the gateway on 127.0.0.1:9000, the
# Iceberg REST catalog with admin/metrics on 127.0.0.1:8181), writes
# .dev/stack.env, prints minted credentials, the catalog's OAuth client and
# snippets that work as pasted (DuckDB httpfs, DuckDB ducklake writing through
# the gateway, DuckDB iceberg and PyIceberg reading through the catalog), and
# runs until Ctrl-C, which stops all of it.
#
# Every port and path is overridable; see scripts/stack.sh for the list
# (DUCKICELAKE_DEV_DIR, DUCKICELAKE_S3_PORT, DUCKICELAKE_GATEWAY_ADDR,
# DUCKICELAKE_ADMIN_ADDR, DUCKICELAKE_PG_PORT, DUCKICELAKE_PG_DSN,
# DUCKICELAKE_BUCKET, DUCKICELAKE_S3_ENDPOINT…).
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$(pwd)
# shellcheck source=scripts/stack.sh
source scripts/stack.sh

echo "== build"
if [[ -n ${DUCKICELAKE_BIN:-} ]]; then
  echo "using $DUCKICELAKE_BIN (DUCKICELAKE_BIN; not rebuilt)"
else
  mkdir -p bin
  go build -ldflags "-X main.version=$(git describe --always --dirty 2>/dev/null || echo dev)" \
    -o bin/duckicelake ./cmd/duckicelake
  echo "bin/duckicelake built"
fi
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

if [[ ${STACK_GATEWAY_UP:-0} == 1 && ${STACK_CATALOG:-0} == 1 ]]; then
  # DuckDB writes the DuckLake catalog with a credential for its data path.
  lake=$("$STACK_BIN" creds mint --principal dev --grant "$bucket:data/:rw" --ttl 12h --config "$STACK_CONFIG" --format env)
  lkey=$(sed -n 's/^AWS_ACCESS_KEY_ID=//p' <<<"$lake")
  lsecret=$(sed -n 's/^AWS_SECRET_ACCESS_KEY=//p' <<<"$lake")
  ltoken=$(sed -n 's/^AWS_SESSION_TOKEN=//p' <<<"$lake")
  [[ -n $lkey && -n $lsecret && -n $ltoken ]] || stack_die "creds mint printed no credential"
  (
    umask 077
    printf 'AWS_ACCESS_KEY_ID=%s\nAWS_SECRET_ACCESS_KEY=%s\nAWS_SESSION_TOKEN=%s\n' "$lkey" "$lsecret" "$ltoken" >"$STACK_DIR/ducklake.env"
  )
  ducklake_sql=$STACK_DIR/ducklake.sql
  iceberg_sql=$STACK_DIR/iceberg.sql
  # Not pyiceberg.py: the script's directory comes first on sys.path, and
  # that name would shadow the package.
  pyiceberg_py=$STACK_DIR/pyiceberg_demo.py
  (umask 077; cat >"$ducklake_sql") <<EOF
-- DuckDB 1.5.x writes the DuckLake catalog: metadata in Postgres, Parquet
-- through the gateway with a credential for s3://$bucket/data/ (12 hours).
SET extension_directory = '$repo/.venv/duckdb-extensions';
SET autoinstall_known_extensions = false;
LOAD httpfs; LOAD ducklake; LOAD postgres;
CREATE OR REPLACE SECRET lake_s3 (
  TYPE S3, KEY_ID '$lkey', SECRET '$lsecret',
  SESSION_TOKEN '$ltoken',
  ENDPOINT '$STACK_GATEWAY_ADDR', URL_STYLE 'path', USE_SSL false, REGION '$STACK_REGION'
);
ATTACH 'ducklake:postgres:$STACK_PG_DSN_KV' AS lake (DATA_PATH '$STACK_DATA_PATH');
-- Schema demo, not DuckDB's default "main": DuckDB's iceberg extension
-- (1.5.5) cannot address an Iceberg namespace called main.
CREATE SCHEMA IF NOT EXISTS lake.demo;
CREATE TABLE IF NOT EXISTS lake.demo.events (id BIGINT, label VARCHAR);
INSERT INTO lake.demo.events SELECT range, 'row ' || range FROM range(1000);
SELECT (SELECT count(*) FROM lake.demo.events) AS n, (SELECT max(snapshot_id) FROM ducklake_snapshots('lake')) AS snapshot;
EOF
  (umask 077; cat >"$iceberg_sql") <<EOF
-- DuckDB 1.5.x reads the same tables through the Iceberg REST catalog, with
-- the credentials it vends for the gateway.
SET extension_directory = '$repo/.venv/duckdb-extensions';
SET autoinstall_known_extensions = false;
LOAD httpfs; LOAD avro; LOAD iceberg;
CREATE OR REPLACE SECRET lake_catalog (
  TYPE ICEBERG, CLIENT_ID '$STACK_OAUTH_CLIENT_ID', CLIENT_SECRET '$STACK_OAUTH_CLIENT_SECRET',
  OAUTH2_SERVER_URI '$STACK_CATALOG_URL/v1/oauth/tokens'
);
ATTACH '$bucket' AS ice (TYPE iceberg, ENDPOINT '$STACK_CATALOG_URL', SECRET lake_catalog,
  ACCESS_DELEGATION_MODE 'vended_credentials');
SELECT count(*) AS n FROM ice.demo.events;
EOF
  (umask 077; cat >"$pyiceberg_py") <<EOF
# PyIceberg reads the same tables through the Iceberg REST catalog, with the
# credentials it vends for the gateway.
from pyiceberg.catalog import load_catalog

catalog = load_catalog(
    "$bucket",
    type="rest",
    uri="$STACK_CATALOG_URL",
    credential="$STACK_CATALOG_CREDENTIAL",
    warehouse="$bucket",
    **{
        "oauth2-server-uri": "$STACK_CATALOG_URL/v1/oauth/tokens",
        "header.X-Iceberg-Access-Delegation": "vended-credentials",
    },
)
print(catalog.list_tables("demo"))
table = catalog.load_table("demo.events")
print(table.metadata.current_snapshot_id, table.scan().to_arrow().num_rows)
EOF
  cat <<EOF

== catalog: Iceberg REST on $STACK_CATALOG_URL, warehouse $bucket
  OAuth2 client   $STACK_CATALOG_CREDENTIAL  (id:secret; every scope)
  DuckLake        ducklake:postgres:$STACK_PG_DSN_KV  DATA_PATH $STACK_DATA_PATH

== DuckDB writes through DuckLake ($ducklake_sql)
EOF
  cat "$ducklake_sql"
  echo
  echo "== DuckDB reads through the Iceberg REST catalog ($iceberg_sql)"
  cat "$iceberg_sql"
  echo
  echo "== PyIceberg reads through the Iceberg REST catalog ($pyiceberg_py)"
  cat "$pyiceberg_py"
  echo
  echo "Run them as they are, DuckLake first (it creates demo.events):"
  echo "  .venv/bin/python -c 'import sys, duckdb; print(duckdb.connect().execute(sys.stdin.read()).fetchall())' < $ducklake_sql"
  echo "  .venv/bin/python -c 'import sys, duckdb; print(duckdb.connect().execute(sys.stdin.read()).fetchall())' < $iceberg_sql"
  echo "  .venv/bin/python $pyiceberg_py"
  cat <<EOF

== governance: the seeds' sample with its mask (README "Governance"): bob reads analytics.customers.email as al***, alice in the clear
  $STACK_BIN seed -governed --config $STACK_CONFIG

== agents: the seeds' 60-second walkthrough (README "Agents")
  $STACK_BIN seed --config $STACK_CONFIG
  DUCKICELAKE_DEMO_CLIENT=$STACK_CATALOG_CREDENTIAL $STACK_BIN demo -catalog $STACK_CATALOG_URL -extension-directory $repo/.venv/duckdb-extensions
  MCP over streamable HTTP: $STACK_CATALOG_URL/mcp (Authorization: Bearer <token from $STACK_CATALOG_URL/v1/oauth/tokens>)
  MCP over stdio:           DUCKICELAKE_MCP_CLIENT=$STACK_CATALOG_CREDENTIAL $STACK_BIN mcp -catalog $STACK_CATALOG_URL -principal <who> -extension-directory $repo/.venv/duckdb-extensions
EOF
elif [[ ${STACK_GATEWAY_UP:-0} == 1 ]]; then
  echo
  echo "The catalog is off (DUCKICELAKE_STACK_CATALOG=0 or no init command): the gateway runs alone."
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
  if [[ ${STACK_CATALOG:-0} == 1 ]]; then
    cat <<EOF
  catalog     $STACK_CATALOG_URL  (Iceberg REST /v1/…, OAuth2 client $STACK_OAUTH_CLIENT_ID)
  postgres    $STACK_PG_DSN$([[ $STACK_EXTERNAL_PG == 1 ]] || echo "  (data in $STACK_PG_DIR)")
EOF
  fi
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
