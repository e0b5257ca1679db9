#!/usr/bin/env bash
# Execution figures (issue: at least 1,000 completed executions per second on SQLite on this
# 2-core machine, with p99 under 50 ms at half that rate):
#   - completed executions/s and p50/p99 of POST /api/execute (the sandbox shop's get_product,
#     one credit each, every one a new billing task) beside GET /health in the same run, with
#     wrk at full load, on `svc sandbox --database-url` with SQLite and with Postgres;
#   - p50/p99 at a fixed rate of half the measured throughput, with hey (-q per worker);
#   - a check that every request completed (no non-2xx) and that the credits charged equal
#     the completed executions counted from the ledger.
# Needs wrk and hey (Debian packages) and a Postgres server binary (scripts/postgres.sh).
# Usage: bench/execute.sh [DURATION_SECONDS=10] [CONNECTIONS=32]
set -euo pipefail
cd "$(dirname "$0")/.."
duration=${1:-10}
conns=${2:-32}
for tool in wrk hey curl; do command -v $tool >/dev/null || { echo "$tool is missing: apt-get install $tool" >&2; exit 1; }; done
cargo build --profile dist --locked --bin svc >/dev/null 2>&1
bin=${CARGO_TARGET_DIR:-target}/dist/svc
mkdir -p bench/results
out=bench/results/execute-$(date -u +%Y%m%dT%H%M%SZ).txt
work=$(mktemp -d)
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; rm -rf "$work"; }
trap cleanup EXIT
export SVC_RATE_LIMIT_PER_IP=1000000000 SVC_RATE_LIMIT_PER_KEY=1000000000 SVC_LOG=warn
export SVC_SANDBOX_SEED_CREDITS=1000000000
body='{"domain":"shop.sandbox.test","action":"get_product","params":{"sku":"TEA-GREEN"}}'

pg_dir=/tmp/svc-bench-pg
eval "$(SVC_TEST_PG_PORT=${SVC_BENCH_PG_PORT:-54351} SVC_TEST_PG_DIR=$pg_dir scripts/postgres.sh start)"
pg_db="svc_bench_$(date +%s)"
psql "$SVC_TEST_POSTGRES_URL" -qc "CREATE DATABASE $pg_db" >/dev/null
pg_url="${SVC_TEST_POSTGRES_URL%/*}/$pg_db"

run() { # label database-url
  local label=$1 db=$2
  "$bin" sandbox --bind 127.0.0.1:0 --database-url "$db" >"$work/$label.env" 2>"$work/$label.log" &
  pids+=($!)
  for _ in $(seq 1 300); do grep -q '^SVC_API_KEY=' "$work/$label.env" && break; sleep 0.1; done
  local base key
  base=$(sed -n 's/^SVC_BASE_URL=//p' "$work/$label.env")
  key=$(sed -n 's/^SVC_API_KEY=//p' "$work/$label.env")
  cat >"$work/exec.lua" <<LUA
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
wrk.headers["Authorization"] = "Bearer $key"
wrk.body = '$body'
LUA
  local before after
  before=$(curl -s -H "Authorization: Bearer $key" "$base/api/usage" | python3 -c 'import json,sys; print(json.load(sys.stdin)["balance"]["spendable"])')
  wrk -t2 -c"$conns" -d"${duration}s" --latency "$base/health" >"$work/$label-health.txt"
  wrk -t2 -c"$conns" -d"${duration}s" --latency -s "$work/exec.lua" "$base/api/execute" >"$work/$label-exec.txt"
  after=$(curl -s -H "Authorization: Bearer $key" "$base/api/usage" | python3 -c 'import json,sys; print(json.load(sys.stdin)["balance"]["spendable"])')
  local rps h p50 p99 total non2xx half
  rps=$(awk '/Requests\/sec/ {print $2}' "$work/$label-exec.txt")
  h=$(awk '/Requests\/sec/ {print $2}' "$work/$label-health.txt")
  p50=$(awk '$1=="50%" {print $2}' "$work/$label-exec.txt")
  p99=$(awk '$1=="99%" {print $2}' "$work/$label-exec.txt")
  total=$(awk '/requests in/ {print $1}' "$work/$label-exec.txt")
  non2xx=$(grep -h "Non-2xx" "$work/$label-exec.txt" || true)
  # Half the measured rate, held by hey: 16 workers, each at rate/16/2 requests per second.
  half=$(python3 -c "print(max(1, int(float('$rps') / 2 / 16)))")
  hey -z "${duration}s" -c 16 -q "$half" -m POST -T application/json \
    -H "Authorization: Bearer $key" -d "$body" "$base/api/execute" >"$work/$label-half.txt"
  local hrps hp50 hp99
  hrps=$(awk '/Requests\/sec/ {print $2}' "$work/$label-half.txt")
  hp50=$(awk '/50%% in/ || /50% in/ {print $3}' "$work/$label-half.txt")
  hp99=$(awk '/99% in/ {print $3}' "$work/$label-half.txt")
  printf '%-9s execute %9s completed/s (p50 %s, p99 %s) beside health %10s req/s | at %s req/s: p50 %s s, p99 %s s | charged %s for %s requests\n' \
    "$label" "$rps" "$p50" "$p99" "$h" "$hrps" "$hp50" "$hp99" "$((before - after))" "$total"
  [ -z "$non2xx" ] || echo "  WARNING: $non2xx"
  grep -q '\[200\]' "$work/$label-half.txt" || echo "  WARNING: hey saw no 200s"
  grep -A5 'Status code distribution' "$work/$label-half.txt" | grep -v '\[200\]' | grep '\[' | sed 's/^/  hey: /' || true
}

{
  echo "svc execution benchmark, $(date -u +%FT%TZ), $(nproc) cores, wrk -t2 -c$conns -d${duration}s, dist build (fat LTO)"
  run sqlite "sqlite://$work/bench.db"
  run postgres "$pg_url"
} | tee "$out"
SVC_TEST_PG_DIR=$pg_dir scripts/postgres.sh stop >/dev/null 2>&1 || true
echo "written to $out"
