//! RFC 9457 problem details: the one error shape of every REST answer, and the mapping from
//! every error poem, poem-openapi or a service can raise to it.

use poem::{
    IntoResponse, Response,
    error::{MethodNotAllowedError, NotFoundError, ResponseError},
    http::{HeaderValue, StatusCode, header},
};
use poem_openapi::{
    Enum, Object,
    registry::{MetaHeader, MetaMediaType, MetaResponse, MetaResponses, Registry},
    types::{ToJSON, Type},
};
use std::time::Duration;
use svc_ports::FailureClass;
use svc_services::AuthError;

pub const PROBLEM_JSON: &str = "application/problem+json";

#[derive(Debug, Clone, Copy, PartialEq, Eq, Enum)]
#[oai(rename_all = "snake_case")]
pub enum NextActionKind {
    Connect,
    TopUp,
    Approve,
    SignUp,
    Retry,
    /// Talk to sales (a plan that is not sold by checkout); `url` says where.
    ContactSales,
}

/// What the caller should do next, when there is something to do.
#[derive(Debug, Clone, PartialEq, Object)]
pub struct NextAction {
    pub kind: NextActionKind,
    #[oai(skip_serializing_if_is_none)]
    pub url: Option<String>,
}

/// RFC 9457 problem details, with the service's machine-readable extensions.
#[derive(Debug, Clone, PartialEq, Object)]
pub struct Problem {
    /// A URI reference naming the problem type: `/problems/{failure_class}`.
    #[oai(rename = "type")]
    pub problem_type: String,
    pub title: String,
    pub status: u16,
    /// What went wrong with this request, for a person or a model.
    pub detail: String,
    /// One value of the failure catalog (see the API description and
    /// `/.well-known/action-catalog.json`).
    pub failure_class: String,
    /// Whether sending the same request again later can succeed.
    pub retryable: bool,
    /// How long to wait before retrying, when known.
    #[oai(skip_serializing_if_is_none)]
    pub retry_after_ms: Option<u64>,
    /// One sentence addressed to the calling model.
    pub hint: String,
    #[oai(skip_serializing_if_is_none)]
    pub next_action: Option<NextAction>,
}

/// A failure on its way to the caller. Implements `ResponseError`, so handlers and extractors
/// return it as a `poem::Error`; the top-level mapper renders it.
#[derive(Debug, Clone)]
pub struct ApiProblem {
    pub class: FailureClass,
    pub detail: String,
    pub retry_after: Option<Duration>,
    pub next_action: Option<NextAction>,
    /// `Allow` header value for 405 answers.
    pub allow: Option<String>,
}

impl ApiProblem {
    pub fn new(class: FailureClass, detail: impl Into<String>) -> Self {
        Self {
            class,
            detail: detail.into(),
            retry_after: None,
            next_action: None,
            allow: None,
        }
    }

    pub fn retry_after(mut self, wait: Duration) -> Self {
        self.retry_after = Some(wait);
        self
    }

    pub fn next_action(mut self, kind: NextActionKind, url: Option<String>) -> Self {
        self.next_action = Some(NextAction { kind, url });
        self
    }

