#!/usr/bin/env python3
"""abi: an odpemu drop-in library exports what the system's exports, at the same versions.

usage: abi_check.py OURS [SYSTEM] [--soname NAME] [--nodes PREFIX] [--private NODE ...]
       exit 0 pass, 1 fail, 77 skip (no system library)

The defaults check libibverbs.so.1 (compat/verbs): SYSTEM is /usr/lib/x86_64-linux-gnu/
NAME, NAME libibverbs.so.1, PREFIX IBVERBS_. librdmacm.so.1 (compat/rdmacm) is checked
with --soname librdmacm.so.1 --nodes RDMACM_.

Every default-version symbol of the system library (`sym@@VERSION`: functions, data
objects and the version-node objects) must be exported by ours at the same version, of the
same kind (function or object; an object at least as large), and each of the system's
version nodes must inherit the same node in ours. Clients are linked BIND_NOW, so one
missing symbol or version node stops them at load time (VERBS-ABI.md §0.1). The hidden
`sym@VERSION` entries (libibverbs' 2006 IBVERBS_1.0 ABI and ibv_register_driver@IBVERBS_1.1)
serve only binaries built before 2007: listed as a known omission, not a failure.

Ours must also export nothing the system does not, and nothing outside the PREFIX* nodes:
a program built against ours must run on the real library, and libodpemu's own symbols
must not leak. The exceptions are the --private NODEs, odpemu's own: libibverbs'
ODPEMU_PRIVATE_1 (the interface between its two drop-in libraries, which only
librdmacm.so.1 imports) and ODPEMU_VERBS_EXT_1 (the verbs extensions of
odpemu/verbs_ext.h); their symbols are listed, not failed. The soname must be NAME.
"""
import argparse
import os
import subprocess
import sys

SYSTEM_DIR = "/usr/lib/x86_64-linux-gnu"


class Sym:
    """One defined dynamic symbol as objdump -T prints it."""

    def __init__(self, name, version, hidden, kind, size):
        self.name, self.version, self.hidden = name, version, hidden
        self.kind, self.size = kind, size

    def __str__(self):
        sep = "@" if self.hidden else "@@"
        return f"{self.name}{sep}{self.version} ({self.kind}, {self.size} B)"


def parse_line(line):
    """'0000000000017a60 g    DF .text\t000000000000000a  IBVERBS_1.13 ibv_import_dm'
    -> Sym, or None for headers and undefined symbols. A hidden version is in
    parentheses; an unversioned symbol has 'Base' or no version column."""
    if "\t" not in line:
        return None
    head, tail = line.split("\t", 1)
    fields = head.split()
    words = tail.split()
    if len(fields) < 3 or fields[-1] == "*UND*" or len(words) < 2:
        return None
    flags = "".join(fields[1:-1])
    kind = "object" if "O" in flags else "function" if "F" in flags else "other"
    version, name = (words[1], words[2]) if len(words) >= 3 else ("Base", words[1])
    hidden = version.startswith("(")
    return Sym(name, version.strip("()"), hidden, kind, int(words[0], 16))


def exports(path):
    out = subprocess.run(["objdump", "-T", path], capture_output=True, text=True)
    if out.returncode:
        sys.exit(f"abi: objdump -T {path} failed:\n{out.stderr}")
    return [s for s in map(parse_line, out.stdout.splitlines()) if s]


def dynamic_section(path):
    return subprocess.run(["objdump", "-p", path], capture_output=True, text=True).stdout


def soname(path):
    for line in dynamic_section(path).splitlines():
        if line.split()[:1] == ["SONAME"]:
            return line.split()[1]
    return None


def version_parents(path):
    """objdump -p's "Version definitions" as {node: the node it inherits, or None}:
    '3 0x00 0x06365ab1 IBVERBS_1.1' followed by '\tIBVERBS_1.0 '. The first entry
    (flag 0x01) is the soname's base definition, not a node."""
    parents, node, inside = {}, None, False
    for line in dynamic_section(path).splitlines():
        if line.startswith("Version definitions:"):
            inside = True
        elif inside and not line.strip():
            break
        elif inside and line.startswith("\t"):
            if node and parents[node] is None:
                parents[node] = line.split()[0]
        elif inside:
            fields = line.split()
            node = fields[3] if len(fields) == 4 and fields[1] != "0x01" else None
            if node:
                parents[node] = None
    return parents


