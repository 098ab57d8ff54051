#!/usr/bin/env python3
"""Summarise a run of the Iceberg REST Compatibility Kit.

usage: report.py REPORTS_DIR KIT_LOG OUT_DIR

REPORTS_DIR holds the JUnit XML reports ConsoleLauncher wrote (TEST-*.xml);
KIT_LOG is the kit's slf4j log, with the HTTP client's request and status
lines and TestMarks' marks. Writes OUT_DIR/conformance-report.txt (every
failing test with its exception and the HTTP exchanges it made) and
OUT_DIR/conformance-summary.json, prints the failures grouped by the request
they failed on and, last, the line

    conformance: N passed, N failed, N skipped

A test case counts as failed when the report has a <failure> or an <error>
for it, which includes the tests of a class whose setup failed (ConsoleLauncher
reports each of them as an error rather than dropping them); skipped are
disabled tests and failed assumptions (a capability the catalog does not
claim). Exit status: 0, or 2 when the reports hold no test case at all.
"""

import collections
import json
import os
import re
import sys
import xml.etree.ElementTree as ET

REQUEST = re.compile(r"(http-outgoing-\d+) >> ([A-Z]+) (\S+) HTTP/\d(?:\.\d)?\s*$")
RESPONSE = re.compile(r"(http-outgoing-\d+) << HTTP/\d(?:\.\d)? (\d{3})")
MARK = "RCK-MARK\t"
UNSUPPORTED = re.compile(r"does not support endpoint:? ([A-Z]+ /v1/[^\s\"',]+)")

# Path segments that are fixed words of the REST spec's routes, after the
# segment they follow; anything else after "namespaces", "tables", "views"
# or "plan" is a name.
NAMED = {"namespaces": "{namespace}", "tables": "{table}", "views": "{view}", "plan": "{plan-id}"}
FIXED_AFTER = {"tables": {"rename"}, "views": {"rename"}}


def route(path):
    """Turns a request path into its REST spec route ("/v1/{prefix}/namespaces/{namespace}")."""
    path = path.split("?", 1)[0]
    segs = [s for s in path.split("/") if s != ""]
    if not segs or segs[0] != "v1":
        return path
    out = ["v1"]
    i = 1
    if len(segs) > 1 and segs[1] not in ("config", "oauth", "namespaces", "tables", "views", "transactions"):
        out.append("{prefix}")
        i = 2
    top = True  # directly under /v1/{prefix}
    while i < len(segs):
        s = segs[i]
        out.append(s)
        if s in NAMED and i + 1 < len(segs):
            nxt = segs[i + 1]
            if top and nxt in FIXED_AFTER.get(s, ()):
                out.append(nxt)
            else:
                out.append(NAMED[s])
            i += 2
            top = False
            continue
        i += 1
        top = False
    return "/" + "/".join(out)


class Exchange:
    __slots__ = ("method", "path", "status")

    def __init__(self, method, path):
        self.method, self.path, self.status = method, path, None

    def key(self):
        return f"{self.method} {route(self.path)}"

    def __str__(self):
        return f"{self.method} {self.path} -> {self.status or 'no response'}"


def read_log(path):
    """Returns {(class, name): [Exchange]} for tests and for containers (name = display name)."""
    by_owner = collections.defaultdict(list)
    every = []
    stack = []  # open marks, innermost last
    pending = {}
    if not os.path.exists(path):
        return by_owner, every
    with open(path, encoding="utf-8", errors="replace") as f:
        for line in f:
            if MARK in line:
                fields = line.rstrip("\n").split(MARK, 1)[1].split("\t")
                if len(fields) != 5:
                    continue
                what, _kind, _status, cls, name = fields
                owner = (cls, name)
                if what == "START":
                    stack.append(owner)
                elif stack and stack[-1] == owner:
                    stack.pop()
                elif owner in stack:
                    stack.remove(owner)
                continue
            m = REQUEST.search(line)
            if m:
                ex = Exchange(m.group(2), m.group(3))
                pending[m.group(1)] = ex
                every.append(ex)
                by_owner[stack[-1] if stack else ("", "")].append(ex)
                continue
            m = RESPONSE.search(line)
            if m and m.group(1) in pending:
                pending.pop(m.group(1)).status = int(m.group(2))
    return by_owner, every


def read_reports(directory):
    cases = []
    for name in sorted(os.listdir(directory)) if os.path.isdir(directory) else []:
        if not (name.startswith("TEST-") and name.endswith(".xml")):
            continue
        root = ET.parse(os.path.join(directory, name)).getroot()
        for tc in root.iter("testcase"):
            outcome, message, detail = "passed", "", ""
            for tag in ("failure", "error", "skipped"):
                el = tc.find(tag)
                if el is not None:
                    outcome = "skipped" if tag == "skipped" else "failed"
                    message = el.get("message") or ""
                    typ = el.get("type") or ""
                    detail = (el.text or "").strip()
                    if not message and detail:
                        message = detail.splitlines()[0]
                    if typ and tag != "skipped":
                        message = f"{typ.rsplit('.', 1)[-1]}: {message}" if message else typ
                    break
            cases.append({
                "class": tc.get("classname") or "",
                "name": tc.get("name") or "",
                "outcome": outcome,
                "message": " ".join(message.split()),
                "detail": detail,
            })
    return cases


