"""Governance end to end, through a `duckicelake serve` of the stack's fleet
with OAuth clients for an administrator, bob, alice and ann, and real
clients: the seeds' example (README "One policy set, per-principal
results") authored over REST with the seeds' curl bodies, then read by
PyIceberg, DuckDB's iceberg extension and boto3 through the gateway.

Tables live in namespace gov_analytics so nothing here governs another
suite's tables; the module removes what it authored when it ends.
"""

from __future__ import annotations

import json
import secrets
import time
import urllib.parse

import boto3
import botocore.config
import botocore.exceptions
import pytest

import duckdb_ext
from lakestack import GovSession, Lake

NS = "gov_analytics"
SECRETS = {who: secrets.token_hex(12) for who in ("admin", "bob", "alice", "ann", "wes", "rita")}

CUSTOMERS = [
    (1, "alice@example.com", "EU", 2400),
    (2, "bob@personal.io", "US", 1800),
    (3, "carol@work.net", "EU", 900),
    (4, "dave@example.com", "US", 3100),
]


@pytest.fixture(scope="module")
def gov(lake: Lake):
    """A serve process whose OAuth clients are the seeds' cast, and the
    sample tables in gov_analytics (Parquet files, written by DuckDB through
    the gateway)."""
    clients = ",".join([
        f"admin:{SECRETS['admin']}|*",
        f"bob:{SECRETS['bob']}|ns:{NS}:r",
        f"alice:{SECRETS['alice']}|ns:{NS}:r",
        f"ann:{SECRETS['ann']}|ns:{NS}:r",
        f"wes:{SECRETS['wes']}|ns:{NS}:rw",  # a writer, not a governance admin
        f"rita:{SECRETS['rita']}|governance:read ns:{NS}:r",  # reads policies, authors none
    ])
    # The masked copies are written by serve's embedded DuckDB, with the
    # venv's extensions.
    s = lake.start_serve({"DUCKICELAKE_OAUTH_CLIENTS": clients,
                          "DUCKICELAKE_DUCKDB_EXTENSION_DIRECTORY": duckdb_ext.extension_directory()})
    prefix = urllib.parse.urlparse(lake.data_path).path.lstrip("/")
    con = lake.duckdb(lake.mint(f"{lake.bucket}:{prefix}:rw", principal="gov-writer"))
    con.execute(f"CREATE SCHEMA IF NOT EXISTS l.{NS}")
    con.execute(f"CREATE OR REPLACE TABLE l.{NS}.customers (id BIGINT, email VARCHAR, country VARCHAR, mrr INTEGER)")
    con.execute(f"INSERT INTO l.{NS}.customers VALUES " + ",".join(f"({i}, '{e}', '{c}', {m})" for i, e, c, m in CUSTOMERS))
    con.execute(f"CREATE OR REPLACE TABLE l.{NS}.orders (id BIGINT, customer_id BIGINT, amount DOUBLE)")
    con.execute(f"INSERT INTO l.{NS}.orders VALUES (1, 1, 120.0), (2, 2, 80.5), (3, 3, 42.0)")
    # Parquet files, not inlined rows: the byte-level checks read them.
    con.execute("CALL ducklake_flush_inlined_data('l')")
    con.close()
    g = Gov(lake, s)
    yield g
    g.cleanup()
    s.stop()


class Gov(GovSession):
    """The seeds' cast (SECRETS) on the serve process, with the clients
    that read what they authored."""

    def __init__(self, lake: Lake, serve):
        super().__init__(lake, serve, SECRETS)

    def load(self, who: str, table: str, vend: bool = False):
        h = {"X-Iceberg-Access-Delegation": "vended-credentials"} if vend else {}
        return self.call(who, "GET", f"/v1/lake/namespaces/{NS}/tables/{table}", headers=h)

    def pyiceberg(self, who: str, delegation: str = "vended-credentials"):
        from pyiceberg.catalog.rest import RestCatalog
        uri = self.serve.catalog_url
        return RestCatalog("lake", uri=uri, credential=f"{who}:{SECRETS[who]}", warehouse="lake",
                           **{"oauth2-server-uri": uri + "/v1/oauth/tokens",
                              "header.X-Iceberg-Access-Delegation": delegation})

    def s3(self, creds: dict):
        return boto3.client("s3", endpoint_url=self.serve.gateway, region_name="us-east-1",
                            aws_access_key_id=creds["s3.access-key-id"], aws_secret_access_key=creds["s3.secret-access-key"],
                            aws_session_token=creds["s3.session-token"],
                            config=botocore.config.Config(s3={"addressing_style": "path"}, retries={"max_attempts": 1}))


def emails(arrow) -> list:
    return sorted(arrow.column("email").to_pylist())


def make_table(g: Gov, name: str, ddl: str, rows: str):
    """A table in NS written by DuckDB through the gateway (Parquet files)."""
    prefix = urllib.parse.urlparse(g.lake.data_path).path.lstrip("/")
    con = g.lake.duckdb(g.lake.mint(f"{g.lake.bucket}:{prefix}:rw", principal="gov-writer"))
    con.execute(f"CREATE OR REPLACE TABLE l.{NS}.{name} ({ddl})")
    con.execute(f"INSERT INTO l.{NS}.{name} VALUES {rows}")
    con.execute("CALL ducklake_flush_inlined_data('l')")
    con.close()


