//! Other stories on a story's page: a list of their headlines after it, a row of their teaser
//! cards, a list of their linked headlines each with a line of teaser. A story is not made of
//! other articles, so [`crate::clean::strip_boilerplate`] takes these out of the article
//! Readability chose; a section front made of them keeps them.

use dom_query::{NodeRef, Selection};

use crate::clean::{is_heading, link_chars, text_chars};

/// A row of teaser cards has at least this many, each at most this long (characters other
/// than whitespace): a headline and a sentence or two.
const TEASER_CARDS: usize = 2;
const TEASER_CHARS: usize = 400;
const HEADLINE_LIST_LINKS: usize = 3;
const HEADLINE_WORDS: usize = 4;
const HEADLINE_LIST_LINK_SHARE: f64 = 0.7;
/// A paragraph of prose: this long, at most this share of it in links.
const PROSE_CHARS: usize = 100;
const PROSE_LINK_SHARE: f64 = 0.3;

/// Whether `node` is a list of links to other pages' headlines after the story ("Most read",
/// "More from this section"), which Readability merges in as a sibling of the article: three
/// or more links, most of its text theirs, four words or more per link on average (a
/// headline, where a "See also" list or a table of contents has a term or two), and no prose
/// after it.
pub(crate) fn trailing_headline_list(node: &NodeRef) -> bool {
    let links: Vec<NodeRef> = Selection::from(*node)
        .select("a[href]")
        .nodes()
        .iter()
        .filter(|a| !a.attr("href").is_some_and(|h| h.starts_with('#')))
        .copied()
        .collect();
    if links.len() < HEADLINE_LIST_LINKS {
        return false;
    }
    let words: usize = links
        .iter()
        .map(|a| a.text().split_whitespace().count())
        .sum();
    let link_chars: usize = links.iter().map(text_chars).sum();
    words >= HEADLINE_WORDS * links.len()
        && link_chars as f64 >= HEADLINE_LIST_LINK_SHARE * text_chars(node) as f64
        && !prose_follows(node)
}

/// A titled box of links is at most this long (characters other than whitespace), with at
/// least this many list items, at least this share of its text after the title in links and
/// this share in its lists.
const LINK_BOX_CHARS: usize = 800;
const LINK_BOX_ITEMS: usize = 2;
const LINK_BOX_LINK_SHARE: f64 = 0.5;
const LINK_BOX_LISTED_SHARE: f64 = 0.7;

/// Whether `node` is a box of links with a title of its own ("Related posts", "Don't miss"),
/// wherever it sits in the story: a `<div>`, `<aside>` or `<section>` whose first child is a
/// heading over a list of at least two items, short, mostly links to other pages after its
/// title, and with
/// no paragraph of prose. A section of the story has prose under its heading; the box's own
/// title is what sets it apart from a list the story cites.
pub(crate) fn titled_link_box(node: &NodeRef) -> bool {
    if !(node.has_name("div") || node.has_name("aside") || node.has_name("section")) {
        return false;
    }
    let Some(title) = node.first_element_child() else {
        return false;
    };
    if !["h2", "h3", "h4", "h5"].iter().any(|h| title.has_name(h)) {
        return false;
    }
    let chars = text_chars(node);
    if chars > LINK_BOX_CHARS {
        return false;
    }
    let items = Selection::from(*node).select("ul > li, ol > li").length();
    let rest = chars.saturating_sub(text_chars(&title));
    // Links to other pages: tabs and a table of contents link within this one.
    let links: usize = Selection::from(*node)
        .select("a[href]:not([href^='#'])")
        .nodes()
        .iter()
        .filter(|a| !a.ancestors_it(None).any(|p| p.id == title.id))
        .map(text_chars)
        .sum();
    // The list is the box: tabs over panels of text are a section of the page.
    let listed: usize = Selection::from(*node)
        .select("ul, ol")
        .nodes()
        .iter()
        .filter(|l| {
            !l.ancestors_it(None)
                .take_while(|a| a.id != node.id)
                .any(|a| a.has_name("ul") || a.has_name("ol"))
        })
        .map(text_chars)
        .sum();
    items >= LINK_BOX_ITEMS
        && rest > 0
        && links as f64 >= LINK_BOX_LINK_SHARE * rest as f64
        && listed as f64 >= LINK_BOX_LISTED_SHARE * rest as f64
        && !Selection::from(*node)
            .select("p")
            .nodes()
            .iter()
            .any(is_prose)
}

