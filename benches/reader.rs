//! Reading speed: every page of the readability corpus read offline through
//! `ReadService::read_document`, the path `svc read --file` takes (markdown, main content only).
//!
//! ```sh
//! cargo bench --bench reader                      # report; JSON in target/bench/reader.json
//! cargo bench --bench reader -- --score TEXTS.json  # score {page name: text} with token_f1
//! ```
//!
//! Environment: `SVC_CORPUS_DIR` (default `../shared/corpora/readability` beside the
//! workspace), `READER_BENCH_ROUNDS` (default 3).
//!
//! Timed rounds read every page one after the other on a current-thread runtime; a round's CPU
//! time is the whole process's (user + system, every thread: extraction runs on a blocking-pool
//! thread). The best round is the one with the least CPU time; the per-page wall figures come
//! from it. Memory is measured in one more, untimed pass: per page, the peak of live heap bytes
//! above what was live before it (counted by the global allocator below, which counts during
//! that pass only), and the growth of the resident set (VmHWM reset through
//! `/proc/self/clear_refs` after `malloc_trim`). The Python counterpart,
//! `bench/trafilatura_bench.py`, measures the same way. `bench/reader.sh` runs both.

use std::{
    alloc::{GlobalAlloc, Layout, System},
    collections::HashMap,
    ffi::{c_int, c_long},
    fs,
    path::{Path, PathBuf},
    sync::atomic::{AtomicBool, AtomicIsize, Ordering::Relaxed},
    time::{Duration, Instant},
};

use serde_json::json;
use svc::{
    services::{ReadOutcome, ReadRequest},
    startup::{self, Stores},
};
use svc_extract::evaluation::{CorpusPage, load_corpus, token_f1};
use svc_ports::Environment;

/// The system allocator, counting live bytes and their high-water mark while `COUNTING` is on
/// (the memory pass only, so that the timed rounds pay one relaxed load per call). Only
/// differences within the pass are used, so `LIVE` is signed: blocks allocated before counting
/// began may be freed during it.
struct Counting;

static COUNTING: AtomicBool = AtomicBool::new(false);
static LIVE: AtomicIsize = AtomicIsize::new(0);
static PEAK: AtomicIsize = AtomicIsize::new(0);

fn grew(by: usize) {
    if COUNTING.load(Relaxed) {
        let by = by as isize;
        let live = LIVE.fetch_add(by, Relaxed) + by;
        if live > PEAK.load(Relaxed) {
            PEAK.fetch_max(live, Relaxed);
        }
    }
}

fn shrank(by: usize) {
    if COUNTING.load(Relaxed) {
        LIVE.fetch_sub(by as isize, Relaxed);
    }
}

// SAFETY: every call is forwarded unchanged to `System`; only counters are added.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let p = unsafe { System.alloc(layout) };
        if !p.is_null() {
            grew(layout.size());
        }
        p
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        let p = unsafe { System.alloc_zeroed(layout) };
        if !p.is_null() {
            grew(layout.size());
        }
        p
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { System.dealloc(ptr, layout) };
        shrank(layout.size());
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let p = unsafe { System.realloc(ptr, layout, new_size) };
        if !p.is_null() {
            if new_size >= layout.size() {
                grew(new_size - layout.size());
            } else {
                shrank(layout.size() - new_size);
            }
        }
        p
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

#[repr(C)]
struct Timespec {
    tv_sec: c_long,
    tv_nsec: c_long,
}

unsafe extern "C" {
    fn clock_gettime(clock: c_int, tp: *mut Timespec) -> c_int;
    #[cfg(target_env = "gnu")]
    fn malloc_trim(pad: usize) -> c_int;
}

/// Linux's `CLOCK_PROCESS_CPUTIME_ID`: user + system time of every thread of the process.
const CLOCK_PROCESS_CPUTIME_ID: c_int = 2;

