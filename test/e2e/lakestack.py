"""The running stack, as the end-to-end suite and `scripts/bench.sh raw` see it:
the gateway, the Iceberg REST catalog, the DuckLake catalog in Postgres and
the duckicelake binary, all reached from outside (no in-process servers).

The stack is named by the variables scripts/test.sh exports
(DUCKICELAKE_TEST_CATALOG_URL, …) or, in a shell that sourced a dev stack's
stack.env (`set -a; . .dev/stack.env; set +a` after `make run`), by those
(DUCKICELAKE_CATALOG_URL, …).

Also a command: `python test/e2e/lakestack.py raw [--inserts N] [--out FILE]`
measures read-after-write latency (see measure_raw) and prints it.
"""

from __future__ import annotations

import argparse
import dataclasses
import http.client
import json
import os
import pathlib
import re
import secrets
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse

import psycopg

# test/duckdb_ext.py: DuckDB connections with the pinned extensions, offline.
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent))
import duckdb_ext  # noqa: E402

REPO = pathlib.Path(__file__).resolve().parent.parent.parent

# Each setting: the make-test variable, then the stack.env one.
_VARS = {
    "catalog_url": ("DUCKICELAKE_TEST_CATALOG_URL", "DUCKICELAKE_CATALOG_URL"),
    "credential": ("DUCKICELAKE_TEST_CATALOG_CREDENTIAL", "DUCKICELAKE_CATALOG_CREDENTIAL"),
    "dsn": ("DUCKICELAKE_TEST_CATALOG_DSN", "DUCKICELAKE_PG_DSN_KV"),
    "data_path": ("DUCKICELAKE_TEST_DATA_PATH", "DUCKICELAKE_DATA_PATH"),
    "gateway": ("DUCKICELAKE_TEST_GATEWAY", "DUCKICELAKE_GATEWAY_URL"),
    "config": ("DUCKICELAKE_TEST_CONFIG", "DUCKICELAKE_CONFIG"),
}


class Missing(Exception):
    """The stack is not (fully) there."""


@dataclasses.dataclass
class Creds:
    key: str
    secret: str
    token: str
    vend_id: str = ""
    expiry: str = ""


