//! A comments section the article kept: from its heading on ("Comments", "12 Responses to
//! ...", "Leave a Reply", "Kommentare"), the rest of the heading's container is readers'
//! words, not the story's. Readability keeps such a section when its comments are in unnamed
//! blocks (only the heading says what they are) or when the named box around them is empty.

use dom_query::{Document, NodeRef};

use crate::clean::text_chars;

/// A comments heading closes a story only after this much of it (characters other than
/// whitespace, in the heading's container before it): a page that opens with one is no story
/// with comments.
const MIN_STORY_CHARS: usize = 200;

/// Titles that name a comments section by themselves, with or without a count before them
/// ("12 Comments") or after them ("Comments (12)").
const TITLES: &[&str] = &[
    "comments",
    "comment",
    "responses",
    "replies",
    "reader comments",
    "readers' comments",
    "trackbacks",
    "pingbacks",
    "kommentare",
    "comentarios",
    "commentaires",
    "reacties",
];

/// Phrases that open a comments heading whatever follows ("Leave a Reply to Ann Cancel
/// reply", "Join the discussion").
const OPENINGS: &[&str] = &[
    "leave a reply",
    "leave a comment",
    "post a comment",
    "add a comment",
    "write a comment",
    "join the discussion",
    "join the conversation",
];

/// What a count names before "to" or "on" and the story's title ("12 Responses to ...").
const COUNTED: &[&str] = &[
    "responses",
    "response",
    "comments",
    "comment",
    "replies",
    "thoughts",
    "thought",
];

/// The most characters a title "12 Responses to ..." may have after its "to".
const MAX_TITLE_TAIL: usize = 80;

/// Whether a heading's text names a comments section.
fn is_comments_title(text: &str) -> bool {
    let lower = text.split_whitespace().collect::<Vec<_>>().join(" ");
    let lower = lower.to_lowercase();
    if OPENINGS.iter().any(|o| lower.starts_with(o)) {
        return true;
    }
    // A count first ("12 Comments", "3 thoughts on ...").
    let rest = lower
        .trim_start_matches(|c: char| c.is_ascii_digit())
        .trim_start();
    let counted = rest.len() < lower.len();
    // A count after ("Comments (12)", "Comments: 4").
    let bare = rest
        .trim_end_matches(|c: char| c.is_ascii_digit() || "():[] ".contains(c))
        .trim_end();
    if TITLES.contains(&bare) {
        return true;
    }
    // "12 Responses to "Title"", "One thought on "Title"": counted, then joined to a title.
    let (numbered, rest) = match rest.strip_prefix("one ") {
        Some(r) => (true, r),
        None => (counted, rest),
    };
    numbered
        && COUNTED.iter().any(|w| {
            rest.strip_prefix(w)
                .and_then(|r| r.strip_prefix(" to ").or_else(|| r.strip_prefix(" on ")))
                .is_some_and(|title| title.chars().count() <= MAX_TITLE_TAIL)
        })
}

/// Whether a heading is named for comments by its own class or id.
fn is_named_comments(node: &NodeRef) -> bool {
    crate::sections::is_comment_section(node)
        || ["class", "id"].iter().any(|a| {
            node.attr(a).is_some_and(|v| {
                let first = v
                    .split_whitespace()
                    .next()
                    .unwrap_or("")
                    .to_ascii_lowercase();
                first.starts_with("trackback") || first.starts_with("pingback")
            })
        })
}

/// Whether `node` still hangs from `body` (an earlier cut may have taken it).
fn attached(node: &NodeRef, body: &NodeRef) -> bool {
    node.ancestors_it(None).any(|a| a.id == body.id)
}

/// Takes each comments section the article kept, from its heading to the end of the heading's
/// container; says whether any went.
pub(crate) fn cut(doc: &Document) -> bool {
    let Some(body) = doc.body() else {
        return false;
    };
    let headings = doc.select("h1, h2, h3, h4, h5, h6").nodes().to_vec();
    let mut cut = false;
    for heading in headings {
        if !attached(&heading, &body) {
            continue;
        }
        // A link titled "5 Comments" near the story's title leads to them; it is not them.
        let linked = heading
            .descendants_it()
            .any(|d| d.has_name("a") && d.has_attr("href"));
        if linked {
            continue;
        }
        if !(is_named_comments(&heading) || is_comments_title(&heading.text())) {
            continue;
        }
        let before: usize = std::iter::successors(heading.prev_sibling(), NodeRef::prev_sibling)
            .map(|n| text_chars(&n))
            .sum();
        if before < MIN_STORY_CHARS {
            continue;
        }
        let after: Vec<_> =
            std::iter::successors(heading.next_sibling(), NodeRef::next_sibling).collect();
        for n in after {
            n.remove_from_parent();
        }
        heading.remove_from_parent();
        cut = true;
    }
    cut
}

#[cfg(test)]
mod tests {
    use super::*;

    const STORY: &str = "<p>The story people came to read, long enough to be a paragraph of prose, \
        and a second sentence so that it is well over two hundred characters of text in all, \
        which a comments heading needs before it, as a story has and a page of comments alone has \
        not.</p>";

    fn after_cut(body: &str) -> (bool, String) {
        let doc = Document::from(format!("<body>{body}</body>").as_str());
        let done = cut(&doc);
        let text = doc
            .select("body")
            .text()
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ");
        (done, text)
    }

    #[test]
    fn titles_of_comment_sections_are_known() {
        for t in [
            "Comments",
            "12 Comments",
            "Comments (3)",
            "3 Responses to \u{201c}A day at the lake\u{201d}",
            "One thought on \u{201c}Hello\u{201d}",
            "Leave a Reply",
            "Leave a Reply to Ann Cancel reply",
            "Kommentare",
            "Trackbacks",
            "  Reader  Comments ",
        ] {
            assert!(is_comments_title(t), "{t}");
        }
        for t in [
            "Comment: the Fed is wrong",
            "Comments on the draft law were due in May",
            "Responses to the crisis",
            "Replies from the ministry came late",
            "Commentary",
            "The comments section",
        ] {
            assert!(!is_comments_title(t), "{t}");
        }
    }

    /// Issue 21: a blog's comments, in unnamed blocks under a heading "Comments", were read as
    /// the article's.
    #[test]
    fn a_comments_heading_and_what_follows_it_go() {
        let (done, text) = after_cut(&format!(
            r#"<div>{STORY}<h2>Comments</h2><div><p>Great post!</p><p class="posted">Posted by: jo</p></div>
               <div><p>I disagree.</p></div></div>"#
        ));
        assert!(done);
        assert!(text.ends_with("has not."), "{text}");
        // Named by its id, whatever it says.
        let (_, text) = after_cut(&format!(
            r#"{STORY}<h3 id="comments-title">What readers say</h3><p>First!</p>"#
        ));
        assert!(!text.contains("First!"), "{text}");
    }

    #[test]
    fn a_comments_heading_without_a_story_before_it_or_a_link_stays() {
        // A page that opens with its comments has no story above them to keep.
        let (done, _) = after_cut("<h2>Comments</h2><p>First!</p>");
        assert!(!done);
        // A link to the comments under the title is not them.
        let (done, text) = after_cut(&format!(
            r##"<h3><a href="#comments">5 Comments</a></h3>{STORY}"##
        ));
        assert!(!done);
        assert!(text.contains("has not."), "{text}");
        // A section of the story titled with the word is the story's.
        let (done, _) = after_cut(&format!(
            "{STORY}<h2>Comments on the draft law were due in May</h2><p>More of the story.</p>"
        ));
        assert!(!done);
    }
}
