//! The `svc` binary as a person runs it: serve on the SQLite default, keys that survive a
//! restart, the sandbox's printed lines, and the same on Postgres.

use std::{
    io::{BufRead, BufReader},
    path::Path,
    process::{Command, Stdio},
    time::{Duration, Instant},
};

use serde_json::Value;

mod support;

use support::{Running, start_sandbox, svc};

// Split by subject, in this one test binary (each binary links the whole service).
#[path = "cli/money.rs"]
mod money;
#[path = "cli/read_scan.rs"]
mod read_scan;

async fn wait_healthy(base: &str) {
    let started = Instant::now();
    while started.elapsed() < Duration::from_secs(30) {
        if let Ok(r) = reqwest::get(format!("{base}/health")).await
            && r.status() == 200
        {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("{base} did not become healthy");
}

/// `svc serve` on a port the kernel picks (no race with other tests for a free port), with
/// its log lines; the bound address comes from its `service bound` line.
async fn serve_logged(
    dir: &Path,
    extra_env: &[(&str, &str)],
) -> (Running, String, std::sync::mpsc::Receiver<String>) {
    let mut cmd = svc(dir);
    cmd.args(["serve", "--bind", "127.0.0.1:0"])
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    for (k, v) in extra_env {
        cmd.env(k, v);
    }
    let mut child = Running(cmd.spawn().unwrap());
    let stderr = child.0.stderr.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            let _ = tx.send(line);
        }
    });
    let mut seen = Vec::new();
    let base = loop {
        let line = rx
            .recv_timeout(Duration::from_secs(30))
            .unwrap_or_else(|_| panic!("svc serve did not say where it is bound: {seen:?}"));
        if line.contains("service bound") {
            let fields = &serde_json::from_str::<Value>(&line).unwrap()["fields"];
            break fields["base_url"].as_str().unwrap().to_owned();
        }
        seen.push(line);
    };
    wait_healthy(&base).await;
    let (forward, lines) = std::sync::mpsc::channel();
    for line in seen {
        let _ = forward.send(line);
    }
    std::thread::spawn(move || {
        while let Ok(line) = rx.recv() {
            if forward.send(line).is_err() {
                break;
            }
        }
    });
    (child, base, lines)
}

async fn serve(dir: &Path, extra_env: &[(&str, &str)]) -> (Running, String) {
    let (child, base, lines) = serve_logged(dir, extra_env).await;
    // Keep draining the log so the pipe never fills.
    std::thread::spawn(move || while lines.recv().is_ok() {});
    (child, base)
}

fn create_key(dir: &Path, email: &str, extra_env: &[(&str, &str)]) -> String {
    let mut cmd = svc(dir);
    cmd.args(["keys", "create", "--email", email, "--credits", "42"]);
    for (k, v) in extra_env {
        cmd.env(k, v);
    }
    let out = cmd.output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stdout = String::from_utf8(out.stdout).unwrap();
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(lines.len(), 1, "stdout must hold only the key: {stdout:?}");
    let key = lines[0].to_owned();
    assert!(key.starts_with("svc_live_") && key.len() == 41, "{key}");
    assert!(
        !String::from_utf8_lossy(&out.stderr).contains(&key),
        "the key leaked to stderr"
    );
    key
}

async fn usage(base: &str, key: &str) -> reqwest::Response {
    reqwest::Client::new()
        .get(format!("{base}/api/usage"))
        .bearer_auth(key)
        .send()
        .await
        .unwrap()
}

