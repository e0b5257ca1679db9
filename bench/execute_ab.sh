#!/usr/bin/env bash
# Two or more builds' executions per second, alternated: bench/execute.sh with one round per
# build, the builds in turn, RUNS times (default 2), so a machine whose speed drifts treats
# each build alike. Prints every run's completed executions per second per store, then each
# build's figures side by side. The builds are binaries built elsewhere (say which commits).
# Usage: bench/execute_ab.sh BIN_A BIN_B [BIN_C...]   RUNS=2  (DURATION and CONNECTIONS as
# bench/execute.sh's arguments: EXEC_DURATION=10 EXEC_CONNECTIONS=32)
set -euo pipefail
cd "$(dirname "$0")/.."
[ $# -ge 2 ] || { echo "usage: $0 BIN_A BIN_B [BIN_C...]" >&2; exit 2; }
runs=${RUNS:-2}
for bin in "$@"; do [ -x "$bin" ] || { echo "$bin is not an executable" >&2; exit 2; }; done
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
echo "svc executions, builds alternated, $(date -u +%FT%TZ)"
echo "machine: $(nproc) cores, $(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -n 1)"
for run in $(seq "$runs"); do
  n=0
  for bin in "$@"; do
    n=$((n + 1))
    # bench/execute.sh starts and stops its own Postgres and services.
    ROUNDS=1 SVC_BENCH_BIN=$bin bench/execute.sh "${EXEC_DURATION:-10}" "${EXEC_CONNECTIONS:-32}" \
      >"$work/out" 2>&1 || { cat "$work/out"; exit 1; }
    for store in sqlite postgres; do
      rate=$(awk -v s="$store" '$1 == s && $2 == "#1" { for (i = 1; i <= NF; i++) if ($i == "execute") { sub(/\/s$/, "", $(i + 1)); print $(i + 1) } }' "$work/out")
      echo "run $run  build $n ($bin)  $store  ${rate:-?} executions/s"
      echo "$n $store $rate" >>"$work/figures"
    done
  done
done
echo
echo "executions/s per build, run by run:"
n=0
for bin in "$@"; do
  n=$((n + 1))
  for store in sqlite postgres; do
    echo "  build $n  $store  $(awk -v n=$n -v s=$store '$1 == n && $2 == s { printf "%s ", $3 }' "$work/figures")  ($bin)"
  done
done