def seeds_example(g: Gov, file_layer: bool):
    """The seeds' README curl calls, with the table in gov_analytics."""
    g.author("tags", {"namespace": "pii", "name": "email"})
    g.author("object-tags", {"object-kind": "column", "schema": NS, "object": "customers", "column": "email",
                             "tag-namespace": "pii", "tag-name": "email"})
    g.author("masking-policies", {"name": "mask_email", "signature": "(val VARCHAR)", "body": "left(val, 2) || '***'",
                                  "unmasked-roles": ["pii_reader"], "file-layer-masking": file_layer})
    g.author("policy-attachments", {"policy-kind": "masking", "policy-name": "mask_email", "target-kind": "tag",
                                    "tag-namespace": "pii", "tag-name": "email"})
    g.author("roles", {"name": "pii_reader"})
    g.author("role-grants", {"role": "pii_reader", "principal": "alice"})


def test_seeds_example_cooperative_then_airtight(gov: Gov):
    g = gov
    seeds_example(g, file_layer=False)

    # effective-policies: bob masked, alice bypasses; each may ask about itself.
    st, bob = g.gov("GET", f"effective-policies?table={NS}.customers&principal=bob")
    assert st == 200 and [m["column"] for m in bob["plan"]["masked-columns"]] == ["email"], bob
    assert "left" in bob["plan"]["view-sql"] and bob["plan"]["tier"] == "cooperative"
    st, alice = g.gov("GET", f"effective-policies?table={NS}.customers", who="alice")
    assert st == 200 and alice["plan"]["masked-columns"] == [] and alice["derived"]["masking-policies"][0]["bypassed"]
    st, _ = g.gov("GET", f"effective-policies?table={NS}.customers&principal=alice", who="bob")
    assert st == 403

    # LoadTable stamps bob's metadata and read-restrictions, not alice's.
    st, lb = g.load("bob", "customers")
    assert st == 200, lb
    props = lb["metadata"]["properties"]
    assert props.get("duckicelake.mask.email", "").startswith("CAST((left(")
    assert lb["read-restrictions"]["required-column-projections"][0]["action"] == "replace-with-null"
    email_doc = [f for f in lb["metadata"]["schemas"][-1]["fields"] if f["name"] == "email"][0].get("doc", "")
    assert "masked by mask_email" in email_doc
    st, la = g.load("alice", "customers")
    assert st == 200 and "duckicelake.mask.email" not in la["metadata"].get("properties", {}) and "read-restrictions" not in la

    # The cooperative tier's boundary: PyIceberg does not apply read
    # restrictions, so bob reads raw bytes here (documented).
    assert emails(g.pyiceberg("bob").load_table(f"{NS}.customers").scan().to_arrow()) == sorted(c[1] for c in CUSTOMERS)

    # Airtight: the same mask enforced on the bytes.
    g.author("masking-policies", {"name": "mask_email", "signature": "(val VARCHAR)", "body": "left(val, 2) || '***'",
                                  "unmasked-roles": ["pii_reader"], "file-layer-masking": True})
    st, lb = g.load("bob", "customers", vend=True)
    assert st == 200, lb
    assert "/__masked__/" in lb["metadata-location"]
    assert json.dumps(lb["metadata"]).find("@") < 0, "a raw value in bob's metadata"
    prefixes = [c["prefix"] for c in lb["storage-credentials"]]
    assert len(prefixes) == 1 and "/__masked__/" in prefixes[0]

    # PyIceberg, through the gateway with the vended credential: masked
    # values for bob, cleartext for alice.
    assert emails(g.pyiceberg("bob").load_table(f"{NS}.customers").scan().to_arrow()) == sorted(c[1][:2] + "***" for c in CUSTOMERS)
    assert emails(g.pyiceberg("alice").load_table(f"{NS}.customers").scan().to_arrow()) == sorted(c[1] for c in CUSTOMERS)

    # PyIceberg with remote signing (no S3 credential at all): the same
    # masked rows for bob, cleartext for alice; the signer is admitted by the
    # same pipeline as the gateway.
    assert emails(g.pyiceberg("bob", "remote-signing").load_table(f"{NS}.customers").scan().to_arrow()) == sorted(c[1][:2] + "***" for c in CUSTOMERS)
    assert emails(g.pyiceberg("alice", "remote-signing").load_table(f"{NS}.customers").scan().to_arrow()) == sorted(c[1] for c in CUSTOMERS)

    # DuckDB's iceberg extension, with the credentials the catalog vends.
    con = duckdb_ext.connect()
    con.execute("CREATE SECRET bob (TYPE ICEBERG, CLIENT_ID 'bob', CLIENT_SECRET ?, OAUTH2_SERVER_URI ?)",
                [SECRETS["bob"], g.serve.catalog_url + "/v1/oauth/tokens"])
    con.execute(f"ATTACH 'lake' AS ice (TYPE iceberg, ENDPOINT '{g.serve.catalog_url}', SECRET bob, ACCESS_DELEGATION_MODE 'vended_credentials')")
    got = sorted(r[0] for r in con.execute(f"SELECT email FROM ice.{NS}.customers").fetchall())
    assert got == sorted(c[1][:2] + "***" for c in CUSTOMERS)
    con.close()

    # Raw S3 with bob's vended credential: the masked copy reads, the base
    # Parquet is refused, and time travel has no masked copy.
    creds = lb["storage-credentials"][0]["config"]
    s3 = g.s3(creds)
    loc = urllib.parse.urlparse(prefixes[0])
    listed = s3.list_objects_v2(Bucket=loc.netloc, Prefix=loc.path.lstrip("/"))
    keys = [o["Key"] for o in listed.get("Contents", [])]
    assert any(k.endswith(".parquet") for k in keys)
    body = s3.get_object(Bucket=loc.netloc, Key=[k for k in keys if k.endswith(".parquet")][0])["Body"].read()
    assert b"@example.com" not in body and b"@work.net" not in body
    st, la = g.load("alice", "customers", vend=True)
    alice_creds = la["storage-credentials"][0]["config"]
    alice_prefix = urllib.parse.urlparse(la["storage-credentials"][0]["prefix"])
    base_keys = [o["Key"] for o in g.s3(alice_creds).list_objects_v2(Bucket=alice_prefix.netloc,
                                                                        Prefix=alice_prefix.path.lstrip("/")).get("Contents", [])
                 if o["Key"].endswith(".parquet") and "/metadata/" not in o["Key"]]
    assert base_keys, "alice's listing of the base table"
    with pytest.raises(botocore.exceptions.ClientError) as e:
        s3.get_object(Bucket=alice_prefix.netloc, Key=base_keys[0])
    assert e.value.response["Error"]["Code"] == "AccessDenied"
    # The remote signer refuses to sign bob's GET of a base file (even
    # though his token reads the namespace), and signs alice's.
    for who, want in (("bob", 403), ("alice", 200)):
        st, out = g.call(who, "POST", f"/v1/lake/namespaces/{NS}/tables/customers/sign",
                         {"region": "us-east-1", "method": "GET", "headers": {},
                          "uri": f"{g.serve.gateway}/{alice_prefix.netloc}/{base_keys[0]}"})
        assert st == want, (who, st, out)
        assert "@" not in json.dumps(out)
    snap = lb["metadata"]["current-snapshot-id"]
    st, out = g.call("bob", "GET", f"/v1/lake/namespaces/{NS}/tables/customers?snapshot-id={snap - 1}")
    assert st in (406, 404), out

    # A namespace-wide credential minted for bob cannot read the base file
    # either: the gateway decides by the table, not by the credential.
    prefix = urllib.parse.urlparse(g.lake.data_path).path.lstrip("/")
    wide = g.lake.mint(f"{g.lake.bucket}:{prefix}{NS}/:r", principal="bob")
    s3w = g.s3({"s3.access-key-id": wide.key, "s3.secret-access-key": wide.secret, "s3.session-token": wide.token})
    with pytest.raises(botocore.exceptions.ClientError) as e:
        s3w.get_object(Bucket=alice_prefix.netloc, Key=base_keys[0])
    assert e.value.response["Error"]["Code"] == "AccessDenied"
    # …nor list the base table, nor copy from it.
    with pytest.raises(botocore.exceptions.ClientError):
        s3w.list_objects_v2(Bucket=alice_prefix.netloc, Prefix=f"{prefix}{NS}/customers/")


