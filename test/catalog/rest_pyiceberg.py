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

duckdb-iceberg <ns> <table>
    DuckDB's iceberg extension ATTACHes the same REST catalog (OAuth2 client
    credentials, vended credentials) and selects the table's rows.

truth <libpq dsn> <data path> <ns> <table>   (no catalog uri/credential)
    The ground truth: DuckDB with the ducklake extension reads the table at
    every DuckLake snapshot where it exists (AT (VERSION => id)), with the
    S3 secret of REST_DUCK_S3_* (see rest_duckdb.py).
"""

from __future__ import annotations

import json
import os
import sys

from pyiceberg.catalog import load_catalog
from pyiceberg.exceptions import (
    NamespaceAlreadyExistsError,
    NamespaceNotEmptyError,
    NoSuchNamespaceError,
    NoSuchTableError,
    TableAlreadyExistsError,
)


def catalog_for(uri: str, credential: str, **props):
    """The catalog at uri, logging in with the OAuth client credential; props
    are further catalog properties (rest_remote_sign.py asks for signing)."""
    return load_catalog(
        "duckicelake",
        type="rest",
        uri=uri,
        credential=credential,
        warehouse="lake",
        **props,
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
    return render_rows([[r[c] for c in cols] for r in arrow_table.to_pylist()])


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


def render_rows(rows) -> list[str]:
    return sorted(json.dumps([str(v) if v is not None else None for v in r]) for r in rows)


def scenario_duckdb_iceberg(uri: str, credential: str, ns: str, table: str) -> dict:
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
    import duckdb_ext

    client_id, secret = credential.split(":", 1)
    con = duckdb_ext.connect()
    con.execute(
        "CREATE SECRET ice (TYPE ICEBERG, CLIENT_ID ?, CLIENT_SECRET ?, OAUTH2_SERVER_URI ?)",
        [client_id, secret, uri + "/v1/oauth/tokens"],
    )
    con.execute(f"ATTACH 'lake' AS ice (TYPE ICEBERG, ENDPOINT '{uri}', SECRET ice, ACCESS_DELEGATION_MODE 'vended_credentials')")
    return {"current": render_rows(con.execute(f'SELECT * FROM ice."{ns}"."{table}"').fetchall())}


def scenario_truth(dsn: str, data_path: str, ns: str, table: str) -> dict:
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import rest_duckdb

    con = rest_duckdb.connect(dsn, data_path)
    snaps = [r[0] for r in con.execute("SELECT snapshot_id FROM ducklake_snapshots('l') ORDER BY 1").fetchall()]
    out: dict = {"snapshots": {}}
    for sid in snaps:
        try:
            rows = con.execute(f'SELECT * FROM l."{ns}"."{table}" AT (VERSION => {sid})').fetchall()
        except Exception:  # noqa: BLE001 — the table does not exist at sid
            continue
        out["snapshots"][str(sid)] = render_rows(rows)
    out["current"] = render_rows(con.execute(f'SELECT * FROM l."{ns}"."{table}"').fetchall())
    return out


SCENARIOS = {"catalog": scenario_catalog, "read": scenario_read, "duckdb-iceberg": scenario_duckdb_iceberg}


def main(argv: list[str]) -> int:
    if len(argv) >= 6 and argv[1] == "truth":
        json.dump(scenario_truth(*argv[2:6]), sys.stdout)
        return 0
    if len(argv) < 4 or argv[1] not in SCENARIOS:
        print(__doc__, file=sys.stderr)
        return 2
    if argv[1] == "duckdb-iceberg":
        json.dump(scenario_duckdb_iceberg(*argv[2:]), sys.stdout)
        return 0
    cat = catalog_for(argv[2], argv[3])
    json.dump(SCENARIOS[argv[1]](cat, *argv[4:]), sys.stdout)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
