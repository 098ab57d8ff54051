"""Agents end to end (issue 13), through a `duckicelake serve` of the stack's
fleet and the real Python MCP client (the `mcp` package) over streamable
HTTP (/mcp on the admin listener) and over stdio (`duckicelake mcp`):

- the agent reads masked values where alice over REST reads cleartext;
- a broker-delegated agent session for alice is masked on an actor:human
  policy, while alice herself (a human) reads it clear;
- the executor refuses COPY, ATTACH, read_csv('/etc/passwd'), SET, two
  statements, and cuts a huge query off at its limits;
- no DSN, key or token in any tool output; every call in the audit trail;
- broker delegation is honoured only for a broker token, and agent
  sessions are read-only on the catalog and the gateway.

Tables live in namespace gov_agents.
"""

from __future__ import annotations

import asyncio
import json
import os
import secrets
import tempfile
import time
import urllib.parse

import boto3
import botocore.config
import botocore.exceptions
import pytest

import duckdb_ext
from lakestack import GovSession, Lake

import httpx2
from mcp import ClientSession, StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client

NS = "gov_agents"
SECRETS = {who: secrets.token_hex(12) for who in ("admin", "alice", "bob", "bot", "gw")}
CUSTOMERS = [
    (1, "alice@example.com", "EU", 2400),
    (2, "bob@personal.io", "US", 1800),
    (3, "carol@work.net", "EU", 900),
]


@pytest.fixture(scope="module")
def ag(lake: Lake):
    clients = ",".join([
        f"admin:{SECRETS['admin']}|*",
        f"alice:{SECRETS['alice']}|ns:{NS}:r",
        f"bob:{SECRETS['bob']}|ns:{NS}:r",
        f"bot:{SECRETS['bot']}|ns:{NS}:r",
        f"gw:{SECRETS['gw']}|broker ns:{NS}:r",
    ])
    s = lake.start_serve({"DUCKICELAKE_OAUTH_CLIENTS": clients,
                          "DUCKICELAKE_DUCKDB_EXTENSION_DIRECTORY": duckdb_ext.extension_directory(),
                          "DUCKICELAKE_MCP_QUERY_TIMEOUT": "5s"})
    prefix = urllib.parse.urlparse(lake.data_path).path.lstrip("/")
    con = lake.duckdb(lake.mint(f"{lake.bucket}:{prefix}:rw", principal="agents-writer"))
    con.execute(f"CREATE SCHEMA IF NOT EXISTS l.{NS}")
    con.execute(f"CREATE OR REPLACE TABLE l.{NS}.customers (id BIGINT, email VARCHAR, country VARCHAR, mrr INTEGER)")
    con.execute(f"INSERT INTO l.{NS}.customers VALUES " + ",".join(f"({i}, '{e}', '{c}', {m})" for i, e, c, m in CUSTOMERS))
    con.execute("CALL ducklake_flush_inlined_data('l')")
    con.close()
    a = Agents(lake, s)

    def mask(column: str, tag: str, policy: str, body: str, unmasked: str):
        """Tags customers.column pii_ag.tag; policy masks what has the tag."""
        a.author("tags", {"namespace": "pii_ag", "name": tag})
        a.author("object-tags", {"object-kind": "column", "schema": NS, "object": "customers", "column": column,
                                 "tag-namespace": "pii_ag", "tag-name": tag})
        a.author("masking-policies", {"name": policy, "signature": "(val VARCHAR)", "body": body,
                                      "unmasked-roles": [unmasked]})
        a.author("policy-attachments", {"policy-kind": "masking", "policy-name": policy, "target-kind": "tag",
                                        "tag-namespace": "pii_ag", "tag-name": tag})

    # The seeds' example: pii.email masked for everyone but pii_reader
    # (alice); and the seeds' actor-aware policy: country masked for every
    # session whose actor is not human.
    mask("email", "email", "ag_mask_email", "left(val, 2) || '***'", "ag_pii_reader")
    mask("country", "host", "ag_mask_host", "'***'", "actor:human")
    a.author("roles", {"name": "ag_pii_reader"})
    a.author("role-grants", {"role": "ag_pii_reader", "principal": "alice"})
    yield a
    a.cleanup()
    s.stop()


