"""pytest fixtures for test/engines: the running stack (test/e2e's
lakestack.Lake) and one SparkSession for the whole module, a real Spark
(pyspark from the pinned venv, Iceberg's Spark runtime and AWS bundle from
Maven Central via scripts/engines.sh) talking to the catalog with the OAuth2
client and vended credentials. Without a stack, pyspark or Java a test
skips, except under CI=true, where it fails."""

from __future__ import annotations

import os
import pathlib
import shutil
import subprocess
import sys

import pytest

HERE = pathlib.Path(__file__).resolve().parent
REPO = HERE.parent.parent
sys.path.insert(0, str(REPO / "test" / "e2e"))
from lakestack import Lake, Missing  # noqa: E402


def _missing(msg: str):
    if os.environ.get("CI") == "true":
        pytest.fail(msg)
    pytest.skip(msg)


@pytest.fixture(scope="session")
def lake() -> Lake:
    try:
        return Lake.from_env()
    except Missing as e:
        _missing(str(e))


@pytest.fixture(scope="session")
def spark_jars() -> str:
    """The Iceberg Spark runtime and AWS bundle, fetched once into the cache."""
    out = subprocess.run([str(REPO / "scripts" / "engines.sh"), "fetch", "spark"], capture_output=True, text=True)
    if out.returncode != 0:
        _missing("scripts/engines.sh fetch spark failed: " + out.stderr[-2000:])
    return out.stdout.strip().splitlines()[-1]


@pytest.fixture(scope="module")
def spark(lake: Lake, spark_jars: str):
    try:
        from pyspark.sql import SparkSession
    except ImportError as e:
        _missing(f"pyspark is not installed ({e}); scripts/venv.sh installs it")
    if not shutil.which("java") and not os.environ.get("JAVA_HOME"):
        _missing("no java on PATH (Spark needs Java 17+)")
    cat = "spark.sql.catalog.lake"
    b = (
        SparkSession.builder.master("local[2]")
        .appName("duckicelake-engines")
        .config("spark.jars", spark_jars)
        .config("spark.sql.extensions", "org.apache.iceberg.spark.extensions.IcebergSparkSessionExtensions")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.driver.memory", "1g")
        .config("spark.sql.session.timeZone", "UTC")
        .config(cat, "org.apache.iceberg.spark.SparkCatalog")
        .config(f"{cat}.type", "rest")
        .config(f"{cat}.uri", lake.catalog_url)
        .config(f"{cat}.warehouse", lake.warehouse)
        .config(f"{cat}.credential", lake.credential)
        .config(f"{cat}.oauth2-server-uri", lake.catalog_url + "/v1/oauth/tokens")
        .config(f"{cat}.scope", "catalog")
        .config(f"{cat}.header.X-Iceberg-Access-Delegation", "vended-credentials")
        .config(f"{cat}.io-impl", "org.apache.iceberg.aws.s3.S3FileIO")
        # Iceberg's metadata cache would hide what another engine committed.
        .config(f"{cat}.cache-enabled", "false")
    )
    s = b.getOrCreate()
    s.sparkContext.setLogLevel("WARN")
    yield s
    s.stop()