def test_statistics_files_never_reach_masked_principals(gov: Gov):
    """A statistics file an engine's ANALYZE registered (NDV sketches, blob
    properties: values of the raw data) is served to a principal the table
    is not masked for, and to a masked one in neither tier."""
    g = gov
    make_table(g, "stats_people", "id BIGINT, email VARCHAR", "(1, 'alice@example.com'), (2, 'bob@personal.io')")
    st, la = g.load("admin", "stats_people")
    assert st == 200, la
    md = la["metadata"]
    snap = md["current-snapshot-id"]
    stats = {"snapshot-id": snap, "statistics-path": md["location"] + "/metadata/analyze-1.stats", "file-size-in-bytes": 413,
             "file-footer-size-in-bytes": 309,
             "blob-metadata": [{"type": "apache-datasketches-theta-v1", "snapshot-id": snap, "sequence-number": snap,
                                "fields": [2], "properties": {"ndv": "2"}}]}
    st, out = g.call("admin", "POST", f"/v1/lake/namespaces/{NS}/tables/stats_people",
                     {"requirements": [], "updates": [{"action": "set-statistics", "snapshot-id": snap, "statistics": stats}]})
    assert st == 200 and out["metadata"]["statistics"] == [stats], out

    g.author("tags", {"namespace": "pii", "name": "stats_email"})
    g.author("object-tags", {"object-kind": "column", "schema": NS, "object": "stats_people", "column": "email",
                             "tag-namespace": "pii", "tag-name": "stats_email"})
    g.author("roles", {"name": "stats_reader"})
    g.author("role-grants", {"role": "stats_reader", "principal": "alice"})
    for file_layer in (False, True):
        g.author("masking-policies", {"name": "mask_stats_email", "signature": "(val VARCHAR)", "body": "left(val, 2) || '***'",
                                      "unmasked-roles": ["stats_reader"], "file-layer-masking": file_layer})
        if not file_layer:
            g.author("policy-attachments", {"policy-kind": "masking", "policy-name": "mask_stats_email", "target-kind": "tag",
                                            "tag-namespace": "pii", "tag-name": "stats_email"})
        st, lb = g.load("bob", "stats_people", vend=file_layer)
        assert st == 200, lb
        assert lb["metadata"]["properties"]["duckicelake.governance.tier"] == ("airtight" if file_layer else "cooperative")
        assert "statistics" not in lb["metadata"] and "partition-statistics" not in lb["metadata"], lb["metadata"]
        assert "analyze-1.stats" not in json.dumps(lb), "bob was served the statistics file"
        st, la = g.load("alice", "stats_people")
        assert st == 200 and la["metadata"]["statistics"] == [stats], la
    # A real client reads them: PyIceberg parses the entry (Trino's SHOW
    # STATS reads its blobs the same way), and bob's table has none.
    served = g.pyiceberg("alice").load_table(f"{NS}.stats_people").metadata.statistics
    assert [(f.snapshot_id, f.statistics_path, f.blob_metadata[0].properties) for f in served] == \
        [(snap, stats["statistics-path"], {"ndv": "2"})]
    assert g.pyiceberg("bob").load_table(f"{NS}.stats_people").metadata.statistics == []


