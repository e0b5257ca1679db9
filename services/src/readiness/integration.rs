//! Integration documents beyond MCP and A2A: the API catalog (RFC 9727), OAuth authorization
//! server metadata (RFC 8414 / OpenID discovery), the agent skills index with its digests,
//! the Web Bot Auth signatures directory (informational), and WebMCP tools on the page.

use serde_json::Value;
use sha2::{Digest, Sha256};
use svc_ports::{CheckId, CheckResult, CheckStatus, Evidence};
use url::Url;

use super::{Got, excerpt, missing, neutral, result};

/// Skill files fetched to verify their digests.
pub(super) const MAX_SKILLS: usize = 10;

pub fn judge_api_catalog(got: &Got) -> CheckResult {
    const ADVICE: &str = "Publish /.well-known/api-catalog (RFC 9727) as application/linkset+json: {\"linkset\": [{\"anchor\": \"https://api.example.com/\", \"service-desc\": [{\"href\": \"https://api.example.com/openapi.json\"}], \"service-doc\": [...]}]}.";
    let Some(doc) = got.json_object() else {
        return missing(CheckId::ApiCatalog, got, "an API catalog", ADVICE);
    };
    let Some(entries) = doc["linkset"].as_array().filter(|l| !l.is_empty()) else {
        return result(
            CheckId::ApiCatalog,
            CheckStatus::Fail,
            "the API catalog has no `linkset` entries",
            vec![got.evidence()],
            Some(ADVICE),
        );
    };
    let described = |e: &Value| {
        ["service-desc", "service-doc"].iter().any(|rel| {
            e[*rel]
                .as_array()
                .is_some_and(|l| l.iter().any(|t| t["href"].is_string()))
        })
    };
    let good: Vec<&str> = entries
        .iter()
        .filter(|e| described(e))
        .filter_map(|e| e["anchor"].as_str())
        .collect();
    let mut problems = Vec::new();
    if good.len() < entries.len() {
        problems.push(format!(
            "{} of {} entries lack an `anchor` or a service-desc/service-doc link",
            entries.len() - good.len(),
            entries.len()
        ));
    }
    let media = got.media_type();
    if media != "application/linkset+json" {
        problems.push(format!(
            "served as {} instead of application/linkset+json",
            if media.is_empty() { "no type" } else { &media }
        ));
    }
    if good.is_empty() {
        return result(
            CheckId::ApiCatalog,
            CheckStatus::Fail,
            format!("API catalog unusable: {}", problems.join("; ")),
            vec![got.evidence()],
            Some(ADVICE),
        );
    }
    if problems.is_empty() {
        result(
            CheckId::ApiCatalog,
            CheckStatus::Pass,
            format!("API catalog of {} APIs: {}", good.len(), good.join(", ")),
            vec![got.evidence()],
            None,
        )
    } else {
        result(
            CheckId::ApiCatalog,
            CheckStatus::Warn,
            format!("API catalog: {}", problems.join("; ")),
            vec![got.evidence()],
            Some(ADVICE),
        )
    }
}

