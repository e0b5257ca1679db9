#!/usr/bin/env bash
# Article extraction beside trafilatura, in the same run on the same 480 pages of
# ../shared/corpora/articles (four public benchmarks with human-made ground truth):
#   (a) svc: `svc read --file ... --format text` over every page in one process (all cores),
#       its JSON lines turned into score.py's input (a blocked page counts as empty);
#   (b) trafilatura 2.3.1 (PyPI, venv .venv-bench) over the same pages in one process;
#   (c) the corpus's own score.py on both (with the Zyte benchmark's metric beside its own),
#       then a table with CPU seconds (start-up included) and peak RSS of each side.
# Usage: bench/articles.sh     Env: SVC_BIN (default: the dist build), SVC_ARTICLES_DIR,
#   ROUNDS (side-by-side timed runs, default 3).
set -euo pipefail
cd "$(dirname "$0")/.."
corpus=${SVC_ARTICLES_DIR:-../shared/corpora/articles}
out=${CARGO_TARGET_DIR:-target}/bench/articles
mkdir -p "$out"
bin=${SVC_BIN:-}
if [ -z "$bin" ]; then
  cargo build --profile dist --locked --bin svc
  bin=${CARGO_TARGET_DIR:-target}/dist/svc
fi
venv=.venv-bench
if [ ! -x "$venv/bin/python" ] || ! "$venv/bin/python" -c 'import trafilatura' 2>/dev/null; then
  python3 -m venv "$venv"
  "$venv/bin/pip" install --quiet trafilatura==2.3.1 lxml_html_clean
fi

# The pages, in one order both sides follow.
(cd "$corpus" && find . -name source.html | sed 's|^\./||; s|/source.html$||' | LC_ALL=C sort) >"$out/pages.txt"
files=()
while read -r page; do files+=(--file "$corpus/$page/source.html"); done <"$out/pages.txt"

# (a) svc, timed by the kernel: user + system seconds and peak RSS of the one process; and
# (b) trafilatura, right after it. The machine's speed swings from minute to minute, so the two
# run side by side ROUNDS times (default 3) and each round gives its own ratio; the scores come
# from the first round (both sides give the same text every round).
rounds=${ROUNDS:-3}
for round in $(seq 1 "$rounds"); do
  /usr/bin/time -q -f '{"cpu_seconds": %U, "sys": %S, "peak_rss_kib": %M}' -o "$out/svc-time-$round.json" \
    "$bin" read --format text "${files[@]}" >"$out/svc-$round.jsonl" || [ $? -eq 1 ]
  "$venv/bin/python" bench/articles_trafilatura.py "$corpus" "$out/pages.txt" "$out/trafilatura-$round.json" \
    >"$out/trafilatura-time-$round.json"
done
# Every round reads every page alike (all but the time each was read).
python3 - "$out" "$rounds" <<'PY'
import json, sys
out, rounds = sys.argv[1], int(sys.argv[2])
def pages(r):
    return [{k: v for k, v in json.loads(l).items() if k != "fetched_at"}
            for l in open(f"{out}/svc-{r}.jsonl", encoding="utf-8").read().rstrip("\n").split("\n")]
first = pages(1)
for r in range(2, rounds + 1):
    if pages(r) != first:
        print(f"warning: svc read the pages differently in round {r}", file=sys.stderr)
PY
cp "$out/svc-1.jsonl" "$out/svc.jsonl"
cp "$out/trafilatura-1.json" "$out/trafilatura.json"
python3 - "$out" <<'PY'
import json, sys
out = sys.argv[1]
pages = open(f"{out}/pages.txt").read().split()
# One JSON line per page; split on \n only (a text may hold U+2028 or U+0085).
lines = open(f"{out}/svc.jsonl", encoding="utf-8").read().rstrip("\n").split("\n")
assert len(lines) == len(pages), (len(lines), len(pages))
texts, blocked = {}, []
for name, line in zip(pages, lines):
    d = json.loads(line)
    texts[name] = d.get("text") if d.get("outcome") == "page" else None
    if d.get("outcome") != "page":
        blocked.append(f"{name} ({d.get('reason') or d.get('detail')})")
json.dump(texts, open(f"{out}/svc.json", "w"))
json.dump(blocked, open(f"{out}/svc-blocked.json", "w"))
PY

# (c) Scores and the table.
# `--zyte` adds, on the three text sets, the metric of the Zyte article-extraction benchmark
# (zP, zR, zF1: 4-word shingles), the one the issue's held-out 181 pages are scored by.
python3 "$corpus/score.py" "$out/svc.json" --zyte --per-page "$out/svc-per-page.json" >"$out/svc-score.txt"
python3 "$corpus/score.py" "$out/trafilatura.json" --zyte --per-page "$out/trafilatura-per-page.json" >"$out/trafilatura-score.txt"
cpu_model=$(awk -F': ' '/^model name/ {print $2; exit}' /proc/cpuinfo 2>/dev/null || true)
echo "machine: $(nproc) cores${cpu_model:+, $cpu_model}; commit $(git rev-parse --short HEAD)$(git diff --quiet HEAD -- . || echo ' (with local changes)')"
echo "== svc (blocked: $(python3 -c "import json;print(len(json.load(open('$out/svc-blocked.json'))))"))"
cat "$out/svc-score.txt"
echo "== trafilatura 2.3.1"
cat "$out/trafilatura-score.txt"
python3 - "$out" "$rounds" <<'PY'
import json, statistics, sys
out, rounds = sys.argv[1], int(sys.argv[2])
ratios, svc_speeds, traf_speeds, svc_rss, traf_rss = [], [], [], [], []
for r in range(1, rounds + 1):
    s = json.load(open(f"{out}/svc-time-{r}.json"))
    t = json.load(open(f"{out}/trafilatura-time-{r}.json"))
    n = t["pages"]
    sv, tv = n / (s["cpu_seconds"] + s["sys"]), n / t["cpu_seconds"]
    svc_speeds.append(sv); traf_speeds.append(tv); ratios.append(sv / tv)
    svc_rss.append(s["peak_rss_kib"] // 1024); traf_rss.append(t["peak_rss_kib"] // 1024)
    print(f"round {r}: svc {sv:.1f} pages per CPU-second, trafilatura {tv:.1f} ({sv / tv:.1f}x); "
          f"peak RSS svc {svc_rss[-1]} MiB, trafilatura {traf_rss[-1]} MiB")
print(f"speed: median {statistics.median(ratios):.1f}x trafilatura's pages per CPU-second "
      f"(rounds {min(ratios):.1f}x to {max(ratios):.1f}x); svc {min(svc_speeds):.0f}-{max(svc_speeds):.0f}, "
      f"trafilatura {min(traf_speeds):.1f}-{max(traf_speeds):.1f} pages per CPU-second; "
      f"peak RSS svc {max(svc_rss)} MiB, trafilatura {max(traf_rss)} MiB")
PY
