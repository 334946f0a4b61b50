"""profiles_table.py — docs/matrix.md's table of fault profiles, from tools/matrix/profiles.toml.

    /usr/bin/python3 profiles_table.py PROFILES_TOML DOC [--write]

The table sits between the lines '<!-- profiles table begin -->' and '<!-- profiles table
end -->' of DOC. Without --write: exit 1 (and the table it should be) when DOC's differs
from the file's, so the documentation cannot drift from the profiles installed; with
--write: rewrite it."""
import shlex
import sys
import tomllib

BEGIN, END = "<!-- profiles table begin -->", "<!-- profiles table end -->"


def table(path):
    with open(path, "rb") as f:
        doc = tomllib.load(f)
    rows = ["| profile | odpemud flags | what it models |", "|---|---|---|"]
    for name, p in doc.items():
        flags = shlex.join(p.get("flags", [])) or "(none)"
        rows.append(f"| `{name}` | `{flags}` | {p.get('description', '')} |")
    return "\n".join(rows)


def main(toml, doc, write):
    text = open(doc).read()
    if text.count(BEGIN) != 1 or text.count(END) != 1:
        sys.exit(f"{doc}: want one '{BEGIN}' and one '{END}' line")
    head, rest = text.split(BEGIN + "\n", 1)
    old, tail = rest.split(END, 1)
    new = table(toml) + "\n"
    if write:
        open(doc, "w").write(head + BEGIN + "\n" + new + END + tail)
        return 0
    if old != new:
        print(f"{doc}: the profiles table differs from {toml}; it should be:\n{new}")
        print("(tests/matrix/profiles_table.py TOML DOC --write rewrites it)")
        return 1
    print(f"{doc}: the profiles table matches {toml}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2], "--write" in sys.argv[3:]))
