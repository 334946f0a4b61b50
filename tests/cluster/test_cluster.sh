#!/usr/bin/env bash
# The virtual cluster (tools/odpemu-cluster) and unmodified Open MPI jobs across it
# (docs/cluster.md): 4 hosts, 8 ranks (2 a host; no shared-memory or TCP transport, so
# every byte crosses odpemu), the MPI test program ring (1 MiB ring, Allreduce, Alltoall,
# buffers freed and allocated again between iterations, every byte checked) over
#  - UCX (pml ucx, rc_verbs + ud_verbs) with pinned registration: passes;
#  - UCX with implicit ODP (UCX_IB_REG_METHODS=odp): the data checks pass, then every rank
#    crashes in uct_ib_md_close at finalize: UCX issue #8735 in Debian's UCX 1.13.1, the
#    first entry of the known-bug catalogue (docs/cluster.md). Expected; if it stops
#    crashing, the test fails saying "fixed upstream" so the catalogue is updated;
#  - libfabric (pml cm, mtl ofi, verbs;ofi_rxm) with FI_VERBS_USE_ODP=1 and without;
# the ODP runs with page faults counted on every host; at link MTU 1500 (active 1024) and
# 9000. Then the cluster tool's own rules: exec, stat --json, hosts, errors, down twice.
# And onesided (MPI_Put/MPI_Get through windows on fresh buffers, checked) over UCX, pinned
# and implicit ODP; Open MPI 4.1.4's one-sided over libfabric needs FI_ATOMIC, which
# verbs;ofi_rxm lacks (docs/cluster.md).
# usage: test_cluster.sh <odpemu-cluster> <ring> <onesided>   exit 0 pass, 1 fail, 77 skip
set -uo pipefail
cluster=$1 ring=$(realpath "$2") onesided=$(realpath "$3")	# meson may name them relative
[ "$(id -u)" -eq 0 ] || { echo "SKIP: the cluster needs root (network namespaces)"; exit 77; }
command -v mpirun >/dev/null || { echo "SKIP: no mpirun (apt-get install openmpi-bin)"; exit 77; }

name=t$(($$ % 100000))
subnet=10.212.$(($$ % 200 + 20))
c=("$cluster" --name "$name")
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
trap '"${c[@]}" down >/dev/null 2>&1' EXIT
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1

# job <what> <seconds> <mpirun args...>: runs $prog (the ring unless set) with $prog_args on
# 8 ranks; sets out and rc.
job() {
  local what=$1 secs=$2 p=${prog:-$ring}; shift 2
  out=$(timeout -k 5 "$secs" mpirun --hostfile "$("${c[@]}" hostfile)" -np 8 \
    --mca plm_rsh_agent "${c[*]} rsh" --mca btl ^vader,tcp,openib,uct \
    --mca oob_tcp_if_include "$subnet.0/24" "$@" "$p" ${prog_args:-} 2>&1)
  rc=$?
  echo "-- $what: exit $rc; $(grep -m1 -E '^(ring|onesided):' <<<"$out" || echo 'no result line')"
}

passed() { grep -qE '^(ring|onesided): 8 ranks.*all data checks passed' <<<"$out"; }

# faults_everywhere: page_faults > 0 on every host since the cluster came up
faults_everywhere() {
  "${c[@]}" stat --json | /usr/bin/python3 -c '
import json, sys
hosts = json.load(sys.stdin)["hosts"]
sys.exit(0 if hosts and all(h["stat"]["devices"][0]["counters"]["page_faults"] > 0
                            for h in hosts) else 1)'
}

