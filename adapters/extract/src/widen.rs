//! A story cut into like blocks: page builders (WPBakery's `vc_row`, Elementor's sections)
//! and old table layouts put each part of one text in a sibling block of the same kind, and
//! Readability, scoring containers, takes the longest part alone. Such a family of blocks is
//! noted on the page before Readability reads it; when the article turns out to be one of its
//! members, the article becomes every member holding prose, in the page's order.

use dom_query::{Document, NodeRef, Selection};

use crate::clean::{squeezed, text_chars};

/// A family has at least this many members holding prose...
const MIN_MEMBERS: usize = 3;
/// ...each at least this long (characters other than whitespace)...
const MEMBER_CHARS: usize = 200;
/// ...with at most this share of it in links (not a row of teaser cards).
const MEMBER_LINK_SHARE: f64 = 0.3;
/// The article is widened only when it is at most this share of the family's prose: one part
/// of several, not the story with a few notes beside it.
const MAX_ARTICLE_SHARE: f64 = 0.6;
/// Characters of the article's start (whitespace aside) that show which member holds it.
const PROBE_CHARS: usize = 40;
/// Blocks that a layout repeats; paragraphs and list items are the text itself.
const BLOCKS: &[&str] = &["div", "section", "article", "table"];
/// What never is content in a member taken from the page as it came.
const NOT_CONTENT: &str = "script, style, noscript, template, iframe, object, embed, svg, canvas, \
    form, button, input, select, textarea, nav";

/// The prose members of a family: their text without whitespace and their outer HTML, in
/// the page's order.
#[derive(Debug, Default)]
pub(crate) struct Family {
    members: Vec<(String, String)>,
}

fn link_chars(node: &NodeRef) -> usize {
    Selection::from(*node)
        .select("a")
        .nodes()
        .iter()
        .map(text_chars)
        .sum()
}

fn is_prose(node: &NodeRef) -> bool {
    let chars = text_chars(node);
    chars >= MEMBER_CHARS
        && link_chars(node) as f64 <= MEMBER_LINK_SHARE * chars as f64
        && !crate::clean::is_comment_section(node)
        && !crate::clean::has_word(node, &["comment", "comments"])
}

/// Children of `parent` of one block kind and first class word (`ds-box recipe-header`,
/// `ds-box recipe-ingredients`: parts of one recipe), when at least [`MIN_MEMBERS`] hold prose.
fn family_of(parent: &NodeRef) -> Vec<Family> {
    let children = parent.element_children();
    if children.len() < MIN_MEMBERS {
        return Vec::new();
    }
    // (block name, first class word) of each child that is a named block; unnamed blocks are a page's
    // frame as often as a story's parts, except tables (old layouts name nothing).
    let keys: Vec<Option<(String, String)>> = children
        .iter()
        .map(|n| {
            let name = n.node_name()?;
            if !BLOCKS.contains(&name.as_ref()) {
                return None;
            }
            let class = n
                .attr("class")
                .and_then(|c| c.split_whitespace().next().map(str::to_string))
                .unwrap_or_default();
            (!class.is_empty() || name.as_ref() == "table").then(|| (name.to_string(), class))
        })
        .collect();
    let mut order: Vec<usize> = (0..children.len()).filter(|&i| keys[i].is_some()).collect();
    // Stable: each group keeps the page's order.
    order.sort_by(|&a, &b| keys[a].cmp(&keys[b]));
    order
        .chunk_by(|&a, &b| keys[a] == keys[b])
        .filter(|group| group.len() >= MIN_MEMBERS)
        .filter_map(|group| {
            let prose: Vec<&NodeRef> = group
                .iter()
                .map(|&i| &children[i])
                .filter(|c| is_prose(c))
                .collect();
            (prose.len() >= MIN_MEMBERS).then(|| Family {
                members: prose
                    .iter()
                    .map(|m| (squeezed(&m.text()), m.html().to_string()))
                    .collect(),
            })
        })
        .collect()
}

/// The page's families of like blocks holding prose.
pub(crate) fn families(page: &Document) -> Vec<Family> {
    let Some(body) = page.body() else {
        return Vec::new();
    };
    let mut found = family_of(&body);
    for node in body.descendants_it() {
        if node.is_element() && node.element_children().len() >= MIN_MEMBERS {
            found.extend(family_of(&node));
        }
    }
    found
}

