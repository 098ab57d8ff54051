"""PyIceberg 0.12's expire_snapshots through duckicelake's Iceberg REST catalog,
with DuckDB (ducklake extension) on the same DuckLake catalog — for
rest_expire_test.go. Prints a JSON report on stdout.

usage: python rest_pyiceberg_expire.py <phase> <catalog uri> <client id:secret> <libpq dsn> <data path> <ns> [ids]

write   table e: PyIceberg append, overwrite, append; a DuckDB insert into
        table o alone; PyIceberg append; one DuckDB transaction inserting
        into e and o; PyIceberg append. Reports each step's snapshot and the
        data files each snapshot of e reads.
expire  table.maintenance.expire_snapshots().by_ids(ids): reports the
        snapshots LoadTable lists after it, the current rows as PyIceberg
        and DuckDB read them, and what DuckDB's time travel to each expired
        id says.
read    the snapshots LoadTable lists, and the current rows of both readers.
"""

from __future__ import annotations

import json
import os
import sys

import pyarrow as pa
from pyiceberg.schema import Schema
from pyiceberg.types import LongType, NestedField, StringType

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from rest_pyiceberg_write import Run, rows_of  # noqa: E402  (same directory)


def rows(t, lo, hi):
    return pa.Table.from_pylist([{"id": i, "v": f"v{i}"} for i in range(lo, hi)], schema=t.schema().as_arrow())


def files_of(t, snapshot_id):
    return sorted(task.file.file_path for task in t.scan(snapshot_id=snapshot_id).plan_files())


def write(run: Run) -> dict:
    ns = run.ns
    schema = Schema(NestedField(1, "id", LongType()), NestedField(2, "v", StringType()))
    t = run.cat.create_table((ns, "e"), schema)
    run.cat.create_table((ns, "o"), schema)
    steps = {}
    t.append(rows(t, 0, 10))
    steps["append"] = run.cat.load_table((ns, "e")).current_snapshot().snapshot_id
    t = run.cat.load_table((ns, "e"))
    t.overwrite(rows(t, 100, 110))
    steps["overwrite"] = run.cat.load_table((ns, "e")).current_snapshot().snapshot_id
    t = run.cat.load_table((ns, "e"))
    t.append(rows(t, 200, 210))
    steps["append 2"] = run.cat.load_table((ns, "e")).current_snapshot().snapshot_id
    run.duck.execute(f"INSERT INTO l.{ns}.o SELECT i, 'o' FROM range(50) r(i)")
    steps["duckdb o"] = run.duck.execute("SELECT max(snapshot_id) FROM ducklake_snapshots('l')").fetchone()[0]
    t = run.cat.load_table((ns, "e"))
    t.append(rows(t, 300, 310))
    steps["append 3"] = run.cat.load_table((ns, "e")).current_snapshot().snapshot_id
    run.duck.execute("BEGIN")
    run.duck.execute(f"INSERT INTO l.{ns}.e SELECT 400 + i, 'duck' FROM range(50) r(i)")
    run.duck.execute(f"INSERT INTO l.{ns}.o SELECT 400 + i, 'duck' FROM range(50) r(i)")
    run.duck.execute("COMMIT")
    steps["duckdb e and o"] = run.cat.load_table((ns, "e")).current_snapshot().snapshot_id
    t = run.cat.load_table((ns, "e"))
    t.append(rows(t, 500, 510))
    steps["append 4"] = run.cat.load_table((ns, "e")).current_snapshot().snapshot_id
    t = run.cat.load_table((ns, "e"))
    return {"steps": steps, "files": {str(s.snapshot_id): files_of(t, s.snapshot_id) for s in t.snapshots()}}


def read(run: Run) -> dict:
    t = run.cat.load_table((run.ns, "e"))
    py = rows_of(t.scan().to_arrow())
    dk, _ = run.duck_rows("e", None)
    return {"snapshots": [s.snapshot_id for s in t.snapshots()], "current": t.current_snapshot().snapshot_id,
            "refs": sorted(t.metadata.refs), "pyiceberg": len(py), "duckdb": len(dk), "equal": py == dk}


def expire(run: Run, ids: list[int]) -> dict:
    t = run.cat.load_table((run.ns, "e"))
    t.maintenance.expire_snapshots().by_ids(ids).commit()
    out = read(run)
    travel = {}
    for sid in ids:
        try:
            run.duck_rows("e", sid)
            travel[str(sid)] = "read"
        except Exception as e:  # noqa: BLE001 — DuckDB raises its own exception types
            travel[str(sid)] = f"{type(e).__name__}: {e}"
    out["duckdb_time_travel"] = travel
    return out


def main(argv: list[str]) -> int:
    if len(argv) not in (7, 8):
        print(__doc__, file=sys.stderr)
        return 2
    phase, uri, cred, dsn, data_path, ns = argv[1:7]
    run = Run(uri, cred, dsn, data_path, ns)
    if phase == "write":
        out = write(run)
    elif phase == "expire":
        out = expire(run, [int(x) for x in argv[7].split(",")])
    else:
        out = read(run)
    json.dump(out, sys.stdout, default=str)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
