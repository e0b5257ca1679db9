//! Second readings of a page whose first article looks wrong. Readability scores containers
//! by their text; on some pages the winner is not the story: the readers' comments below a
//! short post, or a box beside the story (an advertiser disclosure, a later post of a forum
//! thread). Each retry reads a copy of the page as first parsed, without what misled the
//! first reading, and is paid only on such pages.

use dom_query::{Document, NodeData, NodeRef};

use crate::clean::{squeezed, text_chars};

/// An article shorter than this (characters other than whitespace) is checked for a better
/// one: long stories are what Readability gets right.
const SHORT_ARTICLE_CHARS: usize = 1000;
/// A second reading replaces the first only when it is this much longer.
const LONGER: f64 = 2.0;
/// Characters of the article's start and end looked for in the page to find its container.
const PROBE_CHARS: usize = 40;
/// At most this share of a second reading's text is link text.
const PROSE_LINK_SHARE: f64 = 0.25;
/// A reading without the page's reference lists replaces one that was mostly them only when
/// it has this much text (an abstract; not a caption or a menu).
const MIN_PROSE_CHARS: usize = 400;

type Reading = (dom_smoothie::Article, Document);

/// The article of the page after the retries, starting from Readability's first reading.
/// `fresh` gives the page again as Readability was first given it (the caller's exclusions
/// applied), for each second reading.
pub(crate) fn article(
    first: Option<Reading>,
    page_prose: impl FnOnce() -> usize,
    fresh: impl Fn() -> Document,
    url: &str,
    read: impl Fn(Document, &str, usize) -> Option<Reading>,
) -> Option<Reading> {
    let read_as_usual = |doc, url| read(doc, url, crate::article::CHAR_THRESHOLD);
    let mut found = first;
    // The readers' comments taken for the article: read again without comment sections.
    if found
        .as_ref()
        .is_some_and(|(_, doc)| crate::sections::mostly_comments(doc))
    {
        let again = fresh();
        crate::sections::strip_comments(&again);
        if let Some(second) = read_as_usual(again, url) {
            found = Some(second);
        }
    }
    // A paper's bibliography taken for the article (on a page showing only the abstract it
    // is the longest text): read again without reference lists, if that finds prose.
    if found
        .as_ref()
        .is_some_and(|(_, doc)| crate::sections::mostly_references(doc))
    {
        let again = fresh();
        crate::sections::strip_references(&again);
        if let Some(second) = read_as_usual(again, url).filter(|(_, doc)| {
            body_chars(doc) >= MIN_PROSE_CHARS
                && link_share(doc) <= PROSE_LINK_SHARE
                && !crate::sections::mostly_comments(doc)
        }) {
            found = Some(second);
        }
    }
    let chars = found.as_ref().map(|(_, doc)| body_chars(doc))?;
    if chars >= SHORT_ARTICLE_CHARS {
        return found;
    }
    // A short story can lose to a box of the page's footer or sidebar: Readability strips
    // those first, but when what is left is under its 500 characters it reads the page again
    // without stripping, and the longer box wins ("About this blog", the site's footer
    // links). Read again without the page's margins; a story that is prose wins.
    let page = fresh();
    let from_margin = found
        .as_ref()
        .and_then(|(_, doc)| chosen_container(&page, doc))
        .is_some_and(|c| in_margin(&c));
    let page = if from_margin {
        crate::sections::remove_all(&page, is_margin);
        if let Some(second) = read_as_usual(page, url).filter(|(_, doc)| {
            body_chars(doc) >= MIN_MARGIN_STORY_CHARS
                && link_share(doc) <= PROSE_LINK_SHARE
                && !crate::sections::mostly_comments(doc)
        }) {
            return Some(second);
        }
        fresh()
    } else {
        page
    };
    // A short article: read again without the container Readability chose. The longer
    // reading wins, if much longer, mostly prose and neither the readers' comments nor a
    // bibliography.
    let longer = |second: Option<Reading>| {
        second.filter(|(_, doc)| {
            body_chars(doc) as f64 >= LONGER * chars as f64
                && link_share(doc) <= PROSE_LINK_SHARE
                && !crate::sections::mostly_comments(doc)
                && !crate::sections::mostly_references(doc)
        })
    };
    // Such a reading needs that much text outside links elsewhere on the page: most short
    // articles are on short pages, and they pay no second copy and Readability run.
    let needed = (LONGER * (1.0 - PROSE_LINK_SHARE) + 1.0) * chars as f64;
    if (page_prose() as f64) < needed {
        return found;
    }
    let without_chosen = page;
    let chosen = found
        .as_ref()
        .and_then(|(_, doc)| chosen_container(&without_chosen, doc));
    if let Some(node) = chosen {
        node.remove_from_parent();
        // With the chosen box gone Readability may settle on a list of links (latest posts,
        // a menu): a story is mostly prose.
        if let Some(second) = longer(read_as_usual(without_chosen, url)) {
            return Some(second);
        }
    }
    // The story may be in the chosen box after all, cut by Readability's cleaning (a block of
    // it taken for an ad or a widget). Readability loosens its rules by itself when an article
    // is under 500 characters; here it loosens them until it is twice as long as this one.
    let threshold = (LONGER * chars as f64).ceil() as usize;
    if let Some(second) = longer(read(fresh(), url, threshold)) {
        return Some(second);
    }
    found
}

