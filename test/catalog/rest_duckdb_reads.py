"""Run read-only queries with a real DuckDB 1.5.x attached to a DuckLake
catalog (as rest_duckdb.py does, which it imports) and report, per query,
its rows or the error DuckDB raised — for tests that expect some reads to
fail (rest_expire_table_test.go: time travel to snapshots expired for one
table).

usage: python rest_duckdb_reads.py <libpq dsn> <data path> SQL...

Prints a JSON list, one {"rows": [...]} or {"error": "..."} per statement.
"""

from __future__ import annotations

import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from rest_duckdb import connect, render  # noqa: E402  (same directory)


def main(argv: list[str]) -> int:
    if len(argv) < 3:
        print(__doc__, file=sys.stderr)
        return 2
    con = connect(argv[1], argv[2])
    out = []
    for sql in argv[3:]:
        try:
            out.append({"rows": render(con.execute(sql).fetchall())})
        except Exception as e:  # noqa: BLE001 — DuckDB raises its own exception types
            out.append({"error": f"{type(e).__name__}: {e}"})
    json.dump(out, sys.stdout)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
