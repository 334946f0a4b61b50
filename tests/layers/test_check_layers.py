#!/usr/bin/env python3
"""tools/ci/check-layers on a tiny fake tree and its fake introspection (no meson run): the
crossings it must list, the lines it must not, headers of one name in several layers
told apart by the search path, an include folder flagged before anything includes from
it, a folder no layer covers, files no target reaches, the build-directory form and the
usage errors.

usage: test_check_layers.py PATH/TO/check-layers      exit 0: pass, 1: fail
"""
import json
import os
import re
import subprocess
import sys
import tempfile

FILES = {
    "proto/bytes.h": "/* proto */\n",
    "nic/nic.h": '#include "bytes.h"\n',           # nic -> proto through -I proto
    "nic/wire.h": "/* nic's wire.h */\n",
    "nic/qp_attr.h": "/* nic's */\n",
    "nic/qp.c": '#include "qp_attr.h"\n',          # its own folder's, not lib's
    "nic/engine/x.c": '#include "wire.h"\n',       # -I emu comes before -I nic
    "emu/wire.h": "/* emu's wire.h */\n",
    "emu/ctl.h": "/* emu's ctl.h */\n",
    "emu/daemon.c": '#include "wire.h"\n#include "nic.h"\n#include "version.h"\n',
    "emu/io/udp.c": '#include "wire.h"\n#include "../wire.h"\n',
    "ipc/ipc.h": "/* ipc */\n",
    "ipc/rundir.h": "/* ipc */\n",
    "ipc/interval.h": "/* ipc */\n",
    "ipc/interval.c": '#include "interval.h"\n#include "odpemu/types.h"\n',
    "include/odpemu/types.h": "/* public */\n",
    "lib/ctl.h": "/* lib's ctl.h */\n",
    "lib/qp_attr.h": "/* lib's */\n",
    "lib/a.c": '#include "qp_attr.h"\n#include "ipc.h"\n',
    "tools/ctl/main.c": '#include "ctl.h"\n#include <rundir.h>\n#include <stdio.h>\n',
    "compat/verbs/device.c": '#include <string.h>\n#include "odpemu/types.h"\n'
                             '#include "ipc.h"\n',
    "widget/store.c": '#include "odpemu/types.h"\n',
    "tests/t.c": '#include "wire.h"\n#include "ctl.h"\n',
    "build/emu/version.h": "/* generated */\n",
}


def target(root, name, folder, sources, incs):
    return {"name": name, "type": "static library",
            "defined_in": os.path.join(root, folder, "meson.build"),
            "target_sources": [{"language": "c",
                                "parameters": ["-I" + os.path.join(root, d) for d in incs]
                                + ["-O2", "-Wall"],
                                "sources": [os.path.join(root, s) for s in sources],
                                "generated_sources": []}]}


def targets(root):
    return {
        "daemon": target(root, "daemon", "emu", ["emu/daemon.c", "emu/io/udp.c"],
                         ["emu", "build/emu", "nic", "proto", "ipc", "include"]),
        "tool": target(root, "tool", "tools", ["tools/ctl/main.c"],
                       ["tools/ctl", "lib", "include", "ipc"]),
        "lib": target(root, "lib", "lib", ["lib/a.c", "ipc/interval.c"],
                      ["lib", "include", "ipc"]),
        "dropin": target(root, "dropin", "compat", ["compat/verbs/device.c"],
                         ["compat/verbs", "include", "ipc"]),
        "nic": target(root, "nic", "nic", ["nic/qp.c"], ["nic", "proto", "pagetable", "emu"]),
        "engine": target(root, "engine", "nic", ["nic/engine/x.c"], ["nic/engine", "emu", "nic"]),
        "widget": target(root, "widget", "widget", ["widget/store.c"], ["include"]),
        "t": target(root, "t", "tests", ["tests/t.c"], ["emu", "lib", "nic"]),
        "man": {"name": "man", "type": "custom",
                "defined_in": os.path.join(root, "docs/meson.build"),
                "target_sources": [{"language": "unknown", "sources": [],
                                    "generated_sources": []}]},
    }


failures = 0


def check(cond, what, detail=""):
    """One assertion; the detail (what the script printed) only when it fails."""
    global failures
    print("%s: %s%s" % ("ok" if cond else "FAIL", what, "" if cond or not detail else
                        "\n    " + detail.strip().replace("\n", "\n    ")))
    failures += not cond


