#!/usr/bin/env bash
# Rendered reads of the sandbox's demo single-page app ($SVC_DEMO_SITE/app/: an empty shell
# whose module bundle fetches the story as JSON and builds it), with a warm browser:
#  - p50 / p90 / max of one read (`render: auto`, `max_age: 0`, so every read fetches the shell
#    through the guard and renders it again) over N timed reads after a warm-up;
#  - the resident memory of the service and every process it started (Chromium's included)
#    after 50 and after 500 rendered reads: a page's memory should be given back (goal: within
#    20 %).
# Usage: bench/render.sh [TIMED=30] [TOTAL=500]
# Needs a built binary (SVC_BENCH_BIN, default target/debug/svc: the time goes to Chromium,
# not to the service) and Debian's chromium. Every process it starts is stopped at exit, and it
# checks that no Chromium of its own is left.
set -euo pipefail
cd "$(dirname "$0")/.."
timed=${1:-30}
total=${2:-500}
bin=${SVC_BENCH_BIN:-target/debug/svc}
[ -x "$bin" ] || cargo build --locked --bin svc
work=$(mktemp -d)
pid=
cleanup() {
  if [ -n "$pid" ]; then
    kill "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
  fi
  rm -rf "$work"
}
trap cleanup EXIT

SVC_LOG=warn "$bin" sandbox --bind 127.0.0.1:0 >"$work/env" 2>"$work/log" &
pid=$!
for _ in $(seq 1 300); do grep -q '^SVC_SHOP_SITE=' "$work/env" && break; sleep 0.1; done
base=$(sed -n 's/^SVC_BASE_URL=//p' "$work/env")
key=$(sed -n 's/^SVC_API_KEY=//p' "$work/env")
demo=$(sed -n 's/^SVC_DEMO_SITE=//p' "$work/env")
[ -n "$key" ] || { echo "the sandbox did not start:"; cat "$work/log"; exit 1; }
body="{\"url\":\"$demo/app/\",\"max_age\":0}"

# One rendered read; prints its time in seconds, fails unless the story was rendered.
read_once() {
  local out
  out=$(curl -sf -w '\n%{time_total}' -H "Authorization: Bearer $key" \
    -H 'Content-Type: application/json' -d "$body" "$base/api/read")
  grep -q '"rendered":true' <<<"$out" || { echo "not rendered: ${out:0:300}" >&2; return 1; }
  grep -q 'guided fishing boats home' <<<"$out" || { echo "no story: ${out:0:300}" >&2; return 1; }
  tail -n 1 <<<"$out"
}

# `pid rss` (KiB) of the service and all its descendants.
tree() {
  ps -eo pid=,ppid=,rss= | awk -v root="$pid" '
    { parent[$1] = $2; rss[$1] = $3 }
    END {
      for (p in parent) {
        q = p
        while (q != "" && q != root && q != 0 && q != 1) q = parent[q]
        if (q == root) print p, rss[p]
      }
    }'
}
tree_rss() { tree | awk '{ sum += $2 } END { print sum }'; }

for _ in 1 2 3; do read_once >/dev/null; done # starts the browser; the first pages warm it
: >"$work/times"
for _ in $(seq 1 "$timed"); do read_once >>"$work/times"; done
done_reads=$((3 + timed))
while [ "$done_reads" -lt 50 ]; do read_once >/dev/null; done_reads=$((done_reads + 1)); done
rss50=$(tree_rss)
while [ "$done_reads" -lt "$total" ]; do read_once >/dev/null; done_reads=$((done_reads + 1)); done
rss_total=$(tree_rss)

sort -n "$work/times" | awk -v n="$timed" -v r50="$rss50" -v rt="$rss_total" -v total="$total" '
  { t[NR] = $1 }
  END {
    p50 = t[int((n + 1) / 2)]; p90 = t[int(n * 0.9 + 0.5)]; max = t[n]
    printf "rendered read of the demo SPA, warm browser, %d timed: p50 %.3f s  p90 %.3f s  max %.3f s\n", n, p50, p90, max
    printf "RSS of the service and its processes: after 50 reads %.1f MiB, after %d reads %.1f MiB (%+.1f %%)\n",
      r50 / 1024, total, rt / 1024, (rt - r50) * 100 / r50
  }'
echo "commit $(git rev-parse --short HEAD)  binary $bin  cores $(nproc)  chromium $(chromium --version 2>/dev/null | head -n 1)"
started=$(tree | awk '{ print $1 }')
echo "processes: the service and $(($(wc -w <<<"$started") - 1)) of Chromium's"
kill "$pid"
wait "$pid" 2>/dev/null || true
pid=
# Chromium dies with the service; give its processes a moment (a zombie waiting to be reaped
# is not running).
alive() {
  local n=0
  for p in $started; do
    state=$(ps -o stat= -p "$p" 2>/dev/null || true)
    [ -n "$state" ] && [ "${state:0:1}" != Z ] && n=$((n + 1))
  done
  echo "$n"
}
for _ in $(seq 1 50); do [ "$(alive)" -eq 0 ] && break; sleep 0.1; done
left=$(alive)
[ "$left" -eq 0 ] || { echo "processes left behind: $left"; ps -o pid,stat,args -p "$(tr ' \n' ',,' <<<"$started" | sed 's/,*$//')" | cut -c1-150; exit 1; }
echo "no process left behind"
