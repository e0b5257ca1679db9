//! The article's tail: what is left at its end once the story is over. A heading with nothing
//! after it titles a box that is gone or was never part of the article ("Das könnte dich auch
//! interessieren", "Related"), and a lone short link is navigation ("zurück", "Back to top").

use dom_query::{Document, NodeRef};

use crate::clean::text_chars;

/// A lone link at the end is navigation when this short (characters other than whitespace).
const NAV_LINK_CHARS: usize = 16;
/// At most this many blocks are taken off the end: a tail, not the story.
const MAX_TRIMMED: usize = 3;

fn is_heading(node: &NodeRef) -> bool {
    ["h1", "h2", "h3", "h4", "h5", "h6"]
        .iter()
        .any(|h| node.has_name(h))
}

/// The last element of `body` that holds text: the innermost element around its last
/// non-blank text node, climbed to the outermost ancestor holding no other text.
fn last_block<'a>(body: &NodeRef<'a>) -> Option<NodeRef<'a>> {
    let last_text = body
        .descendants_it()
        .filter(|n| n.is_text() && !n.text().trim().is_empty())
        .last()?;
    let mut at = last_text.parent()?;
    let chars = text_chars(&at);
    while let Some(parent) = at.parent() {
        if parent.id == body.id || text_chars(&parent) != chars {
            break;
        }
        at = parent;
    }
    Some(at)
}

/// Whether the block (or the element inside it that holds all its text) is a heading or a
/// short link.
fn is_tail(node: &NodeRef) -> bool {
    // A link ending a sentence is the sentence's: only a block of its own is a tail. A list
    // item is one of a list (tags, a table of contents), judged as a list elsewhere.
    if !BLOCKS.iter().any(|b| node.has_name(b)) {
        return false;
    }
    let chars = text_chars(node);
    let mut at = Some(*node);
    while let Some(n) = at {
        if is_heading(&n) {
            // A heading among a section's paragraphs is the section's, whatever follows.
            return !n.parent().is_some_and(|p| {
                p.element_children()
                    .iter()
                    .any(|c| c.has_name("p") && text_chars(c) > 0)
            });
        }
        if n.has_name("a") && n.has_attr("href") && chars <= NAV_LINK_CHARS {
            return true;
        }
        let children = n.element_children();
        at = children.into_iter().find(|c| text_chars(c) == chars);
    }
    false
}

/// Elements that stand on a line of their own.
const BLOCKS: &[&str] = &[
    "p",
    "div",
    "ul",
    "ol",
    "dl",
    "dd",
    "dt",
    "section",
    "nav",
    "aside",
    "header",
    "footer",
    "h1",
    "h2",
    "h3",
    "h4",
    "h5",
    "h6",
    "blockquote",
    "td",
    "tr",
    "table",
];

/// Elements that are content without text of their own.
const MEDIA: &[&str] = &[
    "img", "picture", "video", "audio", "iframe", "svg", "object", "embed", "table",
];

/// Whether a picture, a video or a table comes after `node` (a heading over a picture is its
/// title, not a box's).
fn media_follows(body: &NodeRef, node: &NodeRef) -> bool {
    let inside: Vec<_> = node.descendants_it().map(|d| d.id).collect();
    body.descendants_it()
        .skip_while(|d| d.id != node.id)
        .skip(1)
        .filter(|d| !inside.contains(&d.id))
        .any(|d| MEDIA.iter().any(|m| d.has_name(m)))
}

/// Takes trailing headings and lone navigation links off the end of the article; says
/// whether any went.
pub(crate) fn trim(doc: &Document) -> bool {
    let Some(body) = doc.body() else {
        return false;
    };
    let mut trimmed = 0;
    while trimmed < MAX_TRIMMED {
        let Some(last) = last_block(&body) else { break };
        // A tail is what is left after the story, never most of the article.
        if last.id == body.id
            || 2 * text_chars(&last) > text_chars(&body)
            || !is_tail(&last)
            || media_follows(&body, &last)
        {
            break;
        }
        last.remove_from_parent();
        trimmed += 1;
    }
    trimmed > 0
}

#[cfg(test)]
mod tests {
    use super::*;

    const STORY: &str =
        "<p>The story people came to read, long enough to be a paragraph of prose.</p>";

    fn trimmed(body: &str) -> (bool, String) {
        let doc = Document::from(format!("<body>{body}</body>").as_str());
        let done = trim(&doc);
        (
            done,
            doc.select("body")
                .text()
                .split_whitespace()
                .collect::<Vec<_>>()
                .join(" "),
        )
    }

    #[test]
    fn a_heading_over_nothing_and_a_lone_back_link_go() {
        let (done, text) = trimmed(&format!(
            r#"{STORY}<div class="box"><h2>Das könnte dich auch interessieren</h2></div>"#
        ));
        assert!(done);
        assert!(!text.contains("interessieren"), "{text}");
        let (_, text) = trimmed(&format!(r#"{STORY}<p><a href="/list">zurück</a></p>"#));
        assert!(!text.contains("zurück"), "{text}");
        // Both, one after the other.
        let (_, text) = trimmed(&format!(
            r#"{STORY}<div><h3>More</h3></div><div><a href="/">Back to top</a></div>"#
        ));
        assert!(text.ends_with("prose."), "{text}");
    }

    #[test]
    fn the_story_its_sections_and_its_last_words_stay() {
        // A heading among the section's paragraphs is the section's.
        let body = format!("{STORY}<h2>Third header</h2>");
        assert!(!trimmed(&body).0);
        // A heading over a picture titles the picture.
        let body = format!(r#"{STORY}<div><h2>Test case</h2></div><img src="/a.jpg">"#);
        assert!(!trimmed(&body).0);
        // A link that ends a sentence, a long link, a list of tags.
        for tail in [
            r#"<p>Follow us on <a href="/fb">Facebook</a></p>"#,
            r#"<p><a href="/more">Read the whole report of the commission here</a></p>"#,
            r#"<ul><li><a href="/t/a">Hotels</a></li><li><a href="/t/b">Hygiene</a></li></ul>"#,
        ] {
            let (done, text) = trimmed(&format!("{STORY}{tail}"));
            assert!(!done, "{tail} went: {text}");
        }
        // Never past the story: a page of one heading is left as it is.
        assert_eq!(
            trimmed("<div><h1>Only a title</h1></div>").1,
            "Only a title"
        );
    }
}
