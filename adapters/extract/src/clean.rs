//! Cleaning the article Readability took: boilerplate that sits inside the article container
//! and that Readability's scoring keeps (share bars, related-link cards, newsletter sign-ups,
//! advertiser boxes, cookie notices), named as such by the page's own class or id. Run on the
//! article, not on the page before Readability: removing these from the page changed which
//! container Readability chose and cost more than it gained on ../shared/corpora/articles.

use dom_query::{Document, NodeData, NodeRef, Selection};

use crate::teasers::{
    links_going_nowhere, teaser_cards, teasers_beside_a_story, titled_link_box,
    trailing_headline_list,
};

/// Words of a class or id that name boilerplate when they are a whole word of it
/// (`share-bar`, `related_posts`, `ad slot`).
const BOILERPLATE_WORDS: &[&str] = &[
    "share",
    "shares",
    "sharing",
    "social",
    "related",
    "newsletter",
    "newsletters",
    "promo",
    "promos",
    "advert",
    "advertisement",
    "advertising",
    "ad",
    "ads",
    "sponsor",
    "sponsored",
    "cookie",
    "cookies",
    "consent",
    "outbrain",
    "taboola",
    "breadcrumb",
    "breadcrumbs",
    "subscribe",
    "signup",
    "disclosure",
    "print",
    "loading",
    "menu",
    "footer",
    "copyright",
    "credits",
    "adv",
    "flyout",
    "noprint",
    "tags",
    "paywall",
    "crumb",
    "crumbs",
    // WordPress themes' "This entry was posted on ... and is filed under ...".
    "postmetadata",
];

/// Words of a class or id that name a box shown over the page when something is clicked (a
/// sign-up form, a comment form's error messages). Only on a box ([`OVERLAY_BOXES`]) without
/// pictures: on a link, a figure or a gallery they name what opens one (Yahoo's article
/// pictures are `go-to-slideshow-lightbox`, Magnific Popup's galleries `popup-gallery`), and
/// on a span a glossary's tooltip. Not "dialog": a conversation's lines are `p.dialog`.
const OVERLAY_WORDS: &[&str] = &["modal", "popup"];
const OVERLAY_BOXES: &[&str] = &["div", "section", "aside", "form", "dialog"];
const PICTURES: &[&str] = &["img", "picture", "figure", "video", "iframe"];

/// Words of a class or id that name a card linking to another page (`teaser`): boilerplate
/// only when mostly links, since a story's own teaser (its lead) has the same name.
const CARD_WORDS: &[&str] = &["teaser", "teasers"];

/// Starts of a class or id word glued from several (`sharedaddy`, `socialmedia`,
/// `relatedposts`, `newsletterbox`, `advertisement1`).
const BOILERPLATE_PREFIXES: &[&str] = &[
    "share",
    "social",
    "related",
    "newsletter",
    "advert",
    "outbrain",
    "taboola",
    "breadcrumb",
    "kommentar",
];

/// Ends of a glued class or id word (`entryfooter`, `postfooter`).
const BOILERPLATE_SUFFIXES: &[&str] = &["footer"];

/// Elements never removed by name: the page's frame and its article containers.
const KEPT_ELEMENTS: &[&str] = &["html", "body", "main", "article"];

/// Boilerplate is short (a share bar, a sign-up box, an ad slot) or mostly links (a list of
/// related cards). Longer text with few links is content whatever its name says: a theme's
/// `share_wrapper` around the story, `js-social-images` behaviour hooks, WordPress's
/// `entry-category-advertising` on the post itself.
const SHORT_TEXT_CHARS: usize = 200;

const LINK_DENSE: f64 = 0.5;
/// Whatever it is named, an element holding most of the article is the article (a post whose
/// whole body a theme wraps in `ad-wrapper`): removing it would leave nothing.
const MAX_SHARE_OF_TEXT: f64 = 0.5;

