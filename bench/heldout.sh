#!/usr/bin/env bash
# The issue's held-out set: the Zyte (scrapinghub) article-extraction benchmark, 181 news and
# blog pages with human-made `articleBody`, scored by the benchmark's own evaluate.py (4-word
# shingles, precision and recall per page, bootstrap confidence intervals). It is not in this
# repository; give the script a checkout of it:
#
#   git clone https://github.com/scrapinghub/article-extraction-benchmark ../article-extraction-benchmark
#   bench/heldout.sh ../article-extraction-benchmark
#
# svc (`svc read --format text` over every page in one process, as bench/articles.sh reads the
# shared corpus) and trafilatura 2.3.1 (bench/articles_trafilatura.py's settings) are written as
# `output/svc.json` and `output/trafilatura.json` in the benchmark's format, beside a link to
# its ground truth, and its evaluate.py scores both in the same run. Nothing is tuned on these
# pages: this only measures. SVC_BIN as in bench/articles.sh (default: a dist build).
set -euo pipefail
# Pages listed in byte order, as Python sorts their file names.
export LC_ALL=C
bench=$(realpath "${1:?usage: bench/heldout.sh BENCHMARK_CHECKOUT}")
cd "$(dirname "$0")/.."
for need in ground-truth.json evaluate.py html; do
  [ -e "$bench/$need" ] || { echo "$bench/$need is missing: not a checkout of the benchmark" >&2; exit 2; }
done
out=${CARGO_TARGET_DIR:-target}/bench/heldout
rm -rf "$out"
mkdir -p "$out/pages" "$out/eval/output"
bin=${SVC_BIN:-}
if [ -z "$bin" ]; then
  cargo build --profile dist --locked --bin svc
  bin=${CARGO_TARGET_DIR:-target}/dist/svc
fi
venv=$PWD/.venv-bench
if [ ! -x "$venv/bin/python" ] || ! "$venv/bin/python" -c 'import trafilatura' 2>/dev/null; then
  python3 -m venv "$venv"
  "$venv/bin/pip" install --quiet trafilatura==2.3.1 lxml_html_clean
fi

# The pages as saved files, in the ground truth's order of keys sorted.
for gz in "$bench"/html/*.html.gz; do
  gunzip -c "$gz" >"$out/pages/$(basename "$gz" .gz)"
done
files=()
for page in "$out"/pages/*.html; do files+=(--file "$page"); done
/usr/bin/time -q -f '{"cpu_seconds": %U, "sys": %S, "peak_rss_kib": %M}' -o "$out/svc-time.json" \
  "$bin" read --format text "${files[@]}" >"$out/svc.jsonl" || [ $? -eq 1 ]

"$venv/bin/python" - "$bench" "$out" <<'PY'
import json, os, sys, time
import trafilatura
bench, out = sys.argv[1], sys.argv[2]
truth = json.load(open(os.path.join(bench, "ground-truth.json"), encoding="utf-8"))
# The order the shell listed the files in: their names sorted bytewise.
keys = [p[: -len(".html")] for p in sorted(os.listdir(os.path.join(out, "pages")))]
if set(keys) != set(truth):
    sys.exit(f"pages and ground truth differ: {len(keys)} pages, {len(truth)} answers")
lines = open(os.path.join(out, "svc.jsonl"), encoding="utf-8").read().rstrip("\n").split("\n")
assert len(lines) == len(keys), (len(lines), len(keys))
svc, blocked = {}, []
for key, line in zip(keys, lines):
    page = json.loads(line)
    if page.get("outcome") != "page":
        blocked.append(f"{key} ({page.get('reason') or page.get('detail')})")
    svc[key] = {"articleBody": page.get("text") or ""}
started = time.process_time()
traf = {}
for key in keys:
    html = open(os.path.join(out, "pages", key + ".html"), "rb").read()
    text = trafilatura.extract(html, url=truth[key].get("url"), output_format="txt",
                               include_comments=False)
    traf[key] = {"articleBody": text or ""}
traf_cpu = time.process_time() - started
json.dump(svc, open(os.path.join(out, "eval", "output", "svc.json"), "w"))
json.dump(traf, open(os.path.join(out, "eval", "output", "trafilatura.json"), "w"))
s = json.load(open(os.path.join(out, "svc-time.json")))
print(f"pages: {len(keys)}; svc blocked {len(blocked)}{': ' + ', '.join(blocked) if blocked else ''}")
print(f"svc {len(keys) / (s['cpu_seconds'] + s['sys']):.0f} pages per CPU-second (start-up included), "
      f"trafilatura {len(keys) / traf_cpu:.0f} (extraction only)")
PY
ln -s "$bench/ground-truth.json" "$out/eval/ground-truth.json"
cpu_model=$(awk -F': ' '/^model name/ {print $2; exit}' /proc/cpuinfo 2>/dev/null || true)
echo "machine: $(nproc) cores${cpu_model:+, $cpu_model}; commit $(git rev-parse --short HEAD)$(git diff --quiet HEAD -- . || echo ' (with local changes)')"
(cd "$out/eval" && "$venv/bin/python" "$bench/evaluate.py")
