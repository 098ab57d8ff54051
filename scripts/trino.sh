#!/usr/bin/env bash
# make interop-trino: Trino 476 (Iceberg connector, REST catalog, vended
# credentials through the gateway) as a real client of a fresh stack, running
# test/engines/interop_trino.py with pytest. The server and CLI come from
# Maven Central (scripts/engines.sh fetch trino); Trino needs Java 24+
# (TRINO_JAVA_HOME, default the newest /usr/lib/jvm/*-25-* or $JAVA_HOME).
#
# Like scripts/test.sh it starts versitygw, a private Postgres with the
# DuckLake catalog and `duckicelake serve` on free ports in a scratch
# directory, then Trino on a free port, and stops everything afterwards.
# The last line is pytest's, plus "trino: N passed, N failed" (the plain
# form CI reads). Options (env): TRINO_KEEP=1 keeps the scratch directory;
# TRINO_PYTEST_ARGS adds pytest arguments (e.g. -k expire).
set -uo pipefail
cd "$(dirname "$0")/.."
repo=$(pwd)
# shellcheck source=scripts/stack.sh
source scripts/stack.sh

die() { echo "trino: $*" >&2; exit 3; }

java_home=${TRINO_JAVA_HOME:-}
if [[ -z $java_home ]]; then
  for d in /usr/lib/jvm/*-25-* /usr/lib/jvm/*25*; do
    [[ -x $d/bin/java ]] && { java_home=$d; break; }
  done
fi
[[ -n $java_home ]] || java_home=${JAVA_HOME:-}
[[ -n $java_home && -x $java_home/bin/java ]] || die "no Java 24+ found (set TRINO_JAVA_HOME)"

read -r server cli < <(scripts/engines.sh fetch trino | tail -n 1) || die "scripts/engines.sh fetch trino failed"
[[ -x $server/bin/launcher && -f $cli ]] || die "Trino is not where engines.sh put it ($server, $cli)"

mkdir -p bin
go build -o bin/duckicelake ./cmd/duckicelake || die "go build failed"
scripts/versitygw.sh >/dev/null || die "scripts/versitygw.sh failed"
[[ -x .venv/bin/python ]] || scripts/venv.sh || die "scripts/venv.sh failed"

scratch=$(mktemp -d "${TMPDIR:-/tmp}/duckicelake-trino.XXXXXX")
chmod 755 "$scratch"
trino_pid=
finish() {
  local rc=$?
  if [[ -n $trino_pid ]] && kill -0 "$trino_pid" 2>/dev/null; then
    stack_kill "$trino_pid"
  fi
  stack_stop
  if [[ ${TRINO_KEEP:-0} == 1 || $rc != 0 ]]; then
    echo "trino: logs and data kept in $scratch"
  else
    rm -rf "$scratch"
  fi
  exit "$rc"
}
stack_traps finish

# Short-lived tokens, so that the run outlives Trino's first one and its
# OAuth2 refresh is exercised (interop_trino.py's last test waits for that
# if the rest was quicker). Vended credentials end with the token, so it
# must still outlast any one query by far.
token_ttl=180
export DUCKICELAKE_OAUTH_TOKEN_TTL=${token_ttl}s
stack_isolated_init "$scratch" DUCKICELAKE_ENGINES_CACHE DUCKICELAKE_OAUTH_TOKEN_TTL
stack_start_versitygw || die "versitygw did not start"
stack_start_catalog || die "Postgres or duckicelake init failed"
stack_start_gateway || die "duckicelake serve did not start (log: $STACK_DIR/duckicelake.log)"
stack_write_env

# Trino's configuration: one node, coordinator and worker; the lake
# catalog is the Iceberg connector on our REST catalog, asking for vended
# credentials and reading and writing through the gateway.
port=$(stack_free_ports 1)
etc=$scratch/trino/etc
mkdir -p "$etc/catalog" "$scratch/trino/data" "$scratch/trino/plugin"
ln -s "$server/plugin/iceberg" "$scratch/trino/plugin/iceberg"
cat >"$etc/node.properties" <<P
node.environment=duckicelake
node.id=duckicelake-interop
node.data-dir=$scratch/trino/data
# The node reaches itself on loopback (the default, the first interface's address, may be unroutable).
node.internal-address=127.0.0.1
P
cat >"$etc/config.properties" <<P
coordinator=true
node-scheduler.include-coordinator=true
http-server.http.port=$port
discovery.uri=http://127.0.0.1:$port
# Only the Iceberg connector: loading all ~60 plugins is most of the start-up.
plugin.dir=$scratch/trino/plugin
query.max-memory=1GB
query.max-memory-per-node=512MB
P
cat >"$etc/jvm.config" <<P
-server
-Xmx1500M
-XX:+UseG1GC
-XX:+ExitOnOutOfMemoryError
-Djdk.attach.allowAttachSelf=true
P
echo "io.trino=INFO" >"$etc/log.properties"
cat >"$etc/catalog/lake.properties" <<P
connector.name=iceberg
iceberg.catalog.type=rest
iceberg.rest-catalog.uri=$STACK_CATALOG_URL
iceberg.rest-catalog.warehouse=$STACK_BUCKET
iceberg.rest-catalog.security=OAUTH2
iceberg.rest-catalog.oauth2.credential=$STACK_CATALOG_CREDENTIAL
iceberg.rest-catalog.oauth2.server-uri=$STACK_CATALOG_URL/v1/oauth/tokens
iceberg.rest-catalog.oauth2.scope=catalog
iceberg.rest-catalog.vended-credentials-enabled=true
iceberg.unique-table-location=true
# expire_snapshots(retention_threshold => '0s') in the suite.
iceberg.expire-snapshots.min-retention=0s
fs.native-s3.enabled=true
s3.endpoint=http://$STACK_GATEWAY_ADDR
s3.region=$STACK_REGION
s3.path-style-access=true
P
echo "trino: starting Trino on 127.0.0.1:$port (log: $scratch/trino/server.log)"
JAVA_HOME=$java_home PATH=$java_home/bin:$PATH "$server/bin/launcher" run --etc-dir "$etc" --data-dir "$scratch/trino/data" \
  >"$scratch/trino/server.log" 2>&1 &
trino_pid=$!
for ((i = 0; i < 600; i++)); do
  if curl -fsS -m 2 "http://127.0.0.1:$port/v1/info" 2>/dev/null | grep -q '"starting":false'; then
    break
  fi
  kill -0 "$trino_pid" 2>/dev/null || { tail -n 40 "$scratch/trino/server.log" >&2; die "Trino exited while starting"; }
  sleep 0.5
done
curl -fsS -m 2 "http://127.0.0.1:$port/v1/info" | grep -q '"starting":false' || die "Trino did not start in 300 s"
echo "trino: up"

set -a
# shellcheck disable=SC1090
. "$STACK_ENV_FILE"
set +a
export DUCKICELAKE_BIN=$STACK_BIN TRINO_SERVER=http://127.0.0.1:$port TRINO_CLI=$cli TRINO_JAVA=$java_home/bin/java \
  TRINO_TOKEN_TTL=$token_ttl
# shellcheck disable=SC2086 # TRINO_PYTEST_ARGS is a list
.venv/bin/python -m pytest test/engines/interop_trino.py -p no:cacheprovider -q -rfEsx --junitxml="$scratch/trino.xml" \
  ${TRINO_PYTEST_ARGS:-}
prc=$?
if [[ -s $scratch/trino.xml ]] && python3 scripts/testsummary.py junit "$scratch/trino.xml" "$scratch/trino.counts"; then
  read -r p f s <"$scratch/trino.counts"
  ((prc != 0 && f == 0)) && f=1
  echo "trino: $p passed, $f failed, $s skipped"
else
  echo "trino: 0 passed, 1 failed"
  prc=1
fi
exit "$prc"
