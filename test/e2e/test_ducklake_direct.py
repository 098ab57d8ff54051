"""DuckLake-direct vends end to end: GET …/ducklake-credentials on a serve
of the stack with the seeds' cast (test_governance's fixture), then DuckDB
1.5.5 (ducklake + postgres + httpfs) runs the vended statements as they
come, and psql logs in as the vended reader role.

What this shows: a fresh Postgres reader role per vend whose row-level
security hides an allowlisted table from the ungranted in every ducklake_*
table, which reads a table masked for it through a masking view by unqualified
name (the cooperative tier; the base name reads raw, its boundary), whose
views rotate with the policy, that cannot write or read the excluded
tables; refused write vends; the audit trail.
"""

from __future__ import annotations

import concurrent.futures
import json
import subprocess
import time
import urllib.parse

import botocore.exceptions
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
    # customers is masked for bob (cooperative tier): read through a
    # masking view in a schema post_attach_sql puts first on the search
    # path, with its base rows visible to the view.
    schema = bob["masking_schema"]
    assert schema.startswith("__mask_") and bob["masked_views"] == [f"{schema}.customers"], bob
    assert f"{NS}.customers" not in bob["restricted_tables"], bob
    assert any(q.startswith("SET search_path") and schema in q for q in bob["post_attach_sql"]), bob

    con = attach(bob)
    masked = sorted(c[1][:2] + "***" for c in CUSTOMERS)
    # Unqualified names: transparent masking, the client changed nothing.
    assert sorted(r[0] for r in con.execute("SELECT email FROM customers").fetchall()) == masked
    assert con.execute("SELECT count(*) FROM customers WHERE email LIKE '%@%'").fetchone()[0] == 0
    # The cooperative tier's boundary (README): the qualified base name
    # reads raw.
    assert sorted(r[0] for r in con.execute(f"SELECT email FROM lake.{NS}.customers").fetchall()) == sorted(c[1] for c in CUSTOMERS)
    tables = {r[0] for r in con.execute(f"SELECT table_name FROM duckdb_tables() WHERE database_name = 'lake'").fetchall()}
    assert "orders" not in tables and "customers" in tables
    with pytest.raises(duckdb.Error):
        con.execute(f"SELECT * FROM lake.{NS}.orders")
    with pytest.raises(duckdb.Error):
        con.execute("INSERT INTO customers VALUES (9, 'x@y', 'EU', 1)")

    # The owner's INSERT after the vend shows, masked, in the open session.
    prefix = g.lake.data_path.split("://", 1)[1].split("/", 1)[1]
    owner = g.lake.duckdb(g.lake.mint(f"{g.lake.bucket}:{prefix}:rw", principal="gov-writer"))
    owner.execute(f"INSERT INTO l.{NS}.customers VALUES (5, 'erin@corp.org', 'EU', 100)")
    owner.execute("CALL ducklake_flush_inlined_data('l')")  # reader roles never see inlined rows
    t0 = time.monotonic()
    try:
        while "er***" not in {r[0] for r in con.execute("SELECT email FROM customers").fetchall()}:
            assert time.monotonic() - t0 < 10, "the owner's insert never showed in the open session"
            time.sleep(0.05)
        print(f"owner insert visible, masked, in the open session after {time.monotonic() - t0:.3f}s")
    finally:
        owner.execute(f"DELETE FROM l.{NS}.customers WHERE id = 5")
        owner.execute("CALL ducklake_flush_inlined_data('l')")
        owner.close()
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
              "SELECT count(*) FROM ducklake_data_file f JOIN ducklake_table t USING (table_id) WHERE t.table_name = 'orders'"):
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


def set_props(g: Gov, who: str, table: str, updates: dict | None = None, removals: list | None = None):
    u = {"action": "set-properties", "updates": updates} if updates is not None else {"action": "remove-properties", "removals": removals}
    return g.call(who, "POST", f"/v1/lake/namespaces/{NS}/tables/{table}", {"requirements": [], "updates": [u]})


