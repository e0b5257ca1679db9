//! `svc listen --forward-to`: the account's events reach a local server, signed with the
//! session's secret, new ones only unless asked for all.

use std::time::Duration;

use svc::listen::{ListenOptions, run};

use crate::webhooks::{Receiver, app_with, search, verify_independently};

fn options(app: &crate::helpers::TestApp, to: String, key: &str, all: bool) -> ListenOptions {
    ListenOptions {
        base_url: app.base_url.clone(),
        api_key: key.to_owned(),
        forward_to: to,
        secret: Some("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw".into()),
        replay_existing: all,
        poll_every: Duration::from_millis(20),
        max_events: Some(1),
    }
}

#[tokio::test]
async fn listen_forwards_each_event_signed_with_its_session_secret() {
    let mut receiver = Receiver::start(&[]).await;
    let app = app_with(&receiver, None, false, None).await;
    // A local server: plain loopback, which only the developer's own CLI calls.
    let to = format!("http://{}/local/hooks", receiver.server.address());
    let old = search(&app, "tea").await;

    // `--all`: the event recorded before the start is forwarded.
    let mut out = Vec::new();
    let n = run(options(&app, to.clone(), &app.api_key, true), &mut out)
        .await
        .unwrap();
    assert_eq!(n, 1);
    let got = receiver.next().await;
    let body = verify_independently("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", &got);
    assert_eq!(body["data"]["task_id"], old["task_id"]);
    let printed = String::from_utf8(out).unwrap();
    assert!(printed.contains("task.completed evt_"), "{printed}");
    assert!(printed.contains("-> 200"), "{printed}");

    // By default only new events: the listener skips the old one and forwards the next.
    let (lines, mut listening_now) = tokio::sync::mpsc::unbounded_channel();
    let listening = {
        let options = options(&app, to, &app.api_key, false);
        tokio::spawn(async move {
            let mut out = Lines(lines);
            run(options, &mut out).await.unwrap()
        })
    };
    let banner = tokio::time::timeout(Duration::from_secs(20), listening_now.recv())
        .await
        .unwrap()
        .unwrap();
    assert!(
        banner.starts_with("Forwarding webhook events to "),
        "{banner}"
    );
    let new = search(&app, "mugs").await;
    assert_eq!(listening.await.unwrap(), 1);
    let got = receiver.next().await;
    let body = verify_independently("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", &got);
    assert_eq!(body["data"]["task_id"], new["task_id"]);
}

/// The listener's output, line by line, on a channel.
struct Lines(tokio::sync::mpsc::UnboundedSender<String>);

impl std::io::Write for Lines {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let _ = self.0.send(String::from_utf8_lossy(buf).into_owned());
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}