fn names_boilerplate(value: &str) -> bool {
    value
        .split(|c: char| !c.is_ascii_alphanumeric())
        .filter(|w| !w.is_empty())
        .any(|w| {
            let w = w.to_ascii_lowercase();
            BOILERPLATE_WORDS.contains(&w.as_str())
                || BOILERPLATE_PREFIXES.iter().any(|p| w.starts_with(p))
                || BOILERPLATE_SUFFIXES.iter().any(|p| w.ends_with(p))
        })
}

fn is_boilerplate(node: &NodeRef) -> bool {
    if node
        .node_name()
        .is_some_and(|n| KEPT_ELEMENTS.contains(&n.as_ref()))
    {
        return false;
    }
    let overlay = |v: &str| {
        v.split(|c: char| !c.is_ascii_alphanumeric())
            .any(|w| OVERLAY_WORDS.iter().any(|o| w.eq_ignore_ascii_case(o)))
            && OVERLAY_BOXES.iter().any(|n| node.has_name(n))
            && !node
                .descendants_it()
                .any(|d| PICTURES.iter().any(|p| d.has_name(p)))
    };
    ["class", "id"].iter().any(|a| {
        node.attr(a)
            .is_some_and(|v| names_boilerplate(&v) || overlay(&v))
    }) || is_hidden(node)
}

/// Whether an element's class hides it ([`HIDDEN_CLASSES`], or hidden from desktops).
fn is_hidden(node: &NodeRef) -> bool {
    node.attr("class").is_some_and(|v| {
        v.split_whitespace().any(|t| {
            HIDDEN_CLASSES.iter().any(|h| t.eq_ignore_ascii_case(h))
                || t.to_ascii_lowercase().contains("hide-from-desktop")
        })
    })
}

/// Hidden copies of text the article shows elsewhere (a print or mobile version of the story
/// kept beside it), however long: a short hidden element is boilerplate already, a long one
/// may be the only copy of the story (some sites reveal it by script), so only a copy goes.
fn hidden_copies<'a>(elements: &[NodeRef<'a>], body: &NodeRef<'a>) -> Vec<NodeRef<'a>> {
    let words = |n: &NodeRef| n.text().split_whitespace().collect::<Vec<_>>().join(" ");
    let mut hidden: Vec<NodeRef<'a>> = elements
        .iter()
        .filter(|n| n.has_attr("class") && is_hidden(n) && text_chars(n) > SHORT_TEXT_CHARS)
        .copied()
        .collect();
    if hidden.is_empty() {
        return hidden;
    }
    let all = words(body);
    hidden.retain(|n| {
        let copy = words(n);
        all.matches(copy.as_str()).take(2).count() == 2
    });
    hidden
}

/// Whole class names of elements no reader of the page sees: hidden by its style sheet, or
/// WordPress's stand-in for an embedded post (`wp-embedded-content`, hidden once the post's
/// frame loads). Not `visually-hidden` or `sr-only`: that text is for screen readers, and an
/// agent reads like one.
const HIDDEN_CLASSES: &[&str] = &[
    "hide",
    "hidden",
    "d-none",
    "is-hidden",
    "wp-embedded-content",
];

/// Words that, beside `author`, name a box about the writer (`post-author-bio`,
/// `author-box`, `about-author`): a biography under the story, not the story.
const AUTHOR_BOX_WORDS: &[&str] = &[
    "bio",
    "box",
    "info",
    "description",
    "about",
    "profile",
    "card",
];
/// Words that name a notice about the story (an advertiser or editorial disclosure, a
/// publisher's disclaimer, a note that links to shops earn a commission).
const NOTICE_WORDS: &[&str] = &["disclosure", "disclaimer", "affiliate"];
/// An author box or a notice is a few sentences at most: longer than other boilerplate
/// ([`SHORT_TEXT_CHARS`]), shorter than a profile page's story of a life.
const NAMED_BOX_CHARS: usize = 600;

