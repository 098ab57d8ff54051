"""Drive a real DuckDB 1.5.x against a DuckLake catalog in Postgres and report,
as JSON on stdout, what DuckDB itself sees — the ground truth for the Go tests
in this directory.

usage: python ducklake_scenario.py attach   <libpq dsn> <data path>
       python ducklake_scenario.py scenario <libpq dsn> <data path> <scratch dir>

attach:   ATTACH the (already initialised) catalog, CREATE TABLE, INSERT,
          SELECT; report the rows read back.
scenario: build schemas and tables over many snapshots (inlined inserts,
          UPDATE, DELETE, a partitioned table, nested types, a delete file,
          inlined deletions, a file added by absolute path) and report, per
          snapshot and table: row count, the file list DuckDB reads, and for
          the small table every row rendered canonically (see render()).
"""

from __future__ import annotations

import datetime
import decimal
import json
import os
import sys
import uuid

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import duckdb_ext  # noqa: E402  (test/duckdb_ext.py: offline extension loading)
import jsonreport  # noqa: E402  (test/jsonreport.py: MODE ARGS... → JSON on stdout)


def connect(dsn: str, data_path: str):
    con = duckdb_ext.connect(load=("ducklake", "postgres"))
    con.execute("SET TimeZone = 'UTC'")
    con.execute(f"ATTACH 'ducklake:postgres:{dsn}' AS l (DATA_PATH '{data_path}')")
    return con


def render(v) -> str:
    """Canonical text of a value; catalog/ducklake's Go values render the same way (render_test.go)."""
    if v is None:
        return "NULL"
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        return repr(v)
    if isinstance(v, decimal.Decimal):
        return str(v)
    if isinstance(v, datetime.datetime):
        if v.tzinfo is not None:
            v = v.astimezone(datetime.timezone.utc).replace(tzinfo=None)
        return v.isoformat(sep=" ")
    if isinstance(v, (datetime.date, datetime.time)):
        return v.isoformat()
    if isinstance(v, uuid.UUID):
        return str(v)
    if isinstance(v, (bytes, bytearray, memoryview)):
        return "0x" + bytes(v).hex()
    if isinstance(v, str):
        return json.dumps(v)
    if isinstance(v, list):
        return "[" + ", ".join(render(x) for x in v) + "]"
    if isinstance(v, dict):
        return "{" + ", ".join(f"{k}: {render(x)}" for k, x in v.items()) + "}"
    raise TypeError(f"cannot render {type(v)}")


def attach(dsn: str, data_path: str) -> dict:
    con = connect(dsn, data_path)
    con.execute("CREATE TABLE l.main.t (id INTEGER, name VARCHAR)")
    con.execute("INSERT INTO l.main.t VALUES (1, 'one'), (2, 'two')")
    con.execute("INSERT INTO l.main.t SELECT i, 'n' || i FROM range(3, 1003) r(i)")
    rows = con.execute("SELECT count(*), sum(id), min(name), max(name) FROM l.main.t").fetchone()
    snaps = con.execute("SELECT snapshot_id FROM ducklake_snapshots('l') ORDER BY 1").fetchall()
    return {"agg": [render(x) for x in rows], "snapshots": [s[0] for s in snaps]}


SMALL = """CREATE TABLE l.s1.small (
    id INTEGER, name VARCHAR, tags INTEGER[], st STRUCT(a INTEGER, b VARCHAR[]),
    m MAP(VARCHAR, INTEGER), d DATE, ts TIMESTAMPTZ, tsn TIMESTAMP, dec DECIMAL(10,2), u UUID,
    bl BLOB, f DOUBLE, r REAL, ub UBIGINT, hi HUGEINT, ti TINYINT, us USMALLINT, ui UINTEGER,
    j JSON, b BOOLEAN, t TIME)"""

SMALL_ROWS = [
    """(1, 'one', [1, 2], {'a': 1, 'b': ['x', 'y z']}, MAP {'k': 1}, DATE '2024-01-01',
        TIMESTAMPTZ '2024-01-01 10:00:00.123456+02', TIMESTAMP '1999-12-31 23:59:59', 1.50,
        '550e8400-e29b-41d4-a716-446655440000', '\\x00\\xff\\x5c'::BLOB, 1.5, 0.25, 18446744073709551615,
        -170141183460469231731687303715884105728, -128, 65535, 4294967295, '{"a": [1, "]"]}', true, TIME '12:30:00.5')""",
    """(2, 'it''s, [tricky] {x}', [NULL, 3], {'a': NULL, 'b': ['NULL', NULL, '', 'q''s']},
        MAP {'a=b': NULL, 'c': -1}, DATE '1969-12-31', NULL, TIMESTAMP '2024-02-29 00:00:00.000001', -0.01,
        NULL, ''::BLOB, -2.5e-10, NULL, 0, 0, 127, 0, 0, '[]', false, TIME '00:00:00')""",
    """(3, NULL, [], NULL, MAP {}, NULL, TIMESTAMPTZ '1970-01-01 00:00:00+00', NULL, NULL,
        NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL)""",
]


