//! A scan in progress: the site, the fetches its checks share (each made once), and which
//! fetches each check judges. Every request it sends holds a slot of its origin's bound
//! ([`super::origins`]), shared with the other scans running.

use std::sync::Arc;

use svc_ports::{CheckId, CheckResult, CheckStatus, ExtractOptions, Extraction};
use tokio::sync::OnceCell;
use url::Url;

use super::openapi::OPENAPI_PATHS;
use super::*;

/// Where an MCP server card may be: the SEP-2127 paths, then the older single file.
pub(super) const CARD_PATHS: [&str; 3] = [
    "/.well-known/mcp/server-card.json",
    "/.well-known/mcp/server-card",
    "/.well-known/mcp.json",
];

pub(super) struct Site<'a> {
    pub(super) svc: &'a ReadinessService,
    /// `scheme://host[:port]`, no trailing slash.
    pub(super) origin: String,
    pub(super) home: String,
    robots: OnceCell<Got>,
    home_page: OnceCell<Got>,
    /// The home page's extraction, made once (off the async workers) for every check.
    extracted: OnceCell<Option<Arc<Extraction>>>,
    cards: OnceCell<Vec<Got>>,
    mcp_catalog: OnceCell<Got>,
    tools_manifest: OnceCell<Got>,
    agent_card: OnceCell<Got>,
    llms_txt: OnceCell<Got>,
    signals: OnceCell<Vec<String>>,
}

impl<'a> Site<'a> {
    pub(super) fn new(svc: &'a ReadinessService, url: &Url) -> Self {
        Self {
            svc,
            origin: url.origin().ascii_serialization(),
            home: url.to_string(),
            robots: OnceCell::new(),
            home_page: OnceCell::new(),
            extracted: OnceCell::new(),
            cards: OnceCell::new(),
            mcp_catalog: OnceCell::new(),
            tools_manifest: OnceCell::new(),
            agent_card: OnceCell::new(),
            llms_txt: OnceCell::new(),
            signals: OnceCell::new(),
        }
    }
}

