//! `svc listen --forward-to URL`: the account's webhook events, forwarded to a local server
//! while developing (as `stripe listen` does). It polls `GET /api/webhook-events` with the
//! account's API key and POSTs each new event's exact body to the target, signed per Standard
//! Webhooks with a secret of this session (printed at start, or given with `--secret`), so the
//! local handler verifies it exactly as it will verify the service's own deliveries.
//!
//! The target is the developer's own machine (`http://localhost:3000/...`): it is called with
//! a plain client, not the service's guarded one, which exists to keep the service off such
//! addresses.

use std::{io::Write, time::Duration};

use anyhow::{Context, bail};
use serde_json::Value;
use svc_ports::webhooks::WebhookSecret;

/// What `svc listen` is given.
pub struct ListenOptions {
    /// The service's base URL.
    pub base_url: String,
    pub api_key: String,
    /// Where each event is POSTed.
    pub forward_to: String,
    /// Signs the forwarded events; `None`: a new one, printed.
    pub secret: Option<String>,
    /// Forward events recorded before the start too (default: only new ones).
    pub replay_existing: bool,
    pub poll_every: Duration,
    /// Stop after forwarding this many (tests, scripts); `None`: until stopped.
    pub max_events: Option<usize>,
}

/// Runs until `max_events` were forwarded (or forever); writes one line per event to `out`.
pub async fn run(options: ListenOptions, out: &mut (dyn Write + Send)) -> anyhow::Result<usize> {
    let secret = match &options.secret {
        Some(s) => WebhookSecret::parse(s).context("--secret must be whsec_ and base64")?,
        None => {
            let key = crate::startup::random_base62(32);
            WebhookSecret::from_key(key.as_bytes()).expect("32 bytes make a secret")
        }
    };
    let base = options.base_url.trim_end_matches('/').to_owned();
    let http = reqwest::Client::builder()
        .timeout(Duration::from_secs(15))
        .build()?;
    // The developer's own machine is reached directly, as Go's clients (and so `stripe
    // listen`) do: an HTTP_PROXY set for the way out would get the signed events instead.
    let forwarder = if is_loopback(&options.forward_to) {
        reqwest::Client::builder()
            .timeout(Duration::from_secs(15))
            .no_proxy()
            .build()?
    } else {
        http.clone()
    };
    let mut after = if options.replay_existing {
        None
    } else {
        latest_event(&http, &base, &options.api_key).await?
    };
    // Written once listening: events from here on are forwarded.
    writeln!(
        out,
        "Forwarding webhook events to {} (signing secret {}). Ctrl-C stops.",
        options.forward_to,
        secret.expose()
    )?;
    out.flush()?;
    let mut forwarded = 0;
    loop {
        let page = events(&http, &base, &options.api_key, after.as_deref()).await?;
        let list = page["events"].as_array().cloned().unwrap_or_default();
        for event in &list {
            let (Some(id), Some(kind), Some(body)) = (
                event["id"].as_str(),
                event["type"].as_str(),
                event["body"].as_str(),
            ) else {
                bail!("the service answered an event without id, type or body: {event}");
            };
            let status = forward(&forwarder, &options.forward_to, &secret, id, body).await;
            writeln!(out, "{kind} {id} -> {status}")?;
            after = Some(id.to_owned());
            forwarded += 1;
            if options.max_events.is_some_and(|max| forwarded >= max) {
                return Ok(forwarded);
            }
        }
        if list.is_empty() {
            tokio::time::sleep(options.poll_every).await;
        }
    }
}

/// Whether `url` names this machine: `localhost` (or a name under it) or a loopback address.
fn is_loopback(url: &str) -> bool {
    match url::Url::parse(url).ok().as_ref().and_then(url::Url::host) {
        Some(url::Host::Domain(name)) => {
            let name = name.trim_end_matches('.').to_ascii_lowercase();
            name == "localhost" || name.ends_with(".localhost")
        }
        Some(url::Host::Ipv4(ip)) => ip.is_loopback(),
        Some(url::Host::Ipv6(ip)) => ip.is_loopback(),
        None => false,
    }
}

/// The newest event's id now (events after it are the new ones).
async fn latest_event(
    http: &reqwest::Client,
    base: &str,
    key: &str,
) -> anyhow::Result<Option<String>> {
    let mut after: Option<String> = None;
    loop {
        let page = events(http, base, key, after.as_deref()).await?;
        if page["events"].as_array().is_none_or(Vec::is_empty) {
            return Ok(after);
        }
        after = page["next_after"].as_str().map(str::to_owned);
    }
}

async fn events(
    http: &reqwest::Client,
    base: &str,
    key: &str,
    after: Option<&str>,
) -> anyhow::Result<Value> {
    let mut req = http
        .get(format!("{base}/api/webhook-events"))
        .bearer_auth(key)
        .query(&[("limit", "100")]);
    if let Some(a) = after {
        req = req.query(&[("after", a)]);
    }
    let resp = req.send().await.context("reaching the service")?;
    let status = resp.status();
    let body: Value = resp.json().await.context("reading the event feed")?;
    if !status.is_success() {
        bail!(
            "the service answered {status}: {}",
            body["detail"].as_str().unwrap_or("no detail")
        );
    }
    Ok(body)
}

/// POSTs one event, signed; answers what to print (the status, or why it failed).
async fn forward(
    http: &reqwest::Client,
    to: &str,
    secret: &WebhookSecret,
    id: &str,
    body: &str,
) -> String {
    let timestamp = chrono::Utc::now().timestamp();
    let sent = http
        .post(to)
        .header("content-type", "application/json")
        .header("webhook-id", id)
        .header("webhook-timestamp", timestamp.to_string())
        .header(
            "webhook-signature",
            secret.sign(id, timestamp, body.as_bytes()),
        )
        .body(body.to_owned())
        .send()
        .await;
    match sent {
        Ok(r) => r.status().as_u16().to_string(),
        Err(e) => format!("failed: {e}"),
    }
}

#[cfg(test)]
mod tests {
    use super::is_loopback;

    #[test]
    fn loopback_targets_are_this_machine() {
        for url in [
            "http://localhost:3000/hooks",
            "http://LOCALHOST./x",
            "http://app.localhost:8080/",
            "http://127.0.0.1:3000/",
            "http://127.9.9.9/",
            "http://[::1]:3000/",
        ] {
            assert!(is_loopback(url), "{url}");
        }
        for url in [
            "https://hooks.example.com/",
            "http://10.0.0.1/",
            "http://localhost.example.com/",
            "not a url",
        ] {
            assert!(!is_loopback(url), "{url}");
        }
    }
}
