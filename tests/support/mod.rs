//! What the tests of the built binary share: the binary, a child process killed when dropped,
//! a command with the caller's environment cleared of settings, and a sandbox started and read
//! back (its printed base URL and key).
#![allow(dead_code)] // each test file uses part of it

use std::{
    io::{BufRead, BufReader},
    path::Path,
    process::{Child, Command, Stdio},
    time::Duration,
};

pub const SVC: &str = env!("CARGO_BIN_EXE_svc");

/// A child process, killed and reaped when dropped.
pub struct Running(pub Child);

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// `svc` in `dir`, without the settings of the environment running the tests.
pub fn svc(dir: &Path) -> Command {
    let mut c = Command::new(SVC);
    c.current_dir(dir)
        .env_remove("SVC_DATABASE_URL")
        .env_remove("SVC_BIND")
        .env_remove("SVC_SMTP_URL")
        .env("SVC_LOG_FORMAT", "json");
    c
}

pub struct Sandbox {
    pub process: Running,
    pub base: String,
    pub key: String,
}

/// `svc sandbox` on a free port with `extra` arguments and `env`, once it printed its base URL
/// and key.
pub fn start_sandbox(dir: &Path, extra: &[&str], env: &[(&str, &str)]) -> Sandbox {
    let mut cmd = svc(dir);
    cmd.args(["sandbox", "--bind", "127.0.0.1:0"])
        .args(extra)
        .stdout(Stdio::piped())
        .stderr(Stdio::null());
    for (k, v) in env {
        cmd.env(k, v);
    }
    let mut process = Running(cmd.spawn().unwrap());
    let stdout = process.0.stdout.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            let _ = tx.send(line);
        }
    });
    let (mut base, mut key) = (None, None);
    while base.is_none() || key.is_none() {
        let line = rx
            .recv_timeout(Duration::from_secs(30))
            .expect("the sandbox printed its lines");
        if let Some(v) = line.strip_prefix("SVC_BASE_URL=") {
            base = Some(v.to_owned());
        } else if let Some(v) = line.strip_prefix("SVC_API_KEY=") {
            key = Some(v.to_owned());
        }
    }
    Sandbox {
        process,
        base: base.unwrap(),
        key: key.unwrap(),
    }
}
