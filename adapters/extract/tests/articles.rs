//! Quality on the 480 human-labelled pages of ../shared/corpora/articles, scored as the
//! corpus's own `score.py` scores them (bag-of-tokens F1 on the text sets; `with`/`without`
//! snippets on trafilatura's set), each set held to a floor. `bench/articles.sh` gives the
//! figures beside trafilatura's from one run; this test keeps them from sliding back
//! (`cargo nextest run -p svc-extract --test articles --no-capture` prints them). Pages are read
//! as UTF-8 here (the benchmark decodes declared charsets), so a few differ in the third decimal.

use std::{
    collections::HashMap,
    path::{Path, PathBuf},
};

use svc_extract::HtmlExtractor;
use svc_ports::{ExtractOptions, PageExtractor};

fn corpus() -> PathBuf {
    std::env::var_os("SVC_CORPORA_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared/corpora")
        })
        .join("articles")
}

fn read(page: &Path) -> String {
    let html =
        String::from_utf8_lossy(&std::fs::read(page.join("source.html")).unwrap()).into_owned();
    let meta: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(page.join("meta.json")).unwrap()).unwrap();
    let url = meta["url"].as_str().unwrap_or("http://example.com/");
    HtmlExtractor
        .extract(&html, url, &ExtractOptions::default())
        .unwrap()
        .content
        .text
}

fn counts(text: &str) -> HashMap<&str, usize> {
    let mut bag = HashMap::new();
    for token in text.split_whitespace() {
        *bag.entry(token).or_default() += 1;
    }
    bag
}

/// Bag-of-tokens F1, as score.py's `tok_scores`.
fn token_f1(predicted: &str, gold: &str) -> f64 {
    let (p, g) = (counts(predicted), counts(gold));
    let common: usize = p
        .iter()
        .map(|(t, n)| (*n).min(*g.get(t).unwrap_or(&0)))
        .sum();
    let (np, ng): (usize, usize) = (p.values().sum(), g.values().sum());
    if common == 0 || np == 0 || ng == 0 {
        return 0.0;
    }
    let (precision, recall) = (common as f64 / np as f64, common as f64 / ng as f64);
    2.0 * precision * recall / (precision + recall)
}

fn squeeze(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// `(with present, without present, with missing)` of trafilatura's snippets.
fn snippets(predicted: &str, expected: &serde_json::Value) -> (usize, usize, usize) {
    let text = squeeze(predicted);
    let list = |k: &str| -> Vec<String> {
        expected[k]
            .as_array()
            .map(|a| a.iter().filter_map(|s| s.as_str()).map(squeeze).collect())
            .unwrap_or_default()
    };
    let with = list("with");
    let present = with.iter().filter(|s| text.contains(s.as_str())).count();
    let kept = list("without")
        .iter()
        .filter(|s| text.contains(s.as_str()))
        .count();
    (present, kept, with.len() - present)
}

/// F1 of one snippet page, as score.py's `snip_scores`.
fn snippet_f1((tp, fp, fn_): (usize, usize, usize)) -> f64 {
    let precision = if tp + fp == 0 {
        0.0
    } else {
        tp as f64 / (tp + fp) as f64
    };
    let recall = if tp + fn_ == 0 {
        0.0
    } else {
        tp as f64 / (tp + fn_) as f64
    };
    if precision + recall == 0.0 {
        0.0
    } else {
        2.0 * precision * recall / (precision + recall)
    }
}

#[test]
fn article_quality_holds_its_floor_on_each_set() {
    let root = corpus();
    // Floors: measured when set (see the README's article figures), rounded down.
    let floors = [
        ("cleaneval", 0.91),
        ("cleanportaleval", 0.95),
        ("dragnet", 0.93),
        ("trafilatura-eval", 0.93),
    ];
    let mut failures = vec![];
    for (set, floor) in floors {
        let mut dirs: Vec<PathBuf> = std::fs::read_dir(root.join(set))
            .unwrap_or_else(|e| panic!("{} unreadable ({e}); set SVC_CORPORA_DIR", root.display()))
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.join("source.html").exists())
            .collect();
        dirs.sort();
        let scores: Vec<f64> = dirs
            .iter()
            .map(|page| {
                let text = read(page);
                match std::fs::read_to_string(page.join("expected.txt")) {
                    Ok(gold) => token_f1(&text, &gold),
                    Err(_) => {
                        let expected: serde_json::Value = serde_json::from_str(
                            &std::fs::read_to_string(page.join("expected.json")).unwrap(),
                        )
                        .unwrap();
                        snippet_f1(snippets(&text, &expected))
                    }
                }
            })
            .collect();
        let mean = scores.iter().sum::<f64>() / scores.len() as f64;
        println!(
            "{set:<18} {:>4} pages  mean F1 {mean:.3}  (floor {floor})",
            scores.len()
        );
        if mean < floor {
            failures.push(format!("{set}: {mean:.3} < {floor}"));
        }
    }
    assert!(failures.is_empty(), "below the floor: {failures:?}");
}

/// Pages where Readability's first choice is a box beside the story (an advertiser disclosure,
/// a forum's later post): the second reading finds the story. And pages whose short story
/// must stay when what else they hold is a list of links.
#[test]
fn a_short_first_reading_gives_way_to_the_story_but_not_to_links() {
    let root = corpus().join("trafilatura-eval");
    for page in [
        "thepointsguy.com.alaska",
        "katzen-forum.net-Pepe",
        "scienceblogs.de-zufaellig",
        "Rosjanie_sugeruj_natychmiastowe_odci_cie_Polski_od_gazu_-_Energetyka24",
        // The story cut by Readability's own cleaning (a class it distrusts): read again with
        // looser rules.
        "tierwelt.ch-plez",
    ] {
        let dir = root.join(page);
        let expected: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(dir.join("expected.json")).unwrap())
                .unwrap();
        let (_, _, missing) = snippets(&read(&dir), &expected);
        assert_eq!(missing, 0, "{page}: the story's snippets are missing");
    }
}
