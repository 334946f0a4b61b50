#!/usr/bin/env bash
# The cluster benchmark (docs/cluster.md): mpibench (8 B ping-pong latency and 1 MiB
# streaming bandwidth between two hosts, MPI_Allreduce of 1 MiB and MPI_Alltoall of 64 KiB
# a rank pair over every rank) on HOSTS hosts x 2 ranks of odpemu-cluster, over odpemu
# (UCX rc_verbs, pinned; libfabric verbs;ofi_rxm) and over Open MPI's TCP BTL on the same
# hosts and bridge (the anchor), in one run; prints each figure and its ratio to TCP.
# usage: bench_cluster.sh <odpemu-cluster> <mpibench> [HOSTS (4)] [ITERS (100)]   (root)
set -uo pipefail
cluster=$1 bench=$2 hosts=${3:-4} iters=${4:-100}
name=bench subnet=10.215.0
c=("$cluster" --name "$name")
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
trap '"${c[@]}" down >/dev/null 2>&1' EXIT
"${c[@]}" down >/dev/null 2>&1
"${c[@]}" up "$hosts" --subnet "$subnet" >/dev/null || exit 1
common=(--hostfile "$("${c[@]}" hostfile)" -np $((2 * hosts)) --map-by node
  --mca plm_rsh_agent "${c[*]} rsh" --mca oob_tcp_if_include "$subnet.0/24")
declare -A fig

# run LABEL mpirun-args...: the figures of one job into fig[LABEL.name]
run() {
  local label=$1 out k v; shift
  out=$(timeout -k 5 600 mpirun "${common[@]}" "$@" "$bench" "$iters" 2>&1) ||
    { echo "$label: failed:"; echo "$out" | tail -20; return 1; }
  while IFS=': ' read -r k v; do fig[$label.$k]=$v; done < <(grep -E '^[A-Za-z0-9_]+: ' <<<"$out")
}

run ucx --mca btl ^vader,tcp,openib,uct --mca pml ucx -x UCX_TLS=rc_verbs,ud_verbs,self \
  -x UCX_UD_VERBS_TX_MIN_INLINE=128 \
  -x UCX_IB_REG_METHODS=rcache,direct
run ofi --mca btl ^vader,tcp,openib,uct --mca pml cm --mca mtl ofi \
  -x "FI_PROVIDER=verbs;ofi_rxm"
run tcp --mca pml ob1 --mca btl tcp,self --mca btl_tcp_if_include "$subnet.0/24"

printf '%s hosts x 2 ranks, %s iterations, %s\n' "$hosts" "$iters" "$(uname -r)"
printf '%-22s %12s %12s %12s %10s %10s\n' figure "odpemu UCX" "odpemu ofi" "TCP BTL" \
  "UCX/TCP" "ofi/TCP"
for k in latency_8B_us bandwidth_1MiB_MBps allreduce_1MiB_us alltoall_64KiB_us; do
  printf '%-22s %12s %12s %12s %10s %10s\n' "$k" "${fig[ucx.$k]:--}" "${fig[ofi.$k]:--}" \
    "${fig[tcp.$k]:--}" \
    "$(awk -v a="${fig[ucx.$k]:-0}" -v b="${fig[tcp.$k]:-0}" 'BEGIN{printf b ? "%.2f" : "-", a/b}')" \
    "$(awk -v a="${fig[ofi.$k]:-0}" -v b="${fig[tcp.$k]:-0}" 'BEGIN{printf b ? "%.2f" : "-", a/b}')"
done
