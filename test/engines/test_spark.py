"""Apache Spark 4.1 with Iceberg 1.12 as a real client of the catalog
(vended credentials through the gateway), and DuckDB (ducklake ATTACH) on
the same tables both ways: every step compares rows across engines.

One module-scoped SparkSession (local[2]) and small data keep it quick.
"""

from __future__ import annotations

import os
import urllib.parse

import pytest

from enginecheck import check_inlined_schema_changes, check_no_orphans, duck_rows, load_table
from lakestack import Lake


def rows(df) -> list[tuple]:
    return sorted(tuple(r) for r in df.collect())


def row_changes(spark, table: str, src: str, deletes: list[str]) -> list[tuple]:
    """Spark's row-level workload on table (id BIGINT, v STRING): ids 0 to
    19 inserted, a DELETE per condition in deletes, ids 1 and 2 updated,
    and (3, merged) and (100, new) merged in from temporary view src.
    Spark's rows after it."""
    spark.sql(f"INSERT INTO {table} SELECT id, concat('v', id) FROM range(20)")
    for cond in deletes:
        spark.sql(f"DELETE FROM {table} WHERE {cond}")
    spark.sql(f"UPDATE {table} SET v = 'updated' WHERE id IN (1, 2)")
    spark.createDataFrame([(3, "merged"), (100, "new")], "id BIGINT, v STRING").createOrReplaceTempView(src)
    spark.sql(
        f"MERGE INTO {table} t USING {src} s ON t.id = s.id "
        "WHEN MATCHED THEN UPDATE SET v = s.v WHEN NOT MATCHED THEN INSERT *"
    )
    return rows(spark.sql(f"SELECT id, v FROM {table}"))


@pytest.fixture(scope="module")
def writer(lake: Lake):
    prefix = urllib.parse.urlparse(lake.data_path).path.lstrip("/")
    return lake.mint(f"{lake.bucket}:{prefix}:rw", principal="engines-writer")


@pytest.fixture(scope="module")
def ns(spark) -> str:
    n = "spark_" + os.urandom(4).hex()
    spark.sql(f"CREATE NAMESPACE lake.{n}")
    return n


@pytest.fixture(scope="module")
def duck(lake: Lake, writer):
    con = lake.duckdb(writer)
    yield con
    con.close()


def test_create_insert_select_both_ways(spark, duck, ns):
    """Spark creates (plain and partitioned) and inserts; DuckDB reads the
    same rows; DuckDB inserts; Spark reads them."""
    spark.sql(f"CREATE TABLE lake.{ns}.plain (id BIGINT, label STRING, amount DOUBLE) USING iceberg")
    spark.sql(f"INSERT INTO lake.{ns}.plain VALUES (1, 'a', 1.5), (2, 'b', NULL), (3, NULL, 3.25)")
    # TIMESTAMP_NTZ: day partitions of a timestamptz are refused by design
    # (DuckDB computes them in its session time zone).
    spark.sql(
        f"CREATE TABLE lake.{ns}.parts (id BIGINT, region STRING, ts TIMESTAMP_NTZ) USING iceberg "
        "PARTITIONED BY (region, days(ts))"
    )
    spark.sql(
        f"INSERT INTO lake.{ns}.parts VALUES (1, 'eu', TIMESTAMP_NTZ '2026-01-01 10:00:00'), "
        "(2, 'us', TIMESTAMP_NTZ '2026-01-02 11:00:00'), (3, 'eu', TIMESTAMP_NTZ '2026-01-02 12:00:00')"
    )
    want = rows(spark.sql(f"SELECT id, label, amount FROM lake.{ns}.plain"))
    assert want == [(1, "a", 1.5), (2, "b", None), (3, None, 3.25)]
    assert duck_rows(duck, f"SELECT id, label, amount FROM l.{ns}.plain") == want
    got = duck_rows(duck, f"SELECT id, region, ts FROM l.{ns}.parts")
    assert [(r[0], r[1]) for r in got] == [(1, "eu"), (2, "us"), (3, "eu")]
    assert rows(spark.sql(f"SELECT id FROM lake.{ns}.parts WHERE region = 'eu'")) == [(1,), (3,)]

    duck.execute(f"INSERT INTO l.{ns}.plain SELECT range + 100, 'duck ' || range, range / 2 FROM range(5)")
    got = rows(spark.sql(f"SELECT id, label, amount FROM lake.{ns}.plain"))
    assert got == duck_rows(duck, f"SELECT id, label, amount FROM l.{ns}.plain")
    assert len(got) == 8