def short(cls):
    return cls.rsplit(".", 1)[-1].replace("RESTCompatibilityKit", "").replace("Tests", "")


def clip(s, n):
    return s if len(s) <= n else s[: n - 1] + "…"


def main(argv):
    if len(argv) != 4:
        print(__doc__.split("\n\n")[1], file=sys.stderr)
        return 64
    reports, log, out = argv[1:]
    cases = read_reports(reports)
    if not cases:
        print(f"conformance: no test case in {reports}: the kit did not run", file=sys.stderr)
        return 2
    by_owner, every = read_log(log)

    # A test's culprit is the last exchange it made: a failing client call is
    # the last thing a test does. Tests that never started (their class
    # setup failed) take the class setup's last exchange.
    failed = [c for c in cases if c["outcome"] == "failed"]
    groups = collections.OrderedDict()
    for c in failed:
        exs = by_owner.get((c["class"], c["name"])) or []
        origin = ""
        if not exs:
            # A container's mark carries its display name, the simple class name.
            exs = by_owner.get((c["class"], c["class"].rsplit(".", 1)[-1])) or []
            origin = " (class setup)" if exs else ""
        c["exchanges"] = [str(e) for e in exs]
        last = exs[-1] if exs else None
        unsupported = UNSUPPORTED.search(c["message"] + "\n" + c["detail"])
        if unsupported:
            # The client checks /v1/config's endpoint list and refuses to
            # send what is not there; no request was made for it.
            key = f"{unsupported.group(1)} -> not in /v1/config endpoints (client did not send it)"
        elif last is None:
            key = "no HTTP request (client-side)"
        else:
            key = f"{last.key()} -> {last.status or 'no response'}{origin}"
        c["culprit"] = key
        groups.setdefault(key, []).append(c)

    counts = collections.Counter(c["outcome"] for c in cases)
    routes = collections.defaultdict(collections.Counter)
    for e in every:
        routes[e.key()][e.status or 0] += 1

    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, "conformance-summary.json"), "w") as f:
        json.dump({
            "passed": counts["passed"], "failed": counts["failed"], "skipped": counts["skipped"],
            "failures_by_request": {k: [f"{short(c['class'])}.{c['name']}" for c in v] for k, v in groups.items()},
            "responses_by_route": {k: {str(s): n for s, n in sorted(v.items())} for k, v in sorted(routes.items())},
            "tests": [{k: c[k] for k in ("class", "name", "outcome", "message")} for c in cases],
        }, f, indent=2)
    with open(os.path.join(out, "conformance-report.txt"), "w") as f:
        f.write(f"{counts['passed']} passed, {counts['failed']} failed, {counts['skipped']} skipped\n\n")
        f.write("Responses by route (status: count)\n")
        for k in sorted(routes):
            f.write(f"  {k:70s} " + " ".join(f"{s or 'none'}:{n}" for s, n in sorted(routes[k].items())) + "\n")
        f.write("\nFailing tests\n")
        for c in failed:
            f.write(f"\n- {short(c['class'])}.{c['name']}\n  {c['message']}\n  failed on: {c['culprit']}\n")
            for e in c["exchanges"]:
                f.write(f"    {e}\n")
            if c["detail"]:
                f.write("  " + "\n  ".join(c["detail"].splitlines()[:12]) + "\n")
        f.write("\nSkipped tests\n")
        for c in cases:
            if c["outcome"] == "skipped":
                f.write(f"- {short(c['class'])}.{c['name']}: {clip(c['message'], 160)}\n")

    if failed:
        print(f"Failures grouped by the request they failed on ({len(groups)} groups; "
              f"every test with its exchanges: {os.path.join(out, 'conformance-report.txt')}):")
        for key, cs in sorted(groups.items(), key=lambda kv: -len(kv[1])):
            print(f"  {len(cs):4d}  {key}")
            msgs = collections.Counter(clip(c["message"], 150) for c in cs)
            for m, n in msgs.most_common(3):
                print(f"          {n:3d}× {m}")
            names = ", ".join(f"{short(c['class'])}.{c['name']}" for c in cs)
            print(f"          tests: {clip(names, 400)}")
        bad = {k: v for k, v in routes.items() if any(s >= 400 or s == 0 for s in v)}
        if bad:
            print("Non-2xx responses by route (some are expected: a 404 for a missing namespace is an answer):")
            for k in sorted(bad):
                print(f"  {k:66s} " + " ".join(f"{s or 'none'}:{n}" for s, n in sorted(bad[k].items()) if s >= 400 or s == 0))
    print(f"conformance: {counts['passed']} passed, {counts['failed']} failed, {counts['skipped']} skipped")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