#[tokio::test]
async fn serve_creates_svc_db_and_keys_survive_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    let (server, base) = serve(dir.path(), &[]).await;
    assert!(
        dir.path().join("svc.db").exists(),
        "svc serve did not create ./svc.db"
    );

    let key = create_key(dir.path(), "ops@example.com", &[]);
    let body: Value = usage(&base, &key).await.json().await.unwrap();
    assert_eq!(body["balance"]["spendable"], 42);
    assert_eq!(body["plan"], "free");

    // SIGTERM: the server drains and exits cleanly, so the database is left consistent.
    let mut server = server;
    let term = Command::new("kill")
        .args(["-TERM", &server.0.id().to_string()])
        .status()
        .unwrap();
    assert!(term.success());
    let started = Instant::now();
    let status = loop {
        if let Some(status) = server.0.try_wait().unwrap() {
            break status;
        }
        assert!(
            started.elapsed() < Duration::from_secs(15),
            "svc serve ignored SIGTERM"
        );
        std::thread::sleep(Duration::from_millis(20));
    };
    assert!(
        status.success(),
        "svc serve exited with {status} on SIGTERM"
    );
    // A revocation by another process (the CLI) lands within SVC_KEY_CACHE_MILLIS; with 0 it
    // lands on the next request.
    let (_server, base) = serve(dir.path(), &[("SVC_KEY_CACHE_MILLIS", "0")]).await;
    let after = usage(&base, &key).await;
    assert_eq!(after.status(), 200, "key lost across restart");

    let list = svc(dir.path()).args(["keys", "list"]).output().unwrap();
    let listed = String::from_utf8(list.stdout).unwrap();
    let prefix = &key[..17];
    assert!(
        listed.contains(prefix) && listed.contains("active"),
        "{listed}"
    );
    assert!(!listed.contains(&key), "keys list must not show secrets");

    let revoke = svc(dir.path())
        .args(["keys", "revoke", prefix])
        .output()
        .unwrap();
    assert!(revoke.status.success());
    let refused = usage(&base, &key).await;
    assert_eq!(refused.status(), 401);
    let body: Value = refused.json().await.unwrap();
    assert_eq!(body["failure_class"], "revoked_api_key");
    let again = svc(dir.path())
        .args(["keys", "revoke", prefix])
        .output()
        .unwrap();
    assert!(!again.status.success(), "a second revocation must fail");
}

/// `svc keys rotate PREFIX`: the new key on stdout, the old one working until the overlap's
/// end (named on stderr); the overlap is a setting, refused out of range naming its variable.
#[tokio::test]
async fn keys_rotate_keeps_the_old_key_for_the_overlap() {
    let dir = tempfile::tempdir().unwrap();
    let key = create_key(dir.path(), "rotate@example.com", &[]);
    let (_server, base) = serve(dir.path(), &[("SVC_KEY_CACHE_MILLIS", "0")]).await;
    let rotate = |prefix: &str, extra: &[&str]| {
        svc(dir.path())
            .args(["keys", "rotate", prefix])
            .args(extra)
            .env_remove("SVC_KEY_ROTATION_OVERLAP_HOURS")
            .output()
            .unwrap()
    };
    let out = rotate(&key[..17], &[]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let new = String::from_utf8(out.stdout).unwrap().trim().to_owned();
    assert!(new.starts_with("svc_live_") && new.len() == 41, "{new}");
    assert!(stderr.contains("keeps working until"), "{stderr}");
    assert!(!stderr.contains(&new), "the secret on stderr");
    assert_eq!(usage(&base, &key).await.status(), 200, "no overlap");
    assert_eq!(usage(&base, &new).await.status(), 200);
    let listed = svc(dir.path()).args(["keys", "list"]).output().unwrap();
    let listed = String::from_utf8(listed.stdout).unwrap();
    assert!(listed.contains("rotating"), "{listed}");

    // Rotated once: not again.
    assert!(!rotate(&key[..17], &[]).status.success());
    // Out of range: refused, naming the variable; nothing rotated.
    let wide = rotate(&new[..17], &["--overlap-hours", "721"]);
    assert!(!wide.status.success());
    assert!(
        String::from_utf8_lossy(&wide.stderr).contains("SVC_KEY_ROTATION_OVERLAP_HOURS"),
        "{}",
        String::from_utf8_lossy(&wide.stderr)
    );
    // No overlap: the old key stops at once.
    let out = rotate(&new[..17], &["--overlap-hours", "0"]);
    assert!(out.status.success());
    let newest = String::from_utf8(out.stdout).unwrap().trim().to_owned();
    assert_eq!(usage(&base, &new).await.status(), 401);
    assert_eq!(usage(&base, &newest).await.status(), 200);
}

#[tokio::test]
async fn migrate_and_bad_input_fail_cleanly() {
    let dir = tempfile::tempdir().unwrap();
    let out = svc(dir.path()).arg("migrate").output().unwrap();
    assert!(out.status.success());
    assert!(dir.path().join("svc.db").exists());
    let bad = svc(dir.path())
        .args(["keys", "create", "--email", "not-an-email"])
        .output()
        .unwrap();
    assert!(!bad.status.success());
    assert!(bad.stdout.is_empty());
    let bad_credits = svc(dir.path())
        .args([
            "keys",
            "create",
            "--email",
            "a@example.com",
            "--credits",
            "0",
        ])
        .output()
        .unwrap();
    assert!(!bad_credits.status.success());
    let bad_db = svc(dir.path())
        .args(["migrate"])
        .env("SVC_DATABASE_URL", "mysql://x")
        .output()
        .unwrap();
    assert!(!bad_db.status.success());
}

#[tokio::test]
async fn sandbox_prints_its_url_and_key_once_it_serves() {
    let dir = tempfile::tempdir().unwrap();
    let mut child = Running(
        svc(dir.path())
            .args(["sandbox", "--bind", "127.0.0.1:0"])
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    let stdout = child.0.stdout.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            let _ = tx.send(line);
        }
    });
    let mut base = None;
    let mut key = None;
    let mut demo = None;
    while base.is_none() || key.is_none() || demo.is_none() {
        let line = rx
            .recv_timeout(Duration::from_secs(30))
            .expect("sandbox printed nothing");
        if let Some(v) = line.strip_prefix("SVC_BASE_URL=") {
            base = Some(v.to_owned());
        } else if let Some(v) = line.strip_prefix("SVC_API_KEY=") {
            key = Some(v.to_owned());
        } else if let Some(v) = line.strip_prefix("SVC_DEMO_SITE=") {
            demo = Some(v.to_owned());
        }
    }
    let (base, key, demo) = (base.unwrap(), key.unwrap(), demo.unwrap());
    // The sandbox's reader reaches its demo site by name, and nothing else on loopback.
    let read = |url: String| {
        let (base, key) = (base.clone(), key.clone());
        async move {
            reqwest::Client::new()
                .get(format!("{base}/api/read"))
                .query(&[("url", url)])
                .bearer_auth(key)
                .send()
                .await
                .unwrap()
        }
    };
    let page: Value = read(format!("{demo}/articles/tides"))
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(page["outcome"], "page", "{page}");
    assert_eq!(page["title"], "Tides of the North Sea");
    let port = demo.rsplit(':').next().unwrap();
    assert_eq!(
        read(format!("http://127.0.0.1:{port}/")).await.status(),
        422
    );
    assert!(key.starts_with("svc_test_"));
    // Printed once it serves: the first request needs no retry.
    let body: Value = usage(&base, &key).await.json().await.unwrap();
    assert_eq!(body["plan"], "sandbox");
    assert_eq!(body["balance"]["spendable"], 1000);
    assert!(
        !dir.path().join("svc.db").exists(),
        "the sandbox must not touch a database file"
    );
}

