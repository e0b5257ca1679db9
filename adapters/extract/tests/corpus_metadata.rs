//! Metadata agreement with Readability.js on the 130-page corpus in ../shared/corpora: a
//! regression floor per field. Prints the measured agreement (`cargo nextest run -p svc-extract
//! --no-capture corpus`).

use std::{fs, path::PathBuf};

use serde_json::Value;
use svc_extract::Document;
use url::Url;

fn corpus() -> PathBuf {
    std::env::var_os("SVC_CORPUS_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared/corpora/readability")
        })
}

fn norm(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

#[test]
fn metadata_agrees_with_readability_on_the_corpus() {
    let dir = corpus();
    let mut pages: Vec<_> = fs::read_dir(&dir)
        .unwrap_or_else(|e| {
            panic!(
                "corpus at {} unreadable ({e}); set SVC_CORPUS_DIR",
                dir.display()
            )
        })
        .map(|e| e.unwrap().path())
        .filter(|p| p.join("source.html").exists())
        .collect();
    pages.sort();
    assert_eq!(pages.len(), 130, "corpus incomplete");
    // field name in expected-metadata.json, and (agreeing, compared) counts
    let fields = [
        "title",
        "byline",
        "lang",
        "excerpt",
        "siteName",
        "publishedTime",
    ];
    let mut tally = vec![(0usize, 0usize); fields.len()];
    let mut misses: Vec<Vec<String>> = vec![Vec::new(); fields.len()];
    for page in &pages {
        let name = page.file_name().unwrap().to_string_lossy().to_string();
        let html = fs::read_to_string(page.join("source.html")).unwrap();
        let expected: Value =
            serde_json::from_str(&fs::read_to_string(page.join("expected-metadata.json")).unwrap())
                .unwrap();
        let url = Url::parse(&format!("http://fakehost/test/{name}/")).unwrap();
        let m = Document::parse(&html, &url).metadata();
        let got = [
            m.title,
            m.author,
            m.language,
            m.description,
            m.site_name,
            m.published_time,
        ];
        for (i, field) in fields.iter().enumerate() {
            let Some(want) = expected[field].as_str() else {
                continue;
            };
            tally[i].1 += 1;
            if got[i].as_deref().map(norm) == Some(norm(want)) {
                tally[i].0 += 1;
            } else {
                misses[i].push(name.clone());
            }
        }
    }
    // Floors: the agreement measured when this test was written; raise them as extraction improves.
    let floors = [0.97, 0.85, 1.0, 0.60, 1.0, 1.0];
    let mut report = String::new();
    let mut failed = Vec::new();
    for (i, field) in fields.iter().enumerate() {
        let (ok, n) = tally[i];
        let share = ok as f64 / n.max(1) as f64;
        report.push_str(&format!(
            "{field:>14}: {ok:>3}/{n:<3} = {share:.3} (floor {:.2})  misses: {:?}\n",
            floors[i],
            &misses[i][..misses[i].len().min(6)]
        ));
        if share < floors[i] {
            failed.push(*field);
        }
    }
    println!("{report}");
    assert!(failed.is_empty(), "below the floor: {failed:?}\n{report}");
}
