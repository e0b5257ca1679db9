#!/usr/bin/env bash
# A real cluster on loopback: a throwaway Postgres, the sandbox's action sites as their own
# process (the shop every instance calls), three `svc serve` instances on that one database and
# haproxy in front of them (deploy/haproxy.cfg, health checks on /health/ready). Then
# scripts/cluster_check.py plays the production scenarios through the balancer: 200 concurrent
# executes with one Idempotency-Key, executes with distinct keys while one instance is killed
# with SIGKILL and restarted (then the books and every failed key's settled outcome), a rolling
# restart under load, a code brute force with forged X-Forwarded-For, the metrics against
# the ledger (checked by promtool), and what the balancer answers itself once every instance
# is stopped (a problem, not its HTML page).
#
# Usage: scripts/cluster.sh [full|short|bench]   (short: the CI version, fewer requests; bench:
# executions per second through the balancer with 3 and with 1 instance, beside /health)
# Needs haproxy and Postgres (Debian's packages), promtool (Debian's prometheus) for the
# metrics check, and a built binary (SVC_CLUSTER_BIN, default target/debug/svc).
set -euo pipefail
cd "$(dirname "$0")/.."
mode=${1:-full}
bin=$(realpath -m "${SVC_CLUSTER_BIN:-target/debug/svc}")
[ -x "$bin" ] || cargo build --locked --bin svc
command -v haproxy >/dev/null || { echo "haproxy is missing (apt-get install haproxy)"; exit 1; }

base_port=${SVC_CLUSTER_PORT_BASE:-18400}
lb_port=$base_port
work=$(mktemp -d)
pg_dir=/tmp/svc-cluster-pg-$$
pg_port=$((base_port + 53))
pids=()
cleanup() {
  for f in "$work"/node-*.pid; do [ -f "$f" ] && { kill -9 "$(cat "$f")" 2>/dev/null || true; }; done
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
  SVC_TEST_PG_PORT=$pg_port SVC_TEST_PG_DIR=$pg_dir scripts/postgres.sh stop >/dev/null 2>&1 || true
  if [ "${SVC_CLUSTER_KEEP_LOGS:-}" ]; then echo "logs kept in $work"; else rm -rf "$work"; fi
  rm -rf "$pg_dir"
}
trap cleanup EXIT

eval "$(SVC_TEST_PG_PORT=$pg_port SVC_TEST_PG_DIR=$pg_dir \
  SVC_TEST_PG_SETTINGS="-c fsync=off -c synchronous_commit=on" scripts/postgres.sh start)"
psql -q "$SVC_TEST_POSTGRES_URL" -c "CREATE DATABASE cluster"
db=${SVC_TEST_POSTGRES_URL%/postgres}/cluster
export SVC_DATABASE_URL=$db SVC_LOG=${SVC_LOG:-warn}

# The target sites, once, as their own process; the instances reach them by name only because
# SVC_PINNED_HOSTS says so (and they warn about it at start).
"$bin" sandbox sites --maps-dir "$work/maps" >"$work/sites.env" 2>"$work/sites.log" &
pids+=($!)
for _ in $(seq 1 100); do grep -q '^SVC_PINNED_HOSTS=' "$work/sites.env" && break; sleep 0.1; done
pinned=$(sed -n 's/^SVC_PINNED_HOSTS=//p' "$work/sites.env")
[ -n "$pinned" ] || { echo "the sites did not start:"; cat "$work/sites.log"; exit 1; }

"$bin" migrate
"$bin" maps import "$work/maps/shop.sandbox.test.json" >/dev/null
"$bin" maps publish shop.sandbox.test >/dev/null
key=$("$bin" keys create --email ops@cluster.example --credits 1000000 --label cluster)

# One key set for the whole cluster (each instance checks it against the database).
seed() { python3 -c 'import base64, os; print(base64.urlsafe_b64encode(os.urandom(32)).rstrip(b"=").decode())'; }
cat >"$work/cluster.env" <<ENV
export SVC_DATABASE_URL='$db'
export SVC_SIGNING_KEY='$(seed)'
export SVC_CONNECTION_KEY='$(seed)'
export SVC_WEB_BOT_AUTH_KEY='$(seed)'
export SVC_PINNED_HOSTS='$pinned'
export SVC_TRUSTED_PROXIES=127.0.0.1
export SVC_RATE_LIMIT_PER_IP=1000000
export SVC_RATE_LIMIT_PER_KEY=1000000
export SVC_RECOVER_AFTER_SECONDS=30
export SVC_SHUTDOWN_DELAY_SECONDS=1
export SVC_LOG=${SVC_LOG:-warn}
ENV
nodes=() metrics=()
for n in 1 2 3; do
  nodes+=("127.0.0.1:$((base_port + 10 + n))")
  metrics+=("127.0.0.1:$((base_port + 20 + n))")
