//! Cross-cutting request handling: request ids and access logs, per-IP rate limits, the body
//! size cap, and the final mapping of every error to problem+json.

use std::{net::IpAddr, sync::Arc};

use svc_ports::{ClientAddress, TrustedProxies};

use futures_util::StreamExt;
use poem::{
    Body, Endpoint, IntoResponse, PathPattern, Request, Response,
    http::{HeaderValue, header},
};
use svc_ports::FailureClass;
use tracing::Instrument;

use super::{
    limits::RateLimits,
    problem::{ApiProblem, classify},
};

pub const REQUEST_ID: &str = "x-request-id";

/// Paths and the methods they accept, from the OpenAPI document, for `Allow` on 405 and for
/// the route label of metrics.
#[derive(Debug, Default)]
pub struct AllowedMethods(Vec<(Vec<String>, String)>);

/// The label of a route in metrics for paths the OpenAPI document does not name.
pub const UNMATCHED_ROUTE: &str = "unmatched";

impl AllowedMethods {
    pub fn from_openapi(doc: &serde_json::Value) -> Self {
        let mut out = Vec::new();
        if let Some(paths) = doc["paths"].as_object() {
            for (path, item) in paths {
                let methods: Vec<String> = item
                    .as_object()
                    .map(|m| {
                        m.keys()
                            .filter(|k| is_method(k))
                            .map(|k| k.to_uppercase())
                            .collect()
                    })
                    .unwrap_or_default();
                let segments = path.split('/').map(str::to_owned).collect();
                out.push((segments, methods.join(", ")));
            }
        }
        Self(out)
    }

    pub fn for_path(&self, path: &str) -> Option<String> {
        self.find(path).map(|(_, methods)| methods.clone())
    }

    /// The OpenAPI path template `path` matches (`/api/tasks/{task_id}`).
    pub fn template_for(&self, path: &str) -> Option<String> {
        self.find(path).map(|(pattern, _)| pattern.join("/"))
    }

    fn find(&self, path: &str) -> Option<&(Vec<String>, String)> {
        let segs: Vec<&str> = path.split('/').collect();
        self.0.iter().find(|(pattern, _)| {
            pattern.len() == segs.len()
                && pattern
                    .iter()
                    .zip(&segs)
                    .all(|(p, s)| p == s || (p.starts_with('{') && p.ends_with('}')))
        })
    }

    /// The route label of a request: its OpenAPI template, else the pattern poem's router
    /// matched (pages, discovery files, `/mcp`), else [`UNMATCHED_ROUTE`]. Never the raw path,
    /// so the label takes a bounded set of values.
    pub fn route_label(&self, path: &str, matched: Option<&str>) -> String {
        if let Some(template) = self.template_for(path) {
            return template;
        }
        match matched {
            Some(pattern) if !pattern.contains('*') && (pattern == path || pattern.len() > 1) => {
                pattern
                    .split('/')
                    .map(|seg| match seg.strip_prefix(':') {
                        Some(name) => format!("{{{name}}}"),
                        None => seg.to_owned(),
                    })
                    .collect::<Vec<_>>()
                    .join("/")
            }
            _ => UNMATCHED_ROUTE.to_owned(),
        }
    }
}

fn method_label(method: &poem::http::Method) -> &'static str {
    use poem::http::Method;
    match *method {
        Method::GET => "GET",
        Method::HEAD => "HEAD",
        Method::POST => "POST",
        Method::PUT => "PUT",
        Method::PATCH => "PATCH",
        Method::DELETE => "DELETE",
        Method::OPTIONS => "OPTIONS",
        _ => "other",
    }
}

fn is_method(k: &str) -> bool {
    matches!(
        k,
        "get" | "put" | "post" | "delete" | "options" | "head" | "patch" | "trace"
    )
}

