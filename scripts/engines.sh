#!/usr/bin/env bash
# The Java engines the engines suite runs as real clients (test/engines/),
# fetched from Maven Central into a cache directory once:
#
#   scripts/engines.sh fetch spark   the Iceberg Spark runtime and AWS bundle jars
#                                    (pyspark itself is pinned in test/requirements.txt)
#   scripts/engines.sh fetch trino   trino-server (tar.gz, unpacked) and the trino CLI
#   scripts/engines.sh path spark|trino   print where they are (after fetch)
#
# Env: DUCKICELAKE_ENGINES_CACHE (default ~/.cache/duckicelake/engines),
# MAVEN_CENTRAL (default https://repo1.maven.org/maven2).
# Every file is checked against Maven Central's .sha1 before it is kept, so
# an interrupted download is fetched again rather than used.
set -euo pipefail

ICEBERG_VERSION=1.12.0
SPARK_SCALA=4.1_2.13
TRINO_VERSION=476

cache=${DUCKICELAKE_ENGINES_CACHE:-${HOME:-/root}/.cache/duckicelake/engines}
central=${MAVEN_CENTRAL:-https://repo1.maven.org/maven2}

die() { echo "engines.sh: $*" >&2; exit 1; }

# get GROUP_PATH ARTIFACT VERSION FILE → downloads FILE into $cache/maven once.
get() {
  local url=$central/$1/$2/$3/$4 out=$cache/maven/$4
  [[ -s $out ]] && return 0
  mkdir -p "$cache/maven"
  echo "engines.sh: fetching $4" >&2
  curl -fsSL --retry 3 -o "$out.part" "$url" || die "download failed: $url"
  local want got
  want=$(curl -fsSL --retry 3 "$url.sha1" | cut -c1-40) || die "no checksum: $url.sha1"
  got=$(sha1sum "$out.part" | cut -d' ' -f1)
  [[ $want == "$got" ]] || { rm -f "$out.part"; die "checksum mismatch for $4 ($got, want $want)"; }
  mv "$out.part" "$out"
}

fetch_spark() {
  get org/apache/iceberg "iceberg-spark-runtime-$SPARK_SCALA" $ICEBERG_VERSION "iceberg-spark-runtime-$SPARK_SCALA-$ICEBERG_VERSION.jar"
  get org/apache/iceberg iceberg-aws-bundle $ICEBERG_VERSION "iceberg-aws-bundle-$ICEBERG_VERSION.jar"
}

fetch_trino() {
  get io/trino trino-server $TRINO_VERSION "trino-server-$TRINO_VERSION.tar.gz"
  get io/trino trino-cli $TRINO_VERSION "trino-cli-$TRINO_VERSION-executable.jar"
  local dir=$cache/trino-server-$TRINO_VERSION
  if [[ ! -x $dir/bin/launcher ]]; then
    rm -rf "$dir.part" && mkdir -p "$dir.part"
    tar -xzf "$cache/maven/trino-server-$TRINO_VERSION.tar.gz" -C "$dir.part" --strip-components=1
    rm -rf "$dir" && mv "$dir.part" "$dir"
  fi
}

path() {
  case $1 in
    spark) echo "$cache/maven/iceberg-spark-runtime-$SPARK_SCALA-$ICEBERG_VERSION.jar,$cache/maven/iceberg-aws-bundle-$ICEBERG_VERSION.jar" ;;
    trino) echo "$cache/trino-server-$TRINO_VERSION $cache/maven/trino-cli-$TRINO_VERSION-executable.jar" ;;
    *) die "unknown engine $1" ;;
  esac
}

case ${1:-} in
  fetch)
    case ${2:-} in
      spark) fetch_spark ;;
      trino) fetch_trino ;;
      *) die "usage: engines.sh fetch spark|trino" ;;
    esac
    path "$2"
    ;;
  path) path "${2:-}" ;;
  *) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 64 ;;
esac