@dataclasses.dataclass
class Lake:
    catalog_url: str  # http://127.0.0.1:8181, without /v1
    credential: str  # OAuth2 client "id:secret"
    dsn: str  # libpq key=value DSN of the DuckLake catalog
    data_path: str  # s3://lake/data/
    gateway: str  # http://127.0.0.1:9000
    config: str  # the duckicelake.toml the stack runs with
    bin: str
    region: str = "us-east-1"
    warehouse: str = "lake"

    @classmethod
    def from_env(cls) -> "Lake":
        vals, missing = {}, []
        for field, names in _VARS.items():
            v = next((os.environ[n] for n in names if os.environ.get(n)), "")
            if not v:
                missing.append(names[0])
            vals[field] = v
        if missing:
            raise Missing(f"no running stack with a catalog: {', '.join(missing)} unset (make test starts one)")
        binary = os.environ.get("DUCKICELAKE_BIN") or str(REPO / "bin" / "duckicelake")
        region = os.environ.get("DUCKICELAKE_TEST_S3_REGION") or os.environ.get("DUCKICELAKE_S3_REGION") or "us-east-1"
        return cls(bin=binary, region=region, **vals)

    @property
    def bucket(self) -> str:
        return urllib.parse.urlparse(self.data_path).netloc

    # --- credentials -------------------------------------------------------

    def mint(self, grant: str, principal: str = "e2e", ttl: str = "1h") -> Creds:
        """A gateway credential from `duckicelake creds mint` (the CLI)."""
        out = subprocess.run(
            [self.bin, "creds", "mint", "--config", self.config, "--principal", principal,
             "--grant", grant, "--ttl", ttl, "--format", "json"],
            check=True, capture_output=True, text=True,
        ).stdout
        d = json.loads(out)
        return Creds(d["AccessKeyId"], d["SecretAccessKey"], d["SessionToken"], d["VendId"], d["Expiration"])

    def revoke(self, vend_id: str, expires_at: str) -> None:
        """Revoke a credential fleet-wide: the statement catalog/revoke's
        Store.Revoke runs (insert the vend id, NOTIFY every process)."""
        with psycopg.connect(self.dsn, autocommit=True) as pg:
            pg.execute(
                """WITH r AS (
                    INSERT INTO duckicelake_revocation AS t (vend_id, expires_at) VALUES (%s, %s)
                    ON CONFLICT (vend_id) DO UPDATE SET expires_at = greatest(t.expires_at, excluded.expires_at)
                    RETURNING vend_id, ceil(extract(epoch FROM expires_at))::bigint AS exp)
                SELECT pg_notify('duckicelake_revocation', vend_id || ' ' || exp) FROM r""",
                (vend_id, expires_at),
            )

    # --- DuckDB ------------------------------------------------------------

    def duckdb(self, creds: Creds, alias: str = "l"):
        """DuckDB 1.5 with the DuckLake catalog attached as `alias`, its
        Parquet files going through the gateway with creds."""
        con = duckdb_ext.connect(load=("httpfs", "ducklake", "postgres"))
        con.execute("SET TimeZone = 'UTC'")
        u = urllib.parse.urlparse(self.gateway)
        con.execute(
            "CREATE SECRET gw (TYPE S3, KEY_ID ?, SECRET ?, SESSION_TOKEN ?, ENDPOINT ?, URL_STYLE 'path', USE_SSL ?, REGION ?)",
            [creds.key, creds.secret, creds.token, u.netloc, u.scheme == "https", self.region],
        )
        dsn = self.dsn.replace("'", "''")
        con.execute(f"ATTACH 'ducklake:postgres:{dsn}' AS {alias} (DATA_PATH '{self.data_path}')")
        return con

    def max_snapshot(self, pg) -> int:
        return pg.execute("SELECT max(snapshot_id) FROM ducklake_snapshot").fetchone()[0]

    # --- the Iceberg REST catalog -------------------------------------------

    def pyiceberg(self, catalog_url: str | None = None):
        """PyIceberg's RestCatalog with the OAuth2 client, asking for vended credentials."""
        from pyiceberg.catalog.rest import RestCatalog

        uri = catalog_url or self.catalog_url
        return RestCatalog(
            "lake",
            uri=uri,
            credential=self.credential,
            warehouse=self.warehouse,
            **{"oauth2-server-uri": uri + "/v1/oauth/tokens", "header.X-Iceberg-Access-Delegation": "vended-credentials"},
        )

    def token(self, catalog_url: str | None = None) -> str:
        cid, secret = self.credential.split(":", 1)
        c = RestClient(catalog_url or self.catalog_url)
        status, body = c.request(
            "POST", "/v1/oauth/tokens",
            urllib.parse.urlencode({"grant_type": "client_credentials", "client_id": cid,
                                    "client_secret": secret, "scope": "catalog"}),
            {"Content-Type": "application/x-www-form-urlencoded"},
        )
        if status != 200:
            raise RuntimeError(f"token: {status} {body[:200]!r}")
        return json.loads(body)["access_token"]

    # --- another serve process ---------------------------------------------

    def start_serve(self, env: dict[str, str] | None = None) -> "Serve":
        """Start one more `duckicelake serve` on the stack's config, on free
        ports: a second process of the fleet, sharing Postgres and the backend."""
        return Serve(self, env or {})


def client_token(catalog_url: str, client_id: str, secret: str) -> str:
    """An access token of OAuth client client_id (client-credentials grant)."""
    status, body = RestClient(catalog_url).request(
        "POST", "/v1/oauth/tokens",
        urllib.parse.urlencode({"grant_type": "client_credentials", "client_id": client_id, "client_secret": secret}),
        {"Content-Type": "application/x-www-form-urlencoded"})
    if status != 200:
        raise RuntimeError(f"token for {client_id}: {status} {body[:200]!r}")
    return json.loads(body)["access_token"]