#[tokio::test]
async fn keys_and_serve_work_on_postgres() {
    let url = svc_contract_tests::postgres_database().await;
    let dir = tempfile::tempdir().unwrap();
    let env = [("SVC_DATABASE_URL", url.as_str())];
    let key = create_key(dir.path(), "pg@example.com", &env);
    let (_server, base) = serve(dir.path(), &env).await;
    let body: Value = usage(&base, &key).await.json().await.unwrap();
    assert_eq!(body["balance"]["spendable"], 42);
    assert!(
        !dir.path().join("svc.db").exists(),
        "Postgres mode must not create svc.db"
    );
}

#[tokio::test]
async fn serve_without_smtp_says_mail_is_only_logged_and_never_logs_codes() {
    let dir = tempfile::tempdir().unwrap();
    // `svc()` clears SVC_SMTP_URL: mail is only logged.
    let (_child, base, rx) = serve_logged(dir.path(), &[]).await;
    let registered = reqwest::Client::new()
        .post(format!("{base}/api/register"))
        .json(&serde_json::json!({"email": "someone@example.com"}))
        .send()
        .await
        .unwrap();
    assert_eq!(registered.status(), 200);
    let mut said_at_start = false;
    let mut mail_line = None;
    let started = Instant::now();
    while mail_line.is_none() && started.elapsed() < Duration::from_secs(20) {
        let Ok(line) = rx.recv_timeout(Duration::from_secs(1)) else {
            continue;
        };
        said_at_start |= line.contains("no SVC_SMTP_URL");
        if line.contains("mail not delivered") {
            mail_line = Some(line);
        }
    }
    assert!(
        said_at_start,
        "svc serve must say at start that mail is only logged"
    );
    let line = mail_line.expect("the log-only mailer logs each message");
    assert!(line.contains("s***@example.com"), "{line}");
    // The fields (not the timestamp, whose microseconds are six digits too) carry no code.
    let fields = serde_json::from_str::<Value>(&line).unwrap()["fields"].to_string();
    let has_code = fields
        .split(|c: char| !c.is_ascii_digit())
        .any(|w| w.len() == 6);
    assert!(!has_code, "a code reached the log: {line}");
}

