"""Trino 476 (Iceberg connector on the REST catalog, vended credentials
through the gateway) as a real client, and DuckDB (ducklake ATTACH) on the
same tables both ways. Run by `make interop-trino` (scripts/trino.sh starts
the stack and Trino and names them in TRINO_SERVER, TRINO_CLI, TRINO_JAVA);
not part of `make test`, whose pytest collects test_*.py only.
"""

from __future__ import annotations

import json
import os
import subprocess
import urllib.parse

import pytest

from lakestack import Lake


class Trino:
    def __init__(self, server: str, cli: str, java: str):
        self.server, self.cli, self.java = server, cli, java

    def run(self, sql: str) -> list[tuple]:
        """Runs one statement with the CLI; rows as tuples of JSON values."""
        out = subprocess.run(
            [self.java, "-jar", self.cli, "--server", self.server, "--catalog", "lake", "--output-format", "JSON",
             "--execute", sql],
            capture_output=True, text=True, timeout=300,
        )
        if out.returncode != 0:
            raise RuntimeError(f"trino: {sql}\n{out.stderr.strip()[-3000:]}{out.stdout.strip()[-1000:]}")
        return [tuple(json.loads(line).values()) for line in out.stdout.splitlines() if line.strip()]

    def rows(self, sql: str) -> list[tuple]:
        return sorted(self.run(sql))


@pytest.fixture(scope="module")
def trino() -> Trino:
    env = [os.environ.get(v) for v in ("TRINO_SERVER", "TRINO_CLI", "TRINO_JAVA")]
    if not all(env):
        if os.environ.get("CI") == "true":
            pytest.fail("TRINO_SERVER/TRINO_CLI/TRINO_JAVA unset: run make interop-trino")
        pytest.skip("TRINO_SERVER/TRINO_CLI/TRINO_JAVA unset: run make interop-trino")
    return Trino(*env)


@pytest.fixture(scope="module")
def duck(lake: Lake):
    prefix = urllib.parse.urlparse(lake.data_path).path.lstrip("/")
    con = lake.duckdb(lake.mint(f"{lake.bucket}:{prefix}:rw", principal="trino-duck"))
    yield con
    con.close()


def duck_rows(duck, sql: str) -> list[tuple]:
    duck.execute("BEGIN")
    try:
        return sorted(tuple(r) for r in duck.execute(sql).fetchall())
    finally:
        duck.execute("COMMIT")


@pytest.fixture(scope="module")
def ns(trino: Trino) -> str:
    n = "trino_" + os.urandom(4).hex()
    trino.run(f"CREATE SCHEMA lake.{n}")
    return n


def test_create_insert_select_both_ways(trino, duck, ns):
    trino.run(f"CREATE TABLE {ns}.plain (id BIGINT, label VARCHAR, amount DOUBLE)")
    trino.run(f"INSERT INTO {ns}.plain VALUES (1, 'a', 1.5), (2, 'b', NULL), (3, NULL, 3.25)")
    want = trino.rows(f"SELECT id, label, amount FROM {ns}.plain")
    assert want == [(1, "a", 1.5), (2, "b", None), (3, None, 3.25)]
    assert duck_rows(duck, f"SELECT id, label, amount FROM l.{ns}.plain") == want
    trino.run(f"CREATE TABLE {ns}.parts (id BIGINT, region VARCHAR) WITH (partitioning = ARRAY['region'])")
    trino.run(f"INSERT INTO {ns}.parts VALUES (1, 'eu'), (2, 'us'), (3, 'eu')")
    assert duck_rows(duck, f"SELECT id, region FROM l.{ns}.parts") == [(1, "eu"), (2, "us"), (3, "eu")]
    duck.execute(f"INSERT INTO l.{ns}.plain SELECT range + 100, 'duck ' || range, range / 2 FROM range(5)")
    assert trino.rows(f"SELECT id, label, amount FROM {ns}.plain") == duck_rows(duck, f"SELECT id, label, amount FROM l.{ns}.plain")