/// Whether `node` is a list of other stories' teasers ("More Scotland politics stories"):
/// three or more items, all but one of its children, each short and led by a heading that is
/// all one link (the other story's headline), with a line of teaser at most. A story's own
/// subheadings are not links, and a list of posts that is the page stays by its share of the
/// text ([`MAX_SHARE_OF_TEXT`]).
fn headline_teasers(node: &NodeRef) -> bool {
    let children = node.element_children();
    if children.len() < HEADLINE_LIST_LINKS {
        return false;
    }
    // Every block of the article is asked: most fail on their first two children, cheaply.
    // The one child that is no teaser may be a heading or a "more" link, never prose.
    let mut misses = 0;
    for item in &children {
        let short = text_chars(item) <= TEASER_CHARS;
        if !(short && led_by_headline(item)) {
            misses += 1;
            if misses > 1 || !short || item.has_name("p") {
                return false;
            }
        }
    }
    children.len() - misses >= HEADLINE_LIST_LINKS
}

/// Whether the first text of `item` is a heading made of one link of a headline's length.
fn led_by_headline(item: &NodeRef) -> bool {
    let Some(first) = item
        .descendants_it()
        .find(|n| n.is_text() && !n.text().trim().is_empty())
    else {
        return false;
    };
    let Some(heading) = first
        .ancestors_it(None)
        .take_while(|a| a.id != item.id)
        .find(is_heading)
    else {
        return false;
    };
    // A heading wrapped in a link to itself (a FAQ's, a glossary's) is not another story's.
    let links = Selection::from(heading).select("a[href]:not([href^='#'])");
    let chars = text_chars(&heading);
    links.length() == 1
        && link_chars(&heading) == chars
        && heading.text().split_whitespace().count() >= HEADLINE_WORDS
}

/// Whether `node` is a row of other stories' teaser cards ("More on climate": each an
/// `<article>` of its own with a headline, a line or two and a "read more" link): two or more
/// cards ([`is_card`]), most of its children, each short and linking away. Unlike a list of
/// headlines it may sit mid-story ("Read also"): a story is not made of other articles.
pub(crate) fn teaser_cards(node: &NodeRef) -> bool {
    let children = node.element_children();
    // Every block of every article is asked: most hold one child and need no further look.
    if children.len() < TEASER_CARDS {
        return false;
    }
    let cards: Vec<&NodeRef> = children.iter().filter(|c| is_card(c)).collect();
    cards.len() >= TEASER_CARDS
        && 2 * cards.len() >= children.len()
        && cards.iter().all(|c| {
            text_chars(c) <= TEASER_CHARS && Selection::from(**c).select("a[href]").exists()
        })
}

/// An `<article>`, or wrappers around one that hold nothing else (a theme's card frames).
fn is_card(node: &NodeRef) -> bool {
    if node.has_name("article") {
        return true;
    }
    let inner = Selection::from(*node).select("article");
    inner.length() == 1 && text_chars(node) == text_chars(&inner.nodes()[0])
}

/// A paragraph of prose: long, few links.
fn is_prose(p: &NodeRef) -> bool {
    let chars = text_chars(p);
    chars >= PROSE_CHARS && link_chars(p) as f64 <= PROSE_LINK_SHARE * chars as f64
}

/// Whether a paragraph of prose (long, few links) comes after `node` in the document.
pub(crate) fn prose_follows(node: &NodeRef) -> bool {
    let mut at = Some(*node);
    while let Some(n) = at {
        let mut sibling = n.next_element_sibling();
        while let Some(s) = sibling {
            if (s.has_name("p") && is_prose(&s))
                || Selection::from(s).select("p").nodes().iter().any(is_prose)
            {
                return true;
            }
            sibling = s.next_element_sibling();
        }
        at = n.parent().filter(|p| p.is_element() && !p.has_name("body"));
    }
    false
}

/// Lists of other stories' teasers ([`headline_teasers`]) on a page whose own prose outweighs
/// them: a story's page. On a section front the teasers are the page, and stay.
pub(crate) fn teasers_beside_a_story<'a>(
    elements: &[NodeRef<'a>],
    blocks: &[NodeRef<'a>],
) -> Vec<NodeRef<'a>> {
    let teasers: Vec<NodeRef> = blocks
        .iter()
        .filter(|n| headline_teasers(n))
        .copied()
        .collect();
    if teasers.is_empty() {
        return teasers;
    }
    let inside = |n: &NodeRef| {
        n.ancestors_it(None)
            .any(|a| teasers.iter().any(|t| t.id == a.id))
    };
    let teaser_chars: usize = teasers.iter().filter(|t| !inside(t)).map(text_chars).sum();
    let prose_chars: usize = elements
        .iter()
        .filter(|p| p.has_name("p") && is_prose(p) && !inside(p))
        .map(text_chars)
        .sum();
    if prose_chars > teaser_chars {
        teasers
    } else {
        Vec::new()
    }
}

