#!/usr/bin/env bash
# Reading speed beside Python trafilatura, measured in the same run on the same pages:
#   (a) benches/reader.rs: svc's ReadService::read_document on every corpus page, dist build (fat LTO);
#   (b) bench/trafilatura_bench.py: trafilatura 2.3.1 extract + extract_metadata on the same
#       pages (venv .venv-bench, created when missing);
#   (c) a comparison table, printed and written to target/bench/reader-comparison.md.
# Both run pinned to CPU 0 (taskset) when available, one page at a time.
# Usage: bench/reader.sh        Env: READER_BENCH_ROUNDS (default 3), SVC_CORPUS_DIR.
set -euo pipefail
cd "$(dirname "$0")/.."
out=${CARGO_TARGET_DIR:-target}/bench
mkdir -p "$out"
export READER_BENCH_ROUNDS=${READER_BENCH_ROUNDS:-3}

pin=()
if command -v taskset >/dev/null; then pin=(taskset -c 0); fi

# (a) Build with every core, then measure pinned.
cargo bench --locked --bench reader --no-run
"${pin[@]}" cargo bench --locked --bench reader

# (b) The Python side.
venv=.venv-bench
if [ ! -x "$venv/bin/python" ] || ! "$venv/bin/python" -c 'import trafilatura, lxml_html_clean' 2>/dev/null; then
  python3 -m venv "$venv"
  "$venv/bin/pip" install --quiet trafilatura==2.3.1 lxml_html_clean
fi
"${pin[@]}" "$venv/bin/python" bench/trafilatura_bench.py "$out"

# trafilatura's texts scored again by the Rust scorer (expected texts and tokens from
# svc_extract::evaluation), to check that the Python F1 counts the same way.
cargo bench --locked --bench reader -- --score "$out/trafilatura-texts.json" >"$out/trafilatura-rescored.json"

# (c) The comparison.
cpu_model=$(awk -F': ' '/^model name/ {print $2; exit}' /proc/cpuinfo 2>/dev/null || true)
MACHINE="$(nproc) cores${cpu_model:+, $cpu_model}" PINNED="${pin[*]:-not pinned}" \
COMMIT="$(git rev-parse --short HEAD 2>/dev/null || echo unknown)" CHANGED="$(git diff --name-only HEAD 2>/dev/null | paste -sd ' ' || true)" \
  "$venv/bin/python" - "$out" <<'EOF'
import datetime, json, os, sys
out = sys.argv[1]
ours = json.load(open(os.path.join(out, "reader.json")))
theirs = json.load(open(os.path.join(out, "trafilatura.json")))
rescored = json.load(open(os.path.join(out, "trafilatura-rescored.json")))

def f(v, d=1):
    return "n/a" if v is None else f"{v:,.{d}f}"

def triple(s, d=2):
    return "n/a" if not s else f"{f(s['median'], d)} / {f(s['p95'], d)} / {f(s['max'], d)}"

def ratio(a, b, d=1):
    return "n/a" if not a or not b else f"{a / b:.{d}f}×"

ppc = ours["pages_per_cpu_s"] / theirs["pages_per_cpu_s"]
o, t = ours["page_wall_ms"], theirs["page_wall_ms"]
ohp, thp = ours["page_heap_peak_mib"], theirs["page_heap_peak_mib"]
org, trg = ours["page_rss_growth_mib"], theirs["page_rss_growth_mib"]
rows = [
    ("pages per CPU-second (best round)", f(ours["pages_per_cpu_s"]), f(theirs["pages_per_cpu_s"]),
     f"**{ppc:.1f}×** ({'meets' if ppc >= 10 else 'misses'} the 10× goal)"),
    ("CPU s per round", " / ".join(f(x, 3) for x in ours["round_cpu_s"]),
     " / ".join(f(x, 3) for x in theirs["round_cpu_s"]), ""),
    ("wall ms per page, p50", f(o["p50"], 2), f(t["p50"], 2), ratio(t["p50"], o["p50"])),
    ("wall ms per page, p95", f(o["p95"], 2), f(t["p95"], 2), ratio(t["p95"], o["p95"])),
    ("wall ms per page, mean / max", f"{f(o['mean'], 2)} / {f(o['max'], 1)}", f"{f(t['mean'], 2)} / {f(t['max'], 1)}", ""),
    ("mean token F1 vs expected.html", f(ours["mean_token_f1"], 4),
     f"{f(theirs['mean_token_f1'], 4)} (Rust scorer: {f(rescored['mean_f1'], 4)})", ""),
    ("pages with F1 under 0.8", str(len(ours["pages_f1_under_0_8"])), str(len(theirs["pages_f1_under_0_8"])), ""),
    ("heap peak per page, MiB, median / p95 / max", triple(ohp), triple(thp) + " ¹",
     ratio(thp and thp["median"], ohp and ohp["median"]) + " (median)"),
    ("RSS growth per page, MiB, median / p95 / max", triple(org), triple(trg),
     ratio(trg and trg["median"], org and org["median"]) + " (median)"),
    ("process peak RSS, MiB (after loading the corpus)",
     f"{f(ours['process_peak_rss_mib'])} ({f(ours['rss_after_corpus_load_mib'])})",
     f"{f(theirs['process_peak_rss_mib'])} ({f(theirs['rss_after_corpus_load_mib'])})",
     ratio(theirs["process_peak_rss_mib"], ours["process_peak_rss_mib"])),
]
lines = [
    f"Reading: {ours['pages']} pages of {ours['corpus']}, one at a time, {ours['rounds']} rounds; "
    f"{datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC, {os.environ['MACHINE']}, "
    f"{os.environ['PINNED']}, commit {os.environ['COMMIT']}"
    + (f" with uncommitted changes to {os.environ['CHANGED']}" if os.environ.get("CHANGED") else "") + ".",
    "",
    f"| figure | svc `read_document` | trafilatura {theirs['trafilatura']} (Python {theirs['python']}) | svc advantage |",
    "|---|---|---|---|",
    *[f"| {a} | {b} | {c} | {d} |" for a, b, c, d in rows],
    "",
    "svc: markdown + text, links, forms, metadata (the `svc read --file` path, extraction on a "
    "blocking-pool thread, current-thread runtime). trafilatura: `extract(html, url=url, "
    "with_metadata=True, output_format=\"txt\")` + `extract_metadata(html, default_url=url)`. "
    "CPU is the whole process's user + system time for a round; the best round is the one with "
    "the least CPU; wall figures come from it (nearest-rank percentiles). Memory comes from one "
    "more, untimed pass: heap peak is live heap bytes above the page's start (svc: counting "
    "global allocator); RSS growth is VmHWM after the page minus VmRSS before it, with VmHWM "
    "reset and the heap trimmed (`malloc_trim`) before each page, the same in both.",
    "",
    "¹ tracemalloc counts Python's allocators only: the libxml2 trees lxml builds are malloc'd in "
    "C and are not in this figure, so it understates trafilatura; RSS growth counts both.",
]
failures = ours["failures"] + theirs["failures"]
if failures:
    lines += ["", "Pages without text: " + ", ".join(f"{n} ({w})" for n, w in failures)]
text = "\n".join(lines) + "\n"
open(os.path.join(out, "reader-comparison.md"), "w").write(text)
print()
print(text, end="")
print(f"\nwritten: {os.path.join(out, 'reader-comparison.md')}")
EOF
