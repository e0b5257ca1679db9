#!/usr/bin/env bash
# HTTP figures for the foundation, measured with wrk (Debian package `wrk`):
#   - requests/s and latency of GET /api/usage beside GET /health in the same run, on the
#     sandbox (memory store) and on `svc serve` (SQLite), and their ratio;
#   - start-up time of `svc sandbox` from exec to the first 200 on /health;
#   - idle resident memory after start-up, and after the load.
# Usage: bench/http.sh [DURATION_SECONDS=10] [CONNECTIONS=64]
# Results: printed, and written to bench/results/http-<UTC timestamp>.txt
set -euo pipefail
cd "$(dirname "$0")/.."
duration=${1:-10}
conns=${2:-64}
command -v wrk >/dev/null || { echo "wrk is missing: apt-get install wrk" >&2; exit 1; }
cargo build --profile dist --locked --bin svc >/dev/null 2>&1
bin=target/dist/svc
mkdir -p bench/results
out=bench/results/http-$(date -u +%Y%m%dT%H%M%SZ).txt
work=$(mktemp -d)
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; rm -rf "$work"; }
trap cleanup EXIT
export SVC_RATE_LIMIT_PER_IP=100000000 SVC_RATE_LIMIT_PER_KEY=100000000 SVC_LOG=warn

rss_kib() { awk '/VmRSS/ {print $2}' "/proc/$1/status"; }

# Start-up: exec to first 200 on /health, best of 5.
best_ms=999999
for _ in 1 2 3 4 5; do
  port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
  t0=$(date +%s%N)
  "$bin" sandbox --bind "127.0.0.1:$port" >/dev/null 2>&1 &
  pid=$!
  until curl -sf "http://127.0.0.1:$port/health" >/dev/null 2>&1; do sleep 0.001; done
  t1=$(date +%s%N)
  ms=$(( (t1 - t0) / 1000000 ))
  [ "$ms" -lt "$best_ms" ] && best_ms=$ms
  kill "$pid"; wait "$pid" 2>/dev/null || true
done

lua=$work/auth.lua
run_pair() { # name base key
  local name=$1 base=$2 key=$3
  printf 'wrk.headers["Authorization"] = "Bearer %s"\n' "$key" >"$lua"
  wrk -t2 -c"$conns" -d"${duration}s" --latency "$base/health" >"$work/$name-health.txt"
  wrk -t2 -c"$conns" -d"${duration}s" --latency -s "$lua" "$base/api/usage" >"$work/$name-usage.txt"
  local h u
  h=$(awk '/Requests\/sec/ {print $2}' "$work/$name-health.txt")
  u=$(awk '/Requests\/sec/ {print $2}' "$work/$name-usage.txt")
  local hp99 up99 non2xx
  hp99=$(awk '$1=="99%" {print $2}' "$work/$name-health.txt")
  up99=$(awk '$1=="99%" {print $2}' "$work/$name-usage.txt")
  non2xx=$(grep -h "Non-2xx" "$work/$name-usage.txt" "$work/$name-health.txt" || true)
  printf '%-22s health %10s req/s (p99 %s) | usage %10s req/s (p99 %s) | ratio usage/health %s\n' \
    "$name" "$h" "$hp99" "$u" "$up99" "$(python3 -c "print(round($u/$h, 3))")"
  [ -z "$non2xx" ] || echo "  WARNING: $non2xx"
}

{
  echo "svc HTTP benchmark, $(date -u +%FT%TZ), $(nproc) cores, wrk -t2 -c$conns -d${duration}s, dist build (fat LTO)"
  echo "start-up of svc sandbox to first /health answer: ${best_ms} ms (best of 5)"

  "$bin" sandbox --bind 127.0.0.1:0 >"$work/sandbox.env" 2>/dev/null &
  pid=$!; pids+=("$pid")
  until grep -q SVC_API_KEY "$work/sandbox.env" 2>/dev/null; do sleep 0.01; done
  . <(sed 's/^/export /' "$work/sandbox.env")
  sleep 1
  echo "idle RSS of svc sandbox after start: $(rss_kib "$pid") KiB"
  run_pair "sandbox (memory)" "$SVC_BASE_URL" "$SVC_API_KEY"
  sleep 2
  echo "RSS of svc sandbox after load, idle 2 s: $(rss_kib "$pid") KiB"

  port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
  key=$(cd "$work" && "$OLDPWD/$bin" keys create --email bench@example.com --credits 10 2>/dev/null)
  (cd "$work" && exec "$OLDPWD/$bin" serve --bind "127.0.0.1:$port" >/dev/null 2>&1) &
  pid=$!; pids+=("$pid")
  until curl -sf "http://127.0.0.1:$port/health" >/dev/null 2>&1; do sleep 0.01; done
  sleep 1
  echo "idle RSS of svc serve (SQLite) after start: $(rss_kib "$pid") KiB"
  run_pair "serve (SQLite)" "http://127.0.0.1:$port" "$key"
} | tee "$out"
echo "written to $out"