def test_time_travel_and_metadata_tables(spark, ns):
    spark.sql(f"CREATE TABLE lake.{ns}.tt (id BIGINT) USING iceberg")
    spark.sql(f"INSERT INTO lake.{ns}.tt VALUES (1), (2)")
    first = spark.sql(f"SELECT snapshot_id FROM lake.{ns}.tt.snapshots ORDER BY committed_at").collect()[-1][0]
    spark.sql(f"INSERT INTO lake.{ns}.tt VALUES (3)")
    assert rows(spark.sql(f"SELECT id FROM lake.{ns}.tt VERSION AS OF {first}")) == [(1,), (2,)]
    assert rows(spark.sql(f"SELECT id FROM lake.{ns}.tt")) == [(1,), (2,), (3,)]
    snaps = spark.sql(f"SELECT snapshot_id, operation FROM lake.{ns}.tt.snapshots").collect()
    assert len(snaps) == 2 and all(s[1] == "append" for s in snaps)
    assert spark.sql(f"SELECT sum(record_count) FROM lake.{ns}.tt.files").collect()[0][0] == 3
    assert spark.sql(f"SELECT count(*) FROM lake.{ns}.tt.history").collect()[0][0] == 2
    assert spark.sql(f"SELECT count(*) FROM lake.{ns}.tt.manifests").collect()[0][0] >= 1


@pytest.mark.parametrize("mode", ["copy-on-write", "merge-on-read"])
def test_delete_update_merge(spark, duck, ns, mode):
    """Row-level changes in both modes on a v2 table; DuckDB reads the
    same rows after each."""
    t = f"dum_{mode.replace('-', '_')}"
    spark.sql(
        f"CREATE TABLE lake.{ns}.{t} (id BIGINT, v STRING) USING iceberg TBLPROPERTIES ("
        f"'format-version'='2', 'write.delete.mode'='{mode}', 'write.update.mode'='{mode}', 'write.merge.mode'='{mode}')"
    )
    want = row_changes(spark, f"lake.{ns}.{t}", "src", ["id % 5 = 0"])
    assert len(want) == 17
    assert (1, "updated") in want and (3, "merged") in want and (100, "new") in want
    assert all(r[0] % 5 for r in want if r[0] != 100)
    assert duck_rows(duck, f"SELECT id, v FROM l.{ns}.{t}") == want


def test_spark_reads_after_duckdb_deletes(spark, duck, ns):
    """Issue 15 item 1: DuckDB's delete files carry the field ids
    2147483646/2147483645; the catalog serves copies with Iceberg's
    2147483546/2147483545, so Spark (which reads by field id) sees DuckDB's
    DELETE and UPDATE."""
    duck.execute(f"CREATE TABLE l.{ns}.dd (id BIGINT, v VARCHAR)")
    duck.execute(f"INSERT INTO l.{ns}.dd SELECT range, 'v' || range FROM range(3000)")  # Parquet, not inlined
    duck.execute(f"DELETE FROM l.{ns}.dd WHERE id % 7 = 0")
    duck.execute(f"UPDATE l.{ns}.dd SET v = 'changed' WHERE id IN (1, 2)")
    # The UPDATE's few rows and deletions stay in Postgres (inlined) until
    # flushed; Iceberg clients cannot replace deletions kept there.
    duck.execute("CALL ducklake_flush_inlined_data('l')")
    want = duck_rows(duck, f"SELECT id, v FROM l.{ns}.dd")
    assert len(want) == 3000 - 429
    assert rows(spark.sql(f"SELECT id, v FROM lake.{ns}.dd")) == want
    # Spark then deletes more (merge-on-read beside DuckDB's delete file).
    spark.sql(f"ALTER TABLE lake.{ns}.dd SET TBLPROPERTIES ('write.delete.mode'='merge-on-read')")
    spark.sql(f"DELETE FROM lake.{ns}.dd WHERE id < 10")
    want = rows(spark.sql(f"SELECT id, v FROM lake.{ns}.dd"))
    assert want == duck_rows(duck, f"SELECT id, v FROM l.{ns}.dd")
    assert min(r[0] for r in want) == 10


