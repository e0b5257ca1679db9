//! The guarded fetcher: the only way a caller-named URL is fetched.
//!
//! Every URL, and every redirect target, is checked before a request is sent: http(s) only, no
//! credentials, no internal names, and every address the host is or resolves to must be public
//! (see [`policy`]). The connection is pinned to the checked addresses, because reqwest
//! connects to exactly what our resolver returned. Redirects are followed by hand, up to a cap;
//! bodies are capped (truncation reported), decoded by their charset, and the whole fetch has a
//! deadline. robots.txt is honoured unless the caller opts out, and the decision is reported.

pub mod bot_auth;
mod charset;

/// Text of a saved page by the same rules as a fetched one (BOM, then the `<meta>` charset,
/// else UTF-8 when valid, else windows-1252): `svc read --file` decodes with it.
pub use charset::decode;

/// The most of a page's body read by default (10 MiB); past it the page is cut there and
/// marked `truncated`. A saved page (`svc read --file`) is held to the same.
pub const MAX_BODY_BYTES: usize = 10 * 1024 * 1024;
pub mod policy;
mod robots;

use std::{
    collections::HashMap,
    net::{IpAddr, SocketAddr},
    sync::Arc,
    time::Duration,
};

use async_trait::async_trait;
use chrono::Utc;
use reqwest::{
    dns::{Addrs, Name, Resolve, Resolving},
    header, redirect,
};
use svc_ports::{
    ActionRequest, ActionResponse, ActionTransport, FetchError, FetchRequest, FetchedPage,
    PageFetcher, RobotsDecision, UrlRefusal,
};
use url::Url;

pub use policy::forbidden;

/// Turns host names into addresses. The system resolver in production; a table in tests.
#[async_trait]
pub trait NameResolver: Send + Sync {
    async fn resolve(&self, host: &str) -> std::io::Result<Vec<IpAddr>>;
}

pub struct SystemResolver;

#[async_trait]
impl NameResolver for SystemResolver {
    async fn resolve(&self, host: &str) -> std::io::Result<Vec<IpAddr>> {
        Ok(tokio::net::lookup_host((host, 0))
            .await?
            .map(|a| a.ip())
            .collect())
    }
}

#[derive(Debug, Clone)]
pub struct FetcherConfig {
    /// Full User-Agent header.
    pub user_agent: String,
    /// Product token matched against robots.txt groups.
    pub robots_agent: String,
    pub max_body_bytes: usize,
    pub max_redirects: usize,
    pub timeout: Duration,
    pub connect_timeout: Duration,
    /// The sandbox's own demo hosts, allowed by exact name and port, pinned to these addresses.
    /// Empty in production.
    pub sandbox_hosts: HashMap<String, SocketAddr>,
    /// Signs every request (Web Bot Auth); `None` with `SVC_WEB_BOT_AUTH=off`.
    pub bot_auth: Option<Arc<bot_auth::BotAuth>>,
}

impl Default for FetcherConfig {
    fn default() -> Self {
        Self {
            user_agent: format!(
                "Mozilla/5.0 (compatible; svc-reader/{})",
                env!("CARGO_PKG_VERSION")
            ),
            robots_agent: "svc-reader".into(),
            max_body_bytes: MAX_BODY_BYTES,
            max_redirects: 5,
            timeout: svc_ports::fetch::FETCH_DEADLINE,
            connect_timeout: Duration::from_secs(5),
            sandbox_hosts: HashMap::new(),
            bot_auth: None,
        }
    }
}

/// Refusal raised inside the resolver; found again in the reqwest error's source chain.
#[derive(Debug)]
struct ResolveRefused(UrlRefusal);

impl std::fmt::Display for ResolveRefused {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.fmt(f)
    }
}

impl std::error::Error for ResolveRefused {}

struct GuardedResolve {
    inner: Arc<dyn NameResolver>,
    sandbox: Arc<HashMap<String, SocketAddr>>,
}

