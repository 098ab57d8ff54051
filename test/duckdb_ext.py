"""DuckDB connections whose extensions load offline, from the pinned wheels.

Each duckdb-extension-<name> wheel ships one file,
``duckdb_extension_<name>/extensions/v<duckdb version>/<name>.duckdb_extension``.
DuckDB loads an extension by name only from
``<extension_directory>/v<version>/<platform>/``, so the recipe is:

1. point ``extension_directory`` at a folder inside the venv (never ~/.duckdb),
2. ``INSTALL '<path to the wheel's .duckdb_extension file>'`` once (a local copy,
   no network),
3. ``LOAD <name>`` — or let DuckDB autoload it (e.g. httpfs on the first s3:// URL);
   autoinstall stays off so nothing ever reaches for the extension repository.

iceberg autoloads avro when it initialises, so avro is installed too. The
postgres wheel installs as ``postgres_scanner`` (``LOAD postgres`` is an alias).

Usage from a test::

    import duckdb_ext
    con = duckdb_ext.connect()           # httpfs, avro, iceberg, ducklake, postgres loaded
    con = duckdb_ext.connect(load=())    # installed but not loaded (autoload on use)

``python test/duckdb_ext.py`` installs and loads every extension and prints
what it did; scripts/venv.sh runs it as the venv's self-check.
"""

from __future__ import annotations

import importlib
import os
import pathlib
import sys

import duckdb

# Installed in this order: avro must be present before iceberg initialises.
EXTENSIONS = ("httpfs", "avro", "iceberg", "ducklake", "postgres")

# The name each wheel's extension is recorded under once installed.
_INSTALLED_NAME = {"postgres": "postgres_scanner"}


def extension_directory() -> str:
    """Where extensions are installed: $DUCKICELAKE_DUCKDB_EXTENSIONS, else <venv>/duckdb-extensions."""
    return os.environ.get("DUCKICELAKE_DUCKDB_EXTENSIONS") or os.path.join(
        sys.prefix, "duckdb-extensions"
    )


def extension_file(name: str, version: str) -> pathlib.Path:
    """The .duckdb_extension file the duckdb-extension-<name> wheel ships for DuckDB `version` ("v1.5.5")."""
    try:
        mod = importlib.import_module(f"duckdb_extension_{name}")
    except ImportError as e:
        raise RuntimeError(
            f"duckdb-extension-{name} is not installed; run scripts/venv.sh"
        ) from e
    path = pathlib.Path(mod.__file__).parent / "extensions" / version / f"{name}.duckdb_extension"
    if not path.is_file():
        raise RuntimeError(
            f"{path} missing: duckdb-extension-{name} does not match DuckDB {version}"
        )
    return path


def install(con: duckdb.DuckDBPyConnection, names=EXTENSIONS) -> list[str]:
    """Install every extension in `names` that is not installed yet; returns the ones it installed."""
    version = con.sql("PRAGMA version").fetchone()[0]
    installed = {
        row[0]
        for row in con.sql(
            "SELECT extension_name FROM duckdb_extensions() WHERE installed"
        ).fetchall()
    }
    done = []
    for name in names:
        if _INSTALLED_NAME.get(name, name) in installed:
            continue
        path = str(extension_file(name, version)).replace("'", "''")
        con.execute(f"INSTALL '{path}'")
        done.append(name)
    return done


def connect(database: str = ":memory:", load=EXTENSIONS, config: dict | None = None, **kwargs):
    """Open a DuckDB connection with the pinned extensions installed and `load` loaded."""
    cfg = {
        "extension_directory": extension_directory(),
        "autoinstall_known_extensions": False,
        "autoload_known_extensions": True,
    }
    if config:
        cfg.update(config)
    os.makedirs(cfg["extension_directory"], exist_ok=True)
    con = duckdb.connect(database, config=cfg, **kwargs)
    install(con)
    for name in load:
        con.load_extension(name)
    return con


def main() -> int:
    con = connect()
    rows = con.sql(
        "SELECT extension_name, loaded, install_path FROM duckdb_extensions() "
        "WHERE installed AND install_path <> '(BUILT-IN)' ORDER BY 1"
    ).fetchall()
    print(f"duckdb {duckdb.__version__}, extension_directory={extension_directory()}")
    for name, loaded, path in rows:
        print(f"  {name:<18} loaded={loaded} {path}")
    missing = [n for n in EXTENSIONS if _INSTALLED_NAME.get(n, n) not in {r[0] for r in rows if r[1]}]
    if missing:
        print(f"not loaded: {', '.join(missing)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
