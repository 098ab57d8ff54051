"""MCP `query` latency (issue 13): an aggregate over a 1M-row table masked for
the agent, through the MCP server's streamable HTTP endpoint (the executor:
LoadTable with delegation, vended credentials, a fresh locked-down DuckDB,
iceberg_scan of the masked copy through the gateway), against the floor: the
same query in DuckDB over the same masked copy (its metadata, with the same
vended credential, through the gateway), one DuckDB connection reused.

Run by `scripts/bench.sh mcp [--runs N]` on a stack it starts. Prints p50/p99
per path, and the ratio.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import pathlib
import secrets
import sys
import time
import urllib.parse

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent / "test" / "e2e"))
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent / "test"))
import duckdb_ext  # noqa: E402
import lakestack  # noqa: E402
from lakestack import RestClient, percentile  # noqa: E402
from lakestack import client_token as token  # noqa: E402

import httpx2  # noqa: E402
from mcp import ClientSession  # noqa: E402
from mcp.client.streamable_http import streamable_http_client  # noqa: E402

NS = "bench_agents"
SQL = f"SELECT country, count(*) AS n, sum(mrr) AS mrr, count(DISTINCT email) AS emails FROM {NS}.big GROUP BY country ORDER BY country"


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=30)
    ap.add_argument("--rows", type=int, default=1_000_000)
    args = ap.parse_args()
    lake = lakestack.Lake.from_env()
    sec = {w: secrets.token_hex(12) for w in ("admin", "bot", "gw")}
    s = lake.start_serve({"DUCKICELAKE_OAUTH_CLIENTS": f"admin:{sec['admin']}|*,bot:{sec['bot']}|ns:{NS}:r,gw:{sec['gw']}|broker ns:{NS}:r",
                          "DUCKICELAKE_DUCKDB_EXTENSION_DIRECTORY": duckdb_ext.extension_directory()})
    try:
        data = urllib.parse.urlparse(lake.data_path).path.lstrip("/")
        con = lake.duckdb(lake.mint(f"{lake.bucket}:{data}:rw", principal="bench"))
        con.execute(f"CREATE SCHEMA IF NOT EXISTS l.{NS}")
        con.execute(f"CREATE OR REPLACE TABLE l.{NS}.big AS SELECT i AS id, 'user' || i || '@example.com' AS email, "
                    f"['EU','US','APAC'][1 + i % 3] AS country, (i % 5000)::INTEGER AS mrr FROM range({args.rows}) t(i)")
        con.close()
        admin = RestClient(s.catalog_url, token(s.catalog_url, "admin", sec["admin"]))
        for what, body in [
            ("tags", {"namespace": "bench_pii", "name": "email"}),
            ("object-tags", {"object-kind": "column", "schema": NS, "object": "big", "column": "email",
                             "tag-namespace": "bench_pii", "tag-name": "email"}),
            ("masking-policies", {"name": "bench_mask_email", "signature": "(val VARCHAR)", "body": "left(val, 2) || '***'",
                                  "unmasked-roles": ["bench_reader"]}),
            ("policy-attachments", {"policy-kind": "masking", "policy-name": "bench_mask_email", "target-kind": "tag",
                                    "tag-namespace": "bench_pii", "tag-name": "email"}),
        ]:
            st, out = admin.request("POST", "/v1/lake/governance/" + what, json.dumps(body), {"Content-Type": "application/json"})
            assert st in (200, 409), (what, out)

        bot = token(s.catalog_url, "bot", sec["bot"])

        async def mcp_runs() -> list[float]:
            ms = []
            async with httpx2.AsyncClient(headers={"Authorization": "Bearer " + bot}, timeout=300) as hc:
                async with streamable_http_client(s.catalog_url + "/mcp", http_client=hc) as (r, w):
                    async with ClientSession(r, w) as sess:
                        await sess.initialize()
                        for i in range(args.runs + 1):
                            t0 = time.perf_counter()
                            res = await sess.call_tool("query", {"sql": SQL})
                            dt = (time.perf_counter() - t0) * 1000
                            assert not res.is_error, res.content
                            rows = res.structured_content["rows"]
                            assert sum(r[1] for r in rows) == args.rows
                            if i:  # the first builds the masked copy
                                ms.append(dt)
            return ms

        mcp_ms = asyncio.run(mcp_runs())

        # The floor: DuckDB over the same masked copy, with the agent's
        # vended credential (LoadTable delegated by the broker).
        gw = RestClient(s.catalog_url, token(s.catalog_url, "gw", sec["gw"]))
        st, body = gw.request("GET", f"/v1/lake/namespaces/{NS}/tables/big?delegate=1&principal=bot&actor=agent&channel=mcp",
                              headers={"X-Iceberg-Access-Delegation": "vended-credentials"})
        assert st == 200, body
        lt = json.loads(body)
        assert lt["metadata"]["properties"].get("duckicelake.governance.tier") == "airtight"
        cfg = lt["storage-credentials"][0]["config"]
        d = duckdb_ext.connect(load=("httpfs", "avro", "iceberg"))
        u = urllib.parse.urlparse(s.gateway)
        d.execute("CREATE SECRET gw (TYPE S3, KEY_ID ?, SECRET ?, SESSION_TOKEN ?, ENDPOINT ?, URL_STYLE 'path', USE_SSL false, REGION ?)",
                  [cfg["s3.access-key-id"], cfg["s3.secret-access-key"], cfg["s3.session-token"], u.netloc, lake.region])
        d.execute(f"CREATE SCHEMA {NS}")
        d.execute(f"CREATE VIEW {NS}.big AS SELECT * FROM iceberg_scan('{lt['metadata-location']}')")
        floor_ms = []
        for i in range(args.runs + 1):
            t0 = time.perf_counter()
            d.execute(SQL).fetchall()
            if i:
                floor_ms.append((time.perf_counter() - t0) * 1000)
        for name, ms in (("mcp query (HTTP, executor)", mcp_ms), ("duckdb over the export", floor_ms)):
            print(f"{name:28s} p50 {percentile(ms, 50):8.1f} ms  p99 {percentile(ms, 99):8.1f} ms  (n={len(ms)})")
        print(f"ratio p50 {percentile(mcp_ms, 50) / percentile(floor_ms, 50):.2f}x")
        return 0
    finally:
        s.stop()


if __name__ == "__main__":
    sys.exit(main())
