# shellcheck shell=bash
# shellcheck disable=SC2154  # demo_dev, demo_addr, demo_rundir, ...: from demo_hosts.sh
# Sourced by tools/demo: one scenario of the tour → one line of the report.
#
# demo_perf_row runs an odpemu-perf pair (server on host b, client on host a with --json)
# and turns the client's JSON into a line: throughput or latency, the responder's page
# faults (with the daemon's fault latency, p50/p99 bucket bounds) and RNR NAKs sent, and
# "data verified" when --verify checked every byte. demo_stale_row runs the
# stale-registration scenario (odpemu-perf --regcache), demo_verbs_row an unmodified
# ibv_rc_pingpong, demo_brick_row the storage brick. Lines go to demo_rows, what went wrong
# to demo_failures (printed under the table).

demo_rows=()
demo_failures=()
demo_row_fmt=' %-2s %-42s %-32s %-27s %9s  %s\n'

demo_row() {
  # shellcheck disable=SC2059
  demo_rows+=("$(printf "$demo_row_fmt" "$@")")
}

demo_report_head() {
  # shellcheck disable=SC2059
  printf "$demo_row_fmt" '#' scenario result faults 'RNR NAKs' check
}

# demo_fail <n> <what> <file...>: remember why line n failed, with the files' tails.
demo_fail() {
  local n=$1 what=$2 f text; shift 2
  text="line $n: $what"
  for f in "$@"; do
    [ -s "$f" ] && text+=$'\n'"  --- ${f##*/} (tail) ---"$'\n'"$(tail -n 15 "$f" | sed 's/^/  /')"
  done
  demo_failures+=("$text")
}

# demo_json_fields <json>: result, responder page faults, RNR NAKs sent, verdict, pages
# prefetched — tab-separated. Fails when the document is not odpemu-perf's.
demo_json_fields() {
  python3 - "$1" <<'EOF'
import json, sys
d = json.load(open(sys.argv[1]))
r, odp = d["results"][0], d["odp"]["remote"]
if "t_median_us" in r:
    res = "%.1f / %.1f us (median/p99)" % (r["t_median_us"], r["t_p99_us"])
else:
    res = "%.0f MB/s (%.2f Gb/s)" % (r["bw_avg_mbps"], r["bw_avg_gbps"])
v = r["verify"]
if d["ok"] and v["enabled"] and v["ok"] and v["checked"] > 0:
    verdict = "data verified"
else:
    verdict = "DATA NOT VERIFIED" + (": " + v["error"] if v["error"] else "")
faults = str(odp["page_faults"])
if odp["page_faults"]:	# the daemon's fault latency, request to answer delivered
    faults += ", p50/p99 %.2g/%.2g us" % (odp["fault_latency_ns_p50"] / 1e3,
                                         odp["fault_latency_ns_p99"] / 1e3)
print("\t".join([res, faults, str(odp["rnr_naks_sent"]), verdict,
                 str(odp["page_prefetch"])]))
EOF
}

# demo_perf_server <base> <perf> <test>: an odpemu-perf server on host b, output in
# base.server; returns once it waits for a client (pid in demo_last_pid), or stops it and
# fails when it does not within 10 s.
demo_perf_server() {
  local base=$1 perf=$2 test=$3 pid k
  demo_spawn 1 90 "$base.server" "$base.server" \
    "$perf" "$test" -d "${demo_dev[1]}" -p "$demo_perf_port"
  pid=$demo_last_pid
  for ((k = 0; k < 100; k++)); do		# up to 10 s
    grep -qs 'waiting for a client' "$base.server" && return 0
    demo_alive "$pid" || break
    sleep 0.1
  done
  demo_stop 2 "$pid"
  return 1
}

