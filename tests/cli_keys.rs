//! One key set per database (issue 18): instances sharing a store must sign with the same key
//! and seal connection credentials with the same key. An instance started with another key
//! refuses to start, naming the variable to set and printing no key material; a rotation through
//! the retired-key settings still works, also while old and new instances run side by side.

use std::{
    io::{BufRead, BufReader},
    path::Path,
    process::{Command, Stdio},
    time::{Duration, Instant},
};

use serde_json::Value;

mod support;

use support::Running;

/// Ed25519 seeds and AES-256-GCM keys: 32 bytes of 1, 2, ... in base64url.
const KEY_1: &str = "AQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQE";
const KEY_2: &str = "AgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgI";
const KEY_3: &str = "AwMDAwMDAwMDAwMDAwMDAwMDAwMDAwMDAwMDAwMDAwM";
const KEY_4: &str = "BAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQ";
const KEYS: [&str; 4] = [KEY_1, KEY_2, KEY_3, KEY_4];

fn svc(dir: &Path, env: &[(&str, &str)]) -> Command {
    let mut c = support::svc(dir);
    c.args(["serve", "--bind", "127.0.0.1:0"])
        .env_remove("SVC_SIGNING_KEY")
        .env_remove("SVC_SIGNING_KEYS_RETIRED")
        .env_remove("SVC_CONNECTION_KEY")
        .env_remove("SVC_CONNECTION_KEYS_RETIRED")
        .env_remove("SVC_WEB_BOT_AUTH")
        .env_remove("SVC_WEB_BOT_AUTH_KEY")
        .env_remove("SVC_WEB_BOT_AUTH_KEYS_RETIRED")
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    for (k, v) in env {
        c.env(k, v);
    }
    c
}

/// How a start ended: serving (with its base URL), or exited (with its code and stderr).
enum Start {
    Serving(Running, String),
    Exited(Option<i32>, String),
}

fn start(dir: &Path, env: &[(&str, &str)]) -> Start {
    let mut child = Running(svc(dir, env).spawn().unwrap());
    let stderr = child.0.stderr.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            let _ = tx.send(line);
        }
    });
    let mut seen = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        match rx.recv_timeout(Duration::from_millis(100)) {
            Ok(line) if line.contains("service bound") => {
                let fields = &serde_json::from_str::<Value>(&line).unwrap()["fields"];
                let base = fields["base_url"].as_str().unwrap().to_owned();
                // Keep draining the log so the pipe never fills.
                std::thread::spawn(move || while rx.recv().is_ok() {});
                return Start::Serving(child, base);
            }
            Ok(line) => seen.push(line),
            Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => {
                let status = child.0.wait().unwrap();
                return Start::Exited(status.code(), seen.join("\n"));
            }
            Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {}
        }
        assert!(
            Instant::now() < deadline,
            "svc serve neither served nor exited: {seen:?}"
        );
    }
}

fn serving(dir: &Path, env: &[(&str, &str)]) -> (Running, String) {
    match start(dir, env) {
        Start::Serving(child, base) => (child, base),
        Start::Exited(code, stderr) => panic!("svc serve exited ({code:?}): {stderr}"),
    }
}

/// Asserts the start was refused, naming `variable`, before binding, and without printing any
/// key material; answers the message.
fn refused(dir: &Path, env: &[(&str, &str)], variable: &str) -> String {
    let Start::Exited(code, stderr) = start(dir, env) else {
        panic!("svc serve started although its {variable} differs from the database's");
    };
    assert_eq!(code, Some(1), "{stderr}");
    assert!(
        stderr.contains(variable),
        "the message does not name {variable}: {stderr}"
    );
    assert!(!stderr.contains("service bound"), "{stderr}");
    for key in KEYS {
        assert!(
            !stderr.contains(&key[..12]),
            "key material in the message: {stderr}"
        );
    }
    for file in [
        "svc-signing.key",
        "svc-connection.key",
        "svc-web-bot-auth.key",
    ] {
        if let Ok(content) = std::fs::read_to_string(dir.join(file)) {
            assert!(
                !stderr.contains(content.trim()),
                "the key file's content in the message: {stderr}"
            );
        }
    }
    stderr
}

async fn kids(base: &str) -> Vec<String> {
    let jwks: Value = reqwest::get(format!("{base}/.well-known/jwks.json"))
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    jwks["keys"]
        .as_array()
        .unwrap()
        .iter()
        .map(|k| k["kid"].as_str().unwrap().to_owned())
        .collect()
}