def fresh(con, sql: str, key=repr) -> list[tuple]:
    """The rows of sql, read in a transaction of their own (DuckDB's
    ducklake sees a new snapshot only in a new transaction), sorted by key
    (repr by default, so rows with NULLs sort too)."""
    con.execute("BEGIN")
    try:
        return sorted(con.execute(sql).fetchall(), key=key)
    finally:
        con.execute("COMMIT")


def insert_present(con, table: str, values: dict) -> None:
    """Inserts one row into table: the values (column name: value) of the
    columns it has now, which a schema change may have added, renamed or
    dropped."""
    cols = [r[0] for r in fresh(con, f"SELECT column_name FROM (DESCRIBE {table})")]
    con.execute(f"INSERT INTO {table} ({', '.join(cols)}) VALUES ({', '.join('?' for _ in cols)})",
                [values[c] for c in cols])


_CURRENT = re.compile(rb'"current-snapshot-id"\s*:\s*(-?\d+)')


class RestClient:
    """One keep-alive HTTP connection to a catalog."""

    def __init__(self, base: str, token: str | None = None):
        u = urllib.parse.urlparse(base)
        self.host, self.port = u.hostname, u.port or 80
        self.token = token
        self.conn = http.client.HTTPConnection(self.host, self.port, timeout=30)

    def request(self, method: str, path: str, body=None, headers=None) -> tuple[int, bytes]:
        h = dict(headers or {})
        if self.token:
            h["Authorization"] = "Bearer " + self.token
        for attempt in (0, 1):
            try:
                self.conn.request(method, path, body=body, headers=h)
                r = self.conn.getresponse()
                return r.status, r.read()
            except (http.client.HTTPException, ConnectionError):
                self.conn.close()
                self.conn = http.client.HTTPConnection(self.host, self.port, timeout=30)
                if attempt:
                    raise
        raise AssertionError("unreachable")

    def current_snapshot(self, warehouse: str, ns: str, table: str) -> int | None:
        status, body = self.request("GET", f"/v1/{warehouse}/namespaces/{ns}/tables/{table}")
        if status != 200:
            raise RuntimeError(f"LoadTable {ns}.{table}: {status} {body[:300]!r}")
        m = _CURRENT.search(body)
        return int(m.group(1)) if m else None


class Serve:
    """A `duckicelake serve` process started for a test, stopped by stop()."""

    def __init__(self, lake: Lake, env: dict[str, str]):
        self.log = tempfile.NamedTemporaryFile("w+b", prefix="duckicelake-serve-", suffix=".log", delete=False)
        penv = dict(os.environ, **env)
        self.proc = subprocess.Popen(
            # Info level: the "duckicelake serving" line names the bound ports.
            [lake.bin, "serve", "--config", lake.config, "-gateway.listen", "127.0.0.1:0", "-catalog.listen", "127.0.0.1:0",
             "-log.level", "info"],
            stdout=self.log, stderr=subprocess.STDOUT, env=penv,
        )
        deadline = time.monotonic() + 30
        while True:
            for line in pathlib.Path(self.log.name).read_bytes().splitlines():
                if b'"duckicelake serving"' in line:
                    d = json.loads(line)
                    self.gateway = "http://" + d["gateway"]
                    self.catalog_url = "http://" + d["admin"]
                    return
            if self.proc.poll() is not None or time.monotonic() > deadline:
                out = pathlib.Path(self.log.name).read_text(errors="replace")
                self.stop()
                raise RuntimeError(f"duckicelake serve did not start:\n{out[-3000:]}")
            time.sleep(0.05)

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.log.close()
        os.unlink(self.log.name)