impl Resolve for GuardedResolve {
    fn resolve(&self, name: Name) -> Resolving {
        let inner = self.inner.clone();
        let sandbox = self.sandbox.clone();
        Box::pin(async move {
            type BoxError = Box<dyn std::error::Error + Send + Sync>;
            let refuse = |r: UrlRefusal| -> BoxError { Box::new(ResolveRefused(r)) };
            let host = name.as_str().trim_end_matches('.').to_ascii_lowercase();
            if let Some(addr) = sandbox.get(&host) {
                let pinned: Addrs = Box::new(std::iter::once(*addr));
                return Ok(pinned);
            }
            // A name that does not resolve (now) is a site that cannot be reached, which may
            // change: a retryable failure, not a refusal of the URL.
            let unresolvable = || -> BoxError {
                Box::new(std::io::Error::new(
                    std::io::ErrorKind::NotFound,
                    format!("`{host}` does not resolve"),
                ))
            };
            let ips = inner.resolve(&host).await.map_err(|_| unresolvable())?;
            if ips.is_empty() {
                return Err(unresolvable());
            }
            // One bad address refuses the name: a DNS answer mixing public and private
            // addresses is a rebinding attempt, not a page.
            if let Some((ip, range)) = ips.iter().find_map(|ip| forbidden(*ip).map(|r| (*ip, r))) {
                return Err(refuse(UrlRefusal::Address {
                    host,
                    address: ip.to_string(),
                    range,
                }));
            }
            let addrs: Addrs = Box::new(ips.into_iter().map(|ip| SocketAddr::new(ip, 0)));
            Ok(addrs)
        })
    }
}

pub struct GuardedFetcher {
    client: reqwest::Client,
    config: FetcherConfig,
    /// The resolver the client's connections use, for checks that send nothing.
    resolver: Arc<dyn NameResolver>,
    robots: robots::RobotsCache,
}

