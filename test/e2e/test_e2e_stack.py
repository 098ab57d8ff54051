"""End to end, through the running stack only: `duckicelake serve` (gateway +
Iceberg REST catalog), Postgres holding the DuckLake catalog, versitygw, and
real clients — the duckicelake CLI, DuckDB 1.5 (ducklake + httpfs), PyIceberg
and boto3. Nothing runs in process.

A second `duckicelake serve` with catalog.eager=false joins the fleet for
the tests that need two processes (revocation reaches both; LoadTable is
correct without the eager path).
"""

from __future__ import annotations

import json
import os
import time
import urllib.parse

import boto3
import botocore.config
import botocore.exceptions
import pytest

from lakestack import Lake, format_raw, measure_raw


@pytest.fixture(scope="module")
def lazy(lake: Lake):
    """A second serve process of the fleet, with the eager path off."""
    s = lake.start_serve({"DUCKICELAKE_CATALOG_EAGER": "false"})
    yield s
    s.stop()


@pytest.fixture(scope="module")
def writer(lake: Lake):
    """A credential for the catalog's data path, minted by the CLI, as a
    DuckDB writer gets it."""
    prefix = urllib.parse.urlparse(lake.data_path).path.lstrip("/")
    return lake.mint(f"{lake.bucket}:{prefix}:rw", principal="e2e-writer")


def rows_of(arrow) -> list[tuple]:
    cols = arrow.column_names
    return sorted(tuple(r[c] for c in cols) for r in arrow.to_pylist())


def s3_client(lake: Lake, endpoint: str, creds):
    return boto3.client(
        "s3",
        endpoint_url=endpoint,
        region_name=lake.region,
        aws_access_key_id=creds.key,
        aws_secret_access_key=creds.secret,
        aws_session_token=creds.token,
        config=botocore.config.Config(s3={"addressing_style": "path"}, retries={"max_attempts": 1}),
    )


def test_duckdb_writes_pyiceberg_reads(lake: Lake, writer, lazy):
    """DuckDB ATTACHes DuckLake with DATA_PATH on the gateway and writes;
    PyIceberg loads the table from the catalog with vended credentials and
    reads the same rows through the gateway, from both processes."""
    ns = "e2e_" + os.urandom(4).hex()
    con = lake.duckdb(writer)
    con.execute(f"CREATE SCHEMA l.{ns}")
    con.execute(f"CREATE TABLE l.{ns}.events (id BIGINT, label VARCHAR, amount DOUBLE)")
    # Enough rows that DuckDB writes Parquet (through the gateway) rather
    # than inlining them in Postgres; then a small inlined insert and a delete.
    con.execute(f"INSERT INTO l.{ns}.events SELECT range, 'row ' || range, range / 4 FROM range(2000)")
    con.execute(f"INSERT INTO l.{ns}.events VALUES (5000, 'inlined', 1.5), (5001, NULL, NULL)")
    con.execute(f"DELETE FROM l.{ns}.events WHERE id % 100 = 7")
    want = sorted(con.execute(f"SELECT id, label, amount FROM l.{ns}.events").fetchall())
    assert len(want) == 2002 - 20
    files = [r[0] for r in con.execute(f"SELECT data_file FROM ducklake_list_files('l', 'events', schema => '{ns}')").fetchall()]
    assert files and all(f.startswith(lake.data_path) for f in files), files
    snap = con.execute("SELECT max(snapshot_id) FROM ducklake_snapshots('l')").fetchone()[0]

    # Each process vends credentials for its own gateway.
    for name, url, gateway in (("eager", lake.catalog_url, lake.gateway), ("lazy", lazy.catalog_url, lazy.gateway)):
        cat = lake.pyiceberg(url)
        assert (ns,) in cat.list_namespaces(), name
        t = cat.load_table((ns, "events"))
        props = t.io.properties
        # Vended: a minted gateway credential, never the backend's root keys.
        assert props.get("s3.endpoint") == gateway, (name, props.get("s3.endpoint"))
        assert props.get("s3.access-key-id", "").startswith("DIL"), name
        assert props.get("s3.session-token"), name
        assert t.metadata.current_snapshot_id == snap, name
        got = rows_of(t.scan(selected_fields=("id", "label", "amount")).to_arrow())
        assert got == want, name


def test_revocation_reaches_every_process(lake: Lake, writer, lazy):
    """A credential minted by the CLI works on both processes' gateways until
    its vend id is revoked in Postgres; then both refuse it (NOTIFY)."""
    prefix = urllib.parse.urlparse(lake.data_path).path.lstrip("/")
    c = lake.mint(f"{lake.bucket}:{prefix}:r", principal="e2e-revoked", ttl="10m")
    assert c.vend_id
    clients = {"eager": s3_client(lake, lake.gateway, c), "lazy": s3_client(lake, lazy.gateway, c)}
    for name, s3 in clients.items():
        s3.list_objects_v2(Bucket=lake.bucket, Prefix=prefix, MaxKeys=1)  # allowed

    lake.revoke(c.vend_id, c.expiry)
    deadline = time.monotonic() + 10
    denied: dict[str, str] = {}
    while len(denied) < len(clients) and time.monotonic() < deadline:
        for name, s3 in clients.items():
            if name in denied:
                continue
            try:
                s3.list_objects_v2(Bucket=lake.bucket, Prefix=prefix, MaxKeys=1)
            except botocore.exceptions.ClientError as e:
                denied[name] = e.response["Error"]["Code"]
        time.sleep(0.05)
    assert set(denied) == set(clients), f"still accepted by {set(clients) - set(denied)}"
    for name, code in denied.items():
        assert code in ("AccessDenied", "InvalidAccessKeyId", "ExpiredToken", "InvalidToken"), (name, code)
    # Another credential is unaffected.
    other = lake.mint(f"{lake.bucket}:{prefix}:r", principal="e2e-other", ttl="10m")
    s3_client(lake, lake.gateway, other).list_objects_v2(Bucket=lake.bucket, Prefix=prefix, MaxKeys=1)


def test_read_after_write(lake: Lake, lazy, capsys):
    """The eager path: after each DuckDB INSERT, LoadTable shows DuckLake's
    newest snapshot as the current snapshot — on the process that follows
    NOTIFY (eager) and on the one that does not (lazy: within
    catalog.snapshot_ttl). Latencies are printed, not asserted (benchmarks
    live in scripts/bench.sh raw); every commit must become visible, and the
    final rows must match."""
    n = int(os.environ.get("E2E_RAW_INSERTS", "50"))
    res = measure_raw(lake, {"eager": lake.catalog_url, "lazy": lazy.catalog_url}, inserts=n)
    with capsys.disabled():
        print("\n" + format_raw(res))
    for name in ("eager", "lazy"):
        assert res["targets"][name]["summary"]["n"] == n
    ns, table = res["table"].split(".")
    for url in (lake.catalog_url, lazy.catalog_url):
        t = lake.pyiceberg(url).load_table((ns, table))
        assert t.scan().to_arrow().num_rows == res["rows"] == n + 1
    if out := os.environ.get("E2E_RAW_OUT"):
        with open(out, "w") as f:
            json.dump(res, f, indent=2)
