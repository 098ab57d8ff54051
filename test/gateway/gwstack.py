"""Helpers for the Python suites that run against the stack scripts/test.sh starts.

The stack arrives in DUCKICELAKE_TEST_* variables (listed in scripts/test.sh).
Without them a test skips, except under CI=true, where a missing stack fails.
"""

from __future__ import annotations

import dataclasses
import os
import pathlib
import secrets
import subprocess
import sys

import boto3
import botocore.config
import pytest

# test/duckdb_ext.py: DuckDB connections with the pinned extensions, offline.
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent))

CI = os.environ.get("CI") == "true"


def need(*names: str) -> list[str]:
    """The values of env vars `names`; skip (fail under CI=true) when one is unset."""
    missing = [n for n in names if not os.environ.get(n)]
    if missing:
        msg = f"stack not running: {', '.join(missing)} unset (make test starts it)"
        if CI:
            pytest.fail(msg)
        pytest.skip(msg)
    return [os.environ[n] for n in names]


@dataclasses.dataclass
class Creds:
    access_key_id: str
    secret_access_key: str
    session_token: str | None = None


@dataclasses.dataclass
class Target:
    """Where a client sends requests: the gateway with a minted credential
    scoped to `prefix`, or the backend direct with its root keys (the
    baseline: a scenario failing there is a broken test, not a broken gateway)."""

    name: str
    endpoint: str
    creds: Creds
    prefix: str


@dataclasses.dataclass
class Stack:
    s3_endpoint: str
    s3_root: Creds
    region: str
    bucket: str
    gateway: str | None = None
    config: str | None = None
    bin: str | None = None

    def client(self, endpoint: str, creds: Creds, checksums: str = "when_supported"):
        """A boto3 S3 client, path-style; checksums is boto3's
        request_checksum_calculation ("when_supported" is its default)."""
        return boto3.client(
            "s3",
            endpoint_url=endpoint,
            region_name=self.region,
            aws_access_key_id=creds.access_key_id,
            aws_secret_access_key=creds.secret_access_key,
            aws_session_token=creds.session_token,
            config=botocore.config.Config(
                s3={"addressing_style": "path"},
                signature_version="s3v4",
                request_checksum_calculation=checksums,
                response_checksum_validation="when_required",
                retries={"max_attempts": 1, "mode": "standard"},
            ),
        )

    def backend(self):
        """Root client for the backend, bypassing the gateway: the ground truth."""
        return self.client(self.s3_endpoint, self.s3_root, "when_required")

    def backend_get(self, key: str) -> bytes | None:
        try:
            return self.backend().get_object(Bucket=self.bucket, Key=key)["Body"].read()
        except self.backend().exceptions.NoSuchKey:
            return None

    def backend_keys(self, prefix: str) -> list[str]:
        keys = []
        for page in self.backend().get_paginator("list_objects_v2").paginate(Bucket=self.bucket, Prefix=prefix):
            keys += [o["Key"] for o in page.get("Contents", [])]
        return keys

    def mint(self, *grants: str, principal: str = "interop", ttl: str = "1h", extra=()) -> Creds:
        """`duckicelake creds mint --format env` against the stack's config."""
        args = [self.bin, "creds", "mint", "--config", self.config, "--principal", principal, "--format", "env", "--ttl", ttl]
        for g in grants:
            args += ["--grant", g]
        out = subprocess.run([*args, *extra], check=True, capture_output=True, text=True).stdout
        env = {}
        for line in out.splitlines():
            k, _, v = line.partition("=")
            env[k] = v.strip("'\"")
        return Creds(env["AWS_ACCESS_KEY_ID"], env["AWS_SECRET_ACCESS_KEY"], env["AWS_SESSION_TOKEN"])


def unique_prefix(name: str) -> str:
    return f"it/{name}-{secrets.token_hex(6)}/"
