//! The page extractor: kuchikiki for links, forms, metadata and obstacle signals; dom_smoothie
//! (a port of Readability.js) for the main content, serialised to Markdown, text and HTML by
//! dom_query. `docs/extraction-evaluation.md` records why this engine was chosen.

use dom_query::{Document as QueryDocument, Matcher, NodeRef as QueryNode};
use dom_smoothie::{Config, Readability, TextMode};
use svc_ports::{
    ExtractError, ExtractOptions, Extraction, MainContent, PageExtractor, PageMetadata, PageSignals,
};
use url::Url;

use crate::Document;

/// Below this many characters of content, a password form or a challenge widget is the page.
const OBSTACLE_TEXT_CHARS: usize = 1500;

/// Elements that never carry readable content when the whole body is kept.
const NON_CONTENT: &str = "script, style, noscript, template, iframe, object, embed, svg, canvas";

/// Stateless; one value serves every request.
#[derive(Debug, Clone, Copy, Default)]
pub struct HtmlExtractor;

impl HtmlExtractor {
    pub fn new() -> Self {
        Self
    }
}

fn matcher(selector: &str) -> Result<Matcher, ExtractError> {
    Matcher::new(selector).map_err(|_| ExtractError::InvalidSelector {
        selector: selector.to_owned(),
    })
}

impl PageExtractor for HtmlExtractor {
    fn check_options(&self, options: &ExtractOptions) -> Result<(), ExtractError> {
        for s in options
            .include_selectors
            .iter()
            .chain(&options.exclude_selectors)
        {
            matcher(s)?;
        }
        Ok(())
    }

    fn extract(
        &self,
        html: &str,
        page_url: &str,
        options: &ExtractOptions,
    ) -> Result<Extraction, ExtractError> {
        // Selectors are checked before any parsing so a typo costs nothing.
        let exclude = options
            .exclude_selectors
            .iter()
            .map(|s| matcher(s))
            .collect::<Result<Vec<_>, _>>()?;
        let include = if options.include_selectors.is_empty() {
            None
        } else {
            for s in &options.include_selectors {
                matcher(s)?;
            }
            Some(matcher(&options.include_selectors.join(", "))?)
        };
        let url = Url::parse(page_url)
            .unwrap_or_else(|_| Url::parse("http://invalid.invalid/").expect("literal URL parses"));

        let page = Document::parse(html, &url);
        let links = page.links();
        let forms = page.forms();
        let mut metadata = page.metadata();

        let query = QueryDocument::from(html);
        for m in &exclude {
            query.select_matcher(m).remove();
        }
        let content = match include {
            Some(m) => {
                absolutize(&query, &page.base);
                fragment_content(&outermost_html(&query, &m))
            }
            None if options.main_content_only => {
                main_content(query, url.as_str(), &page.base, &mut metadata)
            }
            None => {
                absolutize(&query, &page.base);
                body_content(&query)
            }
        };
        if metadata.excerpt.is_none() {
            metadata.excerpt = metadata.description.clone();
        }
        let signals = signals(&page, &metadata, &content);
        Ok(Extraction {
            content,
            links,
            forms,
            metadata,
            signals,
        })
    }
}

/// Readability's article, whose title, byline and excerpt are better than the page's
/// metadata alone (they agree with Readability.js on more corpus pages). When it finds no
/// article the whole body is the content.
fn main_content(
    query: QueryDocument,
    url: &str,
    base: &Url,
    metadata: &mut PageMetadata,
) -> MainContent {
    let fallback = query.clone();
    let config = Config {
        text_mode: TextMode::Markdown,
        ..Config::default()
    };
    let article = Readability::with_document(query, Some(url), Some(config))
        .ok()
        .and_then(|mut r| r.parse().ok());
    let Some(article) = article else {
        absolutize(&fallback, base);
        return body_content(&fallback);
    };
    let non_empty = |s: Option<String>| s.map(|v| v.trim().to_owned()).filter(|v| !v.is_empty());
    // Readability's title is better than ours wherever the two differ on the corpus, including
    // where it finds none.
    metadata.title = non_empty(Some(article.title));
    if let Some(byline) = non_empty(article.byline) {
        metadata.author = Some(byline);
    }
    metadata.excerpt = non_empty(article.excerpt);
    metadata.site_name = metadata.site_name.take().or(non_empty(article.site_name));
    metadata.published_time = metadata
        .published_time
        .take()
        .or(non_empty(article.published_time));
    metadata.language = metadata.language.take().or(non_empty(article.lang));
    let html = article.content.to_string();
    let text = QueryDocument::from(html.as_str()).formatted_text();
    MainContent {
        markdown: article.text_content.trim().to_owned(),
        text: text.trim().to_owned(),
        html,
    }
}