def check_defaults(sys_syms, ours):
    """The system's default-version symbols that ours lacks or exports differently."""
    problems = []
    for s in sorted(sys_syms, key=lambda s: (s.version, s.name)):
        if s.hidden:
            continue
        mine = [o for o in ours if o.name == s.name]
        same = [o for o in mine if o.version == s.version and not o.hidden]
        if not mine:
            problems.append(f"missing     {s}")
        elif not same:
            problems.append(f"mismatched  {s}: ours {', '.join(map(str, mine))}")
        elif same[0].kind != s.kind or (s.kind == "object" and same[0].size < s.size):
            problems.append(f"mismatched  {s}: ours {same[0]}")
    return problems


def check_parents(sys_path, ours_path):
    """The system's version nodes that ours chains to another node (a node ours lacks is
    already missing as its node object)."""
    mine = version_parents(ours_path)
    problems = []
    for node, parent in version_parents(sys_path).items():
        if node in mine and mine[node] != parent:
            problems.append(f"mismatched  version node {node} inherits {parent or 'nothing'}: "
                            f"ours {mine[node] or 'nothing'}")
    return problems


def check_extras(sys_syms, ours, prefix, private):
    """What ours exports beyond the system library, or outside the PREFIX* nodes (the
    private node aside)."""
    known = {(s.name, s.version) for s in sys_syms}
    problems = []
    for o in ours:
        if o.version in private and not o.hidden:
            continue
        if not o.version.startswith(prefix):
            problems.append(f"outside the {prefix}* nodes: {o}")
        elif (o.name, o.version) not in known:
            problems.append(f"not exported by the system library: {o}")
    return problems


def print_columns(names):
    for i in range(0, len(names), 3):
        print("    " + "".join(f"{a:<36}" for a in names[i:i + 3]).rstrip())


def report_private(ours, private):
    """odpemu's own nodes: printed, never a failure."""
    for node in private:
        names = sorted(o.name for o in ours if o.version == node and not o.hidden
                       and o.name != node)
        if not names:
            print(f"odpemu's node {node}: not exported")
            continue
        print(f"odpemu's own: {len(names)} symbols at {node} (not in the system library, "
              "not a failure):")
        print_columns(names)


def report_hidden(sys_syms, ours):
    """The 2006 ABI: printed, never a failure."""
    mine = {(o.name, o.version) for o in ours if o.hidden}
    hidden = [s for s in sys_syms if s.hidden]
    if not hidden:
        return
    absent = sorted(f"{s.name}@{s.version}" for s in hidden if (s.name, s.version) not in mine)
    if not absent:
        print(f"all {len(hidden)} hidden compatibility symbols are exported too")
        return
    print(f"known omission: {len(absent)} of the system's {len(hidden)} hidden compatibility "
          "symbols (the 2006 ABI, for binaries built before rdma-core 1.1) are not exported:")
    print_columns(absent)


def parse_args():
    usage = __doc__.split("\n\n")[1]
    parser = argparse.ArgumentParser(usage=usage.replace("usage: ", "", 1), add_help=False)
    parser.add_argument("ours")
    parser.add_argument("system", nargs="?")
    parser.add_argument("--soname", default="libibverbs.so.1")
    parser.add_argument("--nodes", default="IBVERBS_")
    parser.add_argument("--private", action="append", default=[])
    args = parser.parse_args()
    args.system = args.system or os.path.join(SYSTEM_DIR, args.soname)
    return args


def main():
    args = parse_args()
    ours_path, sys_path = args.ours, args.system
    if not os.path.exists(sys_path):
        package = args.soname.replace(".so.", "")     # libibverbs.so.1 -> libibverbs1
        print(f"abi: SKIP: no system library {sys_path} (apt-get install {package})")
        return 77
    if not os.path.exists(ours_path):
        print(f"abi: FAIL: {ours_path} does not exist (meson compile -C build)")
        return 1
    sys_syms, ours = exports(sys_path), exports(ours_path)
    defaults = [s for s in sys_syms if not s.hidden]
    print(f"system {sys_path}: {len(defaults)} default-version symbols "
          f"(version nodes included), {len(sys_syms) - len(defaults)} hidden")
    print(f"ours   {ours_path}: {len(ours)} symbols")
    problems = (check_defaults(sys_syms, ours) + check_parents(sys_path, ours_path)
                + check_extras(sys_syms, ours, args.nodes, args.private))
    name = soname(ours_path)
    if name != args.soname:
        problems.append(f"soname is {name}, want {args.soname}")
    report_hidden(sys_syms, ours)
    report_private(ours, args.private)
    for p in problems:
        print("FAIL: " + p)
    print(f"abi: {'FAIL' if problems else 'ok'}: {len(problems)} problems")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
