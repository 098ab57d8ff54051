"""Drive PyIceberg's view API against duckicelake's Iceberg REST catalog and
report, as JSON on stdout, what PyIceberg saw — for rest_views_test.go.

usage: python rest_views_pyiceberg.py <catalog uri> <client id:secret> <ns> <duckdb view>

In namespace <ns>, which must hold the view <duckdb view> that DuckDB made
and a table "orders" (id INTEGER, v VARCHAR): create a view with a duckdb
and a spark representation, list, check and load views (the DuckDB-made one
too), provoke the errors PyIceberg maps, and drop the view again. The view
"py_view" is left in place for the Go test to query with DuckDB.
"""

from __future__ import annotations

import json
import sys

from pyiceberg.schema import Schema
from pyiceberg.types import IntegerType, NestedField, StringType
from pyiceberg.view.metadata import SQLViewRepresentation, ViewVersion

from rest_pyiceberg import catalog_for, raised  # same directory


def describe(view) -> dict:
    md = view.metadata
    cur = next(v for v in md.versions if v.version_id == md.current_version_id)
    schema = next(s for s in md.schemas if s.schema_id == cur.schema_id)
    return {
        "uuid": md.view_uuid,
        "location": md.location,
        "current": md.current_version_id,
        "versions": len(md.versions),
        "log": [e.version_id for e in md.version_log],
        "fields": [f.name for f in schema.fields],
        "representations": {r.root.dialect: r.root.sql for r in cur.representations},
        "default_namespace": list(cur.default_namespace),
        "properties": dict(md.properties),
    }


def main(argv: list[str]) -> int:
    uri, credential, ns, duck_view = argv[1:5]
    cat = catalog_for(uri, credential)
    schema = Schema(
        NestedField(1, "id", IntegerType(), required=False),
        NestedField(2, "label", StringType(), required=False),
    )
    version = ViewVersion(
        schema_id=0,
        summary={"engine-name": "pyiceberg"},
        representations=[
            SQLViewRepresentation(type="sql", sql=f"SELECT id, v FROM {ns}.orders", dialect="duckdb"),
            SQLViewRepresentation(type="sql", sql=f"select id, v from {ns}.orders", dialect="spark"),
        ],
        default_namespace=(ns,),
    )
    out: dict = {}
    out["exists_before"] = cat.view_exists((ns, "py_view"))
    created = cat.create_view((ns, "py_view"), schema, version, properties={"owner": "py"})
    out["created"] = describe(created)
    out["create_again"] = raised(lambda: cat.create_view((ns, "py_view"), schema, version))
    out["create_over_table"] = raised(lambda: cat.create_view((ns, "orders"), schema, version))
    out["exists_after"] = cat.view_exists((ns, "py_view"))
    out["list"] = sorted(".".join(i) for i in cat.list_views(ns))
    out["list_missing_namespace"] = raised(lambda: cat.list_views("no_such_ns"))
    out["loaded"] = describe(cat.load_view((ns, "py_view")))
    out["duckdb_view"] = describe(cat.load_view((ns, duck_view)))
    out["load_missing"] = raised(lambda: cat.load_view((ns, "no_such_view")))
    out["load_table_as_view"] = raised(lambda: cat.load_view((ns, "orders")))
    out["table_exists_for_view"] = cat.table_exists((ns, "py_view"))

    cat.create_view((ns, "py_tmp"), schema, version)
    cat.drop_view((ns, "py_tmp"))
    out["exists_after_drop"] = cat.view_exists((ns, "py_tmp"))
    out["drop_missing"] = raised(lambda: cat.drop_view((ns, "py_tmp")))
    out["list_after_drop"] = sorted(".".join(i) for i in cat.list_views(ns))
    json.dump(out, sys.stdout)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
