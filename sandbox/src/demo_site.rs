//! The sandbox's demo target site: a wiremock server on loopback that the guarded fetcher may
//! reach only under its demo host name (`demo.sandbox.test`) and port. It has something for
//! each outcome of reading: an article, a page with a form, plain text, a redirect, a sign-in
//! wall, a bot challenge, a 404, a 503 and a path robots.txt disallows.

use std::net::SocketAddr;

use wiremock::{
    Mock, MockServer, ResponseTemplate,
    matchers::{method, path},
};

/// The demo site's host name. `.test` is reserved (RFC 2606): it can never be a real site.
pub const DEMO_HOST: &str = "demo.sandbox.test";

pub struct DemoSite {
    server: MockServer,
}

const ARTICLE: &str = include_str!("demo/article.html");
const CONTACT: &str = include_str!("demo/contact.html");
const SIGN_IN: &str = include_str!("demo/sign-in.html");
const CHALLENGE: &str = include_str!("demo/challenge.html");
const INDEX: &str = include_str!("demo/index.html");
/// A single-page app: an empty shell, a bundle that builds the article from JSON.
const APP_SHELL: &str = include_str!("demo/app/index.html");
const APP_BUNDLE: &str = include_str!("demo/app/bundle.js");
const APP_STORY: &str = include_str!("demo/app/story.json");

fn html(status: u16, body: &str) -> ResponseTemplate {
    ResponseTemplate::new(status).set_body_raw(body.as_bytes().to_vec(), "text/html; charset=utf-8")
}

impl DemoSite {
    /// Starts the site on an ephemeral loopback port.
    pub async fn start() -> Self {
        let server = MockServer::start().await;
        let routes: Vec<(&str, ResponseTemplate)> = vec![
            (
                "/robots.txt",
                ResponseTemplate::new(200).set_body_raw(
                    "User-agent: *\nDisallow: /private/\n".as_bytes().to_vec(),
                    "text/plain",
                ),
            ),
            ("/", html(200, INDEX)),
            ("/articles/tides", html(200, ARTICLE)),
            ("/contact", html(200, CONTACT)),
            ("/account", html(200, SIGN_IN)),
            ("/challenge", html(403, CHALLENGE)),
            (
                "/gone",
                html(
                    404,
                    "<html><head><title>Not found</title></head><body><h1>Not found</h1><p>No page here.</p></body></html>",
                ),
            ),
            (
                "/busy",
                html(
                    503,
                    "<html><head><title>Busy</title></head><body><p>Try again later.</p></body></html>",
                ),
            ),
            (
                "/private/report",
                html(
                    200,
                    "<html><body><p>Robots may not read this.</p></body></html>",
                ),
            ),
            (
                "/notes.txt",
                ResponseTemplate::new(200).set_body_raw(
                    "Tide notes\n\nHigh water at 06:12 and 18:40.\n"
                        .as_bytes()
                        .to_vec(),
                    "text/plain; charset=utf-8",
                ),
            ),
            (
                "/latest",
                ResponseTemplate::new(302).insert_header("location", "/articles/tides"),
            ),
            ("/app/", html(200, APP_SHELL)),
            (
                "/app/bundle.js",
                ResponseTemplate::new(200).set_body_raw(
                    APP_BUNDLE.as_bytes().to_vec(),
                    "text/javascript; charset=utf-8",
                ),
            ),
            (
                "/app/api/story.json",
                ResponseTemplate::new(200)
                    .set_body_raw(APP_STORY.as_bytes().to_vec(), "application/json"),
            ),
            (
                "/logo.png",
                ResponseTemplate::new(200).set_body_raw(vec![0x89, b'P', b'N', b'G'], "image/png"),
            ),
        ];
        for (p, response) in routes {
            Mock::given(method("GET"))
                .and(path(p))
                .respond_with(response)
                .mount(&server)
                .await;
        }
        Self { server }
    }

    /// The loopback address the demo host name is pinned to.
    pub fn address(&self) -> SocketAddr {
        *self.server.address()
    }

    /// The site's origin under its demo name, e.g. `http://demo.sandbox.test:41234`.
    pub fn origin(&self) -> String {
        format!("http://{DEMO_HOST}:{}", self.address().port())
    }

    pub fn url(&self, path: &str) -> String {
        format!("{}{path}", self.origin())
    }
}