fn body_content(query: &QueryDocument) -> MainContent {
    query.select(NON_CONTENT).remove();
    let (html, markdown, text) = match query.body() {
        Some(body) => (
            body.inner_html().to_string(),
            body.md(None).to_string(),
            body.formatted_text().to_string(),
        ),
        None => (
            query.html().to_string(),
            query.md(None).to_string(),
            query.formatted_text().to_string(),
        ),
    };
    MainContent {
        markdown: markdown.trim().to_owned(),
        text: text.trim().to_owned(),
        html,
    }
}

fn fragment_content(html: &str) -> MainContent {
    let fragment = QueryDocument::from(html);
    body_content(&fragment)
}

/// The HTML of every match that is not inside another match, in document order.
fn outermost_html(query: &QueryDocument, m: &Matcher) -> String {
    let picked = query.select_matcher(m);
    let ids: std::collections::HashSet<_> = picked.nodes().iter().map(|n| n.id).collect();
    picked
        .nodes()
        .iter()
        .filter(|n| !n.ancestors_it(None).any(|a| ids.contains(&a.id)))
        .map(|n| n.html().to_string())
        .collect()
}

/// Makes link and image targets absolute so Markdown taken out of the page still points home.
fn absolutize(query: &QueryDocument, base: &Url) {
    for (selector, attribute) in [
        ("a[href]", "href"),
        ("img[src]", "src"),
        ("form[action]", "action"),
    ] {
        for node in query.select(selector).nodes() {
            resolve_attribute(node, attribute, base);
        }
    }
}

fn resolve_attribute(node: &QueryNode, attribute: &str, base: &Url) {
    if let Some(value) = node.attr(attribute)
        && let Ok(absolute) = base.join(value.trim())
    {
        node.set_attr(attribute, absolute.as_str());
    }
}

const CHALLENGE_TITLES: &[&str] = &[
    "just a moment",
    "attention required",
    "are you a robot",
    "are you human",
    "verify you are human",
    "human verification",
    "security check",
    "captcha",
    "access denied",
    "bot detection",
];

const CHALLENGE_WIDGETS: &str = ".g-recaptcha, .h-captcha, .cf-turnstile, #challenge-form, \
    #cf-challenge-running, #px-captcha, iframe[src*='recaptcha'], iframe[src*='hcaptcha'], \
    script[src*='challenges.cloudflare.com'], script[src*='hcaptcha.com'], \
    script[src*='recaptcha/api'], [data-sitekey]";

const SIGN_IN_WORDS: &[&str] = &[
    "sign in",
    "sign-in",
    "signin",
    "log in",
    "log-in",
    "login",
    "anmelden",
    "connexion",
    "iniciar sesión",
];