done
# start_node.sh N: (re)starts instance N in the background, its pid in node-N.pid; used by
# cluster_check.py to restart the instances it kills.
cat >"$work/start_node.sh" <<SH
#!/usr/bin/env bash
. "$work/cluster.env"
n=\$1
port=\$(( $base_port + 10 + n )); mport=\$(( $base_port + 20 + n ))
SVC_BIND=127.0.0.1:\$port SVC_METRICS_BIND=127.0.0.1:\$mport \
  setsid "$bin" serve >>"$work/node-\$n.log" 2>&1 </dev/null &
echo \$! >"$work/node-\$n.pid"
SH
for n in 1 2 3; do bash "$work/start_node.sh" "$n"; done
for n in 1 2 3; do
  for _ in $(seq 1 300); do
    curl -sf "http://${nodes[$((n - 1))]}/health/ready" >/dev/null && break
    sleep 0.1
  done
  curl -sf "http://${nodes[$((n - 1))]}/health/ready" >/dev/null ||
    { echo "instance $n is not ready:"; tail -20 "$work/node-$n.log"; exit 1; }
done

SVC_LB_BIND=127.0.0.1:$lb_port SVC_LB_STATS=127.0.0.1:$((base_port + 1)) \
  SVC_NODE1=${nodes[0]} SVC_NODE2=${nodes[1]} SVC_NODE3=${nodes[2]} \
  haproxy -db -f deploy/haproxy.cfg >"$work/haproxy.log" 2>&1 &
pids+=($!)
lb=http://127.0.0.1:$lb_port
for _ in $(seq 1 100); do curl -sf "$lb/health/ready" >/dev/null && break; sleep 0.1; done

echo "cluster: Postgres $(psql "$db" -Atc 'SHOW server_version'), 3 instances (${nodes[*]}), haproxy $(haproxy -v | head -n 1 | awk '{print $3}') at $lb, commit $(git rev-parse --short HEAD)"
if [ "$mode" = bench ]; then
  # Executions per second through the balancer with three instances, then with one (the other
  # two drained), each beside GET /health through the same balancer, in this one run.
  command -v wrk >/dev/null || { echo "wrk is missing (apt-get install wrk)"; exit 1; }
  cat >"$work/exec.lua" <<LUA
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
wrk.headers["Authorization"] = "Bearer $key"
wrk.body = '{"domain":"shop.sandbox.test","action":"get_product","params":{"sku":"TEA-GREEN"}}'
LUA
  duration=${SVC_CLUSTER_BENCH_SECONDS:-10}
  echo "machine: $(nproc) cores, $(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -n 1); binary $bin"
  measure() { # label
    local h e
    h=$(wrk -t2 -c32 -d"${duration}s" "$lb/health" | awk '/Requests\/sec/ {print $2}')
    e=$(wrk -t2 -c32 -d"${duration}s" --latency -s "$work/exec.lua" "$lb/api/execute" >"$work/exec.txt"; awk '/Requests\/sec/ {print $2}' "$work/exec.txt")
    printf '%-12s /health %8.0f/s   executions %7.0f/s (%.2f%% of /health, p99 %s)   non-2xx: %s\n' \
      "$1" "$h" "$e" "$(python3 -c "print(100 * $e / $h)")" "$(awk '$1=="99%" {print $2}' "$work/exec.txt")" \
      "$(awk '/Non-2xx/ {print $NF}' "$work/exec.txt")"
  }
  measure "3 instances"
  for n in 2 3; do kill -TERM "$(cat "$work/node-$n.pid")"; done
  sleep 3
  measure "1 instance"
  exit 0
fi
if [ "$mode" = short ]; then sizes=(--same-key 50 --distinct 300 --roll-seconds 1); else sizes=(); fi
status=0
python3 scripts/cluster_check.py --lb "$lb" --key "$key" --work "$work" --db "$db" \
  --nodes "$(IFS=,; echo "${nodes[*]}")" --metrics "$(IFS=,; echo "${metrics[*]}")" \
  "${sizes[@]}" || status=1

if command -v promtool >/dev/null; then
  for m in "${metrics[@]}"; do
    if curl -sf "http://$m/metrics" | promtool check metrics >"$work/promtool.txt" 2>&1; then
      echo "PASS promtool check metrics on $m"
    else
      echo "FAIL promtool check metrics on $m:"; cat "$work/promtool.txt"; status=1
    fi
  done
  sed "s/127.0.0.1:18421/${metrics[0]}/; s/127.0.0.1:18422/${metrics[1]}/; s/127.0.0.1:18423/${metrics[2]}/" \
    deploy/prometheus.yml >"$work/prometheus.yml"
  promtool check config "$work/prometheus.yml" >/dev/null && echo "PASS promtool check config deploy/prometheus.yml" ||
    { echo "FAIL promtool check config"; status=1; }
else
  echo "FAIL promtool is missing (apt-get install prometheus)"; status=1
fi
if grep -l 'panicked' "$work"/node-*.log >/dev/null 2>&1; then
  echo "FAIL an instance panicked:"; grep -h -A3 'panicked' "$work"/node-*.log | head -20; status=1
fi
exit $status
