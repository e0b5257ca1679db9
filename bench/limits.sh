#!/usr/bin/env bash
# The cost per request of a limit shared through the store (issue 18): one `LimitStore::hit`
# (an upsert) on memory, SQLite and Postgres, sequential latency and the rate 16 concurrent
# callers get (benches/limit_store.rs). Postgres is measured when SVC_TEST_POSTGRES_URL is set
# (or a throwaway server is started from Debian's packages with START_POSTGRES=1).
# Usage: bench/limits.sh [HITS=5000]   (SVC_BENCH_PROFILE=dist for the production build)
set -euo pipefail
cd "$(dirname "$0")/.."
export LIMIT_HITS=${1:-5000}
profile=${SVC_BENCH_PROFILE:-release}
pg_dir=/tmp/svc-limits-pg-$$
pg_port=${SVC_BENCH_PG_PORT:-54353}
cleanup() {
  if [ "${START_POSTGRES:-0}" = 1 ]; then
    SVC_TEST_PG_PORT=$pg_port SVC_TEST_PG_DIR=$pg_dir scripts/postgres.sh stop >/dev/null 2>&1 || true
    rm -rf "$pg_dir"
  fi
}
trap cleanup EXIT
if [ "${START_POSTGRES:-0}" = 1 ]; then
  eval "$(SVC_TEST_PG_PORT=$pg_port SVC_TEST_PG_DIR=$pg_dir scripts/postgres.sh start)"
fi
mkdir -p bench/results
out=bench/results/limits-$(date -u +%Y%m%dT%H%M%SZ).txt
cargo bench --locked --profile "$profile" --bench limit_store 2>/dev/null | tee "$out"
echo "(profile $profile; $(nproc) cores; written to $out)"
