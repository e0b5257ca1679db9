#!/usr/bin/env bash
# Execution figures, all from one run on one machine (client, service, target site and
# database sharing it):
#   - the target site alone: GET of the sandbox shop's product (wrk), so it is seen not to be
#     the bottleneck;
#   - GET /health (wrk): the framework's own rate, the reference for every ratio;
#   - completed executions per second and p50/p99 of POST /api/execute (the shop's
#     get_product, one credit each, every one a new billing task) at full load (wrk);
#   - p50/p99 at a fixed rate of half that throughput (hey, -q per worker);
#   - the credits charged (from GET /api/usage before and after) against the completed
#     executions wrk and hey counted: they must be equal.
# Each store (SQLite, then Postgres with synchronous_commit on) runs ROUNDS times (default 3);
# the summary gives the median and the spread (min-max) of each figure and the ratio to /health.
# Needs wrk and hey (Debian packages) and a Postgres server binary (scripts/postgres.sh).
# Usage: bench/execute.sh [DURATION_SECONDS=10] [CONNECTIONS=32]
#   ROUNDS=3  SVC_BENCH_BIN=path (skip the build)  SVC_BENCH_PG_FSYNC=off|on (off: the throwaway server does not flush to disk;
#   commits still wait for their WAL write)
set -euo pipefail
cd "$(dirname "$0")/.."
duration=${1:-10}
conns=${2:-32}
rounds=${ROUNDS:-3}
fsync=${SVC_BENCH_PG_FSYNC:-off}
for tool in wrk hey curl python3; do
  command -v $tool >/dev/null || { echo "$tool is missing: apt-get install $tool" >&2; exit 1; }
done
if [ -n "${SVC_BENCH_BIN:-}" ]; then
  bin=$SVC_BENCH_BIN # a binary built elsewhere (say which in the report)
else
  cargo build --profile dist --locked --bin svc >/dev/null 2>&1
  bin=${CARGO_TARGET_DIR:-target}/dist/svc
fi
mkdir -p bench/results
out=bench/results/execute-$(date -u +%Y%m%dT%H%M%SZ).txt
work=$(mktemp -d)
pg_dir=/tmp/svc-bench-pg-$$ # outside $work: the server runs as the postgres user
pg_port=${SVC_BENCH_PG_PORT:-54351}
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
  SVC_TEST_PG_PORT=$pg_port SVC_TEST_PG_DIR=$pg_dir scripts/postgres.sh stop >/dev/null 2>&1 || true
  rm -rf "$work" "$pg_dir"
}
trap cleanup EXIT
# Everything below runs in this shell (not in a pipeline's subshell), so the trap sees every
# process it started; the report goes to the terminal and to $out.
exec > >(tee "$out") 2>&1

export SVC_RATE_LIMIT_PER_IP=1000000 SVC_RATE_LIMIT_PER_KEY=1000000 SVC_LOG=warn
export SVC_SANDBOX_SEED_CREDITS=1000000000
body='{"domain":"shop.sandbox.test","action":"get_product","params":{"sku":"TEA-GREEN"}}'

eval "$(SVC_TEST_PG_PORT=$pg_port SVC_TEST_PG_DIR=$pg_dir \
  SVC_TEST_PG_SETTINGS="-c fsync=$fsync -c synchronous_commit=on -c shared_buffers=256MB" \
  scripts/postgres.sh start)"
pg_server=${SVC_TEST_POSTGRES_URL:?the Postgres server for the benchmark did not start (see $pg_dir/server.log)}

rps_of() { awk '/Requests\/sec/ {print $2}' "$1"; }
ms_of() { # a wrk latency ("850.12us", "3.21ms", "1.02s") in milliseconds
  awk -v q="$2" '$1==q {v=$2; if (v ~ /us$/) {sub(/us$/,"",v); v/=1000} else if (v ~ /ms$/) {sub(/ms$/,"",v)} else if (v ~ /s$/) {sub(/s$/,"",v); v*=1000}; printf "%.2f", v}' "$1"
}
spendable() {
  curl -sf -H "Authorization: Bearer $2" "$1/api/usage" |
    python3 -c 'import json,sys; print(json.load(sys.stdin)["balance"]["spendable"])'
}

