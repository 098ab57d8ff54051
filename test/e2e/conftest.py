"""pytest fixtures for test/e2e: the running stack (lakestack.Lake). Without
one a test skips, except under CI=true, where it fails."""

from __future__ import annotations

import os

import pytest

from lakestack import Lake, Missing


@pytest.fixture(scope="session")
def lake() -> Lake:
    try:
        return Lake.from_env()
    except Missing as e:
        if os.environ.get("CI") == "true":
            pytest.fail(str(e))
        pytest.skip(str(e))
