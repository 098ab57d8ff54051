"""Drive PyIceberg's RestCatalog against duckicelake's Iceberg REST catalog and
report, as JSON on stdout, what PyIceberg saw — for rest_pyiceberg_test.go.

usage: python rest_pyiceberg.py <scenario> <catalog uri> <client id:secret> [args…]

catalog <ns> <table>
    The catalog operations: list namespaces and tables, properties, exists
    checks, create/update/drop a namespace, rename and drop a table, and the
    errors PyIceberg raises for unknown names. <ns>.<table> must exist.

read <ns> <table>
    load_table with vended credentials, then scan every snapshot in the
    table's history (time travel) and the current one, through the FileIO
    PyIceberg builds from the LoadTable answer. Rows are rendered as sorted
    lists of strings. Also reports the FileIO endpoint and whether the
    storage credential PyIceberg picked is the vended one.
"""

from __future__ import annotations

import json
import sys

from pyiceberg.catalog import load_catalog
from pyiceberg.exceptions import (
    NamespaceAlreadyExistsError,
    NamespaceNotEmptyError,
    NoSuchNamespaceError,
    NoSuchTableError,
    TableAlreadyExistsError,
)


def catalog_for(uri: str, credential: str):
    return load_catalog(
        "duckicelake",
        type="rest",
        uri=uri,
        credential=credential,
        warehouse="lake",
    )


def raised(fn) -> str:
    try:
        fn()
    except Exception as e:  # noqa: BLE001 — the class name is the result
        return type(e).__name__
    return ""


def scenario_catalog(cat, ns: str, table: str) -> dict:
    out: dict = {}
    out["namespaces"] = sorted(".".join(n) for n in cat.list_namespaces())
    out["tables"] = sorted(".".join(t) for t in cat.list_tables(ns))
    out["properties"] = cat.load_namespace_properties(ns)
    out["namespace_exists"] = [cat.namespace_exists(ns), cat.namespace_exists("nope")]
    out["table_exists"] = [cat.table_exists((ns, table)), cat.table_exists((ns, "nope"))]

    cat.create_namespace("py_ns", {"owner": "pyiceberg"})
    out["create_again"] = raised(lambda: cat.create_namespace("py_ns"))
    summary = cat.update_namespace_properties("py_ns", removals={"owner", "missing"}, updates={"k": "v"})
    out["update"] = {"updated": sorted(summary.updated), "removed": sorted(summary.removed), "missing": sorted(summary.missing)}
    out["py_ns_properties"] = cat.load_namespace_properties("py_ns")

    cat.rename_table((ns, table), (ns, table + "_renamed"))
    out["after_rename"] = sorted(".".join(t) for t in cat.list_tables(ns))
    out["rename_missing"] = raised(lambda: cat.rename_table((ns, "nope"), (ns, "x")))
    out["rename_onto_existing"] = raised(lambda: cat.rename_table((ns, table + "_renamed"), (ns, table + "_renamed")))
    out["drop_non_empty_namespace"] = raised(lambda: cat.drop_namespace(ns))
    cat.drop_table((ns, table + "_renamed"))
    out["after_drop"] = sorted(".".join(t) for t in cat.list_tables(ns))
    out["drop_missing_table"] = raised(lambda: cat.drop_table((ns, "nope")))
    out["list_missing_namespace"] = raised(lambda: cat.list_tables("nope"))
    out["load_missing_table"] = raised(lambda: cat.load_table((ns, "nope")))
    out["multi_level"] = raised(lambda: cat.list_tables(("a", "b")))
    cat.drop_namespace("py_ns")
    out["namespaces_after"] = sorted(".".join(n) for n in cat.list_namespaces())
    return out


def rows_of(arrow_table) -> list[str]:
    cols = arrow_table.column_names
    rows = []
    for r in arrow_table.to_pylist():
        rows.append(json.dumps([str(r[c]) if r[c] is not None else None for c in cols]))
    return sorted(rows)


def scenario_read(cat, ns: str, table: str) -> dict:
    t = cat.load_table((ns, table))
    props = t.io.properties
    out: dict = {
        "metadata_location": t.metadata_location,
        "endpoint": props.get("s3.endpoint"),
        "vended": props.get("s3.access-key-id", "").startswith("DIL"),
        "current_snapshot": t.metadata.current_snapshot_id,
        "columns": [f.name for f in t.schema().fields],
        "current": rows_of(t.scan().to_arrow()),
        "snapshots": {},
    }
    for s in t.metadata.snapshots:
        out["snapshots"][str(s.snapshot_id)] = rows_of(t.scan(snapshot_id=s.snapshot_id).to_arrow())
    return out


SCENARIOS = {"catalog": scenario_catalog, "read": scenario_read}


def main(argv: list[str]) -> int:
    if len(argv) < 4 or argv[1] not in SCENARIOS:
        print(__doc__, file=sys.stderr)
        return 2
    cat = catalog_for(argv[2], argv[3])
    json.dump(SCENARIOS[argv[1]](cat, *argv[4:]), sys.stdout)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
