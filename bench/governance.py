"""Governance benchmarks' set-up and the policy-propagation measurement, for
scripts/bench.sh governance (bench/RESULTS.md, issue 10).

  governance.py setup      DuckDB (ducklake, through the gateway) writes 100 tables gov_bench.t0…t99
                           (one Parquet file each) and gov_bench.plain; the stack's OAuth client
                           authors 1,000 policies over REST — 200 masks (email and note of every
                           table) and 800 row-access policies (8 per table) — each attached. Prints
                           three lines: the governed and the ungoverned LoadTable path, and a bearer
                           token of the stack's client.
  governance.py propagate  --a URL --b URL [--n 50]: changes a mask's body on process A, and
                           measures how long until process B's effective policies show it
                           (p50/p90/p99/max over n changes).

Reads the stack from the variables test/e2e/lakestack.py reads.
"""

from __future__ import annotations

import argparse
import json
import pathlib
import sys
import time
import urllib.parse

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent / "test" / "e2e"))
import lakestack  # noqa: E402

NS = "gov_bench"
TABLES = 100
ROW_POLICIES_PER_TABLE = 8


def progress(msg: str) -> None:
    print(f"governance.py: {msg}", file=sys.stderr, flush=True)


def post(c: lakestack.RestClient, warehouse: str, what: str, body: dict) -> None:
    status, out = c.request("POST", f"/v1/{warehouse}/governance/{what}", json.dumps(body),
                            {"Content-Type": "application/json"})
    if status != 200:
        raise RuntimeError(f"POST governance/{what} {body}: {status} {out[:300]!r}")


def setup(lake: lakestack.Lake) -> int:
    prefix = urllib.parse.urlparse(lake.data_path).path.lstrip("/")
    con = lake.duckdb(lake.mint(f"{lake.bucket}:{prefix}:rw", principal="bench"))
    con.execute(f"CREATE SCHEMA IF NOT EXISTS l.{NS}")
    for i in range(TABLES):
        con.execute(f"CREATE TABLE IF NOT EXISTS l.{NS}.t{i} (id BIGINT, email VARCHAR, country VARCHAR, mrr INTEGER, note VARCHAR)")
        con.execute(f"INSERT INTO l.{NS}.t{i} VALUES ({i}, 'user{i}@example.com', 'EU', {i * 10}, 'n{i}')")
        if (i + 1) % 25 == 0:
            progress(f"tables: {i + 1}/{TABLES}")
    con.execute(f"CREATE TABLE IF NOT EXISTS l.{NS}.plain (id BIGINT, email VARCHAR, country VARCHAR, mrr INTEGER, note VARCHAR)")
    con.execute(f"INSERT INTO l.{NS}.plain VALUES (1, 'x@example.com', 'EU', 1, 'n')")
    con.execute("CALL ducklake_flush_inlined_data('l')")
    con.close()

    token = lake.token()
    c = lakestack.RestClient(lake.catalog_url, token)
    w = lake.warehouse
    t0 = time.monotonic()
    n = 0
    for i in range(TABLES):
        for col in ("email", "note"):
            name = f"mask_{col}_{i}"
            post(c, w, "masking-policies", {"name": name, "signature": "(val VARCHAR)", "body": "left(val, 2) || '***'",
                                            "unmasked-roles": ["pii_reader"]})
            post(c, w, "policy-attachments", {"policy-kind": "masking", "policy-name": name, "target-kind": "column",
                                              "schema": NS, "object": f"t{i}", "column": col})
            n += 1
        for k in range(ROW_POLICIES_PER_TABLE):
            name = f"rows_{i}_{k}"
            post(c, w, "row-access-policies", {"name": name, "body": f"mrr >= -{k + 1}", "columns": ["mrr"],
                                               "unmasked-roles": ["auditor"]})
            post(c, w, "policy-attachments", {"policy-kind": "row-access", "policy-name": name, "target-kind": "table",
                                              "schema": NS, "object": f"t{i}"})
            n += 1
        if (i + 1) % 10 == 0:
            progress(f"policies: {n} authored and attached ({time.monotonic() - t0:.0f}s)")
    print(f"/v1/{w}/namespaces/{NS}/tables/t0")
    print(f"/v1/{w}/namespaces/{NS}/tables/plain")
    print(token)
    return 0


def propagate(lake: lakestack.Lake, a: str, b: str, n: int) -> int:
    token = lake.token(a)
    ca = lakestack.RestClient(a, token)
    cb = lakestack.RestClient(b, token)
    w = lake.warehouse
    cid = lake.credential.split(":", 1)[0]
    eff = f"/v1/{w}/governance/effective-policies?table={NS}.t0&principal={urllib.parse.quote(cid)}"
    took = []
    for i in range(n):
        body = f"left(val, {1 + i % 3}) || '#{i}'"
        t0 = time.monotonic()
        post(ca, w, "masking-policies", {"name": "mask_email_0", "signature": "(val VARCHAR)", "body": body,
                                         "unmasked-roles": ["pii_reader"]})
        t1 = time.monotonic()
        needle = f"'#{i}'".encode()
        while True:
            status, out = cb.request("GET", eff)
            if status != 200:
                raise RuntimeError(f"effective-policies on B: {status} {out[:300]!r}")
            if needle in out:
                break
            if time.monotonic() - t1 > 30:
                raise RuntimeError(f"process B never showed change {i}")
        # From the moment A answered (the change is committed) to B enforcing it.
        took.append((time.monotonic() - t1) * 1000)
        time.sleep(0.05)
    s = lakestack.summary(took)
    print(f"policy change on A (answered) → enforced by B, {n} changes: "
          f"p50 {s['p50_ms']} ms  p90 {s['p90_ms']} ms  p99 {s['p99_ms']} ms  max {s['max_ms']} ms")
    return 0


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser()
    sub = p.add_subparsers(dest="cmd", required=True)
    sub.add_parser("setup")
    pp = sub.add_parser("propagate")
    pp.add_argument("--a", required=True)
    pp.add_argument("--b", required=True)
    pp.add_argument("--n", type=int, default=50)
    args = p.parse_args(argv)
    lake = lakestack.Lake.from_env()
    if args.cmd == "setup":
        return setup(lake)
    return propagate(lake, args.a, args.b, args.n)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