/// Settings the outermost layer needs.
#[derive(Clone)]
pub struct Edge {
    pub limits: RateLimits,
    pub max_body_bytes: usize,
    /// Whose forwarding headers name the client (`SVC_TRUSTED_PROXIES`).
    pub proxies: Arc<TrustedProxies>,
    pub www_authenticate: Arc<str>,
    pub allowed: Arc<AllowedMethods>,
    /// The page a browser gets for a problem (the web face's layout), chosen by `Accept`.
    pub html_error: Option<fn(&ApiProblem) -> String>,
    /// The `Link` header (RFC 8288) every page carries: the API catalog, the API description,
    /// its documentation. Added to HTML and Markdown answers that set none of their own.
    pub page_links: Option<Arc<str>>,
}

/// Every 401, whichever face or handler wrote it, challenges with the same `Bearer` scheme
/// and points at the protected-resource metadata (RFC 9728 section 5.1): a handler's own
/// challenge is kept when it already names `resource_metadata`.
fn finish_headers(resp: &mut Response, edge: &Edge) {
    // A response that does not say how it may be cached is stored nowhere: most carry a
    // caller's data (balances, tasks), some a secret shown once (a new key, a webhook secret);
    // the public documents say their own (`ETag` and `max-age`).
    if !resp.headers().contains_key(header::CACHE_CONTROL) {
        resp.headers_mut()
            .insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    }
    if resp.status() == poem::http::StatusCode::UNAUTHORIZED {
        let named = resp
            .headers()
            .get(header::WWW_AUTHENTICATE)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.contains("resource_metadata="));
        if !named && let Ok(v) = HeaderValue::from_str(&edge.www_authenticate) {
            resp.headers_mut().insert(header::WWW_AUTHENTICATE, v);
        }
    }
    let page = resp
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|c| c.starts_with("text/html") || c.starts_with("text/markdown"));
    if page
        && !resp.headers().contains_key(header::LINK)
        && let Some(links) = edge
            .page_links
            .as_deref()
            .and_then(|l| HeaderValue::from_str(l).ok())
    {
        resp.headers_mut().insert(header::LINK, links);
    }
}

fn valid_request_id(v: &str) -> bool {
    (1..=64).contains(&v.len())
        && v.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
}

/// The caller's address as limits count it (an IPv6 client by its /64): the socket's peer, or,
/// when the peer is a trusted proxy, the right-most address in the forwarding header that is
/// not a trusted proxy itself (see [`TrustedProxies::client`]).
pub fn client_ip_of(req: &Request, proxies: &TrustedProxies) -> Option<ClientAddress> {
    client_peer_of(req, proxies).map(ClientAddress::of)
}

fn client_peer_of(req: &Request, proxies: &TrustedProxies) -> Option<IpAddr> {
    let peer = req.remote_addr().as_socket_addr().map(|a| a.ip())?;
    // Lossy: bytes a client put in its part of a value make that entry malformed, and must
    // not hide what a trusted proxy appended to the same value.
    let values: Vec<String> = req
        .headers()
        .get_all(proxies.header().as_str())
        .iter()
        .map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned())
        .collect();
    Some(proxies.client(peer, values.iter().map(String::as_str)))
}

/// Reads the body up to the cap; `Err` when it is larger. Bodies announced larger are refused
/// before a byte is read.
async fn cap_body(req: &mut Request, max: usize) -> Result<(), ApiProblem> {
    let too_large = || {
        ApiProblem::new(
            FailureClass::PayloadTooLarge,
            format!("Request bodies are limited to {max} bytes."),
        )
    };
    let announced = req
        .header(header::CONTENT_LENGTH)
        .and_then(|v| v.parse::<u64>().ok());
    if announced.is_some_and(|n| n > max as u64) {
        return Err(too_large());
    }
    if announced == Some(0) {
        return Ok(());
    }
    let mut stream = req.take_body().into_bytes_stream();
    let mut buf = Vec::with_capacity(announced.unwrap_or(0) as usize);
    while let Some(chunk) = stream.next().await {
        let chunk = chunk.map_err(|e| {
            ApiProblem::new(
                FailureClass::MalformedRequest,
                format!("Reading the body failed: {e}"),
            )
        })?;
        if buf.len() + chunk.len() > max {
            return Err(too_large());
        }
        buf.extend_from_slice(&chunk);
    }
    let form = crate::headers::is(
        crate::headers::content_type(req),
        "application/x-www-form-urlencoded",
    );
    if form && !decodes_to_utf8(&buf) {
        return Err(not_utf8("The form"));
    }
    req.set_body(Body::from(buf));
    Ok(())
}

