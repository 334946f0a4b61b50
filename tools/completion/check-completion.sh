#!/usr/bin/env bash
# shellcheck source-path=SCRIPTDIR
# check-completion.sh — the bash completions of tools/completion against the programs
# (meson test completion).
#
# usage: check-completion.sh COMPLETION_DIR ODPEMU_CTL ODPEMU_PERF ODPEMUD
#
# Sources each file as bash would, and completes command lines through the function it
# registered with `complete`: commands and tests by prefix, every long option each --help
# prints (so the completions cannot fall behind the option parsers), the words options take,
# and device names from a daemon started here in a run directory of its own.
set -uo pipefail

dir=$1 ctl=$2 perf=$3 odpemud=$4
failures=0 checks=0

# shellcheck source=odpemu-ctl
source "$dir/odpemu-ctl" || exit 1
# shellcheck source=odpemu-perf
source "$dir/odpemu-perf" || exit 1

# complete_line PROGRAM WORD...: what the completion offers for the last WORD (may be ''),
# one per line, sorted. PROGRAM is COMP_WORDS[0], as bash passes it.
complete_line() {
  local fn
  fn=$(complete -p "${1##*/}" 2>/dev/null | sed -n 's/.*-F \([^ ]*\).*/\1/p')
  [ -n "$fn" ] || { echo "no completion registered for ${1##*/}" >&2; return 1; }
  COMP_WORDS=("$@")
  COMP_CWORD=$(($# - 1))
  COMP_LINE="$*"
  COMP_POINT=${#COMP_LINE}
  COMPREPLY=()
  "$fn" "${1##*/}" "${COMP_WORDS[COMP_CWORD]}" "${COMP_WORDS[COMP_CWORD - 1]}"
  printf '%s\n' "${COMPREPLY[@]}" | sort -u
}

# expect_exactly WANT WORD...: the completion is exactly WANT (newline-separated).
expect_exactly() {
  local want=$1 got; shift
  checks=$((checks + 1))
  got=$(complete_line "$@")
  if [ "$got" != "$want" ]; then
    echo "FAIL: '${*##*/}' completes to '${got//$'\n'/ }', want '${want//$'\n'/ }'"
    failures=$((failures + 1))
  fi
}

# expect_all WANTED WORD...: every word of WANTED is among the completions.
expect_all() {
  local wanted=$1 got w; shift
  got=$(complete_line "$@")
  for w in $wanted; do
    checks=$((checks + 1))
    if ! grep -qxF -- "$w" <<<"$got"; then
      echo "FAIL: '${*##*/}' does not offer '$w'"
      failures=$((failures + 1))
    fi
  done
}

# long_options: the --options of the help text on stdin (upper case is a placeholder).
long_options() {
  grep -oE -- '--[a-z][a-z0-9]*(-[a-z0-9]+)*' | sort -u
}

# listed: the first word of the help's '  word  text' lines (commands, knobs).
listed() {
  awk '/^  [a-z][a-z-]*  / { print $1 }'
}

# ---- odpemu-ctl
expect_exactly stat "$ctl" st
expect_exactly inject "$ctl" inj
commands=$("$ctl" --help | listed)
expect_all "$commands" "$ctl" ''
for cmd in $commands; do
  expect_all "$("$ctl" "$cmd" --help | long_options)" "$ctl" "$cmd" --
done
knobs=$("$ctl" inject --help | listed)
expect_all "$knobs" "$ctl" inject ''
# shellcheck disable=SC2086  # one --KNOB per knob
expect_all "$(printf -- '--%s\n' $knobs)" "$ctl" inject --
expect_exactly $'rnr\nstall' "$ctl" inject fault-policy ''
expect_exactly qp "$ctl" stat q

# ---- odpemu-perf
expect_exactly write "$perf" wr
expect_all "$("$perf" --help | long_options)" "$perf" write --
expect_exactly $'explicit\nimplicit\noff' "$perf" write --odp ''
expect_exactly $'lease\nnone\nnotify\nodp' "$perf" write --regcache ''

# ---- device names, from a running daemon (its own run directory and UDP port)
ODPEMU_RUNDIR=$(mktemp -d /tmp/odpemu-completion-XXXXXX) || exit 1
export ODPEMU_RUNDIR
daemon=0
cleanup() {
  [ "$daemon" -gt 0 ] && kill "$daemon" 2>/dev/null && wait "$daemon" 2>/dev/null
  rm -rf "$ODPEMU_RUNDIR"
}
trap cleanup EXIT
trap 'exit 143' TERM INT	# meson's timeout: the daemon goes too
for ((try = 0; try < 5 && daemon == 0; try++)); do
  "$odpemud" --foreground --log-level warn --name cmpl0 --addr 127.0.0.1 \
    --port $((20000 + RANDOM % 40000)) --rundir "$ODPEMU_RUNDIR" 2>>"$ODPEMU_RUNDIR/log" &
  daemon=$!
  for ((k = 0; k < 50; k++)); do		# up to 5 s
    [ -S "$ODPEMU_RUNDIR/cmpl0.sock" ] && break
    kill -0 "$daemon" 2>/dev/null || { wait "$daemon"; daemon=0; break; }
    sleep 0.1
  done
done
if [ ! -S "$ODPEMU_RUNDIR/cmpl0.sock" ]; then
  echo "FAIL: odpemud did not start:"; cat "$ODPEMU_RUNDIR/log"
  failures=$((failures + 1))
else
  expect_exactly cmpl0 "$ctl" stat -d ''
  expect_exactly cmpl0 "$ctl" inject --device cm
  expect_exactly cmpl0 "$perf" write -d c
fi

echo "$checks completion checks; $failures failure(s)"
[ "$failures" -eq 0 ]