#[tokio::test]
async fn a_second_instance_with_another_signing_key_refuses_to_start() {
    let url = svc_contract_tests::postgres_database().await;
    let dir = tempfile::tempdir().unwrap();
    let db = ("SVC_DATABASE_URL", url.as_str());
    let conn = ("SVC_CONNECTION_KEY", KEY_3);
    let (first, _) = serving(dir.path(), &[db, ("SVC_SIGNING_KEY", KEY_1), conn]);
    let message = refused(
        dir.path(),
        &[db, ("SVC_SIGNING_KEY", KEY_2), conn],
        "SVC_SIGNING_KEY",
    );
    assert!(message.contains("SVC_SIGNING_KEYS_RETIRED"), "{message}");
    // A key file (the single-machine default) is refused the same way, naming the variable.
    let other = tempfile::tempdir().unwrap();
    let message = refused(other.path(), &[db, conn], "SVC_SIGNING_KEY");
    assert!(message.contains("svc-signing.key"), "{message}");
    // The same key starts, beside the first.
    let (_second, _) = serving(dir.path(), &[db, ("SVC_SIGNING_KEY", KEY_1), conn]);
    drop(first);
}

#[tokio::test]
async fn a_second_instance_with_another_connection_key_refuses_to_start() {
    let url = svc_contract_tests::postgres_database().await;
    let dir = tempfile::tempdir().unwrap();
    let db = ("SVC_DATABASE_URL", url.as_str());
    let signing = ("SVC_SIGNING_KEY", KEY_1);
    let (_first, _) = serving(dir.path(), &[db, signing, ("SVC_CONNECTION_KEY", KEY_3)]);
    let message = refused(
        dir.path(),
        &[db, signing, ("SVC_CONNECTION_KEY", KEY_4)],
        "SVC_CONNECTION_KEY",
    );
    assert!(message.contains("SVC_CONNECTION_KEYS_RETIRED"), "{message}");
    let other = tempfile::tempdir().unwrap();
    let message = refused(other.path(), &[db, signing], "SVC_CONNECTION_KEY");
    assert!(message.contains("svc-connection.key"), "{message}");
}

/// Every instance serves the Web Bot Auth directory, so a target verifying a request signed by
/// one instance may fetch the directory from another: the key is one per database too.
#[tokio::test]
async fn a_second_instance_with_another_web_bot_auth_key_refuses_to_start() {
    let url = svc_contract_tests::postgres_database().await;
    let dir = tempfile::tempdir().unwrap();
    let db = ("SVC_DATABASE_URL", url.as_str());
    let (signing, conn) = (("SVC_SIGNING_KEY", KEY_1), ("SVC_CONNECTION_KEY", KEY_3));
    let bot = |key| ("SVC_WEB_BOT_AUTH_KEY", key);
    let (_first, _) = serving(dir.path(), &[db, signing, conn, bot(KEY_2)]);
    let message = refused(
        dir.path(),
        &[db, signing, conn, bot(KEY_4)],
        "SVC_WEB_BOT_AUTH_KEY",
    );
    assert!(
        message.contains("SVC_WEB_BOT_AUTH_KEYS_RETIRED"),
        "{message}"
    );
    // The key file of another machine is refused the same way, naming the file.
    let other = tempfile::tempdir().unwrap();
    let message = refused(other.path(), &[db, signing, conn], "SVC_WEB_BOT_AUTH_KEY");
    assert!(message.contains("svc-web-bot-auth.key"), "{message}");
    assert!(
        message.contains("DELETE FROM key_set"),
        "how to start over: {message}"
    );
    // A rotation (the recorded key retired) starts, and so does an instance that signs nothing.
    let (_rotated, _) = serving(
        dir.path(),
        &[
            db,
            signing,
            conn,
            bot(KEY_4),
            ("SVC_WEB_BOT_AUTH_KEYS_RETIRED", KEY_2),
        ],
    );
    let (_off, _) = serving(
        other.path(),
        &[db, signing, conn, ("SVC_WEB_BOT_AUTH", "off")],
    );
}