/// Replaces the article in `doc` by every member of the family one of whose members it is;
/// says whether it did. The member Readability chose keeps Readability's cleaning; the others
/// lose what is never content.
pub(crate) fn widen(doc: &Document, families: &[Family]) -> bool {
    let Some(body) = doc.body() else {
        return false;
    };
    let article = squeezed(&body.text());
    let chars = article.chars().count();
    let probe: String = article.chars().take(PROBE_CHARS).collect();
    if probe.chars().count() < PROBE_CHARS {
        return false;
    }
    for family in families {
        // The first member holding the article's start (a listing may repeat an entry).
        let Some(chosen) =
            (0..family.members.len()).find(|&i| family.members[i].0.contains(&probe))
        else {
            continue;
        };
        let total: usize = family.members.iter().map(|m| m.0.chars().count()).sum();
        let member_chars = family.members[chosen].0.chars().count();
        if chars > member_chars || chars as f64 > MAX_ARTICLE_SHARE * total as f64 {
            continue;
        }
        let own = body.inner_html().to_string();
        let mut html = String::new();
        for (i, (_, member)) in family.members.iter().enumerate() {
            if i == chosen {
                html.push_str(&own);
            } else {
                let part = Document::from(member.as_str());
                part.select(NOT_CONTENT).remove();
                html.push_str(&part.select("body").inner_html());
            }
        }
        body.set_html(html);
        return true;
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    fn part(n: usize) -> String {
        format!(
            r#"<div class="vc_row part-{n}"><h2>Part {n}</h2><p>Part {n} of the story, long enough to be prose: {}</p></div>"#,
            "words of the story carried on ".repeat(8)
        )
    }

    /// The article Readability would give when it takes part 2 alone.
    fn article_of_part(n: usize) -> Document {
        Document::from(format!("<body>{}</body>", part(n)).as_str())
    }

    #[test]
    fn a_story_in_like_blocks_is_read_whole_in_order() {
        let page = Document::from(
            format!(
                r#"<body><div class="content">{}{}<div class="vc_row"><a href="/shop">Shop</a></div>{}</div></body>"#,
                part(1),
                part(2),
                part(3)
            )
            .as_str(),
        );
        let families = families(&page);
        assert_eq!(families.len(), 1);
        let article = article_of_part(2);
        assert!(widen(&article, &families));
        let text = article.select("body").text().to_string();
        let at = |s: &str| {
            text.find(s)
                .unwrap_or_else(|| panic!("{s} missing: {text}"))
        };
        assert!(at("Part 1 of") < at("Part 2 of") && at("Part 2 of") < at("Part 3 of"));
        assert!(!text.contains("Shop"), "{text}");
    }

    #[test]
    fn teaser_rows_unnamed_blocks_and_whole_stories_are_left_alone() {
        // Three like blocks, but each mostly a link: a row of teasers.
        let teaser = |n: usize| {
            format!(
                r#"<div class="card"><a href="/{n}">{}</a><p>Short.</p></div>"#,
                "Another story's headline and its long teaser text ".repeat(5)
            )
        };
        let page = format!("<body>{}{}{}</body>", teaser(1), teaser(2), teaser(3));
        assert!(families(&Document::from(page.as_str())).is_empty());
        // Readers' comments beside the story are not a part of it.
        let page = format!(
            r#"<body>{}<article class="ds-box recipe-comments">{}</article>{}</body>"#,
            part(1),
            part(2),
            part(3)
        )
        .replace("<div class=\"vc_row", "<article class=\"ds-box")
        .replace("</div>", "</article>");
        assert!(
            families(&Document::from(page.as_str())).is_empty(),
            "{page}"
        );
        // Unnamed divs: a page's frame.
        let plain = |n: usize| part(n).replace(&format!(r#" class="vc_row part-{n}""#), "");
        let page = format!("<body>{}{}{}</body>", plain(1), plain(2), plain(3));
        assert!(families(&Document::from(page.as_str())).is_empty());
        // An article not in the family, or most of it, stays as it is.
        let page = format!("<body>{}{}{}</body>", part(1), part(2), part(3));
        let families = families(&Document::from(page.as_str()));
        let other = Document::from(
            "<body><p>Quite another text that no block of the family holds at all.</p></body>",
        );
        assert!(!widen(&other, &families));
        let most = Document::from(format!("<body>{}{}</body>", part(1), part(2)).as_str());
        assert!(!widen(&most, &families));
    }
}
