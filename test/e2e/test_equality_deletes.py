"""Equality deletes committed through the catalog (issue 15, item 10; they
were refused before): an equality delete file on (id, name) — pyarrow
Parquet with Iceberg field ids, its delete manifest and manifest list
written with PyIceberg's writer classes, committed over REST as Flink or
iceberg-go would — becomes DuckLake position deletes of the older data
files, NULL keys equal to NULL, on a multi-column key; a key of a row an
earlier delete removed deletes nothing more. DuckDB (ducklake) and PyIceberg
then read the same rows. (catalog/commit's TestEqualityDeletes and
test/catalog's TestIcebergGoEqualityDeletes have partition scope, files of
the same snapshot and the merge with existing position deletes.)"""

from __future__ import annotations

import io
import os
import urllib.parse
import uuid

import psycopg
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from pyiceberg.expressions import EqualTo
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
from pyiceberg.schema import Schema
from pyiceberg.table.snapshots import Operation, Snapshot, Summary
from pyiceberg.table.update import AddSnapshotUpdate, AssertRefSnapshotId, SetSnapshotRefUpdate
from pyiceberg.typedef import Record
from pyiceberg.types import LongType, NestedField, StringType

from lakestack import Lake, fresh


class DeleteManifestWriter(ManifestWriterV2):
    """PyIceberg writes data manifests only; a delete manifest differs in
    its content (list entry and metadata)."""

    def content(self) -> ManifestContent:
        return ManifestContent.DELETES

    @property
    def _meta(self) -> dict[str, str]:
        return {**super()._meta, "content": "deletes"}


def field(name: str, typ: pa.DataType, fid: int) -> pa.Field:
    return pa.field(name, typ, metadata={b"PARQUET:field_id": str(fid).encode()})


def put(tbl, path: str, body: bytes) -> None:
    with tbl.io.new_output(path).create(overwrite=True) as f:
        f.write(body)


def commit_equality_delete(tbl, keys: list[dict], equality_ids=(1, 2)) -> str:
    """Commits an equality delete of keys on (id: field 1, name: field 2)
    to PyIceberg table tbl over REST, as Flink or iceberg-go would: the
    Parquet file with Iceberg field ids, its delete manifest and a manifest
    list beside the parent's manifests. Returns the delete file's path."""
    arrow_schema = pa.schema([field("id", pa.int64(), 1), field("name", pa.string(), 2)])
    keys = pa.Table.from_pylist(keys, schema=arrow_schema)
    buf = io.BytesIO()
    pq.write_table(keys, buf)
    body = buf.getvalue()
    base = tbl.location().rstrip("/")
    del_path = f"{base}/data/eq-{uuid.uuid4()}.parquet"
    put(tbl, del_path, body)
    df = DataFile.from_args(
        _table_format_version=2,
        content=DataFileContent.EQUALITY_DELETES, file_path=del_path, file_format=FileFormat.PARQUET,
        partition=Record(), record_count=keys.num_rows, file_size_in_bytes=len(body), equality_ids=list(equality_ids),
    )
    parent = tbl.current_snapshot()
    snapshot_id = tbl.metadata.new_snapshot_id()
    seq = tbl.metadata.next_sequence_number()
    man_path = f"{base}/metadata/{uuid.uuid4()}-m0.avro"
    with DeleteManifestWriter(tbl.spec(), tbl.schema(), tbl.io.new_output(man_path), snapshot_id, "deflate") as w:
        w.add(ManifestEntry.from_args(_table_format_version=2, status=ManifestEntryStatus.ADDED, snapshot_id=snapshot_id, data_file=df))
    manifest = w.to_manifest_file()
    list_path = f"{base}/metadata/snap-{snapshot_id}-{uuid.uuid4()}.avro"
    with write_manifest_list(2, tbl.io.new_output(list_path), snapshot_id, parent.snapshot_id, seq, "deflate") as lw:
        lw.add_manifests([*parent.manifests(tbl.io), manifest])
    snap = Snapshot(snapshot_id=snapshot_id, parent_snapshot_id=parent.snapshot_id, sequence_number=seq,
                    manifest_list=list_path, summary=Summary(operation=Operation.DELETE), schema_id=tbl.schema().schema_id)
    tbl._do_commit(
        (AddSnapshotUpdate(snapshot=snap), SetSnapshotRefUpdate(ref_name="main", type="branch", snapshot_id=snapshot_id)),
        (AssertRefSnapshotId(ref="main", snapshot_id=parent.snapshot_id),),
    )
    return del_path


@pytest.fixture
def setup(lake: Lake):
    ns = "eqd_" + os.urandom(4).hex()
    cat = lake.pyiceberg()
    cat.create_namespace(ns)
    schema = Schema(NestedField(1, "id", LongType(), required=False), NestedField(2, "name", StringType(), required=False))
    tbl = cat.create_table(f"{ns}.t", schema=schema, properties={"write.delete.mode": "merge-on-read"})
    prefix = urllib.parse.urlparse(lake.data_path).path.lstrip("/")
    con = lake.duckdb(lake.mint(f"{lake.bucket}:{prefix}:rw", principal="eqdelete"))
    yield lake, cat, ns, con
    con.close()


def test_equality_delete_becomes_position_deletes(setup):
    lake, cat, ns, con = setup
    tbl = cat.load_table(f"{ns}.t")
    arrow_schema = pa.schema([field("id", pa.int64(), 1), field("name", pa.string(), 2)])
    tbl.append(pa.Table.from_pylist(
        [{"id": 1, "name": "a"}, {"id": 2, "name": "b"}, {"id": 3, "name": None},
         {"id": None, "name": "d"}, {"id": 4, "name": "e"}, {"id": 3, "name": "c"}, {"id": 5, "name": "f"}],
        schema=pa.schema([pa.field("id", pa.int64()), pa.field("name", pa.string())])))
    # id 5 goes first (PyIceberg deletes copy-on-write).
    tbl = cat.load_table(f"{ns}.t")
    tbl.delete(EqualTo("id", 5))
    tbl = cat.load_table(f"{ns}.t")
    assert fresh(con, f"SELECT count(*) FROM l.{ns}.t") == [(6,)]

    del_path = commit_equality_delete(tbl, [{"id": 1, "name": "a"}, {"id": 3, "name": None}, {"id": None, "name": "d"}, {"id": 5, "name": "f"}])

    want = [(2, "b"), (3, "c"), (4, "e")]
    assert fresh(con, f"SELECT id, name FROM l.{ns}.t") == want
    got = cat.load_table(f"{ns}.t").scan().to_arrow()
    assert sorted(((r["id"], r["name"]) for r in got.to_pylist()), key=repr) == want
    with psycopg.connect(lake.dsn) as pg:
        # The equality delete file is no DuckLake file; it is scheduled
        # for deletion with the commit.
        rel = del_path[len(lake.data_path):] if del_path.startswith(lake.data_path) else del_path
        assert pg.execute("SELECT count(*) FROM ducklake_delete_file WHERE path LIKE %s", (f"%{del_path.rsplit('/', 1)[1]}",)).fetchone()[0] == 0
        assert pg.execute("SELECT count(*) FROM ducklake_files_scheduled_for_deletion WHERE path = %s", (rel,)).fetchone()[0] == 1
