#!/usr/bin/env bash
# compat-bench — what the drop-in libibverbs costs: perftest through it against odpemu's
# own odpemu-perf on the same two test hosts and daemons, in one run, interleaved.
#   ib_write_bw -s 65536  vs  odpemu-perf write --bw -s 65536   (MB/s, 10^6 bytes)
#   ib_write_lat -s 8     vs  odpemu-perf write --lat -s 8      (median half round trip)
#   ib_write_bw --odp -s 65536 (cold ODP pages on both sides), with its page faults
# Prints each round and the medians with their ratios. A benchmark: it never fails on time.
# usage: tests/bench/compat-bench.sh [build dir] [rounds]      (as root: network namespaces)
set -uo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
build=$(cd "${1:-$top/build}" && pwd) || exit 2
rounds=${2:-5}
# shellcheck source=../../tools/lib/demo_hosts.sh
source "$top/tools/lib/demo_hosts.sh"
run=$build/tools/odpemu-run perf=$build/tools/odpemu-perf ctl=$build/tools/odpemu-ctl
n_bw=5000 n_lat=5000

trap 'demo_teardown' EXIT
demo_hosts_up >/dev/null || exit 1
demo_daemons_up "$build/emu/odpemud" >/dev/null || exit 1

# pair <out> <server cmd...> -- <client cmd...>: server on host b, client on host a.
pair() {
  local out=$1 s=() k rc; shift
  while [ "$1" != -- ]; do s+=("$1"); shift; done; shift
  demo_spawn 1 120 "$out.s" "$out.s" "${s[@]}"
  local spid=$demo_last_pid
  for ((k = 0; k < 25; k++)); do
    sleep 0.2
    demo_spawn 0 120 "$out" "$out.err" "$@"
    demo_wait "$demo_last_pid"; rc=$?
    grep -qsiE "couldn't connect|unable to connect|connection refused" "$out" "$out.err" || break
  done
  demo_end "$spid" 10
  return "$rc"
}

faults() { "$ctl" stat -d "$1" 2>/dev/null | awk '$1 == "page_faults" { print $2 }'; }
# perftest's MB is 2^20 bytes; odpemu-perf's 10^6.
pt_bw() { awk '$1 == 65536 && NF >= 5 { printf "%.0f", $4 * 1.048576 }' "$1"; }
pt_lat() { awk '$1 == 8 && NF >= 9 { print $5 }' "$1"; }
op_json() { python3 -c "import json,sys; r=json.load(open(sys.argv[1]))['results'][0]; print(r[sys.argv[2]])" "$1" "$2" 2>/dev/null; }

a=${demo_dev[0]} b=${demo_dev[1]} addr=${demo_addr[1]} port=$demo_perf_port
d=$demo_rundir
declare -a ib_bw op_bw ib_lat op_lat odp_bw odp_f
for ((r = 1; r <= rounds; r++)); do
  pair "$d/ibbw" "$run" --rundir "$d" ib_write_bw -d "$b" -p "$port" -F -s 65536 -n $n_bw -- \
    "$run" --rundir "$d" ib_write_bw -d "$a" -p "$port" -F -s 65536 -n $n_bw "$addr"
  ib_bw+=("$(pt_bw "$d/ibbw")")
  pair "$d/opbw" "$perf" write -d "$b" -p "$port" -- \
    "$perf" write --bw -s 65536 -n $n_bw --json -d "$a" -p "$port" "$addr"
  op_bw+=("$(op_json "$d/opbw" bw_avg_mbps | cut -d. -f1)")
  pair "$d/iblat" "$run" --rundir "$d" ib_write_lat -d "$b" -p "$port" -F -s 8 -n $n_lat -- \
    "$run" --rundir "$d" ib_write_lat -d "$a" -p "$port" -F -s 8 -n $n_lat "$addr"
  ib_lat+=("$(pt_lat "$d/iblat")")
  pair "$d/oplat" "$perf" write -d "$b" -p "$port" -- \
    "$perf" write --lat -s 8 -n $n_lat --json -d "$a" -p "$port" "$addr"
  op_lat+=("$(printf '%.2f' "$(op_json "$d/oplat" t_median_us)")")
  f0=$(faults "$b")
  pair "$d/odp" "$run" --rundir "$d" ib_write_bw -d "$b" -p "$port" -F --odp -s 65536 -n 1000 -- \
    "$run" --rundir "$d" ib_write_bw -d "$a" -p "$port" -F --odp -s 65536 -n 1000 "$addr"
  odp_bw+=("$(pt_bw "$d/odp")")
  odp_f+=("$(( $(faults "$b") - f0 ))")
  printf 'round %d: 64 KiB WRITE MB/s ib_write_bw %s, odpemu-perf %s; 8 B WRITE median us ib_write_lat %s, odpemu-perf %s; ib_write_bw --odp %s MB/s, %s faults\n' \
    "$r" "${ib_bw[-1]}" "${op_bw[-1]}" "${ib_lat[-1]}" "${op_lat[-1]}" "${odp_bw[-1]}" "${odp_f[-1]}"
done

median() { printf '%s\n' "$@" | grep -E '^[0-9.]+$' | sort -g | awk '{ v[NR] = $1 } END { if (NR) print (NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2); else print "nan" }'; }
mib=$(median "${ib_bw[@]}") mop=$(median "${op_bw[@]}")
lib=$(median "${ib_lat[@]}") lop=$(median "${op_lat[@]}")
echo "medians of $rounds rounds ($(nproc) CPUs; hosts: $($demo_netns && echo "namespaces, veth MTU $demo_mtu" || echo "127.0.0.1/127.0.0.2"))"
awk -v a="$mib" -v b="$mop" 'BEGIN { printf "  64 KiB WRITE bandwidth: ib_write_bw %s MB/s, odpemu-perf %s MB/s: drop-in/native %.2f\n", a, b, a / b }'
awk -v a="$lib" -v b="$lop" 'BEGIN { printf "  8 B WRITE latency:      ib_write_lat %s us, odpemu-perf %s us: drop-in - native %+.2f us\n", a, b, a - b }'
echo "  ib_write_bw --odp, cold pages: $(median "${odp_bw[@]}") MB/s, $(median "${odp_f[@]}") page faults on the responder per run"
