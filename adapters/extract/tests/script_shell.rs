//! How often `render: auto` would render: the script-shell judgement (`src/shell.rs`) counted
//! over both shared corpora, every page read as the service reads it. They are real pages with
//! their article in the HTML, so it must fire on none. Prints the counts
//! (`cargo nextest run -p svc-extract --test script_shell --no-capture`).

use std::path::{Path, PathBuf};

use svc_extract::HtmlExtractor;
use svc_ports::{ExtractOptions, PageExtractor};

fn corpora() -> PathBuf {
    std::env::var_os("SVC_CORPORA_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared/corpora")
        })
}

/// `(base URL, HTML)` of every page under `dir` (`*/source.html`, one level down).
fn pages(dir: &Path, base: impl Fn(&Path) -> String) -> Vec<(String, String, String)> {
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{} unreadable ({e}); set SVC_CORPORA_DIR", dir.display()))
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.join("source.html").exists())
        .collect();
    dirs.sort();
    dirs.iter()
        .map(|d| {
            let html = String::from_utf8_lossy(&std::fs::read(d.join("source.html")).unwrap())
                .into_owned();
            (d.display().to_string(), base(d), html)
        })
        .collect()
}

fn article_url(page: &Path) -> String {
    std::fs::read_to_string(page.join("meta.json"))
        .ok()
        .and_then(|m| serde_json::from_str::<serde_json::Value>(&m).ok())
        .and_then(|m| m["url"].as_str().map(str::to_owned))
        .unwrap_or_else(|| "http://example.com/".into())
}

#[test]
fn the_script_shell_judgement_fires_on_no_page_of_either_corpus() {
    let root = corpora();
    let mut sets = vec![(
        "readability".to_owned(),
        pages(&root.join("readability"), |d| {
            format!(
                "http://fakehost/test/{}/",
                d.file_name().unwrap().to_string_lossy()
            )
        }),
    )];
    for set in [
        "cleaneval",
        "cleanportaleval",
        "dragnet",
        "trafilatura-eval",
    ] {
        sets.push((
            format!("articles/{set}"),
            pages(&root.join("articles").join(set), article_url),
        ));
    }
    let options = ExtractOptions::default();
    let mut total = 0;
    let mut fired = Vec::new();
    for (name, pages) in &sets {
        let mut here = 0;
        for (path, url, html) in pages {
            let e = HtmlExtractor.extract(html, url, &options).unwrap();
            if let Some(evidence) = e.signals.script_shell {
                here += 1;
                fired.push(format!("{path}: {evidence}"));
            }
        }
        println!("{name}: {} pages, {here} judged script shells", pages.len());
        total += pages.len();
    }
    println!(
        "both corpora: {total} pages, {} judged script shells",
        fired.len()
    );
    assert_eq!(total, 610, "corpora incomplete");
    assert!(
        fired.is_empty(),
        "judged script shells:\n{}",
        fired.join("\n")
    );
}