fn process_cpu() -> Duration {
    let mut t = Timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `t` is a valid, writable timespec.
    let rc = unsafe { clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &mut t) };
    assert_eq!(rc, 0, "clock_gettime(CLOCK_PROCESS_CPUTIME_ID) failed");
    Duration::new(t.tv_sec as u64, t.tv_nsec as u32)
}

/// Hands freed heap memory back to the system, so that resident growth starts from live data.
fn trim_heap() {
    #[cfg(target_env = "gnu")]
    // SAFETY: no preconditions.
    unsafe {
        malloc_trim(0);
    }
}

/// A `kB` line of `/proc/self/status` (`VmRSS`, `VmHWM`), in KiB.
fn status_kib(key: &str) -> Option<u64> {
    fs::read_to_string("/proc/self/status")
        .ok()?
        .lines()
        .find_map(|l| l.strip_prefix(key)?.strip_prefix(':'))?
        .split_whitespace()
        .next()?
        .parse()
        .ok()
}

/// Resets VmHWM to the current resident set (Linux 4.0 and later).
fn reset_hwm() -> bool {
    fs::write("/proc/self/clear_refs", "5").is_ok()
}

const MIB: f64 = 1024.0 * 1024.0;

/// Nearest-rank percentile of ascending `sorted`.
fn percentile(sorted: &[f64], q: f64) -> f64 {
    let n = sorted.len();
    let rank = (q * n as f64).ceil() as usize;
    sorted[rank.clamp(1, n) - 1]
}

fn sorted(values: impl IntoIterator<Item = f64>) -> Vec<f64> {
    let mut v: Vec<f64> = values.into_iter().collect();
    v.sort_by(f64::total_cmp);
    v
}

fn mean(values: &[f64]) -> f64 {
    values.iter().sum::<f64>() / values.len().max(1) as f64
}

struct Round {
    cpu_s: f64,
    wall_s: f64,
    page_ms: Vec<f64>,
}

/// What one page read gave: its text, or why there is none.
fn page_text(result: &Result<ReadOutcome, svc::services::ReadError>) -> Result<&str, String> {
    match result {
        Ok(ReadOutcome::Page(p)) => Ok(&p.text),
        Ok(ReadOutcome::Blocked(b)) => Err(format!("blocked: {}", b.reason.as_str())),
        Err(e) => Err(format!("error: {e}")),
    }
}

fn manifest_dir() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn corpus() -> anyhow::Result<(PathBuf, Vec<CorpusPage>)> {
    let dir = std::env::var_os("SVC_CORPUS_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| manifest_dir().join("../shared/corpora/readability"));
    let dir = fs::canonicalize(&dir).unwrap_or(dir);
    let pages = load_corpus(&dir)
        .map_err(|e| anyhow::anyhow!("cannot load the corpus at {}: {e}", dir.display()))?;
    anyhow::ensure!(!pages.is_empty(), "no pages under {}", dir.display());
    Ok((dir, pages))
}

fn out_dir() -> PathBuf {
    std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| manifest_dir().join("target"))
        .join("bench")
}

/// `--score FILE`: mean token F1 of the texts in FILE (`{page name: text}`) against the
/// corpus's expected texts, printed as one JSON line.
fn score(path: &Path) -> anyhow::Result<()> {
    let (_, pages) = corpus()?;
    let texts: HashMap<String, Option<String>> = serde_json::from_slice(&fs::read(path)?)?;
    let mut missing = 0;
    let f1: Vec<f64> = pages
        .iter()
        .map(|p| match texts.get(&p.name).and_then(Option::as_deref) {
            Some(text) => token_f1(text, &p.expected_text),
            None => {
                missing += 1;
                token_f1("", &p.expected_text)
            }
        })
        .collect();
    println!(
        "{}",
        json!({
            "scorer": "svc_extract::evaluation::token_f1",
            "texts": path.display().to_string(),
            "pages": pages.len(),
            "missing": missing,
            "mean_f1": mean(&f1),
            "pages_f1_under_0_8": f1.iter().filter(|&&f| f < 0.8).count(),
        })
    );
    Ok(())
}

