#!/usr/bin/env bash
# test_matrix.sh KIND MATRIX PERF BRICK BRICK_CTL — the proof matrix of issue 32, one
# program per meson test: cx5 and rxe × baseline, cold, slow-faults, lossy (seed 1),
# through odpemu-matrix with --junit, --json and --markdown, then check_report.py on the
# three (JUnit structure and counts, each cell's expected status), and each failing cell's
# repro line run again: it must fail the same way. KIND:
#   perftest   ib_write_bw --odp: every cell passes, page faults on the server's device
#   libfabric  fi_pingpong -e rdm (verbs;ofi_rxm) with FI_VERBS_USE_ODP=1; root only
#              (libfabric skips addresses on lo). FI_UNIVERSE_SIZE=64: rxm's MSG CQ is
#              (rx + tx size) × universe size CQEs, 65,536 with the default 256, more
#              than rxe's max_cqe (32,767): fi_enable fails EINVAL on the rxe
#              personality, as on a real rxe. cx4 (explicit ODP) and cx5 (implicit), not
#              rxe, × baseline, cold, reorder-dup, a cell at a time: libfabric 1.17's rxm
#              closes a connection's endpoint before it drains the CQ (docs/known-bugs.md
#              7, fixed upstream), a race that slow-faults and lossy widen and that on rxe
#              is a use-after-free; every cell passes with page faults on both sides
#   ucx        ucx_perftest put_bw over rc_verbs, UCX_IB_REG_METHODS=odp,direct: cx5
#              (implicit ODP) moves the data through ODP and then crashes in
#              uct_ib_md_close (UCX #8735): expected to fail; rxe (no implicit ODP)
#              falls back to pinned registration (no page fault: UCX 1.13 never uses
#              explicit ODP) and passes. Needs /dev/infiniband/odpemu (odpemud makes it
#              as root)
#   brick      odpemu-brick put/get of 4 MiB, compared: rxe passes; cx5 cells are
#              skipped: ConnectX-5 has no RDMA FLUSH (IBTA 1.5), the brick's only way to
#              make a write durable, and odpemu-brick-ctl refuses to connect from a
#              device without persistent FLUSH (EOPNOTSUPP naming the cap): that refusal
#              is the CMD's exit 77, any other failure a failure
#   regcache   tests/matrix/regcache-app, the deliberately broken program (ODP with
#              implicit ODP, else a pinned registration cache never told of unmaps):
#              cx5 passes, every rxe cell fails with stale data, and each repro fails
# Root: network namespaces, -j2. Not root: 127.0.0.1/127.0.0.2, a cell at a time.
set -uo pipefail
kind=$1 matrix=$2 perf=$3 brick=$4 brick_ctl=$5
here=$(cd "$(dirname "$0")" && pwd)
out=$(mktemp -d /tmp/odpemu-matrix-test-XXXXXX)
trap 'rm -rf "$out"' EXIT
chmod 755 "$out"
skip() { echo "matrix-$kind: SKIP: $*"; exit 77; }

personalities=cx5,rxe profiles=baseline,cold,slow-faults,lossy jobs=2
expect=() xfail=()
case $kind in
  perftest)
    command -v ib_write_bw >/dev/null || skip "ib_write_bw missing (apt-get install perftest)"
    server='ib_write_bw -d {dev} -p {port} -F --odp -n 200'
    cmd=(ib_write_bw -d {dev} -p {port} -F --odp -n 200 {peer}) ;;
  libfabric)
    command -v fi_pingpong >/dev/null || skip "fi_pingpong missing (apt-get install libfabric-bin)"
    [ "$(id -u)" -eq 0 ] || skip "libfabric's verbs provider offers no address on lo" \
      "(it skips IFF_LOOPBACK interfaces): run as root, with network namespaces"
    server='FI_UNIVERSE_SIZE=64 FI_VERBS_USE_ODP=1 fi_pingpong -p "verbs;ofi_rxm" -e rdm -c -I 50 -S 65536 -d {dev} -B {port}'
    cmd=(env FI_UNIVERSE_SIZE=64 FI_VERBS_USE_ODP=1 fi_pingpong -p 'verbs;ofi_rxm' -e rdm -c
      -I 50 -S 65536 -d {dev} -P {port} {peer})
    personalities=cx4,cx5 profiles=baseline,cold,reorder-dup jobs=1 ;;
  ucx)
    command -v ucx_perftest >/dev/null || skip "ucx_perftest missing (apt-get install ucx-utils)"
    [ -e /dev/infiniband/odpemu ] || skip "/dev/infiniband/odpemu is missing (odpemud" \
      "makes it when it runs as root; UCX lists no device without it)"
    server='UCX_IB_REG_METHODS=odp,direct ucx_perftest -p {port} -d {dev}:1 -x rc_verbs'
    cmd=(env UCX_IB_REG_METHODS=odp,direct ucx_perftest {peer} -p {port} -d {dev}:1
      -x rc_verbs -t put_bw -D zcopy -n 200 -s 65536)
    xfail=(--expect-fail 'cx5/*')
    expect=('cx5/*=xfail') ;;
  brick)
    server="$brick --file {tmp}/brick.img --size 64M --mem 16M -a {addr} -p {port}"
    cmd=(sh -c "head -c 4M /dev/urandom > in || exit 1
      if ! $brick_ctl -a {peer} -p {port} put 0 in 2>err; then
        cat err >&2
        grep -q 'no persistent RDMA FLUSH (device_cap_flags_ex FLUSH_PERSISTENT)' err &&
          { echo 'skip: the device has no persistent RDMA FLUSH' >&2; exit 77; }
        exit 1
      fi
      $brick_ctl -a {peer} -p {port} get 0 4M out && cmp in out")
    expect=('cx5/*=skipped') ;;
  regcache)
    command -v ibv_devinfo >/dev/null || skip "ibv_devinfo missing (apt-get install ibverbs-utils)"
    profiles=baseline,cold
    server="$perf write -p {port} -d {dev}"
    cmd=("$here/regcache-app" "$perf" {dev} {peer} {port})
    expect=('rxe/*=failed') ;;
  *) echo "test_matrix.sh: unknown kind $kind" >&2; exit 2 ;;