def test_allowlist_hidden_everywhere(gov: Gov):
    g = gov
    g.author("roles", {"name": "gov_analysts"})
    g.author("role-grants", {"role": "gov_analysts", "principal": "ann"})
    g.author("object-grants", {"object-kind": "table", "schema": NS, "object": "orders", "privilege": "select", "role": "gov_analysts"})

    st, listing = g.call("bob", "GET", f"/v1/lake/namespaces/{NS}/tables")
    assert st == 200 and "orders" not in [i["name"] for i in listing["identifiers"]], listing
    st, listing = g.call("ann", "GET", f"/v1/lake/namespaces/{NS}/tables")
    assert "orders" in [i["name"] for i in listing["identifiers"]]

    # bob: exactly what a missing table answers.
    st_hidden, hidden = g.load("bob", "orders")
    st_missing, missing = g.load("bob", "no_such_table")
    assert st_hidden == st_missing == 404
    assert hidden["error"]["type"] == missing["error"]["type"] == "NoSuchTableException"
    assert hidden["error"]["message"].replace("orders", "X") == missing["error"]["message"].replace("no_such_table", "X")
    for sub in ("credentials",):
        st, _ = g.call("bob", "GET", f"/v1/lake/namespaces/{NS}/tables/orders/{sub}")
        assert st == 404
    st, _ = g.call("bob", "HEAD", f"/v1/lake/namespaces/{NS}/tables/orders")
    assert st == 404
    st, lo = g.load("ann", "orders", vend=True)
    assert st == 200

    # The gateway: a namespace-wide credential for bob gets no byte of
    # orders; ann's gets them.
    prefix = urllib.parse.urlparse(g.lake.data_path).path.lstrip("/")
    creds = lo["storage-credentials"][0]["config"]
    okeys = [o["Key"] for o in g.s3(creds).list_objects_v2(Bucket=g.lake.bucket, Prefix=f"{prefix}{NS}/orders/").get("Contents", [])]
    pq = [k for k in okeys if k.endswith(".parquet") and "/metadata/" not in k][0]
    for who, allowed in (("bob", False), ("ann", True)):
        w = g.lake.mint(f"{g.lake.bucket}:{prefix}{NS}/:r", principal=who)
        s3 = g.s3({"s3.access-key-id": w.key, "s3.secret-access-key": w.secret, "s3.session-token": w.token})
        if allowed:
            s3.get_object(Bucket=g.lake.bucket, Key=pq)
            continue
        for call in (lambda: s3.get_object(Bucket=g.lake.bucket, Key=pq),
                     lambda: s3.head_object(Bucket=g.lake.bucket, Key=pq),
                     lambda: s3.list_objects_v2(Bucket=g.lake.bucket, Prefix=f"{prefix}{NS}/")):
            with pytest.raises(botocore.exceptions.ClientError) as e:
                call()
            assert e.value.response["Error"]["Code"] in ("AccessDenied", "403"), e.value.response

    # Every decision is on the record: bob's refused gateway reads reach
    # the Postgres audit trail (batched), and bob sees only his own.
    deadline = time.monotonic() + 10
    while True:
        st, audit = g.gov("GET", f"audit?principal=bob&decision=deny", who="admin")
        assert st == 200
        if any(r["source"] == "s3" for r in audit["records"]):
            break
        assert time.monotonic() < deadline, audit
        time.sleep(0.2)
    st, own = g.gov("GET", "audit", who="bob")
    assert st == 200 and all(r["principal"] == "bob" for r in own["records"])
    st, _ = g.gov("GET", "audit?principal=ann", who="bob")
    assert st == 403


def test_authoring_refusals(gov: Gov):
    g = gov
    # DuckDB's own message for a body that does not type.
    st, out = g.gov("POST", "masking-policies", {"name": "bad", "signature": "(val VARCHAR)", "body": "val + 1"})
    assert st == 400 and "No function matches" in out["error"]["message"]
    # Without a governance scope, nothing is authored.
    st, _ = g.gov("POST", "tags", {"namespace": "x", "name": "y"}, who="bob")
    assert st == 403
    # An injection-shaped body is refused before it reaches anything.
    st, out = g.gov("POST", "row-access-policies", {"name": "inj", "body": "1=1); DROP TABLE x; --"})
    assert st == 400