fn main() -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if let Some(i) = args.iter().position(|a| a == "--score") {
        let path = args
            .get(i + 1)
            .ok_or_else(|| anyhow::anyhow!("--score needs a JSON file of texts"))?;
        return score(Path::new(path));
    }

    let rounds: usize = match std::env::var("READER_BENCH_ROUNDS") {
        Ok(v) => v.parse()?,
        Err(_) => 3,
    };
    anyhow::ensure!(rounds > 0, "READER_BENCH_ROUNDS must be at least 1");
    let (dir, pages) = corpus()?;
    let n = pages.len();
    let rss_after_load_kib = status_kib("VmRSS");

    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let services = {
        let _entered = rt.enter();
        startup::offline_services(&Stores::memory(), Environment::Live)?
    };
    let requests: Vec<ReadRequest> = pages
        .iter()
        .map(|p| ReadRequest::new(p.url.clone()))
        .collect();

    // Timed rounds.
    let mut runs = Vec::with_capacity(rounds);
    let mut f1 = vec![0.0; n];
    let mut failures: Vec<(String, String)> = Vec::new();
    for round in 0..rounds {
        let mut page_ms = Vec::with_capacity(n);
        let (wall0, cpu0) = (Instant::now(), process_cpu());
        rt.block_on(async {
            for (i, (page, request)) in pages.iter().zip(&requests).enumerate() {
                let html = page.html.clone();
                let t = Instant::now();
                let result = services
                    .read
                    .read_document(html, false, &page.url, request)
                    .await;
                page_ms.push(t.elapsed().as_secs_f64() * 1e3);
                if round == 0 {
                    match page_text(&result) {
                        Ok(text) => f1[i] = token_f1(text, &page.expected_text),
                        Err(why) => {
                            f1[i] = token_f1("", &page.expected_text);
                            failures.push((page.name.clone(), why));
                        }
                    }
                }
            }
        });
        runs.push(Round {
            cpu_s: (process_cpu() - cpu0).as_secs_f64(),
            wall_s: wall0.elapsed().as_secs_f64(),
            page_ms,
        });
    }
    // Before the memory pass, which resets VmHWM.
    let process_peak_rss_kib = status_kib("VmHWM");

    // Memory pass, untimed.
    let hwm_resettable = reset_hwm();
    COUNTING.store(true, Relaxed);
    let mut heap_peak = Vec::with_capacity(n);
    let mut rss_growth = Vec::with_capacity(n);
    rt.block_on(async {
        for (page, request) in pages.iter().zip(&requests) {
            let html = page.html.clone();
            trim_heap();
            reset_hwm();
            let rss0 = status_kib("VmRSS");
            let base = LIVE.load(Relaxed);
            PEAK.store(base, Relaxed);
            let result = services
                .read
                .read_document(html, false, &page.url, request)
                .await;
            heap_peak.push((PEAK.load(Relaxed) - base).max(0) as f64);
            if let (true, Some(before), Some(hwm)) = (hwm_resettable, rss0, status_kib("VmHWM")) {
                rss_growth.push(hwm.saturating_sub(before) as f64 * 1024.0);
            }
            drop(result);
        }
    });
    COUNTING.store(false, Relaxed);

    let best = runs
        .iter()
        .min_by(|a, b| a.cpu_s.total_cmp(&b.cpu_s))
        .expect("at least one round");
    let ms = sorted(best.page_ms.iter().copied());
    let heap = sorted(heap_peak.iter().copied());
    let rss = sorted(rss_growth.iter().copied());
    let pages_per_cpu_s = n as f64 / best.cpu_s;
    let mean_f1 = mean(&f1);
    let weak: Vec<(&str, f64)> = pages
        .iter()
        .zip(&f1)
        .filter(|&(_, &f)| f < 0.8)
        .map(|(p, &f)| (p.name.as_str(), f))
        .collect();
    let heap_stats = |v: &[f64]| {
        (!v.is_empty()).then(|| {
            json!({
                "median": percentile(v, 0.5) / MIB,
                "p95": percentile(v, 0.95) / MIB,
                "max": v[v.len() - 1] / MIB,
            })
        })
    };
    let kib_to_mib = |k: Option<u64>| k.map(|k| k as f64 / 1024.0);

    let report = json!({
        "bench": "reader",
        "subject": "svc ReadService::read_document (markdown, main content), current-thread runtime",
        "corpus": dir.display().to_string(),
        "pages": n,
        "rounds": rounds,
        "round_cpu_s": runs.iter().map(|r| r.cpu_s).collect::<Vec<_>>(),
        "round_wall_s": runs.iter().map(|r| r.wall_s).collect::<Vec<_>>(),
        "best_round_cpu_s": best.cpu_s,
        "best_round_wall_s": best.wall_s,
        "pages_per_cpu_s": pages_per_cpu_s,
        "page_wall_ms": {
            "mean": mean(&ms),
            "p50": percentile(&ms, 0.5),
            "p95": percentile(&ms, 0.95),
            "max": ms[n - 1],
        },
        "mean_token_f1": mean_f1,
        "pages_f1_under_0_8": weak.iter().map(|(name, f)| json!([name, f])).collect::<Vec<_>>(),
        "failures": failures.iter().map(|(name, why)| json!([name, why])).collect::<Vec<_>>(),
        "page_heap_peak_mib": heap_stats(&heap),
        "page_rss_growth_mib": heap_stats(&rss),
        "process_peak_rss_mib": kib_to_mib(process_peak_rss_kib),
        "rss_after_corpus_load_mib": kib_to_mib(rss_after_load_kib),
        "per_page": pages.iter().enumerate().map(|(i, p)| json!({
            "name": p.name,
            "ms": best.page_ms[i],
            "f1": f1[i],
            "heap_peak_mib": heap_peak[i] / MIB,
        })).collect::<Vec<_>>(),
    });
    let out = out_dir();
    fs::create_dir_all(&out)?;
    let json_path = out.join("reader.json");
    fs::write(&json_path, serde_json::to_string_pretty(&report)? + "\n")?;

    let opt = |v: Option<f64>| v.map_or_else(|| "n/a".to_owned(), |v| format!("{v:.1}"));
    println!(
        "reader bench: {n} pages from {}, {rounds} rounds",
        dir.display()
    );
    println!(
        "  round CPU s:           {}",
        runs.iter()
            .map(|r| format!("{:.3}", r.cpu_s))
            .collect::<Vec<_>>()
            .join(" ")
    );
    println!("  pages per CPU-second:  {pages_per_cpu_s:.1} (best round)");
    println!(
        "  wall ms per page:      mean {:.2}  p50 {:.2}  p95 {:.2}  max {:.2}",
        mean(&ms),
        percentile(&ms, 0.5),
        percentile(&ms, 0.95),
        ms[n - 1]
    );
    println!(
        "  mean token F1:         {mean_f1:.4}  (pages under 0.8: {}, not read: {})",
        weak.len(),
        failures.len()
    );
    println!(
        "  heap peak per page:    median {:.2}  p95 {:.2}  max {:.2} MiB",
        percentile(&heap, 0.5) / MIB,
        percentile(&heap, 0.95) / MIB,
        heap[n - 1] / MIB
    );
    if !rss.is_empty() {
        println!(
            "  RSS growth per page:   median {:.2}  p95 {:.2}  max {:.2} MiB",
            percentile(&rss, 0.5) / MIB,
            percentile(&rss, 0.95) / MIB,
            rss[rss.len() - 1] / MIB
        );
    }
    println!(
        "  process peak RSS:      {} MiB (after loading the corpus: {} MiB)",
        opt(kib_to_mib(process_peak_rss_kib)),
        opt(kib_to_mib(rss_after_load_kib))
    );
    for (name, why) in &failures {
        println!("  not read: {name}: {why}");
    }
    println!("  written: {}", json_path.display());
    Ok(())
}
