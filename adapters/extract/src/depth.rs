//! Parsing with the depth a browser keeps. Chromium's parser attaches no element deeper than
//! 512 levels: past that, what a page opens goes beside the deepest element instead of inside
//! it. Both the parser (html5ever looks through every open element at each `<div>`) and
//! Readability's cleaning (every element's descendants) take time in the square of the depth:
//! 22 KB of nested `<div>`s took seconds, 250 KB two minutes. So tags opened past
//! [`MAX_OPEN`] are dropped before parsing (their text kept), and what the parser still nests
//! past [`MAX_DEPTH`] is flattened as a browser does. Readability's cost then grows with the
//! sum of the elements' depths, which a page of many elements 512 deep still makes large; past
//! [`DEPTH_BUDGET`] the tree is flattened shallower. The text and its order stay as they were.

use std::borrow::Cow;
use std::collections::HashMap;

use dom_query::{Document, NodeRef};

/// Chromium's `kMaximumHTMLParserDOMTreeDepth`.
pub(crate) const MAX_DEPTH: usize = 512;

/// The sum of the elements' depths a tree may have before it is flattened: 13 times the
/// largest of the 610 pages of both shared corpora (148k: 9,750 elements, 17 deep at most;
/// the deepest page is 38).
pub(crate) const DEPTH_BUDGET: usize = 2_000_000;

/// Flattening never goes shallower than this.
const MIN_DEPTH: usize = 8;

/// `html` parsed, with everything deeper than [`MAX_DEPTH`], or than the depth that keeps
/// the tree within [`DEPTH_BUDGET`], flattened.
pub(crate) fn parse(html: &str) -> Document {
    let doc = Document::from(&*bounded(html));
    if let Some(max) = depth_limit(&doc) {
        flatten_beyond(&doc, max);
    }
    doc
}

/// The depth to flatten `doc` beyond, if it needs it: the deepest one, up to [`MAX_DEPTH`],
/// at which the sum of the elements' depths after flattening is within [`DEPTH_BUDGET`].
fn depth_limit(doc: &Document) -> Option<usize> {
    // Elements at each depth.
    let mut at: Vec<usize> = Vec::new();
    let mut pending: Vec<(NodeRef, usize)> = vec![(doc.root(), 0)];
    while let Some((node, depth)) = pending.pop() {
        if node.is_element() {
            if at.len() <= depth {
                at.resize(depth + 1, 0);
            }
            at[depth] += 1;
        }
        pending.extend(node.children_it(false).map(|c| (c, depth + 1)));
    }
    let sum = |limit: usize| -> usize {
        // After flattening beyond `limit`, what was deeper sits at `limit + 1`.
        at.iter()
            .enumerate()
            .map(|(depth, n)| depth.min(limit + 1) * n)
            .sum()
    };
    let deepest = at.len().saturating_sub(1);
    if deepest <= MAX_DEPTH && sum(deepest) <= DEPTH_BUDGET {
        return None;
    }
    // Each try is linear in the depth, which is bounded: a few hundred thousand steps at most.
    (MIN_DEPTH..=MAX_DEPTH)
        .rev()
        .find(|&limit| sum(limit) <= DEPTH_BUDGET)
        .or(Some(MIN_DEPTH))
}

/// Moves every node deeper than `max` levels under the document, in document order, to be a
/// child of its ancestor at depth `max`: the text stays in reading order and no element is
/// more than `max + 1` deep. A stack, not recursion: the tree may be deeper than any stack.
pub(crate) fn flatten_beyond(doc: &Document, max: usize) {
    let mut pending: Vec<(NodeRef, usize)> = vec![(doc.root(), 0)];
    while let Some((node, depth)) = pending.pop() {
        if depth < max {
            pending.extend(node.children_it(true).map(|c| (c, depth + 1)));
            continue;
        }
        if !node.children_it(false).any(|c| c.first_child().is_some()) {
            continue; // nothing here goes deeper than `max + 1`
        }
        // Collected first: the walk borrows the tree the moves change.
        let below: Vec<NodeRef> = node.descendants_it().collect();
        for n in below {
            node.append_child(&n);
        }
    }
}

/// Elements past which a page is too big for Readability: ten times the largest page of the
/// shared corpora (10,112).
pub(crate) const MAX_READABLE_ELEMENTS: usize = 100_000;

/// Whether `doc` has more than [`MAX_READABLE_ELEMENTS`] elements.
pub(crate) fn huge(doc: &Document) -> bool {
    doc.root()
        .descendants_it()
        .filter(NodeRef::is_element)
        .nth(MAX_READABLE_ELEMENTS)
        .is_some()
}

/// Elements a page may hold open at once before its tags are dropped: far past any real page
/// (a browser keeps 512 levels), and few enough that parsing them stays quick.
pub(crate) const MAX_OPEN: usize = 2048;