def test_schema_evolution(spark, duck, ns):
    spark.sql(f"CREATE TABLE lake.{ns}.evo (id BIGINT, a STRING) USING iceberg")
    spark.sql(f"INSERT INTO lake.{ns}.evo VALUES (1, 'x')")
    spark.sql(f"ALTER TABLE lake.{ns}.evo ADD COLUMN b INT")
    spark.sql(f"INSERT INTO lake.{ns}.evo VALUES (2, 'y', 20)")
    spark.sql(f"ALTER TABLE lake.{ns}.evo RENAME COLUMN a TO a2")
    spark.sql(f"ALTER TABLE lake.{ns}.evo ALTER COLUMN b TYPE BIGINT")
    spark.sql(f"ALTER TABLE lake.{ns}.evo DROP COLUMN a2")
    want = rows(spark.sql(f"SELECT id, b FROM lake.{ns}.evo"))
    assert want == [(1, None), (2, 20)]
    assert duck_rows(duck, f"SELECT id, b FROM l.{ns}.evo") == want
    duck.execute(f"ALTER TABLE l.{ns}.evo ADD COLUMN c VARCHAR")
    duck.execute(f"INSERT INTO l.{ns}.evo VALUES (3, 30, 'duck')")
    assert rows(spark.sql(f"SELECT id, b, c FROM lake.{ns}.evo")) == duck_rows(duck, f"SELECT id, b, c FROM l.{ns}.evo")


def test_drop_with_purge(spark, duck, ns):
    spark.sql(f"CREATE TABLE lake.{ns}.gone (id BIGINT) USING iceberg")
    spark.sql(f"INSERT INTO lake.{ns}.gone VALUES (1)")
    spark.sql(f"DROP TABLE lake.{ns}.gone PURGE")
    assert not spark.sql(f"SHOW TABLES IN lake.{ns}").filter("tableName = 'gone'").collect()
    duck.execute("BEGIN")
    try:
        left = duck.execute(
            "SELECT count(*) FROM information_schema.tables WHERE table_catalog = 'l' AND table_schema = ? AND table_name = 'gone'",
            [ns],
        ).fetchone()[0]
    finally:
        duck.execute("COMMIT")
    assert left == 0


def test_v3_merge_on_read_deletion_vectors(spark, duck, ns):
    """Issue 15 item 3: on a format version 3 table Spark's merge-on-read
    DELETE/UPDATE/MERGE commit Puffin deletion vectors; the catalog takes
    them (as DuckLake delete files), and DuckDB and Spark see the same rows."""
    spark.sql(
        f"CREATE TABLE lake.{ns}.dv (id BIGINT, v STRING) USING iceberg TBLPROPERTIES ("
        "'format-version'='3', 'write.delete.mode'='merge-on-read', 'write.update.mode'='merge-on-read', "
        "'write.merge.mode'='merge-on-read')"
    )
    # The second DELETE's vector for the same data files replaces the first's.
    want = row_changes(spark, f"lake.{ns}.dv", "src_dv", ["id % 5 = 0", "id = 7"])
    assert len(want) == 16
    assert (1, "updated") in want and (3, "merged") in want and (100, "new") in want
    assert not [r for r in want if r[0] == 7 or (r[0] % 5 == 0 and r[0] != 100)]
    assert duck_rows(duck, f"SELECT id, v FROM l.{ns}.dv") == want