def test_ducklake_direct_masking_views_rotate_and_opt_out(gov: Gov):
    g = gov
    seeds_example(g, file_layer=False)
    st, first = vend(g, "bob")
    assert st == 200 and first["masking_schema"], first
    old = attach(first)
    assert sorted(r[0] for r in old.execute("SELECT email FROM customers").fetchall()) == sorted(c[1][:2] + "***" for c in CUSTOMERS)

    # A new mask body rotates the signature: the next vend gets a new
    # masking schema; the open session keeps its views (they go once every
    # credential told to use them has expired).
    g.author("masking-policies", {"name": "mask_email", "signature": "(val VARCHAR)", "body": "'redacted'",
                                  "unmasked-roles": ["pii_reader"], "file-layer-masking": False})
    st, second = vend(g, "bob")
    assert st == 200 and second["masking_schema"] and second["masking_schema"] != first["masking_schema"], (first, second)
    new = attach(second)
    assert {r[0] for r in new.execute("SELECT email FROM customers").fetchall()} == {"redacted"}
    assert sorted(r[0] for r in old.execute("SELECT email FROM customers").fetchall()) == sorted(c[1][:2] + "***" for c in CUSTOMERS)
    new.close()
    old.close()

    # The opt-out: a writer that is no governance administrator may not
    # set it; the admin may. Opted out, bob is served no masking view and
    # no base rows (restricted), never raw.
    st, out = set_props(g, "wes", "customers", {"duckicelake.masking-disabled": "true"})
    assert st == 403 and "governance administrator" in out["error"]["message"], out
    st, out = set_props(g, "admin", "customers", {"duckicelake.masking-disabled": "true"})
    assert st == 200, out
    try:
        st, off = vend(g, "bob")
        assert st == 200 and f"{NS}.customers" in off["restricted_tables"] and not off.get("masking_schema"), off
        con = attach(off)
        assert con.execute("SELECT count(*) FROM customers").fetchone()[0] == 0
        con.close()
    finally:
        st, out = set_props(g, "admin", "customers", removals=["duckicelake.masking-disabled"])
        assert st == 200, out
    st, back = vend(g, "bob")
    assert st == 200 and back["masking_schema"] == second["masking_schema"], back

    # The airtight tier: a masking view over the masked copy (its own
    # test below), base rows hidden.
    g.author("masking-policies", {"name": "mask_email", "signature": "(val VARCHAR)", "body": "left(val, 2) || '***'",
                                  "unmasked-roles": ["pii_reader"], "file-layer-masking": True})
    st, air = vend(g, "bob")
    assert st == 200 and f"{NS}.customers" not in air["restricted_tables"] and air["masked_views"] == [f"{air['masking_schema']}.customers"], air
    g.author("masking-policies", {"name": "mask_email", "signature": "(val VARCHAR)", "body": "left(val, 2) || '***'",
                                  "unmasked-roles": ["pii_reader"], "file-layer-masking": False})