class GovSession:
    """A serve process's OAuth clients (who: secret) as callers of its REST
    API, and the governance objects authored as admin, which cleanup
    removes again (associations first: they block deleting what they
    reference)."""

    _CLEANUP_ORDER = {"policy-attachments": 0, "object-tags": 1, "role-grants": 2, "object-grants": 3,
                      "masking-policies": 4, "row-access-policies": 5, "tags": 6, "roles": 7}
    _ASSOCIATIONS = ("policy-attachments", "object-tags", "role-grants", "object-grants")

    def __init__(self, lake: Lake, serve: Serve, secrets: dict[str, str]):
        self.lake, self.serve, self.secrets = lake, serve, secrets
        self.tokens = {who: client_token(serve.catalog_url, who, secret) for who, secret in secrets.items()}
        self.clients = {who: RestClient(serve.catalog_url, tok) for who, tok in self.tokens.items()}
        self.authored: list[tuple[str, dict]] = []

    def token(self, who: str) -> str:
        """A fresh OAuth token of who's client."""
        return client_token(self.serve.catalog_url, who, self.secrets[who])

    def call(self, who: str, method: str, path: str, body=None, headers=None):
        """(status, the JSON answer, or the raw one if it is not JSON)."""
        data = json.dumps(body) if body is not None else None
        h = {"Content-Type": "application/json", **(headers or {})}
        status, out = self.clients[who].request(method, path, data, h)
        try:
            return status, json.loads(out) if out else None
        except json.JSONDecodeError:
            return status, out

    def gov(self, method: str, what: str, body=None, who: str = "admin"):
        return self.call(who, method, "/v1/lake/governance/" + what, body)

    def author(self, what: str, body: dict):
        status, out = self.gov("POST", what, body)
        assert status == 200, (what, body, out)
        self.authored.append((what, body))

    def cleanup(self):
        for what, body in sorted(reversed(self.authored), key=lambda x: self._CLEANUP_ORDER[x[0]]):
            if what in self._ASSOCIATIONS:
                self.gov("DELETE", what, body)
            elif what == "tags":
                self.gov("DELETE", f"tags/{body['namespace']}/{body['name']}")
            else:
                self.gov("DELETE", f"{what}/{body['name']}")


def percentile(xs: list[float], p: float) -> float:
    """Nearest-rank percentile."""
    s = sorted(xs)
    k = max(0, min(len(s) - 1, int(round(p / 100 * len(s) + 0.5)) - 1))
    return s[k]


def summary(ms: list[float]) -> dict:
    return {
        "n": len(ms),
        "p50_ms": round(statistics.median(ms), 1),
        "p90_ms": round(percentile(ms, 90), 1),
        "p99_ms": round(percentile(ms, 99), 1),
        "max_ms": round(max(ms), 1),
        "mean_ms": round(statistics.fmean(ms), 1),
    }