def test_spark_reads_masked_bytes(spark, lake: Lake, writer, ns):
    """The airtight tier holds for Spark too: with a file-layer mask on
    customers.email, bob's Spark (vended credentials, through the gateway)
    reads the masked copy — no raw value in any row — and alice, holding the
    bypass role, reads cleartext, in the same session."""
    import json
    import secrets as pysecrets

    import duckdb_ext
    from lakestack import RestClient, client_token

    sec = {w: pysecrets.token_hex(12) for w in ("admin", "bob", "alice")}
    s = lake.start_serve({
        "DUCKICELAKE_OAUTH_CLIENTS": f"admin:{sec['admin']}|*,bob:{sec['bob']}|ns:{ns}:r,alice:{sec['alice']}|ns:{ns}:r",
        "DUCKICELAKE_DUCKDB_EXTENSION_DIRECTORY": duckdb_ext.extension_directory(),
    })
    try:
        raw = [(1, "alice@example.com"), (2, "bob@personal.io"), (3, "carol@work.net")]
        con = lake.duckdb(writer)
        con.execute(f"CREATE TABLE l.{ns}.customers (id BIGINT, email VARCHAR)")
        con.execute(f"INSERT INTO l.{ns}.customers VALUES " + ",".join(f"({i}, '{e}')" for i, e in raw))
        con.execute("CALL ducklake_flush_inlined_data('l')")
        con.close()

        admin = RestClient(s.catalog_url, client_token(s.catalog_url, "admin", sec["admin"]))
        for what, b in (
            ("masking-policies", {"name": f"{ns}_mask", "signature": "(val VARCHAR)", "body": "left(val, 2) || '***'",
                                  "unmasked-roles": [f"{ns}_pii"], "file-layer-masking": True}),
            ("policy-attachments", {"policy-kind": "masking", "policy-name": f"{ns}_mask", "target-kind": "column",
                                    "schema": ns, "object": "customers", "column": "email"}),
            ("roles", {"name": f"{ns}_pii"}),
            ("role-grants", {"role": f"{ns}_pii", "principal": "alice"}),
        ):
            st, out = admin.request("POST", f"/v1/lake/governance/{what}", json.dumps(b), {"Content-Type": "application/json"})
            assert st == 200, (what, st, out)

        for who in ("bob", "alice"):
            cat = f"spark.sql.catalog.gov_{who}"
            for k, v in {"": "org.apache.iceberg.spark.SparkCatalog", ".type": "rest", ".uri": s.catalog_url,
                         ".warehouse": "lake", ".credential": f"{who}:{sec[who]}",
                         ".oauth2-server-uri": s.catalog_url + "/v1/oauth/tokens",
                         ".header.X-Iceberg-Access-Delegation": "vended-credentials",
                         ".io-impl": "org.apache.iceberg.aws.s3.S3FileIO", ".cache-enabled": "false"}.items():
                spark.conf.set(cat + k, v)
        got = rows(spark.sql(f"SELECT id, email FROM gov_bob.{ns}.customers"))
        assert got == [(i, e[:2] + "***") for i, e in raw]
        assert rows(spark.sql(f"SELECT id, email FROM gov_alice.{ns}.customers")) == raw
    finally:
        s.stop()


def test_create_or_replace(spark, duck, ns):
    """CREATE OR REPLACE TABLE … AS SELECT (Iceberg's replace transaction:
    remove main, a new schema, a snapshot of only the new files) is one
    DuckLake change: Spark and DuckDB read the new schema and only the new
    rows; REPLACE TABLE without rows leaves it empty."""
    spark.sql(f"CREATE TABLE lake.{ns}.rep (id BIGINT, old STRING) USING iceberg")
    spark.sql(f"INSERT INTO lake.{ns}.rep VALUES (1, 'a'), (2, 'b')")
    duck.execute(f"INSERT INTO l.{ns}.rep VALUES (3, 'duck')")
    assert len(duck_rows(duck, f"SELECT * FROM l.{ns}.rep")) == 3

    spark.sql(f"CREATE OR REPLACE TABLE lake.{ns}.rep USING iceberg AS "
              "SELECT CAST(id AS BIGINT) AS id, CAST(id * 10 AS INT) AS fresh FROM VALUES (7), (8) AS v(id)")
    want = [(7, 70), (8, 80)]
    assert rows(spark.sql(f"SELECT id, fresh FROM lake.{ns}.rep")) == want
    assert spark.table(f"lake.{ns}.rep").columns == ["id", "fresh"]
    assert duck_rows(duck, f"SELECT * FROM l.{ns}.rep") == want
    # DuckDB goes on writing the replaced table.
    duck.execute(f"INSERT INTO l.{ns}.rep VALUES (9, 90)")
    assert rows(spark.sql(f"SELECT id, fresh FROM lake.{ns}.rep")) == want + [(9, 90)]

    spark.sql(f"REPLACE TABLE lake.{ns}.rep (id BIGINT) USING iceberg")
    assert rows(spark.sql(f"SELECT * FROM lake.{ns}.rep")) == []
    assert duck_rows(duck, f"SELECT * FROM l.{ns}.rep") == []


