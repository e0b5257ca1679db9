//! Terms and privacy.

use askama::Template;
use kit::context::AppContext;
use kit::problem::ApiProblem;
use poem::{Request, Response, handler, http::StatusCode, web::Data};

use crate::*;

#[derive(Template)]
#[template(path = "legal.html")]
pub(crate) struct LegalPage {
    signed_in_as: Option<String>,
    csrf: String,
    heading: &'static str,
    paragraphs: &'static [&'static str],
}

// ---- terms and privacy ------------------------------------------------------------------------

pub(crate) const TERMS: &[&str] = &[
    "The service lets AI agents read public web pages, discover the actions learned for a site and run one mapped action for you, with a signed record of what happened.",
    "An agent you approve gets its own API key for your account. It acts within the key's scopes and spends your credits: about one credit per completed action; failed actions are refunded. You can revoke any key on your account page at any time.",
    "Keys may be used only through approved Agent Maps: not for raw browser control, private account access or unrestricted payment-provider actions. Never send passwords, session cookies, card numbers or unrestricted third-party keys through a chat or an action parameter.",
    "Credits are granted only after the payment provider confirms a payment; a redirect after checkout is not a payment.",
];

pub(crate) const PRIVACY: &[&str] = &[
    "We keep your email address to sign you in and to send the one-time codes you ask for. Codes, API keys and session tokens are stored only as one-way hashes.",
    "We record which agent asked for access, which keys exist, and the actions and charges made with them, so that you can see and control them.",
    "Agent traffic events we record carry no raw prompts, payment credentials, email addresses or card-like numbers; such values are removed before storage.",
];

#[handler]
pub(crate) async fn terms(req: &Request, ctx: Data<&AppContext>) -> Response {
    if markdown::wanted(req) {
        return markdown::answer(markdown::legal(markdown::TERMS_HEADING, TERMS));
    }
    let visit = visit!(req, &ctx);
    let page = LegalPage {
        signed_in_as: visit.signed_in_as(),
        csrf: visit.csrf(),
        heading: markdown::TERMS_HEADING,
        paragraphs: TERMS,
    };
    varies(visit.page(StatusCode::OK, &page))
}

/// The page answers Markdown to agents that ask for it: caches must key on `Accept`.
fn varies(mut resp: Response) -> Response {
    resp.headers_mut().insert(
        poem::http::header::VARY,
        poem::http::HeaderValue::from_static("Accept"),
    );
    resp
}

#[handler]
pub(crate) async fn privacy(req: &Request, ctx: Data<&AppContext>) -> Response {
    if markdown::wanted(req) {
        return markdown::answer(markdown::legal(markdown::PRIVACY_HEADING, PRIVACY));
    }
    let visit = visit!(req, &ctx);
    let page = LegalPage {
        signed_in_as: visit.signed_in_as(),
        csrf: visit.csrf(),
        heading: markdown::PRIVACY_HEADING,
        paragraphs: PRIVACY,
    };
    varies(visit.page(StatusCode::OK, &page))
}
