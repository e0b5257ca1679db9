//! Reads every page of ../shared/corpora/articles in one thread, ROUNDS times (env, default 3),
//! and prints pages per second of that thread: the reader alone, for `perf record` and for
//! comparing two commits without a whole service build. With `DUMP=FILE`, the first round's
//! whole extraction of every page (text, Markdown, HTML, links, forms, metadata, signals) goes to FILE, one JSON line each, to check that a
//! change meant for speed reads every page exactly as before.
//! `cargo run --profile dist -p svc-extract --example read_articles`

use std::{path::PathBuf, time::Instant};

use svc_extract::HtmlExtractor;
use svc_ports::{ExtractOptions, PageExtractor};

fn main() {
    let dir = std::env::var_os("SVC_CORPORA_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared/corpora")
        })
        .join("articles");
    let rounds: usize = std::env::var("ROUNDS")
        .ok()
        .and_then(|r| r.parse().ok())
        .unwrap_or(3);
    let mut pages = Vec::new();
    for set in std::fs::read_dir(&dir).expect("the articles corpus") {
        let set = set.unwrap().path();
        if !set.is_dir() {
            continue;
        }
        for page in std::fs::read_dir(&set).unwrap() {
            let page = page.unwrap().path();
            let Ok(bytes) = std::fs::read(page.join("source.html")) else {
                continue;
            };
            let meta: serde_json::Value = std::fs::read_to_string(page.join("meta.json"))
                .ok()
                .and_then(|m| serde_json::from_str(&m).ok())
                .unwrap_or_default();
            let url = meta["url"]
                .as_str()
                .unwrap_or("http://example.com/")
                .to_string();
            pages.push((String::from_utf8_lossy(&bytes).into_owned(), url));
        }
    }
    let mut dump = std::env::var_os("DUMP").map(|f| std::fs::File::create(f).expect("DUMP file"));
    for round in 0..rounds {
        let started = Instant::now();
        let mut chars = 0;
        for (html, url) in &pages {
            if let Ok(page) = HtmlExtractor.extract(html, url, &ExtractOptions::default()) {
                chars += page.content.text.len();
                if let Some(file) = dump.as_mut() {
                    let c = &page.content;
                    // Links, forms, metadata and signals too, as their debug form.
                    let rest = format!(
                        "{:?} {:?} {:?} {:?}",
                        page.links, page.forms, page.metadata, page.signals
                    );
                    let line = serde_json::json!([url, c.text, c.markdown, c.html, rest]);
                    std::io::Write::write_all(file, format!("{line}\n").as_bytes()).unwrap();
                }
            }
        }
        dump = None;
        let secs = started.elapsed().as_secs_f64();
        println!(
            "round {round}: {} pages in {secs:.2} s = {:.1} pages/s ({chars} chars)",
            pages.len(),
            pages.len() as f64 / secs
        );
    }
}