def test_expire_snapshots_in_shared_lake(spark, duck, lake: Lake, ns):
    """Issue 15 item 6: CALL system.expire_snapshots on a table whose
    snapshots another table's commits came between expires them for this
    table alone: they are gone from <table>.snapshots, the other table's
    history is untouched, the data files only they saw are scheduled for
    deletion and gone after the cleanup, and Spark and DuckDB read the same
    rows."""
    import datetime

    import psycopg

    t, other = f"lake.{ns}.exp", f"lake.{ns}.exp_other"
    spark.sql(f"CREATE TABLE {t} (id BIGINT) USING iceberg")
    spark.sql(f"CREATE TABLE {other} (id BIGINT) USING iceberg")
    spark.sql(f"INSERT INTO {t} VALUES (1), (2)")  # files F1
    spark.sql(f"INSERT INTO {other} VALUES (1)")
    spark.sql(f"INSERT INTO {t} VALUES (3), (4)")
    spark.sql(f"INSERT INTO {other} VALUES (2)")
    spark.sql(f"DELETE FROM {t} WHERE id <= 2")  # F1 goes
    spark.sql(f"INSERT INTO {t} VALUES (5)")

    def snapshots(table):
        return [r[0] for r in spark.sql(f"SELECT snapshot_id FROM {table}.snapshots ORDER BY committed_at").collect()]

    before, other_before = snapshots(t), snapshots(other)
    assert len(before) == 4
    with psycopg.connect(lake.dsn, autocommit=True) as pg:
        f1 = [r[0] for r in pg.execute(
            "SELECT f.path FROM ducklake_data_file f JOIN ducklake_table tb USING (table_id) "
            "JOIN ducklake_schema s USING (schema_id) WHERE s.schema_name = %s AND tb.table_name = 'exp' "
            "AND tb.end_snapshot IS NULL AND f.begin_snapshot = %s AND f.end_snapshot IS NOT NULL",
            (ns, before[0]),
        ).fetchall()]
    assert f1  # Spark may split the two rows into two files

    now = (datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(seconds=5)).strftime("%Y-%m-%d %H:%M:%S")
    spark.sql(f"CALL lake.system.expire_snapshots(table => '{ns}.exp', older_than => TIMESTAMP '{now}', retain_last => 1)")

    assert snapshots(t) == before[-1:]
    assert snapshots(other) == other_before
    want = rows(spark.sql(f"SELECT id FROM {t}"))
    assert want == [(3,), (4,), (5,)]
    assert duck_rows(duck, f"SELECT id FROM l.{ns}.exp") == want
    assert rows(spark.sql(f"SELECT id FROM {other}")) == duck_rows(duck, f"SELECT id FROM l.{ns}.exp_other") == [(1,), (2,)]

    def scheduled():
        with psycopg.connect(lake.dsn, autocommit=True) as pg:
            return [(lake.data_path if rel else "") + p for p, rel in pg.execute(
                "SELECT path, path_is_relative FROM ducklake_files_scheduled_for_deletion").fetchall()]

    locs = [p for p in scheduled() if any(p.endswith("/" + f) for f in f1)]
    assert len(locs) == len(f1), f"{f1} not all scheduled: {scheduled()}"
    duck.execute("CALL ducklake_cleanup_old_files('l', cleanup_all => true)")
    assert not set(locs) & set(scheduled())
    # DuckDB reads the files the table still has, through the same
    # credential, and not the expired one.
    live = duck_rows(duck, f"SELECT data_file FROM ducklake_list_files('l', 'exp', schema => '{ns}')")
    assert live and not set(locs) & {r[0] for r in live}
    assert duck.execute(f"SELECT count(*) FROM read_parquet('{live[0][0]}')").fetchone()[0] > 0
    for loc in locs:
        with pytest.raises(Exception, match="(?i)not found|no files|404|does not exist"):
            duck.execute(f"SELECT count(*) FROM read_parquet('{loc}')").fetchall()


