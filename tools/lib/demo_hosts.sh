# shellcheck shell=bash
# Sourced by tools/demo: the two test hosts, their daemons, the processes the demo starts,
# and tearing all of it down.
#
# As root: two hosts of odpemu-cluster (the one implementation of test hosts, shared with
# the tests and the virtual cluster): namespaces demo-h1 and demo-h2 on a bridge of their
# own (MTU 9000), 10.250.0.1 and 10.250.0.2, UDP port 4791; the demo starts their daemons.
# Otherwise (or when namespaces cannot be made): 127.0.0.1 and 127.0.0.2 on this machine,
# on a UDP port nobody uses.
#
# Every process starts as a child of the demo's shell, in the background, with its pid in
# demo_pids; demo_teardown stops them (TERM, then KILL), deletes the namespaces and the run
# directory. Each also gets a parent-death signal, so a demo killed with SIGKILL does not
# leave daemons behind either; namespaces it left are removed by the next run.

demo_cluster=""		# odpemu-cluster, set by tools/demo
demo_cluster_name=demo
demo_ns=()		# the hosts' namespaces (odpemu-cluster hosts)
demo_dev=(odpa odpb)
demo_addr=()
demo_netns=false
demo_port=4791		# UDP port of both daemons
demo_perf_port=18515	# odpemu-perf's TCP port
demo_mtu=9000
demo_rundir=""		# ODPEMU_RUNDIR of the demo's daemons: its own, in /tmp
demo_pids=()		# every process started (demo_spawn), for demo_teardown
demo_last_pid=0
demo_lock=/run/lock/odpemu-demo.lock

# Parent-death signal: a setpriv that knows --pdeathsig (util-linux 2.33+, Debian 10+).
demo_pdeath=()
setpriv --help 2>/dev/null | grep -q -- --pdeathsig && demo_pdeath=(setpriv --pdeathsig TERM)

demo_say() { echo "odpemu demo: $*"; }

# demo_spawn <host|-1> <seconds|0> <stdout> <stderr> <command...>: start it in the
# background, in host's namespace (-1: here), under timeout(1) unless seconds is 0.
# Its pid in demo_last_pid. The lock's descriptor (9) is not inherited: only the demo
# itself holds the lock.
demo_spawn() {
  local host=$1 secs=$2 out=$3 err=$4; shift 4
  local cmd=("${demo_pdeath[@]}")
  [ "$secs" != 0 ] && cmd+=(timeout -k 5 "$secs")
  if [ "$host" -ge 0 ] && $demo_netns; then cmd+=(ip netns exec "${demo_ns[$host]}"); fi
  "${cmd[@]}" "$@" >"$out" 2>"$err" 9>&- </dev/null &
  demo_last_pid=$!
  demo_pids+=("$demo_last_pid")
}

# demo_wait <pid>: its exit status (every command the demo waits for runs under
# timeout(1), so this is bounded; a trapped Ctrl-C interrupts it). Then it is forgotten.
demo_wait() {
  local pid=$1 rc p keep=()
  wait "$pid"
  rc=$?
  for p in "${demo_pids[@]}"; do [ "$p" = "$pid" ] || keep+=("$p"); done
  demo_pids=("${keep[@]}")
  return "$rc"
}

# demo_end <pid> <seconds>: let it end by itself within seconds, else stop it; forget it.
demo_end() {
  local pid=$1 secs=$2 k
  for ((k = 0; k < secs * 10; k++)); do demo_alive "$pid" || break; sleep 0.1; done
  demo_alive "$pid" && demo_stop 3 "$pid"
  demo_wait "$pid"
}

# demo_alive <pid...>: true while any of them runs.
demo_alive() {
  local pid
  for pid in "$@"; do kill -0 "$pid" 2>/dev/null && return 0; done
  return 1
}