def test_failure_posture(gov: Gov, lake: Lake):
    """Issue 10's failure posture. A mask that stops applying (its column's
    type changed under it by DuckDB) leaves the cooperative tier open by
    default — the rest of the plan stamped, the unapplied policy on the
    answer's audit record — and closed on a serve with
    governance.fail_closed = true. A file-layer mask whose body fails at run
    time (a cast the authoring-time check types but the data breaks) never
    serves the table's base files: the airtight tier fails closed."""
    g = gov
    prefix = urllib.parse.urlparse(lake.data_path).path.lstrip("/")
    con = lake.duckdb(lake.mint(f"{lake.bucket}:{prefix}:rw", principal="gov-writer"))
    con.execute(f"CREATE OR REPLACE TABLE l.{NS}.posture (id BIGINT, email VARCHAR, score INTEGER)")
    con.execute(f"INSERT INTO l.{NS}.posture VALUES (1, 'alice@example.com', 10), (2, 'bob@personal.io', 20)")
    con.execute(f"CREATE OR REPLACE TABLE l.{NS}.runtime (id BIGINT, email VARCHAR)")
    con.execute(f"INSERT INTO l.{NS}.runtime VALUES (1, 'alice@example.com'), (2, 'bob@personal.io')")
    con.execute(f"CREATE OR REPLACE TABLE l.{NS}.posture_plain (id BIGINT)")
    con.execute("CALL ducklake_flush_inlined_data('l')")
    g.author("masking-policies", {"name": "posture_email", "signature": "(val VARCHAR)", "body": "left(val, 2) || '***'"})
    g.author("policy-attachments", {"policy-kind": "masking", "policy-name": "posture_email", "target-kind": "column",
                                    "schema": NS, "object": "posture", "column": "email"})
    g.author("masking-policies", {"name": "posture_score", "signature": "(val INTEGER)", "body": "0"})
    g.author("policy-attachments", {"policy-kind": "masking", "policy-name": "posture_score", "target-kind": "column",
                                    "schema": NS, "object": "posture", "column": "score"})
    st, lb = g.load("bob", "posture")
    assert st == 200 and "duckicelake.mask.score" in lb["metadata"]["properties"], lb

    # DuckDB widens the column: the INTEGER mask no longer fits it.
    con.execute(f"ALTER TABLE l.{NS}.posture ALTER score TYPE BIGINT")
    st, plan = g.gov("GET", f"effective-policies?table={NS}.posture&principal=bob")
    assert st == 200 and any("posture_score" in i for i in plan["plan"].get("issues", [])), plan

    # Fail open (the default): the email mask still stamped, score not.
    since = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() - 5))
    st, lb = g.load("bob", "posture")
    assert st == 200, lb
    props = lb["metadata"]["properties"]
    assert "duckicelake.mask.email" in props and "duckicelake.mask.score" not in props, props
    # ... and said so on the record.
    deadline = time.time() + 10
    while True:
        st, page = g.gov("GET", f"audit?principal=bob&table={NS}.posture&since={since}&limit=100")
        assert st == 200, page
        open_rec = [r for r in page["records"] if r["action"] == "LoadTable" and r["status"] == 200
                    and "posture_score" in r.get("policy-ids", [])]
        if open_rec or time.time() > deadline:
            break
        time.sleep(0.2)
    assert open_rec and "fail open" in open_rec[0]["reason"] and open_rec[0]["decision"] == "allow", page["records"][:3]
    assert "alice@example.com" not in json.dumps(open_rec), "the record leaks a value"

    # Fail closed: a serve with governance.fail_closed = true refuses it.
    closed = lake.start_serve({"DUCKICELAKE_OAUTH_CLIENTS": f"bob:{SECRETS['bob']}|ns:{NS}:r",
                               "DUCKICELAKE_GOVERNANCE_FAIL_CLOSED": "true",
                               "DUCKICELAKE_DUCKDB_EXTENSION_DIRECTORY": duckdb_ext.extension_directory()})
    try:
        bob_closed = GovSession(lake, closed, {"bob": SECRETS["bob"]})
        for vend in ({}, {"X-Iceberg-Access-Delegation": "vended-credentials"}):
            st, out = bob_closed.call("bob", "GET", f"/v1/lake/namespaces/{NS}/tables/posture", headers=vend)
            assert st == 503 and out["error"]["type"] == "ServiceUnavailableException", (vend, st, out)
            assert "cannot be applied" in out["error"]["message"] and "alice" not in out["error"]["message"]
        # An ungoverned table on the same serve is served as ever.
        st, _ = bob_closed.call("bob", "GET", f"/v1/lake/namespaces/{NS}/tables/posture_plain")
        assert st == 200
    finally:
        closed.stop()

    # A file-layer mask whose body the data breaks at run time.
    g.author("masking-policies", {"name": "runtime_email", "signature": "(val VARCHAR)",
                                  "body": "CAST(CAST(val AS INTEGER) AS VARCHAR)", "file-layer-masking": True})
    g.author("policy-attachments", {"policy-kind": "masking", "policy-name": "runtime_email", "target-kind": "column",
                                    "schema": NS, "object": "runtime", "column": "email"})
    st, plan = g.gov("GET", f"effective-policies?table={NS}.runtime&principal=bob")
    assert st == 200 and plan["plan"]["tier"] == "airtight", plan
    # The masked copy cannot be built: bob's LoadTable is refused, with
    # vended credentials or without, and says so without a value.
    for vend in (False, True):
        st, out = g.load("bob", "runtime", vend=vend)
        assert st == 503 and out["error"]["type"] == "ServiceUnavailableException", (vend, st, out)
        assert "masked copy" in out["error"]["message"] and "@" not in json.dumps(out), out
    # ... and the base files stay closed at the gateway, whatever the
    # credential's scope.
    files = [r[0] for r in con.execute(f"SELECT data_file FROM ducklake_list_files('l', 'runtime', schema => '{NS}')").fetchall()]
    assert files, "runtime has no data files"
    loc = urllib.parse.urlparse(files[0])
    wide = lake.mint(f"{lake.bucket}:{prefix}{NS}/:r", principal="bob")
    s3w = g.s3({"s3.access-key-id": wide.key, "s3.secret-access-key": wide.secret, "s3.session-token": wide.token})
    with pytest.raises(botocore.exceptions.ClientError) as e:
        s3w.get_object(Bucket=loc.netloc, Key=loc.path.lstrip("/"))
    assert e.value.response["Error"]["Code"] == "AccessDenied"
    con.close()