# ucx_perftest between h1 and h2: UCP tag_lat and tag_bw over rc_verbs (ud_verbs for the
# wire-up), UCT put_bw (zero-copy) over rc_verbs, 64 KiB; each prints its figures ("Final:").
ucx_perftests() {
  local t port=13337 o srv args
  command -v ucx_perftest >/dev/null || { fail "no ucx_perftest (apt-get install ucx-utils)"; return; }
  for t in tag_lat tag_bw put_bw; do
    port=$((port + 1))
    args=(-p "$port")
    [ "$t" = put_bw ] && args+=(-x rc_verbs -d odp0:1 -D zcopy)	# short puts stop at 64 B
    "${c[@]}" exec h2 env UCX_TLS=rc_verbs,ud_verbs UCX_UD_VERBS_TX_MIN_INLINE=128 timeout 60 ucx_perftest "${args[@]}" \
      >/dev/null 2>&1 &
    srv=$!
    o=""
    for _ in 1 2 3 4 5 6 7 8 9 10; do
      sleep 0.5
      o=$("${c[@]}" exec h1 env UCX_TLS=rc_verbs,ud_verbs UCX_UD_VERBS_TX_MIN_INLINE=128 timeout 60 ucx_perftest \
        "$subnet.2" "${args[@]}" -t "$t" -n 2000 -s 65536 2>&1) && break
    done
    wait "$srv"
    if [[ $o == *"Final:"* && $o != *ERROR* ]]; then
      echo "-- ucx_perftest $t (64 KiB), h1 -> h2: $(grep -m1 'Final:' <<<"$o" | tr -s ' ')"
    else
      fail "ucx_perftest $t: $o"
    fi
  done
}

# UCX_UD_VERBS_TX_MIN_INLINE=128: UCX 1.13's UD wire-up races when its connection request
# does not fit the inline data the QP was given (UCX #10423, #6040: ud_ep.c assertions in
# about one job in seven here); odpemu grants the 64 B asked for, as rxe does, where mlx5
# rounds up. docs/cluster.md, the known-bug catalogue.
# shellcheck disable=SC2054 # the commas are UCX_TLS's
ucx=(--mca pml ucx -x UCX_TLS=rc_verbs,ud_verbs,self -x UCX_UD_VERBS_TX_MIN_INLINE=128)
ofi=(--mca pml cm --mca mtl ofi -x "FI_PROVIDER=verbs;ofi_rxm")

for mtu in 1500 9000; do
  echo "== 4 hosts, MTU $mtu"
  "${c[@]}" up 4 --mtu "$mtu" --subnet "$subnet" >/dev/null || { fail "up 4 --mtu $mtu"; continue; }

  job "UCX, pinned" 180 "${ucx[@]}" -x UCX_IB_REG_METHODS=rcache,direct
  { passed && [ "$rc" -eq 0 ]; } || fail "UCX pinned, MTU $mtu: $out"

  # The one-sided pinned job goes before the implicit-ODP jobs, whose ranks crash at
  # finalize (UCX #8735): twice, run right after that crash, it found 3/4 of one rank's
  # put bytes missing at iteration 6 (not reproduced alone in 40 runs; docs/cluster.md).
  prog=$onesided job "UCX one-sided, pinned" 180 "${ucx[@]}" -x UCX_IB_REG_METHODS=rcache,direct
  { passed && [ "$rc" -eq 0 ]; } || fail "UCX one-sided pinned, MTU $mtu: $out"
  job "UCX, implicit ODP (UCX #8735 expected at finalize)" 180 "${ucx[@]}" \
    -x UCX_IB_REG_METHODS=odp
  passed || fail "UCX implicit ODP, MTU $mtu: data: $out"
  if [ "$rc" -eq 0 ]; then
    fail "UCX #8735 fixed upstream? The implicit-ODP job ended cleanly: update" \
      "docs/cluster.md's catalogue and this test"
  elif ! grep -q 'uct_ib_md_close' <<<"$out"; then
    fail "UCX implicit ODP, MTU $mtu: exit $rc, not UCX #8735's crash: $out"
  fi
  faults_everywhere || fail "UCX implicit ODP, MTU $mtu: a host counted no page fault"

  prog=$onesided job "UCX one-sided, implicit ODP (UCX #8735 expected at finalize)" 180 \
    "${ucx[@]}" -x UCX_IB_REG_METHODS=odp
  passed || fail "UCX one-sided implicit ODP, MTU $mtu: data: $out"
  [ "$rc" -ne 0 ] && grep -q 'uct_ib_md_close' <<<"$out" ||
    fail "UCX one-sided implicit ODP, MTU $mtu: exit $rc, not UCX #8735's crash: $out"

  job "libfabric verbs;ofi_rxm, ODP" 180 "${ofi[@]}" -x FI_VERBS_USE_ODP=1
  { passed && [ "$rc" -eq 0 ]; } || fail "libfabric ODP, MTU $mtu: $out"

  job "libfabric verbs;ofi_rxm, pinned" 180 "${ofi[@]}" -x FI_VERBS_USE_ODP=0
  { passed && [ "$rc" -eq 0 ]; } || fail "libfabric pinned, MTU $mtu: $out"

  [ "$mtu" = 9000 ] && ucx_perftests
  "${c[@]}" down || fail "down"
