//! Logging, set up once: JSON lines when stderr is not a terminal (production), readable text
//! otherwise. Logs go to stderr so stdout stays for command output (keys, sandbox lines).
//!
//! No secret reaches a log line at any level. Two guards:
//! - libraries that log whole payloads are capped whatever `SVC_LOG` asks for: rmcp logs every
//!   MCP request and response at debug (sign-in codes, new API keys, handoff links) and echoes
//!   argument errors at warn, so it gets `error`; lettre logs SMTP commands (credentials) and
//!   wiremock (the sandbox's fake provider) requests at debug, so they get `info`. HTML parsing
//!   traces every token of every page: capped at `info` as noise; the browser's DevTools
//!   traffic (chromiumoxide, tungstenite) logs every URL and body at trace, so it gets `info`.
//!   The caps are a filter of their own, so no `SVC_LOG` directive (a module's, a span's)
//!   lifts them;
//! - every line is written through [`Redacting`], which masks what looks like an API key, a
//!   webhook secret or a bearer token, should any code path ever format one.

use std::{
    io::{self, IsTerminal, Write},
    sync::LazyLock,
};

use tracing_subscriber::{
    EnvFilter,
    filter::{FilterExt, LevelFilter, Targets, combinator::And},
    fmt,
    fmt::MakeWriter,
    prelude::*,
};

/// Targets capped whatever `SVC_LOG` says: they log payloads (or floods) below these levels.
/// A target covers everything under it (`rmcp` covers `rmcp::service`).
const CAPS: &[(&str, LevelFilter)] = &[
    ("rmcp", LevelFilter::ERROR),
    ("lettre", LevelFilter::INFO),
    ("wiremock", LevelFilter::INFO),
    ("html5ever", LevelFilter::ERROR),
    ("selectors", LevelFilter::INFO),
    // A hostile or damaged PDF is an expected answer, reported in the read's outcome.
    ("lopdf", LevelFilter::ERROR),
    ("pdf_extract", LevelFilter::ERROR),
    // The browser's DevTools traffic at trace: every URL a page loads, with its query (a
    // token in it), and every body it is given.
    ("chromiumoxide", LevelFilter::INFO),
    ("tungstenite", LevelFilter::INFO),
    ("tokio_tungstenite", LevelFilter::INFO),
    ("async_tungstenite", LevelFilter::INFO),
];

/// The filter `SVC_LOG` asks for (default `info,sqlx=warn`).
fn filter(svc_log: Option<&str>) -> EnvFilter {
    let base = svc_log
        .filter(|s| !s.trim().is_empty())
        .unwrap_or("info,sqlx=warn");
    EnvFilter::try_new(base).unwrap_or_else(|_| EnvFilter::new("info,sqlx=warn"))
}

/// The caps, a filter of their own beside `SVC_LOG`'s: an event passes only when both let it,
/// so no directive of `SVC_LOG` (`rmcp::service=trace`, a span's `[request]=trace`) lifts them.
fn caps() -> Targets {
    Targets::new()
        .with_default(LevelFilter::TRACE)
        .with_targets(CAPS.iter().copied())
}

/// `SVC_LOG`'s filter and the caps, both: one filter on the output layer, whose most verbose
/// level is the lower of theirs (a global `Targets` of its own would let the `log` crate's
/// bridge pass every `trace!` of every dependency, html5ever's per character, to be dropped).
pub fn log_filter<S>(svc_log: Option<&str>) -> And<EnvFilter, Targets, S>
where
    S: tracing::Subscriber + for<'a> tracing_subscriber::registry::LookupSpan<'a>,
{
    filter(svc_log).and(caps())
}

static SECRETS: LazyLock<regex::Regex> = LazyLock::new(|| {
    regex::Regex::new(
        r"(?x)
          (?P<key>svc(?:_|%5[Ff])(?:live|test)(?:_|%5[Ff]))[A-Za-z0-9]{32}
        | (?P<whsec>whsec(?:_|%5[Ff]))[A-Za-z0-9+/=%]{8,}
        | (?P<bearer>(?i:bearer)\s+)[A-Za-z0-9._~+/-]{8,}=*
        ",
    )
    .expect("static regex")
});

/// Masks secrets in one formatted log line.
pub fn redact(line: &str) -> std::borrow::Cow<'_, str> {
    SECRETS.replace_all(line, |c: &regex::Captures<'_>| {
        let kept = c
            .name("key")
            .or_else(|| c.name("whsec"))
            .or_else(|| c.name("bearer"))
            .map_or("", |m| m.as_str());
        format!("{kept}[redacted]")
    })
}

/// A writer that masks secrets in each line before it reaches stderr (the fmt layer writes
/// one whole event per `write`).
pub struct Redacting;

impl Write for Redacting {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let text = String::from_utf8_lossy(buf);
        io::stderr().write_all(redact(&text).as_bytes())?;
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        io::stderr().flush()
    }
}