def test_time_travel_and_metadata_tables(trino, ns):
    trino.run(f"CREATE TABLE {ns}.tt (id BIGINT)")
    trino.run(f"INSERT INTO {ns}.tt VALUES 1, 2")
    first = trino.run(f'SELECT snapshot_id FROM {ns}."tt$snapshots" ORDER BY committed_at DESC LIMIT 1')[0][0]
    trino.run(f"INSERT INTO {ns}.tt VALUES 3")
    # A small snapshot id would be an integer literal, which Trino refuses.
    assert trino.rows(f"SELECT id FROM {ns}.tt FOR VERSION AS OF BIGINT '{first}'") == [(1,), (2,)]
    assert trino.rows(f"SELECT id FROM {ns}.tt") == [(1,), (2,), (3,)]
    assert trino.run(f'SELECT sum(record_count) FROM {ns}."tt$files"') == [(3,)]
    assert len(trino.run(f'SELECT * FROM {ns}."tt$history"')) >= 2


def test_delete_update_merge(trino, duck, ns):
    trino.run(f"CREATE TABLE {ns}.dum (id BIGINT, v VARCHAR)")
    trino.run(f"INSERT INTO {ns}.dum SELECT x, 'v' || CAST(x AS VARCHAR) FROM UNNEST(sequence(0, 19)) AS t(x)")
    trino.run(f"DELETE FROM {ns}.dum WHERE id % 5 = 0")
    trino.run(f"UPDATE {ns}.dum SET v = 'updated' WHERE id IN (1, 2)")
    trino.run(
        f"MERGE INTO {ns}.dum t USING (VALUES (3, 'merged'), (100, 'new')) AS s(id, v) ON t.id = s.id "
        "WHEN MATCHED THEN UPDATE SET v = s.v WHEN NOT MATCHED THEN INSERT (id, v) VALUES (s.id, s.v)"
    )
    want = trino.rows(f"SELECT id, v FROM {ns}.dum")
    assert len(want) == 17 and (3, "merged") in want and (100, "new") in want
    assert duck_rows(duck, f"SELECT id, v FROM l.{ns}.dum") == want


def test_trino_reads_after_duckdb_deletes(trino, duck, ns):
    """Issue 15 item 1 (Trino: `position is null` before the fix)."""
    duck.execute(f"CREATE TABLE l.{ns}.dd (id BIGINT, v VARCHAR)")
    duck.execute(f"INSERT INTO l.{ns}.dd SELECT range, 'v' || range FROM range(3000)")
    duck.execute(f"DELETE FROM l.{ns}.dd WHERE id % 7 = 0")
    want = duck_rows(duck, f"SELECT id, v FROM l.{ns}.dd")
    assert len(want) == 3000 - 429
    assert trino.rows(f"SELECT id, v FROM {ns}.dd") == want


def test_schema_evolution(trino, duck, ns):
    trino.run(f"CREATE TABLE {ns}.evo (id BIGINT, a VARCHAR)")
    trino.run(f"INSERT INTO {ns}.evo VALUES (1, 'x')")
    trino.run(f"ALTER TABLE {ns}.evo ADD COLUMN b INTEGER")
    trino.run(f"INSERT INTO {ns}.evo VALUES (2, 'y', 20)")
    trino.run(f"ALTER TABLE {ns}.evo RENAME COLUMN a TO a2")
    trino.run(f"ALTER TABLE {ns}.evo DROP COLUMN a2")
    want = trino.rows(f"SELECT id, b FROM {ns}.evo")
    assert want == [(1, None), (2, 20)]
    assert duck_rows(duck, f"SELECT id, b FROM l.{ns}.evo") == want


def test_drop(trino, duck, ns):
    trino.run(f"CREATE TABLE {ns}.gone (id BIGINT)")
    trino.run(f"INSERT INTO {ns}.gone VALUES 1")
    trino.run(f"DROP TABLE {ns}.gone")
    assert not [r for r in trino.run(f"SHOW TABLES FROM {ns}") if r[0] == "gone"]