esac

t0=$(date +%s)
"$matrix" --personalities "$personalities" --profiles "$profiles" --seeds 1 -j "$jobs" --timeout 90 \
  "${xfail[@]}" --junit "$out/junit.xml" --json "$out/matrix.json" \
  --markdown "$out/summary.md" --keep "$out/keep" --server "$server" -- "${cmd[@]}"
rc=$?
echo "matrix-$kind: odpemu-matrix exit $rc after $(( $(date +%s) - t0 )) s"
ncells=$(( $(tr ',' '\n' <<<"$personalities" | wc -l) * $(tr ',' '\n' <<<"$profiles" | wc -l) ))
if ! repros=$(/usr/bin/python3 "$here/check_report.py" "$out/junit.xml" "$out/matrix.json" \
    "$out/summary.md" "$ncells" ${expect[@]+"${expect[@]}"}); then
  cat "$out/summary.md"
  tail -n 5 "$out"/keep/*/client.out "$out"/keep/*/server.out 2>/dev/null	# the failing cells'
  echo "matrix-$kind: FAIL: the reports are not what they should be"
  exit 1
fi
want_rc=0
[ -n "$repros" ] && want_rc=1
[ "$rc" -eq "$want_rc" ] || { echo "matrix-$kind: FAIL: exit $rc, want $want_rc"; exit 1; }

# The counters say the cells really went through ODP where they should.
/usr/bin/python3 - "$out/matrix.json" "$kind" <<'PY' || exit 1
import json, sys
doc, kind = json.load(open(sys.argv[1])), sys.argv[2]
for c in doc["cells"]:
    pf = [s["page_faults"] for s in c["counters"]]
    ev = [s["evictions"] for s in c["counters"]]
    want = {"perftest": pf[1] > 0, "libfabric": pf[0] > 0 and pf[1] > 0, "brick": pf[1] > 0,
            "ucx": pf[1] > 0 if c["personality"] == "cx5" else pf == [0, 0],
            "regcache": pf[0] > 0 if c["personality"] == "cx5" else pf == [0, 0]}[kind]
    # cold evicts present ODP pages: there are some where the program used ODP
    if c["status"] == "skipped":
        continue        # nothing ran: no counters to judge
    if c["profile"] == "cold" and kind in ("perftest", "libfabric", "brick") and \
            c["status"] == "passed":
        want = want and sum(ev) > 0
    if not want:
        sys.exit(f"matrix-{kind}: {c['id']}: page faults {pf}, evictions {ev}: not what "
                 "this program on this device does")
PY

# Every failing cell's repro line, run again, fails the same way (same seed, same cell).
n=0
while IFS= read -r line; do
  [ -n "$line" ] || continue
  n=$((n + 1))
  # the line as printed, with --json FILE added before its '--'
  (cd "$out" && eval "${line/ -- / --json $out/repro$n.json -- }") >"$out/repro$n.log" 2>&1
  r=$?
  got=$(/usr/bin/python3 -c 'import json, sys
c = json.load(open(sys.argv[1]))["cells"]
print(len(c), c[0]["status"], c[0]["message"])' "$out/repro$n.json" 2>/dev/null)
  orig=$(/usr/bin/python3 -c 'import json, sys
c = [x for x in json.load(open(sys.argv[1]))["cells"] if x["repro"] == sys.argv[2]][0]
print(1, c["status"], c["message"])' "$out/matrix.json" "$line")
  if [ "$r" -ne 1 ] || [ "$got" != "$orig" ]; then
    cat "$out/repro$n.log"
    echo "matrix-$kind: FAIL: repro '$line': exit $r, '$got'; the matrix said '$orig'"
    exit 1
  fi
  echo "matrix-$kind: repro $n fails the same way: $got"
done <<<"$repros"
cat "$out/summary.md"
echo "matrix-$kind: ok ($ncells cells, $n repro lines checked)"
