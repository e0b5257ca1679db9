//! `/metrics` in the Prometheus text format: the `metrics` facade's recorder from
//! `metrics-exporter-prometheus` (its own HTTP listener and push gateway left out), installed
//! once per process, and the endpoint that samples the gauges and renders it. What is counted
//! and where is listed in `svc_services::metrics`.

use std::sync::{Arc, OnceLock};

use metrics_exporter_prometheus::{Matcher, PrometheusBuilder, PrometheusHandle};
use poem::{
    Endpoint, Request, Response,
    error::NotFoundError,
    http::header::{AUTHORIZATION, CACHE_CONTROL},
};
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;
use svc_services::{Services, metrics as names};

/// Request latency buckets, in seconds: from a cached read (milliseconds) to an action that
/// runs into the 15 s request deadline.
const LATENCY_BUCKETS: &[f64] = &[
    0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 15.0, 30.0,
];

/// The commit this binary was built from, when the build said (`SVC_BUILD_COMMIT`).
pub const BUILD_COMMIT: &str = match option_env!("SVC_BUILD_COMMIT") {
    Some(c) => c,
    None => "unknown",
};

pub const CONTENT_TYPE: &str = "text/plain; version=0.0.4; charset=utf-8";

static HANDLE: OnceLock<PrometheusHandle> = OnceLock::new();

/// The process's recorder, installed on first use (a test process starts several apps: they
/// share it, as they share the process).
pub fn handle() -> &'static PrometheusHandle {
    HANDLE.get_or_init(|| {
        let recorder = PrometheusBuilder::new()
            .set_buckets_for_metric(
                Matcher::Full(names::HTTP_DURATION.to_owned()),
                LATENCY_BUCKETS,
            )
            .expect("the latency buckets are not empty")
            .build_recorder();
        let handle = recorder.handle();
        if metrics::set_global_recorder(recorder).is_err() {
            tracing::warn!("another metrics recorder was installed first; /metrics stays empty");
        }
        names::describe();
        metrics::gauge!(
            names::BUILD_INFO,
            "version" => env!("CARGO_PKG_VERSION"),
            "commit" => BUILD_COMMIT,
        )
        .set(1.0);
        handle
    })
}

/// Samples the gauges (pools, queue, PDF parsers, draining) and renders every metric.
pub fn render(services: &Services) -> String {
    if let Some(usage) = services.health.pool_usage() {
        metrics::gauge!(names::POOL_CONNECTIONS, "state" => "in_use").set(f64::from(usage.in_use));
        metrics::gauge!(names::POOL_CONNECTIONS, "state" => "idle").set(f64::from(usage.idle));
    }
    metrics::gauge!(names::TELEMETRY_QUEUE).set(services.telemetry.queue_depth() as f64);
    let parsers = svc_pdf::parser_threads();
    metrics::gauge!(names::PDF_PARSERS, "state" => "running").set(parsers.running as f64);
    metrics::gauge!(names::PDF_PARSERS, "state" => "overdue").set(parsers.overdue as f64);
    metrics::gauge!(names::DRAINING).set(if services.health.is_draining() {
        1.0
    } else {
        0.0
    });
    let handle = handle();
    handle.run_upkeep();
    handle.render()
}

/// `GET /metrics`: open on its own address (`SVC_METRICS_BIND`), or on the main address only
/// for `Authorization: Bearer $SVC_INTERNAL_TOKEN` (anything else is answered as an unknown
/// path, 404).
pub struct MetricsEndpoint {
    services: Arc<Services>,
    token: Option<[u8; 32]>,
}

impl MetricsEndpoint {
    pub fn open(services: Arc<Services>) -> Self {
        handle();
        Self {
            services,
            token: None,
        }
    }

    pub fn guarded(services: Arc<Services>, token: &str) -> Self {
        handle();
        Self {
            services,
            token: Some(Sha256::digest(token.as_bytes()).into()),
        }
    }

    /// Compares digests, so neither the token's bytes nor its length show in the timing.
    fn allowed(&self, req: &Request) -> bool {
        let Some(expected) = &self.token else {
            return true;
        };
        let presented = req
            .header(AUTHORIZATION)
            .and_then(|v| v.strip_prefix("Bearer "))
            .unwrap_or_default();
        let presented: [u8; 32] = Sha256::digest(presented.as_bytes()).into();
        bool::from(presented.ct_eq(expected))
    }
}

impl Endpoint for MetricsEndpoint {
    type Output = Response;

    async fn call(&self, req: Request) -> poem::Result<Response> {
        if !self.allowed(&req) {
            return Err(NotFoundError.into());
        }
        Ok(Response::builder()
            .content_type(CONTENT_TYPE)
            .header(CACHE_CONTROL, "no-store")
            .body(render(&self.services)))
    }
}