def test_governance_routes_list_get_delete(gov: Gov):
    """Every governance object over REST, as a console or a script uses
    them: POST, then the listing and the GET by name show it with the
    seeds' field names; DELETE by name (tags, policies, roles) or by the
    body that made it (associations) is 204 and the object is gone; what
    is still referenced is 409 and stays."""
    g = gov
    make_table(g, "rest_people", "id BIGINT, email VARCHAR, region VARCHAR", "(1, 'a@example.com', 'EU'), (2, 'b@example.com', 'US')")
    tag = {"namespace": "rest", "name": "contact"}
    otag = {"object-kind": "column", "schema": NS, "object": "rest_people", "column": "email", "tag-namespace": "rest", "tag-name": "contact"}
    mask = {"name": "rest_mask", "signature": "(val VARCHAR)", "body": "'***'", "unmasked-roles": ["rest_role"], "file-layer-masking": False}
    rap = {"name": "rest_rows", "body": "region = 'EU'", "unmasked-roles": ["rest_role"]}
    att_mask = {"policy-kind": "masking", "policy-name": "rest_mask", "target-kind": "tag", "tag-namespace": "rest", "tag-name": "contact"}
    att_rows = {"policy-kind": "row-access", "policy-name": "rest_rows", "target-kind": "table", "schema": NS, "object": "rest_people"}
    role = {"name": "rest_role"}
    rgrant = {"role": "rest_role", "principal": "alice"}
    ogrant = {"object-kind": "table", "schema": NS, "object": "rest_people", "privilege": "select", "role": "rest_role"}
    authored = (("tags", tag), ("object-tags", otag), ("masking-policies", mask), ("row-access-policies", rap),
                ("policy-attachments", att_mask), ("policy-attachments", att_rows), ("roles", role),
                ("role-grants", rgrant), ("object-grants", ogrant))
    for what, body in authored:
        st, out = g.gov("POST", what, body)
        assert st == 200, (what, out)

    def listed(what: str) -> list:
        st, out = g.gov("GET", what)
        assert st == 200 and list(out) == [what], (what, out)
        return out[what]

    def has(items: list, body: dict) -> bool:
        return any(all(it.get(k) == v for k, v in body.items()) for it in items)

    for what, body in authored:
        assert has(listed(what), body), (what, body, listed(what))
    for path, body in (("tags/rest/contact", tag), ("masking-policies/rest_mask", mask),
                       ("row-access-policies/rest_rows", rap), ("roles/rest_role", role)):
        st, out = g.gov("GET", path)
        assert st == 200 and all(out.get(k) == v for k, v in body.items()), (path, out)
    st, out = g.gov("GET", "row-access-policies/rest_rows")
    assert out.get("columns") == ["region"], out  # derived from the body
    st, _ = g.gov("GET", "masking-policies/no_such_policy")
    assert st == 404
    st, out = g.gov("GET", "role-grants?principal=alice")
    assert st == 200 and has(out["role-grants"], rgrant) and all(x["principal"] == "alice" for x in out["role-grants"])

    # Referenced objects cannot go: 409, and they stay.
    for path in ("tags/rest/contact", "masking-policies/rest_mask", "row-access-policies/rest_rows", "roles/rest_role"):
        st, out = g.gov("DELETE", path)
        assert st == 409 and out["error"]["type"], (path, st, out)
    assert has(listed("tags"), tag) and has(listed("row-access-policies"), rap)
    # A second mask reaching the tagged column (directly) is 409; an
    # attachment the resolver would ignore is 400; neither leaves a row.
    g.gov("POST", "masking-policies", {"name": "rest_mask2", "signature": "(val VARCHAR)", "body": "'x'"})
    st, out = g.gov("POST", "policy-attachments", {"policy-kind": "masking", "policy-name": "rest_mask2", "target-kind": "column",
                                                  "schema": NS, "object": "rest_people", "column": "email"})
    assert st == 409 and "one mask per column" in out["error"]["message"], out
    for bad in ({"policy-kind": "masking", "policy-name": "rest_mask2", "target-kind": "table", "schema": NS, "object": "rest_people"},
                {"policy-kind": "row-access", "policy-name": "rest_rows", "target-kind": "column", "schema": NS, "object": "rest_people", "column": "id"}):
        st, out = g.gov("POST", "policy-attachments", bad)
        assert st == 400, (bad, out)
    assert not has(listed("policy-attachments"), {"policy-name": "rest_mask2"})
    # Detaching what is not attached is 404.
    st, _ = g.gov("DELETE", "policy-attachments", {**att_rows, "object": "orders"})
    assert st == 404

    # Associations go by the body that made them, then what they held.
    for what, body in (("policy-attachments", att_mask), ("policy-attachments", att_rows), ("object-tags", otag),
                       ("role-grants", rgrant), ("object-grants", ogrant)):
        st, out = g.gov("DELETE", what, body)
        assert st == 204, (what, st, out)
        assert not has(listed(what), body), (what, listed(what))
    for path, what, body in (("tags/rest/contact", "tags", tag), ("masking-policies/rest_mask", "masking-policies", mask),
                             ("masking-policies/rest_mask2", "masking-policies", {"name": "rest_mask2"}),
                             ("row-access-policies/rest_rows", "row-access-policies", rap), ("roles/rest_role", "roles", role)):
        st, out = g.gov("DELETE", path)
        assert st == 204, (path, st, out)
        assert not has(listed(what), {"name": body["name"]}), (path, listed(what))
        st, _ = g.gov("GET", path)
        assert st == 404
    # Nothing is left governing the table.
    st, plan = g.gov("GET", f"effective-policies?table={NS}.rest_people&principal=bob")
    assert st == 200 and plan["plan"]["tier"] == "none" and plan["plan"]["masked-columns"] == [] and not plan["plan"].get("row-filter"), plan