async fn spendable_and_held(base: &str, key: &str) -> (i64, i64) {
    let body: Value = usage(base, key).await.json().await.unwrap();
    (
        body["balance"]["spendable"].as_i64().unwrap(),
        body["balance"]["held"].as_i64().unwrap(),
    )
}

fn execute_request(
    base: &str,
    key: &str,
    body: &Value,
    idempotency_key: &str,
) -> reqwest::RequestBuilder {
    reqwest::Client::new()
        .post(format!("{base}/api/execute"))
        .bearer_auth(key)
        .header("Idempotency-Key", idempotency_key)
        .json(body)
}

/// Issue 20: the shipped example maps failed on their `{base_url}` template, and `learn` had no
/// way to reach the sandbox's sites, so `svc serve` had no documented way to get actions.
#[test]
fn the_shipped_maps_import_as_they_are_and_learn_reaches_the_sandbox() {
    let dir = tempfile::tempdir().unwrap();
    let shop = Path::new(env!("CARGO_MANIFEST_DIR")).join("sandbox/maps/shop.json");
    let shop = shop.to_str().unwrap();
    let run = |args: &[&str]| {
        let out = svc(dir.path()).args(args).output().unwrap();
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    let (code, _, err) = run(&["maps", "import", shop]);
    assert_eq!(code, Some(1));
    assert!(
        err.contains("template") && err.contains("--base-url"),
        "{err}"
    );
    let (code, _, err) = run(&["maps", "import", shop, "--base-url", "ftp://shop"]);
    assert_eq!(code, Some(1), "{err}");
    let (code, out, err) = run(&["maps", "import", shop, "--base-url", "http://127.0.0.1:9/"]);
    assert_eq!(code, Some(0), "{err}");
    assert!(
        out.contains("shop.sandbox.test") && out.contains("candidate"),
        "{out}"
    );

    let (code, out, err) = run(&["maps", "learn", "--sandbox", "ready.sandbox.test"]);
    assert_eq!(code, Some(0), "{err}");
    assert!(
        out.contains("ready.sandbox.test") && out.contains("candidate"),
        "{out}"
    );
    let (code, _, err) = run(&["maps", "learn", "--sandbox", "example.com"]);
    assert_eq!(code, Some(1));
    assert!(
        err.contains("not a sandbox site") && err.contains("shop.sandbox.test"),
        "{err}"
    );
}

#[tokio::test]
async fn maps_and_artifacts_from_the_command_line() {
    let dir = tempfile::tempdir().unwrap();
    let template = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("sandbox/maps/shop.json"),
    )
    .unwrap();
    let map = dir.path().join("shop.json");
    std::fs::write(
        &map,
        template
            .replace("{base_url}", "https://shop.example.com")
            .replace("shop.sandbox.test", "shop.example.com"),
    )
    .unwrap();
    let run = |args: &[&str]| {
        let out = svc(dir.path()).args(args).output().unwrap();
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    let (code, out, err) = run(&["maps", "import", map.to_str().unwrap()]);
    assert_eq!(code, Some(0), "{err}");
    assert!(
        out.contains("shop.example.com") && out.contains("candidate"),
        "{out}"
    );
    assert_eq!(run(&["maps", "import", map.to_str().unwrap()]).0, Some(0));
    let (code, out, _) = run(&["maps", "publish", "shop.example.com", "--version", "1"]);
    assert_eq!(code, Some(0));
    assert!(out.contains("v1") && out.contains("published"), "{out}");
    let (_, out, _) = run(&["maps", "list"]);
    let lines: Vec<&str> = out.lines().collect();
    assert!(
        lines[0].contains("v2") && lines[0].contains("candidate"),
        "{out}"
    );
    assert!(
        lines[1].contains("v1") && lines[1].contains("published"),
        "{out}"
    );
    let (code, out, _) = run(&["maps", "retire", "shop.example.com"]);
    assert_eq!((code, out.contains("retired")), (Some(0), true));
    let (code, _, err) = run(&["maps", "retire", "shop.example.com"]);
    assert_eq!(code, Some(1), "nothing is published any more: {err}");
    let (code, _, err) = run(&[
        "maps",
        "import",
        dir.path().join("nope.json").to_str().unwrap(),
    ]);
    assert_eq!(code, Some(1), "{err}");
    let bad = dir.path().join("bad.json");
    std::fs::write(
        &bad,
        template
            .replace("{base_url}", "https://shop.example.com")
            .replace("\"family\": \"order\"", "\"family\": \"credential_entry\""),
    )
    .unwrap();
    let (code, _, err) = run(&["maps", "import", bad.to_str().unwrap()]);
    assert_eq!(code, Some(1));
    assert!(err.contains("disallowed"), "{err}");

    // An artifact from a running sandbox, checked offline with its JWKS.
    let sandbox = start_sandbox(dir.path(), &[], &[]);
    let answer: Value = execute_request(&sandbox.base, &sandbox.key,
        &serde_json::json!({"domain": "shop.sandbox.test", "action": "get_product", "params": {"sku": "MUG-BLUE"}}), "cli-1")
        .send().await.unwrap().json().await.unwrap();
    let jwks: Value = reqwest::get(format!("{}/.well-known/jwks.json", sandbox.base))
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let (answer_file, jwks_file) = (dir.path().join("answer.json"), dir.path().join("jwks.json"));
    std::fs::write(&answer_file, answer.to_string()).unwrap();
    std::fs::write(&jwks_file, jwks.to_string()).unwrap();
    let (code, out, err) = run(&[
        "artifacts",
        "verify",
        answer_file.to_str().unwrap(),
        "--jwks",
        jwks_file.to_str().unwrap(),
    ]);
    assert_eq!(code, Some(0), "{err}");
    assert!(out.starts_with("verified: art_"), "{out}");
    // The JWKS straight from its URL.
    let jwks_url = format!("{}/.well-known/jwks.json", sandbox.base);
    let (code, out, err) = run(&[
        "artifacts",
        "verify",
        answer_file.to_str().unwrap(),
        "--jwks",
        &jwks_url,
    ]);
    assert_eq!(code, Some(0), "{err}");
    assert!(out.starts_with("verified: art_"), "{out}");
    let mut tampered = answer.clone();
    tampered["artifact"]["evidence"]["http_status"] = serde_json::json!(201);
    std::fs::write(&answer_file, tampered.to_string()).unwrap();
    let (code, _, err) = run(&[
        "artifacts",
        "verify",
        answer_file.to_str().unwrap(),
        "--jwks",
        jwks_file.to_str().unwrap(),
    ]);
    assert_eq!(code, Some(1));
    assert!(err.contains("NOT verified"), "{err}");
    drop(sandbox.process);
}

#[tokio::test]
async fn serve_keeps_its_signing_key_across_restarts() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let kid = |base: String| async move {
        let jwks: Value = reqwest::get(format!("{base}/.well-known/jwks.json"))
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        jwks["keys"][0]["kid"].as_str().unwrap().to_owned()
    };
    let (first, base) = serve(dir.path(), &[]).await;
    let before = kid(base).await;
    drop(first);
    let file = dir.path().join("svc-signing.key");
    let mode = std::fs::metadata(&file).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600, "the key file is private");
    let (_second, base) = serve(dir.path(), &[]).await;
    assert_eq!(
        kid(base).await,
        before,
        "artifacts signed before a restart still verify"
    );
}