/// Longest item of a list of links that go nowhere: a button's label or a section's title.
const BUTTON_CHARS: usize = 40;

/// A list whose every item is a short link that goes nowhere (`#`, `javascript:`, an `onclick`
/// or no `href`): a share bar's buttons ("Print", "Email", "More sharing"), which scripts
/// make work. Links to a place in the page (`#themes`) are tabs or contents and stay.
pub(crate) fn links_going_nowhere(list: &NodeRef) -> bool {
    let items: Vec<NodeRef> = list.children_it(false).filter(|c| c.is_element()).collect();
    let goes_nowhere = |a: &NodeRef| {
        a.has_attr("onclick")
            || a.attr("href").is_none_or(|h| {
                let h = h.trim();
                h.is_empty()
                    || h == "#"
                    || h.get(..11)
                        .is_some_and(|p| p.eq_ignore_ascii_case("javascript:"))
            })
    };
    items.len() >= 2
        && items.iter().all(|item| {
            let links = Selection::from(*item).select("a");
            !links.is_empty()
                && text_chars(item) <= BUTTON_CHARS
                && links.nodes().iter().all(goes_nowhere)
        })
}

#[cfg(test)]
mod tests {
    use crate::clean::{STORY, cleaned};

    /// Issue 21: a box "Related posts" (a heading over a list of other posts' links) in the
    /// middle of a story was read as the story's.
    #[test]
    fn a_titled_box_of_links_goes_wherever_it_sits_but_tabs_and_sections_stay() {
        let related = r#"<div class="floatList"><h3>Related posts</h3><ul>
            <li><a href="/2012/a">How the harbour was rebuilt in a year</a></li>
            <li><a href="/2012/b">The town that did not expect visitors</a></li></ul></div>"#;
        let text = cleaned(&format!("<body><div>{STORY}{related}{STORY}</div></body>"));
        assert!(!text.contains("Related posts"), "{text}");
        assert!(!text.contains("harbour was rebuilt"), "{text}");
        // Tabs link within the page: the section is the page's.
        let tabs = r##"<div><h2>More ways to customize</h2><ul>
            <li><a href="#themes">Themes</a></li><li><a href="#add-ons">Add-ons</a></li></ul></div>"##;
        let text = cleaned(&format!("<body><div>{STORY}{tabs}{STORY}</div></body>"));
        assert!(text.contains("Add-ons"), "{text}");
        // A section of the story that cites its sources in a list has prose of its own.
        let sources = format!(
            r#"<section><h2>Where the figures come from</h2>{STORY}<ul>
            <li><a href="https://stats.example/a">Harbour statistics 2012</a></li>
            <li><a href="https://stats.example/b">Visitor counts</a></li></ul></section>"#
        );
        let text = cleaned(&format!("<body><div>{STORY}{sources}</div></body>"));
        assert!(text.contains("Harbour statistics"), "{text}");
    }

    /// Issue 21: other stories' teaser cards after the story were kept, each with a sentence
    /// of prose of its own.
    #[test]
    fn a_row_of_teaser_cards_goes_with_its_heading_but_long_articles_stay() {
        let story = "<p>The harbour of Kirkwall was rebuilt this year, and the town now wonders \
            what it will do with the space, the boats and the visitors it did not expect.</p>"
            .repeat(5);
        let card = |i: usize| {
            format!(
                r#"<article><h3>Other story {i}</h3><p>Oil companies swap one harm for \
                another and make more plastic.</p><p><a href="/s/{i}">Read more</a></p></article>"#
            )
        };
        let html = format!(
            "<body><div>{story}<div><h2>More on climate</h2><div>{}{}{}</div></div>\
             <p>Support our work: we are funded by readers like you, every month.</p></div></body>",
            card(1),
            card(2),
            card(3)
        );
        let text = cleaned(&html);
        assert!(text.contains("Kirkwall"), "{text}");
        for gone in ["More on climate", "Other story", "Read more"] {
            assert!(!text.contains(gone), "{gone}: {text}");
        }
        // Cards framed by a theme's wrappers, each holding nothing but its card.
        let framed = |i: usize| format!("<div class=\"teaser\"><div>{}</div></div>", card(i));
        let html = format!(
            "<body><div>{story}<h2>More on this</h2><div>{}{}</div></div></body>",
            framed(1),
            framed(2)
        );
        let text = cleaned(&html);
        assert!(text.contains("Kirkwall"), "{text}");
        assert!(!text.contains("Other story"), "{text}");
        // Two long articles side by side are content (a digest, a two-part story).
        let long = |i: usize| {
            format!("<article><h3>Part {i}</h3>{story}<a href=\"/p/{i}\">more</a></article>")
        };
        let text = cleaned(&format!(
            "<body><div>{story}<div>{}{}</div></div></body>",
            long(1),
            long(2)
        ));
        assert!(text.contains("Part 2"), "{text}");
    }

