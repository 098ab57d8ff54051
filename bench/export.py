"""The airtight tier's cost (issue 12, item 8), side by side in one run on a
stack `scripts/bench.sh export` starts:

  1. export throughput: the masked copy of a ROWS-row table (FILES base
     files), built by serve's embedded DuckDB after a mask rotation (the
     POST, then bob's LoadTable, which answers once the new copy exists),
     against DuckDB's own `COPY (SELECT <same masks>) TO` of the same table to
     the same backend, rounds interleaved; the ratio is COPY time / export
     time (goal >= 0.9);
  2. a masked scan against a base scan of the same table: bob (masked copy)
     and alice (pii_reader: the base files), PyIceberg and DuckDB's iceberg
     extension with vended credentials through the gateway, interleaved
     (goal <= 1.1x);
  3. refresh latency: a 1-row INSERT (DuckDB, ducklake) into the table, then
     bob's LoadTable until it answers that snapshot (p50/p99; goal p99 <= 1 s);
  4. serve's resident memory (VmRSS, sampled every 20 ms, and VmHWM) while it
     exports, with serve's embedded DuckDB held to --memory-limit.

Prints one JSON document, and progress on stderr.
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import secrets
import statistics
import sys
import threading
import time
import urllib.parse

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent / "test" / "e2e"))
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent / "test"))
import duckdb_ext  # noqa: E402
import lakestack  # noqa: E402
from lakestack import RestClient, percentile  # noqa: E402
from lakestack import client_token as token  # noqa: E402

NS = "bench_export"


def progress(msg: str) -> None:
    print(f"export.py: {msg}", file=sys.stderr, flush=True)


class RSS:
    """Samples a process's VmRSS until stopped; peak in MiB."""

    def __init__(self, pid: int):
        self.pid, self.peak, self.samples = pid, 0, 0
        self._stop = threading.Event()
        self._t = threading.Thread(target=self._run, daemon=True)

    def field(self, name: str) -> int:
        for line in pathlib.Path(f"/proc/{self.pid}/status").read_text().splitlines():
            if line.startswith(name + ":"):
                return int(line.split()[1]) // 1024
        return 0

    def _run(self):
        while not self._stop.is_set():
            self.peak = max(self.peak, self.field("VmRSS"))
            self.samples += 1
            time.sleep(0.02)

    def __enter__(self):
        self._t.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._t.join()


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--files", type=int, default=8, help="base files the table is written in")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--refreshes", type=int, default=20)
    ap.add_argument("--memory-limit", default="256MB", help="serve's duckdb.memory_limit")
    args = ap.parse_args()
    lake = lakestack.Lake.from_env()
    backend = {k: os.environ[k] for k in ("DUCKICELAKE_TEST_S3_ENDPOINT", "DUCKICELAKE_TEST_S3_ACCESS_KEY", "DUCKICELAKE_TEST_S3_SECRET_KEY")}
    sec = {w: secrets.token_hex(12) for w in ("admin", "bob", "alice")}
    s = lake.start_serve({
        "DUCKICELAKE_OAUTH_CLIENTS": f"admin:{sec['admin']}|*,bob:{sec['bob']}|ns:{NS}:r,alice:{sec['alice']}|ns:{NS}:r",
        "DUCKICELAKE_DUCKDB_EXTENSION_DIRECTORY": duckdb_ext.extension_directory(),
        "DUCKICELAKE_DUCKDB_MEMORY_LIMIT": args.memory_limit,
    })
    out: dict = {"rows": args.rows, "files": args.files, "memory_limit": args.memory_limit}
    try:
        data = urllib.parse.urlparse(lake.data_path).path.lstrip("/")
        con = lake.duckdb(lake.mint(f"{lake.bucket}:{data}:rw", principal="bench"))
        con.execute(f"CREATE SCHEMA IF NOT EXISTS l.{NS}")
        con.execute(f"CREATE OR REPLACE TABLE l.{NS}.big (id BIGINT, email VARCHAR, country VARCHAR, mrr INTEGER, note VARCHAR)")
        per = args.rows // args.files
        for f in range(args.files):
            con.execute(f"INSERT INTO l.{NS}.big SELECT i, 'user' || i || '@example.com', ['EU','US','APAC'][1 + i % 3], "
                        f"(i % 5000)::INTEGER, md5(i::VARCHAR) FROM range({f * per}, {(f + 1) * per}) t(i)")
            progress(f"table: file {f + 1}/{args.files} written")
        con.execute("CALL ducklake_flush_inlined_data('l')")
        base_bytes = con.execute(f"SELECT sum(data_file_size_bytes) FROM ducklake_list_files('l', 'big', schema => '{NS}')").fetchone()[0]
        out["base_bytes"] = base_bytes

        admin = RestClient(s.catalog_url, token(s.catalog_url, "admin", sec["admin"]))

        def gov(what: str, body: dict):
            st, b = admin.request("POST", f"/v1/lake/governance/{what}", json.dumps(body), {"Content-Type": "application/json"})
            assert st == 200, (what, st, b[:300])

        gov("roles", {"name": "pii_reader"})
        gov("role-grants", {"role": "pii_reader", "principal": "alice"})

        def mask(body: str):
            gov("masking-policies", {"name": "bench_mask_email", "signature": "(val VARCHAR)", "body": body,
                                     "unmasked-roles": ["pii_reader"], "file-layer-masking": True})

        mask("left(val, 2) || '***'")
        gov("policy-attachments", {"policy-kind": "masking", "policy-name": "bench_mask_email", "target-kind": "column",
                                   "schema": NS, "object": "big", "column": "email"})
        bob = RestClient(s.catalog_url, token(s.catalog_url, "bob", sec["bob"]))
        vend = {"X-Iceberg-Access-Delegation": "vended-credentials"}

        def load_bob() -> dict:
            st, b = bob.request("GET", f"/v1/lake/namespaces/{NS}/tables/big", None, vend)
            assert st == 200, (st, b[:300])
            return json.loads(b)

        # 1 + 4: the export after each rotation, against COPY; RSS meanwhile.
        direct = duckdb_ext.connect(load=("httpfs", "ducklake", "postgres"))
        u = urllib.parse.urlparse(backend["DUCKICELAKE_TEST_S3_ENDPOINT"])
        direct.execute("CREATE SECRET be (TYPE S3, KEY_ID ?, SECRET ?, ENDPOINT ?, URL_STYLE 'path', USE_SSL false, REGION ?)",
                       [backend["DUCKICELAKE_TEST_S3_ACCESS_KEY"], backend["DUCKICELAKE_TEST_S3_SECRET_KEY"], u.netloc, lake.region])
        # The same limit and part size as serve's DuckDB (internal/duckenv).
        direct.execute(f"SET memory_limit = '{args.memory_limit}'")
        direct.execute("SET s3_uploader_max_filesize = '100GB'")
        dsn = lake.dsn.replace("'", "''")
        direct.execute(f"ATTACH 'ducklake:postgres:{dsn}' AS l (DATA_PATH '{lake.data_path}', READ_ONLY)")
        rss = RSS(s.proc.pid)
        out["rss_idle_mib"] = rss.field("VmRSS")
        exports, copies, ratios = [], [], []
        with rss:
            t0 = time.monotonic()
            first = load_bob()
            out["first_export_s"] = round(time.monotonic() - t0, 3)
            assert "/__masked__/" in first["metadata-location"], first["metadata-location"]
            for r in range(args.rounds):
                # A new body each round: a new signature, a whole new copy
                # (a body seen before would find its copy still there).
                body = f"left(val, 2) || '{'*' * (r + 4)}'"
                t0 = time.monotonic()
                mask(body)
                loc = first["metadata-location"]
                while True:
                    got = load_bob()
                    if got["metadata-location"] != loc:
                        break
                    time.sleep(0.01)
                e = time.monotonic() - t0
                sel = body.replace("val", "email")
                t0 = time.monotonic()
                direct.execute(f"COPY (SELECT id, {sel} AS email, country, mrr, note FROM l.{NS}.big) "
                               f"TO 's3://{lake.bucket}/bench-copy/r{r}.parquet' (FORMAT parquet)")
                c = time.monotonic() - t0
                first = got
                exports.append(e)
                copies.append(c)
                ratios.append(c / e)
                progress(f"round {r + 1}/{args.rounds}: export {e:.2f}s, COPY {c:.2f}s, COPY/export {c / e:.2f}")
        out["export"] = {"export_s_median": round(statistics.median(exports), 3), "copy_s_median": round(statistics.median(copies), 3),
                         "copy_over_export_median": round(statistics.median(ratios), 3),
                         "copy_over_export_range": [round(min(ratios), 3), round(max(ratios), 3)],
                         "export_mb_per_s": round(base_bytes / 1e6 / statistics.median(exports), 1)}
        out["rss_peak_mib"] = rss.peak
        out["rss_hwm_mib"] = rss.field("VmHWM")
        out["rss_samples"] = rss.samples

        # 2: masked vs base scans.
        from pyiceberg.catalog.rest import RestCatalog

        def pyi(who: str):
            return RestCatalog("lake", uri=s.catalog_url, credential=f"{who}:{sec[who]}", warehouse="lake",
                               **{"oauth2-server-uri": s.catalog_url + "/v1/oauth/tokens",
                                  "header.X-Iceberg-Access-Delegation": "vended-credentials"})

        def duck(who: str):
            c = duckdb_ext.connect(load=("httpfs", "iceberg"))
            c.execute(f"CREATE SECRET s_{who} (TYPE ICEBERG, CLIENT_ID '{who}', CLIENT_SECRET ?, OAUTH2_SERVER_URI ?)",
                      [sec[who], s.catalog_url + "/v1/oauth/tokens"])
            c.execute(f"ATTACH 'lake' AS ice (TYPE iceberg, ENDPOINT '{s.catalog_url}', SECRET s_{who}, "
                      "ACCESS_DELEGATION_MODE 'vended_credentials')")
            return c

        q = f"SELECT count(*), count(DISTINCT email), sum(mrr) FROM ice.{NS}.big"
        cats = {w: pyi(w) for w in ("bob", "alice")}
        ducks = {w: duck(w) for w in ("bob", "alice")}
        scans: dict[str, list[float]] = {k: [] for k in ("pyiceberg_bob", "pyiceberg_alice", "duckdb_bob", "duckdb_alice")}
        for r in range(args.rounds):
            order = ("bob", "alice") if r % 2 == 0 else ("alice", "bob")
            for who in order:
                t0 = time.monotonic()
                n = cats[who].load_table(f"{NS}.big").scan().to_arrow().num_rows
                scans[f"pyiceberg_{who}"].append(time.monotonic() - t0)
                assert n == per * args.files, n
                t0 = time.monotonic()
                row = ducks[who].execute(q).fetchone()
                scans[f"duckdb_{who}"].append(time.monotonic() - t0)
                assert row[0] == per * args.files, row
            progress(f"scans round {r + 1}/{args.rounds}: " + ", ".join(f"{k} {v[-1]:.2f}s" for k, v in scans.items()))
        out["scan"] = {k: round(statistics.median(v), 3) for k, v in scans.items()}
        out["scan"]["pyiceberg_masked_over_base"] = round(statistics.median(
            [b / a for b, a in zip(scans["pyiceberg_bob"], scans["pyiceberg_alice"])]), 3)
        out["scan"]["duckdb_masked_over_base"] = round(statistics.median(
            [b / a for b, a in zip(scans["duckdb_bob"], scans["duckdb_alice"])]), 3)

        # 3: refresh latency after a 1-row INSERT.
        # The base table's snapshot as the catalog serves it (alice), then
        # bob's masked copy at that same snapshot.
        alice = RestClient(s.catalog_url, token(s.catalog_url, "alice", sec["alice"]))
        lat = []
        for i in range(args.refreshes):
            before = alice.current_snapshot("lake", NS, "big")
            con.execute(f"INSERT INTO l.{NS}.big VALUES ({10_000_000 + i}, 'new{i}@example.com', 'EU', 1, 'n')")
            t0 = time.monotonic()
            while (snap := alice.current_snapshot("lake", NS, "big")) == before:
                time.sleep(0.002)
            while load_bob()["metadata"].get("current-snapshot-id") != snap:
                time.sleep(0.002)
            lat.append((time.monotonic() - t0) * 1000)
        out["refresh_ms"] = {"n": len(lat), "p50": round(percentile(lat, 50), 1), "p99": round(percentile(lat, 99), 1),
                             "max": round(max(lat), 1)}
        progress(f"refresh after a 1-row INSERT: p50 {out['refresh_ms']['p50']} ms, p99 {out['refresh_ms']['p99']} ms")
    except Exception:
        # What serve said about it (its log goes with the stack's directory).
        for line in pathlib.Path(s.log.name).read_text(errors="replace").splitlines():
            if '"level":"error"' in line or '"level":"warn"' in line:
                print("serve: " + line[:2000], file=sys.stderr)
        raise
    finally:
        s.stop()
    print(json.dumps(out, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