# demo_perf_row <n> <label> <perf> <test> <args...>: run the pair, add line n.
# demo_prefetched is set to the responder's prefetched pages of the run.
demo_perf_row() {
  local n=$1 label=$2 perf=$3 test=$4; shift 4
  local base="$demo_rundir/run$n" spid cpid rc fields res faults rnr verdict
  demo_say "  $n. $label: odpemu-perf $test $*"
  if ! demo_perf_server "$base" "$perf" "$test"; then
    demo_row "$n" "$label" "FAILED (no server)" - - -
    demo_fail "$n" "the odpemu-perf server did not come up" "$base.server"
    return 1
  fi
  spid=$demo_last_pid
  demo_spawn 0 60 "$base.json" "$base.client" "$perf" "$test" "$@" --json \
    -d "${demo_dev[0]}" -p "$demo_perf_port" "${demo_addr[1]}"
  cpid=$demo_last_pid
  demo_wait "$cpid"
  rc=$?
  # The server ends with the run; after a failed client it may still wait for one.
  demo_end "$spid" "$([ "$rc" -eq 0 ] && echo 10 || echo 1)"
  if [ "$rc" -ne 0 ] || ! fields=$(demo_json_fields "$base.json" 2>"$base.parse"); then
    [ "$rc" -eq 124 ] && rc="$rc, timed out"
    demo_row "$n" "$label" "FAILED (exit $rc)" - - -
    demo_fail "$n" "odpemu-perf client exited $rc" "$base.client" "$base.json" "$base.parse" \
      "$base.server" "$demo_rundir/${demo_dev[0]}.stderr" "$demo_rundir/${demo_dev[1]}.stderr"
    return 1
  fi
  # shellcheck disable=SC2034  # demo_prefetched: tools/demo prints it
  IFS=$'\t' read -r res faults rnr verdict demo_prefetched <<<"$fields"
  demo_row "$n" "$label" "$res" "$faults" "$rnr" "$verdict"
  [ "$verdict" = "data verified" ] || { demo_fail "$n" "$verdict" "$base.server"; return 1; }
}

# demo_regcache_fields <json>: stale messages, messages checked and "ok" or "NOT VERIFIED",
# tab-separated. Fails when the document is not odpemu-perf's.
demo_regcache_fields() {
  python3 - "$1" <<'EOF'
import json, sys
d = json.load(open(sys.argv[1]))
v = d["results"][0]["verify"]
ok = d["ok"] and v["enabled"] and v["ok"] and v["checked"] > 0
print("\t".join([str(v["stale"]), str(v["checked"]), "ok" if ok else "NOT VERIFIED"]))
EOF
}

# demo_regcache_run <n> <perf> <backend> <messages>: one odpemu-perf pair whose requester
# takes its registration from the reference cache (odpemu/regcache.h) over <backend>.
# Sets demo_stale, demo_checked and demo_verdict (demo_regcache_fields).
demo_regcache_run() {
  local n=$1 perf=$2 backend=$3 msgs=$4
  local base="$demo_rundir/run$n-$backend" spid rc fields
  if ! demo_perf_server "$base" "$perf" write; then
    demo_fail "$n" "the odpemu-perf server did not come up" "$base.server"
    return 1
  fi
  spid=$demo_last_pid
  demo_spawn 0 60 "$base.json" "$base.client" "$perf" write --regcache "$backend" --verify \
    -t 1 -n "$msgs" --json -d "${demo_dev[0]}" -p "$demo_perf_port" "${demo_addr[1]}"
  demo_wait "$demo_last_pid"
  rc=$?
  demo_end "$spid" "$([ "$rc" -eq 0 ] && echo 10 || echo 1)"
  if [ "$rc" -ne 0 ] || ! fields=$(demo_regcache_fields "$base.json" 2>"$base.parse"); then
    demo_fail "$n" "odpemu-perf --regcache $backend exited $rc" "$base.client" "$base.json" \
      "$base.parse" "$base.server"
    return 1
  fi
  IFS=$'\t' read -r demo_stale demo_checked demo_verdict <<<"$fields"
}

