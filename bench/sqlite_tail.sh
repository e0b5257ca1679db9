#!/usr/bin/env bash
# Where the slowest executions at a fixed rate come from, on the SQLite sandbox: hey at a
# fixed rate (as bench/execute.sh's half-rate phase, after the same full-load warm-up) logs
# every request; the slow ones (at or above SLOW_MS) are grouped into episodes (slow requests
# less than 30 ms apart), and the script prints the percentiles, the episodes and the time
# between them. Then, in a second run at the same rate, strace counts the fsyncs of every
# thread of the service for three seconds, with their durations: the writer's checkpoint
# (WAL, then database file) against the checkpointer's (the WAL on a reader connection's sqlx
# thread, then the database file on a tokio blocking thread, named tokio-rt-worker).
# Needs hey, strace and python3. Usage: bench/sqlite_tail.sh [PER_WORKER_RATE=70] (16 workers)
#   SVC_BENCH_BIN=path (default target/dist/svc)  SLOW_MS=13
set -euo pipefail
cd "$(dirname "$0")/.."
q=${1:-70}
slow_ms=${SLOW_MS:-13}
bin=${SVC_BENCH_BIN:-target/dist/svc}
for tool in hey strace python3; do
  command -v $tool >/dev/null || { echo "$tool is missing: apt-get install $tool" >&2; exit 1; }
done
[ -x "$bin" ] || cargo build --profile dist --locked --bin svc
work=$(mktemp -d)
pid=
cleanup() {
  [ -n "$pid" ] && { kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; }
  rm -rf "$work"
}
trap cleanup EXIT
body='{"domain":"shop.sandbox.test","action":"get_product","params":{"sku":"TEA-GREEN"}}'

# Starts a sandbox on a new SQLite file; sets pid, base and key.
start() {
  rm -f "$work"/db* "$work/env"
  SVC_RATE_LIMIT_PER_IP=1000000 SVC_RATE_LIMIT_PER_KEY=1000000 SVC_LOG=warn \
    SVC_SANDBOX_SEED_CREDITS=1000000000 \
    "$bin" sandbox --bind 127.0.0.1:0 --database-url "sqlite://$work/db" >"$work/env" 2>"$work/log" &
  pid=$!
  for _ in $(seq 1 300); do grep -q '^SVC_API_KEY=' "$work/env" && break; sleep 0.1; done
  base=$(sed -n 's/^SVC_BASE_URL=//p' "$work/env")
  key=$(sed -n 's/^SVC_API_KEY=//p' "$work/env")
  [ -n "$key" ] || { echo "the sandbox did not start:"; cat "$work/log"; exit 1; }
  hey -c 32 -z 5s -m POST -H "Authorization: Bearer $key" -T application/json -d "$body" \
    "$base/api/execute" >/dev/null
}
stop() {
  kill "$pid" 2>/dev/null || true
  wait "$pid" 2>/dev/null || true
  pid=
}

echo "commit $(git rev-parse --short HEAD), $bin, hey -c16 -q$q (about $((16 * q))/s), slow: >= ${slow_ms} ms"
start
hey -c 16 -q "$q" -z 10s -o csv -m POST -H "Authorization: Bearer $key" -T application/json \
  -d "$body" "$base/api/execute" >"$work/lat.csv"
stop
python3 - "$work/lat.csv" "$slow_ms" <<'PY'
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
slow_s = float(sys.argv[2]) / 1000
lat = sorted((float(r["offset"]), float(r["response-time"])) for r in rows)
ts = sorted(l for _, l in lat)
pct = lambda p: ts[min(len(ts) - 1, int(len(ts) * p))] * 1000
print(f"{len(lat)} requests: p50 {pct(0.5):.1f} ms, p95 {pct(0.95):.1f} ms, p99 {pct(0.99):.1f} ms")
episodes = []
for o, l in lat:
    if l < slow_s:
        continue
    if episodes and o - episodes[-1][-1][0] < 0.03:
        episodes[-1].append((o, l))
    else:
        episodes.append([(o, l)])
slow = sum(len(e) for e in episodes)
print(f"{slow} slow requests ({100 * slow / len(lat):.1f}%) in {len(episodes)} episodes")
big = [e for e in episodes if len(e) >= 5]
starts = [e[0][0] for e in big]
gaps = sorted(b - a for a, b in zip(starts, starts[1:]))
if gaps:
    print(f"{len(big)} episodes of 5 or more; time between them: median {gaps[len(gaps) // 2] * 1000:.0f} ms "
          f"({gaps[0] * 1000:.0f}-{gaps[-1] * 1000:.0f})")
for e in big[:8]:
    print(f"  at {e[0][0]:.3f} s: {len(e)} requests, slowest {max(l for _, l in e) * 1000:.1f} ms")
PY

start
hey -c 16 -q "$q" -z 6s -m POST -H "Authorization: Bearer $key" -T application/json \
  -d "$body" "$base/api/execute" >/dev/null &
hey_pid=$!
sleep 1.5
timeout 3 strace -f -T -e trace=fsync,fdatasync -p "$pid" -o "$work/strace" 2>/dev/null || true
for t in /proc/"$pid"/task/*; do echo "$(basename "$t") $(cat "$t/comm")"; done >"$work/threads"
wait "$hey_pid" || true
stop
echo "fsyncs in 3 s, by thread (the writer is the sqlx thread whose fsyncs come in pairs, WAL then database):"
python3 - "$work/strace" "$work/threads" <<'PY'
import re, sys, collections
names = dict(line.split(maxsplit=1) for line in open(sys.argv[2]).read().splitlines())
calls = collections.defaultdict(list)
for line in open(sys.argv[1]):
    m = re.match(r"(\d+)\s+f(?:data)?sync\((\d+)\).*<([\d.]+)>", line)
    if m:
        calls[(m.group(1), m.group(2))].append(float(m.group(3)) * 1000)
for (tid, fd), ms in sorted(calls.items(), key=lambda kv: -sum(kv[1])):
    name = names.get(tid, "?").strip()
    print(f"  thread {tid} ({name}) fd {fd}: {len(ms)} fsyncs, {sum(ms):.1f} ms in all, slowest {max(ms):.1f} ms")
PY
