"""DuckLake-direct end to end (issue 11 point 6), on a stack
`scripts/bench.sh direct` starts: what a DuckDB user of a vend pays.

  1. Vend latency: GET …/ducklake-credentials for a principal whose plans mask
     --tables governed tables of the namespace (one mask on each table's email,
     one row filter on the big one), over HTTP as a client sees it — the plan,
     the reader role (CREATE ROLE, its RLS rows), the masking views' Ensure, the
     gateway credential and the audit record before the answer. "warm": the
     masking schema exists (Ensure extends its lease); "rotating": each vend
     follows a change of the mask's body, so it plans anew and writes a new
     masking schema (every governed table's view, one DuckLake snapshot).
  2. The same query over the vended reader role's ATTACH (row-level security on
     every ducklake_* table) and over the owner's ATTACH, alternating in one
     run: the base table by its qualified name (what RLS costs), and the
     principal's unqualified name (its masking view: RLS, the row filter and
     the mask) against the owner running the view's own SELECT.

Prints p50/p99 and medians with per-round ratios.
"""

from __future__ import annotations

import argparse
import json
import pathlib
import secrets
import statistics
import sys
import time
import urllib.parse

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent / "test" / "e2e"))
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent / "test"))
import duckdb_ext  # noqa: E402
import lakestack  # noqa: E402
from lakestack import RestClient, percentile  # noqa: E402
from lakestack import client_token as token  # noqa: E402

NS = "bench_direct"
QUERY = "SELECT country, count(*) AS n, sum(mrr) AS mrr, count(DISTINCT email) AS emails FROM {t} WHERE id % 3 = 0 GROUP BY country ORDER BY country"


def progress(msg: str) -> None:
    print(f"direct.py: {msg}", file=sys.stderr, flush=True)


