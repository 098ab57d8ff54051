"""The command line of a test script that reports JSON to a Go test.

``script.py MODE ARGS...`` calls the function the script names for MODE with
ARGS and prints what it returns as JSON on stdout (testsupport.RunJSON reads
it). An unknown mode, or arguments that function does not take, print the
script's usage on stderr and exit 2.

Usage from a script (with test/ on sys.path, as for duckdb_ext)::

    import jsonreport
    if __name__ == "__main__":
        sys.exit(jsonreport.main(__doc__, {"write": write, "read": read}))
"""

from __future__ import annotations

import inspect
import json
import sys


def main(usage: str, modes: dict, argv: list[str] | None = None) -> int:
    argv = sys.argv if argv is None else argv
    fn = modes.get(argv[1]) if len(argv) > 1 else None
    try:
        if fn is None:
            raise TypeError(f"no mode {argv[1:2]}")
        inspect.signature(fn).bind(*argv[2:])
    except TypeError:
        print(usage, file=sys.stderr)
        return 2
    json.dump(fn(*argv[2:]), sys.stdout)
    return 0