fn not_utf8(what: &str) -> ApiProblem {
    ApiProblem::new(
        FailureClass::MalformedRequest,
        format!("{what} is not UTF-8 text once percent-decoded."),
    )
}

/// Whether URL-encoded `data` (a query string or a form body) percent-decodes to UTF-8. The
/// extractors decode lossily, turning bad bytes into U+FFFD and storing that; a JSON body with
/// the same bytes is a 400, and so is this. `&` and `=` are ASCII, so the whole decodes to
/// UTF-8 exactly when each name and value does.
pub(crate) fn decodes_to_utf8(data: &[u8]) -> bool {
    let hex = |b: u8| (b as char).to_digit(16).map(|d| d as u8);
    let mut decoded = Vec::with_capacity(data.len());
    let mut i = 0;
    while i < data.len() {
        match data[i] {
            b'%' => match (
                data.get(i + 1).and_then(|&b| hex(b)),
                data.get(i + 2).and_then(|&b| hex(b)),
            ) {
                (Some(high), Some(low)) => {
                    decoded.push(high << 4 | low);
                    i += 3;
                    continue;
                }
                // A `%` not followed by two hex digits stands for itself.
                _ => decoded.push(b'%'),
            },
            b => decoded.push(b),
        }
        i += 1;
    }
    std::str::from_utf8(&decoded).is_ok()
}

/// The content coding of the request's body when it is not `identity`, as the detail names it
/// (a token, else a placeholder: the header is the caller's text).
fn body_coding(req: &Request) -> Option<String> {
    let codings = req.headers().get_all(header::CONTENT_ENCODING);
    let coded = codings.iter().find(|v| {
        v.to_str().map_or(true, |v| {
            v.split(',')
                .any(|c| !c.trim().is_empty() && !c.trim().eq_ignore_ascii_case("identity"))
        })
    })?;
    let named = coded.to_str().ok().map(str::trim).filter(|v| {
        v.len() <= 40
            && v.chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | ',' | ' ' | '.'))
    });
    Some(match named {
        Some(v) => format!("`{v}`"),
        None => "of another coding".to_owned(),
    })
}

/// The endpoints OAuth clients call: their errors carry RFC 6749's `error` and
/// `error_description` also when the body is refused before the handler (not UTF-8, too
/// large), beside the problem's fields.
const OAUTH_PATHS: [&str; 3] = [
    "/oauth2/token",
    "/oauth2/device_authorization",
    "/agent/identity",
];

fn oauth_shaped(resp: &mut Response, problem: &ApiProblem) {
    use poem_openapi::types::ToJSON;
    let Some(mut body) = crate::wire::signup::OAuthError::from_problem(problem, None).to_json()
    else {
        return;
    };
    body["status"] = resp.status().as_u16().into();
    resp.set_body(body.to_string());
    resp.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
}