/// Issue 15: `SVC_RECOVER_AFTER_SECONDS=0` (or anything under the request deadline) started,
/// and the live process then refunded its own running actions. Every numeric setting outside
/// its documented range now stops the start with a message naming the variable.
#[test]
fn settings_out_of_range_stop_the_start_naming_the_variable() {
    let dir = tempfile::tempdir().unwrap();
    let cases = [
        ("serve", "SVC_RECOVER_AFTER_SECONDS", "0"),
        ("serve", "SVC_RECOVER_AFTER_SECONDS", "-5"),
        ("serve", "SVC_RECOVER_AFTER_SECONDS", "20"),
        ("serve", "SVC_SHUTDOWN_GRACE_SECONDS", "10"),
        ("serve", "SVC_SHUTDOWN_DELAY_SECONDS", "61"),
        ("serve", "SVC_KEY_CACHE_MILLIS", "1001"),
        ("serve", "SVC_PINNED_HOSTS", "shop.example"),
        ("serve", "SVC_PINNED_HOSTS", "shop.example=localhost:80"),
        ("serve", "SVC_PINNED_HOSTS", "shop example=127.0.0.1:80"),
        ("serve", "SVC_DATABASE_MAX_CONNECTIONS", "0"),
        ("serve", "SVC_MAX_BODY_BYTES", "10"),
        ("serve", "SVC_RATE_LIMIT_PER_KEY", "0"),
        ("serve", "SVC_RATE_LIMIT_PER_IP", "0"),
        ("serve", "SVC_SCAN_RATE_LIMIT_PER_IP", "0"),
        ("serve", "SVC_STARTER_PRICE", "0"),
        ("serve", "SVC_STARTER_CREDITS", "-1"),
        ("serve", "SVC_TRUSTED_PROXIES", "10.0.0.0/8,proxy.internal"),
        ("serve", "SVC_TRUSTED_PROXIES", "10.0.0.0/33"),
        ("serve", "SVC_FORWARDED_HEADER", "x-real-ip"),
        ("sandbox", "SVC_TRUSTED_PROXIES", "::1/200"),
        ("sandbox", "SVC_RECOVER_AFTER_SECONDS", "1"),
        ("sandbox", "SVC_SANDBOX_SEED_CREDITS", "-1"),
        ("sandbox", "SVC_DATABASE_MAX_CONNECTIONS", "1001"),
        ("serve", "SVC_FREE_CREDITS", "-1"),
        ("serve", "SVC_STARTER_CURRENCY", "zzz"),
        ("sandbox", "SVC_FREE_CREDITS", "1000001"),
        ("serve", "SVC_EMAIL_CODES_PER_HOUR", "0"),
        ("sandbox", "SVC_EMAIL_CODES_PER_HOUR", "1001"),
    ];
    for (command, variable, value) in cases {
        let out = svc(dir.path())
            .args([command, "--bind", "127.0.0.1:0"])
            .env(variable, value)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            !out.status.success(),
            "{command} {variable}={value} started"
        );
        assert!(
            stderr.contains(variable),
            "{command} {variable}={value}: the error does not name it: {stderr}"
        );
        assert!(
            !stderr.contains("service bound"),
            "{command} {variable}={value} bound a port first: {stderr}"
        );
    }
    // Nothing was created on the way out.
    assert!(!dir.path().join("svc.db").exists());
}

