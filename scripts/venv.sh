#!/usr/bin/env bash
# Creates or refreshes the pinned Python test venv at <repo>/.venv.
#
#   scripts/venv.sh            install (skipped when .venv matches the pins)
#   scripts/venv.sh --relock   re-resolve test/requirements.txt in a scratch venv and rewrite
#                              test/requirements.lock (needs the package registry; review the diff)
#
# Installs `pip install -r test/requirements.txt -c test/requirements.lock`; a stamp file holding
# the hash of both files and the interpreter version makes reruns free. Env: PYTHON (default
# python3) picks the interpreter.
#
# DuckDB extensions, offline: each duckdb-extension-<name> wheel ships
# site-packages/duckdb_extension_<name>/extensions/v1.5.5/<name>.duckdb_extension. DuckDB only
# loads by name from <extension_directory>/v1.5.5/linux_amd64/, so the recipe is
#     SET extension_directory = '<.venv>/duckdb-extensions';   -- or config={...} at connect
#     INSTALL '<site-packages>/duckdb_extension_httpfs/extensions/v1.5.5/httpfs.duckdb_extension';
#     LOAD httpfs;
# with autoinstall_known_extensions=false (nothing reaches for the extension repository) and
# autoload_known_extensions=true. iceberg autoloads avro when it initialises, so avro is pinned
# too. test/duckdb_ext.py does this (connect() returns a connection with httpfs, avro, iceberg,
# ducklake and postgres loaded); this script runs it once so the extensions are installed.
set -euo pipefail
cd "$(dirname "$0")/.."

PYTHON=${PYTHON:-python3}
VENV=.venv
REQ=test/requirements.txt
LOCK=test/requirements.lock
STAMP=$VENV/.duckicelake-stamp

die() {
	echo "venv.sh: $*" >&2
	exit 1
}

command -v "$PYTHON" >/dev/null || die "no $PYTHON on PATH (need CPython >= 3.10 with the venv module)"
"$PYTHON" -c 'import sys; sys.exit(sys.version_info < (3, 10))' ||
	die "$("$PYTHON" --version 2>&1) is too old: need >= 3.10"
[[ -f $REQ && -f $LOCK ]] || die "missing $REQ or $LOCK"

if [[ ${1:-} == --relock ]]; then
	scratch=$(mktemp -d)
	trap 'rm -rf "$scratch"' EXIT
	echo "venv.sh: resolving $REQ in a scratch venv"
	"$PYTHON" -m venv "$scratch/venv" || die "python -m venv failed"
	"$scratch/venv/bin/pip" install --disable-pip-version-check -q -r "$REQ" ||
		die "pip could not resolve $REQ"
	"$scratch/venv/bin/pip" check || die "resolved set has broken requirements"
	{
		echo "# Full lock of the test venv (pip freeze, $("$PYTHON" --version), $(uname -s) $(uname -m)). Used as constraints:"
		echo "# pip install -r $REQ -c $LOCK"
		"$scratch/venv/bin/pip" freeze --disable-pip-version-check
	} >"$LOCK"
	echo "venv.sh: wrote $LOCK; run scripts/venv.sh to install it"
	exit 0
fi

want=$(cat "$REQ" "$LOCK" | sha256sum | cut -d' ' -f1)-$("$PYTHON" -c 'import sys; print("%d.%d.%d" % sys.version_info[:3])')
if [[ -x $VENV/bin/python && -f $STAMP && $(cat "$STAMP") == "$want" ]]; then
	echo "venv.sh: $VENV is up to date"
	exit 0
fi

if [[ ! -x $VENV/bin/python ]] || ! "$VENV/bin/python" -c '' 2>/dev/null; then
	echo "venv.sh: creating $VENV with $("$PYTHON" --version 2>&1)"
	rm -rf "$VENV"
	"$PYTHON" -m venv "$VENV" || die "python -m venv failed (on Debian: apt-get install python3-venv)"
fi
rm -f "$STAMP"

echo "venv.sh: installing $REQ (constraints $LOCK)"
"$VENV/bin/pip" install --disable-pip-version-check --progress-bar off -q -r "$REQ" -c "$LOCK" ||
	die "pip install failed; if a pin changed, run scripts/venv.sh --relock"
"$VENV/bin/pip" check --disable-pip-version-check >/dev/null || die "installed packages conflict: $("$VENV/bin/pip" check)"

echo "venv.sh: installing DuckDB extensions into $VENV/duckdb-extensions"
"$VENV/bin/python" test/duckdb_ext.py || die "DuckDB extensions do not load (see above)"

echo "$want" >"$STAMP"
echo "venv.sh: $VENV ready"
