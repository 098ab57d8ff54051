"""DuckDB httpfs through the gateway (and direct, as the baseline): COPY … TO
's3://…parquet' large enough to go multipart in several parts, read_parquet
with a glob, path-style URLs; the written file is byte-identical on the backend
to what the same COPY writes to a local file."""

from __future__ import annotations

import urllib.parse

import duckdb_ext

from gwstack import Stack, Target

# Random 64-character strings do not compress, so 300k rows make ~20 MB of
# Parquet: four 5 MiB parts with the uploader settings below.
ROWS = 300_000
QUERY = f"SELECT range AS id, md5(range::VARCHAR) || md5((range * 7)::VARCHAR) AS s FROM range({ROWS})"
MIB = 1 << 20


def connect(stack: Stack, target: Target):
    con = duckdb_ext.connect(load=("httpfs",))
    # One thread: the Parquet bytes are then the same on every run, so the
    # object can be compared with a local COPY of the same query.
    con.execute("SET threads = 1")
    # httpfs always writes s3:// files with a multipart upload; these make its
    # parts 5 MiB (max_filesize / max_parts, floored at 5 MiB) instead of one
    # part for anything under ~80 MB.
    con.execute("SET s3_uploader_max_filesize = '50MB'")
    con.execute("SET s3_uploader_max_parts_per_file = 10")
    u = urllib.parse.urlsplit(target.endpoint)
    c = target.creds
    con.execute(
        "CREATE SECRET s (TYPE S3, KEY_ID ?, SECRET ?, SESSION_TOKEN ?, ENDPOINT ?, "
        "URL_STYLE 'path', USE_SSL ?, REGION ?)",
        [c.access_key_id, c.secret_access_key, c.session_token or "", u.netloc, u.scheme == "https", stack.region],
    )
    return con


def test_duckdb_httpfs(stack: Stack, target: Target, tmp_path):
    con = connect(stack, target)
    base = f"s3://{stack.bucket}/{target.prefix}"
    for name in ("part-0.parquet", "part-1.parquet"):
        con.execute(f"COPY ({QUERY}) TO '{base}{name}' (FORMAT parquet)")

    local = tmp_path / "local.parquet"
    con.execute(f"COPY ({QUERY}) TO '{local}' (FORMAT parquet)")
    want = local.read_bytes()
    assert len(want) > 10 * MIB, f"only {len(want)} bytes: not a multi-part upload"

    for name in ("part-0.parquet", "part-1.parquet"):
        got = stack.backend_get(target.prefix + name)
        assert got is not None, f"{name} missing on the backend"
        assert got == want, f"backend copy of {name} differs from a local COPY ({len(got)} vs {len(want)} bytes)"
    # httpfs really went multipart, in more than one part.
    etag = stack.backend().head_object(Bucket=stack.bucket, Key=target.prefix + "part-0.parquet")["ETag"]
    assert etag.strip('"').rsplit("-", 1)[-1].isdigit() and int(etag.strip('"').rsplit("-", 1)[-1]) > 1, etag

    n, total = con.execute(f"SELECT count(*), sum(id) FROM read_parquet('{base}*.parquet')").fetchone()
    assert n == 2 * ROWS
    assert total == 2 * ROWS * (ROWS - 1) // 2
    # A filtered read uses range requests on the footer and one row group.
    (s,) = con.execute(f"SELECT s FROM read_parquet('{base}part-1.parquet') WHERE id = 12345").fetchone()
    (local_s,) = con.execute(f"SELECT s FROM read_parquet('{local}') WHERE id = 12345").fetchone()
    assert s == local_s
    # glob() lists through the gateway.
    files = [r[0] for r in con.execute(f"SELECT file FROM glob('{base}*')").fetchall()]
    assert sorted(files) == [base + "part-0.parquet", base + "part-1.parquet"]