def run(script, args):
    p = subprocess.run([sys.executable, script] + args, capture_output=True, text=True)
    return p.returncode, p.stdout, p.stderr


def problem_lines(out):
    return [l for l in out.splitlines() if not l.startswith("check-layers:")]


def main():
    script = sys.argv[1]
    with tempfile.TemporaryDirectory() as root:
        root = os.path.realpath(root)
        for rel, text in FILES.items():
            os.makedirs(os.path.dirname(os.path.join(root, rel)), exist_ok=True)
            with open(os.path.join(root, rel), "w") as fh:
                fh.write(text)
        all_t = targets(root)

        def with_targets(names):
            path = os.path.join(root, "intro-%s.json" % "-".join(names))
            with open(path, "w") as fh:
                json.dump([all_t[n] for n in names], fh)
            return ["--targets", path, "--source-root", root,
                    "--build-root", os.path.join(root, "build")]

        # clean: same-named headers resolved by path, layers reached as drawn
        rc, out, err = run(script, with_targets(["daemon", "tool", "lib", "t", "man"]))
        check(rc == 0 and problem_lines(out) == [], "clean tree: exit 0, nothing listed",
              "rc %d: %s%s" % (rc, out, err))
        check("3 targets, 13 includes" in out,
              "tests/ and targets without C not counted, every include followed", out)

        # every kind of crossing
        rc, out, err = run(script, with_targets(list(all_t)))
        lines = problem_lines(out)
        check(rc == 1, "crossings: exit 1", "rc %d: %s" % (rc, err))
        want = [
            r'^compat/verbs/device\.c:3: #include "ipc\.h" finds ipc/ipc\.h \(target '
            r"'dropin'\): compat -> ipc is not an arrow of DESIGN\.md",
            r"^compat/meson\.build: target 'dropin' searches ipc/ \(-I ipc\): compat -> ipc",
            r"^nic/meson\.build: target 'nic' searches emu/ \(-I emu\): nic -> emu is not",
            r"^nic/meson\.build: target 'engine' searches emu/ \(-I emu\): nic -> emu",
            r'^nic/engine/x\.c:1: #include "wire\.h" finds emu/wire\.h \(target '
            r"'engine'\): nic -> emu is not an arrow",
            r"^widget/meson\.build: target 'widget' is in no layer: add a row for widget/",
        ]
        for w in want:
            check(any(re.search(w, l) for l in lines), "listed: " + w, out)
        check(len(lines) == len(want), "exactly %d lines listed" % len(want), out)
        for quiet in ("emu/daemon.c", "emu/io/udp.c", "tools/ctl/main.c", "lib/a.c",
                      "ipc/interval.c", "nic/qp.c", "tests/", "lib/ctl.h", "version.h"):
            check(not any(quiet in l for l in lines), "nothing listed about " + quiet, out)
        check("6 crossings" in out, "the summary counts them", out)
        check(re.search(r"note: 2 files .*not checked\): emu/ctl\.h, nic/wire\.h$", out, re.M),
              "files no target reaches are named", out)

        # the build-directory form reads meson-info/
        info = os.path.join(root, "build", "meson-info")
        os.makedirs(info)
        with open(os.path.join(info, "meson-info.json"), "w") as fh:
            json.dump({"directories": {"source": root, "build": os.path.join(root, "build"),
                                       "info": info}}, fh)
        with open(os.path.join(info, "intro-targets.json"), "w") as fh:
            json.dump([all_t["engine"], all_t["daemon"]], fh)
        rc, out, err = run(script, [os.path.join(root, "build")])
        check(rc == 1 and len(problem_lines(out)) == 2 and "nic/engine/x.c:1:" in out,
              "BUILDDIR form: exit 1, the engine's two lines", "rc %d: %s%s" % (rc, out, err))

        # usage
        for args, what in (([], "no build directory"), ([root], "not a build directory"),
                           (["--targets", "/nonexistent", "--source-root", root],
                            "unreadable introspection"), (["--bogus"], "unknown option")):
            rc, out, err = run(script, args)
            check(rc == 2 and "usage:" in err, "usage error, exit 2: " + what,
                  "rc %d: %s%s" % (rc, out, err))
    print("test_check_layers: %d failed" % failures)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
