"""Python trafilatura 2.x on the readability corpus, measured like benches/reader.rs.

Workload per page ("extract plus metadata"), single-threaded:
    trafilatura.extract(html, url=url, with_metadata=True, output_format="txt")
    trafilatura.extract_metadata(html, default_url=url)

Timed rounds (READER_BENCH_ROUNDS, default 3) read every page one after the other; a round's
CPU time is time.process_time() (user + system, whole process). The best round is the one with
the least CPU time; per-page wall figures come from it. Memory is measured in one more,
untimed pass (tracemalloc slows Python down several times, so it is never on while timing): per
page, the tracemalloc peak above what was traced before it (Python's allocators only: lxml's
libxml2 trees are malloc'd in C and are NOT counted), and the growth of the resident set
(VmHWM reset through /proc/self/clear_refs after malloc_trim), the same way the Rust bench
measures it.

Token F1 replicates svc_extract::evaluation::token_f1: lower-cased, split on characters that
are not alphanumeric, bag-of-words overlap; the expected text is lxml's text_content() of
expected.html. trafilatura's "txt + with_metadata" output starts with a "---" metadata header,
which is removed before scoring.

Usage: python bench/trafilatura_bench.py [OUT_DIR]   (default: target/bench)
Env: SVC_CORPUS_DIR, READER_BENCH_ROUNDS.
Writes OUT_DIR/trafilatura.json and OUT_DIR/trafilatura-texts.json ({page name: text}).
"""

import ctypes
import ctypes.util
import json
import math
import os
import platform
import resource
import sys
import time
import tracemalloc
from collections import Counter

import lxml
import lxml.html
import trafilatura

# Deeply nested pages exceed Python's default recursion limit inside trafilatura.
sys.setrecursionlimit(100000)

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CORPUS = os.path.normpath(os.environ.get("SVC_CORPUS_DIR", os.path.join(ROOT, "..", "shared", "corpora", "readability")))
ROUNDS = int(os.environ.get("READER_BENCH_ROUNDS", "3"))
OUT = sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "target", "bench")
MIB = 1024 * 1024


def tokens(s):
    """Rust: s.to_lowercase().split(|c| !c.is_alphanumeric()).filter(non-empty), counted."""
    counts, cur = Counter(), []
    for ch in s.lower():
        if ch.isalnum():
            cur.append(ch)
        elif cur:
            counts["".join(cur)] += 1
            cur = []
    if cur:
        counts["".join(cur)] += 1
    return counts


def token_f1(predicted, gold):
    p, g = tokens(predicted), tokens(gold)
    np_, ng = sum(p.values()), sum(g.values())
    if np_ == 0 and ng == 0:
        return 1.0
    overlap = sum(min(c, g[k]) for k, c in p.items() if k in g)
    if overlap == 0:
        return 0.0
    precision, recall = overlap / np_, overlap / ng
    return 2 * precision * recall / (precision + recall)


def strip_header(txt):
    """Drops the '---\\n...\\n---\\n' metadata block with_metadata=True puts before the text."""
    if txt and txt.startswith("---\n"):
        end = txt.find("\n---\n", 3)
        if end != -1:
            return txt[end + 5:]
    return txt or ""


def percentile(sorted_values, q):
    """Nearest rank, as in benches/reader.rs."""
    n = len(sorted_values)
    rank = math.ceil(q * n)
    return sorted_values[min(max(rank, 1), n) - 1]


def status_kib(key):
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith(key + ":"):
                    return int(line.split()[1])
    except OSError:
        pass
    return None


def reset_hwm():
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        return True
    except OSError:
        return False


_libc_name = ctypes.util.find_library("c")
_libc = ctypes.CDLL(_libc_name) if _libc_name else None


def trim_heap():
    if _libc is not None and hasattr(_libc, "malloc_trim"):
        _libc.malloc_trim(0)


def read(html, url):
    txt = trafilatura.extract(html, url=url, with_metadata=True, output_format="txt")
    meta = trafilatura.extract_metadata(html, default_url=url)
    return txt, meta


def stats(values):
    if not values:
        return None
    s = sorted(values)
    return {"median": percentile(s, 0.5) / MIB, "p95": percentile(s, 0.95) / MIB, "max": s[-1] / MIB}