done

echo "== a daemon killed under a job"
"${c[@]}" up 4 --subnet "$subnet" >/dev/null || fail "up 4"
start=$SECONDS
( sleep 3; ip netns pids "$name-h3" | while read -r p; do
    [ "$(cat "/proc/$p/comm" 2>/dev/null)" = odpemud ] && kill -KILL "$p"; done ) &
killer=$!
prog_args=2000 job "UCX ring of 2000 iterations, h3's daemon SIGKILLed after 3 s" 240 \
  "${ucx[@]}" -x UCX_IB_REG_METHODS=rcache,direct
wait "$killer"
took=$((SECONDS - start))
[ "$rc" -ne 0 ] && [ "$rc" -ne 124 ] && [ "$rc" -ne 137 ] ||
  fail "the job with a dead daemon: exit $rc (124/137: killed by the timeout), want an error"
echo "   it ended with exit $rc after ${took} s: $(grep -m1 -iE 'fatal|error' <<<"$out")"
for k in 1 2 3 4; do
  left=$(ip netns pids "$name-h$k" 2>/dev/null | while read -r p; do
    comm=$(cat "/proc/$p/comm" 2>/dev/null); [ "$comm" != odpemud ] && echo "$p:$comm"; done)
  [ -z "$left" ] || fail "h$k: processes left after the job: $left"
done
"${c[@]}" down || fail "down after the killed daemon"

echo "== 8 hosts up and down 10 times"
for i in 1 2 3 4 5 6 7 8 9 10; do
  "${c[@]}" up 8 --subnet "$subnet" >/dev/null || { fail "up 8, round $i"; break; }
  "${c[@]}" down || fail "down, round $i"
  n=$(ip netns list | grep -c "^$name-h")
  l=$(ip -o link show | grep -c " $name-")
  [ "$n" -eq 0 ] && [ "$l" -eq 0 ] || { fail "round $i left $n namespaces, $l links"; break; }
done

echo "== the tool"
"${c[@]}" up 2 --subnet "$subnet" --mtu 1500 >/dev/null || fail "up 2"
# the MTU raised under running daemons: the ports follow, a new RC pair uses 4096
o=$("${c[@]}" exec h1 ibv_devinfo 2>&1)
[[ $o == *"active_mtu:"*"1024 (3)"* ]] || fail "MTU 1500: active MTU not 1024: $o"
"${c[@]}" mtu 9000 || fail "mtu 9000"
o=$("${c[@]}" exec h1 ibv_devinfo 2>&1)
[[ $o == *"active_mtu:"*"4096 (5)"* ]] || fail "after mtu 9000: active MTU not 4096: $o"
"${c[@]}" exec h2 timeout 60 ib_write_bw -d odp0 -x 1 -F -s 65536 -n 200 >/dev/null 2>&1 &
srv=$!
o=""
for _ in 1 2 3 4 5 6 7 8 9 10; do
  sleep 0.5
  o=$("${c[@]}" exec h1 timeout 60 ib_write_bw -d odp0 -x 1 -F -s 65536 -n 200 \
    "$subnet.2" 2>&1) && break	# until the server listens
done
[[ $o == *"Mtu             : 4096"* && $o == *" 65536 "*" 200 "* ]] ||
  fail "ib_write_bw after the MTU change: $o"
