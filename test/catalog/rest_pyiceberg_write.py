"""PyIceberg 0.12 writes through duckicelake's Iceberg REST catalog, and DuckDB
(ducklake extension, attached to the same DuckLake catalog) reads every
result — for rest_pyiceberg_write_test.go. Prints a JSON report on stdout.

usage: python rest_pyiceberg_write.py <scenario> <catalog uri> <client id:secret> <libpq dsn> <data path> <ns>

Every PyIceberg step records the Iceberg snapshot it made (the DuckLake
snapshot id, by the catalog's design) and the rows PyIceberg reads there;
at the end each of those snapshots is read again by PyIceberg (time travel)
and by DuckDB (AT (VERSION => id)) and the rows compared. DuckDB reaches S3
through REST_DUCK_S3_* (see rest_duckdb.py); PyIceberg through the
credentials the catalog vends.

Scenarios:

lifecycle   create (struct, list, decimal, date, timestamp columns), append,
            DuckDB INSERT, append on the moved head (PyIceberg retries the
            conflict), overwrite with a filter, delete (copy-on-write),
            schema evolution (add, rename, int→long), append, DuckDB INSERT
            with the new columns; PyIceberg deleting rows DuckDB keeps
            inlined is refused with 406 UnsupportedOperationException.
partitioned day(ts), bucket[4](id), identity(cat): appends, a DuckDB insert,
            a partition-aligned delete; DuckDB and PyIceberg filter counts.
deletes     position delete files committed by hand (PyIceberg's manifest
            writers): one data file → DuckLake delete file; a second one for
            the same file is merged with it, one spanning two files split.
race        PyIceberg appends (threads) race DuckDB INSERTs into one table;
            counts every row and the conflicts each side saw.
staged      create_table_transaction with an append in the same commit.
evolve      partition evolution (identity and day fields added to an
            unpartitioned table) and a sort order, with appends between,
            a DuckDB insert and a delete.
specs       a spec with a named bucket field and truncate[2] of a string
            (which DuckLake cannot hold) and a sort order with a transform:
            served back as created; PyIceberg filters on the truncated column
            before and after DuckDB inserts (one of mixed prefixes, one of a
            single prefix, a few inlined rows).
"""

from __future__ import annotations

import datetime
import json
import math
import os
import random
import sys
import threading
import time
import uuid
from decimal import Decimal

import pyarrow as pa
import pyarrow.parquet as pq
from pyiceberg.catalog import load_catalog
from pyiceberg.exceptions import CommitFailedException, RESTError
from pyiceberg.manifest import (
    DataFile,
    DataFileContent,
    FileFormat,
    ManifestContent,
    ManifestEntry,
    ManifestEntryStatus,
    ManifestWriterV2,
    write_manifest_list,
)
from pyiceberg.partitioning import PartitionField, PartitionSpec
from pyiceberg.schema import Schema
from pyiceberg.table.snapshots import Operation, Snapshot, Summary
from pyiceberg.table.update import AddSnapshotUpdate, AssertRefSnapshotId, AssertTableUUID, SetSnapshotRefUpdate
from pyiceberg.table.sorting import NullOrder, SortDirection, SortField, SortOrder
from pyiceberg.transforms import BucketTransform, DayTransform, IdentityTransform, TruncateTransform
from pyiceberg.types import (
    BooleanType,
    DateType,
    DecimalType,
    DoubleType,
    IntegerType,
    ListType,
    LongType,
    NestedField,
    StringType,
    StructType,
    TimestampType,
)

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import rest_duckdb  # noqa: E402  (same directory: DuckDB attached to the catalog)


def render(v) -> str:
    if v is None:
        return "NULL"
    if isinstance(v, float):
        return "nan" if math.isnan(v) else repr(v)
    if isinstance(v, dict):
        return "{" + ",".join(f"{k}:{render(x)}" for k, x in v.items()) + "}"
    if isinstance(v, (list, tuple)):
        return "[" + ",".join(render(x) for x in v) + "]"
    if isinstance(v, datetime.datetime):
        return v.isoformat(sep=" ")
    if isinstance(v, bytes):
        return v.hex()
    return str(v)


