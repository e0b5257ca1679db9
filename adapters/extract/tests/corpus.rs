//! Quality on the 130-page corpus in ../shared/corpora/readability: mean token F1 of the main
//! text and metadata agreement with Readability.js, each held to a floor. Prints the report
//! (`cargo nextest run -p svc-extract --no-capture corpus`); `bash bench/reader.sh` gives the
//! same figures beside the speed benchmark.

use std::path::PathBuf;

use svc_extract::{
    HtmlExtractor,
    evaluation::{load_corpus, score},
};
use svc_ports::{ExtractOptions, PageExtractor};

fn corpus() -> PathBuf {
    std::env::var_os("SVC_CORPUS_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared/corpora/readability")
        })
}

#[test]
fn extraction_quality_holds_its_floor_on_the_corpus() {
    let dir = corpus();
    let pages = load_corpus(&dir).unwrap_or_else(|e| {
        panic!(
            "corpus at {} unreadable ({e}); set SVC_CORPUS_DIR",
            dir.display()
        )
    });
    assert_eq!(pages.len(), 130, "corpus incomplete");
    let options = ExtractOptions::default();
    let extractions: Vec<_> = pages
        .iter()
        .map(|p| HtmlExtractor.extract(&p.html, &p.url, &options).unwrap())
        .collect();
    let report = score(&pages, &extractions);
    println!("{report}");

    // Floors: what was measured when each was set, rounded down; raise them as extraction improves.
    // 0.999 is the level issue 21 holds the reader to while it learns news pages.
    assert!(report.mean_f1 >= 0.999, "mean F1 below 0.999\n{report}");
    assert!(
        report.weak_pages.is_empty(),
        "pages under 0.8 F1: {:?}\n{report}",
        report.weak_pages
    );
    let floors = [
        ("title", 1.0),
        ("byline", 0.96),
        ("lang", 1.0),
        ("excerpt", 0.98),
        ("siteName", 1.0),
        ("publishedTime", 1.0),
    ];
    for (field, floor) in floors {
        let a = report.fields.iter().find(|a| a.field == field).unwrap();
        assert!(
            a.share() >= floor,
            "{field} agreement {:.3} below {floor}\n{report}",
            a.share()
        );
    }
}