class Agents(GovSession):
    def __init__(self, lake: Lake, serve):
        super().__init__(lake, serve, SECRETS)
        self.outputs: list[str] = []  # every tool answer, for the no-secrets check

    # --- MCP ------------------------------------------------------------------

    async def _session(self, session: ClientSession, calls):
        await session.initialize()
        tools = {t.name for t in (await session.list_tools()).tools}
        assert tools == {"list_namespaces", "list_tables", "describe_table", "query"}, tools
        out = []
        for name, args in calls:
            r = await session.call_tool(name, args)
            text = " ".join(getattr(c, "text", "") for c in r.content)
            self.outputs.append(text + json.dumps(r.structured_content))
            out.append((bool(r.is_error), r.structured_content, text))
        return out

    def http(self, who: str, calls):
        async def go():
            async with httpx2.AsyncClient(headers={"Authorization": "Bearer " + self.tokens[who]}, timeout=60) as hc:
                async with streamable_http_client(self.serve.catalog_url + "/mcp", http_client=hc) as (r, w):
                    async with ClientSession(r, w) as s:
                        return await self._session(s, calls)
        return asyncio.run(go())

    def stdio(self, principal: str, calls):
        params = StdioServerParameters(
            command=self.lake.bin,
            args=["mcp", "-catalog", self.serve.catalog_url, "-principal", principal, "-timeout", "5s",
                  "-extension-directory", duckdb_ext.extension_directory()],
            env={"DUCKICELAKE_MCP_CLIENT": f"gw:{SECRETS['gw']}", "PATH": os.environ.get("PATH", "")})

        async def go():
            async with stdio_client(params, errlog=errlog) as (r, w):
                async with ClientSession(r, w) as s:
                    return await self._session(s, calls)
        with tempfile.TemporaryFile("w+") as errlog:
            try:
                return asyncio.run(go())
            finally:
                errlog.seek(0)
                self.stdio_log = errlog.read()


Q = f"SELECT id, email, country FROM {NS}.customers ORDER BY id"


def rows(res) -> list:
    err, sc, text = res
    assert not err, text
    return [tuple(r) for r in sc["rows"]]


def test_agent_masked_where_alice_reads_clear(ag: Agents):
    # alice over REST, a human: her LoadTable is the cooperative tier, not
    # masked for her (pii_reader; actor:human bypasses the host mask).
    status, lt = ag.call("alice", "GET", f"/v1/lake/namespaces/{NS}/tables/customers")
    assert status == 200, lt
    assert not any(k.startswith("duckicelake.mask.") for k in lt["metadata"].get("properties", {})), lt["metadata"].get("properties", {})

    # bot, an agent over streamable HTTP: email and country masked, on the
    # bytes (airtight: agents always are).
    out = ag.http("bot", [("list_namespaces", {}), ("list_tables", {"namespace": NS}),
                          ("describe_table", {"namespace": NS, "table": "customers"}), ("query", {"sql": Q})])
    assert NS in out[0][1]["names"]
    assert "customers" in out[1][1]["names"]
    desc = out[2][1]
    assert desc["masked_columns"] == ["country", "email"], desc
    assert [c["name"] for c in desc["columns"]] == ["id", "email", "country", "mrr"]
    assert rows(out[3]) == [(1, "al***", "***"), (2, "bo***", "***"), (3, "ca***", "***")]


def test_broker_delegated_agent_for_alice(ag: Agents):
    # duckicelake mcp over stdio, as the broker gw, for alice as an agent:
    # pii_reader clears the email, but the actor:human policy masks country.
    out = ag.stdio("alice", [("query", {"sql": Q}), ("describe_table", {"namespace": NS, "table": "customers"})])
    assert not out[0][0], ag.stdio_log[-3000:]
    assert rows(out[0]) == [(1, "alice@example.com", "***"), (2, "bob@personal.io", "***"), (3, "carol@work.net", "***")]
    assert out[1][1]["masked_columns"] == ["country"]


