#!/usr/bin/env python3
"""Summaries for scripts/test.sh and scripts/gotest.sh (standard library only).

  testsummary.py go COUNTS_FILE [DEFERRED_FILE] < go-test-json
      Reads `go test -json` on stdin, prints one line per package as it finishes
      (and the full output of every failed test), writes "passed failed skipped"
      to COUNTS_FILE. A package that fails without a failed test (build error,
      panic in TestMain, timeout) counts as one failure. A failing package's
      line names its -test.shuffle seed, so that the order can be replayed.
      With DEFERRED_FILE, the tests skipped by testsupport.SkipUnderRace (their
      skip message starts with [norace]) are not counted but written there, one
      "package test" a line, for a second run without -race to count.

  testsummary.py junit JUNIT_XML COUNTS_FILE
      Writes "passed failed skipped" of a pytest --junitxml report.
"""

import json
import sys
import xml.etree.ElementTree as ET

NORACE_MARKER = "[norace]"  # testsupport.NoRaceMarker


def go(counts_path, deferred_path=None):
    passed = failed = skipped = 0
    output = {}  # (package, test) -> [lines]
    pkg_tests = {}  # package -> [passed, failed, skipped]
    pkg_failed_tests = {}
    deferred = []  # (package, test)
    for raw in sys.stdin:
        try:
            ev = json.loads(raw)
        except ValueError:
            # Not JSON: a message from the go command itself (e.g. a build
            # failure outside any package). Show it as is.
            sys.stdout.write(raw)
            continue
        action = ev.get("Action")
        pkg = ev.get("Package", "")
        test = ev.get("Test")
        if action == "build-output":
            # Keyed by whatever import path failed, not by the package under
            # test, so show it as it comes.
            sys.stdout.write(ev.get("Output", ""))
            continue
        if action == "build-fail":
            continue
        if action == "output":
            output.setdefault((pkg, test), []).append(ev.get("Output", ""))
            continue
        counts = pkg_tests.setdefault(pkg, [0, 0, 0])
        if test is not None:
            if action == "pass":
                counts[0] += 1
            elif action == "fail":
                counts[1] += 1
                pkg_failed_tests.setdefault(pkg, []).append(test)
            elif action == "skip":
                if deferred_path and any(NORACE_MARKER in line for line in output.get((pkg, test), [])):
                    deferred.append((pkg, test))
                else:
                    counts[2] += 1
            continue
        if action not in ("pass", "fail", "skip"):
            continue
        p, f, s = counts
        elapsed = ev.get("Elapsed", 0)
        pkg_out = output.get((pkg, None), [])
        if action == "fail":
            for t in pkg_failed_tests.get(pkg, []):
                # A parent's output includes its subtests' verdicts; print leaves in full.
                sys.stdout.write("".join(output.get((pkg, t), [])))
            if f == 0:
                sys.stdout.write("".join(pkg_out))
                f = 1
            seed = shuffle_seed(pkg_out)
            print(f"FAIL  {pkg}  ({p} passed, {f} failed, {s} skipped) {elapsed:.1f}s{seed}", flush=True)
        elif p + f + s == 0 and not any(d[0] == pkg for d in deferred):
            print(f"--    {pkg}  (no tests)", flush=True)
        else:
            print(f"ok    {pkg}  ({p} passed, {s} skipped) {elapsed:.1f}s", flush=True)
        passed, failed, skipped = passed + p, failed + f, skipped + s
    with open(counts_path, "w") as fh:
        fh.write(f"{passed} {failed} {skipped}\n")
    if deferred_path:
        with open(deferred_path, "w") as fh:
            for pkg, test in deferred:
                fh.write(f"{pkg} {test}\n")


def shuffle_seed(lines):
    """The seed go test printed for -shuffle ("-test.shuffle N"), as a suffix."""
    for line in lines:
        if line.startswith("-test.shuffle "):
            return "  (-shuffle=" + line.split()[1] + ")"
    return ""


def junit(xml_path, counts_path):
    root = ET.parse(xml_path).getroot()
    suites = [root] if root.tag == "testsuite" else root.findall("testsuite")
    tests = failures = skipped = 0
    for s in suites:
        tests += int(s.get("tests", 0))
        failures += int(s.get("failures", 0)) + int(s.get("errors", 0))
        skipped += int(s.get("skipped", 0))
    with open(counts_path, "w") as fh:
        fh.write(f"{tests - failures - skipped} {failures} {skipped}\n")


if __name__ == "__main__":
    if len(sys.argv) in (3, 4) and sys.argv[1] == "go":
        go(*sys.argv[2:])
    elif len(sys.argv) == 4 and sys.argv[1] == "junit":
        junit(sys.argv[2], sys.argv[3])
    else:
        sys.exit(__doc__)
