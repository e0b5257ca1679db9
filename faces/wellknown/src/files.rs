//! Discovery files as served: rendered once at start, cacheable (`ETag`, `Cache-Control`, 304 on
//! a matching `If-None-Match`), readable from any origin (CORS), and counted in the funnel
//! when they stand for a discovery surface.

use poem::{
    Endpoint, EndpointExt, Response, get, handler,
    http::{HeaderValue, StatusCode, header},
    web::Data,
};
use serde_json::Value;

use kit::context::AppContext;

/// A discovery file rendered once at start; `Bytes` makes each answer a reference-count bump.
#[derive(Clone)]
pub struct StaticFile {
    body: bytes::Bytes,
    content_type: &'static str,
    /// The discovery surface a read of this file stands for, in the funnel.
    pub surface: Option<&'static str>,
    /// Strong validator: SHA-256 of the body.
    etag: HeaderValue,
}

impl StaticFile {
    pub fn new(body: Vec<u8>, content_type: &'static str) -> Self {
        use sha2::Digest;
        let digest = sha2::Sha256::digest(&body);
        let hex: String = digest[..16].iter().map(|b| format!("{b:02x}")).collect();
        Self {
            body: bytes::Bytes::from(body),
            content_type,
            surface: None,
            etag: HeaderValue::from_str(&format!("\"{hex}\""))
                .unwrap_or(HeaderValue::from_static("\"0\"")),
        }
    }
}

/// Discovery files: cacheable (`ETag`, `Cache-Control`, 304 on a matching `If-None-Match`) and
/// readable from any origin (CORS).
#[handler]
pub fn serve_static(
    req: &poem::Request,
    file: Data<&StaticFile>,
    ctx: Data<&AppContext>,
) -> Response {
    if let Some(surface) = file.surface {
        let who = kit::edge::client_ip_of(req, &ctx.proxies)
            .map(|ip| ip.to_string())
            .unwrap_or_default();
        ctx.services.telemetry.record(
            svc_services::telemetry::FunnelStep::new(
                svc_services::telemetry::Face::File(surface),
                "discovered",
                "discovery",
                &who,
            )
            .capability(req.uri().path()),
        );
    }
    let matches = req.header(header::IF_NONE_MATCH).is_some_and(|v| {
        v.split(',')
            .any(|t| t.trim() == file.etag || t.trim() == "*")
    });
    let builder = Response::builder()
        .header(header::ETAG, file.etag.clone())
        .header(header::CACHE_CONTROL, "public, max-age=300")
        .header(header::ACCESS_CONTROL_ALLOW_ORIGIN, "*")
        .header(header::ACCESS_CONTROL_EXPOSE_HEADERS, "ETag");
    if matches {
        return builder.status(StatusCode::NOT_MODIFIED).finish();
    }
    builder
        .status(StatusCode::OK)
        .content_type(file.content_type)
        .body(file.body.clone())
}

pub fn json_file(value: &Value) -> impl Endpoint + use<> {
    let bytes = serde_json::to_vec_pretty(value).unwrap_or_default();
    get(serve_static).data(StaticFile::new(bytes, "application/json"))
}

/// A discovery file whose reads count in the funnel under `surface`.
pub fn discovery_file(value: &Value, surface: &'static str) -> impl Endpoint + use<> {
    let bytes = serde_json::to_vec_pretty(value).unwrap_or_default();
    let mut file = StaticFile::new(bytes, "application/json");
    file.surface = Some(surface);
    get(serve_static).data(file)
}

pub fn text_file(text: String) -> impl Endpoint + use<> {
    get(serve_static).data(StaticFile::new(
        text.into_bytes(),
        "text/plain; charset=utf-8",
    ))
}