/// The outermost layer: gives every request an id and a span, applies the per-IP limit and the
/// body cap, refuses what could be read two ways (a header or REST query parameter given
/// twice, no `Host`, a compressed body, a query that is not UTF-8), and renders every error as
/// problem+json.
pub async fn edge<E: Endpoint>(next: E, mut req: Request) -> poem::Result<Response> {
    let edge = req
        .data::<Edge>()
        .cloned()
        .ok_or_else(|| ApiProblem::internal("edge settings missing"))?;
    let request_id = req
        .header(REQUEST_ID)
        .filter(|v| valid_request_id(v))
        .map(str::to_owned)
        .unwrap_or_else(|| format!("req_{}", ulid::Ulid::new()));
    let span = tracing::info_span!(
        "request",
        id = %request_id,
        method = %req.method(),
        path = %req.uri().path(),
        account_id = tracing::field::Empty,
    );
    async move {
        let started = std::time::Instant::now();
        let path = req.uri().path().to_owned();
        let method = method_label(req.method());
        let authorization_sent = req.headers().contains_key(header::AUTHORIZATION);
        let coding = body_coding(&req);
        let wants_html = req
            .headers()
            .get(header::ACCEPT)
            .and_then(|v| v.to_str().ok())
            .is_some_and(crate::accept::prefers_html);
        let outcome = async {
            if let Some(ip) = client_ip_of(&req, &edge.proxies) {
                edge.limits.check_ip(ip)?;
            }
            if !decodes_to_utf8(req.uri().query().unwrap_or_default().as_bytes()) {
                return Err(not_utf8("The query string").into());
            }
            if let Some(name) = crate::headers::repeated(&req) {
                return Err(ApiProblem::new(
                    FailureClass::MalformedRequest,
                    format!("The request carries {name} more than once; send it once."),
                )
                .into());
            }
            if path.starts_with("/api/")
                && let Some(name) =
                    crate::headers::repeated_parameter(req.uri().query().unwrap_or_default())
            {
                let name = Some(name)
                    .filter(|n| n.len() <= 40 && n.bytes().all(|b| b.is_ascii_graphic()))
                    .map_or_else(|| "a parameter".to_owned(), |n| format!("`{n}`"));
                return Err(ApiProblem::new(
                    FailureClass::MalformedRequest,
                    format!("The query string gives {name} more than once; give it once."),
                )
                .into());
            }
            // RFC 9112: an HTTP/1.1 request without `Host` is 400 (HTTP/1.0 may omit it, as a
            // balancer's health check does; HTTP/2 names the authority its own way).
            if req.version() == poem::http::Version::HTTP_11
                && !req.headers().contains_key(header::HOST)
            {
                return Err(ApiProblem::new(
                    FailureClass::MalformedRequest,
                    "An HTTP/1.1 request carries a Host header; send one.",
                )
                .into());
            }
            // A compressed body would be read as its compressed bytes (JSON that does not
            // parse, a webhook signature over other bytes): RFC 9110 answers 415.
            if let Some(coding) = &coding {
                return Err(ApiProblem::new(
                    FailureClass::UnsupportedMediaType,
                    format!(
                        "The body is sent with Content-Encoding {coding}; only uncompressed \
                         bodies (identity) are read."
                    ),
                )
                .into());
            }
            cap_body(&mut req, edge.max_body_bytes).await?;
            next.call(req).await.map(IntoResponse::into_response)
        }
        .await;
        let matched = match &outcome {
            Ok(resp) => resp.data::<PathPattern>(),
            Err(err) => err.data::<PathPattern>(),
        }
        .map(|p| p.0.clone());
        let mut resp = match outcome {
            Ok(resp) => resp,
            Err(err) => {
                let problem = classify(&err, authorization_sent, || edge.allowed.for_path(&path));
                let mut resp = problem.render(&edge.www_authenticate);
                if OAUTH_PATHS.contains(&path.as_str()) {
                    oauth_shaped(&mut resp, &problem);
                }
                // Headers (Retry-After, Allow, WWW-Authenticate) stay; the body is a page.
                if let Some(page) = edge.html_error.filter(|_| wants_html) {
                    resp.set_body(page(&problem));
                    resp.headers_mut().insert(
                        header::CONTENT_TYPE,
                        HeaderValue::from_static("text/html; charset=utf-8"),
                    );
                }
                resp.headers_mut()
                    .insert(header::VARY, HeaderValue::from_static("Accept"));
                if problem.class == FailureClass::UnsupportedMediaType && coding.is_some() {
                    resp.headers_mut().insert(
                        header::ACCEPT_ENCODING,
                        HeaderValue::from_static("identity"),
                    );
                }
                resp
            }
        };
        finish_headers(&mut resp, &edge);
        if let Ok(v) = HeaderValue::from_str(&request_id) {
            resp.headers_mut().insert(REQUEST_ID, v);
        }
        let status = resp.status().as_u16();
        let elapsed = started.elapsed().as_secs_f64();
        let route = edge.allowed.route_label(&path, matched.as_deref());
        metrics::counter!(
            svc_services::metrics::HTTP_REQUESTS,
            "method" => method,
            "route" => route.clone(),
            "status" => status.to_string(),
        )
        .increment(1);
        metrics::histogram!(
            svc_services::metrics::HTTP_DURATION,
            "method" => method,
            "route" => route,
        )
        .record(elapsed);
        let ms = elapsed * 1000.0;
        if status >= 500 {
            tracing::error!(status, latency_ms = ms, "request failed");
        } else {
            tracing::info!(status, latency_ms = ms, "request");
        }
        Ok(resp)
    }
    .instrument(span)
    .await
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn url_encoded_data_must_decode_to_utf8() {
        for good in [
            "",
            "a=1&b=2",
            "q=caf%C3%A9",
            "q=caf\u{e9}",
            "100%",
            "a=%zz&b=%4",
            "x=%26%3D",
        ] {
            assert!(decodes_to_utf8(good.as_bytes()), "{good}");
        }
        for bad in [
            "q=%FF",
            "client_id=my%FFagent",
            "a=%C3&b=%A9",
            "a=%C3",
            "%ED%A0%80",
        ] {
            assert!(!decodes_to_utf8(bad.as_bytes()), "{bad}");
        }
    }

    #[test]
    fn allowed_methods_match_templates() {
        let doc = json!({"paths": {"/api/usage": {"get": {}}, "/api/tasks/{id}": {"get": {}, "delete": {}, "parameters": []}}});
        let a = AllowedMethods::from_openapi(&doc);
        assert_eq!(a.for_path("/api/usage").as_deref(), Some("GET"));
        assert_eq!(
            a.for_path("/api/tasks/task_1").as_deref(),
            Some("DELETE, GET")
        );
        assert_eq!(a.for_path("/api/nope"), None);
    }

    #[test]
    fn route_labels_are_templates_never_raw_paths() {
        let doc =
            json!({"paths": {"/api/usage": {"get": {}}, "/api/tasks/{task_id}": {"get": {}}}});
        let a = AllowedMethods::from_openapi(&doc);
        assert_eq!(
            a.route_label("/api/tasks/task_01", None),
            "/api/tasks/{task_id}"
        );
        // Not in the document: the router's pattern, with its parameters as templates.
        assert_eq!(
            a.route_label("/readiness/scan_01", Some("/readiness/:scan_id")),
            "/readiness/{scan_id}"
        );
        assert_eq!(a.route_label("/mcp", Some("/mcp")), "/mcp");
        assert_eq!(a.route_label("/", Some("/")), "/");
        // A catch-all (the API nest at `/` that did not match) or nothing: one label.
        assert_eq!(a.route_label("/nope/123", Some("/")), UNMATCHED_ROUTE);
        assert_eq!(a.route_label("/nope/123", Some("")), UNMATCHED_ROUTE);
        assert_eq!(
            a.route_label("/static/x.css", Some("/static/*")),
            UNMATCHED_ROUTE
        );
        assert_eq!(a.route_label("/x/y", None), UNMATCHED_ROUTE);
    }

    #[test]
    fn request_ids_are_checked() {
        assert!(valid_request_id("req_01HX"));
        assert!(!valid_request_id(""));
        assert!(!valid_request_id("a b"));
        assert!(!valid_request_id(&"x".repeat(65)));
    }
}
