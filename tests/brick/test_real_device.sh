#!/usr/bin/env bash
# brick-real-device: the same odpemu-brick binary and brick-api-client on the system's own
# libibverbs and librdmacm (no drop-in), when this machine has an RDMA device (rxe,
# ConnectX): the brick listens on the device's IPv4 address, the client runs every check
# of brick-api against it. Without a device (this project's CI machines: the kernel has
# no RDMA) it exits 77, skipped, and says so.
# usage: test_real_device.sh <odpemu-brick> <brick-api-client>
set -uo pipefail
brick=$1 client=$2
skip() { echo "brick-real-device: SKIP: $*"; exit 77; }

command -v ibv_devinfo >/dev/null || skip "ibv_devinfo is missing (apt-get install ibverbs-utils)"
# the system's libraries only: no odpemu drop-in on the path
unset LD_LIBRARY_PATH LD_PRELOAD ODPEMU_RUNDIR
dev=$(ibv_devinfo -l 2>/dev/null | awk 'NR > 1 && NF { print $1; exit }')
[ -n "$dev" ] || skip "no RDMA device on this machine (ibv_devinfo -l lists none)"
# an IPv4 address of the device: its RoCE GID table holds it as ::ffff:a.b.c.d
addr=$(ibv_devinfo -v -d "$dev" 2>/dev/null |
  sed -n 's/.*GID\[ *[0-9]*\]:[[:space:]]*::ffff:\([0-9.]*\).*/\1/p' | head -n 1)
[ -n "$addr" ] || skip "device $dev has no IPv4 RoCE GID to listen on"

dir=$(mktemp -d)
trap 'kill "$bpid" 2>/dev/null; wait 2>/dev/null; rm -rf "$dir"' EXIT
port=$((20000 + RANDOM % 20000))
timeout 300 "$brick" --file "$dir/brick.img" --size 64M -a "$addr" -p "$port" \
  >"$dir/brick.log" 2>&1 &
bpid=$!
for ((k = 0; k < 100; k++)); do
  grep -qs 'listening on' "$dir/brick.log" && break
  sleep 0.1
done
grep -qs 'listening on' "$dir/brick.log" || { cat "$dir/brick.log"; echo "FAIL: the brick did not listen"; exit 1; }
timeout 240 "$client" "$addr" "$port"
rc=$?
kill -TERM "$bpid"
wait "$bpid"
brc=$?
[ "$rc" -eq 0 ] || { cat "$dir/brick.log"; echo "FAIL: the client's checks (exit $rc)"; exit 1; }
[ "$brc" -eq 0 ] || { cat "$dir/brick.log"; echo "FAIL: the brick exited $brc on SIGTERM"; exit 1; }
echo "brick-real-device: every check passed on $dev ($addr)"