def main():
    names = sorted(d for d in os.listdir(CORPUS) if os.path.exists(os.path.join(CORPUS, d, "source.html")))
    pages = []
    for name in names:
        d = os.path.join(CORPUS, name)
        with open(os.path.join(d, "source.html"), "rb") as f:
            html = f.read().decode("utf-8", "replace")
        with open(os.path.join(d, "expected.html"), "rb") as f:
            expected = lxml.html.document_fromstring(f.read().decode("utf-8", "replace")).text_content()
        pages.append({"name": name, "url": f"http://fakehost/test/{name}/", "html": html, "expected": expected})
    n = len(pages)
    if n == 0:
        sys.exit(f"no pages under {CORPUS}")
    rss_after_load = status_kib("VmRSS")

    runs, texts, failures = [], {}, []
    for r in range(ROUNDS):
        page_ms = []
        wall0, cpu0 = time.perf_counter(), time.process_time()
        for p in pages:
            t = time.perf_counter()
            try:
                txt, _meta = read(p["html"], p["url"])
                error = None if txt else "extract returned None"
            except Exception as e:  # noqa: BLE001 - a crash on one page is reported, not fatal
                txt, error = None, f"{type(e).__name__}: {e}"
            page_ms.append((time.perf_counter() - t) * 1e3)
            if r == 0:
                texts[p["name"]] = strip_header(txt)
                if error:
                    failures.append([p["name"], error])
        runs.append({"cpu_s": time.process_time() - cpu0, "wall_s": time.perf_counter() - wall0, "page_ms": page_ms})
    # Before the memory pass, which resets VmHWM.
    peak_rss_kib = status_kib("VmHWM")
    ru_maxrss_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss

    # Memory pass, untimed.
    resettable = reset_hwm()
    heap_peak, rss_growth = [], []
    tracemalloc.start()
    for p in pages:
        trim_heap()
        reset_hwm()
        rss0 = status_kib("VmRSS")
        tracemalloc.reset_peak()
        base, _ = tracemalloc.get_traced_memory()
        try:
            result = read(p["html"], p["url"])
        except Exception:  # noqa: BLE001
            result = None
        _, peak = tracemalloc.get_traced_memory()
        hwm = status_kib("VmHWM")
        heap_peak.append(max(peak - base, 0))
        if resettable and rss0 is not None and hwm is not None:
            rss_growth.append(max(hwm - rss0, 0) * 1024)
        del result
    tracemalloc.stop()

    best = min(runs, key=lambda r: r["cpu_s"])
    ms = sorted(best["page_ms"])
    f1 = [token_f1(texts[p["name"]], p["expected"]) for p in pages]
    mean_f1 = sum(f1) / n
    weak = [[p["name"], f] for p, f in zip(pages, f1) if f < 0.8]
    kib_to_mib = lambda k: None if k is None else k / 1024  # noqa: E731
    report = {
        "bench": "trafilatura",
        "subject": "trafilatura.extract(txt, with_metadata) + extract_metadata, single thread",
        "trafilatura": trafilatura.__version__,
        "lxml": lxml.__version__,
        "python": platform.python_version(),
        "corpus": CORPUS,
        "pages": n,
        "rounds": ROUNDS,
        "round_cpu_s": [r["cpu_s"] for r in runs],
        "round_wall_s": [r["wall_s"] for r in runs],
        "best_round_cpu_s": best["cpu_s"],
        "best_round_wall_s": best["wall_s"],
        "pages_per_cpu_s": n / best["cpu_s"],
        "page_wall_ms": {"mean": sum(ms) / n, "p50": percentile(ms, 0.5), "p95": percentile(ms, 0.95), "max": ms[-1]},
        "mean_token_f1": mean_f1,
        "pages_f1_under_0_8": weak,
        "failures": failures,
        "page_heap_peak_mib": stats(heap_peak),
        "page_heap_peak_note": "tracemalloc: Python allocators only, libxml2 (lxml) C allocations not counted",
        "page_rss_growth_mib": stats(rss_growth),
        "process_peak_rss_mib": kib_to_mib(peak_rss_kib),
        "ru_maxrss_mib": kib_to_mib(ru_maxrss_kib),
        "rss_after_corpus_load_mib": kib_to_mib(rss_after_load),
        "per_page": [
            {"name": p["name"], "ms": best["page_ms"][i], "f1": f1[i], "heap_peak_mib": heap_peak[i] / MIB}
            for i, p in enumerate(pages)
        ],
    }
    os.makedirs(OUT, exist_ok=True)
    path = os.path.join(OUT, "trafilatura.json")
    with open(path, "w") as f:
        json.dump(report, f, indent=2)
        f.write("\n")
    with open(os.path.join(OUT, "trafilatura-texts.json"), "w") as f:
        json.dump(texts, f)

    fmt = lambda v: "n/a" if v is None else f"{v:.1f}"  # noqa: E731
    hp, rg = report["page_heap_peak_mib"], report["page_rss_growth_mib"]
    print(f"trafilatura bench: {n} pages from {CORPUS}, {ROUNDS} rounds (trafilatura {trafilatura.__version__})")
    print("  round CPU s:           " + " ".join(f"{r['cpu_s']:.3f}" for r in runs))
    print(f"  pages per CPU-second:  {report['pages_per_cpu_s']:.1f} (best round)")
    w = report["page_wall_ms"]
    print(f"  wall ms per page:      mean {w['mean']:.2f}  p50 {w['p50']:.2f}  p95 {w['p95']:.2f}  max {w['max']:.2f}")
    print(f"  mean token F1:         {mean_f1:.4f}  (pages under 0.8: {len(weak)}, no text: {len(failures)})")
    print(f"  heap peak per page:    median {hp['median']:.2f}  p95 {hp['p95']:.2f}  max {hp['max']:.2f} MiB (tracemalloc)")
    if rg:
        print(f"  RSS growth per page:   median {rg['median']:.2f}  p95 {rg['p95']:.2f}  max {rg['max']:.2f} MiB")
    print(f"  process peak RSS:      {fmt(report['process_peak_rss_mib'])} MiB "
          f"(ru_maxrss {fmt(report['ru_maxrss_mib'])}, after loading the corpus: {fmt(report['rss_after_corpus_load_mib'])} MiB)")
    for name, why in failures:
        print(f"  no text: {name}: {why}")
    print(f"  written: {path}")


if __name__ == "__main__":
    main()