/// Elements that hold no content, so never stay open.
const VOID: &[&str] = &[
    "area", "base", "basefont", "bgsound", "br", "col", "embed", "frame", "hr", "image", "img",
    "input", "keygen", "link", "meta", "param", "source", "track", "wbr",
];

/// Elements whose start closes the previous one of their kind (or which never nest), so a
/// run of them does not deepen the tree; counting them would take a long list of unclosed
/// `<p>`s or `<li>`s for nesting.
const SELF_CLOSING_RUNS: &[&str] = &[
    "a", "body", "caption", "colgroup", "dd", "dt", "head", "html", "li", "optgroup", "option",
    "p", "rb", "rp", "rt", "rtc", "tbody", "td", "tfoot", "th", "thead", "tr",
];

/// Elements whose content is text up to their end tag. Not `<noscript>`: dom_query parses
/// with scripting off, so its content is markup.
const RAW_TEXT: &[&str] = &[
    "iframe", "noembed", "noframes", "script", "style", "textarea", "title", "xmp",
];

/// `html` without the tags that would hold more than [`MAX_OPEN`] elements open (nor the end
/// tags that close them); borrowed unchanged when there are none, as on every real page.
/// A linear scan that follows the tokenizer where it matters: comments, quoted attribute
/// values, raw text and self-closing tags in SVG and MathML.
pub(crate) fn bounded(html: &str) -> Cow<'_, str> {
    let bytes = html.as_bytes();
    let mut open: Vec<String> = Vec::new();
    let mut counts: HashMap<String, usize> = HashMap::new();
    let mut dropped: HashMap<String, usize> = HashMap::new();
    let mut cuts: Vec<(usize, usize)> = Vec::new();
    let mut i = 0;
    while let Some(at) = bytes[i..].iter().position(|&b| b == b'<') {
        let start = i + at;
        let rest = &bytes[start..];
        if rest.starts_with(b"<!--") {
            i = find(bytes, start + 4, b"-->").map_or(bytes.len(), |e| e + 3);
            continue;
        }
        if rest.starts_with(b"<!") || rest.starts_with(b"<?") {
            i = find(bytes, start, b">").map_or(bytes.len(), |e| e + 1);
            continue;
        }
        let closing = rest.get(1) == Some(&b'/');
        let name_at = start + 1 + usize::from(closing);
        if !bytes.get(name_at).is_some_and(u8::is_ascii_alphabetic) {
            i = start + 1; // a `<` in text
            continue;
        }
        let name_end = bytes[name_at..]
            .iter()
            .position(|b| b.is_ascii_whitespace() || *b == b'/' || *b == b'>')
            .map_or(bytes.len(), |n| name_at + n);
        let name = html[name_at..name_end].to_ascii_lowercase();
        let end = tag_end(bytes, name_end);
        i = end;
        if closing {
            if let Some(n) = dropped.get_mut(&name).filter(|n| **n > 0) {
                *n -= 1;
                cuts.push((start, end));
            } else if counts.get(&name).is_some_and(|n| *n > 0) {
                // As the parser does for most end tags: close up to the element's start.
                while let Some(top) = open.pop() {
                    *counts.entry(top.clone()).or_default() -= 1;
                    if top == name {
                        break;
                    }
                }
            }
            continue;
        }
        if RAW_TEXT.contains(&name.as_str()) {
            let close = format!("</{name}");
            i = find_ignore_case(bytes, end, close.as_bytes()).unwrap_or(bytes.len());
            continue;
        }
        let foreign = ["svg", "math"]
            .iter()
            .any(|f| counts.get(*f).is_some_and(|n| *n > 0));
        let self_closed = foreign && bytes[..end].ends_with(b"/>");
        if VOID.contains(&name.as_str())
            || SELF_CLOSING_RUNS.contains(&name.as_str())
            || self_closed
        {
            continue;
        }
        if open.len() >= MAX_OPEN {
            *dropped.entry(name).or_default() += 1;
            cuts.push((start, end));
        } else {
            *counts.entry(name.clone()).or_default() += 1;
            open.push(name);
        }
    }
    if cuts.is_empty() {
        return Cow::Borrowed(html);
    }
    let mut out = String::with_capacity(html.len());
    let mut from = 0;
    for (start, end) in cuts {
        out.push_str(&html[from..start]);
        from = end;
    }
    out.push_str(&html[from..]);
    Cow::Owned(out)
}