impl<'a> MakeWriter<'a> for Redacting {
    type Writer = Redacting;
    fn make_writer(&'a self) -> Self::Writer {
        Redacting
    }
}

pub fn init() {
    let svc_log = std::env::var("SVC_LOG").ok();
    let json = match std::env::var("SVC_LOG_FORMAT").as_deref() {
        Ok("json") => true,
        Ok("pretty") | Ok("text") => false,
        _ => !std::io::stderr().is_terminal(),
    };
    let filter = log_filter(svc_log.as_deref());
    let result = if json {
        tracing_subscriber::registry()
            .with(
                fmt::layer()
                    .json()
                    .with_current_span(true)
                    // Every enclosing span, so the request's (its `id`) is on each line even
                    // when a line is logged inside a narrower span.
                    .with_span_list(true)
                    .with_writer(Redacting)
                    .with_filter(filter),
            )
            .try_init()
    } else {
        tracing_subscriber::registry()
            .with(fmt::layer().with_writer(Redacting).with_filter(filter))
            .try_init()
    };
    // Already initialised (tests spawn several apps in one process): keep the first.
    let _ = result;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secrets_are_masked_and_the_rest_kept() {
        let line = r#"{"a":"svc_live_0123456789abcdefghijABCDEFGHIJKL","b":"whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2La","c":"Authorization: Bearer abcdefgh.ijk-lmn","d":"svc_test_short","e":"status 200"}"#;
        let out = redact(line);
        assert_eq!(
            out,
            r#"{"a":"svc_live_[redacted]","b":"whsec_[redacted]","c":"Authorization: Bearer [redacted]","d":"svc_test_short","e":"status 200"}"#
        );
        // Percent-encoded, as in a logged URL's query.
        assert_eq!(
            redact(
                "GET /x?key=svc%5Flive%5F0123456789abcdefghijABCDEFGHIJKL&s=whsec%5fMfKQ9r8GKYqr"
            ),
            "GET /x?key=svc%5Flive%5F[redacted]&s=whsec%5f[redacted]"
        );
    }

    /// A review: the caps as a global filter of their own raised the most verbose level the
    /// process logs to trace, so every dependency's `log::trace!` reached the subscriber.
    #[test]
    fn the_caps_never_raise_the_level_svc_log_asks_for() {
        use tracing_subscriber::layer::Filter;
        let hint = |svc_log| {
            Filter::<tracing_subscriber::Registry>::max_level_hint(&log_filter(Some(svc_log)))
        };
        assert_eq!(hint("info,sqlx=warn"), Some(LevelFilter::INFO));
        assert_eq!(hint("warn"), Some(LevelFilter::WARN));
        assert_eq!(hint("debug,rmcp=trace"), Some(LevelFilter::TRACE));
    }

    #[derive(Clone)]
    struct Capture(std::sync::Arc<std::sync::Mutex<Vec<u8>>>);

    impl Write for Capture {
        fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    /// Issue 15: at `SVC_LOG=debug` rmcp logged whole MCP requests and responses (codes, new
    /// keys, handoff links). Capped whatever is asked for, also by name.
    #[test]
    fn payload_logging_libraries_stay_capped_at_trace() {
        let sink = Capture(Default::default());
        let seen = sink.clone();
        // By crate, by module (a review's `rmcp::service=trace` lifted the old caps) and
        // inside a span.
        let filter = log_filter(Some(
            "trace,rmcp=trace,rmcp::service=trace,lettre::transport=trace,[request]=trace,chromiumoxide::conn=trace",
        ));
        let subscriber = tracing_subscriber::registry().with(
            fmt::layer()
                .with_writer(move || sink.clone())
                .with_filter(filter),
        );
        tracing::subscriber::with_default(subscriber, || {
            let _request = tracing::info_span!("request").entered();
            tracing::debug!(target: "rmcp::service", "rmcp payload 123456");
            tracing::warn!(target: "rmcp::service", "rmcp echoes an argument");
            tracing::error!(target: "rmcp::service", "rmcp failed");
            tracing::debug!(target: "lettre::transport::smtp", "AUTH PLAIN secret");
            tracing::trace!(target: "chromiumoxide::conn", "Network.requestWillBeSent ?access_token=");
            tracing::trace!(target: "tungstenite::protocol", "Fetch.fulfillRequest body");
            tracing::trace!(target: "svc::services::actions", "ours at trace");
        });
        let out = String::from_utf8(seen.0.lock().unwrap().clone()).unwrap();
        for hidden in [
            "rmcp payload",
            "rmcp echoes",
            "AUTH PLAIN",
            "access_token",
            "fulfillRequest",
        ] {
            assert!(!out.contains(hidden), "{hidden}: {out}");
        }
        assert!(
            out.contains("rmcp failed") && out.contains("ours at trace"),
            "{out}"
        );
    }
}