/// RFC 8414 metadata: an `issuer` URL and the endpoints a client needs.
pub fn judge_oauth_discovery(oauth: &Got, oidc: &Got) -> CheckResult {
    const ADVICE: &str = "Publish OAuth authorization server metadata (RFC 8414) at /.well-known/oauth-authorization-server (or OpenID discovery at /.well-known/openid-configuration) with `issuer`, `authorization_endpoint`, `token_endpoint` and the grant types you support.";
    let evidence = vec![oauth.evidence(), oidc.evidence()];
    let docs: Vec<(&str, Value)> = [
        ("oauth-authorization-server", oauth),
        ("openid-configuration", oidc),
    ]
    .into_iter()
    .filter_map(|(n, g)| g.json_object().map(|d| (n, d)))
    .collect();
    let complete = docs.iter().find(|(_, d)| {
        d["issuer"].as_str().is_some_and(|i| Url::parse(i).is_ok())
            && (d["token_endpoint"].is_string() || d["authorization_endpoint"].is_string())
    });
    if let Some((name, d)) = complete {
        let endpoints: Vec<&str> = [
            "authorization_endpoint",
            "token_endpoint",
            "device_authorization_endpoint",
            "registration_endpoint",
        ]
        .into_iter()
        .filter(|e| d[*e].is_string())
        .collect();
        return result(
            CheckId::OauthDiscovery,
            CheckStatus::Pass,
            format!(
                "{name}: issuer {} with {}",
                d["issuer"].as_str().unwrap_or_default(),
                endpoints.join(", ")
            ),
            evidence,
            None,
        );
    }
    if let Some((name, _)) = docs.first() {
        return result(
            CheckId::OauthDiscovery,
            CheckStatus::Warn,
            format!("{name} without an `issuer` URL and a token or authorization endpoint"),
            evidence,
            Some(ADVICE),
        );
    }
    result(
        CheckId::OauthDiscovery,
        CheckStatus::Fail,
        "no OAuth authorization server or OpenID metadata",
        evidence,
        Some(ADVICE),
    )
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn skills(index: &Got) -> Vec<Value> {
    index
        .json_object()
        .and_then(|d| d["skills"].as_array().cloned())
        .unwrap_or_default()
}

/// The URL of each listed skill (the first [`MAX_SKILLS`]), resolved against the index.
pub(super) fn skill_urls(index: &Got) -> Vec<String> {
    let base = Url::parse(&index.url).ok();
    skills(index)
        .iter()
        .take(MAX_SKILLS)
        .map(|s| {
            let href = s["url"].as_str().unwrap_or_default();
            base.as_ref()
                .and_then(|b| b.join(href).ok())
                .map(|u| u.to_string())
                .unwrap_or_else(|| href.to_owned())
        })
        .collect()
}

/// `files` are what [`skill_urls`] of the chosen index (the current one when it is there,
/// else the legacy one) returned, in order.
pub fn judge_agent_skills(index: &Got, legacy: &Got, files: &[Got]) -> CheckResult {
    const ADVICE: &str = "Publish /.well-known/agent-skills/index.json listing your skills ({\"skills\": [{\"name\", \"description\", \"url\", \"digest\": \"sha256:<hex of the file>\"}]}), each SKILL.md describing how an agent uses your site.";
    let (chosen, legacy_only) = if index.json_object().is_some() {
        (index, false)
    } else {
        (legacy, true)
    };
    let mut evidence = vec![index.evidence()];
    if legacy_only {
        evidence.push(legacy.evidence());
    }
    let listed = skills(chosen);
    if listed.is_empty() {
        return if chosen.json_object().is_some() {
            result(
                CheckId::AgentSkills,
                CheckStatus::Fail,
                "the agent skills index lists no skills",
                evidence,
                Some(ADVICE),
            )
        } else {
            missing(CheckId::AgentSkills, index, "an agent skills index", ADVICE)
        };
    }
    let name_of = |skill: &Value| skill["name"].as_str().unwrap_or("unnamed").to_owned();
    // Whether a digest is listed needs no fetch: every skill is looked at for that.
    let undigested: Vec<String> = listed
        .iter()
        .filter(|s| !s["digest"].is_string())
        .map(name_of)
        .collect();
    let mut verified = Vec::new();
    let mut wrong = Vec::new();
    // Only the files fetched (the first MAX_SKILLS) can be verified; the rest are reported
    // as not checked, never as verified.
    let fetched = listed.len().min(MAX_SKILLS).min(files.len());
    for (skill, file) in listed.iter().zip(files).take(fetched) {
        let name = name_of(skill);
        let Some(want) = skill["digest"].as_str() else {
            continue;
        };
        if !file.ok() {
            wrong.push(format!(
                "{name} (file not served: {})",
                file.evidence().excerpt
            ));
            continue;
        }
        let have = format!("sha256:{}", hex(&Sha256::digest(file.body.as_bytes())));
        if want.eq_ignore_ascii_case(&have) {
            verified.push(name);
        } else {
            wrong.push(format!("{name} (listed {want}, file has {have})"));
        }
        evidence.push(Evidence {
            excerpt: excerpt(&file.body),
            ..file.evidence()
        });
    }
    let where_ = if legacy_only {
        " at the legacy /.well-known/skills/index.json"
    } else {
        ""
    };
    if !wrong.is_empty() {
        return result(
            CheckId::AgentSkills,
            CheckStatus::Fail,
            format!("skills whose digest does not match: {}", wrong.join("; ")),
            evidence,
            Some(ADVICE),
        );
    }
    if !undigested.is_empty() {
        return result(
            CheckId::AgentSkills,
            CheckStatus::Warn,
            format!("skills without a `digest`: {}", undigested.join(", ")),
            evidence,
            Some(ADVICE),
        );
    }
    let unchecked = listed.len() - fetched;
    if unchecked == 0 {
        return result(
            CheckId::AgentSkills,
            CheckStatus::Pass,
            format!(
                "{} skills{where_}, digests verified: {}",
                listed.len(),
                verified.join(", ")
            ),
            evidence,
            None,
        );
    }
    // A pass with a note, not a warn: the cap is the scan's bound on requests to the site,
    // not a fault of the site, and every digest it did check matched. The summary says how
    // many were verified and how many were not checked, so nothing unverified is claimed.
    let skipped: Vec<String> = listed[fetched..].iter().map(name_of).collect();
    result(
        CheckId::AgentSkills,
        CheckStatus::Pass,
        format!(
            "{} skills{where_}; digests of the first {fetched} verified: {}; {unchecked} not checked (a scan fetches at most {MAX_SKILLS} skill files): {}",
            listed.len(),
            verified.join(", "),
            skipped.join(", ")
        ),
        evidence,
        None,
    )
}

/// Informational: a JWKS of Ed25519 keys at the directory, with its media type, no redirect.
pub fn judge_web_bot_auth(got: &Got) -> CheckResult {
    const ADVICE: &str = "If your site sends bots or agents, sign their requests (RFC 9421, Web Bot Auth) and serve the keys at /.well-known/http-message-signatures-directory as application/http-message-signatures-directory+json.";
    let keys = got
        .json_object()
        .and_then(|d| d["keys"].as_array().map(Vec::len))
        .unwrap_or(0);
    let media = got.media_type();
    let mut problems = Vec::new();
    if keys == 0 {
        problems.push("no JWKS with `keys`".to_owned());
    }
    if media != "application/http-message-signatures-directory+json" {
        problems.push(format!(
            "served as {}",
            if media.is_empty() { "no type" } else { &media }
        ));
    }
    if got.redirected {
        problems.push("reached through a redirect".to_owned());
    }
    if got.ok() && problems.is_empty() {
        result(
            CheckId::WebBotAuth,
            CheckStatus::Pass,
            format!("signatures directory with {keys} keys"),
            vec![got.evidence()],
            None,
        )
    } else {
        let what = if got.ok() {
            problems.join("; ")
        } else {
            "no signatures directory".to_owned()
        };
        neutral(
            CheckId::WebBotAuth,
            format!("{what} (informational: only sites that send bots need one)"),
            vec![got.evidence()],
            ADVICE,
        )
    }
}

/// The page, run in a browser, registers tools through `navigator.modelContext`. `run` is the
/// home page run in the browser (every request through the guard), `None` when there was no
/// HTML page to run. Scored: tools registered pass; a page that ran and registered none, that
/// could not be run for a reason of its own, or no HTML page at all, fails. Only when no
/// browser could judge it (none here, or every tab busy) is it neutral, with what the markup
/// says: the absence of a browser says nothing about the site.
pub fn judge_web_mcp(
    home: &Got,
    run: Option<Result<svc_ports::RenderedPage, svc_ports::RenderError>>,
) -> CheckResult {
    use svc_ports::RenderError;
    const ADVICE: &str = "Register your page's actions as WebMCP tools (navigator.modelContext.registerTool or provideContext) so agents in the browser can call them.";
    let mut ev = home.evidence();
    let fail = |summary: String, ev: Evidence| {
        result(
            CheckId::WebMcp,
            CheckStatus::Fail,
            summary,
            vec![ev],
            Some(ADVICE),
        )
    };
    match run {
        Some(Ok(page)) if !page.web_mcp_tools.is_empty() => {
            ev.excerpt = format!("registered: {}", page.web_mcp_tools.join(", "));
            result(
                CheckId::WebMcp,
                CheckStatus::Pass,
                format!(
                    "the page, run in a browser, registers {} WebMCP tool(s)",
                    page.web_mcp_tools.len()
                ),
                vec![ev],
                None,
            )
        }
        Some(Ok(_)) => {
            ev.excerpt = "run in a browser: no navigator.modelContext registration".to_owned();
            fail(
                "the page, run in a browser, registers no WebMCP tools".to_owned(),
                ev,
            )
        }
        Some(Err(RenderError::Page(e))) => {
            ev.excerpt = format!("not run: {e}");
            fail(
                format!(
                    "the page could not be run in a browser ({e}), so it registers no WebMCP tools"
                ),
                ev,
            )
        }
        None => {
            if home.error.is_none() {
                ev.excerpt = "not run: no HTML page".to_owned();
            }
            fail("no HTML home page to register WebMCP tools".to_owned(), ev)
        }
        Some(Err(e @ (RenderError::Unavailable { .. } | RenderError::Busy))) => {
            let why = format!("not run: {e}");
            let body = &home.body;
            let mentions = body.contains("navigator.modelContext")
                || body.contains("modelContext.registerTool")
                || body.contains("modelContext.provideContext");
            ev.excerpt = why.clone();
            let summary = if mentions {
                format!("the page's scripts call navigator.modelContext ({why}; not scored)")
            } else {
                format!("no WebMCP registration in the page's markup ({why}; not scored)")
            };
            neutral(CheckId::WebMcp, summary, vec![ev], ADVICE)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::readiness::tests::got;

    #[test]
    fn api_catalogs_are_rfc_9727_linksets() {
        let body = r#"{"linkset":[{"anchor":"https://e.com/api","service-desc":[{"href":"https://e.com/openapi.json","type":"application/json"}]}]}"#;
        let good = got(
            200,
            "application/linkset+json; profile=\"https://www.rfc-editor.org/info/rfc9727\"",
            body,
        );
        assert_eq!(judge_api_catalog(&good).status, CheckStatus::Pass);
        let wrong_type = got(200, "application/json", body);
        assert_eq!(judge_api_catalog(&wrong_type).status, CheckStatus::Warn);
        let no_anchor = got(
            200,
            "application/linkset+json",
            r#"{"linkset":[{"service-desc":[{"href":"x"}]}]}"#,
        );
        assert_eq!(judge_api_catalog(&no_anchor).status, CheckStatus::Fail);
        assert_eq!(
            judge_api_catalog(&got(200, "application/linkset+json", r#"{"linkset":[]}"#)).status,
            CheckStatus::Fail
        );
        assert_eq!(
            judge_api_catalog(&got(404, "text/plain", "")).status,
            CheckStatus::Fail
        );
    }

    #[test]
    fn oauth_metadata_needs_an_issuer_and_endpoints() {
        let none = got(404, "text/plain", "");
        let rfc8414 = got(
            200,
            "application/json",
            r#"{"issuer":"https://e.com","token_endpoint":"https://e.com/token","authorization_endpoint":"https://e.com/authorize"}"#,
        );
        assert_eq!(
            judge_oauth_discovery(&rfc8414, &none).status,
            CheckStatus::Pass
        );
        assert_eq!(
            judge_oauth_discovery(&none, &rfc8414).status,
            CheckStatus::Pass
        );
        let bare = got(200, "application/json", r#"{"issuer":"https://e.com"}"#);
        assert_eq!(
            judge_oauth_discovery(&bare, &none).status,
            CheckStatus::Warn
        );
        assert_eq!(
            judge_oauth_discovery(&none, &none).status,
            CheckStatus::Fail
        );
    }

    #[test]
    fn skill_digests_are_verified_against_the_files() {
        let skill = "# Read a page\n\nPOST /api/read with a URL.\n";
        let digest = format!("sha256:{}", hex(&Sha256::digest(skill.as_bytes())));
        let index = |d: &str| {
            let mut g = got(
                200,
                "application/json",
                &format!(
                    r#"{{"skills":[{{"name":"read","url":"read/SKILL.md","digest":"{d}"}}]}}"#
                ),
            );
            g.url = "https://e.com/.well-known/agent-skills/index.json".into();
            g
        };
        let none = got(404, "text/plain", "");
        assert_eq!(
            skill_urls(&index(&digest)),
            vec!["https://e.com/.well-known/agent-skills/read/SKILL.md"]
        );
        let file = got(200, "text/markdown", skill);
        let r = judge_agent_skills(&index(&digest), &none, std::slice::from_ref(&file));
        assert_eq!(r.status, CheckStatus::Pass, "{r:?}");
        let r = judge_agent_skills(&index("sha256:00"), &none, std::slice::from_ref(&file));
        assert_eq!(r.status, CheckStatus::Fail);
        assert!(r.summary.contains("does not match"));
        // The legacy path alone passes, said so.
        let r = judge_agent_skills(&none, &index(&digest), std::slice::from_ref(&file));
        assert_eq!(r.status, CheckStatus::Pass);
        assert!(r.summary.contains("legacy"));
        let empty = got(200, "application/json", r#"{"skills":[]}"#);
        assert_eq!(
            judge_agent_skills(&empty, &none, &[]).status,
            CheckStatus::Fail
        );
        assert_eq!(
            judge_agent_skills(&none, &none, &[]).status,
            CheckStatus::Fail
        );
    }

    #[test]
    fn only_the_skill_files_fetched_count_as_verified() {
        let body = |i: usize| format!("# Skill {i}\n");
        let listed: Vec<Value> = (0..MAX_SKILLS + 3)
            .map(|i| {
                serde_json::json!({
                    "name": format!("s{i}"),
                    "url": format!("s{i}/SKILL.md"),
                    "digest": format!("sha256:{}", hex(&Sha256::digest(body(i).as_bytes()))),
                })
            })
            .collect();
        let mut index = got(
            200,
            "application/json",
            &serde_json::json!({ "skills": listed }).to_string(),
        );
        index.url = "https://e.com/.well-known/agent-skills/index.json".into();
        let urls = skill_urls(&index);
        assert_eq!(urls.len(), MAX_SKILLS);
        let files: Vec<Got> = (0..MAX_SKILLS)
            .map(|i| got(200, "text/markdown", &body(i)))
            .collect();
        let none = got(404, "text/plain", "");
        let r = judge_agent_skills(&index, &none, &files);
        assert_eq!(r.status, CheckStatus::Pass, "{r:?}");
        assert!(
            r.summary
                .contains("13 skills; digests of the first 10 verified"),
            "{}",
            r.summary
        );
        assert!(
            r.summary.contains("3 not checked") && r.summary.ends_with("s10, s11, s12"),
            "{}",
            r.summary
        );
        let verified = r.summary.split("verified: ").nth(1).unwrap();
        let verified = verified.split(';').next().unwrap();
        assert_eq!(verified.split(", ").count(), MAX_SKILLS, "{}", r.summary);
        assert!(!verified.contains("s10"), "{}", r.summary);
        // One index entry, the file and the first ten files as evidence; nothing for the rest.
        assert_eq!(r.evidence.len(), 1 + MAX_SKILLS);
        // A skill past the cap without a digest is still seen: that needs no fetch.
        let mut listed = listed;
        listed[MAX_SKILLS + 1]
            .as_object_mut()
            .unwrap()
            .remove("digest");
        index.body = serde_json::json!({ "skills": listed }).to_string();
        let r = judge_agent_skills(&index, &none, &files);
        assert_eq!(r.status, CheckStatus::Warn, "{r:?}");
        assert!(r.summary.contains("s11"), "{}", r.summary);
        // Up to the cap, every skill is verified and no note is added.
        index.body = serde_json::json!({ "skills": &listed[..3] }).to_string();
        let r = judge_agent_skills(&index, &none, &files[..3]);
        assert_eq!(r.status, CheckStatus::Pass, "{r:?}");
        assert_eq!(r.summary, "3 skills, digests verified: s0, s1, s2");
    }

    #[test]
    fn web_bot_auth_is_informational_and_web_mcp_reads_the_run_page() {
        let jwks = r#"{"keys":[{"kty":"OKP","crv":"Ed25519","x":"abc"}]}"#;
        let good = got(
            200,
            "application/http-message-signatures-directory+json",
            jwks,
        );
        assert_eq!(judge_web_bot_auth(&good).status, CheckStatus::Pass);
        let mut moved = good.clone();
        moved.redirected = true;
        assert_eq!(judge_web_bot_auth(&moved).status, CheckStatus::Neutral);
        assert_eq!(
            judge_web_bot_auth(&got(200, "application/json", jwks)).status,
            CheckStatus::Neutral
        );
        assert_eq!(
            judge_web_bot_auth(&got(404, "text/plain", "")).status,
            CheckStatus::Neutral
        );
        let page = got(
            200,
            "text/html",
            "<script>navigator.modelContext.registerTool({name:'x'})</script>",
        );
        let unavailable = svc_ports::RenderError::Unavailable {
            detail: "no browser is configured in this process".into(),
        };
        let r = judge_web_mcp(&page, Some(Err(unavailable)));
        assert_eq!(r.status, CheckStatus::Neutral);
        assert!(r.summary.contains("call"), "{}", r.summary);
        assert!(
            r.evidence[0].excerpt.contains("no browser"),
            "{:?}",
            r.evidence
        );
        let r = judge_web_mcp(
            &page,
            Some(Ok(rendered(&page, &["scan_site", "read_page"]))),
        );
        assert_eq!(r.status, CheckStatus::Pass);
        assert!(r.evidence[0].excerpt.contains("scan_site, read_page"));
    }

    /// What the browser gives back for `page`, having recorded `tools`.
    fn rendered(page: &Got, tools: &[&str]) -> svc_ports::RenderedPage {
        svc_ports::RenderedPage {
            html: String::new(),
            final_url: page.url.clone(),
            truncated: false,
            requests: 0,
            failed_requests: 0,
            settled: true,
            web_mcp_tools: tools.iter().map(|t| t.to_string()).collect(),
        }
    }

    #[test]
    fn web_mcp_fails_when_a_browser_ran_the_page_and_found_no_tools() {
        let page = got(200, "text/html", "<p>No tools here.</p>");
        let r = judge_web_mcp(&page, Some(Ok(rendered(&page, &[]))));
        assert_eq!(r.status, CheckStatus::Fail, "{r:?}");
        assert!(r.scored());
        assert!(r.recommendation.is_some());
        // A page that could not be run (a script that never yields) registers nothing either.
        let stuck = svc_ports::RenderError::Page(svc_ports::FetchError::Timeout { seconds: 5 });
        let r = judge_web_mcp(&page, Some(Err(stuck)));
        assert_eq!(r.status, CheckStatus::Fail, "{r:?}");
        // No HTML home page: nothing to run, no tools.
        let r = judge_web_mcp(&got(404, "text/plain", ""), None);
        assert_eq!(r.status, CheckStatus::Fail, "{r:?}");
        // No browser to judge with (or every tab busy): neutral, never counted against the site.
        for e in [
            svc_ports::RenderError::Unavailable {
                detail: "no browser is configured in this process".into(),
            },
            svc_ports::RenderError::Busy,
        ] {
            let r = judge_web_mcp(&page, Some(Err(e)));
            assert_eq!(r.status, CheckStatus::Neutral, "{r:?}");
            assert!(!r.scored());
            assert!(r.summary.contains("not scored"), "{}", r.summary);
        }
    }
}
