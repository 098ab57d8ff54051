"""Run SQL with a real DuckDB 1.5.x attached to a DuckLake catalog in Postgres,
for the REST catalog tests (rest_*_test.go): they change the catalog through
DuckDB and check what the REST API says, and the other way round.

usage: python rest_duckdb.py <libpq dsn> <data path> [--loop N] SQL...

Each SQL statement runs against the catalog attached as `l` (ATTACH
'ducklake:postgres:<dsn>' AS l (DATA_PATH '<data path>')). Prints, as JSON,
one list of rows per statement (values rendered with str(), NULL as null).

With REST_DUCK_S3_ENDPOINT, _KEY, _SECRET (and _TOKEN, _REGION) set, an S3
secret for that endpoint is created first, so Parquet files are written
there (the gateway, with a credential the test minted).

--loop N runs the statements N times in order, with "{i}" in a statement
replaced by the iteration number, and reports only how many statements ran
and the errors DuckDB raised (transaction conflicts with a concurrent writer
are expected there and counted, not fatal): {"ran": n, "errors": [...]}.
"""

from __future__ import annotations

import json
import os
import sys
import urllib.parse

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import duckdb_ext  # noqa: E402  (test/duckdb_ext.py: offline extension loading)


def connect(dsn: str, data_path: str):
    con = duckdb_ext.connect(load=("ducklake", "postgres", "httpfs"))
    con.execute("SET TimeZone = 'UTC'")
    # Parquet files go to S3 through the gateway when the test gives a
    # credential (one it minted for the catalog's data path).
    if endpoint := os.environ.get("REST_DUCK_S3_ENDPOINT"):
        u = urllib.parse.urlparse(endpoint)
        con.execute(
            "CREATE SECRET s (TYPE S3, KEY_ID ?, SECRET ?, SESSION_TOKEN ?, ENDPOINT ?, URL_STYLE 'path', USE_SSL ?, REGION ?)",
            [
                os.environ["REST_DUCK_S3_KEY"],
                os.environ["REST_DUCK_S3_SECRET"],
                os.environ.get("REST_DUCK_S3_TOKEN", ""),
                u.netloc,
                u.scheme == "https",
                os.environ.get("REST_DUCK_S3_REGION", "us-east-1"),
            ],
        )
    con.execute(f"ATTACH 'ducklake:postgres:{dsn}' AS l (DATA_PATH '{data_path}')")
    return con


def render(v):
    if v is None or isinstance(v, (bool, int, float, str)):
        return v
    if isinstance(v, (list, tuple)):
        return [render(x) for x in v]
    return str(v)


def main(argv: list[str]) -> int:
    if len(argv) < 3:
        print(__doc__, file=sys.stderr)
        return 2
    dsn, data_path, rest = argv[1], argv[2], argv[3:]
    loop = 0
    if rest[:1] == ["--loop"]:
        loop, rest = int(rest[1]), rest[2:]
    con = connect(dsn, data_path)
    if loop:
        ran, errors = 0, []
        for i in range(loop):
            for sql in rest:
                try:
                    con.execute(sql.replace("{i}", str(i)))
                    ran += 1
                except Exception as e:  # noqa: BLE001 — reported to the Go test
                    errors.append(f"{sql.replace('{i}', str(i))}: {e}")
        json.dump({"ran": ran, "errors": errors}, sys.stdout)
        return 0
    out = []
    for sql in rest:
        rows = con.execute(sql).fetchall()
        out.append([[render(v) for v in row] for row in rows])
    json.dump(out, sys.stdout)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
