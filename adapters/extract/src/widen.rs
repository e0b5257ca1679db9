//! A story cut into like blocks: page builders (WPBakery's `vc_row`, Elementor's sections)
//! and old table layouts put each part of one text in a sibling block of the same kind, and
//! Readability, scoring containers, takes the longest part alone. Such a family of blocks is
//! noted on the page before Readability reads it; when the article turns out to be one of its
//! members, the article becomes every member holding prose, in the page's order.

use dom_query::{Document, NodeRef, Selection};

use crate::clean::{link_chars, squeezed, text_chars};

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

/// A family found on the page: where its parent is (element-child indices from the body
/// down) and its prose members (element-child indices in the parent, with their length).
/// Only this is kept: the members' text and HTML are read again from the page in the rare
/// case the article turns out to be one of them.
#[derive(Debug, Default)]
pub(crate) struct Family {
    parent: Vec<usize>,
    members: Vec<(usize, usize)>,
}

/// The member's length when it holds prose.
fn prose_chars(node: &NodeRef) -> Option<usize> {
    let chars = text_chars(node);
    (chars >= MEMBER_CHARS
        && link_chars(node) as f64 <= MEMBER_LINK_SHARE * chars as f64
        && !crate::sections::is_comment_section(node)
        && !crate::clean::has_word(node, &["comment", "comments"]))
    .then_some(chars)
}

/// (block name, first class word) of a named block: `ds-box recipe-header` and `ds-box
/// recipe-ingredients` are parts of one recipe. Unnamed blocks are a page's frame as often as
/// a story's parts, except tables (old layouts name nothing).
fn key(node: &NodeRef) -> Option<(String, String)> {
    let name = node.node_name()?;
    if !BLOCKS.contains(&name.as_ref()) {
        return None;
    }
    let class = node
        .attr("class")
        .and_then(|c| c.split_whitespace().next().map(str::to_string))
        .unwrap_or_default();
    (!class.is_empty() || name.as_ref() == "table").then(|| (name.to_string(), class))
}

/// Children of `parent` of one kind ([`key`]), when at least [`MIN_MEMBERS`] hold prose.
fn family_of<'a>(parent: &NodeRef<'a>, found: &mut Vec<(NodeRef<'a>, Vec<(usize, usize)>)>) {
    let children = parent.element_children();
    let keys: Vec<Option<(String, String)>> = children.iter().map(key).collect();
    let mut order: Vec<usize> = (0..children.len()).filter(|&i| keys[i].is_some()).collect();
    // Stable: each group keeps the page's order.
    order.sort_by(|&a, &b| keys[a].cmp(&keys[b]));
    for group in order.chunk_by(|&a, &b| keys[a] == keys[b]) {
        if group.len() < MIN_MEMBERS {
            continue;
        }
        let prose: Vec<(usize, usize)> = group
            .iter()
            .filter_map(|&i| prose_chars(&children[i]).map(|c| (i, c)))
            .collect();
        if prose.len() >= MIN_MEMBERS {
            found.push((*parent, prose));
        }
    }
}

/// Whether `node` has at least [`MIN_MEMBERS`] children that are blocks of a kind a layout
/// repeats: asked of every element, so no allocation.
fn may_hold_family(node: &NodeRef) -> bool {
    let mut count = 0;
    let mut child = node.first_element_child();
    while let Some(c) = child {
        if c.node_name().is_some_and(|n| BLOCKS.contains(&n.as_ref())) {
            count += 1;
            if count >= MIN_MEMBERS {
                return true;
            }
        }
        child = c.next_element_sibling();
    }
    false
}

/// Element-child indices from `body` down to `node`.
fn path(body: &NodeRef, node: &NodeRef) -> Option<Vec<usize>> {
    let mut path = Vec::new();
    let mut at = *node;
    while at.id != body.id {
        let mut index = 0;
        let mut sibling = at.prev_element_sibling();
        while let Some(s) = sibling {
            index += 1;
            sibling = s.prev_element_sibling();
        }
        path.push(index);
        at = at.parent()?;
    }
    path.reverse();
    Some(path)
}

fn at_path<'a>(body: NodeRef<'a>, path: &[usize]) -> Option<NodeRef<'a>> {
    path.iter()
        .try_fold(body, |node, &i| node.element_children().get(i).copied())
}

