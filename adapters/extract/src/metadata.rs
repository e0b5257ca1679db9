//! Page metadata, in the order of preference Readability.js uses (JSON-LD, then Dublin Core,
//! OpenGraph, plain and Twitter meta tags), plus canonical URL, language and favicon.

use std::collections::{BTreeMap, HashMap};

use serde_json::Value;
use svc_ports::PageMetadata;

use crate::{Document, attr, collapse, select, select_first};

const ARTICLE_TYPES: &[&str] = &[
    "Article",
    "AdvertiserContentArticle",
    "NewsArticle",
    "AnalysisNewsArticle",
    "AskPublicNewsArticle",
    "BackgroundNewsArticle",
    "OpinionNewsArticle",
    "ReportageNewsArticle",
    "ReviewNewsArticle",
    "Report",
    "SatiricalArticle",
    "ScholarlyArticle",
    "MedicalScholarlyArticle",
    "SocialMediaPosting",
    "BlogPosting",
    "LiveBlogPosting",
    "DiscussionForumPosting",
    "TechArticle",
    "APIReference",
];

/// Meta `property`/`name` keys normalised like Readability: lower-case, no spaces, `.` -> `:`.
fn meta_values(doc: &Document) -> HashMap<String, String> {
    let mut values = HashMap::new();
    for m in doc.nodes(&doc.found().metas) {
        let Some(content) = attr(&m, "content").filter(|c| !c.trim().is_empty()) else {
            continue;
        };
        let content = collapse(&content);
        if let Some(property) = attr(&m, "property") {
            for p in property.split_whitespace() {
                let key: String = p.to_ascii_lowercase();
                let known = ["article", "dc", "dcterm", "og", "twitter"]
                    .iter()
                    .any(|ns| key.starts_with(&format!("{ns}:")));
                if known {
                    values.insert(key, content.clone());
                }
            }
        }
        if let Some(name) = attr(&m, "name") {
            let key: String = name
                .to_ascii_lowercase()
                .chars()
                .filter(|c| !c.is_whitespace())
                .collect();
            values
                .entry(key.replace('.', ":"))
                .or_insert(content.clone());
        }
    }
    values
}

fn first<'a>(values: &'a HashMap<String, String>, keys: &[&str]) -> Option<&'a String> {
    keys.iter().find_map(|k| values.get(*k))
}

fn text_of(v: &Value) -> Option<String> {
    match v {
        Value::String(s) => Some(collapse(s)).filter(|s| !s.is_empty()),
        _ => None,
    }
}

struct JsonLd {
    title: Option<String>,
    byline: Option<String>,
    excerpt: Option<String>,
    site_name: Option<String>,
    published: Option<String>,
}

fn is_article(v: &Value) -> bool {
    match v.get("@type") {
        Some(Value::String(t)) => ARTICLE_TYPES.contains(&t.as_str()),
        Some(Value::Array(ts)) => ts
            .iter()
            .any(|t| t.as_str().is_some_and(|t| ARTICLE_TYPES.contains(&t))),
        _ => false,
    }
}

fn article_in(v: &Value) -> Option<&Value> {
    match v {
        Value::Array(items) => items.iter().find_map(article_in),
        Value::Object(o) => {
            if is_article(v) {
                return Some(v);
            }
            o.get("@graph").and_then(article_in)
        }
        _ => None,
    }
}

fn word_set(s: &str) -> Vec<String> {
    s.to_lowercase()
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_owned)
        .collect()
}

/// Share of `b`'s words not found in `a` (0 = same words). `a`'s words in a set: a title of
/// many words against a name of many words is not a product of the two.
fn distance(a: &str, b: &str) -> f64 {
    let wa: std::collections::HashSet<String> = word_set(a).into_iter().collect();
    let wb = word_set(b);
    if wb.is_empty() {
        return 1.0;
    }
    let missing: usize = wb
        .iter()
        .filter(|w| !wa.contains(*w))
        .map(|w| w.len())
        .sum();
    let total: usize = wb.iter().map(|w| w.len()).sum();
    missing as f64 / total.max(1) as f64
}

