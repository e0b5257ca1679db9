#!/usr/bin/env bash
# Counts the Postgres round trips of one execution: a throwaway server logs every statement
# (log_statement=all) of one database, a sandbox on it runs a few warm-up executions (map and
# key caches filled), then N more; the statements logged during those N, divided by N.
# Usage: bench/round_trips.sh [EXECUTIONS=20]
# Needs a built binary (SVC_BENCH_BIN, default target/debug/svc: round trips do not depend on
# the profile) and Postgres from Debian's packages.
set -euo pipefail
cd "$(dirname "$0")/.."
n=${1:-20}
bin=${SVC_BENCH_BIN:-target/debug/svc}
[ -x "$bin" ] || cargo build --locked --bin svc
work=$(mktemp -d)
pg_dir=/tmp/svc-rt-pg-$$
pg_port=${SVC_BENCH_PG_PORT:-54352}
pid=
cleanup() {
  [ -n "$pid" ] && { kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; }
  SVC_TEST_PG_PORT=$pg_port SVC_TEST_PG_DIR=$pg_dir scripts/postgres.sh stop >/dev/null 2>&1 || true
  rm -rf "$work" "$pg_dir"
}
trap cleanup EXIT

eval "$(SVC_TEST_PG_PORT=$pg_port SVC_TEST_PG_DIR=$pg_dir \
  SVC_TEST_PG_SETTINGS="-c fsync=off -c log_line_prefix=%d@ -c log_min_duration_statement=-1" \
  scripts/postgres.sh start)"
psql -q "$SVC_TEST_POSTGRES_URL" -c "CREATE DATABASE rt" -c "ALTER DATABASE rt SET log_statement = 'all'"
db=${SVC_TEST_POSTGRES_URL%/postgres}/rt
log=$pg_dir/server.log

# The execution benchmark's account (a billion credits): far from the low-balance mark, where no
# balance is read after the charge (an account within 1,000 credits of it adds one statement).
SVC_SANDBOX_SEED_CREDITS=${SVC_SANDBOX_SEED_CREDITS:-1000000000} SVC_LOG=warn "$bin" sandbox --bind 127.0.0.1:0 --database-url "$db" >"$work/env" 2>"$work/log" &
pid=$!
for _ in $(seq 1 300); do grep -q '^SVC_SHOP_SITE=' "$work/env" && break; sleep 0.1; done
base=$(sed -n 's/^SVC_BASE_URL=//p' "$work/env")
key=$(sed -n 's/^SVC_API_KEY=//p' "$work/env")
[ -n "$key" ] || { echo "the sandbox did not start:"; cat "$work/log"; exit 1; }
body='{"domain":"shop.sandbox.test","action":"get_product","params":{"sku":"TEA-GREEN"}}'
execute() {
  curl -sf -o /dev/null -H "Authorization: Bearer $key" -H 'Content-Type: application/json' \
    -d "$body" "$base/api/execute"
}
for _ in 1 2 3; do execute; done
sleep 1.2 # background jobs settle; the key cache (1 s) is refilled by the first timed request
execute
sleep 0.2
before=$(grep -c '^rt@LOG:  \(statement\|execute\)' "$log" || true)
for _ in $(seq 1 "$n"); do execute; done
sleep 0.2
after=$(grep -c '^rt@LOG:  \(statement\|execute\)' "$log" || true)
echo "commit $(git rev-parse --short HEAD)  executions $n  statements $((after - before))  per execution $(awk -v a=$((after - before)) -v n="$n" 'BEGIN{printf "%.2f", a/n}')"
echo "statements logged during them, by kind (first line of each):"
# A statement starts on its LOG line ("execute <name>: SELECT ...") or, when that line ends at
# the colon, on the next one.
awk '/^rt@LOG:  (statement|execute)/ {n++; if (n > before) {text = $0; sub(/^rt@LOG:  [a-z]+( [^:]*)?: */, "", text);
       if (text == "") {getline text; sub(/^[ \t]+/, "", text)}; print substr(text, 1, 110)}}' \
  before="$before" "$log" | sort | uniq -c | sort -rn
