#!/usr/bin/env bash
# What one webhook claim costs on Postgres when one endpoint has a long backlog: the claim
# statement of `HookStore::claim_due` (adapters/sql/src/postgres/hooks.rs), taken from the
# source of each commit named (default: HEAD), run under EXPLAIN ANALYZE on a throwaway server
# against a database migrated to that commit's schema and seeded with BACKLOG pending
# deliveries for one flooded endpoint, one for a quiet endpoint of another account, and 49 idle
# endpoints. Prints each commit's execution time (three runs) and which endpoints the claim
# took (limit 16; caps 4 per endpoint and 16 per account where the commit has them).
# Usage: bench/claims.sh [COMMIT...]   BACKLOG="1000 300000"
# Needs psql and a Postgres server binary (scripts/postgres.sh); starts and stops its own.
set -euo pipefail
cd "$(dirname "$0")/.."
commits=("$@")
[ ${#commits[@]} -gt 0 ] || commits=(HEAD)
backlogs=${BACKLOG:-1000 300000}
work=$(mktemp -d)
pg_dir=/tmp/svc-claims-pg-$$
pg_port=${SVC_BENCH_PG_PORT:-54352}
cleanup() {
  SVC_TEST_PG_PORT=$pg_port SVC_TEST_PG_DIR=$pg_dir scripts/postgres.sh stop >/dev/null 2>&1 || true
  rm -rf "$work" "$pg_dir"
}
trap cleanup EXIT
eval "$(SVC_TEST_PG_PORT=$pg_port SVC_TEST_PG_DIR=$pg_dir scripts/postgres.sh start)"
server=${SVC_TEST_POSTGRES_URL:?the Postgres server did not start}
echo "webhook claims, $(date -u +%FT%TZ), machine: $(nproc) cores, $(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -n 1)"

cat >"$work/seed.sql" <<'EOF'
INSERT INTO accounts (id, email, plan, environment, created_at)
  VALUES ('acc_flood', 'f@example.com', 'free', 'test', now()),
         ('acc_quiet', 'q@example.com', 'free', 'test', now());
INSERT INTO webhook_endpoints (id, account_id, url, description, events, secret, created_at)
  SELECT 'we_' || g, CASE WHEN g = 0 THEN 'acc_flood' ELSE 'acc_quiet' END, 'https://x.example/',
    '', 'task.completed', '\x00', now()
  FROM generate_series(0, 50) g;
INSERT INTO webhook_events (id, account_id, type, source, payload, created_at)
  VALUES ('evt_f', 'acc_flood', 'task.completed', 's', '{}', now()),
         ('evt_q', 'acc_quiet', 'task.completed', 's', '{}', now());
INSERT INTO webhook_deliveries
    (id, account_id, event_id, endpoint_id, status, attempts, next_attempt_at, created_at)
  SELECT 'whd_f' || lpad(g::text, 8, '0'), 'acc_flood', 'evt_f', 'we_0', 'pending', 0,
    now() - interval '1 hour' + g * interval '1 ms', now()
  FROM generate_series(1, :backlog) g;
INSERT INTO webhook_deliveries
    (id, account_id, event_id, endpoint_id, status, attempts, next_attempt_at, created_at)
  VALUES ('whd_q1', 'acc_quiet', 'evt_q', 'we_1', 'pending', 0, now(), now());
ANALYZE;
EOF

n=0
for commit in "${commits[@]}"; do
  n=$((n + 1))
  git show "$commit:adapters/sql/src/postgres/hooks.rs" >"$work/hooks.rs"
  # The claim statement, its placeholders filled: lease, lease end, now, limit, caps.
  python3 - "$work/hooks.rs" "$work/claim.sql" <<'PY'
import re, sys
src = open(sys.argv[1]).read()
i = src.index("async fn claim_due(")
j = src.index("sqlx::query(", i) + len("sqlx::query(")
k = src.index('",\n        )', j) + 1
body = "\n".join(l for l in src[j:k].split("\n") if not l.strip().startswith("//"))
sql = re.sub(r"\\\n\s*", "", body.strip().strip('"'))
for p, v in [("$1", "'lease'"), ("$2", "now() + interval '60 s'"), ("$3", "now()"),
             ("$4", "16"), ("$5", "4"), ("$6", "16")]:
    sql = sql.replace(p, v)
open(sys.argv[2], "w").write(sql)
PY
  db=claims_$n
  psql "$server" -q -c "CREATE DATABASE $db" >/dev/null
  url=${server%/postgres}/$db
  git ls-tree --name-only "$commit" migrations/postgres/ | sort | while read -r m; do
    git show "$commit:$m" | psql "$url" -q -v ON_ERROR_STOP=1 >/dev/null
  done
  for backlog in $backlogs; do
    psql "$url" -q -c "TRUNCATE webhook_deliveries, webhook_events, webhook_endpoints CASCADE" \
      -c "DELETE FROM accounts WHERE id IN ('acc_flood', 'acc_quiet')" >/dev/null
    psql "$url" -q -v backlog="$backlog" -f "$work/seed.sql" >/dev/null
    times=()
    for run in 1 2 3; do
      t=$( (echo "BEGIN; EXPLAIN (ANALYZE, TIMING OFF, SUMMARY ON)"; cat "$work/claim.sql"; echo "; ROLLBACK;") |
        psql "$url" -At | sed -n 's/^Execution Time: \([0-9.]*\) ms/\1/p')
      times+=("$t")
    done
    took=$( (echo "BEGIN;"; cat "$work/claim.sql"; echo "; ROLLBACK;") | psql "$url" -At |
      awk -F'|' 'NF > 4 { n[$5]++ } END { for (e in n) printf "%s %d, ", e, n[e] }')
    printf '%-12s backlog %7d: %s ms (three runs); claimed: %s\n' \
      "$(git rev-parse --short "$commit")" "$backlog" "${times[*]}" "${took%, }"
  done
done