fn json_ld(doc: &Document, html_title: &str) -> (Vec<Value>, Option<JsonLd>) {
    let mut all = Vec::new();
    let mut found = None;
    for s in doc.nodes(&doc.found().json_ld) {
        let raw = s.text();
        let raw = raw
            .trim()
            .trim_start_matches("<![CDATA[")
            .trim_end_matches("]]>");
        // A JSON-LD document is an object or an array (JSON-LD 1.1, section 9); a script holding
        // anything else is not one.
        let Ok(v) = serde_json::from_str::<Value>(raw) else {
            continue;
        };
        if !(v.is_object() || v.is_array()) {
            continue;
        }
        if found.is_none()
            && let Some(a) = article_in(&v)
        {
            let name = a.get("name").and_then(text_of);
            let headline = a.get("headline").and_then(text_of);
            let title = match (name, headline) {
                (Some(n), Some(h)) => {
                    Some(if distance(&n, html_title) > distance(&h, html_title) {
                        h
                    } else {
                        n
                    })
                }
                (n, h) => n.or(h),
            };
            let byline = match a.get("author") {
                Some(Value::Object(o)) => o.get("name").and_then(text_of),
                Some(Value::Array(list)) => {
                    let names: Vec<String> = list
                        .iter()
                        .filter_map(|x| x.get("name").and_then(text_of))
                        .collect();
                    (!names.is_empty()).then(|| names.join(", "))
                }
                Some(v) => text_of(v),
                None => None,
            };
            found = Some(JsonLd {
                title,
                byline,
                excerpt: a.get("description").and_then(text_of),
                site_name: a
                    .get("publisher")
                    .and_then(|p| p.get("name"))
                    .and_then(text_of),
                published: a.get("datePublished").and_then(text_of),
            });
        }
        all.push(v);
    }
    (all, found)
}

fn words(s: &str) -> usize {
    s.split_whitespace().count()
}

const SEPARATORS: &[char] = &['|', '-', '–', '—', '\\', '/', '>', '»'];

/// Readability's title heuristic: drop a site name after a separator, or a prefix before a
/// colon, unless that leaves too little.
fn article_title(doc: &Document) -> String {
    let orig = doc
        .nodes(doc.found().title.as_slice())
        .next()
        .map(|t| collapse(&t.text()))
        .unwrap_or_default();
    let mut cur = orig.clone();
    let mut hierarchical = false;
    let spaced_sep = |s: &str| {
        s.char_indices()
            .filter(|(i, c)| {
                SEPARATORS.contains(c)
                    && s[..*i].ends_with(' ')
                    && s[*i + c.len_utf8()..].starts_with(' ')
            })
            .collect::<Vec<_>>()
    };
    let seps = spaced_sep(&orig);
    if let (Some(&(first_i, first_c)), Some(&(last_i, _))) = (seps.first(), seps.last()) {
        hierarchical = seps
            .iter()
            .any(|(_, c)| matches!(c, '\\' | '/' | '>' | '»'));
        cur = orig[..last_i].trim().to_owned();
        if words(&cur) < 3 {
            cur = orig[first_i + first_c.len_utf8()..].trim().to_owned();
        }
    } else if orig.contains(": ") {
        let heading_matches = select(doc.root(), "h1, h2")
            .iter()
            .any(|h| collapse(&h.text()) == orig);
        if !heading_matches {
            cur = orig[orig.rfind(':').map(|i| i + 1).unwrap_or(0)..]
                .trim()
                .to_owned();
            if words(&cur) < 3 {
                cur = orig[orig.find(':').map(|i| i + 1).unwrap_or(0)..]
                    .trim()
                    .to_owned();
            } else if words(&orig[..orig.find(':').unwrap_or(0)]) > 5 {
                cur = orig.clone();
            }
        }
    } else if orig.chars().count() > 150 || orig.chars().count() < 15 {
        let h1s = select(doc.root(), "h1");
        if h1s.len() == 1 {
            cur = collapse(&h1s[0].text());
        }
    }
    let cur = collapse(&cur);
    let n = words(&cur);
    let stripped: String = orig.chars().filter(|c| !SEPARATORS.contains(c)).collect();
    if n <= 4 && (!hierarchical || n != words(&stripped).saturating_sub(1)) {
        return orig;
    }
    cur
}