def test_governance_read_scope(gov: Gov):
    """governance:read reads every object, the audit and anyone's effective
    policies, and authors nothing; without it nothing is read."""
    g = gov
    g.author("roles", {"name": "scope_role"})
    for path in ("tags", "masking-policies", "row-access-policies", "roles", "object-tags", "policy-attachments",
                 "role-grants", "object-grants", "roles/scope_role", f"effective-policies?table={NS}.customers&principal=alice"):
        st, out = g.gov("GET", path, who="rita")
        assert st == 200, (path, st, out)
        st, out = g.gov("GET", path, who="bob")
        if path.startswith("effective-policies"):
            assert st == 403, (path, st, out)  # bob may ask about himself only
        else:
            assert st == 403 and out["error"]["type"] == "ForbiddenException", (path, st, out)
    for what, body in (("tags", {"namespace": "x", "name": "y"}), ("roles", {"name": "rita_role"}),
                       ("role-grants", {"role": "scope_role", "principal": "rita"})):
        st, out = g.gov("POST", what, body, who="rita")
        assert st == 403, (what, st, out)
    st, _ = g.gov("DELETE", "roles/scope_role", who="rita")
    assert st == 403
    st, out = g.gov("GET", "roles/scope_role")
    assert st == 200, out
    st, out = g.gov("GET", "role-grants?principal=rita")
    assert st == 200 and out["role-grants"] == [], out


def test_row_filter_at_loadtable(gov: Gov):
    """A row-access policy reaches the caller's LoadTable as the stamped
    iceberg.row-filter and as the proposal's required-row-filter (an
    Iceberg expression), is in effective-policies' plan, and does not reach
    a principal with an unmasked role."""
    g = gov
    make_table(g, "rf_accounts", "id BIGINT, region VARCHAR, mrr INTEGER", "(1, 'EU', 10), (2, 'US', 20), (3, 'EU', 30)")
    g.author("roles", {"name": "rf_global"})
    g.author("role-grants", {"role": "rf_global", "principal": "alice"})
    g.author("row-access-policies", {"name": "rf_eu", "body": "region = 'EU'", "unmasked-roles": ["rf_global"]})
    g.author("policy-attachments", {"policy-kind": "row-access", "policy-name": "rf_eu", "target-kind": "table",
                                    "schema": NS, "object": "rf_accounts"})
    st, plan = g.gov("GET", f"effective-policies?table={NS}.rf_accounts&principal=bob")
    assert st == 200 and plan["plan"]["row-policies"] == ["rf_eu"] and "region" in plan["plan"]["row-filter"], plan
    assert "WHERE" in plan["plan"]["view-sql"] and plan["plan"]["tier"] == "cooperative", plan
    st, lb = g.load("bob", "rf_accounts")
    assert st == 200, lb
    props = lb["metadata"]["properties"]
    assert "region" in props.get("iceberg.row-filter", "") and "'EU'" in props["iceberg.row-filter"], props
    rf = lb["read-restrictions"]["required-row-filter"]
    assert rf == {"type": "eq", "term": "region", "value": "EU"}, rf
    # alice's role bypasses the policy: nothing stamped, no restriction.
    st, la = g.load("alice", "rf_accounts")
    assert st == 200 and "iceberg.row-filter" not in la["metadata"].get("properties", {}) and "read-restrictions" not in la, la
    # Cached answers are per plan: ann's plan is bob's (the same answer),
    # alice's is not, however their loads interleave.
    for who, want in (("ann", lb), ("alice", la), ("bob", lb), ("alice", la), ("ann", lb)):
        st, got = g.load(who, "rf_accounts")
        assert st == 200 and got == want, who
    assert la != lb
    st, plan = g.gov("GET", f"effective-policies?table={NS}.rf_accounts", who="alice")
    assert st == 200 and plan["derived"]["row-access-policies"][0]["bypassed"] and not plan["plan"].get("row-filter"), plan


