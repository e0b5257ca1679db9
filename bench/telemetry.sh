#!/usr/bin/env bash
# Telemetry figures (goal: at least 10,000 events per second on SQLite on this 2-core machine):
#   - events accepted per second by POST /telemetry/agent-event (wrk, a valid event with an
#     email and a card number to redact) on `svc sandbox --database-url sqlite://...`, and how
#     many of them were stored (counted through the funnel afterwards);
#   - beside it, the SQLite store's own insert rate for the same events (benches/telemetry_store.rs).
# Usage: bench/telemetry.sh [DURATION_SECONDS=10] [CONNECTIONS=32]
set -euo pipefail
cd "$(dirname "$0")/.."
duration=${1:-10}
conns=${2:-32}
command -v wrk >/dev/null || { echo "wrk is missing: apt-get install wrk" >&2; exit 1; }
cargo build --profile dist --locked --bin svc --bench telemetry_store >/dev/null 2>&1
target=${CARGO_TARGET_DIR:-target}
bin=$target/dist/svc
mkdir -p bench/results
out=bench/results/telemetry-$(date -u +%Y%m%dT%H%M%SZ).txt
work=$(mktemp -d)
pid=
cleanup() { [ -n "$pid" ] && kill "$pid" 2>/dev/null; rm -rf "$work"; }
trap cleanup EXIT
export SVC_RATE_LIMIT_PER_IP=1000000000 SVC_RATE_LIMIT_PER_KEY=1000000000 SVC_LOG=warn

"$bin" sandbox --bind 127.0.0.1:0 --database-url "sqlite://$work/events.db" >"$work/env" 2>"$work/log" &
pid=$!
for _ in $(seq 1 300); do grep -q '^SVC_API_KEY=' "$work/env" && break; sleep 0.1; done
base=$(sed -n 's/^SVC_BASE_URL=//p' "$work/env")
key=$(sed -n 's/^SVC_API_KEY=//p' "$work/env")
cat >"$work/event.lua" <<'LUA'
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
wrk.body = '{"event_id":"e-1","timestamp":"2026-11-21T10:00:00Z","session_id":"s-1","agent_protocol":"mcp","discovery_surface":"llms_txt","task_type":"read_page","conversion_state":"capability_read","privacy_redactions":[],"referrer":"https://chat.example.com/?q=mail ann@example.com card 4111 1111 1111 1111"}'
LUA
wrk -t2 -c"$conns" -d"${duration}s" --latency -s "$work/event.lua" "$base/telemetry/agent-event" >"$work/wrk.txt"
sleep 1
stored=$(curl -s -H "Authorization: Bearer $key" "$base/api/telemetry/funnel?hours=1" | python3 -c 'import json,sys; print(sum(c["events"] for c in json.load(sys.stdin)["cells"]))')
rps=$(awk '/Requests\/sec/ {print $2}' "$work/wrk.txt")
p99=$(awk '$1=="99%" {print $2}' "$work/wrk.txt")
sent=$(awk '/requests in/ {print $1}' "$work/wrk.txt")
non2xx=$(grep -h "Non-2xx" "$work/wrk.txt" || true)
kill "$pid"; wait "$pid" 2>/dev/null || true; pid=
raw=$("$(ls -t "$target"/dist/deps/telemetry_store-* | grep -v '\.d$' | head -1)")
{
  echo "svc telemetry benchmark, $(date -u +%FT%TZ), $(nproc) cores, wrk -t2 -c$conns -d${duration}s, dist build (fat LTO)"
  echo "POST /telemetry/agent-event on SQLite: $rps events/s accepted (p99 $p99), $stored of $sent stored"
  echo "SQLite store alone, batches of 1,000: $raw"
  [ -z "$non2xx" ] || echo "WARNING: $non2xx"
} | tee "$out"
