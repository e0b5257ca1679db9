//! The article's tail: what is left at its end once the story is over. A heading with nothing
//! after it titles a box that is gone or was never part of the article ("Das könnte dich auch
//! interessieren", "Related"), a lone short link is navigation ("zurück", "Back to top"), and a
//! line "© 2012 ... All Rights Reserved" is the site's, not the story's.

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
    // A link ending a sentence is the sentence's: only a block of its own, or a link on a
    // line of its own (a button under a paragraph), is a tail. A list item is one of a list
    // (tags, a table of contents), judged as a list elsewhere.
    let own_line = is_block(node) || (node.has_name("a") && on_own_line(node));
    if !own_line {
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

fn is_block(node: &NodeRef) -> bool {
    BLOCKS.iter().any(|b| node.has_name(b))
}

/// Whether an inline element follows a block or a line break, with no text of its line before it.
fn on_own_line(node: &NodeRef) -> bool {
    let mut at = node.prev_sibling();
    while let Some(n) = at {
        if n.is_element() {
            return is_block(&n) || n.has_name("br");
        }
        if n.is_text() && !n.text().trim().is_empty() {
            return false;
        }
        at = n.prev_sibling();
    }
    false
}

/// How a link that sends the reader to other stories begins (lowercased): "Read more" after a
/// teaser of another story.
const READ_MORE: &[&str] = &[
    "read more",
    "continue reading",
    "weiterlesen",
    "mehr lesen",
    "lire la suite",
    "leer más",
    "seguir leyendo",
    "leggi tutto",
    "lees meer",
];
/// ... and "More homestories" or "All reviews" under a box of them.
const MORE: &[&str] = &["more ", "mehr ", "all ", "alle ", "see all ", "view all "];
/// Words too common to say that a heading and a button name the same thing.
const STOP_WORDS: &[&str] = &[
    "from", "with", "this", "that", "more", "mehr", "alle", "über", "about", "your", "unsere",
    "unseren", "unserer", "weitere", "other", "news",
];
/// A teaser of another story, or a box of them, has at most this much text (characters other
/// than whitespace).
const TEASER_CHARS: usize = 400;

/// The block to take off the end when `last` (the article's last block) ends a teaser of other
/// stories: a short paragraph ending in "Read more", or a box of a heading, a line and a
/// button "More ..." on a line of its own.
fn teaser<'a>(last: &NodeRef<'a>) -> Option<NodeRef<'a>> {
    let chars = text_chars(last);
    // The link holding all the block's text, or the last block's text: the block itself or
    // the element inside it that holds all its text.
    let mut link = Some(*last);
    while let Some(n) = link.filter(|n| !n.has_name("a")) {
        link = n
            .element_children()
            .into_iter()
            .find(|c| text_chars(c) == chars);
    }
    // To another page: not to a place on this one, nor a script's expander.
    let link = link.filter(|l| {
        l.attr("href").is_some_and(|h| {
            let h = h.trim().to_ascii_lowercase();
            !h.is_empty() && !h.starts_with('#') && !h.starts_with("javascript:")
        })
    })?;
    let words = link.text().split_whitespace().collect::<Vec<_>>().join(" ");
    let words = words.to_lowercase();
    let block = |n: &NodeRef<'a>| std::iter::successors(Some(*n), |n| n.parent()).find(is_block);
    // "Read more" and nothing else but an arrow or dots: "Lire la suite de la critique sur
    // Liberation.fr" names a source, and ends a paragraph of the story.
    let only_read_more = READ_MORE.iter().any(|w| {
        words
            .strip_prefix(w)
            .is_some_and(|rest| !rest.chars().any(char::is_alphanumeric))
    });
    if only_read_more {
        return block(&link).filter(|b| text_chars(b) <= TEASER_CHARS);
    }
    // A box of more stories says what they are twice: "Entdecke weitere Homestorys" over
    // "Mehr Homestorys". A story's last section ("Fazit") over a shop's button is the story's.
    // What the button names is what follows its "More": "Mehr Sicherheit im Alltag" over
    // "Mehr Angebote" shares only the "Mehr".
    let more = MORE.iter().find(|w| words.starts_with(*w));
    if let Some(more) = more.filter(|_| on_own_line(&link)) {
        let boxed = block(&link)?;
        let heading = boxed
            .element_children()
            .into_iter()
            .next()
            .filter(is_heading)?;
        let heading = heading.text().to_lowercase();
        let named_twice = words[more.len()..]
            .split(|c: char| !c.is_alphanumeric())
            .filter(|w| w.chars().count() >= 4 && !STOP_WORDS.contains(w))
            .any(|w| {
                heading
                    .split(|c: char| !c.is_alphanumeric())
                    .any(|h| h == w)
            });
        return (named_twice && text_chars(&boxed) <= TEASER_CHARS).then_some(boxed);
    }
    None
}