/// Whether an element is a box about the story's author or a notice about it, by its class or
/// id words: `author` glued to or beside a box word, or on a `<section>` or `<aside>` of its
/// own; a notice's word.
fn is_named_box(node: &NodeRef) -> bool {
    ["class", "id"].iter().any(|a| {
        node.attr(a).is_some_and(|v| {
            let words: Vec<String> = v
                .split(|c: char| !c.is_ascii_alphanumeric())
                .filter(|w| !w.is_empty())
                .map(|w| w.to_ascii_lowercase())
                .collect();
            let has = |list: &[&str]| words.iter().any(|w| list.contains(&w.as_str()));
            let glued = |w: &String| {
                w.strip_prefix("author")
                    .is_some_and(|rest| AUTHOR_BOX_WORDS.contains(&rest))
            };
            has(NOTICE_WORDS)
                || words.iter().any(glued)
                || (has(&["author"])
                    && (has(AUTHOR_BOX_WORDS)
                        || node.has_name("section")
                        || node.has_name("aside")))
        })
    }) && text_chars(node) <= NAMED_BOX_CHARS
}

/// Whether an element is named a card ([`CARD_WORDS`]) and its text is mostly links.
fn is_link_card(node: &NodeRef) -> bool {
    has_word(node, CARD_WORDS) && link_chars(node) as f64 >= LINK_DENSE * text_chars(node) as f64
}

/// Whether a word of the element's class or id (split at anything not a letter or digit:
/// `c-article-lead` is `c`, `article`, `lead`) is one of `words`, in any case.
pub(crate) fn has_word(node: &NodeRef, words: &[&str]) -> bool {
    ["class", "id"].iter().any(|a| {
        node.attr(a).is_some_and(|v| {
            v.split(|c: char| !c.is_ascii_alphanumeric())
                .any(|w| words.iter().any(|name| w.eq_ignore_ascii_case(name)))
        })
    })
}

/// Characters of `node`'s text other than whitespace: the measure of every length here.
/// Asked of most elements several times over, so the text nodes are counted where they are,
/// not copied into one string first.
pub(crate) fn text_chars(node: &NodeRef) -> usize {
    std::iter::once(*node)
        .chain(node.descendants_it())
        .map(|n| {
            n.query_or(0, |t| match &t.data {
                NodeData::Text { contents } => non_whitespace_chars(contents),
                _ => 0,
            })
        })
        .sum()
}

/// `text.chars().filter(|c| !c.is_whitespace()).count()`, bytewise when the text is ASCII.
fn non_whitespace_chars(text: &str) -> usize {
    if text.is_ascii() {
        // `char::is_whitespace` on ASCII: tab, line feed, vertical tab, form feed, carriage
        // return and space (`u8::is_ascii_whitespace` leaves out the vertical tab).
        text.bytes()
            .filter(|b| !matches!(b, b'\t' | b'\n' | b'\x0B' | b'\x0C' | b'\r' | b' '))
            .count()
    } else {
        text.chars().filter(|c| !c.is_whitespace()).count()
    }
}

/// `text` without its whitespace: how texts are compared across documents, whose spacing
/// differs.
pub(crate) fn squeezed(text: &str) -> String {
    text.chars().filter(|c| !c.is_whitespace()).collect()
}

fn looks_like_boilerplate(node: &NodeRef) -> bool {
    let chars = text_chars(node);
    if chars <= SHORT_TEXT_CHARS {
        return true;
    }
    link_chars(node) as f64 >= LINK_DENSE * chars as f64
}

/// An element named by a class or an id: the boxes the cleaning rules judge by their names.
pub(crate) fn is_named(node: &NodeRef) -> bool {
    node.is_element() && (node.has_attr("class") || node.has_attr("id"))
}

/// Characters of `node`'s link text (other than whitespace).
pub(crate) fn link_chars(node: &NodeRef) -> usize {
    Selection::from(*node)
        .select("a")
        .nodes()
        .iter()
        .map(text_chars)
        .sum()
}