def rows_of(table: pa.Table) -> list[str]:
    return sorted("|".join(render(v) for v in row.values()) for row in table.to_pylist())


class Run:
    def __init__(self, uri, cred, dsn, data_path, ns):
        self.cat = load_catalog("duckicelake", type="rest", uri=uri, credential=cred, warehouse="lake")
        self.dsn, self.data_path, self.ns = dsn, data_path, ns
        self.duck = rest_duckdb.connect(dsn, data_path)
        self.conflicts = 0  # CommitFailedException answers the catalog gave
        self._lock = threading.Lock()
        commit = self.cat.commit_table

        def counting(table, requirements, updates):
            try:
                return commit(table, requirements, updates)
            except CommitFailedException:
                with self._lock:
                    self.conflicts += 1
                raise

        self.cat.commit_table = counting
        self.steps: list[dict] = []

    def record(self, name: str, table) -> None:
        table = self.cat.load_table(table.name())
        snap = table.current_snapshot()
        self.steps.append({"step": name, "snapshot": snap.snapshot_id if snap else None})

    def duck_rows(self, ident: str, snapshot: int | None) -> list[str]:
        at = f" AT (VERSION => {snapshot})" if snapshot is not None else ""
        rel = self.duck.execute(f"SELECT * FROM l.{self.ns}.{ident}{at}")
        cols = [d[0] for d in rel.description]
        return sorted("|".join(render(v) for v in row) for row in rel.fetchall()), cols

    def compare(self, ident: str) -> dict:
        """Reads every recorded snapshot with PyIceberg and DuckDB."""
        table = self.cat.load_table((self.ns, ident))
        out = []
        for st in self.steps:
            if st["snapshot"] is None:
                continue
            py = rows_of(table.scan(snapshot_id=st["snapshot"]).to_arrow())
            dk, _ = self.duck_rows(ident, st["snapshot"])
            entry = {"step": st["step"], "snapshot": st["snapshot"], "pyiceberg": len(py), "duckdb": len(dk), "equal": py == dk}
            if py != dk:
                entry["only_pyiceberg"] = [r for r in py if r not in dk][:5]
                entry["only_duckdb"] = [r for r in dk if r not in py][:5]
            out.append(entry)
        cur_py = rows_of(table.scan().to_arrow())
        cur_dk, cols = self.duck_rows(ident, None)
        return {"steps": out, "current": {"pyiceberg": len(cur_py), "duckdb": len(cur_dk), "equal": cur_py == cur_dk},
                "duckdb_columns": cols, "iceberg_schema": [f.name for f in table.schema().fields]}