/// How a site's copyright line reads (lowercased): "© 2012 CBS Interactive Inc. All Rights
/// Reserved. This material may not be published ...", "Copyright 2004".
const RIGHTS_RESERVED: &[&str] = &[
    "all rights reserved",
    "alle rechte vorbehalten",
    "tous droits réservés",
    "todos los derechos reservados",
    "tutti i diritti riservati",
];
/// A copyright line is a line, not a paragraph that cites one.
const NOTICE_CHARS: usize = 300;

/// Whether the block is the site's copyright line, standing on its own at the article's end:
/// it starts with "©" or "Copyright" and a year or a sign, or it reserves all rights beside
/// the sign or the word. Not a sentence about copyright, nor a clause "(c)" of a law.
fn is_notice(node: &NodeRef) -> bool {
    if !is_block(node) || text_chars(node) > NOTICE_CHARS {
        return false;
    }
    let text = node.text().trim().to_lowercase();
    let copyright_line = text.starts_with('©')
        || text.strip_prefix("copyright").is_some_and(|rest| {
            let rest = rest.trim_start();
            rest.starts_with('©')
                || rest.starts_with("(c)")
                || rest.chars().take(4).filter(char::is_ascii_digit).count() == 4
        });
    // "... all rights reserved" alone may end a sentence of the story; with the sign or the
    // word it is the site's line.
    copyright_line
        || ((text.contains('©') || text.contains("copyright"))
            && RIGHTS_RESERVED.iter().any(|r| text.contains(r)))
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

/// Takes trailing headings, lone navigation links, teasers of other stories and copyright
/// lines off the end of the article; says whether any went.
pub(crate) fn trim(doc: &Document) -> bool {
    let Some(body) = doc.body() else {
        return false;
    };
    let article_chars = text_chars(&body);
    let (mut trimmed, mut trimmed_chars) = (0, 0);
    // A tail is what is left after the story, never most of the article, all told.
    let removable = |n: &NodeRef, so_far: usize| {
        n.id != body.id && 2 * (so_far + text_chars(n)) <= article_chars && !media_follows(&body, n)
    };
    while trimmed < MAX_TRIMMED {
        let Some(last) = last_block(&body) else { break };
        let tail = teaser(&last)
            .filter(|t| removable(t, trimmed_chars))
            .or_else(|| {
                Some(last).filter(|l| (is_tail(l) || is_notice(l)) && removable(l, trimmed_chars))
            });
        let Some(tail) = tail else { break };
        trimmed_chars += text_chars(&tail);
        tail.remove_from_parent();
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

    /// Issue 21: the last lines of an article were a teaser of another story ("... Seht
    /// selbst! Weiterlesen") or a box of a heading, a line and a button to more stories.
    #[test]
    fn teasers_of_other_stories_at_the_end_go() {
        for tail in [
            r#"<p>Summer is here, and a model visits an island. <b><a href="/stars/b">Read more</a></b></p>"#,
            r#"<p>Sommerzeit ist Urlaubszeit. <a href="/stars/b">Weiterlesen »</a></p>"#,
            r#"<section><h2>Entdecke weitere <em>Homestorys</em></h2><p>Wie wohnt die Community?</p>
               <a class="btn" href="/living/homestory">Mehr Homestorys</a></section>"#,
        ] {
            let (done, text) = trimmed(&format!("{STORY}{STORY}{tail}"));
            assert!(done, "{tail}");
            assert!(text.ends_with("prose."), "{text}");
        }
        // A lone button under a paragraph is a tail of its own.
        let (_, text) = trimmed(&format!(
            r#"<div>{STORY}<p>Last words of it.</p><a class="btn" href="/list">All posts</a></div>"#
        ));
        assert!(text.ends_with("Last words of it."), "{text}");
        // Heading and button that share only their "More" name different things.
        let (_, text) = trimmed(&format!(
            r#"{STORY}<div><h3>Mehr Sicherheit im Alltag</h3><p>Drei Regeln helfen.</p><a href="/shop">Mehr Angebote</a></div>"#
        ));
        assert!(text.ends_with("Drei Regeln helfen."), "{text}");
        // A story's last section over a shop's button is the story's: only the button goes.
        let (_, text) = trimmed(&format!(
            r#"{STORY}<div><h3>Fazit</h3><p>Das Gerät überzeugt.</p><a class="btn" href="/shop">Alle Angebote</a></div>"#
        ));
        assert!(text.ends_with("Das Gerät überzeugt."), "{text}");
        // Under a box not led by a heading, only the button goes.
        let (_, text) = trimmed(&format!(
            r#"{STORY}<section><p>Our homestories.</p><a href="/h">More homestories</a></section>"#
        ));
        assert!(text.ends_with("Our homestories."), "{text}");
    }

    /// Issue 21: a site's copyright line closing the article (CBS's "© 2012 CBS Interactive
    /// Inc. All Rights Reserved. This material may not be published ...").
    #[test]
    fn the_sites_copyright_line_goes_but_words_about_copyright_stay() {
        for tail in [
            "<p>© 2012 CBS Interactive Inc. All Rights Reserved. This material may not be published.</p>",
            "<div>Copyright 2004</div>",
            "<p>Copyright © National Tax Training School</p>",
            "<p>Texte et photos © Le Journal. Tous droits réservés.</p>",
        ] {
            let (done, text) = trimmed(&format!("{STORY}{STORY}{tail}"));
            assert!(done, "{tail}");
            assert!(text.ends_with("prose."), "{text}");
        }
        for tail in [
            "<p>Copyright law protects the expression of an idea, not the idea.</p>",
            "<p>(c) any other use the court allows.</p>",
            "<p>The estate keeps all rights reserved to the family.</p>",
            // A paragraph of the story that mentions the words, and a notice inside one.
            &*format!(
                "<p>{}all rights reserved.</p>",
                "The label kept the masters. ".repeat(12)
            ),
            "<p>The last words. © 2004 The Author</p>",
        ] {
            let (done, text) = trimmed(&format!("{STORY}{STORY}{tail}"));
            assert!(!done, "{tail} went: {text}");
        }
    }

    /// A briefing of short items, each ending in "Read more": the items are the article, and
    /// at most half of it is ever taken as its tail.
    #[test]
    fn teasers_never_take_most_of_the_article() {
        let item = r#"<p>An item of the morning's briefing, two lines of it. <a href="/i">Read more</a></p>"#;
        let (done, text) = trimmed(&item.repeat(4));
        assert!(done);
        // Two of the four items went: a third would pass half of the article.
        assert_eq!(text.matches("An item").count(), 2, "{text}");
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
            // "Read more" that is a page's own (a footnote), or that ends a long paragraph.
            r##"<p>A short note. <a href="#fn1">Read more</a></p>"##,
            &*format!(
                r#"<p>{}<a href="/b">Read more</a></p>"#,
                "A long paragraph. ".repeat(30)
            ),
            // "More ..." inside a sentence.
            r#"<section><h2>Notes</h2><p>See <a href="/n">more notes</a></p></section>"#,
            // A link naming a source, or a script's expander, after the story's last words.
            r#"<p>Une expérience unique. <a href="http://next.liberation.fr/c">Lire la suite de la critique sur Liberation.fr</a></p>"#,
            r#"<p>The end of it. <a href="javascript:void(0)">Read more</a></p>"#,
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
