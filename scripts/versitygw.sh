#!/usr/bin/env bash
# Builds versitygw (Apache-2.0, the S3 backend of the dev stack and the tests)
# into bin/ from the Go module proxy, unless bin/versitygw already is that version.
# About two minutes on a cold module cache; seconds afterwards.
#
# Env: VERSITYGW_VERSION (default v1.8.0), VERSITYGW_BIN (default <repo>/bin/versitygw).
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$(pwd)

version=${VERSITYGW_VERSION:-v1.8.0}
bin=${VERSITYGW_BIN:-$repo/bin/versitygw}
module=github.com/versity/versitygw

# The binary reports "git" as its own version when built by go install, so ask
# the Go toolchain which module version it was built from.
built_version() {
  go version -m "$1" 2>/dev/null | awk -v m="$module" '$1 == "mod" && $2 == m { print $3 }'
}

if [[ -x $bin ]]; then
  have=$(built_version "$bin")
  if [[ $have == "$version" ]]; then
    echo "versitygw $version: $bin (up to date)"
    exit 0
  fi
  echo "versitygw: $bin is ${have:-of unknown version}, want $version; rebuilding"
fi

mkdir -p "$(dirname "$bin")"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
echo "versitygw $version: building with go install (about 2 minutes on a cold module cache)..."
start=$SECONDS
# Build into a temporary GOBIN and move into place, so an interrupted build
# never leaves a half-written binary that looks installed.
GOBIN=$tmp GOFLAGS=-buildvcs=false go install "$module/cmd/versitygw@$version" &
build=$!
while kill -0 "$build" 2>/dev/null; do
  sleep 1
  if (((SECONDS - start) % 15 == 0)) && kill -0 "$build" 2>/dev/null; then
    echo "versitygw: still building ($((SECONDS - start))s)..."
  fi
done
wait "$build"
mv -f "$tmp/versitygw" "$bin"
echo "versitygw $version: built $bin in $((SECONDS - start))s"