/// Removes the elements whose class or id names them boilerplate and whose text looks it.
pub fn strip_boilerplate(doc: &Document) {
    strip_ad_labels(doc);
    strip_pixels(doc);
    let Some(body) = doc.body() else {
        return;
    };
    // The body's elements in the page's order, walked once for every kind of box below (a
    // selector per kind walked the tree six times, each element's ancestors too).
    let elements: Vec<NodeRef> = body.descendants_it().filter(|n| n.is_element()).collect();
    let of = |names: &'static [&'static str]| {
        elements
            .iter()
            .filter(move |n| names.iter().any(|name| n.has_name(name)))
    };
    let mut candidates: Vec<NodeRef> = elements
        .iter()
        .filter(|n| is_named(n))
        .filter(|n| is_boilerplate(n) || is_link_card(n) || is_named_box(n))
        .copied()
        .collect();
    candidates.extend(of(&["ul", "ol", "div"]).filter(|n| trailing_headline_list(n)));
    // Teaser cards are known by their shape, not their text: each has prose of its own.
    let mut cards: Vec<NodeRef> = of(&["div", "section", "ul"])
        .filter(|n| teaser_cards(n))
        .copied()
        .collect();
    let blocks: Vec<NodeRef> = of(&["div", "section", "ul", "ol"]).copied().collect();
    let total = text_chars(&body) as f64;
    cards.extend(teasers_beside_a_story(&elements, &blocks));
    cards.extend(hidden_copies(&elements, &body));
    cards.extend(of(&["div", "aside", "section"]).filter(|n| titled_link_box(n)));
    cards.extend(of(&["ul", "ol"]).filter(|n| links_going_nowhere(n)));
    candidates.extend(cards.iter().copied());
    for node in candidates {
        // Already gone with an ancestor: nothing to weigh.
        if node.ancestors_it(None).any(|a| a.is_document())
            && (looks_like_boilerplate(&node)
                || is_named_box(&node)
                || cards.iter().any(|c| c.id == node.id))
            && (text_chars(&node) as f64) <= MAX_SHARE_OF_TEXT * total
        {
            // A heading right before the box is its title ("Related stories", "Das könnte
            // Sie auch interessieren"): it goes with the box rather than stand alone.
            if let Some(heading) = node
                .prev_element_sibling()
                .filter(is_heading)
                .filter(|_| !text_follows_in_section(&node))
            {
                heading.remove_from_parent();
            }
            node.remove_from_parent();
        }
    }
}

/// Whether an `<img>` is a tracking pixel or hidden: a side of at most one pixel, or no
/// display or visibility. It shows the reader nothing, and in Markdown it is a line of an ad
/// server's URL (CNET's were 600 characters each). A picture sized by its style or its
/// `sizes` says 0 in its attributes and is drawn whole (Next.js's responsive images).
fn is_pixel(img: &NodeRef) -> bool {
    let tiny = |a: &str| {
        img.attr(a).is_some_and(|v| {
            v.trim()
                .trim_end_matches("px")
                .trim()
                .parse::<f32>()
                .is_ok_and(|n| n <= 1.0)
        })
    };
    let hidden = img.attr("style").is_some_and(|style| {
        let style: String = style
            .chars()
            .filter(|c| !c.is_whitespace())
            .collect::<String>()
            .to_ascii_lowercase();
        style.contains("display:none") || style.contains("visibility:hidden")
    });
    let styled = img.has_attr("sizes")
        || img.has_attr("srcset")
        || img.attr("style").is_some_and(|style| {
            let style = style.to_ascii_lowercase();
            style.contains("width") || style.contains("height")
        });
    (!styled && (tiny("width") || tiny("height"))) || hidden
}

fn strip_pixels(doc: &Document) {
    let pixels: Vec<NodeRef> = doc
        .select("body img")
        .nodes()
        .iter()
        .filter(|img| is_pixel(img))
        .copied()
        .collect();
    for img in &pixels {
        img.remove_from_parent();
    }
}