# demo_stop <seconds> <pid...>: TERM, wait up to seconds, then KILL; reap them.
demo_stop() {
  local secs=$1 pid k; shift
  [ $# -gt 0 ] || return 0
  kill -TERM "$@" 2>/dev/null
  for ((k = 0; k < secs * 10; k++)); do demo_alive "$@" || break; sleep 0.1; done
  kill -KILL "$@" 2>/dev/null
  for pid in "$@"; do wait "$pid" 2>/dev/null; done
  return 0
}

# The demo's hosts, also those a demo killed with SIGKILL left: odpemu-cluster stops what
# runs in them and removes them.
demo_netns_remove() {
  "$demo_cluster" --name "$demo_cluster_name" down
}

# One demo with namespaces at a time: a second one waits for the first (bounded).
demo_take_lock() {
  [ -w "${demo_lock%/*}" ] || demo_lock=/tmp/odpemu-demo.lock
  exec 9>>"$demo_lock" || return 1
  flock -n 9 && return 0
  demo_say "another tools/demo is running (lock $demo_lock): waiting for it, at most 3 minutes"
  flock -w 180 9 || { demo_say "gave up waiting for the other demo" >&2; return 1; }
}

demo_netns_make() {
  local ns addr rest
  demo_take_lock || return 1
  if ip netns list 2>/dev/null | grep -q "^$demo_cluster_name-h"; then
    demo_say "removing the hosts an earlier demo left"
    demo_netns_remove
  fi
  "$demo_cluster" --name "$demo_cluster_name" up 2 --no-daemons --isolated \
    --subnet 10.250.0 --mtu "$demo_mtu" 2>/dev/null || return 1
  demo_ns=() demo_addr=()
  while read -r _ ns addr rest; do
    demo_ns+=("$ns") demo_addr+=("$addr")
  done < <("$demo_cluster" --name "$demo_cluster_name" hosts)
  [ "${#demo_addr[@]}" -eq 2 ]
}

# A UDP port free on both loopback addresses, and the TCP port after it free too.
demo_free_port() {
  python3 - <<'EOF'
import random, socket
for _ in range(200):
    p = random.randint(20000, 60000)
    try:
        for a in ("127.0.0.1", "127.0.0.2"):
            with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
                s.bind((a, p))
        with socket.socket(socket.AF_INET6, socket.SOCK_STREAM) as s:
            s.bind(("::", p + 1))
    except OSError:
        continue
    print(p)
    break
EOF
}

# Run directories of demos that were killed with SIGKILL: their demo.pid is gone.
demo_rundirs_remove() {
  local d pid
  for d in /tmp/odpemu-demo-*; do
    if [ ! -O "$d" ] || [ ! -f "$d/demo.pid" ]; then continue; fi
    pid=$(cat "$d/demo.pid")
    kill -0 "$pid" 2>/dev/null || rm -rf "$d"
  done
}

# demo_hosts_up: the two hosts (demo_netns, demo_addr set) and the run directory.
demo_hosts_up() {
  demo_rundirs_remove
  demo_rundir=$(mktemp -d /tmp/odpemu-demo-XXXXXX) || return 1
  echo $$ >"$demo_rundir/demo.pid"
  export ODPEMU_RUNDIR=$demo_rundir
  if [ "$(id -u)" -eq 0 ] && ip netns list >/dev/null 2>&1; then
    if demo_netns_make; then
      demo_netns=true
      demo_say "two hosts: network namespaces ${demo_ns[0]} (${demo_addr[0]}) and" \
        "${demo_ns[1]} (${demo_addr[1]}) on a bridge, MTU $demo_mtu (odpemu-cluster)"
      return 0
    fi
    demo_say "cannot create the network namespaces: using 127.0.0.1/127.0.0.2 instead"
    demo_netns_remove
  elif [ "$(id -u)" -ne 0 ]; then
    demo_say "not root: no network namespaces; the two hosts are 127.0.0.1 and 127.0.0.2" \
      "on this machine (run as root for two network namespaces)"
  fi
  demo_addr=(127.0.0.1 127.0.0.2)
  demo_port=$(demo_free_port)
  [ -n "$demo_port" ] || { demo_say "no free UDP port found on 127.0.0.1/127.0.0.2" >&2; return 1; }
  demo_perf_port=$((demo_port + 1))
  demo_say "two hosts: 127.0.0.1 and 127.0.0.2, UDP port $demo_port, TCP port $demo_perf_port"
}

# demo_daemons_up <odpemud>: one daemon per host; returns once both sockets listen.
demo_daemons_up() {
  local bin=$1 i k pid sock
  for i in 0 1; do
    demo_spawn "$i" 0 "$demo_rundir/${demo_dev[$i]}.out" "$demo_rundir/${demo_dev[$i]}.stderr" \
      "$bin" --foreground --name "${demo_dev[$i]}" --addr "${demo_addr[$i]}" \
      --port "$demo_port" --rundir "$demo_rundir"
    pid=$demo_last_pid sock="$demo_rundir/${demo_dev[$i]}.sock"
    for ((k = 0; k < 100; k++)); do		# up to 10 s
      [ -S "$sock" ] && break
      demo_alive "$pid" || break
      sleep 0.1
    done
    if [ ! -S "$sock" ]; then
      demo_say "daemon ${demo_dev[$i]} did not start; its log:" >&2
      tail -n 20 "$demo_rundir/${demo_dev[$i]}.stderr" >&2
      return 1
    fi
  done
  demo_say "daemons ${demo_dev[0]} (${demo_addr[0]}) and ${demo_dev[1]} (${demo_addr[1]})" \
    "are up; their logs go to $demo_rundir (removed at the end)"
}

# Stop everything the demo started, delete its namespaces and run directory. Bounded:
# 10 s for the processes to stop (the e2e test tears its own hosts down on TERM).
demo_teardown() {
  demo_stop 10 "${demo_pids[@]}"
  demo_pids=()
  if $demo_netns; then
    demo_netns_remove
    demo_netns=false
  fi
  [ -n "$demo_rundir" ] && rm -rf "$demo_rundir"
  demo_rundir=""
}