def lifecycle(run: Run) -> dict:
    ns = run.ns
    schema = Schema(
        NestedField(1, "id", LongType(), required=True),
        NestedField(2, "name", StringType()),
        NestedField(3, "amount", DoubleType()),
        NestedField(4, "qty", IntegerType()),
        NestedField(5, "ts", TimestampType()),
        NestedField(6, "d", DateType()),
        NestedField(7, "price", DecimalType(10, 2)),
        NestedField(8, "flag", BooleanType()),
        NestedField(9, "s", StructType(NestedField(11, "a", IntegerType()), NestedField(12, "b", StringType()))),
        NestedField(10, "tags", ListType(13, StringType())),
    )
    t = run.cat.create_table((ns, "t"), schema)
    report: dict = {"created_field_ids": [[f.field_id, f.name] for f in t.schema().fields],
                    "created_schema_id": t.metadata.current_schema_id}
    def dicts(lo, hi):
        return [{"id": i, "name": None if i % 7 == 0 else f"n{i}", "amount": float("nan") if i == lo + 3 else i * 1.5,
                 "qty": i % 100, "ts": datetime.datetime(2024, 1, 1) + datetime.timedelta(hours=i),
                 "d": datetime.date(2024, 1, 1) + datetime.timedelta(days=i % 30), "price": Decimal(i) / 4,
                 "flag": i % 2 == 0, "s": {"a": i, "b": f"b{i}"}, "tags": [f"t{i}", "x"]} for i in range(lo, hi)]

    first = t.schema().as_arrow()

    def batch(lo, hi):
        return pa.Table.from_pylist(dicts(lo, hi), schema=first)

    t.append(batch(0, 200))
    run.record("append", t)
    # DuckDB writes into the table PyIceberg created (more rows than it inlines).
    run.duck.execute(f"""INSERT INTO l.{ns}.t SELECT 1000 + i, 'duck' || i, i, i, TIMESTAMP '2024-06-01' + INTERVAL (i) MINUTE,
        DATE '2024-06-01', i / 8, true, {{'a': i, 'b': 'db'}}, ['d'] FROM range(20) r(i)""")
    t2 = run.cat.load_table((ns, "t"))
    run.steps.append({"step": "duckdb insert", "snapshot": t2.current_snapshot().snapshot_id})
    # t still has the head before DuckDB's insert: the catalog answers its
    # commit 409 and PyIceberg retries on the new head.
    before = run.conflicts
    t.append(batch(200, 300))
    report["append_after_duckdb_conflicts"] = run.conflicts - before
    run.record("append on a moved head", t)
    t = run.cat.load_table((ns, "t"))
    t.overwrite(batch(250, 260), overwrite_filter="id >= 250 and id < 300")
    run.record("overwrite", t)
    t.delete(delete_filter="id < 10")
    run.record("delete", t)
    with t.update_schema() as u:
        u.add_column("extra", LongType())
        u.rename_column("name", "label")
        u.update_column("qty", LongType())
        u.update_column("amount", doc="what the row is worth")
    # A schema change makes no Iceberg snapshot: the next append shows it.
    report["evolved_schema"] = [[f.field_id, f.name, str(f.field_type)] for f in t.schema().fields]
    # A doc is a DuckLake column comment: DuckDB shows it, and DuckDB's
    # COMMENT ON COLUMN is the doc a fresh load serves.
    run.duck.execute(f"COMMENT ON COLUMN l.{ns}.t.extra IS 'set in DuckDB'")
    fresh = run.cat.load_table((ns, "t")).schema()
    report["docs"] = {
        "pyiceberg": {f.name: f.doc for f in fresh.fields if f.doc},
        "duckdb": dict(run.duck.execute(
            "SELECT column_name, comment FROM duckdb_columns() WHERE database_name = 'l' AND schema_name = ? AND table_name = 't' AND comment IS NOT NULL",
            [ns]).fetchall()),
    }
    rows = dicts(300, 320)
    for r in rows:
        r["label"] = r.pop("name")
        r["extra"] = r["id"] * 10
    t.append(pa.Table.from_pylist(rows, schema=t.schema().as_arrow()))
    run.record("append after schema change", t)
    run.duck.execute(f"""INSERT INTO l.{ns}.t (id, label, qty, extra) SELECT 2000 + i, 'late', 1::BIGINT << 40, i FROM range(20) r(i)""")
    t = run.cat.load_table((ns, "t"))
    run.steps.append({"step": "duckdb insert after schema change", "snapshot": t.current_snapshot().snapshot_id})
    report.update(run.compare("t"))

    # Rows DuckDB keeps inlined in Postgres cannot be rewritten by Iceberg.
    run.duck.execute(f"CREATE TABLE l.{ns}.inl (id BIGINT, v VARCHAR)")
    run.duck.execute(f"INSERT INTO l.{ns}.inl VALUES (1, 'a'), (2, 'b')")
    inl = run.cat.load_table((ns, "inl"))
    try:
        inl.delete(delete_filter="id = 1")
        report["delete_inlined"] = "accepted"
    except RESTError as e:
        # The catalog refuses with 406 UnsupportedOperationException, which
        # PyIceberg raises as a RESTError of that type.
        if "UnsupportedOperationException" not in str(e):
            raise
        report["delete_inlined"] = "UnsupportedOperationException: " + str(e)
    report["inlined_rows"] = len(inl.scan().to_arrow())
    report["conflicts"] = run.conflicts
    return report