    /// A service's failure by its cause: a store that cannot be reached is a retryable 503
    /// (nothing was stored, the same request can succeed in a moment); anything else is an
    /// internal error. Logged once here with the whole chain of causes.
    pub fn failure(err: &(dyn std::error::Error + 'static)) -> Self {
        let mut chain = err.to_string();
        let mut next = err.source();
        while let Some(e) = next {
            chain.push_str(": ");
            chain.push_str(&e.to_string());
            next = e.source();
        }
        if svc_ports::store::is_unreachable(err) {
            tracing::warn!(error = %chain, "store unreachable");
            return Self::new(
                FailureClass::Unavailable,
                "The service's database cannot be reached right now; send the same request again \
                 in a moment (an execution with the same Idempotency-Key).",
            )
            .retry_after(Duration::from_secs(1));
        }
        Self::internal(chain)
    }

    /// An internal failure: logged once here with its cause, shown to the caller opaquely.
    pub fn internal(err: impl std::fmt::Display) -> Self {
        tracing::error!(error = %err, "internal error");
        Self::new(
            FailureClass::Internal,
            "The service failed to handle this request.",
        )
    }

    pub fn body(&self) -> Problem {
        Problem {
            problem_type: format!("/problems/{}", self.class.as_str()),
            title: self.class.title().to_owned(),
            status: self.class.http_status(),
            detail: self.detail.clone(),
            failure_class: self.class.as_str().to_owned(),
            retryable: self.class.retryable(),
            retry_after_ms: self
                .retry_after
                .map(|d| d.as_millis().try_into().unwrap_or(u64::MAX)),
            hint: self.class.hint().to_owned(),
            next_action: self.next_action.clone(),
        }
    }

    /// Renders the problem; `www_authenticate` is added to 401 answers.
    pub fn render(&self, www_authenticate: &str) -> Response {
        let body = self.body().to_json_string();
        let status = StatusCode::from_u16(self.class.http_status())
            .unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
        let mut resp = Response::builder()
            .status(status)
            .content_type(PROBLEM_JSON)
            .body(body);
        let headers = resp.headers_mut();
        if status == StatusCode::UNAUTHORIZED
            && let Ok(v) = HeaderValue::from_str(www_authenticate)
        {
            headers.insert(header::WWW_AUTHENTICATE, v);
        }
        if let Some(wait) = self.retry_after {
            // Whole seconds, rounded up, never 0 (RFC 9110 delay-seconds).
            let secs = wait.as_millis().div_ceil(1000).max(1);
            headers.insert(header::RETRY_AFTER, HeaderValue::from(secs as u64));
        }
        if let Some(allow) = self
            .allow
            .as_deref()
            .and_then(|a| HeaderValue::from_str(a).ok())
        {
            headers.insert(header::ALLOW, allow);
        }
        resp
    }
}

impl std::fmt::Display for ApiProblem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.class, self.detail)
    }
}

impl std::error::Error for ApiProblem {}

impl ResponseError for ApiProblem {
    fn status(&self) -> StatusCode {
        StatusCode::from_u16(self.class.http_status()).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR)
    }

    /// Used only when no mapper runs (it always does in the app); no `WWW-Authenticate` here.
    fn as_response(&self) -> Response {
        self.render("Bearer")
    }
}

/// Maps any error that reaches the top of the app to a problem.
/// `authorization_sent` tells a missing credential from one of the wrong scheme.
pub fn classify(
    err: &poem::Error,
    authorization_sent: bool,
    allowed_methods: impl Fn() -> Option<String>,
) -> ApiProblem {
    if let Some(p) = err.downcast_ref::<ApiProblem>() {
        return p.clone();
    }
    if err.is::<NotFoundError>() {
        return ApiProblem::new(FailureClass::NotFound, "No resource lives at this path.");
    }
    if err.is::<MethodNotAllowedError>() {
        let mut p = ApiProblem::new(
            FailureClass::MethodNotAllowed,
            "This path does not accept this method.",
        );
        p.allow = allowed_methods();
        return p;
    }
    if err.is::<poem_openapi::error::AuthorizationError>() {
        let reason = if authorization_sent {
            AuthError::Malformed
        } else {
            AuthError::Missing
        };
        return reason.into();
    }
    let status = err.status();
    let class = match status.as_u16() {
        400 => FailureClass::MalformedRequest,
        401 => FailureClass::MissingApiKey,
        403 => FailureClass::InsufficientScope,
        404 => FailureClass::NotFound,
        405 => FailureClass::MethodNotAllowed,
        413 => FailureClass::PayloadTooLarge,
        415 => FailureClass::UnsupportedMediaType,
        422 => FailureClass::InvalidRequest,
        429 => FailureClass::RateLimited,
        503 => FailureClass::Unavailable,
        s if s >= 500 => return ApiProblem::internal(err),
        _ => FailureClass::MalformedRequest,
    };
    ApiProblem::new(class, err.to_string())
}

fn problem_response(
    status: u16,
    description: &'static str,
    headers: Vec<MetaHeader>,
) -> MetaResponse {
    MetaResponse {
        description,
        status: Some(status),
        status_range: None,
        content: vec![MetaMediaType {
            content_type: PROBLEM_JSON,
            schema: Problem::schema_ref(),
        }],
        headers,
    }
}

fn header_meta<T: Type>(name: &str, description: &str, required: bool) -> MetaHeader {
    MetaHeader {
        name: name.to_owned(),
        description: Some(description.to_owned()),
        required,
        deprecated: false,
        schema: T::schema_ref(),
    }
}