# One round on one store: prints one line of figures and records them in $work/figures.
round() { # label database-url round
  local label=$1 db=$2 n=$3
  "$bin" sandbox --bind 127.0.0.1:0 --database-url "$db" >"$work/$label.env" 2>"$work/$label.log" &
  local pid=$!
  pids+=("$pid")
  for _ in $(seq 1 300); do grep -q '^SVC_SHOP_SITE=' "$work/$label.env" && break; sleep 0.1; done
  local base key shop
  base=$(sed -n 's/^SVC_BASE_URL=//p' "$work/$label.env")
  key=$(sed -n 's/^SVC_API_KEY=//p' "$work/$label.env")
  shop=$(sed -n 's/^SVC_SHOP_SITE=//p' "$work/$label.env" | sed 's#//shop.sandbox.test:#//127.0.0.1:#')
  [ -n "$key" ] && [ -n "$shop" ] || { echo "the sandbox did not start:"; cat "$work/$label.log"; exit 1; }
  cat >"$work/exec.lua" <<LUA
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
wrk.headers["Authorization"] = "Bearer $key"
wrk.body = '$body'
LUA
  local before after
  before=$(spendable "$base" "$key")
  wrk -t2 -c"$conns" -d"${duration}s" "$shop/api/products/TEA-GREEN" >"$work/target.txt"
  wrk -t2 -c"$conns" -d"${duration}s" --latency "$base/health" >"$work/health.txt"
  wrk -t2 -c"$conns" -d"${duration}s" --latency -s "$work/exec.lua" "$base/api/execute" >"$work/exec.txt"
  local target health rps p50 p99 sent non2xx
  target=$(rps_of "$work/target.txt")
  health=$(rps_of "$work/health.txt")
  rps=$(rps_of "$work/exec.txt")
  p50=$(ms_of "$work/exec.txt" 50%)
  p99=$(ms_of "$work/exec.txt" 99%)
  sent=$(awk '/requests in/ {print $1}' "$work/exec.txt")
  non2xx=$(awk '/Non-2xx/ {print $NF}' "$work/exec.txt")
  # Half the measured rate, held by hey: 16 workers, each at rate/2/16 requests per second.
  local per_worker hrps hp50 hp99 hey_ok hey_other
  per_worker=$(python3 -c "print(max(1, round(float('$rps') / 2 / 16)))")
  hey -z "${duration}s" -c 16 -q "$per_worker" -m POST -T application/json \
    -H "Authorization: Bearer $key" -d "$body" "$base/api/execute" >"$work/half.txt"
  hrps=$(rps_of "$work/half.txt")
  hp50=$(awk '/ 50% in/ {printf "%.2f", $3 * 1000}' "$work/half.txt")
  hp99=$(awk '/ 99% in/ {printf "%.2f", $3 * 1000}' "$work/half.txt")
  hey_ok=$(awk '$1 == "[200]" {print $2}' "$work/half.txt") # not a histogram bucket of 200
  hey_other=$(grep -A8 'Status code distribution' "$work/half.txt" | grep '\[' | grep -vc '\[200\]' || true)
  after=$(spendable "$base" "$key")
  local charged=$((before - after)) completed=$((sent - ${non2xx:-0} + ${hey_ok:-0}))
  printf '%-8s #%s  target %8.0f/s  health %8.0f/s  execute %7.0f/s (%.2f%% of health, p50 %s ms, p99 %s ms)  at %4.0f/s: p50 %s ms, p99 %s ms  charged %s for %s completed + %s in flight\n' \
    "$label" "$n" "$target" "$health" "$rps" "$(python3 -c "print(100 * $rps / $health)")" "$p50" "$p99" \
    "$hrps" "$hp50" "$hp99" "$charged" "$completed" "$((before - after - completed))"
  [ -z "$non2xx" ] || echo "  WARNING: wrk saw $non2xx non-2xx answers"
  [ "$hey_other" = 0 ] || echo "  WARNING: hey saw answers other than 200: $(grep -A8 'Status code distribution' "$work/half.txt" | grep '\[' | tr -s ' ' | tr '\n' ';')"
  # wrk stops with up to $conns requests in flight: the service completes and charges them, wrk
  # never counts their answers. Anything outside that is a real difference.
  local in_flight=$((charged - completed))
  if [ "$in_flight" -lt 0 ] || [ "$in_flight" -gt "$conns" ]; then
    echo "  WARNING: credits charged ($charged) differ from completed executions ($completed) by more than the $conns requests in flight"
  fi
  echo "$label $target $health $rps $p99 $hrps $hp99" >>"$work/figures"
  kill "$pid"
  wait "$pid" 2>/dev/null || true
}

echo "svc execution benchmark, $(date -u +%FT%TZ)"
echo "machine: $(nproc) cores, $(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -n 1), $(free -g | awk '/Mem:/ {print $2}') GiB"
echo "commit:  $(git rev-parse --short HEAD)$(git diff --quiet HEAD -- . ':!bench/results' || echo ' (with uncommitted changes)'), ${SVC_BENCH_BIN:-dist build (-O3, fat LTO)}"
echo "load:    wrk -t2 -c$conns -d${duration}s at full load, hey -c16 -z${duration}s at half the measured rate; $rounds rounds per store"
echo "postgres: $("$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -n 1)/postgres" --version), synchronous_commit=$(psql "$pg_server" -Atc 'SHOW synchronous_commit'), fsync=$(psql "$pg_server" -Atc 'SHOW fsync')"
for n in $(seq 1 "$rounds"); do
  round sqlite "sqlite://$work/bench-$n.db" "$n"
  db="svc_bench_$n"
  psql "$pg_server" -qc "CREATE DATABASE $db" >/dev/null
  round postgres "${pg_server%/*}/$db" "$n"
done

echo
echo "summary (median, spread min-max over $rounds rounds):"
python3 - "$work/figures" <<'PY'
import statistics, sys
rows = {}
for line in open(sys.argv[1]):
    label, *figs = line.split()
    rows.setdefault(label, []).append([float(f) for f in figs])
names = ["target site /s", "health /s", "executions /s", "p99 ms (full)", "half rate /s", "p99 ms (half)"]
for label, runs in rows.items():
    print(f"  {label}:")
    for i, name in enumerate(names):
        vals = sorted(r[i] for r in runs)
        print(f"    {name:16} {statistics.median(vals):9.1f}   ({vals[0]:.1f}-{vals[-1]:.1f})")
    ratios = sorted(100 * r[2] / r[1] for r in runs)
    print(f"    {'% of health':16} {statistics.median(ratios):9.2f}   ({ratios[0]:.2f}-{ratios[-1]:.2f})")
PY
echo "written to $out"
