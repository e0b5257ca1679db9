//! A story's lead (standfirst): the paragraph under the headline that news sites mark with a
//! class or id word `lead` and often set apart from the story's container, so Readability,
//! choosing the container, leaves it out. It is found on the page as it came and put back at
//! the top of the article when the article does not already hold it.

use dom_query::{Document, NodeRef};

use crate::clean::{has_word, squeezed, text_chars};

/// A lead is at least a sentence...
const MIN_CHARS: usize = 40;
/// ...and at most a paragraph or two: longer, it is the story or a box around it.
const MAX_CHARS: usize = 800;
/// At most this share of a lead's text is link text (not a list of teasers).
const MAX_LINK_SHARE: f64 = 0.25;
/// The lead's first characters (whitespace aside) that show the article holds it.
const PROBE_CHARS: usize = 40;

/// Words of a lead that is a picture or a video with its caption (`lead-asset`,
/// `lead-video-placeholder`), or a footer's: Readability.js leaves those out, rightly.
const NOT_PROSE: &[&str] = &[
    "asset",
    "caption",
    "figure",
    "footer",
    "image",
    "img",
    "media",
    "photo",
    "picture",
    "placeholder",
    "video",
];

/// Class or id words that name a lead: `lead`, the Spanish press's `bajada`, the French
/// `chapo`, `subheadline`. (`standfirst`, `dek` and `intro` name leads too, but Readability.js
/// leaves those out and the Readability corpus lost 0.0001-0.001 with them; `teaser` names
/// other stories' teasers as often.)
const LEAD_WORDS: &[&str] = &["lead", "bajada", "chapo", "subheadline"];

fn capitalised(word: &str) -> String {
    let mut c = word.chars();
    c.next()
        .map(|f| f.to_uppercase().chain(c).collect())
        .unwrap_or_default()
}

/// Elements that make a lead a media box.
const MEDIA: &str = "img, picture, figure, figcaption, video, iframe, svg";

/// Whether the element's class or id has the word `lead` (`lead`, `article-lead`,
/// `c-lead`; not `leader` or `leading`) and none of a media box's.
fn is_lead(node: &NodeRef) -> bool {
    has_word(node, LEAD_WORDS) && !has_word(node, NOT_PROSE)
}

/// The outer HTML of the page's first lead of a paragraph's length and mostly prose.
/// `html` is the page's source, looked at first so pages without the word pay no walk.
pub(crate) fn find(html: &str, page: &Document) -> Option<String> {
    let lower = |w: &&str| html.contains(w) || html.contains(&capitalised(w));
    if !LEAD_WORDS.iter().any(lower) {
        return None;
    }
    page.body()?
        .descendants_it()
        .filter(crate::clean::is_named)
        .filter(|n| is_lead(n))
        .filter(|n| {
            dom_query::Selection::from(*n).select(MEDIA).is_empty()
                && !n
                    .ancestors_it(None)
                    .any(|a| a.has_name("figure") || a.has_name("footer"))
        })
        .find(|n| {
            let chars = text_chars(n);
            let links: usize = n
                .descendants_it()
                .filter(|d| d.has_name("a"))
                .map(|a| text_chars(&a))
                .sum();
            (MIN_CHARS..=MAX_CHARS).contains(&chars)
                && links as f64 <= MAX_LINK_SHARE * chars as f64
        })
        .map(|n| n.html().to_string())
}

/// Puts `lead` (outer HTML) at the top of `article`'s body unless the article holds its
/// first characters already. Whether it did.
pub(crate) fn put_back(article: &Document, lead: &str) -> bool {
    let Some(body) = article.body() else {
        return false;
    };
    let fragment = Document::from(lead);
    let Some(lead_body) = fragment.body() else {
        return false;
    };
    let probe: String = squeezed(&lead_body.text())
        .chars()
        .take(PROBE_CHARS)
        .collect();
    if probe.is_empty() || squeezed(&body.text()).contains(&probe) {
        return false;
    }
    body.prepend_html(lead);
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    const LEAD: &str = "The council voted on Tuesday to close the old harbour road for good.";

    #[test]
    fn a_lead_of_a_paragraph_is_found_by_its_class_word() {
        let page = |class: &str, text: &str| {
            let html =
                format!(r#"<body><h1>T</h1><p class="{class}">{text}</p><p>Story.</p></body>"#);
            find(&html, &Document::from(html.as_str()))
        };
        assert!(page("article-lead", LEAD).unwrap().contains(LEAD));
        assert!(page("Lead", LEAD).is_some());
        assert!(page("texto-bajada", LEAD).is_some());
        assert!(page("chapo widthfix", LEAD).is_some());
        assert!(page("article-subheadline", LEAD).is_some());
        assert_eq!(page("chaposhow", LEAD), None);
        assert_eq!(page("leader", LEAD), None);
        assert_eq!(page("leading", LEAD), None);
        assert_eq!(page("lead", "Too short."), None);
        assert_eq!(page("lead", &LEAD.repeat(20)), None);
        let links = format!(r#"<a href="/a">{LEAD}</a>"#);
        assert_eq!(page("lead", &links), None);
        // A lead picture or video with its caption is not the story's lead.
        assert_eq!(page("lead-asset-caption", LEAD), None);
        assert_eq!(page("lead", &format!(r#"<img src="/a.jpg">{LEAD}"#)), None);
    }

    #[test]
    fn the_lead_goes_back_on_top_only_when_the_article_lacks_it() {
        let lead = format!(r#"<p class="lead">{LEAD}</p>"#);
        let article = Document::from("<body><p>The story itself, long enough.</p></body>");
        assert!(put_back(&article, &lead));
        let text = article.select("body").text().to_string();
        assert!(text.starts_with(LEAD), "{text}");
        // Already there (whitespace aside): left as it is.
        let spaced = LEAD.replace(' ', "\n  ");
        let article = Document::from(format!("<body><p>{spaced}</p><p>Story.</p></body>").as_str());
        assert!(!put_back(&article, &lead));
        assert_eq!(article.select("p").length(), 2);
    }
}