/// Documents, in the OpenAPI description, the problems any operation can answer with; every
/// operation returns `Result<ItsResponse, ApiProblem>`.
impl poem_openapi::ApiResponse for ApiProblem {
    fn meta() -> MetaResponses {
        MetaResponses {
            responses: vec![
                problem_response(400, "Malformed request (`malformed_request`).", vec![]),
                problem_response(
                    401,
                    "Missing, malformed, unknown or revoked API key.",
                    vec![header_meta::<String>(
                        "WWW-Authenticate",
                        "Bearer challenge with `resource_metadata`.",
                        true,
                    )],
                ),
                problem_response(402, "Not enough credits (`insufficient_credits`).", vec![]),
                problem_response(
                    403,
                    "Authenticated but not allowed (scope, environment, connection).",
                    vec![],
                ),
                problem_response(404, "No such resource, domain or action.", vec![]),
                problem_response(
                    409,
                    "A request with this Idempotency-Key is in flight (`idempotency_in_flight`), or \
                     the resource is not in a state that allows this (`not_verifiable`, \
                     `verification_pending`, `key_not_active`).",
                    vec![header_meta::<u64>(
                        "Retry-After",
                        "Seconds to wait before sending it again (when retrying can help).",
                        false,
                    )],
                ),
                problem_response(413, "Request body larger than the limit.", vec![]),
                problem_response(415, "Body not sent as application/json.", vec![]),
                problem_response(
                    422,
                    "A value is not acceptable (`invalid_request`, `url_refused`, ...).",
                    vec![],
                ),
                problem_response(
                    429,
                    "Rate limit reached.",
                    vec![header_meta::<u64>(
                        "Retry-After",
                        "Seconds to wait before the next request.",
                        true,
                    )],
                ),
                problem_response(500, "Internal error.", vec![]),
                problem_response(503, "Temporarily unavailable (`unavailable`).", vec![]),
            ],
        }
    }

    fn register(registry: &mut Registry) {
        Problem::register(registry);
    }
}

impl IntoResponse for ApiProblem {
    fn into_response(self) -> Response {
        self.as_response()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn body_carries_the_catalog_fields() {
        let p = ApiProblem::new(FailureClass::RateLimited, "slow down")
            .retry_after(Duration::from_millis(1500));
        let b = p.body();
        assert_eq!(b.status, 429);
        assert_eq!(b.failure_class, "rate_limited");
        assert_eq!(b.problem_type, "/problems/rate_limited");
        assert!(b.retryable);
        assert_eq!(b.retry_after_ms, Some(1500));
        let resp = p.render("Bearer");
        assert_eq!(resp.headers()[header::RETRY_AFTER], "2");
        assert_eq!(resp.headers()[header::CONTENT_TYPE], PROBLEM_JSON);
    }

    #[test]
    fn unauthorized_carries_the_challenge() {
        let p: ApiProblem = AuthError::Revoked.into();
        let resp = p.render("Bearer resource_metadata=\"x\"");
        assert_eq!(resp.status(), StatusCode::UNAUTHORIZED);
        assert_eq!(
            resp.headers()[header::WWW_AUTHENTICATE],
            "Bearer resource_metadata=\"x\""
        );
    }

    #[test]
    fn poem_errors_are_classified() {
        let nf: poem::Error = NotFoundError.into();
        assert_eq!(classify(&nf, false, || None).class, FailureClass::NotFound);
        let m: poem::Error = MethodNotAllowedError.into();
        let p = classify(&m, false, || Some("GET".into()));
        assert_eq!(
            (p.class, p.allow.as_deref()),
            (FailureClass::MethodNotAllowed, Some("GET"))
        );
        let boom = poem::Error::from_string("db exploded", StatusCode::INTERNAL_SERVER_ERROR);
        let p = classify(&boom, false, || None);
        let auth: poem::Error = poem_openapi::error::AuthorizationError.into();
        assert_eq!(
            classify(&auth, false, || None).class,
            FailureClass::MissingApiKey
        );
        assert_eq!(
            classify(&auth, true, || None).class,
            FailureClass::InvalidApiKey
        );
        assert_eq!(p.class, FailureClass::Internal);
        assert!(
            !p.detail.contains("exploded"),
            "internal details leak: {}",
            p.detail
        );
    }
}