def partitioned(run: Run) -> dict:
    ns = run.ns
    schema = Schema(
        NestedField(1, "id", LongType(), required=False),
        NestedField(2, "ts", TimestampType()),
        NestedField(3, "cat", StringType()),
        NestedField(4, "v", DoubleType()),
    )
    spec = PartitionSpec(
        PartitionField(2, 1000, DayTransform(), "ts_day"),
        PartitionField(1, 1001, BucketTransform(4), "id_bucket"),
        PartitionField(3, 1002, IdentityTransform(), "cat"),
    )
    t = run.cat.create_table((ns, "p"), schema, partition_spec=spec)
    report: dict = {"spec": [[f.name, str(f.transform), f.source_id] for f in t.spec().fields]}

    def rows(lo, hi):
        return pa.Table.from_pylist([
            {"id": i, "ts": datetime.datetime(2024, 1, 1) + datetime.timedelta(hours=7 * i), "cat": "abc"[i % 3], "v": i / 2}
            for i in range(lo, hi)], schema=t.schema().as_arrow())

    t.append(rows(0, 30))
    run.record("append", t)
    run.duck.execute(f"INSERT INTO l.{ns}.p SELECT 100 + i, TIMESTAMP '2024-01-03 12:00:00' + INTERVAL (i) HOUR, 'c', i FROM range(30) r(i)")
    t = run.cat.load_table((ns, "p"))
    run.steps.append({"step": "duckdb insert", "snapshot": t.current_snapshot().snapshot_id})
    t.append(rows(30, 60))
    run.record("append 2", t)
    t.delete(delete_filter="cat == 'b'")
    run.record("delete partition", t)
    report.update(run.compare("p"))
    filters = {
        "cat == 'a'": "cat = 'a'",
        "ts >= '2024-01-03T00:00:00' and ts < '2024-01-04T00:00:00'": "ts >= TIMESTAMP '2024-01-03' AND ts < TIMESTAMP '2024-01-04'",
        "id == 42": "id = 42",
    }
    report["filters"] = {}
    for py, sql in filters.items():
        n_py = len(t.scan(row_filter=py).to_arrow())
        n_dk = run.duck.execute(f"SELECT count(*) FROM l.{ns}.p WHERE {sql}").fetchone()[0]
        report["filters"][sql] = [n_py, n_dk]
    report["files"] = [list(r) for r in run.duck.execute(
        f"SELECT count(*), count(DISTINCT data_file) FROM ducklake_list_files('l', 'p', schema => '{ns}')").fetchall()]
    return report


class DeleteManifestWriter(ManifestWriterV2):
    """PyIceberg writes data manifests only; this one writes position deletes."""

    def content(self) -> ManifestContent:
        return ManifestContent.DELETES

    @property
    def _meta(self) -> dict[str, str]:
        return {**super()._meta, "content": "deletes"}


