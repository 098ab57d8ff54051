"""Write to a DuckLake catalog with a real DuckDB 1.5.x, as a user would.

usage: python duckdb_insert.py <libpq dsn> <data path> <rows>

ATTACHes the catalog, creates table t if needed, INSERTs <rows> rows in one
statement and prints JSON: {"started_at": …, "committed_at": …, "rows": n},
the Unix times (float seconds) right before the INSERT was sent and right
after it returned, and the table's row count.
"""

import json
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "test"))
import duckdb_ext  # noqa: E402  (test/duckdb_ext.py: offline extension loading)

dsn, data_path, rows = sys.argv[1], sys.argv[2], int(sys.argv[3])
con = duckdb_ext.connect(load=("ducklake", "postgres"))
con.execute(f"ATTACH 'ducklake:postgres:{dsn}' AS l (DATA_PATH '{data_path}')")
con.execute("CREATE TABLE IF NOT EXISTS l.t (id BIGINT, s VARCHAR)")
started_at = time.time()
con.execute(f"INSERT INTO l.t SELECT i, 'row ' || i FROM range({rows}) r(i)")
committed_at = time.time()
n = con.execute("SELECT count(*) FROM l.t").fetchone()[0]
print(json.dumps({"started_at": started_at, "committed_at": committed_at, "rows": n}))