def test_masking_view_over_rest(gov: Gov):
    """LoadTable advertises the caller's masking view; the REST views API
    (PyIceberg's load_view here) serves it to that caller alone; masking
    schemas are in no listing and are read-only."""
    g = gov
    seeds_example(g, file_layer=False)
    st, meta = g.load("bob", "customers")
    assert st == 200, meta
    name = meta["metadata"]["properties"].get("duckicelake.masking-view-name")
    assert name and name.startswith("__mask_") and name.endswith(".customers"), meta["metadata"]["properties"]
    schema = name.split(".", 1)[0]
    # The DuckLake-direct vend names the same schema.
    st, out = vend(g, "bob")
    assert st == 200 and out["masking_schema"] == schema, out
    st, out = vend(g, "bob", "?table=customers")
    assert st == 200 and out["masking_schema"] == schema and out["masked_views"] == [name], out
    # alice bypasses the mask: no view advertised.
    st, ameta = g.load("alice", "customers")
    assert st == 200 and "duckicelake.masking-view-name" not in ameta["metadata"].get("properties", {}), ameta["metadata"]

    # A view-capable engine loads it: the masking SELECT in DuckDB's
    # dialect over the base table, its schema the table's.
    view = g.pyiceberg("bob").load_view((schema, "customers"))
    rep = view.metadata.versions[-1].representations[0].root
    assert rep.dialect == "duckdb" and f'"{NS}"."customers"' in rep.sql and "***" in rep.sql, rep
    assert "{DUCKLAKE_CATALOG}" not in rep.sql
    assert list(view.metadata.versions[-1].default_namespace) == [NS]
    assert [f.name for f in view.metadata.schemas[-1].fields] == [c["name"] for c in meta["metadata"]["schemas"][-1]["fields"]]
    assert view.metadata.properties.get("duckicelake.masked-table") == f"{NS}.customers"
    # Run as DuckDB would: the view's SQL over the base table reads masked.
    con = attach(out)
    got = sorted(r[0] for r in con.execute(f"SELECT email FROM ({rep.sql})").fetchall())
    assert got == sorted(c[1][:2] + "***" for c in CUSTOMERS)
    con.close()

    # Principals whose plans have the same shape share it (ann: masked as
    # bob is).
    st, nmeta = g.load("ann", "customers")
    assert st == 200 and nmeta["metadata"]["properties"].get("duckicelake.masking-view-name") == name, nmeta["metadata"]["properties"]
    # Nobody else sees it, and it answers exactly as a schema that never
    # existed would: alice (other plans) against a made-up signature.
    fake = "__mask_0000000000000000"
    for who in ("alice",):
        for path, kind in ((f"/v1/lake/namespaces/{schema}/views/customers", "NoSuchViewException"),
                           (f"/v1/lake/namespaces/{schema}/views", "NoSuchNamespaceException"),
                           (f"/v1/lake/namespaces/{schema}", "NoSuchNamespaceException"),
                           (f"/v1/lake/namespaces/{schema}/tables/customers", "NoSuchTableException")):
            st, out = g.call(who, "GET", path)
            st2, out2 = g.call(who, "GET", path.replace(schema, fake))
            assert st == st2 == 404 and out["error"]["type"] == out2["error"]["type"] == kind, (who, path, out, out2)
            assert out["error"]["message"].replace(schema, fake) == out2["error"]["message"], (out, out2)
    # No listing names a masking schema, the caller's own included.
    for who in ("bob", "admin"):
        st, out = g.call(who, "GET", "/v1/lake/namespaces")
        assert st == 200 and not any(ns[0].startswith("__mask_") for ns in out["namespaces"]), out
    # bob's own: listed views, no tables, read-only.
    st, out = g.call("bob", "GET", f"/v1/lake/namespaces/{schema}/views")
    assert st == 200 and {"namespace": [schema], "name": "customers"} in out["identifiers"], out
    st, out = g.call("bob", "GET", f"/v1/lake/namespaces/{schema}/tables/customers")
    assert st == 404 and out["error"]["type"] == "NoSuchTableException", out
    st, out = g.call("alice", "DELETE", f"/v1/lake/namespaces/{schema}/views/customers")
    assert st == 404, out  # not alice's schema
    st, out = g.call("bob", "DELETE", f"/v1/lake/namespaces/{schema}/views/customers")
    assert st == 403 and "read-only" in out["error"]["message"], out
    st, out = g.call("alice", "POST", "/v1/lake/views/rename",
                     {"source": {"namespace": [schema], "name": "customers"}, "destination": {"namespace": [NS], "name": "stolen"}})
    assert st == 404, out
    assert g.pyiceberg("bob").view_exists((schema, "customers"))


def no_raw(what) -> None:
    """No raw email of the seeds (nor the row the test inserts) in what."""
    text = what if isinstance(what, str) else json.dumps(what)
    for raw in [c[1] for c in CUSTOMERS] + ["erin@corp.org"]:
        assert raw not in text and raw.split("@")[1] not in text, f"a raw value in {text[:400]}"


