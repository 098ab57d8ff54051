"""pytest fixtures for test/gateway: the stack (gwstack.Stack) and the targets
every scenario runs against (the backend direct as a baseline, the gateway)."""

from __future__ import annotations

import os

import pytest

from gwstack import Creds, Stack, Target, need, unique_prefix


@pytest.fixture(scope="session")
def stack() -> Stack:
    endpoint, key, secret, bucket = need(
        "DUCKICELAKE_TEST_S3_ENDPOINT", "DUCKICELAKE_TEST_S3_ACCESS_KEY", "DUCKICELAKE_TEST_S3_SECRET_KEY", "DUCKICELAKE_TEST_BUCKET"
    )
    return Stack(
        s3_endpoint=endpoint,
        s3_root=Creds(key, secret),
        region=os.environ.get("DUCKICELAKE_TEST_S3_REGION") or "us-east-1",
        bucket=bucket,
        gateway=os.environ.get("DUCKICELAKE_TEST_GATEWAY") or None,
        config=os.environ.get("DUCKICELAKE_TEST_CONFIG") or None,
        bin=os.environ.get("DUCKICELAKE_BIN") or None,
    )


@pytest.fixture(scope="session")
def gateway_stack(stack: Stack) -> Stack:
    """The stack with its gateway; skips (fails under CI=true) without one."""
    need("DUCKICELAKE_TEST_GATEWAY", "DUCKICELAKE_TEST_CONFIG", "DUCKICELAKE_BIN")
    return stack


@pytest.fixture(params=["direct", "gateway"])
def target(request, stack: Stack) -> Target:
    """Each scenario runs against the backend direct (baseline) and through the gateway."""
    name = request.node.originalname.removeprefix("test_")
    if request.param == "direct":
        return Target("direct", stack.s3_endpoint, stack.s3_root, unique_prefix(name + "-direct"))
    need("DUCKICELAKE_TEST_GATEWAY", "DUCKICELAKE_TEST_CONFIG", "DUCKICELAKE_BIN")
    prefix = unique_prefix(name)
    creds = stack.mint(f"{stack.bucket}:{prefix}:rw", principal="interop-" + name)
    return Target("gateway", stack.gateway, creds, prefix)