/// Issue 15: the shutdown grace (10 s) was shorter than the 15 s request deadline, so an
/// execute in flight at SIGTERM got no answer. Now it is answered (the site timed out: 504,
/// refunded) before the process exits cleanly.
#[tokio::test]
async fn sigterm_lets_an_action_in_flight_finish_with_its_answer() {
    let dir = tempfile::tempdir().unwrap();
    let sandbox = start_sandbox(dir.path(), &[], &[]);
    let body = serde_json::json!({"domain": "flaky.sandbox.test", "action": "slow", "params": {}});
    let in_flight =
        tokio::spawn(execute_request(&sandbox.base, &sandbox.key, &body, "term-1").send());
    let started = Instant::now();
    while spendable_and_held(&sandbox.base, &sandbox.key).await != (999, 1) {
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "the task never began"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let pid = sandbox.process.0.id().to_string();
    let killed = Command::new("kill").args(["-TERM", &pid]).status().unwrap();
    assert!(killed.success());
    let answer = in_flight
        .await
        .unwrap()
        .expect("the request in flight was answered, not dropped");
    assert_eq!(answer.status(), 504);
    let problem: Value = answer.json().await.unwrap();
    assert_eq!(problem["failure_class"], "upstream_timeout");
    assert_eq!(problem["credits_refunded"], 1, "{problem}");
    let mut process = sandbox.process;
    let status = tokio::task::spawn_blocking(move || process.0.wait().unwrap())
        .await
        .unwrap();
    assert!(status.success(), "exited with {status}");
}

/// Issue 15: `svc sandbox` ignored `SVC_SIGNING_KEY`, so two sandboxes sharing a database
/// signed with different keys. With the same key they publish the same JWKS.
#[tokio::test]
async fn sandboxes_given_one_signing_key_publish_one_jwks() {
    let dir = tempfile::tempdir().unwrap();
    let seed = [(
        "SVC_SIGNING_KEY",
        "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8",
    )];
    let a = start_sandbox(dir.path(), &[], &seed);
    let b = start_sandbox(dir.path(), &[], &seed);
    let c = start_sandbox(dir.path(), &[], &[]);
    let jwks = |base: String| async move {
        reqwest::get(format!("{base}/.well-known/jwks.json"))
            .await
            .unwrap()
            .json::<Value>()
            .await
            .unwrap()["keys"]
            .clone()
    };
    let (ka, kb, kc) = (
        jwks(a.base.clone()).await,
        jwks(b.base.clone()).await,
        jwks(c.base.clone()).await,
    );
    assert_eq!(ka, kb);
    assert_ne!(ka, kc, "without the setting each sandbox has its own key");
}