def measure_raw(lake: Lake, targets: dict[str, str], inserts: int = 50, rows: int = 1,
                timeout: float = 30.0) -> dict:
    """Read-after-write: DuckDB commits `inserts` INSERTs (of `rows` rows each)
    into a fresh DuckLake table; after each commit, every catalog in `targets`
    (name → catalog URL) is polled with LoadTable until its current-snapshot-id
    is DuckLake's newest snapshot. The latency is from the commit's return
    to the first LoadTable answer showing it, measured for all targets at once
    from the same instant. A target not showing the snapshot within `timeout`
    is a failure (RuntimeError): LoadTable must always become current.

    Returns {"targets": {name: {"ms": [...], "load_ms": [...], "summary": …}},
    "table": "ns.t", "rows": total}, where load_ms is the duration of the one
    LoadTable request that first showed the snapshot (a materialisation on
    the request path shows there)."""
    ns = "raw_" + secrets.token_hex(4)
    creds = lake.mint(f"{lake.bucket}:{urllib.parse.urlparse(lake.data_path).path.lstrip('/')}:rw", principal="raw")
    con = lake.duckdb(creds)
    con.execute(f"CREATE SCHEMA l.{ns}")
    con.execute(f"CREATE TABLE l.{ns}.t (id BIGINT, label VARCHAR)")
    con.execute(f"INSERT INTO l.{ns}.t VALUES (-1, 'seed')")
    pg = psycopg.connect(lake.dsn, autocommit=True)
    token = lake.token()
    clients = {name: RestClient(url, token) for name, url in targets.items()}
    results = {name: {"ms": [], "load_ms": []} for name in targets}

    def poll(name: str, snap: int, t0: float, errs: list) -> None:
        c = clients[name]
        try:
            while True:
                s = time.perf_counter()
                cur = c.current_snapshot(lake.warehouse, ns, "t")
                e = time.perf_counter()
                if cur == snap:
                    results[name]["ms"].append((e - t0) * 1000)
                    results[name]["load_ms"].append((e - s) * 1000)
                    return
                if e - t0 > timeout:
                    raise RuntimeError(f"{name}: LoadTable still shows snapshot {cur}, not {snap}, after {timeout}s")
                time.sleep(0.002)
        except Exception as ex:  # noqa: BLE001 — reported by the caller
            errs.append(ex)

    # Warm-up: every target has seen the table once (not measured).
    snap = lake.max_snapshot(pg)
    errs: list = []
    for name in targets:
        poll(name, snap, time.perf_counter(), errs)
    if errs:
        raise errs[0]
    for r in results.values():
        r["ms"].clear()
        r["load_ms"].clear()

    for i in range(inserts):
        values = ", ".join(f"({i * rows + j}, 'row {i * rows + j}')" for j in range(rows))
        con.execute(f"INSERT INTO l.{ns}.t VALUES {values}")  # returns once committed
        t0 = time.perf_counter()
        snap = lake.max_snapshot(pg)
        errs = []
        threads = [threading.Thread(target=poll, args=(name, snap, t0, errs)) for name in targets]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        if errs:
            raise errs[0]
    total = con.execute(f"SELECT count(*) FROM l.{ns}.t").fetchone()[0]
    pg.close()
    con.close()
    for r in results.values():
        r["summary"] = summary(r["ms"])
        r["load_summary"] = summary(r["load_ms"])
    return {"table": f"{ns}.t", "rows": total, "inserts": inserts, "rows_per_insert": rows, "targets": results}


def format_raw(res: dict) -> str:
    lines = [f"read-after-write: {res['inserts']} DuckDB INSERTs of {res['rows_per_insert']} row(s) into {res['table']}, "
             "commit → first LoadTable showing the snapshot"]
    for name, r in res["targets"].items():
        s, ls = r["summary"], r["load_summary"]
        lines.append(f"  {name:<12} p50 {s['p50_ms']:7.1f} ms  p90 {s['p90_ms']:7.1f} ms  p99 {s['p99_ms']:7.1f} ms  "
                     f"max {s['max_ms']:7.1f} ms   (that LoadTable request: p50 {ls['p50_ms']:.1f} ms, p99 {ls['p99_ms']:.1f} ms)")
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(prog="lakestack.py")
    sub = ap.add_subparsers(dest="cmd", required=True)
    raw = sub.add_parser("raw", help="read-after-write latency, eager (the stack's process) and lazy (a second serve with catalog.eager=false)")
    raw.add_argument("--inserts", type=int, default=50)
    raw.add_argument("--rows", type=int, default=1, help="rows per INSERT")
    raw.add_argument("--out", help="write the results as JSON here")
    args = ap.parse_args(argv[1:])
    lake = Lake.from_env()
    lazy = lake.start_serve({"DUCKICELAKE_CATALOG_EAGER": "false"})
    try:
        res = measure_raw(lake, {"eager": lake.catalog_url, "lazy": lazy.catalog_url}, args.inserts, args.rows)
    finally:
        lazy.stop()
    res["when"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    print(format_raw(res))
    if args.out:
        pathlib.Path(args.out).write_text(json.dumps(res, indent=2) + "\n")
        print(f"written to {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
