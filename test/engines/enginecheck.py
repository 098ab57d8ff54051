"""Checks the engine suites share: what the catalog serves for a table, what
its Postgres has scheduled for deletion, what a table's prefix holds, and
the workloads both engines run beside DuckDB.
Plain functions over test/e2e's lakestack (no fixtures), so test_spark.py
and interop_trino.py ask the same questions the same way."""

from __future__ import annotations

import json

import psycopg

from lakestack import Lake, RestClient, fresh, insert_present


def duck_rows(duck, sql: str) -> list[tuple]:
    """DuckDB's rows of sql in a new snapshot, in the order the engines'
    sorted rows have, to compare with them."""
    return fresh(duck, sql, key=None)


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


def check_no_orphans(duck, lake: Lake, engine: str, location: str, referenced: set[str]) -> None:
    """Issue 15 item 5: of the Avro files under the table's metadata/, the
    engine's own (at least two manifest lists and two manifests, which
    nothing the catalog serves references) are scheduled for deletion, and
    nothing referenced is."""
    ok, leaked, wrong = orphans(metadata_avro(duck, location), referenced, scheduled(lake))
    assert len(ok) >= 4, f"{engine}'s unreferenced manifests under {location}: {ok}, want two lists and two manifests"
    assert leaked == set(), "referenced by nothing and not scheduled for deletion"
    assert wrong == set(), "served, yet scheduled for deletion"


def check_inlined_schema_changes(duck, lake: Lake, ns: str, changes: list[tuple[str, str]], alter, engine_read) -> list[tuple]:
    """Issue 15 item 9: on table ns.inl, whose rows DuckDB inlines in
    Postgres, the engine makes each (kind, change) of changes with
    alter(change), change being what follows ALTER TABLE <table>; after each
    DuckDB inserts more inlined rows and both engines read every row
    (engine_read(): the engine's sorted (id, b) rows of ns.inl); DuckDB then
    reads each earlier snapshot as it was, and every schema version inlined
    rows belong to has its ducklake_schema_versions row. Returns the rows
    DuckDB read last."""
    duck.execute(f"CREATE TABLE l.{ns}.inl (id INTEGER, a VARCHAR, b INTEGER)")
    duck.execute(f"INSERT INTO l.{ns}.inl VALUES (1, 'one', 10), (2, 'two', 20)")
    assert inlined_tables(lake, ns) >= 1, "the rows were not inlined; the test needs inlined rows"
    seen = []  # (snapshot, rows DuckDB read at it)
    for i, (kind, change) in enumerate(changes):
        alter(change)
        insert_present(duck, f"l.{ns}.inl", {"id": 100 + i, "a": f"r{i}", "a2": f"r{i}", "b": 1000 + i, "c": f"c{i}"})
        got = duck_rows(duck, f"SELECT id, b FROM l.{ns}.inl")
        assert len(got) == 3 + i, (kind, got)
        assert engine_read() == got, kind
        snap = duck_rows(duck, "SELECT max(snapshot_id) FROM ducklake_snapshots('l')")[0][0]
        seen.append((snap, got))
    for snap, got in seen:
        assert duck_rows(duck, f"SELECT id, b FROM l.{ns}.inl AT (VERSION => {snap})") == got, snap
    assert schema_versions_missing(lake, ns, "inl") == []
    return seen[-1][1]