# demo_stale_row <n> <label> <odpemu-perf> <messages>: the stale-registration scenario.
# Before every message the requester frees its buffer and maps new memory at the same
# address, then takes the buffer's registration from the reference cache. With pinned MRs
# and nothing telling the cache (--regcache none) it hands back the old MR, which still
# holds the freed pages: the responder receives stale bytes (the registration-cache bug;
# the daemon raises MR_DECOHERENCE). With one ODP MR (--regcache odp) the NIC follows the
# new mapping: every message carries its own bytes.
demo_stale_row() {
  local n=$1 label=$2 perf=$3 msgs=$4 pinned odp
  demo_say "  $n. $label: odpemu-perf write --regcache none|odp --verify -t 1 -n $msgs"
  if ! demo_regcache_run "$n" "$perf" none "$msgs"; then
    demo_row "$n" "$label" "FAILED (pinned cache)" - - -
    return 1
  fi
  pinned=("$demo_stale" "$demo_checked" "$demo_verdict")
  if ! demo_regcache_run "$n" "$perf" odp "$msgs"; then
    demo_row "$n" "$label" "FAILED (ODP)" - - -
    return 1
  fi
  odp=("$demo_stale" "$demo_checked" "$demo_verdict")
  if [ "${pinned[2]}${odp[2]}" = okok ] && [ "${pinned[0]}" -gt 0 ] && [ "${odp[0]}" -eq 0 ]; then
    demo_row "$n" "$label" "pinned ${pinned[0]}/${pinned[1]} stale, ODP ${odp[0]}/${odp[1]}" \
      - - "data verified"
    return 0
  fi
  demo_row "$n" "$label" "pinned ${pinned[0]}/${pinned[1]}, ODP ${odp[0]}/${odp[1]} stale" \
    - - "UNEXPECTED"
  demo_fail "$n" "want stale messages with the pinned cache (${pinned[2]}) and none with" \
    "ODP (${odp[2]})"
  return 1
}

# demo_verbs_row <n> <label> <odpemu-run> <odpemu-ctl> <pingpong args...>: an unmodified
# Debian program, ibv_rc_pingpong, through odpemu's drop-in libibverbs (odpemu-run). It
# verifies no data itself, so the check says "ran unmodified": both sides exited 0. The
# faults column is the responder's page faults over the run (odpemu-ctl stat on host b).
demo_verbs_row() {
  local n=$1 label=$2 run=$3 ctl=$4; shift 4
  local base="$demo_rundir/run$n" spid cpid k rc=1 before after iters
  demo_say "  $n. $label: odpemu-run ibv_rc_pingpong $*"
  if ! command -v ibv_rc_pingpong >/dev/null; then
    demo_row "$n" "$label" "FAILED (no ibv_rc_pingpong)" - - -
    demo_fail "$n" "ibv_rc_pingpong is missing: apt-get install ibverbs-utils"
    return 1
  fi
  before=$(demo_faults "$ctl" "${demo_dev[1]}")
  demo_spawn 1 60 "$base.server" "$base.server" "$run" --rundir "$demo_rundir" \
    ibv_rc_pingpong -d "${demo_dev[1]}" -p "$demo_perf_port" "$@"
  spid=$demo_last_pid
  for ((k = 0; k < 20 && rc != 0; k++)); do	# the server listens soon: retry a while
    sleep 0.2
    demo_spawn 0 60 "$base.client" "$base.client" "$run" --rundir "$demo_rundir" \
      ibv_rc_pingpong -d "${demo_dev[0]}" -p "$demo_perf_port" "$@" "${demo_addr[1]}"
    cpid=$demo_last_pid
    demo_wait "$cpid"
    rc=$?
    grep -qs "Couldn't connect" "$base.client" || break
  done
  demo_end "$spid" 10
  after=$(demo_faults "$ctl" "${demo_dev[1]}")
  iters=$(grep -o '[0-9.]* usec/iter' "$base.client" | head -n 1)
  if [ "$rc" -ne 0 ] || [ -z "$iters" ]; then
    demo_row "$n" "$label" "FAILED (exit $rc)" - - -
    demo_fail "$n" "ibv_rc_pingpong exited $rc" "$base.client" "$base.server"
    return 1
  fi
  demo_row "$n" "$label" "${iters% usec/iter} us per round trip" "$((after - before))" - \
    "ran unmodified"
}