def commit_deletes(run: Run, t, deletes: list[tuple[str, list[int]]], referenced: bool = True):
    """Commits one position delete file with the (data file, position) pairs."""
    io = t.io
    snap_id = random.getrandbits(62)
    loc = t.location()
    path = f"{loc}/data/{uuid.uuid4()}-deletes.parquet"
    fields = [pa.field("file_path", pa.string(), nullable=False, metadata={b"PARQUET:field_id": b"2147483546"}),
              pa.field("pos", pa.int64(), nullable=False, metadata={b"PARQUET:field_id": b"2147483545"})]
    pairs = sorted((f, p) for f, ps in deletes for p in ps)
    tbl = pa.Table.from_pylist([{"file_path": f, "pos": p} for f, p in pairs], schema=pa.schema(fields))
    with io.new_output(path).create(overwrite=True) as out:
        pq.write_table(tbl, out)
    size = len(io.new_input(path).open().read())
    files = sorted({f for f, _ in pairs})
    lower = {2147483546: files[0].encode()}
    upper = {2147483546: files[-1].encode()}
    df = DataFile.from_args(
        content=DataFileContent.POSITION_DELETES, file_path=path, file_format=FileFormat.PARQUET, partition={},
        record_count=len(pairs), file_size_in_bytes=size, lower_bounds=lower, upper_bounds=upper,
        referenced_data_file=files[0] if referenced and len(files) == 1 else None)
    mpath = f"{loc}/metadata/{uuid.uuid4()}-m0.avro"
    with DeleteManifestWriter(t.spec(), t.schema(), io.new_output(mpath), snap_id, "deflate") as w:
        w.add(ManifestEntry.from_args(status=ManifestEntryStatus.ADDED, snapshot_id=snap_id, data_file=df))
    cur = t.current_snapshot()
    manifests = cur.manifests(io) + [w.to_manifest_file()]
    lpath = f"{loc}/metadata/snap-{snap_id}-{uuid.uuid4()}.avro"
    seq = t.metadata.next_sequence_number()
    with write_manifest_list(2, io.new_output(lpath), snap_id, cur.snapshot_id, seq, "deflate") as lw:
        lw.add_manifests(manifests)
    snap = Snapshot(snapshot_id=snap_id, parent_snapshot_id=cur.snapshot_id, sequence_number=seq,
                    timestamp_ms=int(time.time() * 1000), manifest_list=lpath,
                    summary=Summary(Operation.DELETE), schema_id=t.metadata.current_schema_id)
    return run.cat.commit_table(
        t,
        (AssertTableUUID(uuid=t.metadata.table_uuid), AssertRefSnapshotId(ref="main", snapshot_id=cur.snapshot_id)),
        (AddSnapshotUpdate(snapshot=snap), SetSnapshotRefUpdate(ref_name="main", type="branch", snapshot_id=snap_id)),
    )


def deletes(run: Run) -> dict:
    ns = run.ns
    schema = Schema(NestedField(1, "id", LongType()), NestedField(2, "v", StringType()))
    t = run.cat.create_table((ns, "pd"), schema)
    t.append(pa.Table.from_pylist([{"id": i, "v": f"v{i}"} for i in range(10)], schema=t.schema().as_arrow()))
    t.append(pa.Table.from_pylist([{"id": i, "v": f"v{i}"} for i in range(10, 20)], schema=t.schema().as_arrow()))
    run.record("appends", t)
    files = sorted(task.file.file_path for task in t.scan().plan_files())
    report: dict = {"data_files": len(files)}
    # Rows 1 and 3 of the first file (ids 1 and 3: PyIceberg keeps order).
    first = files[0]
    first_ids = [r["id"] for r in pq.read_table(t.io.new_input(first).open()).to_pylist()]
    resp = commit_deletes(run, t, [(first, [1, 3])])
    t = run.cat.load_table((ns, "pd"))
    report["deleted_ids"] = sorted([first_ids[1], first_ids[3]])
    report["commit_snapshot"] = resp.metadata.current_snapshot_id
    run.record("position delete", t)
    # DuckLake keeps one delete file per data file: the catalog merges a
    # second delete file with the first and splits one spanning two files.
    second_ids = [r["id"] for r in pq.read_table(t.io.new_input(files[1]).open()).to_pylist()]
    for name, dl, ref, ids in (("second delete file for the same data file", [(first, [5])], True, [first_ids[5]]),
                               ("one delete file for two data files", [(files[0], [6]), (files[1], [0])], False,
                                [first_ids[6], second_ids[0]])):
        try:
            commit_deletes(run, t, dl, ref)
            report[name] = "accepted"
            report["deleted_ids"] = sorted(report["deleted_ids"] + ids)
            t = run.cat.load_table((ns, "pd"))
            run.record(name, t)
        except (NotImplementedError, RESTError) as e:
            if isinstance(e, RESTError) and "UnsupportedOperationException" not in str(e):
                raise
            report[name] = type(e).__name__ + ": " + str(e)
    report["ids"] = sorted(r["id"] for r in t.scan().to_arrow().to_pylist())
    report["duckdb_ids"] = [r[0] for r in run.duck.execute(f"SELECT id FROM l.{ns}.pd ORDER BY id").fetchall()]
    report.update(run.compare("pd"))
    return report


