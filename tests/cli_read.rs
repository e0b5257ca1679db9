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

/// `cmd`'s output, or a panic naming it if it has not ended within a minute (a read that waits
/// on a pipe never would); the process is killed either way.
fn output_within_a_minute(mut cmd: std::process::Command) -> std::process::Output {
    use std::process::Stdio;
    let child = cmd
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let id = child.id();
    let (done_tx, done_rx) = std::sync::mpsc::channel();
    let waiter = std::thread::spawn(move || {
        let out = child.wait_with_output();
        let _ = done_tx.send(());
        out
    });
    if done_rx
        .recv_timeout(std::time::Duration::from_secs(60))
        .is_err()
    {
        let _ = std::process::Command::new("kill")
            .arg(id.to_string())
            .status();
        panic!("svc read did not end within a minute");
    }
    waiter.join().unwrap().unwrap()
}

/// What is under a folder is not always a page: a pipe named like one would make the read wait
/// forever for a writer, and a link back up the tree would list every page again and again.
/// The pipe is a line of its own (`error`, not a regular file) and the folder link is not
/// followed; a link to a page is read once, like the page.
#[cfg(unix)]
#[test]
fn a_folder_with_a_pipe_and_a_link_loop_is_read_once_and_ends() {
    let dir = tempfile::tempdir().unwrap();
    let pages = dir.path().join("pages");
    std::fs::create_dir_all(pages.join("sub")).unwrap();
    std::fs::copy(demo_page("article.html"), pages.join("a.html")).unwrap();
    std::os::unix::fs::symlink("..", pages.join("sub/up")).unwrap();
    std::os::unix::fs::symlink(pages.join("a.html"), pages.join("sub/same.html")).unwrap();
    let made = std::process::Command::new("mkfifo")
        .arg(pages.join("pipe.html"))
        .status()
        .unwrap();
    assert!(made.success());
    let mut cmd = svc(dir.path());
    cmd.args(["read", "--format", "text", "--dir"]).arg(&pages);
    let out = output_within_a_minute(cmd);
    assert_eq!(out.status.code(), Some(1), "the pipe is an error");
    let got = lines(&out.stdout);
    assert_eq!(got.len(), 3, "a.html, pipe.html, sub/same.html: {got:#?}");
    assert_eq!(got[0]["title"], "Tides of the North Sea");
    assert_eq!(got[1]["outcome"], "error");
    assert!(got[1]["file"].as_str().unwrap().ends_with("pipe.html"));
    assert!(
        got[1]["detail"]
            .as_str()
            .unwrap()
            .contains("not a regular file"),
        "{}",
        got[1]
    );
    assert_eq!(got[2]["text"], got[0]["text"]);
}

/// A saved page is held to what the fetcher reads of a fetched one (10 MiB): the rest is not
/// read, and the page says it was cut.
#[test]
fn a_saved_page_past_ten_mebibytes_is_cut_and_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let page = dir.path().join("big.html");
    // The article, then one long run of text (the parser's quickest kind of byte) past the cap.
    let article = std::fs::read_to_string(demo_page("article.html")).unwrap();
    let (head, tail) = article.split_at(article.rfind("</body>").unwrap());
    let filler = "a".repeat(10 * 1024 * 1024);
    std::fs::write(&page, format!("{head}<div hidden>{filler}</div>{tail}")).unwrap();
    let out = svc(dir.path())
        .args([
            "read",
            "--format",
            "json",
            "--base-url",
            "https://news.example/",
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
    let read: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(read["title"], "Tides of the North Sea");
    assert_eq!(read["truncated"], true);
}
