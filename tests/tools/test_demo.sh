#!/usr/bin/env bash
# demo-quick: `tools/demo --quick`, on the binaries of the build under test (or, with no
# build root, an installed odpemu-demo on the programs installed beside it), prints the
# report and exits 0: eight lines, each "data verified" (the unmodified ibv_rc_pingpong
# line: "ran unmodified"; the storage brick's: "survived kill -9, verified", with blocks on
# file, page faults and invalidations); the cold ODP lines and the unmodified
# ibv_rc_pingpong -o line page-faulted (and the rnr one sent RNR NAKs); the stale-cache
# line found stale messages with the pinned cache and none with ODP; its run directory
# and namespaces are gone afterwards.
# usage: test_demo.sh <tools/demo> <meson build root>     exit 0 pass, 1 fail, 77 skip
#        test_demo.sh <installed odpemu-demo>
set -uo pipefail
demo=$1 build=${2:-}
command -v python3 >/dev/null || { echo "demo-quick: SKIP (the demo reads JSON with python3)"; exit 77; }
out=$(mktemp)
trap 'rm -f "$out"' EXIT
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }

# --build: the binaries meson just built; the test installs and builds nothing
if [ -n "$build" ]; then
  timeout 240 "$demo" --quick --build "$build" >"$out" 2>&1
else
  timeout 240 "$demo" --quick >"$out" 2>&1
fi
rc=$?
cat "$out"
echo "----"
[ "$rc" -eq 0 ] || fail "tools/demo --quick exited $rc"

# Report lines: " N  scenario  result  faults  RNR NAKs  check", columns 2+ spaces apart.
field() { sed -n "s/^ $1  /$1  /p" "$out" | awk -F '   *' -v k="$2" '{ print $k }'; }
cold=0
for n in 1 2 3 4 5 6 7 8; do
  scenario=$(field "$n" 2)
  if [ -z "$scenario" ]; then fail "report line $n is missing"; continue; fi
  want="data verified"
  case $scenario in
    *"ibv_rc_pingpong"*) want="ran unmodified" ;;
    *"storage brick"*) want="survived kill -9, verified" ;;
  esac
  [ "$(field "$n" 6)" = "$want" ] || fail "line $n ($scenario) is not '$want'"
  case $scenario in
    *"prefetched"*)
      faults=$(field "$n" 4)
      [ "$faults" = 0 ] || fail "line $n ($scenario): page faults '$faults', want 0"
      ;;
    *"cold ODP"*|*"ibv_rc_pingpong -o"*)
      cold=$((cold + 1))
      faults=$(field "$n" 4)
      [[ $faults =~ ^[1-9][0-9]*($|,\ p50/p99\ [0-9.e+]+/[0-9.e+]+\ us$) ]] ||
        fail "line $n ($scenario): page faults '$faults', want > 0"
      case $scenario in
        *"cold ODP"*) [[ $faults == *p50/p99* ]] ||
          fail "line $n ($scenario): no fault latency in '$faults'" ;;
      esac
      ;;
  esac
  case $scenario in
    *"storage brick"*)
      [[ $(field "$n" 3) =~ ^[1-9][0-9]*\ of\ 32\ blocks\ on\ file$ ]] ||
        fail "line $n ($scenario): '$(field "$n" 3)', want blocks on file"
      [[ $(field "$n" 4) =~ ^[1-9][0-9]*,\ [1-9][0-9]*\ invalidations$ ]] ||
        fail "line $n ($scenario): '$(field "$n" 4)', want page faults and invalidations"
      ;;
    *"stale registration cache"*)
      [[ $(field "$n" 3) =~ ^pinned\ [1-9][0-9]*/([0-9]+)\ stale,\ ODP\ 0/([0-9]+)$ ]] &&
        [ "${BASH_REMATCH[1]}" = "${BASH_REMATCH[2]}" ] ||
        fail "line $n ($scenario): '$(field "$n" 3)', want stale messages only when pinned"
      ;;
    *"cold ODP, rnr"*)
      rnr=$(field "$n" 5)
      [[ $rnr =~ ^[1-9][0-9]*$ ]] ||
        fail "line $n ($scenario): RNR NAKs '$rnr', want > 0"
      ;;
  esac
done
[ "$cold" -eq 3 ] || fail "$cold page-faulting lines (stall, rnr, ibv_rc_pingpong -o), want 3"

# torn down: the run directory it named, and (unless another demo runs now) the namespaces
rundir=$(grep -o '/tmp/odpemu-demo-[A-Za-z0-9]*' "$out" | head -n 1)
[ -n "$rundir" ] && [ -e "$rundir" ] && fail "the run directory $rundir is still there"
if [ "$(id -u)" -eq 0 ] && flock -n /run/lock/odpemu-demo.lock true 2>/dev/null &&
   ip netns list 2>/dev/null | grep -q '^demo-h'; then
  fail "namespaces demo-h1/demo-h2 are still there"
fi

if [ "$failures" -gt 0 ]; then
  echo "demo-quick: $failures failed"
  exit 1
fi
echo "demo-quick: OK"