/// What an empty ad slot says, in the languages of the corpora's sites and their neighbours.
const AD_LABELS: &[&str] = &[
    "advertisement",
    "advertising",
    "anzeige",
    "werbung",
    "reklama",
    "publicidad",
    "publicité",
    "pubblicità",
    "publicidade",
    "advertentie",
    "annons",
    "mainos",
];

fn is_ad_label(text: &str) -> bool {
    let text = text.trim().trim_end_matches(':').trim_end();
    // The labels are short: a long text needs no lower-casing to be ruled out.
    text.len() <= 16 && AD_LABELS.contains(&text.to_lowercase().as_str())
}

/// Whether `parent`'s children are `child` and blank text at most (looked at up to a few).
fn holds_only(parent: &NodeRef, child: &NodeRef) -> bool {
    const FEW: usize = 8;
    let mut seen = 0;
    let mut at = parent.first_child();
    while let Some(c) = at {
        seen += 1;
        if seen > FEW
            || !(c.id == child.id || (c.is_text() && c.text().trim().is_empty()) || c.is_comment())
        {
            return false;
        }
        at = c.next_sibling();
    }
    true
}

/// Removes the elements whose whole text is an ad slot's label ("Advertisement", "Anzeige"):
/// the slot's ad is gone, its label stays behind. Says whether any went.
fn strip_ad_labels(doc: &Document) -> bool {
    let Some(body) = doc.body() else {
        return false;
    };
    // From the label's text up to the outermost element holding nothing else. Each step
    // looks at a few children only: a page of a hundred thousand labels in one parent costs
    // a hundred thousand steps, not that many reads of the parent's text.
    let labels: Vec<NodeRef> = body
        .descendants_it()
        .filter(|n| n.is_text() && is_ad_label(&n.text()))
        .filter_map(|t| {
            let mut at = t.parent()?;
            while let Some(p) = at.parent() {
                if p.id == body.id || !holds_only(&p, &at) {
                    break;
                }
                at = p;
            }
            (at.id != body.id).then_some(at)
        })
        .collect();
    let mut removed = false;
    for node in labels {
        if node.ancestors_it(None).any(|a| a.is_document()) {
            node.remove_from_parent();
            removed = true;
        }
    }
    removed
}

/// Whether text other than a heading follows `node` before the next heading of its parent:
/// then the heading before it titles that text too and stays.
fn text_follows_in_section(node: &NodeRef) -> bool {
    let mut at = node.next_element_sibling();
    while let Some(n) = at {
        if is_heading(&n) {
            return false;
        }
        if text_chars(&n) > 0 {
            return true;
        }
        at = n.next_element_sibling();
    }
    false
}

pub(crate) fn is_heading(node: &NodeRef) -> bool {
    ["h2", "h3", "h4", "h5", "h6"]
        .iter()
        .any(|h| node.has_name(h))
}

/// A paragraph of a story: prose, in the tests' pages.
#[cfg(test)]
pub(crate) const STORY: &str = "<p>The article text that people came to read, long enough to be prose in a paragraph of a story, with a second clause that carries on.</p>";

