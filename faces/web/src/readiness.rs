//! The landing page (HTML, or Markdown on `Accept: text/markdown`), the readiness scan form
//! and the report page for people.

use askama::Template;
use poem::{
    Request, Response, handler,
    http::{StatusCode, header},
    web::{Data, Form, Path},
};
use serde::Deserialize;
use serde_json::json;
use svc_ports::{CheckId, CheckResult, ReadinessLevel, ScanId};

use super::Visit;
use kit::context::AppContext;
use kit::{edge::client_ip_of, limits::shared_limit, problem::ApiProblem};
use svc_services::readiness::ScanFailure;

const DESCRIPTION: &str = "AI agents read public web pages, discover the actions learned for a site, execute one mapped action with a signed verification artifact, sign up, connect accounts and buy credits here.";

#[derive(Template)]
#[template(path = "home.html")]
struct HomePage {
    signed_in_as: Option<String>,
    csrf: String,
    description: &'static str,
    json_ld: String,
    mcp_url: String,
    error: Option<String>,
    url: String,
    /// The WebMCP script (`navigator.modelContext` tools calling the API).
    webmcp: String,
}

#[derive(Template)]
#[template(path = "readiness_report.html")]
struct ReportPage {
    signed_in_as: Option<String>,
    csrf: String,
    scan_id: String,
    url: String,
    origin: String,
    score: u32,
    level_number: u8,
    level_name: &'static str,
    rungs: Vec<RungRow>,
    next: Option<NextRow>,
    share_url: String,
    badge_path: String,
    badge_width: usize,
    completed_at: String,
    checks: Vec<CheckRow>,
}

struct RungRow {
    number: u8,
    name: &'static str,
    /// `reached`, `current`, `next` or `above`.
    state: &'static str,
}

struct NextRow {
    number: u8,
    name: &'static str,
    /// `(check id, title)`.
    missing: Vec<(&'static str, &'static str)>,
    one_of: Vec<(&'static str, &'static str)>,
    one_of_needed: usize,
}

struct CheckRow {
    id: &'static str,
    title: String,
    weight: u32,
    status: &'static str,
    summary: String,
    recommendation: Option<String>,
    evidence: Vec<svc_ports::Evidence>,
}

impl From<CheckResult> for CheckRow {
    fn from(c: CheckResult) -> Self {
        Self {
            id: c.id.as_str(),
            title: c.title,
            weight: c.weight,
            status: c.status.as_str(),
            summary: c.summary,
            recommendation: c.recommendation,
            evidence: c.evidence,
        }
    }
}

/// Whether an `Accept` header ranks Markdown above HTML (RFC 9110 q-values; absent q is 1).
pub fn prefers_markdown(accept: &str) -> bool {
    let q_of = |wanted: &[&str]| kit::accept::q_of(accept, wanted);
    match (
        q_of(&["text/markdown", "text/x-markdown"]),
        q_of(&["text/html", "application/xhtml+xml"]),
    ) {
        (Some(md), Some(html)) => md > 0.0 && md > html,
        (Some(md), None) => md > 0.0,
        _ => false,
    }
}

fn json_ld(ctx: &AppContext) -> String {
    let site = &ctx.origins.site_url;
    let data = json!({
        "@context": "https://schema.org",
        "@graph": [
            {"@type": "WebSite", "name": "svc", "url": site, "description": DESCRIPTION},
            {"@type": "WebAPI", "name": "svc agent action and commerce API", "url": ctx.origins.base_url,
             "documentation": format!("{site}/llms.txt"),
             "termsOfService": format!("{site}/terms"),
             "provider": {"@type": "Organization", "name": "svc", "url": site}}
        ]
    });
    // `</` must not end the script element early.
    data.to_string().replace("</", "<\\/")
}

