#!/usr/bin/env bash
# A private PostgreSQL cluster for development and tests, started from the
# machine's PostgreSQL binaries.
#
# usage: scripts/pg.sh start|stop|status|dsn [--kv]|psql [psql args…]
#
#   start   initdb on first use, start the server, create database "ducklake",
#           print the DSN. Idempotent: a running cluster is left as it is.
#   stop    fast shutdown; nothing to do when it is not running.
#   status  exit 0 and describe the server when it runs, exit 3 otherwise.
#   dsn     print the DSN (URL form; --kv prints libpq keyword=value form, the
#           one DuckDB's "ducklake:postgres:…" ATTACH string takes).
#   psql    run psql on database "ducklake" of this cluster.
#
# The server listens on 127.0.0.1 only and on a unix socket in its data
# directory. TCP logins authenticate with scram-sha-256, so the passwords and
# expiries of the reader roles DuckLake-direct vends are really checked: the
# superuser's password is generated on first start into <cluster dir>/password
# (mode 0600) and is part of every DSN this script prints. The unix socket
# (in the data directory, reachable only by its owner) stays trust, for the
# script's own administration. A cluster made by an older version of this
# script (trust over TCP) is switched over on its next start. It is still a
# throwaway for local work, never a server to expose (README gives the
# production pg_hba.conf).
#
# Env:
#   DUCKICELAKE_PG_DSN   use this server instead: start/stop/status touch
#                        nothing, dsn prints it.
#   DUCKICELAKE_PG_DIR   cluster directory (default <repo>/.dev/pg; data in
#                        data/, log in postgres.log).
#   DUCKICELAKE_PG_PORT  TCP port (default 5433).
#   DUCKICELAKE_PG_BIN   directory holding initdb and pg_ctl (default: found
#                        on PATH, in /usr/local/bin or /usr/lib/postgresql/*/bin).
#
# initdb refuses to run as root, so as root the cluster belongs to the system
# user "postgres" (or "duckicelake", created when neither exists) and every
# server command runs through runuser.
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$(pwd)

dbname=ducklake
superuser=postgres
pgdir=${DUCKICELAKE_PG_DIR:-$repo/.dev/pg}
port=${DUCKICELAKE_PG_PORT:-5433}
data=$pgdir/data
log=$pgdir/postgres.log
pwfile=$pgdir/password

die() {
  echo "pg.sh: $*" >&2
  exit 1
}

usage() {
  sed -n '5,13p' "$0" | sed 's/^# \{0,1\}//' >&2
  exit 2
}

[[ $# -ge 1 ]] || usage
cmd=$1
shift

if [[ -n ${DUCKICELAKE_PG_DSN:-} ]]; then
  case $cmd in
    start | dsn) echo "$DUCKICELAKE_PG_DSN" ;;
    stop) ;;
    status) echo "external server: DUCKICELAKE_PG_DSN is set" ;;
    psql) exec psql "$DUCKICELAKE_PG_DSN" "$@" ;;
    *) usage ;;
  esac
  exit 0
fi

# find_bin prints the directory holding initdb and pg_ctl, preferring an
# explicit setting, then PATH, then the newest Debian-style install.
find_bin() {
  if [[ -n ${DUCKICELAKE_PG_BIN:-} ]]; then
    [[ -x $DUCKICELAKE_PG_BIN/pg_ctl ]] || die "no pg_ctl in DUCKICELAKE_PG_BIN=$DUCKICELAKE_PG_BIN"
    echo "$DUCKICELAKE_PG_BIN"
    return
  fi
  local p
  if p=$(command -v pg_ctl 2>/dev/null) && [[ -x $(dirname "$p")/initdb ]]; then
    # Resolve symlinks (/usr/local/bin/pg_ctl -> /usr/lib/postgresql/15/bin)
    # so psql and createdb come from the same installation as the server.
    dirname "$(readlink -f "$p")"
    return
  fi
  for p in /usr/local/bin /usr/local/pgsql/bin $(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V -r); do
    if [[ -x $p/pg_ctl && -x $p/initdb ]]; then
      dirname "$(readlink -f "$p/pg_ctl")"
      return
    fi
  done
  die "PostgreSQL server binaries (initdb, pg_ctl) not found; install them (Debian: apt-get install postgresql) or set DUCKICELAKE_PG_BIN"
}

# password prints the superuser's password (empty before the first start).
password() { if [[ -r $pwfile ]]; then cat "$pwfile"; fi; }

# dsn_of prints the DSN for a server on the given port, with the password.
# The password is alphanumeric: neither form needs to quote it.
dsn_of() {
  local pw
  pw=$(password)
  if [[ ${1:-} == --kv ]]; then
    echo "host=127.0.0.1 port=$2 user=$superuser${pw:+ password=$pw} dbname=$dbname sslmode=disable"
  else
    echo "postgres://$superuser${pw:+:$pw}@127.0.0.1:$2/$dbname?sslmode=disable"
  fi
}

# running_port prints the port of the running server, read from its pid file,
# and fails when no server runs on this data directory.
running_port() {
  [[ -f $data/postmaster.pid ]] || return 1
  as_owner "$bin/pg_ctl" status -D "$data" >/dev/null 2>&1 || return 1
  sed -n 4p "$data/postmaster.pid"
}

