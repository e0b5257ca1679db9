//! Markdown for agents: the human pages answer `Accept: text/markdown` (ranked above HTML)
//! with the same content as Markdown, and have `.md` mirrors (`/index.md`, `/terms.md`,
//! `/privacy.md`) for clients that cannot negotiate.

use poem::{
    Endpoint, EndpointExt, Request, Response, get, handler,
    http::{StatusCode, header},
    web::Data,
};

use crate::legal::{PRIVACY, TERMS};

/// A rough token count of `text` for `x-markdown-tokens` (about four characters a token, the
/// usual estimate for English with GPT-style tokenizers): a budget hint, not a promise.
pub fn estimated_tokens(text: &str) -> usize {
    text.chars().count().div_ceil(4)
}

/// `text` as a Markdown answer: `text/markdown`, `Vary: Accept` (the same URL answers HTML to
/// browsers) and its estimated size in tokens.
pub fn answer(text: String) -> Response {
    Response::builder()
        .status(StatusCode::OK)
        .content_type("text/markdown; charset=utf-8")
        .header(header::VARY, "Accept")
        .header(header::CACHE_CONTROL, "public, max-age=300")
        .header("x-markdown-tokens", estimated_tokens(&text).to_string())
        .body(text)
}

/// Whether the request asks for Markdown above HTML.
pub fn wanted(req: &Request) -> bool {
    req.header(header::ACCEPT)
        .is_some_and(crate::readiness::prefers_markdown)
}

/// A legal page as Markdown.
pub fn legal(heading: &str, paragraphs: &[&str]) -> String {
    format!("# {heading}\n\n{}\n", paragraphs.join("\n\n"))
}

pub const TERMS_HEADING: &str = "Terms of service";
pub const PRIVACY_HEADING: &str = "Privacy policy";

#[handler]
fn terms_md() -> Response {
    answer(legal(TERMS_HEADING, TERMS))
}

#[handler]
fn privacy_md() -> Response {
    answer(legal(PRIVACY_HEADING, PRIVACY))
}

#[handler]
fn index_md(text: Data<&super::LlmsText>) -> Response {
    answer(text.0.0.clone())
}

/// `/index.md`: the landing page's Markdown (the llms.txt guide).
pub fn index(llms: String) -> impl Endpoint {
    get(index_md).data(super::LlmsText(llms))
}

pub fn mount(route: poem::Route) -> poem::Route {
    route
        .at("/terms.md", get(terms_md))
        .at("/privacy.md", get(privacy_md))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_are_estimated_from_characters() {
        assert_eq!(estimated_tokens(""), 0);
        assert_eq!(estimated_tokens("abcd"), 1);
        assert_eq!(estimated_tokens("abcde"), 2);
        assert!(legal("T", &["a", "b"]).starts_with("# T\n\na\n\nb"));
    }
}