fn home_page(
    visit: Visit,
    ctx: &AppContext,
    status: StatusCode,
    error: Option<String>,
    url: String,
) -> Response {
    let webmcp = super::webmcp::script(&ctx.origins.base_url);
    let csp = super::webmcp::content_security_policy(&webmcp, &ctx.origins.base_url);
    let page = HomePage {
        signed_in_as: visit.signed_in_as(),
        csrf: visit.csrf(),
        description: DESCRIPTION,
        json_ld: json_ld(ctx),
        mcp_url: ctx.origins.mcp_url.clone(),
        error,
        url,
        webmcp,
    };
    let mut resp = visit.page(status, &page);
    resp.headers_mut()
        .insert(header::VARY, header::HeaderValue::from_static("Accept"));
    if let Ok(csp) = header::HeaderValue::from_str(&csp) {
        resp.headers_mut()
            .insert(header::CONTENT_SECURITY_POLICY, csp);
    }
    resp
}

/// `GET /`: the landing page; Markdown (the llms.txt text) for agents that ask for it.
#[handler]
pub(super) async fn home(
    req: &Request,
    ctx: Data<&AppContext>,
    llms: Data<&super::LlmsText>,
) -> Response {
    if req.header(header::ACCEPT).is_some_and(prefers_markdown) {
        return super::markdown::answer(llms.0.0.clone());
    }
    let visit = visit!(req, &ctx);
    home_page(visit, &ctx, StatusCode::OK, None, String::new())
}

#[derive(Deserialize)]
struct ScanForm {
    url: String,
}

/// `POST /readiness`: runs a scan and shows its report (303 to the report page).
#[handler]
async fn scan_submit(req: &Request, ctx: Data<&AppContext>, form: Form<ScanForm>) -> Response {
    let visit = visit!(req, &ctx);
    let ip = client_ip_of(req, &ctx.proxies);
    if let Err(problem) = shared_limit(
        ctx.services.scans.hit(ip).await,
        "Too many readiness scans from this address.",
    ) {
        return home_page(
            visit,
            &ctx,
            StatusCode::TOO_MANY_REQUESTS,
            Some(problem.detail.clone()),
            form.0.url,
        );
    }
    let who = ip.map(|ip| ip.to_string()).unwrap_or_default();
    let scanned = svc_services::readiness::scan_recorded(
        &ctx.services,
        svc_services::telemetry::Face::Web,
        &who,
        &form.0.url,
    )
    .await;
    match scanned {
        Ok(report) => visit.redirect(&format!("/readiness/{}", report.scan_id)),
        Err(ScanFailure::Store(e)) => ApiProblem::failure(&e).render("Bearer"),
        Err(e) => {
            let status = if matches!(e, ScanFailure::Busy) {
                StatusCode::SERVICE_UNAVAILABLE
            } else {
                StatusCode::UNPROCESSABLE_ENTITY
            };
            home_page(visit, &ctx, status, Some(e.to_string()), form.0.url)
        }
    }
}

/// `GET /readiness/{scan_id}`: a stored report for people.
#[handler]
async fn report_page(req: &Request, ctx: Data<&AppContext>, id: Path<String>) -> Response {
    let visit = visit!(req, &ctx);
    let report = match ScanId::parse(&id.0) {
        Ok(id) => ctx.services.readiness.report(&id).await,
        Err(_) => Ok(None),
    };
    match report {
        Ok(Some(r)) => {
            let named = |ids: &[CheckId]| ids.iter().map(|c| (c.as_str(), c.title())).collect();
            let next = r.next_level().map(|n| NextRow {
                number: n.level.number(),
                name: n.level.name(),
                missing: named(&n.missing),
                one_of: named(&n.one_of),
                one_of_needed: n.one_of_needed,
            });
            let rungs = ReadinessLevel::ALL
                .iter()
                .map(|l| RungRow {
                    number: l.number(),
                    name: l.name(),
                    state: match l.number() {
                        n if n == r.level.number() => "current",
                        n if n < r.level.number() => "reached",
                        n if n == r.level.number() + 1 => "next",
                        _ => "above",
                    },
                })
                .collect();
            let page = ReportPage {
                signed_in_as: visit.signed_in_as(),
                csrf: visit.csrf(),
                scan_id: r.scan_id.to_string(),
                share_url: format!("{}/readiness/{}", ctx.origins.site_url, r.scan_id),
                badge_path: format!("/readiness/{}/badge.svg", r.scan_id),
                badge_width: badge(r.level).1,
                url: r.url,
                origin: r.origin,
                score: r.score,
                level_number: r.level.number(),
                level_name: r.level.name(),
                rungs,
                next,
                completed_at: r.completed_at.format("%Y-%m-%d %H:%M UTC").to_string(),
                checks: r.checks.into_iter().map(CheckRow::from).collect(),
            };
            visit.page(StatusCode::OK, &page)
        }
        Ok(None) => visit.message(
            StatusCode::NOT_FOUND,
            "No such scan",
            "No readiness scan has this id.",
            None,
        ),
        Err(e) => ApiProblem::failure(&e).render("Bearer"),
    }
}

