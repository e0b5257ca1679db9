//! `svc read` and `svc scan` as a person runs them: offline reads, exit statuses, reports.

use super::*;

fn demo_page(name: &str) -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("sandbox/src/demo/{name}"))
}

#[test]
fn read_file_gives_the_api_json_and_markdown_offline() {
    let dir = tempfile::tempdir().unwrap();
    let article = demo_page("article.html");
    let out = svc(dir.path())
        .args(["read", "--file"])
        .arg(&article)
        .args([
            "--base-url",
            "https://news.example/articles/tides",
            "--format",
            "json",
        ])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let json: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(json["outcome"], "page");
    assert_eq!(json["cache"]["state"], "bypass");
    assert_eq!(json["title"], "Tides of the North Sea");
    assert_eq!(
        json["metadata"]["canonical"],
        "https://news.example/articles/tides"
    );
    assert!(
        json["markdown"]
            .as_str()
            .unwrap()
            .contains("## Spring and neap")
    );

    let md = svc(dir.path())
        .args(["read", "--file"])
        .arg(&article)
        .args(["--base-url", "https://news.example/articles/tides"])
        .output()
        .unwrap();
    assert!(md.status.success());
    let markdown = String::from_utf8(md.stdout).unwrap();
    assert_eq!(markdown.trim_end(), json["markdown"].as_str().unwrap());
    assert!(
        !dir.path().join("svc.db").exists(),
        "reading touches no database"
    );
}

#[test]
fn read_reports_blocked_pages_and_refused_urls_by_exit_status() {
    let dir = tempfile::tempdir().unwrap();
    let out = svc(dir.path())
        .args(["read", "--file"])
        .arg(demo_page("sign-in.html"))
        .args(["--base-url", "https://news.example/account"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("login_wall"));
    assert!(out.stdout.is_empty(), "a blocked page prints no page text");

    let out = svc(dir.path())
        .args(["read", "http://127.0.0.1:9/"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("loopback"));

    let out = svc(dir.path())
        .args([
            "read",
            "--file",
            "/nonexistent.html",
            "--base-url",
            "https://x.example/",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
}

#[test]
fn scan_prints_the_report_and_fails_under_a_threshold() {
    let dir = tempfile::tempdir().unwrap();
    let out = svc(dir.path())
        // What the scan finds is under test, not how fast a loaded machine scans.
        .args(["scan", "--sandbox", "--budget-seconds", "120"])
        .arg("http://ready.sandbox.test/")
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("level 5 of 5, Agent-Native · score 100/100"),
        "{text}"
    );
    // Every check passes, web_mcp too: the home page ran in headless Chromium.
    assert_eq!(text.matches("\n  pass ").count(), 27, "{text}");
    assert!(text.contains("\n  pass     web_mcp"), "{text}");
    // Progress: a line per check on stderr as each finishes.
    let progress = String::from_utf8_lossy(&out.stderr);
    for id in ["robots_txt", "mcp_probe", "ap2"] {
        assert!(progress.contains(&format!(" {id} ")), "{progress}");
    }

    let out = svc(dir.path())
        .args(["scan", "--sandbox", "--budget-seconds", "120", "--json"])
        .args(["--fail-under", "97"])
        .arg("http://lacks-llms-txt.sandbox.test/")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("below 97"));
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    // 26 scored checks (web_bot_auth is informational) less llms_txt_links (nothing to
    // follow: neutral); 24 of 25 pass.
    assert_eq!(report["score"], 24 * 100 / 25);
    assert_eq!(report["level"], 4);
    assert_eq!(
        report["next_level"]["missing"],
        serde_json::json!(["llms_txt"])
    );
    let failed: Vec<&str> = report["checks"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["status"] != "pass" && c["status"] != "neutral")
        .map(|c| c["id"].as_str().unwrap())
        .collect();
    assert_eq!(failed, vec!["llms_txt"]);

    // Without a browser, web_mcp is neutral (not scored) and the markup alone is read.
    let out = svc(dir.path())
        .args([
            "scan",
            "--sandbox",
            "--budget-seconds",
            "120",
            "--json",
            "--chromium",
            "",
        ])
        .arg("http://ready.sandbox.test/")
        .output()
        .unwrap();
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let web_mcp = report["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["id"] == "web_mcp")
        .unwrap()
        .clone();
    assert_eq!(web_mcp["status"], "neutral", "{web_mcp}");
    assert_eq!(report["score"], 100);

    let out = svc(dir.path())
        .args(["scan", "--sandbox", "--budget-seconds", "120", "--agent"])
        .args(["--fail-under-level", "5"])
        .arg("http://lacks-llms-txt.sandbox.test/")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let md = String::from_utf8_lossy(&out.stdout);
    assert!(md.contains("## To reach level 5 (Agent-Native)"), "{md}");
    assert!(md.contains("- [ ] `llms_txt`: Publish /llms.txt"), "{md}");

    let out = svc(dir.path())
        .args(["scan", "http://127.0.0.1:9/"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("loopback"));
    assert!(out.stdout.is_empty());

    // A URL refused as written is refused before the browser starts: one that cannot start
    // would say so on stderr.
    for (url, why) in [
        ("ftp://example.com/", "ftp"),
        ("https://u:p@example.com/", "credentials"),
    ] {
        let out = svc(dir.path())
            .args(["scan", "--chromium", "/bin/false", url])
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{url}: {stderr}");
        assert!(stderr.contains(why), "{url}: {stderr}");
        assert!(!stderr.contains("browser did not start"), "{url}: {stderr}");
        assert!(out.stdout.is_empty());
    }

    // A budget outside 1 to 300 s stops the command, naming the option.
    for bad in ["0", "301"] {
        let out = svc(dir.path())
            .args(["scan", "--budget-seconds", bad, "https://example.com/"])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{bad}");
        assert!(
            String::from_utf8_lossy(&out.stderr).contains("--budget-seconds"),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
}