/// A rolling rotation: new instances (new key, the old one retired) start beside old ones, old
/// ones may still (re)start, and only a key unrelated to the record is refused.
#[tokio::test]
async fn keys_rotate_through_the_retired_settings_while_old_instances_run() {
    let url = svc_contract_tests::postgres_database().await;
    let dir = tempfile::tempdir().unwrap();
    let db = ("SVC_DATABASE_URL", url.as_str());
    let old = [
        db,
        ("SVC_SIGNING_KEY", KEY_1),
        ("SVC_CONNECTION_KEY", KEY_3),
    ];
    let new = [
        db,
        ("SVC_SIGNING_KEY", KEY_2),
        ("SVC_SIGNING_KEYS_RETIRED", KEY_1),
        ("SVC_CONNECTION_KEY", KEY_4),
        ("SVC_CONNECTION_KEYS_RETIRED", KEY_3),
    ];
    let (_old, old_base) = serving(dir.path(), &old);
    let old_kid = kids(&old_base).await[0].clone();
    let (_new, new_base) = serving(dir.path(), &new);
    let new_kids = kids(&new_base).await;
    assert_eq!(new_kids.len(), 2, "the old key is still published");
    assert_eq!(new_kids[1], old_kid);
    // An old instance restarting mid-deploy still starts.
    let (_old_again, _) = serving(dir.path(), &old);
    // A key the record does not know is refused, even with a retired key the record lacks.
    refused(
        dir.path(),
        &[
            db,
            ("SVC_SIGNING_KEY", KEY_4),
            ("SVC_SIGNING_KEYS_RETIRED", KEY_3),
            ("SVC_CONNECTION_KEY", KEY_4),
        ],
        "SVC_SIGNING_KEY",
    );
    // Rotating on from the new key (the old one dropped from the settings) works too.
    let (_next, _) = serving(
        dir.path(),
        &[
            db,
            ("SVC_SIGNING_KEY", KEY_3),
            ("SVC_SIGNING_KEYS_RETIRED", KEY_2),
            ("SVC_CONNECTION_KEY", KEY_4),
        ],
    );
}

/// On the single-machine default (SQLite, key files) the keys are recorded too: losing the
/// signing key file no longer silently starts with a new key, which no earlier artifact was
/// signed with.
#[test]
fn a_lost_key_file_is_noticed_on_sqlite() {
    let dir = tempfile::tempdir().unwrap();
    let (first, _) = serving(dir.path(), &[]);
    drop(first);
    let (second, _) = serving(dir.path(), &[]);
    drop(second);
    std::fs::remove_file(dir.path().join("svc-signing.key")).unwrap();
    let message = refused(dir.path(), &[], "SVC_SIGNING_KEY");
    assert!(message.contains("svc-signing.key"), "{message}");
}

/// `svc reseal` with the database and connection key settings of `env`: its exit code, stdout
/// and stderr.
fn reseal(dir: &Path, env: &[(&str, &str)], args: &[&str]) -> (Option<i32>, String, String) {
    let mut c = support::svc(dir);
    c.arg("reseal")
        .args(args)
        .env_remove("SVC_CONNECTION_KEY")
        .env_remove("SVC_CONNECTION_KEYS_RETIRED");
    for (k, v) in env {
        c.env(k, v);
    }
    let out = c.output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    for key in KEYS {
        assert!(!stderr.contains(&key[..12]), "key material: {stderr}");
    }
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr,
    )
}

/// The line of `field` in a reseal report, as its numbers.
fn counts(report: &str, field: &str) -> Vec<u64> {
    let line = report
        .lines()
        .find(|l| l.starts_with(field))
        .unwrap_or_else(|| panic!("no line for {field}: {report}"));
    line.split_whitespace()
        .skip(1)
        .map(|n| n.parse().unwrap())
        .collect()
}