    const HEADLINES: &str = r#"<ul><li><a href="/a">Chinese tourists top the spending league</a></li>
        <li><a href="/b">Pope calls for action on the abuse</a></li>
        <li><a href="/c">Deadly building collapse near the city</a></li></ul>"#;

    /// A share bar of buttons that scripts make work sat in CNN's story between its lines.
    #[test]
    fn a_list_of_links_going_nowhere_goes_but_contents_and_menus_stay() {
        let buttons = r##"<ul><li><a href="#" onclick="window.print()">Print</a></li>
            <li><a href="JavaScript:void(0)">Email</a></li><li><a>More sharing</a></li></ul>"##;
        let text = cleaned(&format!("<body><div>{STORY}{buttons}{STORY}</div></body>"));
        assert!(!text.contains("Print"), "{text}");
        assert!(!text.contains("More sharing"), "{text}");
        // One real link among them: a list of the story's.
        let mixed =
            r##"<ul><li><a href="#">Print</a></li><li><a href="/rules">Rules</a></li></ul>"##;
        let text = cleaned(&format!("<body><div>{STORY}{mixed}{STORY}</div></body>"));
        assert!(text.contains("Print") && text.contains("Rules"), "{text}");
        // A long item is a line of the story that happens to be a link.
        let long = r##"<ul><li><a href="#">Print</a></li>
            <li><a href="#">the harbour master's own account of the night the ferry sank</a></li></ul>"##;
        let text = cleaned(&format!("<body><div>{STORY}{long}{STORY}</div></body>"));
        assert!(text.contains("harbour master"), "{text}");
    }

    #[test]
    fn a_list_of_headlines_after_the_story_goes() {
        let text = cleaned(&format!(
            "<body><div>{STORY}{STORY}</div><div>{HEADLINES}</div></body>"
        ));
        assert!(text.contains("people came to read"));
        assert!(!text.contains("Pope calls"), "{text}");
    }

    /// Other stories' teasers, each a linked headline and a line (BBC's "More Scotland
    /// politics stories"), go from a story's page; a section front made of them keeps them, and
    /// a list whose headings are the story's own (not links) stays.
    #[test]
    fn other_stories_teasers_go_from_a_story_but_are_a_section_front() {
        let item = |n: usize| {
            format!(
                r#"<li><h3><a href="/s{n}">Falkirk MP fined for curfew tag offence {n}</a></h3>
                <p>The MP is fined for removing an electronic tag in breach of an order.</p></li>"#
            )
        };
        let teasers = format!("<ul>{}{}{}</ul>", item(1), item(2), item(3));
        let story = STORY.repeat(4);
        let text = cleaned(&format!("<body><div>{story}</div>{teasers}</body>"));
        assert!(text.contains("people came to read"), "{text}");
        assert!(!text.contains("curfew"), "{text}");
        let text = cleaned(&format!("<body>{teasers}{teasers}</body>"));
        assert!(text.contains("curfew tag offence 3"), "{text}");
        let own = teasers
            .replace("<a href", "<span data-href")
            .replace("</a>", "</span>");
        let text = cleaned(&format!("<body><div>{story}</div>{own}</body>"));
        assert!(text.contains("curfew tag offence 1"), "{text}");
        // Headings that link to themselves (a FAQ), or a list holding a paragraph of prose.
        let faq = teasers.replace("href=\"/s", "href=\"#s");
        let text = cleaned(&format!("<body><div>{story}</div>{faq}</body>"));
        assert!(text.contains("curfew tag offence 2"), "{text}");
        let with_prose = format!("<div>{STORY}{}{}{}</div>", item(1), item(2), item(3))
            .replace("<li>", "<div>")
            .replace("</li>", "</div>");
        let text = cleaned(&format!("<body><div>{story}</div>{with_prose}</body>"));
        assert!(text.contains("curfew tag offence 3"), "{text}");
    }

    #[test]
    fn short_link_lists_and_headline_lists_before_prose_stay() {
        // A "See also" list of terms, a table of contents, links within the story.
        let see_also = r##"<ul><li><a href="/w/Tide">Tide</a></li><li><a href="/w/Moon">Moon</a></li>
            <li><a href="/w/Sea">North Sea</a></li></ul>"##;
        let text = cleaned(&format!("<body>{STORY}{see_also}</body>"));
        assert!(text.contains("North Sea"), "{text}");
        let text = cleaned(&format!("<body>{STORY}{HEADLINES}{STORY}</body>"));
        assert!(text.contains("Pope calls"), "{text}");
    }
}
