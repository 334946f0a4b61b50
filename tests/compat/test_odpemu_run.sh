#!/usr/bin/env bash
# odpemu-run: the environment it gives CMD (LD_LIBRARY_PATH first entry, no empty entry;
# ODPEMU_RUNDIR from --rundir, the environment, or lib/device.c's default), CMD's exit
# status and options passed through, and exit 2 with a message for each usage error.
# usage: test_odpemu_run.sh <build-tree odpemu-run> <installed copy> <library dir>
#        <libdir, relative to the prefix>            exit 0 pass, 1 fail
set -uo pipefail
run=$1 installed=$2 libdir=$(cd "$3" && pwd) inst_libdir=$4
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }

# expect <exit code> <text> <command...>: the exit code, and text in stdout+stderr
expect() {
  local code=$1 text=$2 out rc; shift 2
  out=$("$@" 2>&1); rc=$?
  [ "$rc" -eq "$code" ] || fail "$*: exit $rc, want $code; output: $out"
  [[ $out == *"$text"* ]] || fail "$*: output lacks '$text': $out"
}

# var <name> <command...>: the value of variable name in the environment CMD gets
var() {
  local name=$1; shift
  "$@" env | sed -n "s/^$name=//p"
}

clean=(env -u ODPEMU_RUNDIR -u LD_LIBRARY_PATH)

expect 0 "usage: odpemu-run" "$run" --help
expect 0 "--rundir DIR" "$run" -h
expect 0 "--sysfs" "$run" --help
expect 2 "no command given" "$run"
expect 2 "unknown option '--bogus'" "$run" --bogus true
expect 2 "--rundir needs a directory" "$run" --rundir
expect 2 "no libibverbs.so.1 in /nonexistent" "$run" --libdir /nonexistent true
expect 7 "" "$run" sh -c 'exit 7'
# options end at CMD: CMD's own options are its own
# shellcheck disable=SC2016 # $1 is the inner shell's
expect 0 "--rundir" "$run" sh -c 'echo "$1"' sh --rundir
expect 0 "" "$run" -- true

got=$(var LD_LIBRARY_PATH "${clean[@]}" "$run")
[ "$got" = "$libdir" ] || fail "LD_LIBRARY_PATH unset before: got '$got', want '$libdir'"
got=$(var LD_LIBRARY_PATH env LD_LIBRARY_PATH=/x "$run")
[ "$got" = "$libdir:/x" ] || fail "LD_LIBRARY_PATH=/x before: got '$got', want '$libdir:/x'"
got=$(var LD_LIBRARY_PATH "${clean[@]}" "$run" --libdir "$3")
[ "$got" = "$libdir" ] || fail "--libdir $3: got '$got', want the absolute '$libdir'"

got=$(var ODPEMU_RUNDIR env ODPEMU_RUNDIR=/x "$run")
[ "$got" = /x ] || fail "ODPEMU_RUNDIR=/x: got '$got'"
got=$(var ODPEMU_RUNDIR env ODPEMU_RUNDIR=/x "$run" --rundir /y)
[ "$got" = /y ] || fail "ODPEMU_RUNDIR=/x --rundir /y: got '$got', want /y"
got=$(var ODPEMU_RUNDIR "${clean[@]}" "$run" --rundir=/z)
[ "$got" = /z ] || fail "--rundir=/z: got '$got'"
got=$(cd / && var ODPEMU_RUNDIR "${clean[@]}" "$run" --rundir tmp/h1)
[ "$got" = /tmp/h1 ] || fail "--rundir tmp/h1 in /: got '$got', want /tmp/h1"
if [ "$(id -u)" -eq 0 ]; then
  want=/run/odpemu
  got=$(var ODPEMU_RUNDIR "${clean[@]}" XDG_RUNTIME_DIR=/xdg "$run")
else
  want=/xdg/odpemu
  got=$(var ODPEMU_RUNDIR "${clean[@]}" XDG_RUNTIME_DIR=/xdg "$run")
  [ "$got" = "$want" ] || fail "default run directory: got '$got', want '$want'"
  want=/tmp/odpemu-$(id -u)
  got=$(var ODPEMU_RUNDIR "${clean[@]}" -u XDG_RUNTIME_DIR "$run")
fi
[ "$got" = "$want" ] || fail "default run directory: got '$got', want '$want'"

# The installed copy looks for the library relative to its own directory: $libdir/odpemu
# of whichever prefix it sits in (a tree of its own here: bin/ and the library's place).
tree=$(mktemp -d)
mkdir -p "$tree/bin" "$tree/$inst_libdir/odpemu"
cp "$installed" "$tree/bin/odpemu-run" && : >"$tree/$inst_libdir/odpemu/libibverbs.so.1"
got=$(var LD_LIBRARY_PATH "${clean[@]}" "$tree/bin/odpemu-run")
[ "$got" = "$tree/$inst_libdir/odpemu" ] ||
  fail "the installed copy uses '$got', want $tree/$inst_libdir/odpemu (beside itself)"
# --sysfs's helper is looked for beside the drop-ins too; missing, nothing runs
expect 2 "--sysfs needs its helper $tree/$inst_libdir/odpemu/odpemu-sysfs" \
  "${clean[@]}" "$tree/bin/odpemu-run" --sysfs echo ran
rm -rf "$tree"
[ -x "$installed" ] || fail "$installed is not executable"

[ "$failures" -eq 0 ] && echo "odpemu-run: ok" && exit 0
echo "odpemu-run: $failures failed"; exit 1