def test_ducklake_direct_airtight_reads_masked_copy(gov: Gov):
    """The airtight tier on the DuckLake-direct path: bob's unqualified
    name is a masking view over the masked copy's files, read through the
    gateway with the vended credential; the qualified base name shows no
    cleartext; the base files are refused to bob's credential; an owner's
    insert shows, masked, in a new vend and in the open session (the view
    follows the copy's refresh in place, the masking schema keeps its
    name); alice reads cleartext."""
    g = gov
    seeds_example(g, file_layer=True)
    masked = sorted(c[1][:2] + "***" for c in CUSTOMERS)

    st, bob = vend(g, "bob")
    assert st == 200, bob
    no_raw(bob)
    schema = bob["masking_schema"]
    assert schema.startswith("__mask_") and bob["masked_views"] == [f"{schema}.customers"], bob
    assert f"{NS}.customers" in bob["tables"] and f"{NS}.customers" not in bob["restricted_tables"], bob
    prefixes = [c["prefix"] for c in bob["storage-credentials"]]
    assert any("/__masked__/" in p for p in prefixes), prefixes

    con = attach(bob)
    assert sorted(r[0] for r in con.execute("SELECT email FROM customers").fetchall()) == masked
    assert con.execute("SELECT count(*) FROM customers WHERE email LIKE '%@%'").fetchone()[0] == 0
    # The qualified base name: the reader role sees no base file row, so
    # no cleartext (empty, or an error that carries none).
    try:
        base = con.execute(f"SELECT email FROM lake.{NS}.customers").fetchall()
        assert base == [], base
    except duckdb.Error as e:
        no_raw(str(e))

    # Bob's gateway credential: the masked copy reads, a base data file of
    # the table is refused (alice's credential lists them).
    s3 = g.s3(bob["storage-credentials"][0]["config"])
    export = urllib.parse.urlparse(next(p for p in prefixes if "/__masked__/" in p))
    keys = [o["Key"] for o in s3.list_objects_v2(Bucket=export.netloc, Prefix=export.path.lstrip("/")).get("Contents", [])]
    parquet = [k for k in keys if k.endswith(".parquet") and "/data/" in k]
    assert parquet, keys
    body = s3.get_object(Bucket=export.netloc, Key=parquet[0])["Body"].read()
    no_raw(body.decode("latin-1"))
    st, la = g.load("alice", "customers", vend=True)
    assert st == 200, la
    ap = urllib.parse.urlparse(la["storage-credentials"][0]["prefix"])
    base_keys = [o["Key"] for o in g.s3(la["storage-credentials"][0]["config"]).list_objects_v2(
        Bucket=ap.netloc, Prefix=ap.path.lstrip("/")).get("Contents", []) if o["Key"].endswith(".parquet") and "/metadata/" not in o["Key"]]
    assert base_keys, "alice's listing of the base table"
    with pytest.raises(botocore.exceptions.ClientError) as e:
        s3.get_object(Bucket=ap.netloc, Key=base_keys[0])
    assert e.value.response["Error"]["Code"] in ("AccessDenied", "403"), e.value.response
    no_raw(str(e.value))

    # The table's own vend: the copy's credential, the same schema.
    st, tb = vend(g, "bob", "?table=customers")
    assert st == 200 and tb["masking_schema"] == schema and tb["masked_views"] == [f"{schema}.customers"], tb
    assert all("/__masked__/" in c["prefix"] for c in tb["storage-credentials"]), tb["storage-credentials"]
    tcon = attach(tb)
    assert sorted(r[0] for r in tcon.execute("SELECT email FROM customers").fetchall()) == masked
    tcon.close()

    # alice (pii_reader bypasses the mask) reads cleartext.
    st, alice = vend(g, "alice")
    assert st == 200 and f"{NS}.customers" not in alice["restricted_tables"], alice
    acon = attach(alice)
    assert sorted(r[0] for r in acon.execute("SELECT email FROM customers").fetchall()) == sorted(c[1] for c in CUSTOMERS)
    acon.close()

    # The owner's INSERT + flush: the copy refreshes, and bob's open
    # session reads the new row masked (the view rewritten in place); a new
    # vend names the same masking schema and reads it too. (The writer's
    # credential is alice's: anyone the mask holds is refused the base
    # files on the bytes, and DuckDB reads them to write.)
    prefix = g.lake.data_path.split("://", 1)[1].split("/", 1)[1]
    owner = g.lake.duckdb(g.lake.mint(f"{g.lake.bucket}:{prefix}:rw", principal="alice"))
    owner.execute(f"INSERT INTO l.{NS}.customers VALUES (5, 'erin@corp.org', 'EU', 100)")
    owner.execute("CALL ducklake_flush_inlined_data('l')")
    try:
        t0 = time.monotonic()
        while "er***" not in {r[0] for r in con.execute("SELECT email FROM customers").fetchall()}:
            assert time.monotonic() - t0 < 20, "the owner's insert never showed in the open session"
            time.sleep(0.1)
        print(f"owner insert visible, masked, in the open session after {time.monotonic() - t0:.3f}s")
        st, again = vend(g, "bob")
        assert st == 200 and again["masking_schema"] == schema, again
        no_raw(again)
        ncon = attach(again)
        got = sorted(r[0] for r in ncon.execute("SELECT email FROM customers").fetchall())
        assert got == sorted(masked + ["er***"]), got
        ncon.close()
        assert sorted(r[0] for r in con.execute("SELECT email FROM customers").fetchall()) == sorted(masked + ["er***"])
    finally:
        owner.execute(f"DELETE FROM l.{NS}.customers WHERE id = 5")
        owner.execute("CALL ducklake_flush_inlined_data('l')")
        owner.close()
    con.close()