/// Readability's in-content byline: the first element marked as the author (`rel=author`,
/// `itemprop~=author`, or a class/id naming a byline) with a short text.
fn content_byline(doc: &Document) -> Option<String> {
    const MARKERS: &[&str] = &["byline", "author", "dateline", "writtenby", "p-author"];
    let body = select_first(doc.root(), "body")?;
    for node in body.descendants_it() {
        if !node.is_element() {
            continue;
        }
        // Every element of the body is asked: no allocation.
        let names_a_marker = |name| {
            node.attr(name).is_some_and(|v| {
                MARKERS.iter().any(|m| {
                    v.as_bytes()
                        .windows(m.len())
                        .any(|w| w.eq_ignore_ascii_case(m.as_bytes()))
                })
            })
        };
        let marked = node.attr("rel").as_deref() == Some("author")
            || node.attr("itemprop").is_some_and(|i| i.contains("author"))
            || names_a_marker("class")
            || names_a_marker("id");
        if !marked {
            continue;
        }
        let named = select_first(node, "[itemprop~='name']")
            .map(|n| collapse(&n.text()))
            .filter(|t| !t.is_empty());
        let text = named.unwrap_or_else(|| collapse(&node.text()));
        if !text.is_empty() && text.chars().count() < 100 {
            return Some(text);
        }
    }
    None
}

fn link_href(doc: &Document, selector: &str) -> Option<String> {
    let el = doc.nodes(&doc.found().link_tags).find(|l| l.is(selector))?;
    let href = attr(&el, "href")?;
    doc.absolute(&href).map(|u| u.to_string())
}

