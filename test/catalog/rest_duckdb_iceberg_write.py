"""DuckDB 1.5's iceberg extension writes through duckicelake's Iceberg REST
catalog; DuckDB's ducklake extension (attached to the same DuckLake catalog)
and PyIceberg read the result — for rest_duckdb_iceberg_write_test.go.
Prints a JSON report on stdout.

usage: python rest_duckdb_iceberg_write.py <catalog uri> <client id:secret> <libpq dsn> <data path> <ns>

Steps, each recorded as {"op", "ok", "error"} (an operation DuckDB refuses
is reported with its error text, not raised; the table is read after
DELETE and UPDATE either way): CREATE SCHEMA (namespace
create), CREATE TABLE, two INSERTs, DELETE, UPDATE, CREATE TABLE AS. After
every step that changes rows the table is read three ways — DuckDB's
iceberg extension, DuckDB's ducklake extension, PyIceberg — and the sorted
rendered rows compared ("reads"). DuckDB's ducklake extension reaches S3
through REST_DUCK_S3_* (see rest_duckdb.py); the iceberg extension and
PyIceberg through the credentials the catalog vends.
"""

from __future__ import annotations

import json
import os
import sys

from pyiceberg.catalog import load_catalog

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import duckdb_ext  # noqa: E402  (test/duckdb_ext.py: offline extension loading)
import rest_duckdb  # noqa: E402  (DuckDB attached to the DuckLake catalog)
from rest_pyiceberg_write import render, rows_of  # noqa: E402


def iceberg_duck(uri: str, client: str, secret: str):
    con = duckdb_ext.connect()
    con.execute("SET TimeZone = 'UTC'")
    con.execute(
        "CREATE SECRET cat (TYPE ICEBERG, CLIENT_ID ?, CLIENT_SECRET ?, OAUTH2_SERVER_URI ?)",
        [client, secret, uri + "/v1/oauth/tokens"],
    )
    con.execute(
        f"ATTACH 'lake' AS ice (TYPE ICEBERG, ENDPOINT '{uri}', SECRET cat, "
        "ACCESS_DELEGATION_MODE 'vended_credentials')"
    )
    return con


def main(argv: list[str]) -> int:
    if len(argv) != 6:
        print(__doc__, file=sys.stderr)
        return 2
    uri, cred, dsn, data_path, ns = argv[1:]
    client, secret = cred.split(":", 1)
    ice = iceberg_duck(uri, client, secret)
    lake = rest_duckdb.connect(dsn, data_path)
    cat = load_catalog(
        "duckicelake", type="rest", uri=uri, credential=cred, warehouse="lake",
        **{"header.X-Iceberg-Access-Delegation": "vended-credentials"},
    )
    report: dict = {"ops": [], "reads": []}

    def op(name: str, sql: str) -> bool:
        try:
            ice.execute(sql)
            report["ops"].append({"op": name, "ok": True})
            return True
        except Exception as e:  # noqa: BLE001 — reported to the Go test
            report["ops"].append({"op": name, "ok": False, "error": f"{type(e).__name__}: {e}"})
            return False

    def read(step: str, table: str) -> None:
        entry: dict = {"step": step, "table": table}

        def duck(con, name: str, columns_key: str, engine: str):
            """The sorted rendered rows of name through con, recording its
            columns under columns_key; None (and the error, under engine)
            if it fails."""
            try:
                rel = con.execute(f"SELECT * FROM {name}")
                entry[columns_key] = [d[0] for d in rel.description]
                return sorted("|".join(render(v) for v in r) for r in rel.fetchall())
            except Exception as e:  # noqa: BLE001
                entry.setdefault("errors", {})[engine] = f"{type(e).__name__}: {e}"
                return None

        dk_ice = duck(ice, f"ice.{ns}.{table}", "columns", "iceberg")
        dk_lake = duck(lake, f"l.{ns}.{table}", "ducklake_columns", "ducklake")
        try:
            py = rows_of(cat.load_table((ns, table)).scan().to_arrow())
        except Exception as e:  # noqa: BLE001
            entry.setdefault("errors", {})["pyiceberg"] = f"{type(e).__name__}: {e}"
            py = None
        entry["rows"] = {"iceberg": dk_ice, "ducklake": dk_lake, "pyiceberg": py}
        report["reads"].append(entry)

    t = f"ice.{ns}.t"
    cols = "id, name, amount, d, ts, price, flag"

    def rows(lo: int, hi: int) -> str:
        return (
            f"SELECT i, CASE WHEN i % 7 = 0 THEN NULL ELSE 'n' || i END, i * 1.5, "
            f"DATE '2024-01-01' + (i % 30)::INTEGER, TIMESTAMP '2024-01-01' + INTERVAL (i) HOUR, "
            f"(i / 4)::DECIMAL(10,2), i % 2 = 0 FROM range({lo}, {hi}) r(i)"
        )

    op("create schema", f"CREATE SCHEMA ice.{ns}")
    op("create table", f"CREATE TABLE {t} (id BIGINT, name VARCHAR, amount DOUBLE, d DATE, "
       "ts TIMESTAMP, price DECIMAL(10,2), flag BOOLEAN)")
    if op("insert 1", f"INSERT INTO {t} ({cols}) {rows(0, 50)}"):
        read("insert 1", "t")
    if op("insert 2", f"INSERT INTO {t} ({cols}) {rows(50, 120)}"):
        read("insert 2", "t")
    # Read after DELETE and UPDATE even when one fails, so the report shows
    # what the table holds.
    op("delete", f"DELETE FROM {t} WHERE id < 10")
    read("delete", "t")
    op("update", f"UPDATE {t} SET name = 'upd' WHERE id BETWEEN 20 AND 29")
    read("update", "t")
    if op("create table as", f"CREATE TABLE ice.{ns}.c AS SELECT id, name FROM {t} WHERE id >= 100"):
        read("create table as", "c")
    json.dump(report, sys.stdout)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
