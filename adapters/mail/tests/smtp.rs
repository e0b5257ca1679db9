//! The SMTP adapter against a real SMTP server process: Python's aiosmtpd, started here.
//!
//! Needs `SVC_TEST_PYTHON`, a Python with aiosmtpd (`scripts/test.sh` sets it from the clients
//! virtualenv). Without it the test fails rather than skips.

use std::{
    io::{BufRead, BufReader},
    net::TcpListener,
    process::{Child, Command, Stdio},
    sync::mpsc,
    time::Duration,
};

use svc_mail::SmtpMailer;
use svc_ports::{Email, MailError, MailMessage, Mailer};

struct Server {
    child: Child,
    port: u16,
    lines: mpsc::Receiver<String>,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// aiosmtpd with its Debugging handler, which prints every received message to stdout.
fn start_aiosmtpd() -> Server {
    let python = std::env::var("SVC_TEST_PYTHON").expect(
        "SVC_TEST_PYTHON is not set: run the suite with scripts/test.sh, which provides a Python with aiosmtpd",
    );
    let port = free_port();
    let child = Command::new(python)
        .args([
            "-u",
            "-m",
            "aiosmtpd",
            "-n",
            "-c",
            "aiosmtpd.handlers.Debugging",
            "stdout",
            "-l",
        ])
        .arg(format!("127.0.0.1:{port}"))
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("start aiosmtpd");
    // Owned by `Server` at once, whose drop kills and waits for it on every path.
    let mut server_child = Server {
        child,
        port,
        lines: mpsc::channel().1,
    };
    let stdout = server_child.child.stdout.take().unwrap();
    let (tx, lines) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    server_child.lines = lines;
    // Wait until it accepts connections (Python starts slowly on a loaded machine).
    let give_up = std::time::Instant::now() + Duration::from_secs(60);
    while std::time::Instant::now() < give_up {
        if std::net::TcpStream::connect(("127.0.0.1", port)).is_ok() {
            return server_child;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    panic!("aiosmtpd did not start on port {port}");
}

fn received(server: &Server, until: &str) -> String {
    let mut text = String::new();
    while let Ok(line) = server.lines.recv_timeout(Duration::from_secs(30)) {
        text.push_str(&line);
        text.push('\n');
        if line.contains(until) {
            return text;
        }
    }
    panic!("aiosmtpd did not print `{until}`; it printed:\n{text}");
}

#[tokio::test]
async fn delivers_a_plain_text_message_to_a_real_smtp_server() {
    let server = start_aiosmtpd();
    let mailer = SmtpMailer::new(
        &format!("smtp://127.0.0.1:{}", server.port),
        "svc <no-reply@svc.example>",
    )
    .unwrap();
    let message = MailMessage {
        to: Email::parse("human@example.com").unwrap(),
        subject: "Your svc sign-in code".into(),
        text: "Your code is 493817. It expires in 10 minutes.".into(),
    };
    mailer.send(&message).await.unwrap();
    let text = received(&server, "END MESSAGE");
    assert!(text.contains("To: human@example.com"), "{text}");
    assert!(text.contains("From: svc <no-reply@svc.example>"), "{text}");
    assert!(text.contains("Subject: Your svc sign-in code"), "{text}");
    assert!(text.contains("Your code is 493817."), "{text}");
}

#[tokio::test]
async fn an_unreachable_relay_is_a_transient_failure() {
    let port = free_port(); // nothing listens here
    let mailer = SmtpMailer::new(
        &format!("smtp://127.0.0.1:{port}"),
        "svc <no-reply@svc.example>",
    )
    .unwrap();
    let message = MailMessage {
        to: Email::parse("human@example.com").unwrap(),
        subject: "s".into(),
        text: "t".into(),
    };
    let err = mailer.send(&message).await.unwrap_err();
    assert!(matches!(err, MailError::Unavailable(_)), "{err:?}");
}
