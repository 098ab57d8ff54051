"""The table scripts/bench.sh compare measures LoadTable on, as bench/RESULTS.md's
LoadTable figures were measured: DuckDB (ducklake, through the gateway) writes
demo.events in 20 INSERTs (21 snapshots). Prints the LoadTable path and a
bearer token of the stack's OAuth client, one per line.

Reads the stack from the variables test/e2e/lakestack.py reads.
"""

from __future__ import annotations

import pathlib
import sys
import urllib.parse

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent / "test" / "e2e"))
import lakestack  # noqa: E402


def main() -> int:
    lake = lakestack.Lake.from_env()
    data = urllib.parse.urlparse(lake.data_path).path.lstrip("/")
    creds = lake.mint(f"{lake.bucket}:{data}:rw", principal="bench")
    con = lake.duckdb(creds)
    con.execute("CREATE SCHEMA IF NOT EXISTS l.demo")
    con.execute("CREATE TABLE l.demo.events (id BIGINT, kind VARCHAR, ts TIMESTAMP)")
    for i in range(20):
        con.execute(
            "INSERT INTO l.demo.events SELECT i, 'kind-' || (i % 7), TIMESTAMP '2026-01-01' + i * INTERVAL 1 MINUTE "
            "FROM range(?, ?) t(i)", [i * 100, (i + 1) * 100])
    con.close()
    print(f"/v1/{lake.warehouse}/namespaces/demo/tables/events")
    print(lake.token())
    return 0


if __name__ == "__main__":
    sys.exit(main())