def test_ducklake_direct_airtight_copy_failure_fails_closed(gov: Gov):
    """A mask that binds but fails on the table's values makes no masked
    copy: bob's vend (the namespace's or the table's) is refused with a 503
    that carries no raw value, never a vend that reads base rows."""
    g = gov
    seeds_example(g, file_layer=True)
    g.author("masking-policies", {"name": "mask_email", "signature": "(val VARCHAR)", "body": "CAST(CAST(val AS INTEGER) AS VARCHAR)",
                                  "unmasked-roles": ["pii_reader"], "file-layer-masking": True})
    try:
        for q in ("", "?table=customers"):
            st, out = vend(g, "bob", q)
            assert st == 503 and out["error"]["type"] == "ServiceUnavailableException", out
            assert "could not be made" in out["error"]["message"], out
            no_raw(out)
        # alice's plan has no mask: her vend is unaffected.
        st, out = vend(g, "alice")
        assert st == 200, out
    finally:
        g.author("masking-policies", {"name": "mask_email", "signature": "(val VARCHAR)", "body": "left(val, 2) || '***'",
                                      "unmasked-roles": ["pii_reader"], "file-layer-masking": True})


def test_ducklake_direct_airtight_empty_copy(gov: Gov):
    """An airtight table with no rows has a masked copy with no file: its
    masking view reads no rows, in the columns' types, without an error."""
    g = gov
    seeds_example(g, file_layer=True)
    prefix = g.lake.data_path.split("://", 1)[1].split("/", 1)[1]
    owner = g.lake.duckdb(g.lake.mint(f"{g.lake.bucket}:{prefix}:rw", principal="gov-writer"))
    owner.execute(f"CREATE OR REPLACE TABLE l.{NS}.empty_people (id BIGINT, email VARCHAR)")
    try:
        g.author("object-tags", {"object-kind": "column", "schema": NS, "object": "empty_people", "column": "email",
                                 "tag-namespace": "pii", "tag-name": "email"})
        st, bob = vend(g, "bob")
        assert st == 200 and f"{bob['masking_schema']}.empty_people" in bob["masked_views"], bob
        assert f"{NS}.empty_people" not in bob["restricted_tables"], bob
        # No file to read: the view is the plan's SELECT over no rows.
        r = psql(bob["dsn"], "SELECT sql FROM ducklake_view WHERE view_name = 'empty_people' AND end_snapshot IS NULL")
        assert r.returncode == 0 and "WHERE false" in r.stdout and "read_parquet" not in r.stdout, (r.stdout, r.stderr)
        con = attach(bob)
        assert con.execute("SELECT * FROM empty_people").fetchall() == []
        assert [(r[0], r[1]) for r in con.execute("DESCRIBE empty_people").fetchall()] == [("id", "BIGINT"), ("email", "VARCHAR")]
        assert sorted(r[0] for r in con.execute("SELECT email FROM customers").fetchall()) == sorted(c[1][:2] + "***" for c in CUSTOMERS)
        con.close()
    finally:
        owner.execute(f"DROP TABLE IF EXISTS l.{NS}.empty_people")
        owner.close()