def scenario(dsn: str, data_path: str, scratch: str) -> dict:
    con = connect(dsn, data_path)
    steps = [
        "CREATE SCHEMA l.s1",
        SMALL,
        f"INSERT INTO l.s1.small VALUES {SMALL_ROWS[0]}, {SMALL_ROWS[1]}",
        f"INSERT INTO l.s1.small VALUES {SMALL_ROWS[2]}",
        "UPDATE l.s1.small SET name = 'updated', tags = [9] WHERE id = 1",
        "DELETE FROM l.s1.small WHERE id = 2",
        # A new schema version: old inlined rows stay in the old inlined table.
        "ALTER TABLE l.s1.small ADD COLUMN extra INTEGER",
        "INSERT INTO l.s1.small (id, name, extra) VALUES (4, 'four', 44)",
        "COMMENT ON TABLE l.s1.small IS 'small table'",
        "COMMENT ON COLUMN l.s1.small.name IS 'the name'",
        "CREATE TABLE l.s1.big (id BIGINT, p INTEGER, v VARCHAR)",
        "ALTER TABLE l.s1.big SET PARTITIONED BY (p)",
        "INSERT INTO l.s1.big SELECT i, i % 3, 'v' || i FROM range(3000) r(i)",
        "INSERT INTO l.s1.big SELECT i, i % 3, 'w' || i FROM range(3000, 4000) r(i)",
        "DELETE FROM l.s1.big WHERE id < 5",
        "DELETE FROM l.s1.big WHERE id >= 3000 AND id < 3600",
        "UPDATE l.s1.big SET v = 'u' WHERE id = 10",
        "INSERT INTO l.s1.big VALUES (5000, 1, 'tiny')",
        "CREATE TABLE l.s1.ext (id BIGINT, v VARCHAR)",
    ]
    for s in steps:
        con.execute(s)
    ext = os.path.join(scratch, "external", "ext.parquet")
    os.makedirs(os.path.dirname(ext), exist_ok=True)
    con.execute(f"COPY (SELECT i::BIGINT AS id, 'e' || i AS v FROM range(7) r(i)) TO '{ext}' (FORMAT parquet)")
    con.execute(f"CALL ducklake_add_data_files('l', 'ext', '{ext}', schema => 's1')")
    con.execute("DROP TABLE l.s1.ext")  # the ext table ends: its rows must vanish after this snapshot

    report = {"data_path": data_path, "snapshots": []}
    for (snap,) in con.execute("SELECT snapshot_id FROM ducklake_snapshots('l') ORDER BY 1").fetchall():
        entry = {"id": snap, "tables": {}}
        for name in ("small", "big", "ext"):
            try:
                count = con.execute(f"SELECT count(*) FROM l.s1.{name} AT (VERSION => {snap})").fetchone()[0]
            except Exception:  # the table does not exist at this snapshot
                continue
            files = con.execute(
                f"SELECT data_file, delete_file FROM ducklake_list_files('l', '{name}', schema => 's1', snapshot_version => {snap})"
            ).fetchall()
            t = {"count": count, "files": sorted([f, d] for f, d in files)}
            if name == "small":
                rows = con.execute(
                    # pytz is not in the venv: read timestamptz as its UTC wall clock.
                    f"SELECT * REPLACE (timezone('UTC', ts) AS ts) FROM l.s1.small AT (VERSION => {snap}) ORDER BY id"
                ).fetchall()
                t["rows"] = [[render(v) for v in row] for row in rows]
            entry["tables"][name] = t
        report["snapshots"].append(entry)
    report["comments"] = con.execute(
        "SELECT comment FROM duckdb_tables() WHERE database_name = 'l' AND table_name = 'small' "
        "UNION ALL SELECT comment FROM duckdb_columns() WHERE database_name = 'l' AND table_name = 'small' AND column_name = 'name'"
    ).fetchall()
    report["comments"] = [c[0] for c in report["comments"]]
    report["describe"] = {
        name: [[r[0], r[1]] for r in con.execute(f"DESCRIBE l.s1.{name}").fetchall()] for name in ("small", "big")
    }
    return report


if __name__ == "__main__":
    sys.exit(jsonreport.main(__doc__, {"attach": attach, "scenario": scenario}))
