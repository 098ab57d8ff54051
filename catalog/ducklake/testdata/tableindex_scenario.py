"""DuckDB 1.5 writes a DuckLake lake on S3 with files registered by absolute
path, for TestTableIndexSourceDuckDB.

    tableindex_scenario.py DSN DATA_PATH S3_ENDPOINT ACCESS_KEY SECRET_KEY REGION

main.t and s.u get a file each from INSERTs (relative paths, in their
directories); ducklake_add_data_files registers to main.t a file outside
every table and one inside s.u's directory (absolute paths). Prints JSON:
the newest snapshot, the two registered locations and the files DuckDB
wrote itself.
"""

from __future__ import annotations

import json
import pathlib
import sys
import urllib.parse

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[3] / "test"))
import duckdb_ext  # noqa: E402


def main(dsn: str, data: str, endpoint: str, key: str, secret: str, region: str) -> None:
    con = duckdb_ext.connect(load=("httpfs", "ducklake", "postgres"))
    u = urllib.parse.urlparse(endpoint)
    con.execute(
        "CREATE SECRET s3 (TYPE S3, KEY_ID ?, SECRET ?, ENDPOINT ?, URL_STYLE 'path', USE_SSL ?, REGION ?)",
        [key, secret, u.netloc, u.scheme == "https", region],
    )
    root = data.rstrip("/").rsplit("/", 1)[0]  # s3://bucket/tableindex-<run>
    outside = f"{root}/ingest/outside.parquet"
    foreign = f"{data}s/u/foreign.parquet"
    for loc in (outside, foreign):
        con.execute(f"COPY (SELECT 7::BIGINT AS id, 'added' AS v) TO '{loc}' (FORMAT parquet)")
    d = dsn.replace("'", "''")
    con.execute(f"ATTACH 'ducklake:postgres:{d}' AS l (DATA_PATH '{data}', DATA_INLINING_ROW_LIMIT 0)")
    con.execute("CREATE TABLE l.main.t (id BIGINT, v VARCHAR)")
    con.execute("CREATE SCHEMA l.s")
    con.execute("CREATE TABLE l.s.u (id BIGINT, v VARCHAR)")
    con.execute("INSERT INTO l.main.t VALUES (1, 'one'), (2, 'two')")
    con.execute("INSERT INTO l.s.u VALUES (3, 'three')")
    for loc in (outside, foreign):
        con.execute(f"CALL ducklake_add_data_files('l', 't', '{loc}', schema => 'main')")
    own = [r[0] for r in con.execute(
        "SELECT data_file FROM ducklake_list_files('l', 't') UNION ALL SELECT data_file FROM ducklake_list_files('l', 'u', schema => 's')"
    ).fetchall() if r[0] not in (outside, foreign)]
    snap = con.execute("SELECT max(snapshot_id) FROM ducklake_snapshots('l')").fetchone()[0]
    print(json.dumps({"snapshot": snap, "outside": outside, "foreign": foreign, "own": own}))


if __name__ == "__main__":
    main(*sys.argv[1:7])