/// A story found once the page's margins are gone replaces a box of them when it has this
/// much text (a video's two-line description is a story; a caption is not).
const MIN_MARGIN_STORY_CHARS: usize = 150;

/// Whether an element is the page's footer or a sidebar: `<footer>`, `<aside>`, or a class or
/// id word `footer`, `foot` or `sidebar`, that is not a layout around the main column
/// (`layout-container has-sidebar`): it holds no `<main>` or `<h1>`.
fn is_margin(node: &NodeRef) -> bool {
    (node.has_name("footer")
        || node.has_name("aside")
        || crate::clean::has_word(node, &["footer", "foot", "sidebar"]))
        && !node
            .descendants_it()
            .any(|d| d.has_name("main") || d.has_name("h1"))
}

/// Whether `container` is in a footer or a sidebar, or is one. Readability folds a wrapper
/// around one child into that child and keeps the wrapper's `id`, so the page element found
/// by it may be the wrapper: the elements below it holding all its text count too.
fn in_margin(container: &NodeRef) -> bool {
    if container
        .ancestors_it(None)
        .chain([*container])
        .any(|n| is_margin(&n))
    {
        return true;
    }
    let chars = text_chars(container);
    let mut at = *container;
    while let Some(child) = at
        .element_children()
        .into_iter()
        .find(|c| text_chars(c) == chars)
    {
        if is_margin(&child) {
            return true;
        }
        at = child;
    }
    false
}

fn body_chars(doc: &Document) -> usize {
    doc.body().map(|b| text_chars(&b)).unwrap_or(0)
}

/// The innermost element of `page` holding the article's first and last characters: the
/// container Readability took the article from.
fn chosen_container<'a>(page: &'a Document, article: &Document) -> Option<NodeRef<'a>> {
    let text = squeezed(&article.body()?.text());
    let chars: Vec<char> = text.chars().collect();
    if chars.len() < 2 * PROBE_CHARS {
        return None;
    }
    let head: String = chars[..PROBE_CHARS].iter().collect();
    let tail: String = chars[chars.len() - PROBE_CHARS..].iter().collect();
    if let Some(found) = by_attributes(page, article, &head) {
        return Some(found);
    }
    let mut at = page.body()?;
    if !squeezed(&at.text()).contains(&head) {
        return None;
    }
    // Walk down while one child still holds both ends.
    'down: loop {
        for child in at.element_children() {
            let own = squeezed(&child.text());
            if own.contains(&head) && own.contains(&tail) {
                at = child;
                continue 'down;
            }
        }
        break;
    }
    (!at.has_name("body")).then_some(at)
}

/// The page element the article's main block came from, found by its `id` or `class` (which
/// Readability keeps) and holding the article's start: no walk over the page's text.
fn by_attributes<'a>(page: &'a Document, article: &Document, head: &str) -> Option<NodeRef<'a>> {
    let wrapper = article
        .select("#readability-page-1")
        .nodes()
        .first()
        .copied()
        .or_else(|| article.body())?;
    let top = wrapper
        .element_children()
        .into_iter()
        .max_by_key(|n| n.text().len())?;
    for name in ["id", "class"] {
        let Some(value) = top.attr(name) else {
            continue;
        };
        let found = page
            .select(&format!("body [{name}]"))
            .nodes()
            .iter()
            .find(|n| {
                n.attr(name).as_deref() == Some(&*value) && squeezed(&n.text()).contains(head)
            })
            .copied();
        if found.is_some() {
            return found;
        }
    }
    None
}

