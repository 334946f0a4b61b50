#!/usr/bin/env python3
"""README's "Where it runs" table against `odpemud --check --json` (meson test readme-rows).

Every `name` in the table (its "rows not available" column) and in the "Available in all
of them" line after it is a row of the report, and every row of the report appears in
one of the two, so neither drifts from the probes.
usage: check_readme.py README.md ODPEMUD
"""
import json
import re
import subprocess
import sys


def table(readme):
    """The table's lines, and the paragraph that starts "Available in all"."""
    text = open(readme, encoding="utf-8").read()
    start = text.index("<!-- where-it-runs:")
    lines = text[start:].splitlines()[1:]
    rows = []
    while lines and lines[0].startswith("|"):
        rows.append(lines.pop(0))
    rest = "\n".join(lines).strip()
    everywhere = rest.split("\n\n")[0] if rest.startswith("Available in all") else ""
    return rows, everywhere


def main():
    readme, odpemud = sys.argv[1], sys.argv[2]
    report = json.loads(subprocess.run([odpemud, "--check", "--json"], check=False,
                                       capture_output=True, text=True,
                                       env={"PATH": "/usr/bin:/bin"}).stdout)
    names = {f["name"] for f in report["features"]}
    rows, everywhere = table(readme)
    cited = set(re.findall(r"`([a-z0-9_]+)`", everywhere))
    for line in rows[2:]:
        cells = line.split("|")
        cited |= set(re.findall(r"`([a-z0-9_]+)`", cells[2]))
    bad = sorted(cited - names)
    missing = sorted(names - cited)
    ok = True
    if len(rows) < 4:
        print("FAIL: no table after the where-it-runs marker")
        ok = False
    for n in bad:
        print(f"FAIL: README cites `{n}`, which is no row of odpemud --check")
        ok = False
    for n in missing:
        print(f"FAIL: row {n} is never named in README's Where it runs table")
        ok = False
    print(f"readme-rows: {len(rows) - 2} environments, {len(cited)} rows cited of "
          f"{len(names)}" + ("" if ok else ": FAILED"))
    return 0 if ok else 1


sys.exit(main())
