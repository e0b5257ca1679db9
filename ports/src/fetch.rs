//! Fetching a URL that a caller named. The one implementation that reaches the network is the
//! guarded fetcher: every capability (reading, scans, learning maps, actions) goes through this
//! port, so no caller-named URL can reach a private, loopback or metadata address.

use std::fmt;

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

/// Why a URL was refused before any request reached it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "reason", rename_all = "snake_case")]
pub enum UrlRefusal {
    /// Not an absolute URL.
    Unparsable { detail: String },
    /// Only http and https are fetched.
    Scheme { scheme: String },
    /// `user:password@` in the URL.
    Credentials,
    /// The host is a known internal name (e.g. a cloud metadata host).
    InternalName { host: String },
    /// The host is, or resolves to, an address in a forbidden range.
    Address {
        host: String,
        address: String,
        range: &'static str,
    },
    /// A port of another protocol that speaks text (mail, IRC, SIP, ...), which a request
    /// could be forged into: the Fetch Standard's bad ports, which browsers refuse too.
    Port { port: u16 },
}

impl fmt::Display for UrlRefusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            UrlRefusal::Unparsable { detail } => write!(f, "not an absolute URL: {detail}"),
            UrlRefusal::Scheme { scheme } => {
                write!(f, "scheme `{scheme}` is not fetched; use http or https")
            }
            UrlRefusal::Credentials => {
                f.write_str("URLs with embedded credentials are not fetched")
            }
            UrlRefusal::InternalName { host } => write!(f, "`{host}` is an internal host name"),
            UrlRefusal::Address {
                host,
                address,
                range,
            } => {
                write!(
                    f,
                    "`{host}` is {address}, a {range} address, which is not fetched"
                )
            }
            UrlRefusal::Port { port } => write!(
                f,
                "port {port} is not fetched: it belongs to another protocol (a bad port of the \
                 Fetch Standard, which browsers refuse too)"
            ),
        }
    }
}

/// What robots.txt said about this fetch.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RobotsDecision {
    /// Whether robots.txt was consulted (false when the caller opted out).
    pub checked: bool,
    pub allowed: bool,
    pub robots_url: String,
    /// Why: `rules`, `no_robots_txt` (4xx), `unreachable` (5xx or network: disallow, RFC 9309),
    /// or `not_checked`.
    pub basis: String,
}

impl RobotsDecision {
    /// The decision recorded when robots.txt was not consulted.
    pub fn not_checked() -> Self {
        Self {
            checked: false,
            allowed: true,
            robots_url: String::new(),
            basis: "not_checked".into(),
        }
    }
}

/// Whether `url` is of `origin` (scheme, host and port, as robots.txt is per origin, RFC
/// 9309), or is the same host moved from `http` to `https` on the default ports: a site's
/// own redirect to its secure origin, still its own.
pub fn of_origin(origin: &url::Origin, url: &url::Url) -> bool {
    if url.origin() == *origin {
        return true;
    }
    match origin {
        url::Origin::Tuple(scheme, host, port) => {
            scheme == "http"
                && *port == 80
                && url.scheme() == "https"
                && url.port_or_known_default() == Some(443)
                && url.host().map(|h| h.to_owned()).as_ref() == Some(host)
        }
        url::Origin::Opaque(_) => false,
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FetchRequest {
    pub url: String,
    /// Honour robots.txt (the default). `false` exempts only the URL's own host (a validator
    /// reading a site's own files): a redirect to another host still asks that host's.
    pub respect_robots: bool,
    /// The `Accept` header; `None` asks for HTML first, as a browser would.
    pub accept: Option<String>,
}

impl FetchRequest {
    /// A GET that honours robots.txt and asks for HTML.
    pub fn page(url: impl Into<String>) -> Self {
        Self {
            url: url.into(),
            respect_robots: true,
            accept: None,
        }
    }
}

/// The longest any one outbound request (a page read, an action, a probe) may take, redirects
/// included: the guarded fetcher's deadline. Settings that must outlast a request (the task
/// recovery window, the shutdown grace) are checked against it at start.
pub const FETCH_DEADLINE: std::time::Duration = std::time::Duration::from_secs(15);

/// A fetched page, decoded to text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FetchedPage {
    pub requested_url: String,
    pub final_url: String,
    pub status: u16,
    pub content_type: Option<String>,
    /// The final answer's headers, names lower-cased, in the order received (`Link`, `Vary`,
    /// ...); empty for a page kept from before headers were kept.
    pub headers: Vec<(String, String)>,
    /// The charset the body was decoded from (`utf-8`, `windows-1252`, ...).
    pub charset: String,
    pub body: String,
    /// The body's bytes as received, kept only for documents read from their bytes (PDFs,
    /// see [`crate::document::is_pdf`]); `body` is then empty and `charset` is `binary`.
    pub raw: Option<Vec<u8>>,
    /// The body was longer than the cap and was cut there.
    pub truncated: bool,
    /// Every URL visited before `final_url`, in order.
    pub redirects: Vec<String>,
    pub robots: RobotsDecision,
    pub fetched_at: DateTime<Utc>,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FetchError {
    /// Refused before any request reached the target (also for a redirect's target).
    #[error("URL refused: {0}")]
    Refused(UrlRefusal),
    #[error("robots.txt disallows this URL ({})", .0.basis)]
    RobotsDisallowed(RobotsDecision),
    #[error("more than {limit} redirects")]
    TooManyRedirects { limit: usize },
    #[error("the target did not answer within {seconds} s")]
    Timeout { seconds: u64 },
    #[error("could not connect to the target: {detail}")]
    Connect { detail: String },
    #[error("the target's answer was broken: {detail}")]
    Protocol { detail: String },
}

/// Fetches pages. Implementations MUST refuse (with [`FetchError::Refused`], before sending
/// anything) every URL whose scheme is not http(s), that carries credentials, or whose host is
/// or resolves to a non-public address, and MUST apply the same checks to every redirect.
#[cfg_attr(feature = "mock", mockall::automock)]
#[async_trait]
pub trait PageFetcher: Send + Sync {
    async fn fetch(&self, request: &FetchRequest) -> Result<FetchedPage, FetchError>;

    /// What `url`'s site's robots.txt says of it, decided as [`Self::fetch`] decides (the same
    /// cache), without fetching `url` itself: for a request of another kind (a POST) to a URL
    /// a third party named. A refused URL is refused here too.
    async fn robots(&self, url: &str) -> Result<RobotsDecision, FetchError>;
}

/// One request an action makes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ActionRequest {
    pub method: crate::actions::HttpMethod,
    pub url: String,
    pub headers: Vec<(String, String)>,
    /// `(content type, bytes)`.
    pub body: Option<(String, Vec<u8>)>,
}

/// What the target answered. Redirects are not followed: a redirect is the answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ActionResponse {
    pub url: String,
    pub status: u16,
    pub content_type: Option<String>,
    /// Every response header, names lower-cased, in the order received.
    pub headers: Vec<(String, String)>,
    /// Decoded text, cut at the transport's cap.
    pub body: String,
    pub truncated: bool,
}

