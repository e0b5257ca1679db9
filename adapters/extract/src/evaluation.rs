//! Scoring extraction against a corpus of saved pages with expected output (the layout of
//! `../shared/corpora/readability`: one directory per page holding `source.html`,
//! `expected.html` and `expected-metadata.json`). Used by the regression test and by the
//! `bench/reader` report, so both count the same way.

use std::{fmt, fs, io, path::Path};

use svc_ports::{Extraction, PageMetadata};

/// Metadata fields compared, as `expected-metadata.json` names them.
pub const META_FIELDS: [&str; 6] = [
    "title",
    "byline",
    "lang",
    "excerpt",
    "siteName",
    "publishedTime",
];

pub struct CorpusPage {
    pub name: String,
    /// The URL the page is read as (`http://fakehost/test/{name}/`, as the corpus expects).
    pub url: String,
    pub html: String,
    pub expected_text: String,
    /// In the order of [`META_FIELDS`]; `None` where the corpus expects nothing.
    pub expected_meta: Vec<Option<String>>,
}

/// Loads every page directory under `dir`, sorted by name.
pub fn load_corpus(dir: &Path) -> io::Result<Vec<CorpusPage>> {
    let mut dirs: Vec<_> = fs::read_dir(dir)?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.join("source.html").exists())
        .collect();
    dirs.sort();
    dirs.iter()
        .map(|d| {
            let name = d
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            let read = |f: &str| -> io::Result<String> {
                Ok(String::from_utf8_lossy(&fs::read(d.join(f))?).into_owned())
            };
            let meta: serde_json::Value = serde_json::from_str(&read("expected-metadata.json")?)
                .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))?;
            Ok(CorpusPage {
                url: format!("http://fakehost/test/{name}/"),
                html: read("source.html")?,
                expected_text: dom_query::Document::from(read("expected.html")?)
                    .root()
                    .text()
                    .to_string(),
                expected_meta: META_FIELDS
                    .iter()
                    .map(|f| meta[f].as_str().map(str::to_owned))
                    .collect(),
                name,
            })
        })
        .collect()
}

fn tokens(s: &str) -> std::collections::HashMap<String, u32> {
    let mut counts = std::collections::HashMap::new();
    for t in s
        .to_lowercase()
        .split(|c: char| !c.is_alphanumeric())
        .filter(|t| !t.is_empty())
    {
        *counts.entry(t.to_owned()).or_insert(0) += 1;
    }
    counts
}

/// Token-level F1: lower-cased text split on non-alphanumerics, bag-of-words overlap.
pub fn token_f1(predicted: &str, gold: &str) -> f64 {
    let (p, g) = (tokens(predicted), tokens(gold));
    let (np, ng): (u32, u32) = (p.values().sum(), g.values().sum());
    if np == 0 && ng == 0 {
        return 1.0;
    }
    let overlap: u32 = p
        .iter()
        .map(|(k, &c)| c.min(g.get(k).copied().unwrap_or(0)))
        .sum();
    if overlap == 0 {
        return 0.0;
    }
    let precision = f64::from(overlap) / f64::from(np);
    let recall = f64::from(overlap) / f64::from(ng);
    2.0 * precision * recall / (precision + recall)
}

/// The value of a compared field in our metadata.
pub fn metadata_field<'m>(m: &'m PageMetadata, field: &str) -> Option<&'m str> {
    match field {
        "title" => m.title.as_deref(),
        "byline" => m.author.as_deref(),
        "lang" => m.language.as_deref(),
        "excerpt" => m.excerpt.as_deref(),
        "siteName" => m.site_name.as_deref(),
        "publishedTime" => m.published_time.as_deref(),
        _ => None,
    }
}

fn norm(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

pub struct FieldAgreement {
    pub field: &'static str,
    pub agree: usize,
    pub compared: usize,
    pub misses: Vec<String>,
}

impl FieldAgreement {
    pub fn share(&self) -> f64 {
        self.agree as f64 / self.compared.max(1) as f64
    }
}

pub struct QualityReport {
    pub pages: usize,
    pub mean_f1: f64,
    /// Pages whose F1 is under 0.8, with it.
    pub weak_pages: Vec<(String, f64)>,
    /// Pages short of a perfect score (F1 under 0.99), with it: where to look first.
    pub short_pages: Vec<(String, f64)>,
    pub fields: Vec<FieldAgreement>,
}

/// Scores one extraction per page (in the corpus's order).
pub fn score(pages: &[CorpusPage], extractions: &[Extraction]) -> QualityReport {
    let mut total = 0.0;
    let mut weak_pages = Vec::new();
    let mut short_pages = Vec::new();
    let mut fields: Vec<FieldAgreement> = META_FIELDS
        .iter()
        .map(|&field| FieldAgreement {
            field,
            agree: 0,
            compared: 0,
            misses: Vec::new(),
        })
        .collect();
    for (page, e) in pages.iter().zip(extractions) {
        let f1 = token_f1(&e.content.text, &page.expected_text);
        total += f1;
        if f1 < 0.8 {
            weak_pages.push((page.name.clone(), f1));
        } else if f1 < 0.9999 {
            short_pages.push((page.name.clone(), f1));
        }
        for (agreement, want) in fields.iter_mut().zip(&page.expected_meta) {
            let Some(want) = want else { continue };
            agreement.compared += 1;
            // An empty expectation means the field is absent.
            if norm(metadata_field(&e.metadata, agreement.field).unwrap_or_default()) == norm(want)
            {
                agreement.agree += 1;
            } else {
                agreement.misses.push(page.name.clone());
            }
        }
    }
    QualityReport {
        pages: pages.len(),
        mean_f1: total / pages.len().max(1) as f64,
        weak_pages,
        short_pages,
        fields,
    }
}

impl fmt::Display for QualityReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "pages: {}  mean token F1: {:.5}  pages under 0.8: {}",
            self.pages,
            self.mean_f1,
            self.weak_pages.len()
        )?;
        for (name, f1) in &self.weak_pages {
            writeln!(f, "  weak: {name} F1 {f1:.3}")?;
        }
        for (name, f1) in &self.short_pages {
            writeln!(f, "  short of 0.99: {name} F1 {f1:.3}")?;
        }
        for a in &self.fields {
            writeln!(
                f,
                "{:>14}: {:>3}/{:<3} = {:.3}  misses: {:?}",
                a.field,
                a.agree,
                a.compared,
                a.share(),
                &a.misses[..a.misses.len().min(6)]
            )?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn f1_counts_repeated_tokens_and_ignores_case_and_punctuation() {
        assert_eq!(token_f1("The cat, the CAT!", "the cat the cat"), 1.0);
        assert_eq!(token_f1("", ""), 1.0);
        assert_eq!(token_f1("a", ""), 0.0);
        assert_eq!(token_f1("dog", "cat"), 0.0);
        // two of three predicted tokens overlap, two of two gold: P=2/3, R=1
        let f = token_f1("a b c", "a b");
        assert!((f - 0.8).abs() < 1e-9, "{f}");
    }

    proptest! {
        #[test]
        fn f1_is_symmetric_and_bounded(a in "[a-c ]{0,30}", b in "[a-c ]{0,30}") {
            let f = token_f1(&a, &b);
            prop_assert!((0.0..=1.0).contains(&f));
            prop_assert!((f - token_f1(&b, &a)).abs() < 1e-12);
        }
    }
}
