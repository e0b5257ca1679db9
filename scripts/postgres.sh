#!/usr/bin/env bash
# Starts (or stops) a throwaway Postgres server for the test suite and prints its URL.
#   eval "$(scripts/postgres.sh start)"   # exports SVC_TEST_POSTGRES_URL
#   scripts/postgres.sh stop
# Uses the newest /usr/lib/postgresql/*/bin; as root it runs the server as the `postgres` user.
set -euo pipefail
cmd=${1:-start}
port=${SVC_TEST_PG_PORT:-54329}
root=${SVC_TEST_PG_DIR:-/tmp/svc-test-pg}
bin=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1)
if [ -z "$bin" ]; then
  echo "no Postgres server found under /usr/lib/postgresql (apt-get install postgresql)" >&2
  exit 1
fi
as_owner() {
  if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi
}
case "$cmd" in
  start)
    mkdir -p "$root"
    [ "$(id -u)" = 0 ] && chown postgres: "$root"
    if ! as_owner "$bin/pg_ctl" -D "$root/data" status >/dev/null 2>&1; then
      # Every test makes its own database and none is dropped: a server that is not running is
      # started on a fresh data directory, so runs do not pile up (32 GB seen after a few days).
      rm -rf "$root/data"
      as_owner "$bin/initdb" -D "$root/data" -A trust -U svc >"$root/initdb.log" 2>&1
      # Durability is not under test here; speed is welcome. The benchmarks set their own
      # (synchronous_commit on) through SVC_TEST_PG_SETTINGS.
      settings=${SVC_TEST_PG_SETTINGS:--c fsync=off -c synchronous_commit=off -c full_page_writes=off}
      as_owner "$bin/pg_ctl" -D "$root/data" -l "$root/server.log" -w -t 60 \
        -o "-p $port -k $root -c listen_addresses=127.0.0.1 $settings -c max_connections=400" \
        start >/dev/null
    fi
    echo "export SVC_TEST_POSTGRES_URL=postgres://svc@127.0.0.1:$port/postgres"
    ;;
  database)
    # A new empty database on the running server: prints its URL.
    name=${2:?usage: $0 database NAME}
    as_owner "$bin/createdb" -h 127.0.0.1 -p "$port" -U svc "$name"
    echo "postgres://svc@127.0.0.1:$port/$name"
    ;;
  stop)
    as_owner "$bin/pg_ctl" -D "$root/data" -m fast stop >/dev/null 2>&1 || true
    ;;
  *)
    echo "usage: $0 start|database NAME|stop" >&2
    exit 2
    ;;
esac