def race(run: Run) -> dict:
    ns = run.ns
    schema = Schema(NestedField(1, "id", LongType()), NestedField(2, "who", StringType()))
    run.cat.create_table((ns, "r"), schema)
    rounds_py, rounds_duck, per = 6, 12, 50
    errors: list[str] = []
    duck_conflicts = [0]

    def py_writer(w):
        cat = load_catalog("duckicelake", **run.cat.properties)
        t = cat.load_table((ns, "r"))
        arrow = t.schema().as_arrow()
        for k in range(rounds_py):
            rows = pa.Table.from_pylist([{"id": (w * 1000 + k) * per + i, "who": "py"} for i in range(per)], schema=arrow)
            while True:
                try:
                    orig = cat.commit_table

                    def counting(table, requirements, updates, orig=orig):
                        try:
                            return orig(table, requirements, updates)
                        except CommitFailedException:
                            with run._lock:
                                run.conflicts += 1
                            raise

                    cat.commit_table = counting
                    t.append(rows)
                    break
                except CommitFailedException:
                    t = cat.load_table((ns, "r"))  # PyIceberg gave up retrying: start over
                except Exception as e:  # noqa: BLE001
                    errors.append(f"pyiceberg: {e}")
                    return

    def duck_writer():
        con = rest_duckdb.connect(run.dsn, run.data_path)
        for k in range(rounds_duck):
            while True:
                try:
                    con.execute(f"INSERT INTO l.{ns}.r SELECT 900000 + {k} * {per} + i, 'duck' FROM range({per}) r(i)")
                    break
                except Exception as e:  # noqa: BLE001 — DuckDB raises TransactionException on a conflict
                    if "onflict" not in str(e):
                        errors.append(f"duckdb: {e}")
                        return
                    duck_conflicts[0] += 1
            time.sleep(0.02)

    threads = [threading.Thread(target=py_writer, args=(w,)) for w in range(2)] + [threading.Thread(target=duck_writer)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    t = run.cat.load_table((ns, "r"))
    py_rows = t.scan().to_arrow().to_pylist()
    dk = run.duck.execute(f"SELECT who, count(*), count(DISTINCT id) FROM l.{ns}.r GROUP BY who ORDER BY who").fetchall()
    return {
        "errors": errors,
        "want": {"py": 2 * rounds_py * per, "duck": rounds_duck * per},
        "duckdb": {w: [n, d] for w, n, d in dk},
        "pyiceberg": {"py": sum(1 for r in py_rows if r["who"] == "py"), "duck": sum(1 for r in py_rows if r["who"] == "duck"),
                      "distinct": len({r["id"] for r in py_rows})},
        "pyiceberg_conflicts": run.conflicts,
        "duckdb_conflicts_raised": duck_conflicts[0],
    }


def staged(run: Run) -> dict:
    ns = run.ns
    schema = Schema(NestedField(1, "id", LongType()), NestedField(2, "v", StringType()))
    spec = PartitionSpec(PartitionField(1, 1000, BucketTransform(2), "b"))
    txn = run.cat.create_table_transaction((ns, "st"), schema, partition_spec=spec, properties={"owner": "etl"})
    report = {"exists_before_commit": run.cat.table_exists((ns, "st"))}
    txn.append(pa.Table.from_pylist([{"id": i, "v": str(i % 3)} for i in range(25)], schema=txn.table_metadata.schema().as_arrow()))
    t = txn.commit_transaction()
    report["exists_after_commit"] = run.cat.table_exists((ns, "st"))
    t = run.cat.load_table((ns, "st"))
    run.record("create and append", t)
    report["spec"] = [[f.name, str(f.transform)] for f in t.spec().fields]
    report.update(run.compare("st"))
    return report


def evolve(run: Run) -> dict:
    ns = run.ns
    schema = Schema(NestedField(1, "id", LongType()), NestedField(2, "ts", TimestampType()), NestedField(3, "cat", StringType()))
    t = run.cat.create_table((ns, "e"), schema)

    def rows(lo, hi):
        return pa.Table.from_pylist([
            {"id": i, "ts": datetime.datetime(2024, 3, 1) + datetime.timedelta(days=i), "cat": "xy"[i % 2]} for i in range(lo, hi)],
            schema=t.schema().as_arrow())

    t.append(rows(0, 20))
    run.record("unpartitioned", t)
    with t.update_spec() as u:
        u.add_identity("cat")
        u.add_field("ts", DayTransform(), "ts_day")
    t = run.cat.load_table((ns, "e"))
    report: dict = {"spec": [[f.name, str(f.transform)] for f in t.spec().fields], "spec_id": t.spec().spec_id}
    t.append(rows(20, 40))
    run.record("partitioned", t)
    with t.update_sort_order() as u:
        u.desc("id", IdentityTransform())
    t = run.cat.load_table((ns, "e"))
    t.append(rows(40, 50))
    run.record("after sort order", t)
    run.duck.execute(f"INSERT INTO l.{ns}.e SELECT 100 + i, TIMESTAMP '2024-05-01' + INTERVAL (i) DAY, 'z' FROM range(20) r(i)")
    t = run.cat.load_table((ns, "e"))
    run.steps.append({"step": "duckdb insert", "snapshot": t.current_snapshot().snapshot_id})
    t.delete(delete_filter="cat == 'x'")
    run.record("delete", t)
    report.update(run.compare("e"))
    report["day_count"] = [len(t.scan(row_filter="ts >= '2024-03-26T00:00:00' and ts < '2024-03-27T00:00:00'").to_arrow()),
                           run.duck.execute(f"SELECT count(*) FROM l.{ns}.e WHERE ts >= TIMESTAMP '2024-03-26' AND ts < TIMESTAMP '2024-03-27'").fetchone()[0]]
    return report


def specs(run: Run) -> dict:
    ns = run.ns
    schema = Schema(NestedField(1, "id", LongType()), NestedField(2, "name", StringType()), NestedField(3, "v", DoubleType()))
    spec = PartitionSpec(
        PartitionField(1, 1000, BucketTransform(4), "shard"),
        PartitionField(2, 1001, TruncateTransform(2), "name_prefix"),
    )
    order = SortOrder(
        SortField(source_id=1, transform=BucketTransform(4)),
        SortField(source_id=2, transform=IdentityTransform(), direction=SortDirection.DESC, null_order=NullOrder.NULLS_FIRST),
    )
    t = run.cat.create_table((ns, "sp"), schema, partition_spec=spec, sort_order=order)

    def served(t) -> dict:
        return {"spec_id": t.spec().spec_id,
                "spec": [[f.field_id, f.name, str(f.transform), f.source_id] for f in t.spec().fields],
                "order_id": t.sort_order().order_id,
                "order": [[str(f.transform), f.source_id, str(f.direction), str(f.null_order)] for f in t.sort_order().fields],
                "specs": sorted([s.spec_id, [f.name for f in s.fields]] for s in t.specs().values())}

    report: dict = {"created": served(t)}
    prefixes = ["aa", "ab", "ba", "bb", "zz"]
    t.append(pa.Table.from_pylist([{"id": i, "name": f"{prefixes[i % 4]}{i}", "v": i / 2} for i in range(40)],
                                  schema=t.schema().as_arrow()))
    run.record("append", t)
    t = run.cat.load_table((ns, "sp"))
    report["loaded"] = served(t)
    # DuckDB ignores the truncate field: its file of mixed prefixes cannot
    # have a truncate value, one of a single prefix can; inlined rows have
    # no partition at all.
    run.duck.execute(f"INSERT INTO l.{ns}.sp SELECT 100 + i, ['aa', 'ba', 'zz'][i % 3 + 1] || 'd' || i, i FROM range(30) r(i)")
    t = run.cat.load_table((ns, "sp"))
    run.steps.append({"step": "duckdb insert mixed", "snapshot": t.current_snapshot().snapshot_id})
    run.duck.execute(f"INSERT INTO l.{ns}.sp SELECT 200 + i, 'qq' || i, i FROM range(30) r(i)")
    t = run.cat.load_table((ns, "sp"))
    run.steps.append({"step": "duckdb insert one prefix", "snapshot": t.current_snapshot().snapshot_id})
    run.duck.execute(f"INSERT INTO l.{ns}.sp VALUES (300, 'ab300', 1), (301, 'zz301', 2)")
    t = run.cat.load_table((ns, "sp"))
    run.steps.append({"step": "duckdb insert inlined", "snapshot": t.current_snapshot().snapshot_id})
    t.append(pa.Table.from_pylist([{"id": 400 + i, "name": f"ab{400 + i}", "v": 1.0} for i in range(5)], schema=t.schema().as_arrow()))
    run.record("append after duckdb", t)
    t = run.cat.load_table((ns, "sp"))
    report["after_duckdb"] = served(t)
    report.update(run.compare("sp"))
    report["filters"] = {}
    for py, sql in {"name == 'ab1'": "name = 'ab1'", "name == 'aad0'": "name = 'aad0'", "name == 'qq7'": "name = 'qq7'",
                    "name == 'ab300'": "name = 'ab300'", "name >= 'b' and name < 'c'": "name >= 'b' AND name < 'c'",
                    "name >= 'ab' and name < 'ac'": "name >= 'ab' AND name < 'ac'", "id == 7": "id = 7"}.items():
        n_py = len(t.scan(row_filter=py).to_arrow())
        n_dk = run.duck.execute(f"SELECT count(*) FROM l.{ns}.sp WHERE {sql}").fetchone()[0]
        report["filters"][sql] = [n_py, n_dk]
    # Which spec each live file is served under, and its truncate value.
    files = t.inspect.files().to_pylist()
    by_spec: dict = {}
    for f in files:
        part = f["partition"] or {}
        by_spec.setdefault(str(f["spec_id"]), []).append(part.get("name_prefix", "-"))
    report["files_by_spec"] = {k: sorted(str(x) for x in v) for k, v in by_spec.items()}
    # Pruning works: a filter on one prefix plans fewer files than there are.
    report["planned"] = [len(list(t.scan(row_filter="name == 'ab1'").plan_files())), len(list(t.scan().plan_files()))]
    return report


def main(argv: list[str]) -> int:
    if len(argv) != 7:
        print(__doc__, file=sys.stderr)
        return 2
    scenario, uri, cred, dsn, data_path, ns = argv[1:]
    run = Run(uri, cred, dsn, data_path, ns)
    fn = {"lifecycle": lifecycle, "partitioned": partitioned, "deletes": deletes, "race": race, "staged": staged,
          "evolve": evolve, "specs": specs}[scenario]
    json.dump(fn(run), sys.stdout, default=str)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
