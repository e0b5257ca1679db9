//! Sections of a page that are not its story though Readability may take them for it: the
//! readers' comments under a short post, a paper's reference list under its abstract. Asked by
//! the retries (`retry.rs`) whether an article is mostly such sections, and used to read a page
//! again without them.

use dom_query::{Document, NodeRef};

use crate::clean::{has_word, text_chars};

/// Whether an element is a comment section by its first class or its id (`comments`,
/// `commentlist`, `comment-body`, Disqus, WordPress's `respond`), not `commentary`.
pub(crate) fn is_comment_section(node: &NodeRef) -> bool {
    // Every element of every page is asked (`retry::prose_chars`): no allocation.
    let starts = |s: &str, prefix: &str| {
        s.get(..prefix.len())
            .is_some_and(|head| head.eq_ignore_ascii_case(prefix))
    };
    ["class", "id"].iter().any(|a| {
        node.attr(a).is_some_and(|v| {
            let first = v.split_whitespace().next().unwrap_or("");
            (starts(first, "comment") && !starts(first, "commentary"))
                || first.eq_ignore_ascii_case("disqus_thread")
                || first.eq_ignore_ascii_case("respond")
        })
    })
}

/// Whether an element is a paper's list of references by a word of its class or id
/// (`references`, Springer's `c-article-references`, `bibliography`, Wikipedia's `reflist`).
pub(crate) fn is_reference_list(node: &NodeRef) -> bool {
    has_word(node, &["references", "bibliography", "reflist"])
}

/// Sections of one kind (comments, references) hold at least this share of an article
/// Readability took for them.
const SECTIONS_SHARE: f64 = 0.6;

/// Whether most of the article's text is in sections of one kind (the outermost ones counted).
fn mostly_in(article: &Document, is_section: fn(&NodeRef) -> bool) -> bool {
    let Some(body) = article.body() else {
        return false;
    };
    let total = text_chars(&body);
    let inside: usize = body
        .descendants_it()
        .filter(crate::clean::is_named)
        .filter(|n| is_section(n))
        .filter(|n| !n.ancestors_it(None).any(|a| is_section(&a)))
        .map(|n| text_chars(&n))
        .sum();
    total > 0 && inside as f64 >= SECTIONS_SHARE * total as f64
}

/// Removes every element of the page's body that is one of a kind (with what it holds).
pub(crate) fn remove_all(doc: &Document, is_one: impl Fn(&NodeRef) -> bool) {
    let Some(body) = doc.body() else { return };
    let found: Vec<NodeRef> = body
        .descendants_it()
        .filter(|n| n.is_element() && is_one(n))
        .collect();
    for node in found {
        node.remove_from_parent();
    }
}

/// Whether most of the article's text is in comment sections.
pub fn mostly_comments(article: &Document) -> bool {
    mostly_in(article, is_comment_section)
}

/// Removes the page's comment sections.
pub fn strip_comments(doc: &Document) {
    remove_all(doc, is_comment_section)
}

/// Whether most of the article's text is in reference lists: the bibliography of a paper
/// whose page shows only its abstract, the longest text there.
pub fn mostly_references(article: &Document) -> bool {
    mostly_in(article, is_reference_list)
}

/// Removes the page's reference lists.
pub fn strip_references(doc: &Document) {
    remove_all(doc, is_reference_list)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_article_mostly_in_comment_sections_is_the_comments_but_commentary_is_not() {
        let long =
            "<p>A reader's long reply about the matter at hand, at some length.</p>".repeat(4);
        let comments = Document::from(format!(
            r#"<body><p>Short post.</p><ol class="commentlist"><li>{long}</li></ol></body>"#
        ));
        assert!(mostly_comments(&comments));
        let column = Document::from(format!(
            r#"<body><p>Short post.</p><div class="commentary">{long}</div></body>"#
        ));
        assert!(!mostly_comments(&column));
        strip_comments(&comments);
        assert!(!comments.select("body").text().contains("reply"));
    }
}
