#!/usr/bin/env bash
# test_usage.sh MATRIX — odpemu-matrix's usage errors: each exits 2 with one line naming
# the mistake, before any daemon starts; --help and --list-profiles exit 0.
set -uo pipefail
m=$1
fails=0
expect() {	# expect WANT-RC WANT-TEXT ARGS...
  local want=$1 text=$2 out rc
  shift 2
  out=$("$m" "$@" 2>&1)
  rc=$?
  if [ "$rc" -ne "$want" ] || [[ $out != *"$text"* ]]; then
    echo "FAIL: odpemu-matrix $*: exit $rc (want $want), output lacks '$text':"
    echo "$out" | sed 's/^/  | /'
    fails=$((fails + 1))
  else
    echo "ok: odpemu-matrix $* -> $rc"
  fi
}
expect 2 "no command" --profiles baseline
expect 2 "unknown 'frob' (known: baseline, cold" --profiles frob -- true
expect 2 "--personalities: unknown 'cx9'" --personalities cx9 -- true
expect 2 "names one twice" --personalities cx5,cx5 -- true
expect 2 "--seeds" --seeds x -- true
expect 2 "PERSONALITY/PROFILE" --expect-fail cx5 -- true
expect 2 "--keep-all goes with --keep" --keep-all -- true
expect 2 "at least 1" --timeout 0 -- true
expect 2 "unrecognized arguments: --frob" --frob -- true
expect 2 "profiles file /nonexistent: No such file" --profiles-file /nonexistent -- true
bad=$(mktemp)
trap 'rm -f "$bad"' EXIT
printf '[mine]\nflags = "--evict-rate 5"\n' >"$bad"
expect 2 "flags must be a list of strings" --profiles-file "$bad" -- true
printf '[mine]\nflags = ["--seed", "3"]\n' >"$bad"
expect 2 "--seed is the matrix's to set" --profiles-file "$bad" -- true
printf '[mine\n' >"$bad"
expect 2 "not TOML" --profiles-file "$bad" -- true
printf '[mine]\ndescription = "a user profile"\nflags = ["--evict-rate", "50"]\n' >"$bad"
expect 0 "a user profile" --profiles-file "$bad" --list-profiles
expect 0 "usage: odpemu-matrix" --help
expect 0 "evict-storm" --list-profiles
# a user's own profile with a flag the daemon refuses: --check-profiles says which, exit 1
printf '[typo]\nflags = ["--evict-rate", "fast"]\n' >"$bad"
expect 1 "typo             REFUSED" --profiles-file "$bad" --profiles typo --check-profiles
# Ctrl-C (SIGINT) and SIGTERM mid-matrix: exit 1 within seconds, the cells not started
# dropped, the running ones' commands killed and their hosts (and, as root, namespaces and
# daemons) taken down: nothing of this run is left
interrupt() {	# interrupt SIGNAL
  local sig=$1 out pid rc t0 left
  out=$(mktemp)
  "$m" --personalities cx5,rxe --profiles baseline,cold --seeds 1,2 -j 2 --timeout 300 \
    -- sleep 120 >"$out" 2>&1 &
  pid=$!
  for _ in $(seq 1 100); do	# until a cell's command runs (10 s at most)
    pgrep -f "^sleep 120" >/dev/null && break
    sleep 0.1
  done
  t0=$(date +%s)
  kill -"$sig" "$pid"
  for _ in $(seq 1 300); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
  if kill -0 "$pid" 2>/dev/null; then
    kill -KILL "$pid"
    echo "FAIL: odpemu-matrix still running 30 s after SIG$sig"
    fails=$((fails + 1))
  fi
  wait "$pid"
  rc=$?
  left=$(pgrep -af "^sleep 120|odpemud .*(/run/odpemu-cluster/mx|odpemu-matrix-)" || true)
  if [ "$rc" -ne 1 ] || ! grep -q "interrupted" "$out" || [ -n "$left" ]; then
    echo "FAIL: SIG$sig: exit $rc (want 1) after $(( $(date +%s) - t0 )) s, left: ${left:-nothing}"
    sed 's/^/  | /' "$out"
    fails=$((fails + 1))
  else
    echo "ok: SIG$sig mid-matrix -> 1 after $(( $(date +%s) - t0 )) s, nothing left"
  fi
  rm -f "$out"
}
interrupt INT
interrupt TERM
[ "$fails" -eq 0 ] || { echo "matrix-usage: $fails FAILED"; exit 1; }
echo "matrix-usage: ok"