/// After a connection key rotation, `svc reseal` seals the stored secrets again with the new
/// key, so the old one can leave the settings: `--check` says when, and an instance with only
/// the new key then opens everything. It refuses (status 2, nothing written) a directory
/// without the database, a key no instance has started with and an older recorded key, and
/// names a value no key opens (status 1).
#[tokio::test]
async fn reseal_moves_stored_secrets_to_the_new_key_so_the_old_one_can_go() {
    let dir = tempfile::tempdir().unwrap();
    // The wrong directory: no database, nothing created, not even a key file.
    let (code, _, stderr) = reseal(dir.path(), &[], &["--check"]);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(stderr.contains("SVC_DATABASE_URL"), "{stderr}");
    assert_eq!(
        std::fs::read_dir(dir.path()).unwrap().count(),
        0,
        "nothing created"
    );

    let old = [("SVC_CONNECTION_KEY", KEY_3)];
    let rotated = [
        ("SVC_CONNECTION_KEY", KEY_4),
        ("SVC_CONNECTION_KEYS_RETIRED", KEY_3),
    ];
    // A webhook endpoint whose secret the old key seals.
    let (server, base) = serving(dir.path(), &old);
    let out = support::svc(dir.path())
        .args(["keys", "create", "--email", "reseal@example.com"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let key = String::from_utf8(out.stdout).unwrap().trim().to_owned();
    let created: Value = reqwest::Client::new()
        .post(format!("{base}/api/webhook-endpoints"))
        .bearer_auth(&key)
        .json(&serde_json::json!({"url": "https://93.184.216.34/hooks"}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let secret = created["secret"].as_str().expect("a secret").to_owned();
    let endpoint = created["endpoint"]["id"]
        .as_str()
        .expect("an id")
        .to_owned();
    drop(server);

    // No instance seals with the new key yet: refused, nothing written.
    let (code, _, stderr) = reseal(dir.path(), &rotated, &[]);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(stderr.contains("SVC_CONNECTION_KEY"), "{stderr}");

    let (server, _) = serving(dir.path(), &rotated);
    drop(server);
    let (code, report, _) = reseal(dir.path(), &rotated, &["--check"]);
    assert_eq!(code, Some(1), "the retired key is still needed: {report}");
    // READ CURRENT STALE CHANGED UNOPENABLE
    assert_eq!(counts(&report, "webhook_endpoints.secret"), [1, 0, 1, 0, 0]);
    let (code, report, stderr) = reseal(dir.path(), &rotated, &[]);
    assert_eq!(code, Some(0), "{report}{stderr}");
    assert_eq!(counts(&report, "webhook_endpoints.secret"), [1, 0, 1, 0, 0]);
    let (code, report, _) = reseal(dir.path(), &rotated, &["--check"]);
    assert_eq!(code, Some(0), "{report}");
    assert_eq!(counts(&report, "webhook_endpoints.secret"), [1, 1, 0, 0, 0]);

    // The new key alone opens the stored secret, for its endpoint only.
    let store =
        svc_sql::SqliteStore::open(&format!("sqlite://{}", dir.path().join("svc.db").display()))
            .await
            .unwrap();
    use svc_ports::{SecretSealer, store::SealedStore};
    let stored = store
        .sealed_values(svc_ports::SealedField::WebhookSecret, None, 10)
        .await
        .unwrap();
    assert_eq!(stored.len(), 1);
    assert_eq!(stored[0].0, endpoint);
    let new_only = svc_oauth::AesGcmSealer::from_settings(KEY_4, &[]).unwrap();
    let context = svc_ports::SealedField::WebhookSecret.context(&endpoint);
    assert_eq!(
        new_only.open(&stored[0].1, &context).unwrap(),
        secret.as_bytes()
    );
    let (_new_only, _) = serving(dir.path(), &[("SVC_CONNECTION_KEY", KEY_4)]);

    // A key the record does not know is refused even with the right retired key.
    let unknown = [
        ("SVC_CONNECTION_KEY", KEY_1),
        ("SVC_CONNECTION_KEYS_RETIRED", KEY_4),
    ];
    let (code, _, stderr) = reseal(dir.path(), &unknown, &["--allow-older-key"]);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(stderr.contains("SVC_CONNECTION_KEY"), "{stderr}");
    // The old key, recorded but not the newest (a stale configuration), would seal what the
    // instances can no longer open: refused unless the rollback is said.
    let rollback = [
        ("SVC_CONNECTION_KEY", KEY_3),
        ("SVC_CONNECTION_KEYS_RETIRED", KEY_4),
    ];
    let (code, _, stderr) = reseal(dir.path(), &rollback, &["--check"]);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(stderr.contains("--allow-older-key"), "{stderr}");
    let (code, report, _) = reseal(dir.path(), &rollback, &["--check", "--allow-older-key"]);
    assert_eq!(code, Some(1), "{report}");
    assert_eq!(counts(&report, "webhook_endpoints.secret"), [1, 0, 1, 0, 0]);

    // A value no key opens is named and left; the others are still resealed.
    let garbage = svc_ports::SealedSecret::new(vec![2; 40]);
    assert!(
        store
            .replace_sealed(
                svc_ports::SealedField::WebhookSecret,
                &endpoint,
                &stored[0].1,
                &garbage
            )
            .await
            .unwrap()
    );
    let (code, report, stderr) = reseal(dir.path(), &rotated, &[]);
    assert_eq!(code, Some(1), "{report}{stderr}");
    assert_eq!(counts(&report, "webhook_endpoints.secret"), [1, 0, 0, 0, 1]);
    assert!(
        report.contains(&format!(
            "does not open: webhook_endpoints.secret of {endpoint}"
        )),
        "{report}"
    );
}
