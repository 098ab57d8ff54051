"""Registering Iceberg tables with duckicelake's REST catalog, for
rest_register_test.go: PyIceberg 0.12 registers, PyIceberg and DuckDB
(ducklake extension, attached to the same DuckLake catalog) read the result.
Prints a JSON report on stdout.

usage: python rest_register.py <scenario> <catalog uri> <client id:secret> <libpq dsn> <data path> <ns>

Scenarios:

foreign    a table PyIceberg made with a catalog of its own (files only: its
           metadata files, manifests and data files under <data path><ns>/ext,
           written with REST_DUCK_S3_*): a struct column (so PyIceberg's field
           ids differ from the ones DuckDB would give), identity partitioning,
           a sort order, properties, two appends and a copy-on-write delete;
           registered as <ns>.ext, read back, appended to through the catalog.
roundtrip  a table made through the catalog, appended to, dropped without
           purge and registered again from the metadata location it had;
           registering it again, or under a second name, is refused.
"""

from __future__ import annotations

import json
import os
import sys

import pyarrow as pa
from pyiceberg.catalog import MetastoreCatalog, load_catalog
from pyiceberg.exceptions import TableAlreadyExistsError
from pyiceberg.expressions import EqualTo
from pyiceberg.partitioning import PartitionField, PartitionSpec
from pyiceberg.schema import Schema
from pyiceberg.serializers import FromInputFile
from pyiceberg.table import CommitTableResponse, Table
from pyiceberg.table.sorting import SortField, SortOrder
from pyiceberg.transforms import IdentityTransform
from pyiceberg.types import IntegerType, LongType, NestedField, StringType, StructType

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import rest_duckdb  # noqa: E402  (same directory: DuckDB attached to the catalog)


class FileCatalog(MetastoreCatalog):
    """A catalog that is only files: PyIceberg writes every metadata file
    itself, as a catalog other than duckicelake would (Glue, Hive, SQL)."""

    def __init__(self, **props):
        super().__init__("files", **props)
        self.locations: dict[tuple, str] = {}

    def create_table(self, identifier, schema, location=None, partition_spec=PartitionSpec(), sort_order=SortOrder(), properties={}):
        staged = self._create_staged_table(identifier, schema, location, partition_spec, sort_order, properties)
        self._write_metadata(staged.metadata, staged.io, staged.metadata_location)
        self.locations[tuple(identifier)] = staged.metadata_location
        return self.load_table(identifier)

    def load_table(self, identifier):
        loc = self.locations[tuple(identifier)]
        io = self._load_file_io(location=loc)
        md = FromInputFile.table_metadata(io.new_input(loc))
        return Table(identifier=tuple(identifier), metadata=md, metadata_location=loc, io=io, catalog=self)

    def commit_table(self, table, requirements, updates):
        ident = tuple(table.name())
        staged = self._update_and_stage_table(self.load_table(ident), ident, requirements, updates)
        self._write_metadata(staged.metadata, staged.io, staged.metadata_location)
        self.locations[ident] = staged.metadata_location
        return CommitTableResponse(metadata=staged.metadata, metadata_location=staged.metadata_location)

    def _unsupported(self, *args, **kwargs):
        raise NotImplementedError

    (drop_table, rename_table, list_tables, list_namespaces, create_namespace, drop_namespace, load_namespace_properties,
     update_namespace_properties, list_views, drop_view, view_exists, load_view, register_table, register_view) = (_unsupported,) * 14


def rows(table: pa.Table) -> list[str]:
    return sorted(json.dumps(r, sort_keys=True, default=str) for r in table.to_pylist())


def duck_rows(duck, ns: str, name: str) -> list[str]:
    rel = duck.execute(f"SELECT * FROM l.{ns}.{name}")
    cols = [d[0] for d in rel.description]
    return sorted(json.dumps(dict(zip(cols, r)), sort_keys=True, default=str) for r in rel.fetchall())


def field_ids(table) -> list[list]:
    out = []

    def walk(fields, prefix):
        for f in fields:
            out.append([f.field_id, prefix + f.name])
            if isinstance(f.field_type, StructType):
                walk(f.field_type.fields, prefix + f.name + ".")

    walk(table.schema().fields, "")
    return out