def timed(f) -> float:
    t0 = time.perf_counter()
    f()
    return (time.perf_counter() - t0) * 1000


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--tables", type=int, default=20, help="governed tables in the namespace besides the big one")
    ap.add_argument("--vends", type=int, default=100)
    ap.add_argument("--rotations", type=int, default=20)
    ap.add_argument("--rounds", type=int, default=15)
    args = ap.parse_args()
    lake = lakestack.Lake.from_env()
    sec = {w: secrets.token_hex(12) for w in ("admin", "bob")}
    s = lake.start_serve({"DUCKICELAKE_OAUTH_CLIENTS": f"admin:{sec['admin']}|*,bob:{sec['bob']}|ns:{NS}:r",
                          "DUCKICELAKE_DUCKDB_EXTENSION_DIRECTORY": duckdb_ext.extension_directory()})
    try:
        data = urllib.parse.urlparse(lake.data_path).path.lstrip("/")
        owner = lake.duckdb(lake.mint(f"{lake.bucket}:{data}:rw", principal="bench"))
        progress(f"writing {NS}.big ({args.rows} rows) and {args.tables} more tables")
        owner.execute(f"CREATE SCHEMA IF NOT EXISTS l.{NS}")
        owner.execute(f"CREATE OR REPLACE TABLE l.{NS}.big AS SELECT i AS id, 'user' || i || '@example.com' AS email, "
                      f"['EU','US','APAC'][1 + i % 3] AS country, (i % 5000)::INTEGER AS mrr FROM range({args.rows}) t(i)")
        for i in range(args.tables):
            owner.execute(f"CREATE OR REPLACE TABLE l.{NS}.t{i} AS SELECT i AS id, 'u' || i || '@x.org' AS email FROM range(100) t(i)")
        owner.execute("CALL ducklake_flush_inlined_data('l')")

        admin = RestClient(s.catalog_url, token(s.catalog_url, "admin", sec["admin"]))

        def post(what: str, body: dict) -> None:
            st, out = admin.request("POST", "/v1/lake/governance/" + what, json.dumps(body), {"Content-Type": "application/json"})
            assert st in (200, 409), (what, out)

        post("tags", {"namespace": "bench_direct_pii", "name": "email"})
        for t in ["big"] + [f"t{i}" for i in range(args.tables)]:
            post("object-tags", {"object-kind": "column", "schema": NS, "object": t, "column": "email",
                                 "tag-namespace": "bench_direct_pii", "tag-name": "email"})

        def mask(body: str) -> None:
            post("masking-policies", {"name": "bench_direct_mask", "signature": "(val VARCHAR)", "body": body})

        mask("left(val, 2) || '***'")
        post("policy-attachments", {"policy-kind": "masking", "policy-name": "bench_direct_mask", "target-kind": "tag",
                                    "tag-namespace": "bench_direct_pii", "tag-name": "email"})
        post("row-access-policies", {"name": "bench_direct_rows", "body": "country <> 'APAC'", "columns": ["country"]})
        post("policy-attachments", {"policy-kind": "row-access", "policy-name": "bench_direct_rows", "target-kind": "table",
                                    "schema": NS, "object": "big"})

        bob = RestClient(s.catalog_url, token(s.catalog_url, "bob", sec["bob"]))
        path = f"/v1/lake/namespaces/{NS}/ducklake-credentials"

        def vend() -> dict:
            st, out = bob.request("GET", path)
            assert st == 200, out
            return json.loads(out)

        first = vend()
        assert len(first["masked_views"]) == args.tables + 1, first["masked_views"]
        progress(f"{args.vends} warm vends")
        warm = [timed(vend) for _ in range(args.vends)]
        progress(f"{args.rotations} vends after a mask change each")
        rot, schemas = [], {first["masking_schema"]}
        for i in range(args.rotations):
            mask(f"left(val, {1 + (i % 3)}) || '{'*' * (3 + i)}'")
            t0 = time.perf_counter()
            got = vend()
            rot.append((time.perf_counter() - t0) * 1000)
            # A new body is a new plan shape: this vend wrote a new schema.
            assert got["masking_schema"] not in schemas, got["masking_schema"]
            schemas.add(got["masking_schema"])
        mask("left(val, 2) || '***'")

        out = vend()
        con = duckdb_ext.connect(load=("httpfs", "ducklake", "postgres"))
        con.execute(out["secret_sql"])
        con.execute(out["attach"])
        for q in out["post_attach_sql"]:
            con.execute(q)
        ms = out["masking_schema"]
        pairs = {
            "base table, qualified": (QUERY.format(t=f"lake.{NS}.big"), QUERY.format(t=f"l.{NS}.big")),
            "masking view, unqualified (the owner reads the same view)": (QUERY.format(t="big"), QUERY.format(t=f'l."{ms}".big')),
        }
        # Same answers first: the comparison is of like with like.
        a, b = pairs["base table, qualified"]
        assert con.execute(a).fetchall() == owner.execute(b).fetchall()
        a, b = pairs["masking view, unqualified (the owner reads the same view)"]
        assert con.execute(a).fetchall() == owner.execute(b).fetchall()
        assert "APAC" not in {r[0] for r in con.execute(a).fetchall()}

        print(f"== DuckLake-direct (issue 11): {NS}, big = {args.rows} rows, {args.tables + 1} governed tables")
        print(f"vend, warm ({args.vends}):                 p50 {percentile(warm, 50):7.1f} ms   p99 {percentile(warm, 99):7.1f} ms")
        print(f"vend after a mask change ({args.rotations}):  p50 {percentile(rot, 50):7.1f} ms   p99 {percentile(rot, 99):7.1f} ms")
        for name, (reader_q, owner_q) in pairs.items():
            rd, ow, ratio = [], [], []
            for i in range(args.rounds + 1):
                # Fresh transactions, so DuckDB reads the catalog rows (RLS
                # filters them) every time; order alternates per round.
                runs = [("r", con, reader_q), ("o", owner, owner_q)]
                if i % 2:
                    runs.reverse()
                got = {}
                for who, c, q in runs:
                    got[who] = timed(lambda: c.execute(q).fetchall())
                if i == 0:
                    continue  # warm-up
                rd.append(got["r"])
                ow.append(got["o"])
                ratio.append(got["r"] / got["o"])
            print(f"query, {name}: owner {statistics.median(ow):.1f} ms, reader {statistics.median(rd):.1f} ms; "
                  f"reader/owner per round: median {statistics.median(ratio):.2f}x ({min(ratio):.2f}-{max(ratio):.2f}), "
                  f"best/best {min(rd) / min(ow):.2f}x")
        con.close()
        owner.close()
    finally:
        s.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