/// A badge of the level, as the shields people put in READMEs: `agent ready | 3 Agent-Readable`.
/// Returns the SVG and its width.
fn badge(level: ReadinessLevel) -> (String, usize) {
    // Verdana 11px averages about 7 px a character; shields use the same estimate.
    let width_of = |s: &str| s.chars().count() * 7 + 12;
    let label = "agent ready";
    let value = format!("{} {}", level.number(), level.name());
    let (lw, vw) = (width_of(label), width_of(&value));
    let color = match level.number() {
        0 => "#9f9f9f",
        1 => "#e05d44",
        2 => "#fe7d37",
        3 => "#dfb317",
        4 => "#97ca00",
        _ => "#44cc11",
    };
    let total = lw + vw;
    let svg = format!(
        r##"<svg xmlns="http://www.w3.org/2000/svg" width="{total}" height="20" role="img" aria-label="{label}: {value}"><title>{label}: {value}</title><rect width="{lw}" height="20" fill="#555"/><rect x="{lw}" width="{vw}" height="20" fill="{color}"/><g fill="#fff" text-anchor="middle" font-family="Verdana,Geneva,DejaVu Sans,sans-serif" font-size="11"><text x="{lx}" y="14">{label}</text><text x="{vx}" y="14">{value}</text></g></svg>"##,
        lx = lw / 2,
        vx = lw + vw / 2,
    );
    (svg, total)
}

/// `GET /readiness/{scan_id}/badge.svg`: the level of a stored report as an SVG badge.
#[handler]
async fn badge_svg(req: &Request, ctx: Data<&AppContext>, id: Path<String>) -> Response {
    let report = match ScanId::parse(&id.0) {
        Ok(id) => ctx.services.readiness.report(&id).await,
        Err(_) => Ok(None),
    };
    match report {
        Ok(Some(r)) => Response::builder()
            .status(StatusCode::OK)
            .content_type("image/svg+xml")
            // A report never changes.
            .header(header::CACHE_CONTROL, "public, max-age=86400")
            .body(badge(r.level).0),
        Ok(None) => {
            let visit = visit!(req, &ctx);
            visit.message(
                StatusCode::NOT_FOUND,
                "No such scan",
                "No readiness scan has this id.",
                None,
            )
        }
        Err(e) => ApiProblem::failure(&e).render("Bearer"),
    }
}

pub fn mount(route: poem::Route) -> poem::Route {
    route
        .at("/readiness", poem::post(scan_submit))
        .at("/readiness/:scan_id", poem::get(report_page))
        .at("/readiness/:scan_id/badge.svg", poem::get(badge_svg))
}

#[cfg(test)]
mod tests {
    use super::prefers_markdown;

    #[test]
    fn badges_name_the_level() {
        let (svg, width) = super::badge(svc_ports::ReadinessLevel::AgentReadable);
        assert!(svg.starts_with("<svg") && svg.contains("3 Agent-Readable"));
        assert!(svg.contains(&format!("width=\"{width}\"")));
    }

    #[test]
    fn markdown_is_chosen_only_when_ranked_above_html() {
        assert!(prefers_markdown("text/markdown"));
        assert!(prefers_markdown("text/markdown, text/html;q=0.5"));
        assert!(!prefers_markdown("text/html, text/markdown;q=0.9"));
        assert!(!prefers_markdown(
            "text/html,application/xhtml+xml,*/*;q=0.8"
        ));
        assert!(!prefers_markdown("text/markdown;q=0"));
        assert!(!prefers_markdown("*/*"));
    }
}
