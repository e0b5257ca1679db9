//! The service's metrics, by name, through the `metrics` facade (no exporter here: `startup`
//! installs the Prometheus recorder and serves `/metrics`). Business events are counted here,
//! in the services, so every face (REST, MCP, A2A, web) counts alike; HTTP requests are counted
//! by the edge in `kit`. Every label takes one of a few fixed values (bounded cardinality).

/// Requests answered, by `method`, `route` (the route template, `unmatched` for unknown paths)
/// and `status`.
pub const HTTP_REQUESTS: &str = "svc_http_requests_total";
/// Time to answer, by `method` and `route`, in seconds.
pub const HTTP_DURATION: &str = "svc_http_request_duration_seconds";
/// Executions by `outcome`: `completed` (charged), `failed` (refunded), `recovered` (an orphan
/// settled as failed and refunded), `replayed`, `refused` (before anything was stored),
/// `error` (an internal failure).
pub const EXECUTIONS: &str = "svc_executions_total";
/// Credits captured by completed executions.
pub const CREDITS_CHARGED: &str = "svc_credits_charged_total";
/// Credits given back by failed (or recovered) executions.
pub const CREDITS_REFUNDED: &str = "svc_credits_refunded_total";
/// Payment webhook deliveries by `result`: `verified` or the check that refused it.
pub const WEBHOOKS: &str = "svc_webhook_verifications_total";
/// Page fetches of reads by `outcome`: `fetched`, `cache_hit`, `refused`,
/// `robots_disallowed`, `timeout`, `connect`, `protocol`, `too_many_redirects`.
pub const FETCHES: &str = "svc_fetches_total";
/// Pages run in the browser by reads, by `outcome`: `rendered`, `cache_hit`, `unavailable`
/// (read statically instead, or refused), `busy`, `timeout`, `too_many_redirects`, `failed`.
pub const RENDERS: &str = "svc_renders_total";
/// Reads answered `outcome: blocked`, by `reason`.
pub const READS_BLOCKED: &str = "svc_reads_blocked_total";
/// Store pool connections by `state` (`in_use`, `idle`), sampled at each scrape.
pub const POOL_CONNECTIONS: &str = "svc_store_pool_connections";
/// Agent traffic events waiting for the telemetry writer, sampled at each scrape.
pub const TELEMETRY_QUEUE: &str = "svc_telemetry_queue_depth";
/// Readiness probes answered not ready, by `reason`.
pub const NOT_READY: &str = "svc_readiness_failures_total";
/// PDF parser threads alive by `state`: `running` (all of them) and `overdue` (past their
/// time limit: their callers were answered, and each holds a parser place until it ends).
/// Sampled at each scrape.
pub const PDF_PARSERS: &str = "svc_pdf_parser_threads";
/// 1 while the instance drains (after SIGTERM), else 0.
pub const DRAINING: &str = "svc_draining";
/// Always 1, labelled with `version` and `commit`.
pub const BUILD_INFO: &str = "svc_build_info";

/// What a metric is, for its `# TYPE` line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Counter,
    Gauge,
    Histogram,
}

/// Every metric with its kind and help text (`# HELP`), described once at start.
pub const CATALOG: &[(&str, Kind, &str)] = &[
    (
        HTTP_REQUESTS,
        Kind::Counter,
        "HTTP requests answered, by method, route template and status.",
    ),
    (
        HTTP_DURATION,
        Kind::Histogram,
        "Time to answer an HTTP request, by method and route template, in seconds.",
    ),
    (
        EXECUTIONS,
        Kind::Counter,
        "Action executions by outcome (completed, failed, recovered, replayed, refused, error).",
    ),
    (
        CREDITS_CHARGED,
        Kind::Counter,
        "Credits captured by completed executions.",
    ),
    (
        CREDITS_REFUNDED,
        Kind::Counter,
        "Credits refunded by failed or recovered executions.",
    ),
    (
        WEBHOOKS,
        Kind::Counter,
        "Payment webhook deliveries by verification result.",
    ),
    (FETCHES, Kind::Counter, "Page fetches of reads by outcome."),
    (
        RENDERS,
        Kind::Counter,
        "Pages run in the browser by reads, by outcome.",
    ),
    (
        READS_BLOCKED,
        Kind::Counter,
        "Reads answered as blocked, by reason.",
    ),
    (
        POOL_CONNECTIONS,
        Kind::Gauge,
        "Store pool connections by state (in_use, idle).",
    ),
    (
        TELEMETRY_QUEUE,
        Kind::Gauge,
        "Agent traffic events queued for the telemetry writer.",
    ),
    (
        NOT_READY,
        Kind::Counter,
        "Readiness probes answered not ready, by reason.",
    ),
    (
        PDF_PARSERS,
        Kind::Gauge,
        "PDF parser threads alive by state (running, overdue: past the time limit).",
    ),
    (
        DRAINING,
        Kind::Gauge,
        "1 while the instance is draining after SIGTERM.",
    ),
    (
        BUILD_INFO,
        Kind::Gauge,
        "Build of this instance: always 1, labelled with version and commit.",
    ),
];

/// Describes every metric to the installed recorder (its `# HELP` and `# TYPE` lines).
pub fn describe() {
    for (name, kind, help) in CATALOG {
        match kind {
            Kind::Counter => metrics::describe_counter!(*name, *help),
            Kind::Gauge => metrics::describe_gauge!(*name, *help),
            Kind::Histogram => {
                metrics::describe_histogram!(*name, metrics::Unit::Seconds, *help)
            }
        }
    }
}

/// One execution's outcome, and the credits it moved.
pub(crate) fn execution(outcome: &'static str, charged: i64, refunded: i64) {
    metrics::counter!(EXECUTIONS, "outcome" => outcome).increment(1);
    if charged > 0 {
        metrics::counter!(CREDITS_CHARGED).increment(charged as u64);
    }
    if refunded > 0 {
        metrics::counter!(CREDITS_REFUNDED).increment(refunded as u64);
    }
}