/// Where the tag whose name ends at `from` ends (after its `>`): quoted attribute values may
/// hold a `>`.
fn tag_end(bytes: &[u8], from: usize) -> usize {
    let mut i = from;
    while i < bytes.len() {
        match bytes[i] {
            b'>' => return i + 1,
            b'=' => {
                i += 1;
                while bytes.get(i).is_some_and(u8::is_ascii_whitespace) {
                    i += 1;
                }
                if let Some(&q @ (b'"' | b'\'')) = bytes.get(i) {
                    i = bytes[i + 1..]
                        .iter()
                        .position(|&b| b == q)
                        .map_or(bytes.len(), |n| i + 1 + n + 1);
                    continue;
                }
            }
            _ => i += 1,
        }
    }
    bytes.len()
}

fn find(bytes: &[u8], from: usize, needle: &[u8]) -> Option<usize> {
    bytes[from.min(bytes.len())..]
        .windows(needle.len())
        .position(|w| w == needle)
        .map(|n| from + n)
}

fn find_ignore_case(bytes: &[u8], from: usize, needle: &[u8]) -> Option<usize> {
    bytes[from.min(bytes.len())..]
        .windows(needle.len())
        .position(|w| w.eq_ignore_ascii_case(needle))
        .map(|n| from + n)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn depth_of_deepest(doc: &Document) -> usize {
        let mut deepest = 0;
        let mut pending = vec![(doc.root(), 0)];
        while let Some((node, depth)) = pending.pop() {
            deepest = deepest.max(depth);
            pending.extend(node.children_it(false).map(|c| (c, depth + 1)));
        }
        deepest
    }

    #[test]
    fn nothing_is_deeper_than_a_browser_keeps_and_the_text_stays_in_order() {
        let n = 3 * MAX_DEPTH;
        let html = (0..n).map(|i| format!("<div>w{i} ")).collect::<String>();
        let doc = parse(&html);
        assert!(depth_of_deepest(&doc) <= MAX_DEPTH + 1);
        let words: Vec<String> = doc
            .select("body")
            .text()
            .split_whitespace()
            .map(str::to_owned)
            .collect();
        let expected: Vec<String> = (0..n).map(|i| format!("w{i}")).collect();
        assert_eq!(words, expected);
    }

    #[test]
    fn a_tree_within_the_limit_is_left_as_it_is() {
        let html = "<article><div><p>One <b>two</b></p><p>three</p></div></article>";
        let doc = parse(html);
        assert_eq!(
            doc.select("body").inner_html().to_string(),
            Document::from(html).select("body").inner_html().to_string()
        );
        let shallow = Document::from("<div><p><b>x</b></p></div>");
        flatten_beyond(&shallow, 4); // html, body, div, p: the <b> is below depth 4
        assert_eq!(
            shallow.select("body").inner_html().to_string(),
            "<div><p><b></b>x</p></div>"
        );
    }

    #[test]
    fn many_elements_deep_down_are_flattened_to_the_budget() {
        let html = "<div>".repeat(400) + &"<span>w</span>".repeat(10_000);
        let doc = parse(&html);
        let mut sum = 0;
        let mut pending = vec![(doc.root(), 0)];
        while let Some((node, depth)) = pending.pop() {
            if node.is_element() {
                sum += depth;
            }
            pending.extend(node.children_it(false).map(|c| (c, depth + 1)));
        }
        assert!(sum <= DEPTH_BUDGET, "{sum}");
        assert!(depth_of_deepest(&doc) < 400);
        assert_eq!(doc.select("body").text().matches('w').count(), 10_000);
        // The shared corpora's largest page is far within it: nothing changes there.
        let page = "<div><p>Some <b>text</b> here.</p></div>".repeat(5_000);
        assert_eq!(depth_limit(&Document::from(page.as_str())), None);
    }

    #[test]
    fn a_page_of_more_elements_than_readability_can_take_is_huge() {
        let page = |n: usize| Document::from("<span>w</span>".repeat(n).as_str());
        // html, head and body are elements too.
        assert!(!huge(&page(MAX_READABLE_ELEMENTS - 3)));
        assert!(huge(&page(MAX_READABLE_ELEMENTS - 2)));
    }

    /// Every page of both shared corpora (`SVC_CORPORA_DIR`, else `../shared/corpora`).
    fn corpus_pages() -> Vec<std::path::PathBuf> {
        let root = std::env::var_os("SVC_CORPORA_DIR")
            .map(std::path::PathBuf::from)
            .unwrap_or_else(|| {
                std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/corpora")
            });
        let mut pages = Vec::new();
        let mut dirs = vec![root.join("articles"), root.join("readability")];
        while let Some(dir) = dirs.pop() {
            for entry in std::fs::read_dir(&dir).unwrap().flatten() {
                let path = entry.path();
                if path.is_dir() {
                    dirs.push(path);
                } else if path.ends_with("source.html") {
                    pages.push(path);
                }
            }
        }
        pages
    }

    #[test]
    fn every_corpus_page_is_read_exactly_as_before_the_bounds() {
        let pages = corpus_pages();
        assert_eq!(pages.len(), 610);
        for page in pages {
            let raw = String::from_utf8_lossy(&std::fs::read(&page).unwrap()).into_owned();
            let html = crate::without_inline_code(&raw);
            for text in [&*raw, &*html] {
                let what = page.display();
                assert!(matches!(bounded(text), Cow::Borrowed(_)), "{what}");
            }
            let doc = Document::from(&*html);
            assert_eq!(depth_limit(&doc), None, "{}", page.display());
            assert!(!huge(&doc), "{}", page.display());
        }
    }

    fn tags(html: &str, tag: &str) -> usize {
        html.matches(tag).count()
    }

    #[test]
    fn tags_opened_past_the_limit_are_dropped_with_their_ends_and_the_text_kept() {
        let n = 3 * MAX_OPEN;
        let html = "<div>x".repeat(n) + &"y</div>".repeat(n) + "<p>after</p>";
        let bounded = bounded(&html);
        assert_eq!(tags(&bounded, "<div>"), MAX_OPEN);
        assert_eq!(tags(&bounded, "</div>"), MAX_OPEN);
        assert_eq!(tags(&bounded, "x"), n);
        assert_eq!(tags(&bounded, "y"), n);
        assert!(bounded.ends_with("y</div><p>after</p>"));
        // The ends of the kept tags close them: what follows is back at the top.
        let doc = parse(&html);
        assert_eq!(doc.select("body > p").text().to_string(), "after");
    }

    #[test]
    fn real_pages_are_borrowed_unchanged() {
        let cases = [
            // Long runs of siblings and of elements the parser closes for the next one.
            "<div>x</div>".repeat(3 * MAX_OPEN),
            "<ul>".to_owned() + &"<li>item <a href=/x>link".repeat(3 * MAX_OPEN) + "</ul>",
            "<p>para <br> line".repeat(3 * MAX_OPEN),
            "<table>".to_owned() + &"<tr><td>cell<td>cell".repeat(3 * MAX_OPEN) + "</table>",
            // Self-closing tags in SVG, tags in comments, attributes and scripts.
            "<svg>".to_owned() + &"<path d='M0 0'/>".repeat(3 * MAX_OPEN) + "</svg>",
            "<!--".to_owned() + &"<div>".repeat(3 * MAX_OPEN) + "-->",
            format!(r#"<p title="{}">t</p>"#, "<div>".repeat(3 * MAX_OPEN)),
            "<script>".to_owned() + &"'<div>'+".repeat(3 * MAX_OPEN) + "1</SCRIPT><div>x</div>",
        ];
        for html in cases {
            assert!(
                matches!(bounded(&html), Cow::Borrowed(_)),
                "{}",
                &html[..80]
            );
        }
    }

    #[test]
    fn end_tags_that_close_nothing_do_not_hide_nesting() {
        // `</div>` with no open `<div>` is ignored by the parser: it must not count as a close.
        let html = "<span></div>".repeat(3 * MAX_OPEN);
        assert_eq!(tags(&bounded(&html), "<span>"), MAX_OPEN);
        // Parsed with scripting off, `<noscript>` holds markup like any element.
        let html = "<noscript>".to_owned() + &"<div>".repeat(3 * MAX_OPEN);
        assert_eq!(tags(&bounded(&html), "<div>"), MAX_OPEN - 1);
        // `<div/>` opens a `<div>` in HTML (the slash counts only in SVG and MathML).
        let html = "<div/>".repeat(3 * MAX_OPEN);
        assert_eq!(tags(&bounded(&html), "<div/>"), MAX_OPEN);
    }

    proptest::proptest! {
        #[test]
        fn any_text_comes_back_with_only_whole_tags_removed(
            parts in proptest::collection::vec(
                proptest::prop_oneof![
                    proptest::strategy::Just("<div>".to_owned()),
                    proptest::strategy::Just("</div>".to_owned()),
                    proptest::strategy::Just("<b a='>'>".to_owned()),
                    proptest::strategy::Just("<!--".to_owned()),
                    proptest::strategy::Just("<script>".to_owned()),
                    proptest::strategy::Just("<svg>".to_owned()),
                    proptest::strategy::Just("<i/>".to_owned()),
                    "\\PC{0,4}",
                ],
                0..64,
            )
        ) {
            let html: String = parts.concat();
            // Fewer tags than the limit: nothing to drop.
            proptest::prop_assert_eq!(&*bounded(&html), html.as_str());
            // Past the limit the result is the input less some of its `<` runs: never more.
            let deep = "<em>".repeat(MAX_OPEN) + &html;
            let out = bounded(&deep);
            proptest::prop_assert!(out.len() <= deep.len());
            proptest::prop_assert!(out.starts_with(&"<em>".repeat(MAX_OPEN)));
        }
    }
}
