"""Schema changes committed through the catalog on a table whose rows are
inlined in DuckLake (issue 15, item 9): after each kind of change an Iceberg
client can make — add, rename, widen, make optional, drop — DuckDB (ducklake)
inserts more inlined rows and reads the rows of every schema version, and
every schema version that inlined rows belong to has its
ducklake_schema_versions row, as DuckDB's own ALTER writes it."""

from __future__ import annotations

import os
import urllib.parse

import psycopg
import pytest
from pyiceberg.types import LongType, StringType

from lakestack import Lake, fresh, insert_present


@pytest.fixture
def setup(lake: Lake):
    ns = "inl_" + os.urandom(4).hex()
    prefix = urllib.parse.urlparse(lake.data_path).path.lstrip("/")
    con = lake.duckdb(lake.mint(f"{lake.bucket}:{prefix}:rw", principal="inlined"))
    con.execute(f"CREATE SCHEMA l.{ns}")
    con.execute(f"CREATE TABLE l.{ns}.t (id INTEGER, a VARCHAR, b INTEGER)")
    con.execute(f"INSERT INTO l.{ns}.t VALUES (1, 'one', 10), (2, 'two', 20)")
    yield lake, con, ns
    con.close()


def test_inlined_rows_of_every_schema_version(setup):
    lake, con, ns = setup
    cat = lake.pyiceberg()
    with psycopg.connect(lake.dsn) as pg:
        n = pg.execute(f"""SELECT count(*) FROM ducklake_inlined_data_tables i JOIN ducklake_table t USING (table_id)
                           JOIN ducklake_schema s USING (schema_id) WHERE s.schema_name = %s AND t.end_snapshot IS NULL""",
                       (ns,)).fetchone()[0]
    assert n >= 1, "the rows were not inlined; the test needs inlined rows"

    changes = [
        ("add", lambda u: u.add_column("c", StringType())),
        ("rename", lambda u: u.rename_column("a", "a2")),
        ("widen", lambda u: u.update_column("b", LongType())),
        ("drop", lambda u: u.delete_column("c")),
    ]
    want = [(1, "one", 10), (2, "two", 20)]
    for i, (kind, change) in enumerate(changes):
        t = cat.load_table(f"{ns}.t")
        with t.update_schema() as u:
            change(u)
        insert_present(con, f"l.{ns}.t", {"id": 100 + i, "a": f"r{i}", "a2": f"r{i}", "b": 1000 + i, "c": f"c{i}"})
        got = fresh(con, f"SELECT * FROM l.{ns}.t")
        assert len(got) == len(want) + 1, (kind, got)
        want = got
        # PyIceberg reads the same rows (the catalog's view of the inlined rows).
        arrow = cat.load_table(f"{ns}.t").scan().to_arrow()
        assert arrow.num_rows == len(got), (kind, arrow.num_rows, got)

    with psycopg.connect(lake.dsn) as pg:
        missing = pg.execute(f"""
            SELECT i.table_id, i.schema_version FROM ducklake_inlined_data_tables i
            JOIN ducklake_table t USING (table_id) JOIN ducklake_schema s USING (schema_id)
            WHERE s.schema_name = %s AND NOT EXISTS (
                SELECT 1 FROM ducklake_schema_versions v WHERE v.table_id = i.table_id AND v.schema_version = i.schema_version)""",
                             (ns,)).fetchall()
    assert missing == [], f"inlined rows of schema versions without a ducklake_schema_versions row: {missing}"
    # Flushing every version's inlined rows into Parquet keeps them all.
    con.execute("CALL ducklake_flush_inlined_data('l')")
    assert fresh(con, f"SELECT * FROM l.{ns}.t") == want
