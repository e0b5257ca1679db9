//! Logging, set up once: JSON lines when stderr is not a terminal (production), readable text
//! otherwise. Logs go to stderr so stdout stays for command output (keys, sandbox lines).

use std::io::IsTerminal;

use tracing_subscriber::{EnvFilter, fmt, prelude::*};

pub fn init() {
    let filter =
        EnvFilter::try_from_env("SVC_LOG").unwrap_or_else(|_| EnvFilter::new("info,sqlx=warn"));
    let json = match std::env::var("SVC_LOG_FORMAT").as_deref() {
        Ok("json") => true,
        Ok("pretty") | Ok("text") => false,
        _ => !std::io::stderr().is_terminal(),
    };
    let registry = tracing_subscriber::registry().with(filter);
    let result = if json {
        registry
            .with(
                fmt::layer()
                    .json()
                    .with_current_span(true)
                    .with_span_list(false)
                    .with_writer(std::io::stderr),
            )
            .try_init()
    } else {
        registry
            .with(fmt::layer().with_writer(std::io::stderr))
            .try_init()
    };
    // Already initialised (tests spawn several apps in one process): keep the first.
    let _ = result;
}