/// The page's families of like blocks holding prose.
pub(crate) fn families(page: &Document) -> Vec<Family> {
    let Some(body) = page.body() else {
        return Vec::new();
    };
    let mut found = Vec::new();
    for node in std::iter::once(body).chain(body.descendants_it()) {
        if node.is_element() && may_hold_family(&node) {
            family_of(&node, &mut found);
        }
    }
    found
        .into_iter()
        .filter_map(|(parent, members)| {
            Some(Family {
                parent: path(&body, &parent)?,
                members,
            })
        })
        .collect()
}

/// Replaces the article in `doc` by every member of the family one of whose members it is;
/// says whether it did. `fresh` gives the page the families were found on again, asked only
/// when one of them may hold the article. The member Readability chose keeps Readability's
/// cleaning; the others lose what is never content.
pub(crate) fn widen(doc: &Document, families: &[Family], fresh: impl Fn() -> Document) -> bool {
    let Some(body) = doc.body() else {
        return false;
    };
    let chars = text_chars(&body);
    // The article is one part of several: shorter than the longest, a small share of all.
    let possible = |f: &&Family| {
        let total: usize = f.members.iter().map(|m| m.1).sum();
        let longest = f.members.iter().map(|m| m.1).max().unwrap_or(0);
        chars <= longest && chars as f64 <= MAX_ARTICLE_SHARE * total as f64
    };
    let candidates: Vec<&Family> = families.iter().filter(possible).collect();
    if candidates.is_empty() {
        return false;
    }
    let probe: String = squeezed(&body.text()).chars().take(PROBE_CHARS).collect();
    if probe.chars().count() < PROBE_CHARS {
        return false;
    }
    let page = fresh();
    let Some(page_body) = page.body() else {
        return false;
    };
    for family in candidates {
        let Some(parent) = at_path(page_body, &family.parent) else {
            continue;
        };
        let children = parent.element_children();
        let members: Option<Vec<NodeRef>> = family
            .members
            .iter()
            .map(|&(i, c)| children.get(i).copied().filter(|m| text_chars(m) == c))
            .collect();
        // The page given again is not the one the family was found on: leave the article
        // as it is.
        let Some(members) = members else { continue };
        // The first member holding the article's start (a listing may repeat an entry).
        let Some(chosen) = members
            .iter()
            .position(|m| squeezed(&m.text()).contains(&probe))
        else {
            continue;
        };
        if chars > family.members[chosen].1 {
            continue;
        }
        let own = body.inner_html().to_string();
        let mut out = String::new();
        for (i, member) in members.iter().enumerate() {
            if i == chosen {
                out.push_str(&own);
            } else {
                Selection::from(*member).select(NOT_CONTENT).remove();
                out.push_str(&member.html());
            }
        }
        body.set_html(out);
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

    /// The page given again, as `widen` asks for it.
    fn parsed(html: &str) -> impl Fn() -> Document + '_ {
        move || Document::from(html)
    }

    /// The article Readability would give when it takes part 2 alone.
    fn article_of_part(n: usize) -> Document {
        Document::from(format!("<body>{}</body>", part(n)).as_str())
    }

    #[test]
    fn a_story_in_like_blocks_is_read_whole_in_order() {
        let html = format!(
            r#"<body><div class="content">{}{}<div class="vc_row"><a href="/shop">Shop</a></div>{}</div></body>"#,
            part(1),
            part(2),
            part(3)
        );
        let families = families(&Document::from(html.as_str()));
        assert_eq!(families.len(), 1);
        let article = article_of_part(2);
        assert!(widen(&article, &families, parsed(&html)));
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
        assert!(!widen(&other, &families, parsed(&page)));
        let most = Document::from(format!("<body>{}{}</body>", part(1), part(2)).as_str());
        assert!(!widen(&most, &families, parsed(&page)));
        // A page that is not the one the family was found on: nothing to take from it.
        let part_two = article_of_part(2);
        let changed = page.replace(
            "Part 3 of the story",
            "Part 3 of a story much changed since",
        );
        assert!(!widen(&part_two, &families, parsed(&changed)));
        assert!(widen(&part_two, &families, parsed(&page)));
    }
}