/// Characters of the page's text outside links and outside comment sections (what [`article`]
/// is given as `page_prose`): a second reading that is mostly the readers' comments is
/// refused, so their text cannot make one worth trying. On a long thread under a short story
/// that saves a whole second copy and Readability run for nothing. One walk over the page,
/// no selector and no copy of its text, asked only for a short article.
pub(crate) fn prose_chars(doc: &Document) -> usize {
    let Some(body) = doc.body() else {
        return 0;
    };
    let mut count = 0;
    // (node, inside a link)
    let mut stack = vec![(body, false)];
    while let Some((node, in_link)) = stack.pop() {
        let mut child = node.first_child();
        while let Some(c) = child {
            if c.is_text() {
                if !in_link {
                    count += c.query_or(0, |n| match &n.data {
                        NodeData::Text { contents } => {
                            contents.chars().filter(|ch| !ch.is_whitespace()).count()
                        }
                        _ => 0,
                    });
                }
            } else if c.is_element() && !crate::sections::is_comment_section(&c) {
                stack.push((c, in_link || c.has_name("a")));
            }
            child = c.next_sibling();
        }
    }
    count
}

fn link_chars(doc: &Document) -> usize {
    doc.body().map_or(0, |body| {
        body.descendants_it()
            .filter(|n| n.has_name("a"))
            .map(|a| text_chars(&a))
            .sum()
    })
}

/// The share of the article's text that is link text.
fn link_share(doc: &Document) -> f64 {
    link_chars(doc) as f64 / body_chars(doc).max(1) as f64
}

#[cfg(test)]
mod tests {
    use svc_ports::{ExtractOptions, PageExtractor};

    use super::*;

    #[test]
    fn prose_is_the_text_outside_links() {
        let page = Document::from(
            r#"<body><p>Four words of prose <a href="/x">and <b>a link</b></a>.</p><nav><a href="/y">Menu</a></nav></body>"#,
        );
        assert_eq!(prose_chars(&page), "Fourwordsofprose.".len());
    }

    #[test]
    fn prose_leaves_out_the_readers_comments() {
        let page = Document::from(
            r#"<body><p>The story.</p><ol class="commentlist"><li>First!</li></ol><div id="Comments-3"><p>Me too.</p></div><div class="commentary"><p>Kept.</p></div></body>"#,
        );
        assert_eq!(prose_chars(&page), "Thestory.Kept.".len());
    }

    #[test]
    fn the_chosen_container_is_the_innermost_element_holding_both_ends() {
        let page = Document::from(
            r#"<body><div id="outer"><div id="inner"><p>The first forty characters of this article are here and then</p><p>the rest of it closes with its final forty characters at the end.</p></div><p>Other text.</p></div></body>"#,
        );
        let article = Document::from(
            "<body><p>The first forty characters of this article are here and then</p><p>the rest of it closes with its final forty characters at the end.</p></body>",
        );
        let chosen = chosen_container(&page, &article).expect("found");
        assert_eq!(chosen.attr("id").as_deref(), Some("inner"));
        let elsewhere = Document::from(
            "<body><p>Nothing of the kind is on this page, not a single word of it here.</p><p>And more of it, which the article does not hold anywhere at all.</p></body>",
        );
        assert!(chosen_container(&elsewhere, &article).is_none());
    }

    #[test]
    fn what_the_caller_excludes_stays_out_of_every_second_reading() {
        let story = "<p>The council voted on Tuesday to keep the old harbour open for one more \
            winter, after fishermen filled the hall and the mayor read out their letters one \
            by one. The vote was close: seven to six, with two members absent.</p>";
        let promo = "<p>Our partner brings you the finest holidays by the sea, with rooms that \
            look over the water and a breakfast served until noon every day of the week, so \
            that nobody has to hurry and everybody can enjoy the view of the harbour.</p>"
            .repeat(8);
        let notes = (1..=36)
            .map(|i| format!("<div><span>Note {i} here</span></div>"))
            .collect::<String>();
        let page = format!(
            r#"<html><body><article><h1>Harbour stays open</h1>{story}</article>
            <div class="promo">{promo}</div><div class="notes">{notes}</div></body></html>"#
        );
        let options = ExtractOptions {
            exclude_selectors: vec![".promo".into()],
            ..Default::default()
        };
        let e = crate::HtmlExtractor
            .extract(&page, "https://example.com/news/harbour", &options)
            .unwrap();
        assert!(
            e.content.text.contains("seven to six"),
            "{}",
            e.content.text
        );
        assert!(
            !e.content.text.contains("finest holidays"),
            "{}",
            e.content.text
        );
    }
}
