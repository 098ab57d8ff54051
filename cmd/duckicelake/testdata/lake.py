"""DuckDB and PyIceberg for serve_lake_test.go: change a DuckLake catalog
with a real DuckDB 1.5.x, read it back through the running catalog with
PyIceberg. Prints JSON on stdout.

usage: python lake.py duckdb <libpq dsn> <data path> <s3 endpoint> <key> <secret> SQL...
       python lake.py pyiceberg <catalog uri> <client id:secret> <namespace> <table>

duckdb:    runs each statement against the catalog attached as `l`, with an
           S3 secret for the backend (path style); prints one list of rows
           per statement.
pyiceberg: load_table through the REST catalog (vended credentials, the
           gateway as the FileIO endpoint) and scan it; prints the format
           version, the sorted ids, and the formats of the delete files the
           scan plans.
"""

from __future__ import annotations

import os
import sys
import urllib.parse

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "test"))
import duckdb_ext  # noqa: E402  (test/duckdb_ext.py: offline extension loading)
import jsonreport  # noqa: E402  (test/jsonreport.py: MODE ARGS... → JSON on stdout)


def duckdb(dsn: str, data_path: str, endpoint: str, key: str, secret: str, first: str, *more: str) -> list:
    con = duckdb_ext.connect(load=("ducklake", "postgres", "httpfs"))
    con.execute("SET TimeZone = 'UTC'")
    u = urllib.parse.urlparse(endpoint)
    con.execute(
        "CREATE SECRET s (TYPE S3, KEY_ID ?, SECRET ?, ENDPOINT ?, URL_STYLE 'path', USE_SSL false, REGION 'us-east-1')",
        [key, secret, u.netloc],
    )
    con.execute(f"ATTACH 'ducklake:postgres:{dsn}' AS l (DATA_PATH '{data_path}')")
    return [[[v if v is None or isinstance(v, (bool, int, float, str)) else str(v) for v in row] for row in con.execute(sql).fetchall()]
            for sql in (first, *more)]


def pyiceberg(uri: str, credential: str, ns: str, table: str) -> dict:
    from pyiceberg.catalog import load_catalog

    cat = load_catalog("duckicelake", type="rest", uri=uri, credential=credential, warehouse="lake")
    t = cat.load_table((ns, table))
    scan = t.scan()
    deletes = sorted({str(d.file_format) for task in scan.plan_files() for d in task.delete_files})
    return {
        "format_version": t.metadata.format_version,
        "endpoint": t.io.properties.get("s3.endpoint"),
        "ids": sorted(scan.to_arrow().column("id").to_pylist()),
        "delete_formats": deletes,
    }


if __name__ == "__main__":
    sys.exit(jsonreport.main(__doc__, {"duckdb": duckdb, "pyiceberg": pyiceberg}))