wait "$srv" || fail "ib_write_bw server after the MTU change"
o=$("${c[@]}" mtu x 2>&1); [ $? -eq 2 ] || fail "mtu x: $o"
o=$("${c[@]}" exec h2 ibv_devinfo 2>&1)
[[ $o == *"hca_id:	odp0"* && $o == *PORT_ACTIVE* ]] || fail "exec h2 ibv_devinfo: $o"
o=$("${c[@]}" exec "$subnet.1" ibv_devices 2>&1)
[[ $o == *odp0* ]] || fail "exec by address: $o"
[ "$("${c[@]}" hosts | wc -l)" -eq 2 ] || fail "hosts: $("${c[@]}" hosts)"
"${c[@]}" stat | grep -q "^h2 " || fail "stat: $("${c[@]}" stat 2>&1)"
o=$("${c[@]}" up 2 --subnet "$subnet" 2>&1) && fail "up twice succeeded"
[[ $o == *"is up already"* ]] || fail "up twice: $o"
o=$("${c[@]}" exec h9 true 2>&1) && fail "exec on a missing host succeeded"
[[ $o == *"no host h9"* ]] || fail "exec h9: $o"
for bad in "up" "up 0" "up 65" "up x" "up 2 --mtu x" "up 2 --subnet 10.1" "frob"; do
  # shellcheck disable=SC2086
  o=$("${c[@]}" $bad 2>&1); r=$?
  [ "$r" -eq 2 ] || fail "'$bad': exit $r, want 2: $o"
done
o=$("$cluster" --name 'a b' hosts 2>&1); [ $? -eq 2 ] || fail "--name 'a b': $o"
"${c[@]}" down || fail "down"
# a personality per host (issue 32): what ibv_devinfo shows there and stat says
"${c[@]}" up 2 --subnet "$subnet" --personality cx5,rxe >/dev/null || fail "up 2 --personality cx5,rxe"
o=$("${c[@]}" exec h1 ibv_devinfo 2>&1)
[[ $o == *"vendor_part_id:"*"4119"* ]] || fail "h1 as cx5: $o"
o=$("${c[@]}" stat 2>&1)
[[ $o == *" cx5 "* && $o == *" rxe "* ]] || fail "stat with personalities: $o"
"${c[@]}" down || fail "down (personalities)"
o=$("${c[@]}" up 2 --subnet "$subnet" --personality 'cx5;x' 2>&1); [ $? -eq 2 ] || fail "--personality 'cx5;x': $o"
# the hosts only, as tools/demo and the e2e harness make theirs: no daemon, no address of
# the root namespace on the bridge, IPv6 addresses in the fifth column
"${c[@]}" up 2 --subnet "$subnet" --no-daemons --isolated --ipv6 >/dev/null ||
  fail "up 2 --no-daemons --isolated --ipv6"
o=$("${c[@]}" hosts)
[[ $o == *"h2 $name-h2 $subnet.2 "*" fd00:${subnet//./:}::2"* ]] || fail "hosts with --ipv6: $o"
ip -4 addr show dev "$name-br" | grep -q inet && fail "--isolated: the bridge has an address"
for k in 1 2; do
  ip netns pids "$name-h$k" | grep -q . && fail "--no-daemons: h$k runs $(ip netns pids "$name-h$k")"
done
o=$(ip netns exec "$name-h1" ip -6 addr show dev eth0)
[[ $o == *"fd00:${subnet//./:}::1/64"* && $o != *tentative* ]] || fail "h1's IPv6 address: $o"
"${c[@]}" down || fail "down (hosts only)"
"${c[@]}" down || fail "down again (idempotent)"
ip netns list | grep -q "^$name-h" && fail "namespaces left: $(ip netns list)"
ip link show "$name-br" >/dev/null 2>&1 && fail "bridge $name-br left"
[ -e "/run/odpemu-cluster/$name" ] && fail "state left in /run/odpemu-cluster/$name"

echo "cluster: $failures failed"
[ "$failures" -eq 0 ]