def test_compute_table_stats(spark, duck, lake: Lake, ns):
    """Issue 15 item 8: Iceberg's compute_table_stats commits a Puffin
    statistics file of theta sketches; the catalog keeps it and serves it
    with the table, for the current snapshot. (Spark's own ANALYZE TABLE is
    refused by Spark for Iceberg tables: NOT_SUPPORTED_COMMAND_FOR_V2_TABLE.)"""
    duck.execute(f"CREATE TABLE l.{ns}.st (id BIGINT, g VARCHAR)")
    duck.execute(f"INSERT INTO l.{ns}.st SELECT range, 'g' || (range % 7) FROM range(3000)")
    assert (load_table(lake, ns, "st").get("statistics") or []) == []
    out = spark.sql(f"CALL lake.system.compute_table_stats(table => '{ns}.st')").collect()
    md = load_table(lake, ns, "st")
    stats = md.get("statistics") or []
    assert [(s["snapshot-id"], s["statistics-path"]) for s in stats] == [(md["current-snapshot-id"], out[0][0])], stats
    blobs = stats[0]["blob-metadata"]
    assert {b["type"] for b in blobs} == {"apache-datasketches-theta-v1"}
    ndv = {tuple(b["fields"]): int(b["properties"]["ndv"]) for b in blobs}
    assert ndv[(2,)] == 7, ndv
    assert 2970 <= ndv[(1,)] <= 3030, ndv  # a theta sketch's estimate
    assert len(duck_rows(duck, f"SELECT * FROM l.{ns}.st")) == 3000


def test_schema_change_on_inlined_rows(spark, duck, lake: Lake, ns):
    """Issue 15 item 9: on a table whose rows DuckDB inlined in Postgres,
    after each of Spark's add, rename, widen and drop, DuckDB inserts more
    inlined rows and both engines read every row; DuckDB then reads each
    earlier snapshot as it was, and every schema version inlined rows belong
    to has its ducklake_schema_versions row."""
    changes = [
        ("add", "ADD COLUMN c STRING"),
        ("rename", "RENAME COLUMN a TO a2"),
        ("widen", "ALTER COLUMN b TYPE BIGINT"),
        ("drop", "DROP COLUMN c"),
    ]
    check_inlined_schema_changes(duck, lake, ns, changes,
                                 lambda change: spark.sql(f"ALTER TABLE lake.{ns}.inl {change}"),
                                 lambda: rows(spark.sql(f"SELECT id, b FROM lake.{ns}.inl")))


def test_commits_leave_no_orphans(spark, duck, lake: Lake, ns):
    """Issue 15 item 5: the catalog serves its own metadata, so the manifest
    lists and manifests Spark writes are referenced by nothing; each commit
    schedules them for deletion, and nothing it serves is scheduled."""
    spark.sql(f"CREATE TABLE lake.{ns}.orph (id BIGINT) USING iceberg")
    spark.sql(f"INSERT INTO lake.{ns}.orph VALUES (1), (2)")
    spark.sql(f"INSERT INTO lake.{ns}.orph VALUES (3)")
    location = load_table(lake, ns, "orph")["location"]
    referenced = {r[0] for r in spark.sql(f"SELECT manifest_list FROM lake.{ns}.orph.snapshots").collect()}
    referenced |= {r[0] for r in spark.sql(f"SELECT path FROM lake.{ns}.orph.all_manifests").collect()}
    check_no_orphans(duck, lake, "Spark", location, referenced)
    assert rows(spark.sql(f"SELECT id FROM lake.{ns}.orph")) == [(1,), (2,), (3,)]


def test_spark_reads_equality_deletes(spark, duck, lake: Lake, ns):
    """Issue 15 item 10: an equality delete committed over REST (as Flink
    or iceberg-go write them) becomes DuckLake position deletes; Spark then
    reads the same rows as DuckDB (ducklake) and PyIceberg, NULL keys equal."""
    from test_equality_deletes import commit_equality_delete

    spark.sql(f"CREATE TABLE lake.{ns}.eq (id BIGINT, name STRING) USING iceberg")
    spark.sql(f"INSERT INTO lake.{ns}.eq VALUES (1, 'a'), (2, 'b'), (3, NULL), (4, 'd')")
    tbl = lake.pyiceberg().load_table(f"{ns}.eq")
    commit_equality_delete(tbl, [{"id": 1, "name": "a"}, {"id": 3, "name": None}, {"id": 4, "name": "x"}])
    spark.sql(f"REFRESH TABLE lake.{ns}.eq")
    want = [(2, "b"), (4, "d")]
    assert rows(spark.sql(f"SELECT id, name FROM lake.{ns}.eq")) == want
    assert duck_rows(duck, f"SELECT id, name FROM l.{ns}.eq") == want
    got = lake.pyiceberg().load_table(f"{ns}.eq").scan().to_arrow().to_pylist()
    assert sorted((r["id"], r["name"]) for r in got) == want