runas=
as_owner() {
  if [[ -n $runas ]]; then
    runuser -u "$runas" -- "$@"
  else
    "$@"
  fi
}

# pick_owner decides which OS user owns the cluster when we are root.
pick_owner() {
  [[ $(id -u) -eq 0 ]] || return 0
  if [[ -d $data ]]; then
    runas=$(stat -c %U "$data")
    [[ $runas != root ]] || die "$data is owned by root; remove it (rm -rf $pgdir) and start again"
    return
  fi
  if id -u postgres >/dev/null 2>&1; then
    runas=postgres
  else
    id -u duckicelake >/dev/null 2>&1 ||
      useradd --system --no-create-home --home-dir /nonexistent --shell /usr/sbin/nologin duckicelake
    runas=duckicelake
  fi
}

bin=$(find_bin)
pick_owner

# Only start and stop need the cluster to exist; status and dsn just look.
case $cmd in
  start) ;;
  stop)
    if running_port >/dev/null; then
      as_owner "$bin/pg_ctl" stop -D "$data" -m fast -w >/dev/null
      echo "pg.sh: stopped $data"
    fi
    exit 0
    ;;
  status)
    if p=$(running_port); then
      echo "running: $data on 127.0.0.1:$p (pid $(sed -n 1p "$data/postmaster.pid"), owner ${runas:-$(id -un)})"
      exit 0
    fi
    echo "not running: $data"
    exit 3
    ;;
  dsn)
    p=$(running_port) || p=$port
    dsn_of "${1:-}" "$p"
    exit 0
    ;;
  psql)
    p=$(running_port) || die "not running; scripts/pg.sh start first"
    PGPASSWORD=$(password) exec "$bin/psql" -X -h 127.0.0.1 -p "$p" -U "$superuser" -d "$dbname" "$@"
    ;;
  *) usage ;;
esac

# start
if p=$(running_port); then
  dsn_of "${1:-}" "$p"
  exit 0
fi

mkdir -p "$pgdir"
if [[ -n $runas ]]; then
  chown "$runas" "$pgdir"
  runuser -u "$runas" -- test -x "$pgdir" ||
    die "user $runas cannot reach $pgdir (a parent directory is not traversable); set DUCKICELAKE_PG_DIR to a path it can reach"
fi

# The superuser's password, generated once (alphanumeric, 32 characters).
if [[ ! -s $pwfile ]]; then
  # (No pipe into head: under pipefail the writer's SIGPIPE would fail the script.)
  pw=$(head -c 512 /dev/urandom | LC_ALL=C tr -dc 'A-Za-z0-9')
  (umask 077 && printf '%s' "${pw:0:32}" >"$pwfile")
fi
chmod 600 "$pwfile"

if [[ ! -f $data/PG_VERSION ]]; then
  rm -rf "$data"
  as_owner "$bin/initdb" -D "$data" -U "$superuser" --auth-local=trust --auth-host=scram-sha-256 \
    --encoding=UTF8 --locale=C >"$pgdir/initdb.log" 2>&1 ||
    {
      cat "$pgdir/initdb.log" >&2
      die "initdb failed"
    }
  # Durability is not wanted from a throwaway cluster; speed is.
  cat >>"$data/postgresql.conf" <<EOF

# scripts/pg.sh
listen_addresses = '127.0.0.1'
unix_socket_directories = '$data'
fsync = off
synchronous_commit = off
full_page_writes = off
max_connections = 200
password_encryption = scram-sha-256
EOF
fi

# Clusters from before scram: TCP lines that trust become scram-sha-256
# (read at start, below).
if grep -Eq '^[[:space:]]*host.*[[:space:]]trust[[:space:]]*$' "$data/pg_hba.conf"; then
  as_owner sed -i -E '/^[[:space:]]*host/ s/[[:space:]]trust[[:space:]]*$/ scram-sha-256/' "$data/pg_hba.conf"
fi

touch "$log"
[[ -z $runas ]] || chown "$runas" "$log"
# The port is given at start (not written into the configuration) so one
# cluster can be started on another port by setting DUCKICELAKE_PG_PORT.
if ! as_owner "$bin/pg_ctl" start -D "$data" -l "$log" -w -t 60 -o "-p $port" >/dev/null; then
  tail -n 20 "$log" >&2
  die "could not start PostgreSQL on 127.0.0.1:$port (see $log)"
fi

# Administration goes over the data directory's unix socket (trust), which
# also sets the password on a cluster that has none yet (or another one).
psql=("$bin/psql" -X -q -v ON_ERROR_STOP=1 -h "$data" -p "$port" -U "$superuser")
"${psql[@]}" -d postgres -c "ALTER ROLE $superuser PASSWORD '$(password)'" >/dev/null
if [[ $("${psql[@]}" -d postgres -tAc "SELECT 1 FROM pg_database WHERE datname = '$dbname'") != 1 ]]; then
  "${psql[@]}" -d postgres -c "CREATE DATABASE $dbname" >/dev/null
fi
dsn_of "${1:-}" "$port"
