"""Writes pyiceberg-manifest.avro and pyiceberg-manifest-list.avro with
PyIceberg's own manifest writers (deflate, as PyIceberg writes by default),
for read_manifest_test.go.

usage: python catalog/iceberg/testdata/pyiceberg_manifest.py  (from the repo root,
with the venv of scripts/venv.sh)
"""

import os
import uuid
from decimal import Decimal

from pyiceberg.io.pyarrow import PyArrowFileIO
from pyiceberg.manifest import (
    DataFile,
    DataFileContent,
    FileFormat,
    ManifestEntry,
    ManifestEntryStatus,
    write_manifest,
    write_manifest_list,
)
from pyiceberg.partitioning import PartitionField, PartitionSpec
from pyiceberg.schema import Schema
from pyiceberg.transforms import BucketTransform, DayTransform, IdentityTransform, TruncateTransform
from pyiceberg.typedef import Record
from pyiceberg.types import (
    DateType,
    DecimalType,
    LongType,
    NestedField,
    StringType,
    TimestampType,
    UUIDType,
)

here = os.path.dirname(os.path.abspath(__file__))
schema = Schema(
    NestedField(1, "id", LongType(), required=True),
    NestedField(2, "ts", TimestampType()),
    NestedField(3, "cat", StringType()),
    NestedField(4, "amount", DecimalType(10, 2)),
    NestedField(5, "u", UUIDType()),
    NestedField(6, "d", DateType()),
)
spec = PartitionSpec(
    PartitionField(2, 1000, DayTransform(), "ts_day"),
    PartitionField(1, 1001, BucketTransform(4), "id_bucket"),
    PartitionField(3, 1002, IdentityTransform(), "cat"),
    PartitionField(4, 1003, IdentityTransform(), "amount"),
    PartitionField(5, 1004, IdentityTransform(), "u"),
    PartitionField(3, 1005, TruncateTransform(2), "cat_trunc"),
    spec_id=3,
)
io = PyArrowFileIO()
snapshot = 7302548421370193458
u = uuid.UUID("6a1f3a7c-1b2c-4d3e-8f90-123456789abc")
manifest_path = os.path.join(here, "pyiceberg-manifest.avro")


def added(file_path: str, **fields) -> ManifestEntry:
    """An ADDED entry of this snapshot for a Parquet data file."""
    return ManifestEntry.from_args(
        status=ManifestEntryStatus.ADDED,
        snapshot_id=snapshot,
        data_file=DataFile.from_args(content=DataFileContent.DATA, file_path=file_path, file_format=FileFormat.PARQUET, **fields),
    )


with write_manifest(2, spec, schema, io.new_output(manifest_path), snapshot, "deflate") as w:
    w.add(
        added(
            "s3://lake/data/ns/t/data/ts_day=2024-01-02/00000-0-a.parquet",
            partition=Record(19724, 3, "books", Decimal("12.50"), u, "bo"),
            record_count=3,
            file_size_in_bytes=1234,
            column_sizes={1: 40, 3: 30},
            value_counts={1: 3, 3: 3},
            null_value_counts={1: 0, 3: 1},
            nan_value_counts={},
            lower_bounds={1: (5).to_bytes(8, "little", signed=True), 3: b"a"},
            upper_bounds={1: (99).to_bytes(8, "little", signed=True), 3: b"z"},
            split_offsets=[4],
            sort_order_id=0,
        )
    )
    w.add(
        added(
            "s3://lake/data/ns/t/data/ts_day=null/00000-0-b.parquet",
            partition=Record(None, 0, None, None, None, None),
            record_count=1,
            file_size_in_bytes=99,
        )
    )
manifest = w.to_manifest_file()
list_path = os.path.join(here, "pyiceberg-manifest-list.avro")
with write_manifest_list(2, io.new_output(list_path), snapshot, 42, 5, "deflate") as lw:
    lw.add_manifests([manifest])
print(manifest_path, list_path)
