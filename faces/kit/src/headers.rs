//! Request headers read the one way every face reads them: a content type by its essence, the
//! `Idempotency-Key` as sent, and the headers a request may carry only once.

use poem::{Request, http::header};
use svc_ports::FailureClass;

use crate::problem::ApiProblem;

/// Headers whose second copy would make a request mean two things: which site it is for,
/// which key acts, which retry this is, how the body reads. The first copy is what poem hands
/// over, so a second that a proxy or a client's bug added is refused at the edge, not silently
/// ignored (RFC 9112 asks 400 for a second `Host`).
pub const SINGLE: [&str; 4] = ["host", "authorization", "idempotency-key", "content-type"];

/// The name of the first header of [`SINGLE`] that `req` carries more than once.
pub fn repeated(req: &Request) -> Option<&'static str> {
    SINGLE
        .into_iter()
        .find(|name| req.headers().get_all(*name).iter().nth(1).is_some())
}

/// Query parameters of the REST API that are lists, given once per item
/// (`include_selectors=a&include_selectors=b`); every other one is given once.
pub const LIST_PARAMETERS: [&str; 2] = ["include_selectors", "exclude_selectors"];

/// The name of the first query parameter `query` gives twice that is not a list (as the
/// parameter reader would see it, percent-decoded): the first copy would win silently, so a
/// proxy or a log reading the last would disagree with what ran.
pub fn repeated_parameter(query: &str) -> Option<String> {
    let mut seen = std::collections::HashSet::new();
    url::form_urlencoded::parse(query.as_bytes())
        .map(|(name, _)| name)
        .find(|name| !LIST_PARAMETERS.contains(&name.as_ref()) && !seen.insert(name.clone()))
        .map(|name| name.into_owned())
}

/// A media type's essence: the type and subtype, without parameters, trimmed.
pub fn essence(content_type: &str) -> &str {
    content_type.split(';').next().unwrap_or_default().trim()
}

/// Whether `content_type` names `media_type` (compared without case, parameters ignored).
pub fn is(content_type: Option<&str>, media_type: &str) -> bool {
    content_type.is_some_and(|c| essence(c).eq_ignore_ascii_case(media_type))
}

/// Whether `content_type` is JSON: `application/json` or a structured `application/*+json`.
pub fn is_json(content_type: Option<&str>) -> bool {
    content_type.map(essence).is_some_and(|e| {
        let e = e.to_ascii_lowercase();
        e == "application/json" || (e.starts_with("application/") && e.ends_with("+json"))
    })
}

/// The request's `Content-Type`, as text.
pub fn content_type(req: &Request) -> Option<&str> {
    req.header(header::CONTENT_TYPE)
}

/// The `Idempotency-Key` as sent. poem's typed headers hand a value with bytes past visible
/// ASCII over as absent, and a retry run as a request without its key would be charged or
/// opened again; so it is read here, as UTF-8 (as MCP and A2A read the key from JSON), and
/// the service judges it. Bytes that are not UTF-8 are refused.
pub fn idempotency_key(req: &Request) -> Result<Option<String>, ApiProblem> {
    let Some(value) = req.headers().get("idempotency-key") else {
        return Ok(None);
    };
    match std::str::from_utf8(value.as_bytes()) {
        Ok(key) => Ok(Some(key.to_owned())),
        Err(_) => Err(ApiProblem::new(
            FailureClass::InvalidRequest,
            "Idempotency-Key must be UTF-8 text",
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_parameter_given_twice_is_named_unless_it_is_a_list() {
        assert_eq!(
            repeated_parameter("limit=1&limit=500"),
            Some("limit".into())
        );
        assert_eq!(
            repeated_parameter("a=1&b=2&%61=3"),
            Some("a".into()),
            "decoded"
        );
        assert_eq!(repeated_parameter("url=x&format=text"), None);
        assert_eq!(
            repeated_parameter("include_selectors=a&include_selectors=b&url=x"),
            None
        );
        assert_eq!(repeated_parameter(""), None);
    }

    #[test]
    fn content_types_are_judged_by_their_essence() {
        assert!(is(
            Some("Application/JSON; charset=utf-8"),
            "application/json"
        ));
        assert!(is(Some(" text/html "), "text/html"));
        assert!(!is(Some("application/jsonx"), "application/json"));
        assert!(!is(None, "application/json"));
        for json in [
            "application/json",
            "APPLICATION/JSON;charset=UTF-8",
            "application/problem+json",
            "application/vnd.api+json; v=1",
        ] {
            assert!(is_json(Some(json)), "{json}");
        }
        for other in ["text/json", "application/jsonp", "text/plain", "+json", ""] {
            assert!(!is_json(Some(other)), "{other}");
        }
    }

    #[test]
    fn an_idempotency_key_is_read_as_sent_or_refused() {
        let with = |bytes: &[u8]| {
            Request::builder()
                .header(
                    "idempotency-key",
                    poem::http::HeaderValue::from_bytes(bytes).unwrap(),
                )
                .finish()
        };
        assert_eq!(
            idempotency_key(&with("café".as_bytes()))
                .unwrap()
                .as_deref(),
            Some("café")
        );
        assert_eq!(
            idempotency_key(&with(b"k-1")).unwrap().as_deref(),
            Some("k-1")
        );
        assert!(idempotency_key(&with(b"caf\xe9")).is_err());
        assert_eq!(idempotency_key(&Request::default()).unwrap(), None);
    }

    #[test]
    fn a_header_sent_twice_is_named() {
        let req = Request::builder()
            .header("authorization", "Bearer a")
            .header("idempotency-key", "k")
            .header("authorization", "Bearer b")
            .finish();
        assert_eq!(repeated(&req), Some("authorization"));
        let once = Request::builder()
            .header("authorization", "Bearer a")
            .header("accept", "a")
            .header("accept", "b")
            .finish();
        assert_eq!(repeated(&once), None);
    }
}