/// The body's text, words joined by one space, once the boilerplate is stripped.
#[cfg(test)]
pub(crate) fn cleaned(html: &str) -> String {
    let doc = Document::from(html);
    strip_boilerplate(&doc);
    doc.select("body")
        .text()
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    proptest! {
        // Every whitespace class of character: ASCII and not, and the ASCII ones `u8`'s own
        // test leaves out.
        #[test]
        fn counting_in_place_agrees_with_the_text(
            parts in prop::collection::vec("[ \t\n\x0B\x0C\r\u{85}\u{a0}\u{2003}\u{3000}a-zé€]{0,12}", 0..6)
        ) {
            let html = format!("<body><div>{}</div></body>", parts.iter().map(|p| format!("<p>{p}<b>{p}</b></p>")).collect::<String>());
            let doc = Document::from(html.as_str());
            let div = doc.select("div").nodes()[0];
            let expected = div.text().chars().filter(|c| !c.is_whitespace()).count();
            prop_assert_eq!(text_chars(&div), expected);
            for p in &parts {
                prop_assert_eq!(non_whitespace_chars(p), p.chars().filter(|c| !c.is_whitespace()).count());
            }
        }
    }

    /// Issue 21: boxes shown when something is clicked (a course's sign-up, a comment form's
    /// error messages) were read as the article's last paragraphs.
    #[test]
    fn overlays_go_and_what_opens_one_stays() {
        let story = STORY.repeat(3);
        let html = format!(
            r#"<body><article>{story}
            <div class="ct-modal"><h3>Du möchtest glücklicher sein?</h3><p>Unser Mini-Kurs.</p></div>
            <div id="comment-popup">Ihr Kommentar ist zu lang.</div>
            <figure class="go-to-slideshow-lightbox modal-trigger"><img src="/a.jpg"><figcaption>The harbour at dawn.</figcaption></figure>
            <p><a class="open-modal" href="/gallery">Twelve pictures of the harbour</a></p>
            </article></body>"#
        );
        let text = cleaned(&html);
        for gone in ["glücklicher", "Mini-Kurs", "zu lang"] {
            assert!(!text.contains(gone), "{gone}: {text}");
        }
        for kept in ["The harbour at dawn.", "Twelve pictures", "carries on."] {
            assert!(text.contains(kept), "{kept}: {text}");
        }
        // A conversation's lines, a gallery that opens over the page, a glossary's tooltip.
        let html = format!(
            r#"<body><article>{story}
            <p class="dialog"><strong>[M]</strong> Hello, José!</p>
            <div class="popup-gallery"><a href="/a.jpg"><img src="/a-small.jpg"></a></div>
            <p>The <span class="popup">ebb</span> came at noon.</p>
            </article></body>"#
        );
        let text = cleaned(&html);
        for kept in ["Hello, José!", "The ebb came at noon."] {
            assert!(text.contains(kept), "{kept}: {text}");
        }
        let doc = Document::from(html.as_str());
        strip_boilerplate(&doc);
        assert_eq!(doc.select(".popup-gallery img").length(), 1);
    }

    #[test]
    fn share_related_newsletter_and_ad_boxes_go() {
        let story =
            "<p>The article text that people came to read, long enough to matter.</p>".repeat(5);
        let html = format!(
            r##"<body><article>{story}
            <div class="share-bar"><a href="#">Diesen Artikel teilen</a></div>
            <div id="relatedPosts"><a href="/x">Das könnte Sie auch interessieren</a></div>
            <div class="box newsletter_signup">Sign up for our newsletter</div>
            <div class="ad slot">Advertisement</div>
            <div id="loading" class="loadingAnimation"><span>Lade weitere Inhalte</span></div>
            <ul class="c-menu-print"><li>Diese Seite:</li><li><a href="#">drucken</a></li></ul>
            <div class="adv adv-300"><span class="adv-info">Reklama</span></div>
            <div class="c-flyout"><p>Jede kleine Spende hilft</p></div>
            <div class="noprint">Kommentare schreiben</div>
            <div class="ds-tags"><a href="/t/1">Vegetarisch</a> <a href="/t/2">Lactose</a></div>
            <div class="content-form-account-paywall"><h2>Pour lire la suite</h2></div>
            <div class="entry-crumbs"><a href="/">Home</a> Boxen</div>
            <div class="kommentarContent"><p>Sie sind aktuell nicht eingeloggt.</p></div>
            <div class="collapse-box a-u-hide-from-desktop"><p>Highlights aus dem Heft:</p></div>
            <p class="hidden">Zum Merkzettel hinzufügen</p>
            <blockquote class="wp-embedded-content"><a href="/other">Luftwaffe übt am Himmel</a></blockquote>
            <div class="post-author-bio"><p>Jane Doe studied sport science before she wrote about swimming for twenty years.</p></div>
            <section class="box teaser"><a href="/other"><span>So kommt die Batterie durch den Winter</span></a></section>
            <figure><figcaption><span>Reklama</span></figcaption></figure><p>Anzeige:</p>
            <div class="entryfooter"><p>Kommentare geschlossen</p></div>
            <p class="postmetadata alt"><small>This entry was posted on Monday and is filed under <a href="/c">News</a>.</small></p></article></body>"##
        );
        let text = cleaned(&html);
        assert!(text.contains("people came to read"));
        for gone in [
            "filed under",
            "teilen",
            "interessieren",
            "Sign up",
            "Advertisement",
            "Lade weitere",
            "Diese Seite",
            "Reklama",
            "Anzeige",
            "Lactose",
            "la suite",
            "Boxen",
            "eingeloggt",
            "Highlights",
            "Merkzettel",
            "Luftwaffe",
            "Jane Doe",
            "Spende",
            "schreiben",
            "Batterie",
            "geschlossen",
        ] {
            assert!(!text.contains(gone), "{gone} kept: {text}");
        }
    }

    #[test]
    fn an_author_box_goes_but_the_byline_and_a_long_profile_stay() {
        let story =
            "<p>The article text that people came to read, long enough to matter.</p>".repeat(6);
        let html = format!(
            r#"<body><article><p class="author">By Jane Doe</p>{story}
            <div class="authorbox">Jane Doe writes about cities.</div>
            <section class="post-author clearfix"><p>Jane studied sport science.</p></section>
            <section class="editorial-disclosure"><p>{}</p></section>
            <section class="Downloads__Affiliate"><p>For links on this page we may be paid a
            commission by the seller.</p></section></article></body>"#,
            "This post contains references to products from our advertisers. ".repeat(4)
        );
        let text = cleaned(&html);
        assert!(text.contains("By Jane Doe"), "{text}");
        assert!(!text.contains("commission"), "{text}");
        assert!(!text.contains("writes about cities"), "{text}");
        assert!(!text.contains("sport science"), "{text}");
        assert!(!text.contains("advertisers"), "{text}");
        // A profile page: the writer's life is the article.
        let life =
            "<p>Jane Doe was born by the sea and wrote for the harbour paper for forty years.</p>"
                .repeat(12);
        let text = cleaned(&format!(
            r#"<body><article><div class="author-profile">{life}</div></article></body>"#
        ));
        assert!(text.contains("born by the sea"), "{text}");
    }

    #[test]
    fn ad_labels_go_one_by_one_however_many_share_a_parent() {
        let story =
            "<p>The article text that people came to read, long enough to matter.</p>".repeat(5);
        let labels = "<span>Anzeige</span> ".repeat(2_000);
        let doc = Document::from(
            format!(r#"<body><article>{story}<div>{labels}<b>Werbung</b></div><div><p> Advertisement: </p></div></article></body>"#)
                .as_str(),
        );
        assert!(strip_ad_labels(&doc));
        let text = doc.select("body").text().to_string();
        assert!(text.contains("people came to read"), "{text}");
        for gone in ["Anzeige", "Werbung", "Advertisement"] {
            assert!(!text.contains(gone), "{gone} kept");
        }
        // A label inside a sentence is a word of it.
        let doc = Document::from("<body><p>Die Anzeige erschien am Montag.</p></body>");
        assert!(!strip_ad_labels(&doc));
    }

    #[test]
    fn tracking_pixels_and_hidden_images_go_but_pictures_stay() {
        let doc = Document::from(
            r#"<body><p>Story.</p><img src="/ad/dot.gif" HEIGHT="0" WIDTH="0">
            <img src="/t.gif" width="1px" height="1"><img src="/h.png" style="display: none">
            <img src="/harbour.jpg" width="640" height="480" alt="The harbour"><img src="/b.png">
            <img src="/next.jpg" width="0" height="0" sizes="100vw" style="width:100%;height:auto">
            <img src="/v.gif" style="visibility: hidden"></body>"#,
        );
        strip_boilerplate(&doc);
        let kept: Vec<String> = doc
            .select("img")
            .nodes()
            .iter()
            .filter_map(|i| i.attr("src").map(|s| s.to_string()))
            .collect();
        assert_eq!(kept, ["/harbour.jpg", "/b.png", "/next.jpg"]);
    }

    #[test]
    fn text_for_screen_readers_and_responsive_classes_stay() {
        let story =
            "<p>The article text that people came to read, long enough to matter.</p>".repeat(5);
        let html = format!(
            r#"<body><article>{story}<span class="visually-hidden">Photo: the harbour at dawn</span>
            <p class="hidden-xs">Shown on every screen but the smallest.</p></article></body>"#
        );
        let text = cleaned(&html);
        assert!(text.contains("the harbour at dawn"), "{text}");
        assert!(text.contains("every screen"), "{text}");
    }

    #[test]
    fn a_teaser_linking_away_goes_but_the_storys_own_teaser_stays() {
        let story = "<p>The article text that people came to read, long enough to matter.</p>";
        let html = format!(
            r#"<body><article><div class="teaser-text"><p>Najla Bouden ist die erste Regierungschefin Tunesiens.</p></div>
            {story}{story}{story}<div class="teaser"><a href="/x">Ein anderer Artikel</a></div></article></body>"#
        );
        let text = cleaned(&html);
        assert!(text.contains("Najla Bouden"), "{text}");
        assert!(!text.contains("anderer Artikel"), "{text}");
    }

    #[test]
    fn an_element_holding_most_of_the_article_stays_whatever_its_name() {
        let story = "<p>The article text that people came to read, long enough to matter.</p>";
        let html =
            format!(r#"<body><div class="ad-wrapper">{story}</div><p>Short tail.</p></body>"#);
        assert!(cleaned(&html).contains("people came to read"));
    }

    #[test]
    fn words_inside_other_words_and_big_wrappers_stay() {
        // `promoted`, `shadow`, `loaded` hold no boilerplate word; a wrapper named `social`
        // holding long text with few links is the page.
        let story =
            "<p>The article text that people came to read, long enough to matter.</p>".repeat(5);
        let html = format!(
            r#"<body><div class="node--promoted shadow">Promoted headline</div>
            <div class="social-layout">{story}</div><article class="related">Kept</article></body>"#
        );
        let text = cleaned(&html);
        assert!(text.contains("Promoted headline"));
        assert!(text.contains("people came to read"));
        assert!(text.contains("Kept"));
    }

    #[test]
    fn a_heading_goes_with_the_box_it_titles() {
        let html = format!(
            r#"<body><div>{STORY}<h2>You may also like</h2>
            <div class="related"><a href="/a">One</a> <a href="/b">Two</a></div></div></body>"#
        );
        let text = cleaned(&html);
        assert!(text.contains("people came to read"));
        assert!(!text.contains("also like"), "{text}");
    }

    #[test]
    fn a_heading_over_text_and_a_box_stays() {
        let html = format!(
            r#"<body><h2>How it works</h2><div class="share">Share</div>{STORY}<p>The end.</p></body>"#
        );
        let text = cleaned(&html);
        assert!(text.contains("How it works"), "{text}");
        assert!(!text.contains("Share"), "{text}");
    }

    /// Issue 21: a story's hidden second copy (longer than any boilerplate) was read twice.
    #[test]
    fn a_hidden_copy_of_the_story_goes_but_a_hidden_only_copy_stays() {
        let story = STORY.repeat(3);
        let html = format!(r#"<body><div>{story}</div><div class="hidden">{story}</div></body>"#);
        let text = cleaned(&html);
        assert_eq!(text.matches("people came to read").count(), 3, "{text}");
        // The only copy, hidden until a script shows it, is the story.
        let html = format!(r#"<body><p>Intro.</p><div class="hidden">{story}</div></body>"#);
        let text = cleaned(&html);
        assert_eq!(text.matches("people came to read").count(), 3, "{text}");
    }
}