def foreign(rest, duck, dsn: str, data_path: str, ns: str) -> dict:
    s3 = {
        "s3.endpoint": os.environ["REST_DUCK_S3_ENDPOINT"],
        "s3.access-key-id": os.environ["REST_DUCK_S3_KEY"],
        "s3.secret-access-key": os.environ["REST_DUCK_S3_SECRET"],
        "s3.session-token": os.environ.get("REST_DUCK_S3_TOKEN", ""),
        "s3.region": os.environ.get("REST_DUCK_S3_REGION", "us-east-1"),
        "py-io-impl": "pyiceberg.io.pyarrow.PyArrowFileIO",
    }
    files = FileCatalog(**s3)
    schema = Schema(
        NestedField(1, "id", LongType(), required=False),
        NestedField(2, "s", StructType(NestedField(5, "a", IntegerType(), required=False), NestedField(6, "b", StringType(), required=False)), required=False),
        NestedField(3, "name", StringType(), required=False),
        NestedField(4, "cat", StringType(), required=False),
    )
    ft = files.create_table(
        (ns, "ext"),
        schema,
        location=f"{data_path}{ns}/ext",
        partition_spec=PartitionSpec(PartitionField(source_id=4, field_id=1000, transform=IdentityTransform(), name="cat")),
        sort_order=SortOrder(SortField(source_id=1, transform=IdentityTransform())),
        properties={"owner": "registrar", "write.parquet.compression-codec": "zstd"},
    )
    arrow = ft.schema().as_arrow()

    def batch(ids, cat):
        return pa.Table.from_pylist(
            [{"id": i, "s": {"a": i * 10, "b": f"b{i}"}, "name": f"n{i}", "cat": cat} for i in ids], schema=arrow
        )

    ft.append(batch(range(1, 6), "a"))
    ft.append(batch(range(6, 9), "b"))
    ft.delete(EqualTo("id", 3))
    ft = files.load_table((ns, "ext"))
    want = rows(ft.scan().to_arrow())

    rt = rest.register_table((ns, "ext"), ft.metadata_location)
    out = {
        "metadata_location": ft.metadata_location,
        "foreign_rows": len(want),
        "foreign_field_ids": field_ids(ft),
        "registered_field_ids": field_ids(rt),
        "registered_rows_equal": rows(rt.scan().to_arrow()) == want,
        "duckdb_rows_equal": duck_rows(duck, ns, "ext") == want,
        "registered_location": rt.location(),
        "properties": {k: v for k, v in rt.properties.items() if k == "owner"},
        "spec": [[f.source_id, str(f.transform), f.name] for f in rt.spec().fields],
        "sort_order": [[f.source_id, str(f.transform), str(f.direction)] for f in rt.sort_order().fields],
        "format_version": rt.metadata.format_version,
        "uuid_kept": str(rt.metadata.table_uuid) == str(ft.metadata.table_uuid),
    }
    # The registered table is a table of the catalog like any other.
    rt.append(batch(range(20, 22), "c"))
    after = rows(rest.load_table((ns, "ext")).scan().to_arrow())
    out["rows_after_append"] = len(after)
    out["duckdb_equal_after_append"] = duck_rows(duck, ns, "ext") == after
    return out


def roundtrip(rest, duck, dsn: str, data_path: str, ns: str) -> dict:
    schema = Schema(NestedField(1, "id", LongType(), required=False), NestedField(2, "v", StringType(), required=False))
    t = rest.create_table((ns, "rt"), schema)
    t.append(pa.Table.from_pylist([{"id": i, "v": f"v{i}"} for i in range(10)], schema=t.schema().as_arrow()))
    t = rest.load_table((ns, "rt"))
    want = rows(t.scan().to_arrow())
    loc = t.metadata_location
    old_id = duck.execute(
        "SELECT table_id FROM __ducklake_metadata_l.ducklake_table t JOIN __ducklake_metadata_l.ducklake_schema s USING (schema_id) "
        "WHERE s.schema_name = ? AND t.table_name = 'rt' AND t.end_snapshot IS NULL", [ns]).fetchone()[0]
    rest.drop_table((ns, "rt"))
    rt = rest.register_table((ns, "rt"), loc)
    out = {
        "metadata_location": loc,
        "rows": len(want),
        "registered_rows_equal": rows(rt.scan().to_arrow()) == want,
        "duckdb_rows_equal": duck_rows(duck, ns, "rt") == want,
        "uuid_kept": str(rt.metadata.table_uuid) == str(t.metadata.table_uuid),
    }
    # DuckLake deletes a dropped table's files once the snapshots that saw
    # it expire. The registered table took its files over, so expiring the
    # dropped table's snapshots (only those: the stack is shared) and
    # cleaning up must leave every row readable.
    versions = [r[0] for r in duck.execute(
        "SELECT snapshot_id FROM __ducklake_metadata_l.ducklake_snapshot_changes WHERE "
        "regexp_matches(changes_made, ?) OR changes_made LIKE ? ORDER BY 1",
        [f"(^|,)[a-z_]+:{old_id}(,|$)", f'%created_table:"{ns}"."rt"%']).fetchall()]
    duck.execute(f"CALL ducklake_expire_snapshots('l', versions => {versions})")
    duck.execute("CALL ducklake_cleanup_old_files('l', cleanup_all => true)")
    duck.execute("DETACH l")
    duck = rest_duckdb.connect(dsn, data_path)
    out["expired_versions"] = len(versions)
    out["rows_after_cleanup_equal"] = rows(rest.load_table((ns, "rt")).scan().to_arrow()) == want
    out["duckdb_rows_after_cleanup_equal"] = duck_rows(duck, ns, "rt") == want
    for name, key in (("rt", "register_existing"), ("rt2", "register_same_table_twice")):
        try:
            rest.register_table((ns, name), loc)
            out[key] = "registered"
        except TableAlreadyExistsError as e:
            out[key] = "TableAlreadyExistsError: " + str(e)
    return out


def main() -> None:
    scenario, uri, cred, dsn, data_path, ns = sys.argv[1:7]
    rest = load_catalog("duckicelake", type="rest", uri=uri, credential=cred, warehouse="lake")
    duck = rest_duckdb.connect(dsn, data_path)
    out = {"foreign": foreign, "roundtrip": roundtrip}[scenario](rest, duck, dsn, data_path, ns)
    json.dump(out, sys.stdout)


if __name__ == "__main__":
    main()
