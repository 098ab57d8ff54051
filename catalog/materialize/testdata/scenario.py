"""Drive a real DuckDB 1.5.x against a DuckLake catalog in Postgres, and read
materialised Iceberg metadata back with PyIceberg and DuckDB's iceberg
extension. Reports JSON on stdout; the Go test (integration_test.go) compares.

usage: python scenario.py write <libpq dsn> <data path>
       python scenario.py flush <libpq dsn> <data path>
       python scenario.py read  <requests.json>

write: create tables over many snapshots (partitioned by year(ts) and a
       bucket, by identity, by year+month of a date; file-backed and inlined
       inserts, inlined deletions, delete files, UPDATE, a schema change) and
       report, per snapshot and table, what DuckDB itself reads.
flush: flush inlined data to Parquet (DuckDB rewrites history), report again.
read:  for each {"metadata": path, "snapshot": id, "columns": [...]}, scan
       with PyIceberg's StaticTable and with DuckDB's iceberg_scan.
"""

from __future__ import annotations

import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "test"))
import duckdb_ext  # noqa: E402  (test/duckdb_ext.py: offline extension loading)
import jsonreport  # noqa: E402  (test/jsonreport.py: MODE ARGS... → JSON on stdout)

TABLES = ("ev", "idp", "ym", "odd", "ext")

STEPS = [
    "CREATE TABLE l.ev (id BIGINT, ts TIMESTAMP, cat VARCHAR, v DOUBLE, amount DECIMAL(10,2))",
    "ALTER TABLE l.ev SET PARTITIONED BY (year(ts), bucket(4, id))",
    "INSERT INTO l.ev SELECT i, TIMESTAMP '2023-06-01' + to_days(i::INTEGER), 'c' || (i % 3), i * 1.5, i * 0.25 FROM range(600) r(i)",
    "INSERT INTO l.ev VALUES (1000, TIMESTAMP '2024-02-02 03:04:05', 'x', 1.0, 9.99), (1001, NULL, NULL, 'nan'::DOUBLE, NULL)",
    "DELETE FROM l.ev WHERE id < 10",
    "DELETE FROM l.ev WHERE id % 7 = 0",
    "UPDATE l.ev SET v = -1 WHERE id = 20",
    "DELETE FROM l.ev WHERE id = 1000",
    """CREATE TABLE l.idp (id INTEGER, cat VARCHAR, tags INTEGER[], st STRUCT(a INTEGER, b VARCHAR),
        m MAP(VARCHAR, INTEGER), u UUID, d DATE, tz TIMESTAMPTZ, bl BLOB)""",
    "ALTER TABLE l.idp SET PARTITIONED BY (cat)",
    """INSERT INTO l.idp SELECT i, 'k' || (i % 2), [i, i + 1], {'a': i, 'b': 'b' || i}, MAP {'k': i},
        uuid(), DATE '2020-01-01' + i::INTEGER, TIMESTAMPTZ '2020-01-01 00:00:00+00' + to_hours(i::INTEGER),
        ('x' || i)::BLOB FROM range(100) r(i)""",
    "DELETE FROM l.idp WHERE id IN (3, 5)",
    "ALTER TABLE l.idp ADD COLUMN extra INTEGER",
    "INSERT INTO l.idp (id, cat, tags, st, m, extra) VALUES (500, 'k0', [1, NULL], {'a': NULL, 'b': 'q'}, MAP {'z': 26}, 7)",
    "CREATE TABLE l.ym (id INTEGER, d DATE)",
    "ALTER TABLE l.ym SET PARTITIONED BY (year(d), month(d))",
    "INSERT INTO l.ym SELECT i, DATE '2023-11-20' + i::INTEGER FROM range(90) r(i)",
    "DELETE FROM l.ym WHERE id % 10 = 0",
    # Types whose Iceberg form follows what DuckDB writes into Parquet.
    """CREATE TABLE l.odd (id INTEGER, ut UTINYINT, us USMALLINT, ui UINTEGER, hi HUGEINT,
        tms TIMESTAMP_MS, tss TIMESTAMP_S, j JSON, t TIME, f FLOAT, ti TINYINT)""",
    """INSERT INTO l.odd SELECT i, i, 60000 + i, 4000000000 + i, i * 1000000000000,
        TIMESTAMP_MS '2024-01-01 00:00:01.5' + to_seconds(i), TIMESTAMP_S '2024-01-01 00:00:01' + to_seconds(i),
        '{"a": ' || i || '}', TIME '12:00:00' + to_seconds(i), i / 4, i - 100 FROM range(200) r(i)""",
]