def test_rename_and_drop_by_the_catalog(gov: Gov):
    """Governance follows DuckLake's ids through the catalog's own REST
    rename (the mask moves with the table) and its drop (the rows go; a
    table created again under the name is ungoverned)."""
    g = gov
    make_table(g, "rn_people", "id BIGINT, email VARCHAR", "(1, 'a@example.com')")
    g.author("masking-policies", {"name": "rn_mask", "signature": "(val VARCHAR)", "body": "'***'"})
    att = {"policy-kind": "masking", "policy-name": "rn_mask", "target-kind": "column", "schema": NS, "object": "rn_people", "column": "email"}
    g.author("policy-attachments", att)
    st, out = g.call("wes", "POST", "/v1/lake/tables/rename", {"source": {"namespace": [NS], "name": "rn_people"},
                                                               "destination": {"namespace": [NS], "name": "rn_people2"}})
    assert st == 204, (st, out)
    st, plan = g.gov("GET", f"effective-policies?table={NS}.rn_people2&principal=bob")
    assert st == 200 and [m["column"] for m in plan["plan"]["masked-columns"]] == ["email"], plan
    st, lb = g.load("bob", "rn_people2")
    assert st == 200 and "duckicelake.mask.email" in lb["metadata"]["properties"], lb
    st, out = g.gov("GET", "policy-attachments")
    assert any(a["policy-name"] == "rn_mask" and a.get("object") == "rn_people2" for a in out["policy-attachments"]), out

    st, out = g.call("wes", "DELETE", f"/v1/lake/namespaces/{NS}/tables/rn_people2")
    assert st == 204, (st, out)
    st, out = g.gov("GET", "policy-attachments")
    assert not any(a["policy-name"] == "rn_mask" for a in out["policy-attachments"]), out
    make_table(g, "rn_people2", "id BIGINT, email VARCHAR", "(2, 'b@example.com')")
    st, plan = g.gov("GET", f"effective-policies?table={NS}.rn_people2&principal=bob")
    assert st == 200 and plan["plan"]["masked-columns"] == [] and plan["plan"]["tier"] == "none", plan
    # The attachment is gone with the table; the policy itself is free to go.
    g.authored.remove(("policy-attachments", att))


def test_allowlist_in_signing_and_bucket_wide(gov: Gov):
    """An allowlisted table's files are refused to an ungranted principal
    by the remote signer (answered as for a missing table) and at the
    gateway even with a credential for the whole bucket."""
    g = gov
    make_table(g, "al_secret", "id BIGINT, v VARCHAR", "(1, 'x')")
    g.author("roles", {"name": "al_readers"})
    g.author("role-grants", {"role": "al_readers", "principal": "ann"})
    g.author("object-grants", {"object-kind": "table", "schema": NS, "object": "al_secret", "privilege": "select", "role": "al_readers"})
    st, la = g.load("ann", "al_secret", vend=True)
    assert st == 200, la
    creds = la["storage-credentials"][0]["config"]
    prefix = urllib.parse.urlparse(g.lake.data_path).path.lstrip("/")
    keys = [o["Key"] for o in g.s3(creds).list_objects_v2(Bucket=g.lake.bucket, Prefix=f"{prefix}{NS}/al_secret/").get("Contents", [])]
    pq = [k for k in keys if k.endswith(".parquet")][0]
    sign = {"region": "us-east-1", "method": "GET", "headers": {}, "uri": f"{g.serve.gateway}/{g.lake.bucket}/{pq}"}
    st, out = g.call("ann", "POST", f"/v1/lake/namespaces/{NS}/tables/al_secret/sign", sign)
    assert st == 200 and out["uri"], out
    st_hidden, hidden = g.call("bob", "POST", f"/v1/lake/namespaces/{NS}/tables/al_secret/sign", sign)
    st_missing, missing = g.call("bob", "POST", f"/v1/lake/namespaces/{NS}/tables/no_such_table/sign",
                                 {**sign, "uri": sign["uri"].replace("al_secret", "no_such_table")})
    assert st_hidden == st_missing == 404, (st_hidden, hidden, st_missing, missing)
    assert hidden["error"]["type"] == missing["error"]["type"]
    # bob's own table's sign route cannot be pointed at al_secret's file.
    st, out = g.call("bob", "POST", f"/v1/lake/namespaces/{NS}/tables/customers/sign", sign)
    assert st == 403, (st, out)
    # The whole bucket, read-only or read-write: no byte of al_secret.
    for access in ("r", "rw"):
        w = g.lake.mint(f"{g.lake.bucket}::{access}", principal="bob")
        s3 = g.s3({"s3.access-key-id": w.key, "s3.secret-access-key": w.secret, "s3.session-token": w.token})
        for call in (lambda: s3.get_object(Bucket=g.lake.bucket, Key=pq),
                     lambda: s3.head_object(Bucket=g.lake.bucket, Key=pq),
                     lambda: s3.list_objects_v2(Bucket=g.lake.bucket, Prefix=f"{prefix}{NS}/al_secret/"),
                     lambda: s3.copy_object(Bucket=g.lake.bucket, Key=f"{prefix}bob-copy.parquet",
                                            CopySource={"Bucket": g.lake.bucket, "Key": pq}),
                     lambda: s3.delete_object(Bucket=g.lake.bucket, Key=pq)):
            with pytest.raises(botocore.exceptions.ClientError) as e:
                call()
            assert e.value.response["Error"]["Code"] in ("AccessDenied", "403"), (access, e.value.response)
    # ... and ann still reads it (nothing was deleted).
    assert g.s3(creds).get_object(Bucket=g.lake.bucket, Key=pq)["Body"].read()[:4] == b"PAR1"