/// Sends action requests to target sites. Implementations MUST apply the same outbound checks
/// as [`PageFetcher`] (refusing with [`FetchError::Refused`] before sending anything), MUST
/// NOT follow redirects, and MUST give up with [`FetchError::Timeout`] after their time limit.
#[cfg_attr(feature = "mock", mockall::automock)]
#[async_trait]
pub trait ActionTransport: Send + Sync {
    async fn send(&self, request: &ActionRequest) -> Result<ActionResponse, FetchError>;

    /// Checks `url` as [`Self::send`] would before sending anything (scheme, credentials,
    /// internal names, every address the host resolves to now) and sends nothing (a URL
    /// registered now and called later, as a webhook endpoint). MUST return
    /// [`FetchError::Refused`] for a URL `send` would refuse; a host that does not resolve
    /// now is not refused (it may later), and `send` checks again each time.
    async fn check(&self, url: &str) -> Result<(), FetchError>;
}

/// The registrable part of a host, approximated without the public-suffix list: the last two
/// labels, or three under a two-letter country code with a generic second level (`co.uk`).
pub fn site_of(host: &str) -> String {
    let labels: Vec<&str> = host.trim_end_matches('.').split('.').collect();
    let n = labels.len();
    let take = if n >= 3
        && labels[n - 1].len() == 2
        && matches!(
            labels[n - 2],
            "co" | "com" | "net" | "org" | "gov" | "ac" | "edu" | "ne" | "or"
        ) {
        3
    } else {
        2
    };
    labels[n.saturating_sub(take)..]
        .join(".")
        .to_ascii_lowercase()
}

#[cfg(test)]
mod site_tests {
    use super::site_of;

    #[test]
    fn sites_compare_by_registrable_domain() {
        assert_eq!(site_of("a.b.example.co.uk"), "example.co.uk");
        assert_eq!(site_of("www.example.com"), "example.com");
        assert_eq!(site_of("localhost"), "localhost");
    }
}

#[cfg(test)]
mod origin_tests {
    use super::of_origin;

    #[test]
    fn an_origin_is_its_own_and_so_is_its_move_to_https() {
        let origin = |u: &str| url::Url::parse(u).unwrap().origin();
        let url = |u: &str| url::Url::parse(u).unwrap();
        let site = origin("http://shop.example/");
        assert!(of_origin(&site, &url("http://shop.example/llms.txt")));
        assert!(of_origin(&site, &url("https://shop.example/llms.txt")));
        assert!(of_origin(&site, &url("HTTPS://Shop.Example:443/x")));
        for other in [
            "https://shop.example:8443/x",
            "http://shop.example:8080/x",
            "https://other.example/x",
            "https://www.shop.example/x",
        ] {
            assert!(!of_origin(&site, &url(other)), "{other}");
        }
        // Only upwards, and only from the default port.
        assert!(!of_origin(
            &origin("https://shop.example/"),
            &url("http://shop.example/")
        ));
        assert!(!of_origin(
            &origin("http://shop.example:8080/"),
            &url("https://shop.example/")
        ));
    }
}
