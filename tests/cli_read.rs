//! `svc read` over many saved pages in one process (issue 21): `--file` repeated and `--dir`,
//! one JSON line per page in the order given, the same JSON as `/api/read`; an unreadable file
//! is a line of its own and exit status 1, and takes no other page with it.

use std::path::{Path, PathBuf};

use serde_json::Value;

mod support;

use support::svc;

fn demo_page(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("sandbox/src/demo/{name}"))
}

fn lines(stdout: &[u8]) -> Vec<Value> {
    String::from_utf8_lossy(stdout)
        .split('\n')
        .filter(|l| !l.is_empty())
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect()
}

#[test]
fn many_files_are_json_lines_in_the_order_given() {
    let dir = tempfile::tempdir().unwrap();
    let out = svc(dir.path())
        .args(["read", "--format", "text"])
        .arg("--file")
        .arg(demo_page("sign-in.html"))
        .arg("--file")
        .arg(demo_page("article.html"))
        .arg("--file")
        .arg(dir.path().join("missing.html"))
        .arg("--file")
        .arg(demo_page("article.html"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "one file could not be read");
    let got = lines(&out.stdout);
    assert_eq!(got.len(), 4, "{got:#?}");
    assert_eq!(got[0]["outcome"], "blocked");
    assert_eq!(got[0]["reason"], "login_wall");
    assert_eq!(got[1]["outcome"], "page");
    assert_eq!(got[1]["title"], "Tides of the North Sea");
    assert!(
        got[1]["final_url"]
            .as_str()
            .unwrap()
            .starts_with("file:///")
    );
    assert_eq!(got[2]["outcome"], "error");
    assert!(got[2]["file"].as_str().unwrap().ends_with("missing.html"));
    assert_eq!(
        got[3]["text"], got[1]["text"],
        "the same page, the same answer"
    );
    assert!(
        !String::from_utf8_lossy(&out.stderr).contains("WARN"),
        "parser chatter stays out of the way: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn a_folder_is_read_recursively_in_path_order_with_one_base_url() {
    let dir = tempfile::tempdir().unwrap();
    let pages = dir.path().join("pages");
    std::fs::create_dir_all(pages.join("b")).unwrap();
    std::fs::copy(demo_page("article.html"), pages.join("b/tides.html")).unwrap();
    std::fs::copy(demo_page("contact.html"), pages.join("a.htm")).unwrap();
    std::fs::write(pages.join("notes.txt"), "not a page").unwrap();
    let out = svc(dir.path())
        .args(["read", "--dir"])
        .arg(&pages)
        .args(["--base-url", "https://news.example/"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let got = lines(&out.stdout);
    assert_eq!(got.len(), 2, "only .html and .htm: {got:#?}");
    assert_eq!(got[1]["title"], "Tides of the North Sea");
    for page in &got {
        assert_eq!(page["final_url"], "https://news.example/");
    }

    let empty = tempfile::tempdir().unwrap();
    let out = svc(dir.path())
        .args(["read", "--dir"])
        .arg(empty.path())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("no .html, .htm or .pdf file"));
}

/// A saved page is decoded as a fetched one is: by its `<meta>` charset, not as UTF-8 at any
/// cost (`caf\xe9` in windows-1252 is "café", not "caf\u{fffd}").
#[test]
fn a_saved_page_is_decoded_by_its_declared_charset() {
    let dir = tempfile::tempdir().unwrap();
    let page = dir.path().join("latin.html");
    let mut html =
        b"<html><head><meta charset=\"windows-1252\"><title>Menu</title></head><body><article><p>"
            .to_vec();
    html.extend_from_slice(
        b"Un caf\xe9 cr\xe8me, s'il vous pla\xeet. "
            .repeat(20)
            .as_slice(),
    );
    html.extend_from_slice(b"</p></article></body></html>");
    std::fs::write(&page, html).unwrap();
    let out = svc(dir.path())
        .args([
            "read",
            "--format",
            "text",
            "--base-url",
            "https://cafe.example/",
        ])
        .arg("--file")
        .arg(&page)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.contains("Un café crème, s'il vous plaît."), "{text}");
}

fn pdf_fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("tests/fixtures/pdf/{name}"))
}

#[test]
fn saved_pdfs_are_read_like_fetched_ones() {
    let dir = tempfile::tempdir().unwrap();
    let one = svc(dir.path())
        .args([
            "read",
            "--format",
            "text",
            "--base-url",
            "https://example.com/r.pdf",
        ])
        .arg("--file")
        .arg(pdf_fixture("report.pdf"))
        .output()
        .unwrap();
    assert!(
        one.status.success(),
        "{}",
        String::from_utf8_lossy(&one.stderr)
    );
    let text = String::from_utf8_lossy(&one.stdout);
    assert!(text.starts_with("Field notes on agent reading\n"), "{text}");
    assert!(text.contains("\n\u{c}\nSecond page\n"), "{text}");

    // A folder of PDFs and pages: each its own line, the damaged one blocked, none lost.
    let folder = dir.path().join("mixed");
    std::fs::create_dir(&folder).unwrap();
    for name in ["report.pdf", "encrypted.pdf", "scanned.pdf"] {
        std::fs::copy(pdf_fixture(name), folder.join(name)).unwrap();
    }
    std::fs::write(folder.join("broken.pdf"), b"%PDF-1.7\n1 0 obj <<").unwrap();
    std::fs::copy(demo_page("article.html"), folder.join("page.html")).unwrap();
    let out = svc(dir.path())
        .args(["read", "--dir"])
        .arg(&folder)
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let got = lines(&out.stdout);
    let by_outcome: Vec<(String, String)> = got
        .iter()
        .map(|l| {
            (
                l["final_url"]
                    .as_str()
                    .unwrap()
                    .rsplit('/')
                    .next()
                    .unwrap()
                    .to_owned(),
                l["reason"].as_str().unwrap_or("page").to_owned(),
            )
        })
        .collect();
    assert_eq!(
        by_outcome,
        [
            ("broken.pdf", "unsupported_content"),
            ("encrypted.pdf", "encrypted_pdf"),
            ("page.html", "page"),
            ("report.pdf", "page"),
            ("scanned.pdf", "image_only_pdf"),
        ]
        .map(|(a, b)| (a.to_owned(), b.to_owned()))
    );
    assert!(
        !String::from_utf8_lossy(&out.stderr).contains("WARN"),
        "parser chatter stays out of the way: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}
