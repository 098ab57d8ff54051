"""DuckLake-direct vends end to end: GET …/ducklake-credentials on a serve
of the stack with the seeds' cast (test_governance's fixture), then DuckDB
1.5.5 (ducklake + postgres + httpfs) runs the vended statements as they
come, and psql logs in as the vended reader role.

What this shows: a fresh Postgres reader role per vend whose row-level
security hides an allowlisted table from the ungranted in every ducklake_*
table, whose base rows of a table masked for the principal stay hidden (no
masking view serves them on this path yet, so they are never served raw),
that cannot write or read the excluded tables; refused write vends; the
audit trail.
"""

from __future__ import annotations

import concurrent.futures
import json
import subprocess
import time

import duckdb
import psycopg
import pytest

import duckdb_ext
from lakestack import RestClient
from test_governance import CUSTOMERS, NS, Gov, gov, seeds_example  # noqa: F401  (gov is the fixture)


def vend(g: Gov, who: str, query: str = ""):
    return g.call(who, "GET", f"/v1/lake/namespaces/{NS}/ducklake-credentials{query}")


def attach(out: dict):
    """A DuckDB that ran the vend's statements, exactly as handed over."""
    con = duckdb_ext.connect(load=("httpfs", "ducklake", "postgres"))
    con.execute(out["secret_sql"])
    con.execute(out["attach"])
    for q in out["post_attach_sql"]:
        con.execute(q)
    return con


def psql(dsn: str, sql: str) -> subprocess.CompletedProcess:
    return subprocess.run(["psql", dsn, "-X", "-tA", "-v", "ON_ERROR_STOP=1", "-c", sql], capture_output=True, text=True)


def test_ducklake_direct_vend(gov: Gov):
    g = gov
    seeds_example(g, file_layer=False)
    g.author("roles", {"name": "direct_analysts"})
    g.author("role-grants", {"role": "direct_analysts", "principal": "ann"})
    g.author("object-grants", {"object-kind": "table", "schema": NS, "object": "orders", "privilege": "select", "role": "direct_analysts"})

    st, bob = vend(g, "bob")
    assert st == 200, bob
    assert bob["role"].startswith("duckicelake_p_bob_") and "password=" in bob["dsn"]
    assert "READ_ONLY" in bob["attach"] and bob["storage-credentials"], bob
    assert f"{NS}.orders" not in bob["tables"], "an allowlisted table listed for the ungranted"
    assert f"{NS}.customers" in bob["restricted_tables"]

    con = attach(bob)
    # Unqualified names resolve in the vend's namespace (post_attach_sql).
    # customers is masked for bob: its base rows stay hidden on this path.
    assert con.execute("SELECT count(*) FROM customers").fetchone()[0] == 0
    tables = {r[0] for r in con.execute(f"SELECT table_name FROM duckdb_tables() WHERE database_name = 'lake'").fetchall()}
    assert "orders" not in tables and "customers" in tables
    with pytest.raises(duckdb.Error):
        con.execute(f"SELECT * FROM lake.{NS}.orders")
    with pytest.raises(duckdb.Error):
        con.execute("INSERT INTO customers VALUES (9, 'x@y', 'EU', 1)")
    con.close()

    # alice bypasses the mask: cleartext, through the gateway with the
    # vended credential.
    st, alice = vend(g, "alice", "?table=customers")
    assert st == 200, alice
    con = attach(alice)
    got = sorted(r[0] for r in con.execute("SELECT email FROM customers").fetchall())
    assert got == sorted(c[1] for c in CUSTOMERS)
    con.close()

    # ann holds the grant: orders is hers, with its rows.
    st, ann = vend(g, "ann")
    assert st == 200 and f"{NS}.orders" in ann["tables"], ann
    con = attach(ann)
    assert con.execute("SELECT count(*) FROM orders").fetchone()[0] == 3
    con.close()

    # psql as bob's reader role: nothing names orders, the excluded tables
    # and duckicelake_* are refused, nothing is written.
    dsn = bob["dsn"]
    for q in ("SELECT count(*) FROM ducklake_table WHERE table_name = 'orders'",
              "SELECT count(*) FROM ducklake_column c JOIN ducklake_table t USING (table_id) WHERE t.table_name = 'orders'",
              "SELECT count(*) FROM ducklake_data_file f JOIN ducklake_table t USING (table_id) WHERE t.table_name IN ('orders', 'customers')"):
        r = psql(dsn, q)
        assert r.returncode == 0 and r.stdout.strip() == "0", (q, r.stdout, r.stderr)
    for q in ("SELECT * FROM ducklake_snapshot_changes", "SELECT * FROM ducklake_files_scheduled_for_deletion",
              "SELECT * FROM duckicelake_reader_role", "SELECT * FROM duckicelake_gov_object_grant",
              "UPDATE ducklake_table SET table_name = 'x'", "INSERT INTO ducklake_metadata VALUES ('k', 'v', NULL, NULL)"):
        r = psql(dsn, q)
        assert r.returncode != 0 and ("permission denied" in r.stderr or "read-only" in r.stderr), (q, r.stderr)
    # The password is checked (scram): a wrong one is refused.
    r = psql(dsn.replace("password=", "password=x"), "SELECT 1")
    assert r.returncode != 0 and "password authentication failed" in r.stderr, r.stderr

    # Ten simultaneous vends for bob: ten roles, all of which log in.
    # (One HTTP connection per thread.)
    clients = [RestClient(g.serve.catalog_url, g.token("bob")) for _ in range(10)]

    def one(c: RestClient):
        st, body = c.request("GET", f"/v1/lake/namespaces/{NS}/ducklake-credentials")
        return st, json.loads(body)

    with concurrent.futures.ThreadPoolExecutor(10) as ex:
        outs = list(ex.map(one, clients))
    roles = {o["role"] for st, o in outs if st == 200}
    assert len(roles) == 10, outs
    for st, o in outs:
        with psycopg.connect(o["dsn"]) as c:
            assert c.execute("SELECT current_user").fetchone()[0] == o["role"]


def test_ducklake_direct_refusals(gov: Gov):
    g = gov
    st, out = vend(g, "bob", "?write=1")
    assert st == 403, out  # bob's token reads only
    st, out = vend(g, "admin", "?write=1")
    assert st == 400 and "write vends are not offered" in out["error"]["message"], out
    st, out = vend(g, "admin", "?write=1&actor=agent")
    assert st == 403 and "error_agent_readonly" in out["error"]["message"], out
    st, out = vend(g, "bob", "?table=no_such_table")
    assert st == 404, out
    st, out = g.call("bob", "GET", "/v1/lake/namespaces/no_such_ns/ducklake-credentials")
    assert st in (403, 404), out

    # The agent's refusal is on the record.
    deadline = time.monotonic() + 10
    while True:
        st, audit = g.gov("GET", "audit?principal=admin&decision=deny")
        assert st == 200
        if any(r.get("action") == "VendDuckLake" and "error_agent_readonly" in (r.get("reason") or "") for r in audit["records"]):
            break
        assert time.monotonic() < deadline, audit
        time.sleep(0.2)
