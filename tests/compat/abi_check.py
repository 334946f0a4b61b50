#!/usr/bin/env python3
"""abi: odpemu's libibverbs.so.1 exports what the system's exports, at the same versions.

usage: abi_check.py OURS [SYSTEM]     exit 0 pass, 1 fail, 77 skip (no system library)

Every default-version symbol of the system library (`sym@@VERSION`: functions, data
objects and the version-node objects) must be exported by ours at the same version, of the
same kind (function or object; an object at least as large). Clients are linked BIND_NOW,
so one missing symbol or version node stops them at load time (VERBS-ABI.md §0.1). The
hidden `sym@VERSION` entries (the 2006 IBVERBS_1.0 ABI and ibv_register_driver@IBVERBS_1.1)
serve only binaries built before 2007: listed as a known omission, not a failure.

Ours must also export nothing the system does not, and nothing outside the IBVERBS_*
nodes: a program built against ours must run on the real library, and libodpemu's own
symbols must not leak. The soname must be libibverbs.so.1.
"""
import os
import subprocess
import sys

SYSTEM = "/usr/lib/x86_64-linux-gnu/libibverbs.so.1"


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


def soname(path):
    out = subprocess.run(["objdump", "-p", path], capture_output=True, text=True).stdout
    for line in out.splitlines():
        if line.split()[:1] == ["SONAME"]:
            return line.split()[1]
    return None


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


def check_extras(sys_syms, ours):
    """What ours exports beyond the system library, or outside the IBVERBS_* nodes."""
    known = {(s.name, s.version) for s in sys_syms}
    problems = []
    for o in ours:
        if not o.version.startswith("IBVERBS_"):
            problems.append(f"outside the IBVERBS_* nodes: {o}")
        elif (o.name, o.version) not in known:
            problems.append(f"not exported by the system library: {o}")
    return problems


def report_hidden(sys_syms, ours):
    """The 2006 ABI: printed, never a failure."""
    mine = {(o.name, o.version) for o in ours if o.hidden}
    hidden = [s for s in sys_syms if s.hidden]
    absent = sorted(f"{s.name}@{s.version}" for s in hidden if (s.name, s.version) not in mine)
    if not absent:
        print(f"all {len(hidden)} hidden compatibility symbols are exported too")
        return
    print(f"known omission: {len(absent)} of the system's {len(hidden)} hidden compatibility "
          "symbols (the 2006 ABI, for binaries built before rdma-core 1.1) are not exported:")
    for i in range(0, len(absent), 3):
        print("    " + "".join(f"{a:<36}" for a in absent[i:i + 3]).rstrip())


def main():
    if len(sys.argv) not in (2, 3):
        sys.exit(__doc__.split("\n\n")[1])
    ours_path = sys.argv[1]
    sys_path = sys.argv[2] if len(sys.argv) == 3 else SYSTEM
    if not os.path.exists(sys_path):
        print(f"abi: SKIP: no system library {sys_path} (apt-get install libibverbs1)")
        return 77
    if not os.path.exists(ours_path):
        print(f"abi: FAIL: {ours_path} does not exist (meson compile -C build)")
        return 1
    sys_syms, ours = exports(sys_path), exports(ours_path)
    defaults = [s for s in sys_syms if not s.hidden]
    print(f"system {sys_path}: {len(defaults)} default-version symbols "
          f"(version nodes included), {len(sys_syms) - len(defaults)} hidden")
    print(f"ours   {ours_path}: {len(ours)} symbols")
    problems = check_defaults(sys_syms, ours) + check_extras(sys_syms, ours)
    name = soname(ours_path)
    if name != "libibverbs.so.1":
        problems.append(f"soname is {name}, want libibverbs.so.1")
    report_hidden(sys_syms, ours)
    for p in problems:
        print("FAIL: " + p)
    print(f"abi: {'FAIL' if problems else 'ok'}: {len(problems)} problems")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
