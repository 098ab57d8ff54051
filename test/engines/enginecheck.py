"""Checks the engine suites share: what the catalog serves for a table, what
its Postgres has scheduled for deletion, and what a table's prefix holds.
Plain functions over test/e2e's lakestack (no fixtures), so test_spark.py
and interop_trino.py ask the same questions the same way."""

from __future__ import annotations

import json

import psycopg

from lakestack import Lake, RestClient


def load_table(lake: Lake, ns: str, table: str) -> dict:
    """The table's metadata as the catalog serves it (LoadTable)."""
    c = RestClient(lake.catalog_url, lake.token())
    status, body = c.request("GET", f"/v1/{lake.warehouse}/namespaces/{ns}/tables/{table}")
    if status != 200:
        raise RuntimeError(f"LoadTable {ns}.{table}: {status} {body[:300]!r}")
    return json.loads(body)["metadata"]


def scheduled(lake: Lake) -> set[str]:
    """Every path in ducklake_files_scheduled_for_deletion, absolute (a
    relative one is relative to the catalog's data path)."""
    with psycopg.connect(lake.dsn) as pg:
        rows = pg.execute(
            """SELECT CASE WHEN f.path_is_relative THEN m.value || f.path ELSE f.path END
               FROM ducklake_files_scheduled_for_deletion f, ducklake_metadata m
               WHERE m.key = 'data_path' AND coalesce(m.scope, '') = ''""").fetchall()
    return {r[0] for r in rows}


def schema_versions_missing(lake: Lake, ns: str, table: str) -> list[tuple]:
    """The schema versions of table ns.table's inlined-data tables that have
    no ducklake_schema_versions row (issue 15 item 9: DuckDB's CREATE TABLE
    and ALTER write both, for the table's new version). Only for a table
    DuckDB created: one an engine created gets its first inlined-data table
    from DuckDB's first inlined INSERT, named after the catalog's schema
    version at that time, which has no row for the table (DuckDB and the
    catalog's reader fall back to the snapshot of that version)."""
    with psycopg.connect(lake.dsn) as pg:
        return pg.execute(
            """SELECT i.table_id, i.schema_version FROM ducklake_inlined_data_tables i
               JOIN ducklake_table t USING (table_id) JOIN ducklake_schema s USING (schema_id)
               WHERE s.schema_name = %s AND t.table_name = %s AND t.end_snapshot IS NULL AND NOT EXISTS (
                   SELECT 1 FROM ducklake_schema_versions v
                   WHERE v.table_id = i.table_id AND v.schema_version = i.schema_version)""",
            (ns, table)).fetchall()


def inlined_tables(lake: Lake, ns: str) -> int:
    """How many inlined-data tables the live tables of namespace ns have."""
    with psycopg.connect(lake.dsn) as pg:
        return pg.execute(
            """SELECT count(*) FROM ducklake_inlined_data_tables i JOIN ducklake_table t USING (table_id)
               JOIN ducklake_schema s USING (schema_id) WHERE s.schema_name = %s AND t.end_snapshot IS NULL""",
            (ns,)).fetchone()[0]


def listed(duck, pattern: str) -> set[str]:
    """The objects matching a glob, listed through the gateway with DuckDB."""
    duck.execute("BEGIN")
    try:
        return {r[0] for r in duck.execute("SELECT file FROM glob(?)", [pattern]).fetchall()}
    finally:
        duck.execute("COMMIT")


def metadata_avro(duck, location: str) -> set[str]:
    """The Avro files (manifest lists and manifests) under the table's
    metadata/ directory."""
    return listed(duck, location.rstrip("/") + "/metadata/*.avro")


def orphans(listed: set[str], referenced: set[str], sched: set[str]) -> tuple[set[str], set[str], set[str]]:
    """Splits a table's listed Avro files: (the engine's, which nothing the
    catalog serves references, scheduled for deletion; the same, not
    scheduled — the leak issue 15 item 5 was; scheduled although served)."""
    unreferenced = listed - referenced
    return unreferenced & sched, unreferenced - sched, referenced & sched