def connect(dsn: str, data_path: str):
    con = duckdb_ext.connect(load=("ducklake", "postgres"))
    con.execute("SET TimeZone = 'UTC'")
    con.execute(f"ATTACH 'ducklake:postgres:{dsn}' AS l (DATA_PATH '{data_path}')")
    return con


def report(con) -> dict:
    out = {"snapshots": []}
    for (snap,) in con.execute("SELECT snapshot_id FROM ducklake_snapshots('l') ORDER BY 1").fetchall():
        entry = {"id": snap, "tables": {}}
        for name in TABLES:
            try:
                ids = con.execute(f"SELECT id FROM l.{name} AT (VERSION => {snap}) ORDER BY id").fetchall()
            except Exception:  # the table does not exist at this snapshot
                continue
            entry["tables"][name] = [i for (i,) in ids]
        out["snapshots"].append(entry)
    return out


def write(dsn: str, data_path: str) -> dict:
    con = connect(dsn, data_path)
    for s in STEPS:
        con.execute(s)
    # A Parquet file without field ids, added as is: readers need the name
    # mapping to find its columns.
    ext = os.path.join(data_path, "external", "ext.parquet")
    os.makedirs(os.path.dirname(ext), exist_ok=True)
    con.execute("CREATE TABLE l.ext (id BIGINT, v VARCHAR)")
    con.execute(f"COPY (SELECT i::BIGINT AS id, 'e' || i AS v FROM range(7) r(i)) TO '{ext}' (FORMAT parquet)")
    con.execute(f"CALL ducklake_add_data_files('l', 'ext', '{ext}')")
    con.execute("INSERT INTO l.ext SELECT i, 'n' || i FROM range(100, 2100) r(i)")
    return report(con)


def flush(dsn: str, data_path: str) -> dict:
    con = connect(dsn, data_path)
    con.execute("CALL ducklake_flush_inlined_data('l')")
    return report(con)


def read(requests_path: str) -> list:
    from pyiceberg.table import StaticTable

    with open(requests_path) as f:
        requests = json.load(f)
    con = duckdb_ext.connect(load=("iceberg",))
    con.execute("SET TimeZone = 'UTC'")
    out = []
    for r in requests:
        res = {}
        try:
            tbl = StaticTable.from_metadata(r["metadata"])
            arrow = tbl.scan(snapshot_id=r["snapshot"]).to_arrow()
            res["pyiceberg"] = sorted(arrow.column("id").to_pylist())
            res["pyiceberg_columns"] = arrow.column_names
            # Partition pruning: a predicate on the partition source column
            # must plan fewer files than a full scan (and still find the rows).
            if r.get("prune"):
                col, value = r["prune"]
                full = len(list(tbl.scan(snapshot_id=r["snapshot"]).plan_files()))
                pruned_scan = tbl.scan(snapshot_id=r["snapshot"], row_filter=f"{col} == {value!r}" if isinstance(value, str) else f"{col} == {value}")
                res["prune"] = [full, len(list(pruned_scan.plan_files())), sorted(pruned_scan.to_arrow().column("id").to_pylist())]
        except Exception as e:  # report, the Go test fails with the message
            res["pyiceberg_error"] = f"{type(e).__name__}: {e}"
        try:
            # Every column is read (and so decoded), the ids reported; Arrow
            # rather than Python objects, which would need pytz for timestamptz.
            rows = con.execute(
                f"SELECT * FROM iceberg_scan('{r['metadata']}', snapshot_from_id => {r['snapshot']}) ORDER BY id"
            ).arrow()
            if hasattr(rows, "read_all"):  # DuckDB 1.5 returns a RecordBatchReader
                rows = rows.read_all()
            res["duckdb"] = rows.column("id").to_pylist()
        except Exception as e:
            res["duckdb_error"] = f"{type(e).__name__}: {e}"
        out.append(res)
    return out


if __name__ == "__main__":
    sys.exit(jsonreport.main(__doc__, {"write": write, "flush": flush, "read": read}))