impl Site<'_> {
    pub(super) fn at(&self, path: &str) -> String {
        format!("{}{path}", self.origin)
    }

    /// A GET within its origin's bound on requests in flight. The scanned site's own files
    /// are read as a validator reads them (`respect_robots` says whether to ask its
    /// robots.txt); a URL of another origin, which the site's files name (a link of
    /// /llms.txt, a skill file, a sitemap), always asks that origin's robots.txt.
    pub(super) async fn get(&self, url: &str, accept: Option<&str>, respect_robots: bool) -> Got {
        let _slot = self.slot(url).await;
        let respect_robots = respect_robots || !self.is_own(url);
        self.svc.get(url, accept, respect_robots).await
    }

    /// Why `url`'s site's robots.txt keeps the scan from it (or why it could not be asked);
    /// `None` when it allows it. Within the probe deadline.
    pub(super) async fn robots_refusal(&self, url: &str) -> Option<String> {
        let _slot = self.slot(url).await;
        match tokio::time::timeout(self.svc.probe_deadline, self.svc.fetcher.robots(url)).await {
            Ok(Ok(decision)) if decision.allowed => None,
            Ok(Ok(decision)) => Some(format!(
                "{} disallows it ({})",
                decision.robots_url, decision.basis
            )),
            Ok(Err(e)) => Some(e.to_string()),
            Err(_) => Some(format!(
                "its robots.txt did not answer within {} s",
                self.svc.probe_deadline.as_secs()
            )),
        }
    }

    /// Whether `url` is of the scanned origin (robots.txt is per origin, RFC 9309).
    pub(super) fn is_own(&self, url: &str) -> bool {
        let (Ok(own), Ok(url)) = (url::Url::parse(&self.origin), url::Url::parse(url)) else {
            return false;
        };
        svc_ports::fetch::of_origin(&own.origin(), &url)
    }

    /// Holds one of the request slots of `url`'s origin (the MCP probe's POSTs, the render).
    pub(super) async fn slot(&self, url: &str) -> super::origins::OriginPermit<'_> {
        self.svc.origins.acquire(url).await
    }

    /// The fetch error behind a failed request, within the origin's bound.
    pub(super) async fn probe_error(&self, url: &str) -> Option<svc_ports::FetchError> {
        let _slot = self.slot(url).await;
        self.svc.probe_error(url).await
    }

    /// A file of the origin, fetched once per scan.
    async fn once<'c>(&self, cell: &'c OnceCell<Got>, path: &str, accept: &str) -> &'c Got {
        cell.get_or_init(|| async { self.get(&self.at(path), Some(accept), false).await })
            .await
    }

    pub(super) async fn robots(&self) -> &Got {
        self.once(&self.robots, "/robots.txt", "text/plain").await
    }

    /// The page as a browser would get it; robots.txt is honoured (agents honour it too).
    pub(super) async fn home_page(&self) -> &Got {
        self.home_page
            .get_or_init(|| self.get(&self.home, None, true))
            .await
    }

    /// The server card at each of [`CARD_PATHS`], in that order.
    pub(super) async fn server_cards(&self) -> &[Got] {
        self.cards
            .get_or_init(|| {
                futures_util::future::join_all(CARD_PATHS.iter().map(|p| self.json_file(p)))
            })
            .await
    }

    pub(super) async fn mcp_catalog(&self) -> &Got {
        self.once(
            &self.mcp_catalog,
            "/.well-known/mcp/catalog.json",
            "application/json",
        )
        .await
    }

    pub(super) async fn tools_manifest(&self) -> &Got {
        self.once(
            &self.tools_manifest,
            "/.well-known/mcp/tools.json",
            "application/json",
        )
        .await
    }

    async fn agent_card(&self) -> &Got {
        self.once(
            &self.agent_card,
            "/.well-known/agent-card.json",
            "application/json",
        )
        .await
    }

    async fn llms_txt(&self) -> &Got {
        self.once(&self.llms_txt, "/llms.txt", "text/markdown, text/plain")
            .await
    }

    pub(super) async fn json_file(&self, path: &str) -> Got {
        self.get(&self.at(path), Some("application/json"), false)
            .await
    }

    /// The home page's extraction: parsing is CPU work, so it runs on the blocking pool.
    async fn extraction(&self) -> Option<Arc<Extraction>> {
        self.extracted
            .get_or_init(|| async {
                let page = self.home_page().await;
                if !page.ok() {
                    return None;
                }
                let (extractor, body, url) = (
                    self.svc.extractor.clone(),
                    page.body.clone(),
                    page.url.clone(),
                );
                tokio::task::spawn_blocking(move || {
                    extractor
                        .extract(&body, &url, &ExtractOptions::default())
                        .ok()
                })
                .await
                .ok()
                .flatten()
                .map(Arc::new)
            })
            .await
            .clone()
    }

    /// What on the home page says the site sells (for the commerce checks).
    async fn signals(&self) -> &[String] {
        self.signals
            .get_or_init(|| async {
                let extraction = self.extraction().await;
                commerce_signals(self.home_page().await, extraction.as_deref())
            })
            .await
    }

    pub(super) async fn run(&self, id: CheckId) -> CheckResult {
        match id {
            CheckId::RobotsTxt => judge_robots(self.robots().await, &self.home),
            CheckId::Sitemap => {
                let robots = self.robots().await;
                let declared = sitemaps_in(robots);
                let url = declared
                    .first()
                    .cloned()
                    .unwrap_or_else(|| self.at("/sitemap.xml"));
                let got = self
                    .get(&url, Some("application/xml, text/xml;q=0.9"), false)
                    .await;
                judge_sitemap(&got, !declared.is_empty())
            }
            CheckId::LinkHeaders => judge_link_headers(self.home_page().await),
            CheckId::RobotsAiRules => judge_robots_ai(self.robots().await),
            CheckId::ContentSignals => judge_content_signals(self.robots().await),
            CheckId::WebBotAuth => judge_web_bot_auth(
                &self
                    .get(
                        &self.at("/.well-known/http-message-signatures-directory"),
                        Some("application/http-message-signatures-directory+json"),
                        false,
                    )
                    .await,
            ),
            CheckId::MarkdownNegotiation => {
                judge_markdown(&self.get(&self.home, Some("text/markdown"), true).await)
            }
            CheckId::MarkdownMirror => {
                let path = Url::parse(&self.home)
                    .map(|u| u.path().to_owned())
                    .unwrap_or_default();
                let mirror = match path.trim_end_matches('/') {
                    "" => "/index.md".to_owned(),
                    p => format!("{p}.md"),
                };
                judge_markdown_mirror(
                    &self
                        .get(&self.at(&mirror), Some("text/markdown, text/plain"), true)
                        .await,
                )
            }
            CheckId::LlmsTxt => judge_llms_txt(self.llms_txt().await),
            CheckId::LlmsTxtLinks => self.llms_links().await,
            CheckId::LlmsFullTxt => judge_llms_full(
                &self
                    .get(
                        &self.at("/llms-full.txt"),
                        Some("text/markdown, text/plain"),
                        false,
                    )
                    .await,
            ),
            CheckId::StructuredData => {
                let extraction = self.extraction().await;
                judge_structured_data(self.home_page().await, extraction.as_deref())
            }
            CheckId::Forms => {
                let extraction = self.extraction().await;
                judge_forms(self.home_page().await, extraction.as_deref())
            }
            CheckId::ApiCatalog => judge_api_catalog(
                &self
                    .get(
                        &self.at("/.well-known/api-catalog"),
                        Some("application/linkset+json"),
                        false,
                    )
                    .await,
            ),
            CheckId::Openapi => {
                let tries =
                    futures_util::future::join_all(OPENAPI_PATHS.iter().map(|p| self.json_file(p)))
                        .await;
                // Schema validation of a large document is CPU work: off the async workers.
                tokio::task::spawn_blocking(move || judge_openapi(&tries))
                    .await
                    .unwrap_or_else(|_| {
                        result(
                            CheckId::Openapi,
                            CheckStatus::Fail,
                            "the OpenAPI document could not be checked",
                            Vec::new(),
                            None,
                        )
                    })
            }
            CheckId::McpServerCard => judge_mcp_server_card(
                self.server_cards().await,
                self.mcp_catalog().await,
                self.tools_manifest().await,
            ),
            CheckId::McpProbe => self.mcp_probe().await,
            CheckId::A2aAgentCard => {
                let (card, legacy) =
                    tokio::join!(self.agent_card(), self.json_file("/.well-known/agent.json"));
                judge_agent_cards(card, &legacy)
            }
            CheckId::AgentSkills => self.agent_skills().await,
            CheckId::OauthDiscovery => {
                let (oauth, oidc) = tokio::join!(
                    self.json_file("/.well-known/oauth-authorization-server"),
                    self.json_file("/.well-known/openid-configuration")
                );
                judge_oauth_discovery(&oauth, &oidc)
            }
            CheckId::OauthProtectedResource => judge_protected_resource(
                &self
                    .json_file("/.well-known/oauth-protected-resource")
                    .await,
            ),
            CheckId::WebMcp => {
                let home = self.home_page().await;
                let run = if home.ok() && home.is_html() {
                    let request = svc_ports::RenderRequest {
                        url: home.url.clone(),
                        html: home.body.clone(),
                    };
                    // The page counts as one request of the origin while it runs (the
                    // browser's own fetches are bounded by its tabs and time limit).
                    let _slot = self.slot(&request.url).await;
                    Some(self.svc.renderer.render(&request).await)
                } else {
                    None
                };
                judge_web_mcp(home, run)
            }
            CheckId::CommerceFiles => {
                let (commerce, protocols) = tokio::join!(
                    self.json_file("/.well-known/agent-commerce.json"),
                    self.json_file("/.well-known/payment-protocols.json")
                );
                judge_commerce(&commerce, &protocols, self.signals().await)
            }
            CheckId::X402 => {
                let (api, v1) = tokio::join!(self.json_file("/api"), self.json_file("/api/v1"));
                let home = self.home_page().await;
                judge_x402(&[home, &api, &v1], self.signals().await)
            }
            CheckId::Ucp => judge_ucp(
                &self.json_file("/.well-known/ucp").await,
                self.signals().await,
            ),
            CheckId::Acp => judge_acp(
                &self.json_file("/.well-known/acp.json").await,
                self.signals().await,
            ),
            CheckId::Ap2 => judge_ap2(self.agent_card().await, self.signals().await),
        }
    }

    /// Each link of /llms.txt (the first [`llms::MAX_LINKS`]), fetched.
    async fn llms_links(&self) -> CheckResult {
        let llms = self.llms_txt().await;
        let links = llms::links_in(llms);
        let got = futures_util::future::join_all(
            links
                .iter()
                .map(|l| self.get(l, Some("text/markdown, text/html;q=0.9, */*;q=0.8"), false)),
        )
        .await;
        judge_llms_links(llms, &got)
    }

    /// The skills index (or the legacy one), and each skill file it lists.
    async fn agent_skills(&self) -> CheckResult {
        let (index, legacy) = tokio::join!(
            self.json_file("/.well-known/agent-skills/index.json"),
            self.json_file("/.well-known/skills/index.json")
        );
        let chosen = if index.json_object().is_some() {
            &index
        } else {
            &legacy
        };
        let urls = integration::skill_urls(chosen);
        let files = futures_util::future::join_all(
            urls.iter()
                .map(|u| self.get(u, Some("text/markdown, */*;q=0.8"), false)),
        )
        .await;
        judge_agent_skills(&index, &legacy, &files)
    }
}