fn refusal_in(err: &reqwest::Error) -> Option<UrlRefusal> {
    let mut source: Option<&(dyn std::error::Error + 'static)> = Some(err);
    while let Some(e) = source {
        if let Some(r) = e.downcast_ref::<ResolveRefused>() {
            return Some(r.0.clone());
        }
        source = e.source();
    }
    None
}

/// Which URLs of a fetch, its redirects' included, ask their site's robots.txt.
enum Robots {
    /// Every one.
    Ask,
    /// Those of any origin but this one or its move to https (a validator reading a site's
    /// own files; robots.txt is per origin, RFC 9309).
    ExceptOn(url::Origin),
    /// None: robots.txt itself, whose redirects are followed as they are (RFC 9309).
    Never,
}

impl Robots {
    fn asks_for(&self, url: &Url) -> bool {
        match self {
            Robots::Ask => true,
            Robots::ExceptOn(origin) => !svc_ports::fetch::of_origin(origin, url),
            Robots::Never => false,
        }
    }
}

impl GuardedFetcher {
    pub fn new(config: FetcherConfig) -> Result<Self, reqwest::Error> {
        Self::with_resolver(config, Arc::new(SystemResolver))
    }

    pub fn with_resolver(
        config: FetcherConfig,
        resolver: Arc<dyn NameResolver>,
    ) -> Result<Self, reqwest::Error> {
        let client = reqwest::Client::builder()
            .user_agent(config.user_agent.clone())
            .redirect(redirect::Policy::none())
            // An environment proxy would connect on our behalf, past every check.
            .no_proxy()
            .connect_timeout(config.connect_timeout)
            .dns_resolver(Arc::new(GuardedResolve {
                inner: resolver.clone(),
                sandbox: Arc::new(config.sandbox_hosts.clone()),
            }))
            .build()?;
        Ok(Self {
            client,
            config,
            resolver,
            robots: robots::RobotsCache::default(),
        })
    }

    fn check(&self, url: &Url) -> Result<(), FetchError> {
        let sandbox = |host: &str, port: u16| {
            self.config
                .sandbox_hosts
                .get(host)
                .is_some_and(|a| a.port() == port)
        };
        let host = policy::check_url(url, sandbox).map_err(FetchError::Refused)?;
        // A sandbox name is pinned to its demo server's address: on any other port it would
        // reach some other service on that machine.
        if let Some(host) = host
            && let Some(addr) = self.config.sandbox_hosts.get(&host)
            && url.port_or_known_default() != Some(addr.port())
        {
            return Err(FetchError::Refused(UrlRefusal::InternalName { host }));
        }
        Ok(())
    }

    fn map_error(&self, err: reqwest::Error) -> FetchError {
        // reqwest's message ends with the URL, query and all: it may hold a caller's key, and
        // the detail is logged and answered.
        let err = err.without_url();
        if let Some(refusal) = refusal_in(&err) {
            return FetchError::Refused(refusal);
        }
        if err.is_timeout() {
            return FetchError::Timeout {
                seconds: self.config.timeout.as_secs(),
            };
        }
        if err.is_connect() {
            return FetchError::Connect {
                detail: err.to_string(),
            };
        }
        FetchError::Protocol {
            detail: err.to_string(),
        }
    }

    /// One GET without following redirects: status, headers and up to `cap` bytes of body.
    async fn get(
        &self,
        url: &Url,
        cap: usize,
        accept: Option<&str>,
    ) -> Result<(reqwest::StatusCode, header::HeaderMap, Vec<u8>, bool), FetchError> {
        self.check(url)?;
        let request = self.client.get(url.clone());
        // Each request is signed on its own, so a redirect's next hop carries its own
        // signature for its own authority.
        let mut resp = bot_auth::signed(request, self.config.bot_auth.as_deref(), url)
            .header(
                header::ACCEPT,
                accept.unwrap_or(
                    "text/html,application/xhtml+xml,application/xml;q=0.9,text/plain;q=0.8,*/*;q=0.5",
                ),
            )
            .send()
            .await
            .map_err(|e| self.map_error(e))?;
        let status = resp.status();
        let headers = resp.headers().clone();
        let mut body = Vec::new();
        let mut truncated = false;
        while let Some(chunk) = resp.chunk().await.map_err(|e| self.map_error(e))? {
            let room = cap - body.len();
            if chunk.len() > room {
                body.extend_from_slice(&chunk[..room]);
                truncated = true;
                break;
            }
            body.extend_from_slice(&chunk);
        }
        Ok((status, headers, body, truncated))
    }

    /// GET with redirects followed by hand, each target checked again.
    async fn get_following(
        &self,
        url: Url,
        robots: Robots,
        cap: usize,
        accept: Option<&str>,
    ) -> Result<
        (
            Url,
            Vec<String>,
            reqwest::StatusCode,
            header::HeaderMap,
            Vec<u8>,
            bool,
        ),
        FetchError,
    > {
        let mut current = url;
        let mut visited = Vec::new();
        loop {
            let (status, headers, body, truncated) = self.get(&current, cap, accept).await?;
            let location = headers.get(header::LOCATION).and_then(|v| v.to_str().ok());
            match (status.is_redirection(), location) {
                (true, Some(location)) => {
                    if visited.len() >= self.config.max_redirects {
                        return Err(FetchError::TooManyRedirects {
                            limit: self.config.max_redirects,
                        });
                    }
                    let next = current.join(location).map_err(|e| {
                        FetchError::Refused(UrlRefusal::Unparsable {
                            detail: format!("redirect to {location:?}: {e}"),
                        })
                    })?;
                    // A redirect's target is a page of its own: its site's robots.txt
                    // decides for it too (also when the first URL's site was exempt, if the
                    // target is of another origin).
                    if robots.asks_for(&next) {
                        // The target's own address and scheme first: a refused URL is not
                        // asked for its robots.txt.
                        self.check(&next)?;
                        let decision = Box::pin(self.robots_for(&next)).await?;
                        if !decision.allowed {
                            return Err(FetchError::RobotsDisallowed(decision));
                        }
                    }
                    visited.push(current.to_string());
                    current = next;
                }
                _ => return Ok((current, visited, status, headers, body, truncated)),
            }
        }
    }

    /// The robots.txt decision for `url`. A refused robots.txt URL (its host resolves to a
    /// forbidden address) refuses the page too; a host that cannot be reached at all (no such
    /// name, connection refused or timed out) fails the page as unreachable, uncached. A
    /// robots.txt that answers 5xx, or nothing within its time limit, is `unreachable`: all
    /// disallowed for a minute (RFC 9309).
    async fn robots_for(&self, url: &Url) -> Result<RobotsDecision, FetchError> {
        let origin = url.origin().ascii_serialization();
        let robots_url = format!("{origin}/robots.txt");
        // Its own time limit: a robots.txt that never answers is unreachable (and
        // remembered), not the page's whole time, again per request. Longer than the connect
        // phase, so a host that is down still fails the page as unreachable (uncached,
        // retryable) rather than as robots.txt's; within half the page's time.
        let limit = (self.config.timeout / 3)
            .max(self.config.connect_timeout + std::time::Duration::from_secs(2))
            .min(self.config.timeout / 2);
        let fetch = || async {
            let Ok(u) = Url::parse(&robots_url) else {
                return Ok(robots::RobotsFile::Unreachable);
            };
            let fetched = tokio::time::timeout(
                limit,
                self.get_following(u, Robots::Never, 512 * 1024, None),
            )
            .await
            .unwrap_or(Err(FetchError::Timeout {
                seconds: limit.as_secs(),
            }));
            match fetched {
                Ok((_, _, status, _, body, _)) if status.is_success() => {
                    Ok(robots::parse(&self.config.robots_agent, &body))
                }
                Ok((_, _, status, _, _, _)) if status.is_client_error() => {
                    Ok(robots::RobotsFile::Missing)
                }
                Err(failed @ (FetchError::Refused(_) | FetchError::Connect { .. })) => Err(failed),
                _ => Ok(robots::RobotsFile::Unreachable),
            }
        };
        let file = self.robots.get_or_fetch(&origin, fetch).await?;
        Ok(robots::decide(&file, url.as_str(), robots_url))
    }

    async fn fetch_inner(&self, request: &FetchRequest) -> Result<FetchedPage, FetchError> {
        let url = Url::parse(request.url.trim()).map_err(|e| {
            FetchError::Refused(UrlRefusal::Unparsable {
                detail: e.to_string(),
            })
        })?;
        self.check(&url)?;
        let robots = if request.respect_robots {
            let decision = self.robots_for(&url).await?;
            if !decision.allowed {
                return Err(FetchError::RobotsDisallowed(decision));
            }
            decision
        } else {
            RobotsDecision {
                checked: false,
                allowed: true,
                robots_url: format!("{}/robots.txt", url.origin().ascii_serialization()),
                basis: "not_checked".into(),
            }
        };
        let asking = if request.respect_robots {
            Robots::Ask
        } else {
            Robots::ExceptOn(url.origin())
        };
        let (final_url, redirects, status, headers, body, truncated) = self
            .get_following(
                url,
                asking,
                self.config.max_body_bytes,
                request.accept.as_deref(),
            )
            .await?;
        let content_type = headers
            .get(header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned);
        // A PDF is read from its bytes; decoding it as text would destroy it.
        let (text, charset, raw) = if svc_ports::is_pdf(content_type.as_deref(), &body) {
            (String::new(), "binary".to_owned(), Some(body.to_vec()))
        } else {
            let (text, charset) = charset::decode(&body, content_type.as_deref());
            (text, charset.to_ascii_lowercase(), None)
        };
        Ok(FetchedPage {
            requested_url: request.url.clone(),
            final_url: final_url.to_string(),
            status: status.as_u16(),
            content_type,
            headers: headers
                .iter()
                .filter_map(|(n, v)| Some((n.as_str().to_owned(), v.to_str().ok()?.to_owned())))
                .collect(),
            charset,
            body: text,
            raw,
            truncated,
            redirects,
            robots,
            fetched_at: Utc::now(),
        })
    }
}

#[async_trait]
impl PageFetcher for GuardedFetcher {
    async fn fetch(&self, request: &FetchRequest) -> Result<FetchedPage, FetchError> {
        match tokio::time::timeout(self.config.timeout, self.fetch_inner(request)).await {
            Ok(result) => {
                if let Err(e) = &result {
                    tracing::info!(error = %e, "fetch refused or failed");
                }
                result
            }
            Err(_) => Err(FetchError::Timeout {
                seconds: self.config.timeout.as_secs(),
            }),
        }
    }

    async fn robots(&self, url: &str) -> Result<RobotsDecision, FetchError> {
        let url = Url::parse(url.trim()).map_err(|e| {
            FetchError::Refused(UrlRefusal::Unparsable {
                detail: e.to_string(),
            })
        })?;
        self.check(&url)?;
        match tokio::time::timeout(self.config.timeout, self.robots_for(&url)).await {
            Ok(decision) => decision,
            Err(_) => Err(FetchError::Timeout {
                seconds: self.config.timeout.as_secs(),
            }),
        }
    }
}

/// Action responses larger than this are cut (and said to be): they are verified and mined
/// for outputs, not stored whole.
const MAX_ACTION_RESPONSE_BYTES: usize = 2 * 1024 * 1024;

impl GuardedFetcher {
    async fn send_inner(&self, request: &ActionRequest) -> Result<ActionResponse, FetchError> {
        let url = Url::parse(request.url.trim()).map_err(|e| {
            FetchError::Refused(UrlRefusal::Unparsable {
                detail: e.to_string(),
            })
        })?;
        self.check(&url)?;
        let method =
            reqwest::Method::from_bytes(request.method.as_str().as_bytes()).map_err(|e| {
                FetchError::Protocol {
                    detail: e.to_string(),
                }
            })?;
        let mut builder = bot_auth::signed(
            self.client.request(method, url.clone()),
            self.config.bot_auth.as_deref(),
            &url,
        );
        if !request
            .headers
            .iter()
            .any(|(name, _)| name.eq_ignore_ascii_case("accept"))
        {
            builder = builder.header(
                header::ACCEPT,
                "application/json, text/html;q=0.9, */*;q=0.5",
            );
        }
        for (name, value) in &request.headers {
            builder = builder.header(name.as_str(), value.as_str());
        }
        if let Some((content_type, bytes)) = &request.body {
            builder = builder
                .header(header::CONTENT_TYPE, content_type.as_str())
                .body(bytes.clone());
        }
        let mut resp = builder.send().await.map_err(|e| self.map_error(e))?;
        let status = resp.status().as_u16();
        let content_type = resp
            .headers()
            .get(header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned);
        let headers = resp
            .headers()
            .iter()
            .filter_map(|(name, value)| {
                Some((name.as_str().to_owned(), value.to_str().ok()?.to_owned()))
            })
            .collect();
        let mut body = Vec::new();
        let mut truncated = false;
        while let Some(chunk) = resp.chunk().await.map_err(|e| self.map_error(e))? {
            let room = MAX_ACTION_RESPONSE_BYTES - body.len();
            if chunk.len() > room {
                body.extend_from_slice(&chunk[..room]);
                truncated = true;
                break;
            }
            body.extend_from_slice(&chunk);
        }
        let (text, _) = charset::decode(&body, content_type.as_deref());
        Ok(ActionResponse {
            url: url.to_string(),
            status,
            content_type,
            headers,
            body: text,
            truncated,
        })
    }
}

#[async_trait]
impl ActionTransport for GuardedFetcher {
    async fn send(&self, request: &ActionRequest) -> Result<ActionResponse, FetchError> {
        match tokio::time::timeout(self.config.timeout, self.send_inner(request)).await {
            Ok(result) => result,
            Err(_) => Err(FetchError::Timeout {
                seconds: self.config.timeout.as_secs(),
            }),
        }
    }

    async fn check(&self, url: &str) -> Result<(), FetchError> {
        let url = Url::parse(url.trim()).map_err(|e| {
            FetchError::Refused(UrlRefusal::Unparsable {
                detail: e.to_string(),
            })
        })?;
        self.check(&url)?;
        let Some(host) = url
            .host_str()
            .map(|h| h.trim_end_matches('.').to_ascii_lowercase())
        else {
            return Ok(());
        };
        if self.config.sandbox_hosts.contains_key(&host) || host.parse::<IpAddr>().is_ok() {
            return Ok(());
        }
        let lookup = self.resolver.resolve(&host);
        let Ok(Ok(ips)) = tokio::time::timeout(self.config.connect_timeout, lookup).await else {
            return Ok(()); // unresolvable now: `send` decides when it is called
        };
        match ips.iter().find_map(|ip| forbidden(*ip).map(|r| (*ip, r))) {
            Some((ip, range)) => Err(FetchError::Refused(UrlRefusal::Address {
                host,
                address: ip.to_string(),
                range,
            })),
            None => Ok(()),
        }
    }
}