@pytest.mark.parametrize("sql,want", [
    (f"COPY (SELECT * FROM {NS}.customers) TO '/tmp/agents-leak.csv'", "only a SELECT"),
    ("ATTACH '/tmp/x.duckdb' AS x", "only a SELECT"),
    ("SELECT * FROM read_csv('/etc/passwd')", "read_csv"),
    ("SELECT * FROM '/etc/passwd'", "not a table"),
    ("SET enable_external_access = true", "only a SELECT"),
    (f"SELECT 1; SELECT * FROM {NS}.customers", "exactly one SELECT"),
    ("INSTALL httpfs", "only a SELECT"),
    (f"SELECT * FROM iceberg_scan('s3://lake/data/{NS}/customers')", "iceberg_scan"),
    ("SELECT getenv('HOME')", "getenv"),
    (f"SELECT * FROM lake.{NS}.customers", "without a catalog"),
])
def test_executor_refusals(ag: Agents, sql, want):
    (res,) = ag.http("bot", [("query", {"sql": sql})])
    err, _, text = res
    assert err, res
    assert want in text, text
    assert not os.path.exists("/tmp/agents-leak.csv")


def test_executor_limits(ag: Agents):
    big, cross = ag.http("bot", [
        ("query", {"sql": "SELECT * FROM range(100000000)"}),
        ("query", {"sql": f"SELECT count(*) FROM range(100000) a, range(100000) b, range(100000) c, {NS}.customers"}),
    ])
    err, sc, text = big
    assert not err, text
    assert sc["truncated"] and len(sc["rows"]) == 1000, sc["limit"]
    err, _, text = cross
    assert err and "time limit" in text, text


def test_no_secrets_in_outputs_and_audited(ag: Agents):
    ag.http("bot", [("query", {"sql": Q}), ("list_tables", {"namespace": NS})])
    blob = "\n".join(ag.outputs)
    assert blob
    for bad in ["postgres://", "dbname=", "s3.access-key-id", "secret-access-key", "session-token", "DLAK",
                *SECRETS.values(), *ag.tokens.values()]:
        assert bad not in blob, bad
    # Every tool call is in the Postgres audit trail, as an agent session
    # over MCP; the catalog recorded the delegation with both identities.
    # The trail is written in batches: wait for the last call's record.
    deadline = time.monotonic() + 30
    while True:
        status, page = ag.call("admin", "GET", "/v1/lake/governance/audit?principal=bot&limit=500")
        assert status == 200, page
        recs = page["records"]
        actions = {r.get("action") for r in recs}
        if {"mcp.query", "mcp.list_tables"} <= actions or time.monotonic() > deadline:
            break
        time.sleep(0.2)
    for tool in ("mcp.query", "mcp.list_tables", "mcp.list_namespaces", "mcp.describe_table"):
        assert tool in actions, (tool, actions)
    assert all(r.get("actor") == "agent" and r.get("channel") == "mcp" for r in recs if str(r.get("action", "")).startswith("mcp."))
    assert any(r.get("delegator") == "duckicelake-mcp" for r in recs), recs[:5]


