"""Extra DuckDB steps for the format version 3 integration test
(v3_integration_test.go), on top of scenario.py's tables. Reports JSON on
stdout.

usage: python v3_scenario.py merge  <libpq dsn> <data path>
       python v3_scenario.py rowids <libpq dsn> <data path> <table>...

merge:  delete a few rows of ev whose data files already have DuckLake delete
        files; DuckDB keeps these deletions in Postgres, so one data file has
        deletions of both kinds (one deletion vector must merge them); and a
        table of TIMESTAMP_NS, which only v3 can show. Reports like
        scenario.py write.
rowids: the (id, rowid) pairs DuckDB reads in each table at the current
        snapshot, to compare with the _row_id of Iceberg row lineage.
"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import scenario  # noqa: E402  (connect, report; also sets up duckdb_ext)
import jsonreport  # noqa: E402  (test/jsonreport.py, on the path scenario sets)


def merge(dsn: str, data_path: str) -> dict:
    con = scenario.connect(dsn, data_path)
    con.execute("DELETE FROM l.ev WHERE id IN (100, 101, 302)")
    # A type only format version 3 has: nanosecond timestamps.
    con.execute("CREATE TABLE l.ns (id BIGINT, t TIMESTAMP_NS)")
    con.execute("INSERT INTO l.ns SELECT i, TIMESTAMP_NS '2024-01-01 00:00:00.000000001' + to_microseconds(i) FROM range(50) r(i)")
    con.execute("DELETE FROM l.ns WHERE id % 5 = 0")
    scenario.TABLES = scenario.TABLES + ("ns",)
    return scenario.report(con)


def rowids(dsn: str, data_path: str, *tables: str) -> dict:
    con = scenario.connect(dsn, data_path)
    return {name: con.execute(f"SELECT id, rowid FROM l.{name} ORDER BY id").fetchall() for name in tables}


if __name__ == "__main__":
    sys.exit(jsonreport.main(__doc__, {"merge": merge, "rowids": rowids}))
