"""PyIceberg 0.12 with no S3 credentials at all, reading and writing through
the catalog's remote signer, for rest_remote_sign_test.go. Prints a JSON
report on stdout.

usage: python rest_remote_sign.py <scenario> <catalog uri> <client id:secret> <ns> <table>

read
    load_table asking for remote-signing (X-Iceberg-Access-Delegation), then
    scan the current rows through the FileIO PyIceberg builds from the answer.

write
    create_table, append two batches, scan: every S3 request of the writes
    and the reads is signed by the catalog.

io
    the table's FileIO writes a small file (one PUT) and a 12 MiB one
    (multipart) into the table's data directory, reads them back and deletes
    them (DeleteObjects, which PyIceberg signs without its body).

read and write report the rows (sorted, rendered as in rest_pyiceberg.py), the FileIO
class and config keys, whether any S3 credential reached PyIceberg, and the
sign requests PyIceberg sent (method, path and query of the S3 request; the
first one in full, to show its exact shape).
"""

from __future__ import annotations

import json
import os
import sys
from urllib.parse import urlsplit

import requests

# The point of the test: no S3 credential anywhere PyIceberg or botocore
# could find one. The Go test scrubs the environment; refuse to run if not.
for var in os.environ:
    if var.startswith("AWS_") and var not in ("AWS_CONFIG_FILE", "AWS_SHARED_CREDENTIALS_FILE"):
        sys.exit(f"rest_remote_sign.py: {var} is set; the test must run without S3 credentials")

sign_requests: list[dict] = []
_post = requests.Session.post


def _recording_post(self, url, *args, **kwargs):
    """Record every call to a sign endpoint, as PyIceberg's signer makes it."""
    if url.endswith("/sign"):
        body = kwargs.get("json") or {}
        u = urlsplit(body.get("uri", ""))
        entry = {"endpoint": urlsplit(url).path, "method": body.get("method"), "target": u.path + ("?" + u.query if u.query else "")}
        if not sign_requests:
            headers = dict(kwargs.get("headers") or {})
            if "Authorization" in headers:
                headers["Authorization"] = headers["Authorization"].split(" ")[0] + " …"
            entry["request"] = {"headers": headers, "json": body}
        resp = _post(self, url, *args, **kwargs)
        entry["status"] = resp.status_code
        if len(sign_requests) == 0:
            entry["response"] = {
                "cache_control": resp.headers.get("Cache-Control"),
                "json": {k: (v if k == "uri" else sorted(v)) for k, v in resp.json().items()} if resp.ok else resp.text,
            }
        sign_requests.append(entry)
        return resp
    return _post(self, url, *args, **kwargs)


requests.Session.post = _recording_post

import rest_pyiceberg  # noqa: E402  (after the patch: it imports pyiceberg)


def catalog_for(uri: str, credential: str):
    return rest_pyiceberg.catalog_for(uri, credential, **{"header.X-Iceberg-Access-Delegation": "remote-signing"})


def render_rows(rows) -> list[str]:
    return sorted(json.dumps([str(v) if v is not None else None for v in r]) for r in rows)


def rows_of(arrow_table) -> list[str]:
    cols = arrow_table.column_names
    return render_rows([[r[c] for c in cols] for r in arrow_table.to_pylist()])


SECRET_KEYS = ("s3.access-key-id", "s3.secret-access-key", "s3.session-token", "client.access-key-id", "client.secret-access-key")


def io_report(t) -> dict:
    props = t.io.properties
    return {
        "io": type(t.io).__module__ + "." + type(t.io).__name__,
        "config": {k: v for k, v in props.items() if k.startswith(("s3.", "py-io-impl", "client."))},
        "credentials": sorted(k for k in SECRET_KEYS if props.get(k)),
        "metadata_location": t.metadata_location,
    }


def report(t) -> dict:
    return io_report(t) | {"rows": rows_of(t.scan().to_arrow())}


def scenario_read(cat, ns: str, table: str) -> dict:
    return report(cat.load_table((ns, table)))


def scenario_write(cat, ns: str, table: str) -> dict:
    import pyarrow as pa

    schema = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("name", pa.string())])
    t = cat.create_table((ns, table), schema=schema)
    t.append(pa.table({"id": pa.array([1, 2, 3], pa.int64()), "name": ["a", "b", None]}, schema=schema))
    t.append(pa.table({"id": pa.array(range(100, 1100), pa.int64()), "name": [f"n{i}" for i in range(1000)]}, schema=schema))
    out = report(cat.load_table((ns, table)))
    out["snapshots"] = len(t.metadata.snapshots)
    return out


def scenario_io(cat, ns: str, table: str) -> dict:
    """The table's FileIO writes a small and a multipart-sized file into
    the table's location, reads them back and deletes them."""
    t = cat.load_table((ns, table))
    out: dict = io_report(t) | {"files": {}}
    # s3fs uploads in parts of its block size (50 MiB by default); the
    # smallest S3 allows makes the 12 MiB file a three-part upload.
    t.io.get_fs("s3").default_block_size = 5 << 20
    for name, size in (("small.bin", 1000), ("large.bin", 12 << 20)):
        loc = f"{t.location()}/data/remote-sign-{name}"
        data = bytes(i % 251 for i in range(size))
        with t.io.new_output(loc).create(overwrite=True) as f:
            f.write(data)
        f_in = t.io.new_input(loc)
        with f_in.open() as f:
            back = f.read()
        exists_before = f_in.exists()
        t.io.delete(loc)
        out["files"][name] = {"size": len(back), "equal": back == data, "exists_before": exists_before, "exists_after": t.io.new_input(loc).exists()}
    return out


SCENARIOS = {"read": scenario_read, "write": scenario_write, "io": scenario_io}


def main(argv: list[str]) -> int:
    if len(argv) != 6 or argv[1] not in SCENARIOS:
        print(__doc__, file=sys.stderr)
        return 2
    cat = catalog_for(argv[2], argv[3])
    out = SCENARIOS[argv[1]](cat, argv[4], argv[5])
    out["sign_requests"] = sign_requests
    json.dump(out, sys.stdout)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