fn signals(page: &Document, metadata: &PageMetadata, content: &MainContent) -> PageSignals {
    let short = content.text.chars().count() < OBSTACLE_TEXT_CHARS;
    let title = page
        .root()
        .select_first("title")
        .map(|t| t.text_contents().to_lowercase())
        .unwrap_or_default();

    let captcha = if let Some(t) = CHALLENGE_TITLES
        .iter()
        .find(|t| title.contains(*t) && short)
    {
        Some(format!("challenge page title ({t})"))
    } else if short {
        page.root()
            .select_first(CHALLENGE_WIDGETS)
            .ok()
            .map(|w| format!("challenge widget <{}>", &*w.name.local))
    } else {
        None
    };

    let has_password = page.root().select_first("input[type='password' i]").is_ok();
    let heading = page
        .root()
        .select_first("h1")
        .map(|h| h.text_contents().to_lowercase())
        .unwrap_or_default();
    let meta_title = metadata.title.as_deref().unwrap_or("").to_lowercase();
    let says_sign_in = SIGN_IN_WORDS
        .iter()
        .any(|w| title.contains(w) || heading.contains(w) || meta_title.contains(w));
    let login_wall = (has_password && (short || says_sign_in)).then(|| {
        format!(
            "password form with {} characters of other content",
            content.text.chars().count()
        )
    });
    PageSignals {
        captcha,
        login_wall,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(html: &str, options: &ExtractOptions) -> Extraction {
        HtmlExtractor
            .extract(html, "https://example.com/a/page.html", options)
            .unwrap()
    }

    const ARTICLE: &str = r#"<!doctype html><html lang="en"><head><title>Tides of the North Sea | Coast News</title>
        <meta name="description" content="Why the tides turn.">
        <meta property="og:site_name" content="Coast News"></head>
        <body><nav><a href="/">Home</a> <a href="/about">About us</a></nav>
        <article><h1>Tides of the North Sea</h1><p class="byline">By Ann Example</p>
        <p>The North Sea has two tides a day. Sailors who ignore them run aground on the sandbanks
        that shift every winter, and harbour masters publish tables so that no one has to guess.</p>
        <p>Read the <a href="tables.html">tide tables</a> before you sail. Spring tides come after
        new and full moon; neap tides in between, when the range is smallest.</p>
        <p>Storm surges add to all of this when a north-westerly gale pushes water south.</p></article>
        <footer>Copyright Coast News <a href="/privacy">Privacy</a></footer></body></html>"#;

    #[test]
    fn main_content_drops_navigation_and_footer_and_keeps_absolute_links() {
        let e = read(ARTICLE, &ExtractOptions::default());
        assert!(e.content.text.contains("two tides a day"));
        assert!(!e.content.text.contains("About us"), "{}", e.content.text);
        assert!(!e.content.text.contains("Copyright"));
        assert!(
            e.content
                .markdown
                .contains("(https://example.com/a/tables.html)"),
            "{}",
            e.content.markdown
        );
        assert!(e.content.html.contains("<p>"));
        assert_eq!(e.metadata.title.as_deref(), Some("Tides of the North Sea"));
        assert_eq!(e.metadata.site_name.as_deref(), Some("Coast News"));
        assert_eq!(e.metadata.excerpt.as_deref(), Some("Why the tides turn."));
        assert_eq!(e.signals, PageSignals::default());
        // Links are the page's, not only the content's.
        assert!(e.links.iter().any(|l| l.url == "https://example.com/about"));
    }

    #[test]
    fn whole_body_keeps_navigation_but_never_scripts() {
        let html = ARTICLE.replace("<footer>", "<script>var secret = 1;</script><footer>");
        let e = read(
            &html,
            &ExtractOptions {
                main_content_only: false,
                ..Default::default()
            },
        );
        assert!(e.content.text.contains("About us"));
        assert!(e.content.text.contains("Copyright"));
        assert!(!e.content.text.contains("secret"));
        assert!(
            e.content.markdown.contains("(https://example.com/about)"),
            "{}",
            e.content.markdown
        );
    }

    #[test]
    fn include_selectors_pick_the_content_in_document_order() {
        let e = read(
            ARTICLE,
            &ExtractOptions {
                include_selectors: vec!["footer".into(), "nav".into()],
                ..Default::default()
            },
        );
        let nav = e.content.text.find("About us").expect("nav kept");
        let footer = e.content.text.find("Copyright").expect("footer kept");
        assert!(nav < footer, "document order");
        assert!(!e.content.text.contains("two tides"));
    }

    #[test]
    fn exclude_selectors_remove_before_main_content_is_found() {
        let e = read(
            ARTICLE,
            &ExtractOptions {
                exclude_selectors: vec!["p:nth-of-type(3)".into()],
                ..Default::default()
            },
        );
        assert!(e.content.text.contains("two tides a day"));
        assert!(
            !e.content.text.contains("Spring tides"),
            "{}",
            e.content.text
        );
    }

    #[test]
    fn an_invalid_selector_is_refused_by_name() {
        for options in [
            ExtractOptions {
                include_selectors: vec!["div[".into()],
                ..Default::default()
            },
            ExtractOptions {
                exclude_selectors: vec!["p".into(), "::nonsense(".into()],
                ..Default::default()
            },
        ] {
            let err = HtmlExtractor
                .extract(ARTICLE, "https://example.com/", &options)
                .unwrap_err();
            assert!(matches!(err, ExtractError::InvalidSelector { .. }), "{err}");
        }
    }

    #[test]
    fn a_captcha_interstitial_is_a_signal_not_content() {
        let html = r#"<html><head><title>Just a moment...</title></head><body>
            <form id="challenge-form"><div class="cf-turnstile" data-sitekey="x"></div></form>
            <p>Checking your browser before accessing example.com.</p></body></html>"#;
        let e = read(html, &ExtractOptions::default());
        assert!(e.signals.captcha.is_some());
        assert!(e.signals.login_wall.is_none());

        let widget_only = r#"<html><head><title>Shop</title></head><body>
            <div class="g-recaptcha" data-sitekey="x"></div><p>Please confirm.</p></body></html>"#;
        assert!(
            read(widget_only, &ExtractOptions::default())
                .signals
                .captcha
                .is_some()
        );
    }

    #[test]
    fn a_long_article_with_a_newsletter_captcha_is_not_blocked() {
        let body = "<p>Plenty of real reading here about the sea and its moods. </p>".repeat(40);
        let html = format!(
            r#"<html><head><title>Essay</title></head><body><article>{body}</article>
            <form><div class="g-recaptcha" data-sitekey="x"></div><input name="email"></form></body></html>"#
        );
        let e = read(&html, &ExtractOptions::default());
        assert_eq!(e.signals, PageSignals::default());
    }

    #[test]
    fn a_sign_in_page_is_a_login_wall() {
        let html = r#"<html><head><title>Sign in - Example</title></head><body><h1>Sign in to continue</h1>
            <form method="post" action="/session"><label>Email <input name="email"></label>
            <label>Password <input type="password" name="password"></label></form></body></html>"#;
        let e = read(html, &ExtractOptions::default());
        assert!(e.signals.login_wall.is_some());
        assert_eq!(e.forms.len(), 1, "forms are still reported");
    }

    #[test]
    fn a_page_without_an_article_falls_back_to_its_body() {
        let e = read(
            "<html><body><p>Hi</p></body></html>",
            &ExtractOptions::default(),
        );
        assert_eq!(e.content.text, "Hi");
    }
}