pub fn extract(doc: &Document) -> PageMetadata {
    let values = meta_values(doc);
    let html_title = doc
        .nodes(doc.found().title.as_slice())
        .next()
        .map(|t| collapse(&t.text()))
        .unwrap_or_default();
    let (json_ld_objects, ld) = json_ld(doc, &html_title);
    let ld = ld.as_ref();

    let title = ld
        .and_then(|l| l.title.clone())
        .or_else(|| {
            first(
                &values,
                &[
                    "dc:title",
                    "dcterm:title",
                    "og:title",
                    "weibo:article:title",
                    "weibo:webpage:title",
                    "title",
                    "twitter:title",
                    "parsely-title",
                ],
            )
            .cloned()
        })
        .or_else(|| Some(article_title(doc)).filter(|t| !t.is_empty()));
    let author = ld
        .and_then(|l| l.byline.clone())
        .or_else(|| {
            first(
                &values,
                &[
                    "dc:creator",
                    "dcterm:creator",
                    "author",
                    "parsely-author",
                    "article:author",
                ],
            )
            .cloned()
        })
        .filter(|a| !a.starts_with("http"))
        .or_else(|| content_byline(doc));
    let description = ld.and_then(|l| l.excerpt.clone()).or_else(|| {
        first(
            &values,
            &[
                "dc:description",
                "dcterm:description",
                "og:description",
                "weibo:article:description",
                "weibo:webpage:description",
                "description",
                "twitter:description",
            ],
        )
        .cloned()
    });
    let site_name = ld
        .and_then(|l| l.site_name.clone())
        .or_else(|| first(&values, &["og:site_name"]).cloned());
    let published_time = ld
        .and_then(|l| l.published.clone())
        .or_else(|| first(&values, &["article:published_time", "parsely-pub-date"]).cloned());

    let prefixed = |prefix: &str| -> BTreeMap<String, String> {
        values
            .iter()
            .filter_map(|(k, v)| {
                k.strip_prefix(prefix)
                    .map(|rest| (rest.to_owned(), v.clone()))
            })
            .collect()
    };
    let language = select_first(doc.root(), "html")
        .and_then(|h| attr(&h, "lang"))
        .map(|l| l.trim().to_owned())
        .filter(|l| !l.is_empty())
        .or_else(|| first(&values, &["og:locale", "content-language", "language"]).cloned());
    let favicon = link_href(doc, "link[rel~='icon']")
        .or_else(|| link_href(doc, "link[rel='shortcut icon']"))
        .or_else(|| doc.base.join("/favicon.ico").ok().map(|u| u.to_string()));

    PageMetadata {
        title,
        description,
        canonical: link_href(doc, "link[rel~='canonical']"),
        language,
        open_graph: prefixed("og:"),
        twitter: prefixed("twitter:"),
        json_ld: json_ld_objects,
        author,
        excerpt: None,
        published_time,
        site_name,
        favicon,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use url::Url;

    fn meta(html: &str) -> PageMetadata {
        Document::parse(html, &Url::parse("https://news.example.com/story").unwrap()).metadata()
    }

    #[test]
    fn json_ld_wins_then_meta_tags() {
        let m = meta(
            r#"<html lang="en-GB"><head><title>Big story | News</title>
            <meta property="og:title" content="OG title"><meta property="og:site_name" content="The News">
            <meta name="author" content="Ann Writer"><meta name="twitter:card" content="summary">
            <link rel="canonical" href="/story"><link rel="icon" href="/i.png">
            <script type="application/ld+json">{"@context":"https://schema.org","@type":"NewsArticle",
              "headline":"Big story","author":[{"name":"A"},{"name":"B"}],"datePublished":"2024-01-02",
              "publisher":{"name":"News Inc"}}</script></head><body></body></html>"#,
        );
        assert_eq!(m.title.as_deref(), Some("Big story"));
        assert_eq!(m.author.as_deref(), Some("A, B"));
        assert_eq!(m.site_name.as_deref(), Some("News Inc"));
        assert_eq!(m.published_time.as_deref(), Some("2024-01-02"));
        assert_eq!(m.language.as_deref(), Some("en-GB"));
        assert_eq!(
            m.canonical.as_deref(),
            Some("https://news.example.com/story")
        );
        assert_eq!(m.favicon.as_deref(), Some("https://news.example.com/i.png"));
        assert_eq!(
            m.open_graph.get("title").map(String::as_str),
            Some("OG title")
        );
        assert_eq!(m.twitter.get("card").map(String::as_str), Some("summary"));
        assert_eq!(m.json_ld.len(), 1);
    }

    #[test]
    fn of_json_ld_name_and_headline_the_one_nearer_the_page_title_wins() {
        let page = |title: &str, name: &str, headline: &str| {
            meta(&format!(
                r#"<title>{title}</title><script type="application/ld+json">{{"@type":"Article",
                "name":"{name}","headline":"{headline}"}}</script>"#
            ))
            .title
        };
        let t = page(
            "Tides of the North Sea | Coast News",
            "Coast News front page",
            "Tides of the North Sea",
        );
        assert_eq!(t.as_deref(), Some("Tides of the North Sea"));
        // Long ones are compared through a set of words, not word by word (10^10 steps).
        let t = page(&"a ".repeat(100_000), &"b ".repeat(100_000), "a");
        assert_eq!(t.as_deref(), Some("a"));
    }

    #[test]
    fn title_heuristic_drops_the_site_name() {
        let m = meta("<title>Why the sky is blue and the sea too | Daily Science</title>");
        assert_eq!(
            m.title.as_deref(),
            Some("Why the sky is blue and the sea too")
        );
        let short = meta("<title>Home | Site</title>");
        assert_eq!(short.title.as_deref(), Some("Home | Site"));
        assert_eq!(
            short.favicon.as_deref(),
            Some("https://news.example.com/favicon.ico")
        );
    }
}