def test_delegation_only_for_brokers(ag: Agents):
    path = f"/v1/lake/namespaces/{NS}/tables/customers"
    # bob, no broker, asserts alice: ignored, bob reads his own (masked) plan.
    status, lt = ag.call("bob", "GET", path + "?delegate=1&principal=alice&actor=human&channel=rest")
    assert status == 200
    assert "duckicelake.mask.email" in lt["metadata"].get("properties", {})
    # gw, a broker, asserts alice: alice's plan (email clear, human).
    status, lt = ag.call("gw", "GET", path + "?delegate=1&principal=alice")
    assert status == 200
    assert not any(k.startswith("duckicelake.mask.") for k in lt["metadata"].get("properties", {}))
    # ... and alice as an agent: airtight, country masked.
    status, lt = ag.call("gw", "GET", path + "?delegate=1&principal=alice&actor=agent&channel=mcp",
                         headers={"X-Iceberg-Access-Delegation": "vended-credentials"})
    assert status == 200, lt
    props = lt["metadata"].get("properties", {})
    assert props.get("duckicelake.governance.tier") == "airtight" and "duckicelake.mask.country" in props, props
    # The agent's vended credential writes nothing through the gateway.
    cfg = lt["storage-credentials"][0]["config"]
    s3 = boto3.client("s3", endpoint_url=ag.serve.gateway, region_name="us-east-1",
                      aws_access_key_id=cfg["s3.access-key-id"], aws_secret_access_key=cfg["s3.secret-access-key"],
                      aws_session_token=cfg["s3.session-token"],
                      config=botocore.config.Config(s3={"addressing_style": "path"}, retries={"max_attempts": 1}))
    bucket, key = lt["storage-credentials"][0]["prefix"].removeprefix("s3://").split("/", 1)
    with pytest.raises(botocore.exceptions.ClientError) as e:
        s3.put_object(Bucket=bucket, Key=key + "agent-was-here", Body=b"x")
    assert e.value.response["Error"]["Code"] == "AccessDenied"
    # An agent session commits nothing, whatever the broker's token allows.
    status, out = ag.call("admin", "POST", path + "?delegate=1&principal=alice&actor=agent",
                          {"requirements": [], "updates": []})
    assert status == 403 and "error_agent_readonly" in json.dumps(out), out
    status, out = ag.call("admin", "POST", f"/v1/lake/namespaces?delegate=1&actor=agent", {"namespace": ["agent_ns"]})
    assert status == 403 and "error_agent_readonly" in json.dumps(out), out


def test_demo(ag: Agents):
    """`duckicelake demo` on the running stack, after `duckicelake seed`: bob
    masked, alice clear, the agent masked over MCP, and bob's credential 403
    on the base Parquet, 200 on the masked copy. What it authored is removed
    (test_governance authors the same names)."""
    import subprocess
    env = dict(os.environ, DUCKICELAKE_DEMO_CLIENT=f"admin:{SECRETS['admin']}",
               DUCKICELAKE_DUCKDB_EXTENSION_DIRECTORY=duckdb_ext.extension_directory())
    seed = subprocess.run([ag.lake.bin, "seed", "--config", ag.lake.config], capture_output=True, text=True,
                          timeout=300, env=env)
    assert seed.returncode == 0, seed.stderr
    try:
        out = subprocess.run([ag.lake.bin, "demo", "-catalog", ag.serve.catalog_url,
                              "-extension-directory", duckdb_ext.extension_directory()],
                             capture_output=True, text=True, timeout=300, env=env)
        assert out.returncode == 0, out.stdout + out.stderr
        lines = out.stdout.splitlines()
        line = lambda p: next(ln for ln in lines if ln.startswith(p))  # noqa: E731
        assert "al***" in line("bob") and "alice@example.com" not in line("bob"), out.stdout
        assert "alice@example.com" in line("alice "), out.stdout
        assert "al***" in line("agent") and "@" not in line("agent"), out.stdout
        assert line("bob GET").endswith("(base Parquet) -> 403"), out.stdout
        assert [ln for ln in lines if ln.startswith("bob GET")][1].endswith("(masked copy) -> 200"), out.stdout
    finally:
        for what, body in [
            ("policy-attachments", {"policy-kind": "masking", "policy-name": "mask_email", "target-kind": "tag",
                                    "tag-namespace": "pii", "tag-name": "email"}),
            ("object-tags", {"object-kind": "column", "schema": "analytics", "object": "customers", "column": "email",
                             "tag-namespace": "pii", "tag-name": "email"}),
            ("role-grants", {"role": "pii_reader", "principal": "alice"}),
        ]:
            ag.call("admin", "DELETE", "/v1/lake/governance/" + what, body)
        for path in ("masking-policies/mask_email", "tags/pii/email", "roles/pii_reader"):
            ag.call("admin", "DELETE", "/v1/lake/governance/" + path)
