"""check_report.py — what test_matrix.sh asserts on odpemu-matrix's reports.

    /usr/bin/python3 check_report.py JUNIT JSON MARKDOWN CELLS [PATTERN=STATUS ...]

JUnit: it parses (xml.etree), its root is <testsuites>, one <testsuite> per personality
whose tests/failures/errors/skipped attributes equal what its testcases hold, the root's
the sums; one <testcase> per cell (CELLS of them, no two alike), classname
odpemu-matrix.PERSONALITY, name PROFILE-seedN, a numeric time, at most one of
failure/error/skipped, a system-out with the counters and the repro line (the elements
and attributes of the JUnit schema that Jenkins, GitLab and GitHub's reporters read).
JSON: the same cells and statuses, each with its repro line. Markdown: a table row per
cell. Each cell's status must be the STATUS of the first PATTERN (fnmatch on
PERSONALITY/PROFILE/seedN) that matches it, else "passed". Prints the failing cells'
repro lines to stdout, one per line, for test_matrix.sh to run again."""
import fnmatch
import json
import sys
import xml.etree.ElementTree as ET

ALLOWED_TC = {"classname", "name", "time"}
ALLOWED_SUITE = {"name", "tests", "failures", "errors", "skipped", "time", "timestamp",
                 "hostname"}


def fail(msg):
    print(f"check_report: {msg}", file=sys.stderr)
    sys.exit(1)


def main(junit, jpath, mdpath, ncells, expect):
    root = ET.parse(junit).getroot()
    if root.tag != "testsuites":
        fail(f"root element <{root.tag}>, want <testsuites>")
    seen, statuses = set(), {}
    totals = dict.fromkeys(("tests", "failures", "errors", "skipped"), 0)
    for suite in root:
        if suite.tag != "testsuite" or set(suite.attrib) - ALLOWED_SUITE:
            fail(f"<{suite.tag} {suite.attrib}>: not a testsuite of the schema")
        count = dict.fromkeys(totals, 0)
        pers = suite.get("name").removeprefix("odpemu-matrix.")
        for tc in suite:
            if tc.tag != "testcase" or set(tc.attrib) - ALLOWED_TC:
                fail(f"<{tc.tag} {tc.attrib}> in {suite.get('name')}")
            if tc.get("classname") != f"odpemu-matrix.{pers}":
                fail(f"classname {tc.get('classname')} in suite {suite.get('name')}")
            float(tc.get("time"))
            key = (tc.get("classname"), tc.get("name"))
            if key in seen:
                fail(f"testcase {key} twice")
            seen.add(key)
            kids = [k.tag for k in tc]
            results = [k for k in kids if k in ("failure", "error", "skipped")]
            if len(results) > 1 or kids.count("system-out") != 1:
                fail(f"testcase {key}: children {kids}")
            out = tc.find("system-out").text or ""
            if "repro: " not in out or "page_faults" not in out:
                fail(f"testcase {key}: system-out lacks the repro line or the counters")
            count["tests"] += 1
            for r, attr in (("failure", "failures"), ("error", "errors"),
                            ("skipped", "skipped")):
                count[attr] += r in results
            profile, seed = tc.get("name").rsplit("-seed", 1)
            statuses[f"{pers}/{profile}/seed{seed}"] = results[0] if results else "passed"
        for k, v in count.items():
            if int(suite.get(k)) != v:
                fail(f"suite {suite.get('name')}: {k}={suite.get(k)}, its testcases: {v}")
            totals[k] += v
    for k, v in totals.items():
        if int(root.get(k)) != v:
            fail(f"<testsuites {k}={root.get(k)}>, the suites hold {v}")
    if len(seen) != ncells:
        fail(f"{len(seen)} testcases, want one per cell: {ncells}")
    doc = json.load(open(jpath))
    cells = {c["id"]: c for c in doc["cells"]}
    if set(cells) != set(statuses):
        fail(f"JSON cells {sorted(cells)} differ from JUnit's {sorted(statuses)}")
    junit_of = {"passed": "passed", "failed": "failure", "timeout": "failure",
                "xpass": "failure", "error": "error", "skipped": "skipped", "xfail": "skipped"}
    md = open(mdpath).read()
    repros = []
    for cid, c in cells.items():
        if junit_of[c["status"]] != statuses[cid]:
            fail(f"{cid}: JSON {c['status']}, JUnit {statuses[cid]}")
        want = next((st for pat, st in expect if fnmatch.fnmatchcase(cid, pat)), "passed")
        if c["status"] != want:
            fail(f"{cid}: {c['status']} ({c['message']}), want {want}")
        pers, profile, seed = cid.split("/")
        if f"| {pers} | {profile} | {seed.removeprefix('seed')} |" not in md:
            fail(f"{cid}: no row in the Markdown summary")
        if not c["repro"]:
            fail(f"{cid}: no repro line")
        if c["status"] in ("failed", "timeout"):
            repros.append(c["repro"])
    print("\n".join(repros))


if __name__ == "__main__":
    expect = [tuple(x.rsplit("=", 1)) for x in sys.argv[5:]]
    main(sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), expect)