# demo_faults <odpemu-ctl> <device>: its page_faults counter (0 when unreadable).
demo_faults() {
  "$1" stat -d "$2" 2>/dev/null | awk '$1 == "page_faults" { print $2; found = 1 }
    END { if (!found) print 0 }'
}

# demo_brick_row <n> <label> <odpemu-run> <brick> <brick-ctl>: odpemu-brick (docs/brick.md)
# on host b with a 256 MiB file and a 16 MiB budget; host a puts a 64 MiB file into 32
# blocks (RDMA WRITE, persistent FLUSH), so most blocks go to the file tier; then the
# brick is killed with SIGKILL, started again on the same file, and host a gets the 64 MiB
# back: the check is a byte-for-byte comparison. Faults: the brick's device's page faults
# and invalidations, from its STAT.
demo_brick_row() {
  local n=$1 label=$2 run=$3 brick=$4 ctl=$5
  local base="$demo_rundir/run$n" img="$demo_rundir/brick.img" bpid k rc onfile faults inval
  local bargs=(--file "$img" --size 256M --mem 16M -a "${demo_addr[1]}" -p "$demo_perf_port")
  demo_say "  $n. $label: odpemu-brick ${bargs[*]}"
  head -c 64M /dev/urandom >"$base.in"
  demo_brick_up() {
    demo_spawn 1 0 "$base.brick$1" "$base.brick$1" "$run" --rundir "$demo_rundir" \
      "$brick" "${bargs[@]}"
    bpid=$demo_last_pid
    for ((k = 0; k < 100; k++)); do		# up to 10 s
      grep -qs 'listening on' "$base.brick$1" && return 0
      demo_alive "$bpid" || break
      sleep 0.1
    done
    return 1
  }
  demo_brick_ctl() {	# <out> <ctl args...>
    local out=$1; shift
    demo_spawn 0 60 "$out" "$out" "$run" --rundir "$demo_rundir" "$ctl" \
      -a "${demo_addr[1]}" -p "$demo_perf_port" "$@"
    demo_wait "$demo_last_pid"
  }
  rc=0
  if ! demo_brick_up 1; then
    rc=1; demo_fail "$n" "odpemu-brick did not start" "$base.brick1"
  elif ! demo_brick_ctl "$base.put" put 0 "$base.in" ||
       ! demo_brick_ctl "$base.stat" stat; then
    rc=1; demo_fail "$n" "odpemu-brick-ctl put or stat failed" "$base.put" "$base.stat" \
      "$base.brick1"
  fi
  onfile=$(awk '$1 == "blocks_on_file" { print $2 }' "$base.stat" 2>/dev/null)
  faults=$(awk '$1 == "page_faults" { print $2 }' "$base.stat" 2>/dev/null)
  inval=$(awk '$1 == "invalidations" { print $2 }' "$base.stat" 2>/dev/null)
  # kill -9: the process that listens on the brick's file (under odpemu-run and ip). The
  # block's stderr swallows bash's "Killed" notice: the kill is the scenario, not an error.
  { pkill -KILL -f -- "--file $img"; demo_stop 2 "$bpid"; } 2>/dev/null
  if [ "$rc" -eq 0 ] && ! demo_brick_up 2; then
    rc=1; demo_fail "$n" "odpemu-brick did not start again after kill -9" "$base.brick2"
  fi
  if [ "$rc" -eq 0 ] && { ! demo_brick_ctl "$base.get" get 0 64M "$base.out" ||
                          ! cmp -s "$base.in" "$base.out"; }; then
    rc=1; demo_fail "$n" "the 64 MiB did not read back after kill -9" "$base.get" \
      "$base.brick2"
  fi
  demo_stop 3 "$bpid"
  rm -f "$base.in" "$base.out" "$img" "$img.meta"
  if [ "$rc" -ne 0 ]; then
    demo_row "$n" "$label" "FAILED" - - -
    return 1
  fi
  demo_row "$n" "$label" "${onfile:-?} of 32 blocks on file" \
    "${faults:-?}, ${inval:-?} invalidations" - "survived kill -9, verified"
}
