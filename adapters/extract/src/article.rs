//! The main content as Readability (dom_smoothie) reads it: the page cleaned of history links
//! and paragraphs of breaks, Readability's article made a document of its own, then widened,
//! cleaned of boilerplate, comments and tail, and serialised.

use dom_query::Document as QueryDocument;
use dom_smoothie::{Config, Readability, TextMode};
use svc_ports::{MainContent, PageMetadata};
use url::Url;

use crate::reader::{absolutize, body_content};

/// Links that go back in the browser's history instead of to a page.
const HISTORY_LINKS: &str = r#"a[href^="javascript:history" i]"#;

/// Readability's article, whose title, byline and excerpt are better than the page's
/// metadata alone (they agree with Readability.js on more corpus pages). When it finds no
/// article the whole body is the content. `first` is the page as Readability is first given
/// it, kept for second readings.
pub(crate) fn main_content(
    query: QueryDocument,
    html: &str,
    first: &QueryDocument,
    url: &str,
    base: &Url,
    metadata: &mut PageMetadata,
    want_html: bool,
) -> MainContent {
    let fresh = &|| first.clone();
    let lead = crate::lead::find(html, &query);
    let families = crate::widen::families(&query);
    let found = crate::retry::article(
        readable(query, url, CHAR_THRESHOLD),
        // Whether a second reading could be longer: counted only for a short article.
        || crate::retry::prose_chars(first),
        fresh,
        url,
        readable,
    );
    let Some((article, article_doc)) = found else {
        // Readability gave up (rare); its document was consumed, so take the page again.
        let fallback = fresh();
        absolutize(&fallback, base);
        return body_content(&fallback, want_html);
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
    // A story cut into like blocks, of which Readability took one, is read whole.
    let widened = crate::widen::widen(&article_doc, &families, fresh);
    // Boilerplate Readability kept inside the article (share bars, related cards, sign-ups,
    // ad slots) goes after it chose the article, so the choice itself is not changed.
    crate::clean::strip_boilerplate(&article_doc);
    // A lead set apart from the story's container goes back on top.
    let led = lead.is_some_and(|l| crate::lead::put_back(&article_doc, &l));
    if led || widened {
        absolutize(&article_doc, base);
    }
    // Readers' comments under a heading that says so, then what is left at the end once the
    // story is over: a heading over nothing, a back link.
    crate::comments::cut(&article_doc);
    crate::tail::trim(&article_doc);
    // Markdown while the classes are on: a code block's `language-rust` names its fence.
    let markdown = match article_doc.body() {
        Some(body) => body.md(None).to_string(),
        None => article_doc.md(None).to_string(),
    };
    let html = if want_html {
        article_doc.select("[class]").remove_attr("class");
        match article_doc.body() {
            Some(body) => body.inner_html().to_string(),
            None => article.content.to_string(),
        }
    } else {
        String::new()
    };
    let text = article_doc.formatted_text();
    MainContent {
        markdown: markdown.trim().to_owned(),
        text: text.trim().to_owned(),
        html,
    }
}

/// Readability's own threshold: below this many characters it reads the page again with
/// looser rules.
pub(crate) const CHAR_THRESHOLD: usize = 500;

/// Readability's article from `query` (read again with looser rules while it is under
/// `char_threshold` characters), and the article alone in a document of its own with its
/// classes still on (the cleaning passes read them).
pub(crate) fn readable(
    query: QueryDocument,
    url: &str,
    char_threshold: usize,
) -> Option<(dom_smoothie::Article, QueryDocument)> {
    // A link that only steps back in the browser's history ("zurück", "Back") is navigation;
    // Readability would keep its word, as it turns every `javascript:` link into its text.
    query.select(HISTORY_LINKS).remove();
    crate::breaks::split_paragraphs(&query);
    let config = readability_config(char_threshold);
    let mut readability = Readability::with_document(query, Some(url), Some(config)).ok()?;
    let article = readability.parse().ok()?;
    let doc = std::mem::take(&mut readability.doc);
    article_alone(&doc).then_some((article, doc))
}

fn readability_config(char_threshold: usize) -> Config {
    Config {
        // The Markdown is made once, of the reading kept and cleaned (`main_content`).
        text_mode: TextMode::Raw,
        keep_classes: true,
        char_threshold,
        ..Config::default()
    }
}

/// Makes Readability's document, the page with the article in it, the article alone: what
/// parsing `<body>` and `article.content` would give, without serialising, parsing or copying
/// its nodes. The rest of the page stays in the tree's memory, out of reach of every walk
/// from its root.
fn article_alone(doc: &QueryDocument) -> bool {
    let Some(article) = doc
        .select_single("#readability-page-1")
        .nodes()
        .first()
        .copied()
    else {
        return false;
    };
    let root = doc.root();
    root.remove_children();
    let [html, head, body] = ["html", "head", "body"].map(|name| doc.tree.new_element(name));
    root.append_child(&html);
    html.append_child(&head);
    html.append_child(&body);
    body.append_child(&article);
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Readability's document made the article alone holds what a copy of the article into
    /// a document of its own holds (the way it was made before), and nothing of the page.
    #[test]
    fn the_article_alone_is_a_copy_of_it_without_copying() {
        let page = r#"<!doctype html><html lang="en" class="js"><head><title>T</title></head>
            <body class="home"><nav><a href="/">Home</a></nav><div class="wrap">
            <div id="readability-page-1" class="page"><p class="lede">The story, <b>bold</b>.</p>
            <!-- a note --><p>More of it.</p></div><aside>Elsewhere</aside></div>
            <footer>Foot</footer></body></html><!-- after the page -->"#;
        let copied = QueryDocument::from("<body></body>");
        copied
            .select_single("body")
            .append_selection(&QueryDocument::from(page).select_single("#readability-page-1"));
        let alone = QueryDocument::from(page);
        assert!(article_alone(&alone));
        assert_eq!(alone.html(), copied.html());
        assert_eq!(alone.formatted_text(), copied.formatted_text());
        assert!(alone.html().contains("The story, <b>bold</b>."));
        // A page without Readability's article is no reading.
        assert!(!article_alone(&QueryDocument::from(
            page.replace("readability-page-1", "x").as_str()
        )));
    }

    /// On a page Readability reads, the reading is what copying its article into a document
    /// of its own gave, and every element of it is under the document's root.
    #[test]
    fn a_reading_is_the_article_alone_as_a_copy_of_it_was() {
        let url = "https://example.com/a/page.html";
        let (_, alone) = readable(
            QueryDocument::from(crate::reader::tests::ARTICLE),
            url,
            CHAR_THRESHOLD,
        )
        .unwrap();
        let mut r = Readability::with_document(
            QueryDocument::from(crate::reader::tests::ARTICLE),
            Some(url),
            Some(readability_config(CHAR_THRESHOLD)),
        )
        .unwrap();
        r.parse().unwrap();
        let copied = QueryDocument::from("<body></body>");
        copied
            .select_single("body")
            .append_selection(&r.doc.select_single("#readability-page-1"));
        assert_eq!(alone.html(), copied.html());
        assert!(alone.html().contains("Storm surges"));
        let elements = alone.select("body *");
        assert!(elements.length() > 3);
        for node in elements.nodes() {
            assert!(node.ancestors_it(None).any(|a| a.is_document()));
        }
    }
}
