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
use std::hash::{BuildHasherDefault, Hasher};

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
    let (html, scan) = scan(html);
    let doc = Document::from(&*html);
    // The tree is walked only when the scan cannot rule out a deep or heavy one.
    if !scan.surely_light()
        && let Some(max) = depth_limit(&doc)
    {
        flatten_beyond(&doc, max);
    }
    doc
}

/// `html` parsed without the matches of `exclude`, which are removed before anything is read
/// from it: the page every reading of it starts from.
pub(crate) fn parse_without(html: &str, exclude: &[dom_query::Matcher]) -> Document {
    let doc = parse(html);
    for m in exclude {
        doc.select_matcher(m).remove();
    }
    doc
}

/// What the scan saw: the most elements it counted open at once, and the start tags.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct Scan {
    most_open: usize,
    start_tags: usize,
}

impl Scan {
    /// Whether the parsed tree is surely within [`MAX_DEPTH`] and [`DEPTH_BUDGET`]. The scan
    /// does not count the elements that close their predecessor (a table's rows and cells, a
    /// list's items) nor those the parser makes up (`<tbody>`, formatting elements it opens
    /// again): each counted level may hold a few of those, so it is allowed eight, and the
    /// parser may make up as many elements as the page has tags.
    fn surely_light(&self) -> bool {
        let deepest = 8 * (self.most_open + 1);
        deepest <= MAX_DEPTH && deepest * (2 * self.start_tags + 8) <= DEPTH_BUDGET
    }
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

/// Whether `doc`, parsed from `html`, has more than [`MAX_READABLE_ELEMENTS`] elements. Each
/// takes at least three bytes of the page (`<a>`) and the parser makes up about as many again
/// at most, so a small page is not walked.
pub(crate) fn huge(html: &str, doc: &Document) -> bool {
    html.len() / 3 * 2 + 8 > MAX_READABLE_ELEMENTS
        && doc
            .root()
            .descendants_it()
            .filter(NodeRef::is_element)
            .nth(MAX_READABLE_ELEMENTS)
            .is_some()
}

/// Elements a page may hold open at once before its tags are dropped: far past any real page
/// (a browser keeps 512 levels), and few enough that parsing them stays quick.
pub(crate) const MAX_OPEN: usize = 2048;

/// Elements that hold no content, so never stay open.
const VOID: [u64; 19] = keys([
    "area", "base", "basefont", "bgsound", "br", "col", "embed", "frame", "hr", "image", "img",
    "input", "keygen", "link", "meta", "param", "source", "track", "wbr",
]);

/// Elements whose start closes the previous one of their kind (or which never nest), so a
/// run of them does not deepen the tree; counting them would take a long list of unclosed
/// `<p>`s or `<li>`s for nesting.
const SELF_CLOSING_RUNS: [u64; 22] = keys([
    "a", "body", "caption", "colgroup", "dd", "dt", "head", "html", "li", "optgroup", "option",
    "p", "rb", "rp", "rt", "rtc", "tbody", "td", "tfoot", "th", "thead", "tr",
]);

/// Elements whose content is text up to their end tag. Not `<noscript>`: dom_query parses
/// with scripting off, so its content is markup.
const RAW_TEXT: [u64; 8] = keys([
    "iframe", "noembed", "noframes", "script", "style", "textarea", "title", "xmp",
]);

/// Where `/>` closes an element: SVG and MathML.
const FOREIGN: [u64; 2] = keys(["svg", "math"]);

/// Maps keyed by name keys, which are hashes already: hashed again, they cost the scan more
/// than the rest of its work.
type ByKey = HashMap<u64, usize, BuildHasherDefault<KeyHasher>>;

#[derive(Default)]
struct KeyHasher(u64);

impl Hasher for KeyHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for b in bytes {
            self.0 = (self.0 ^ u64::from(*b)).wrapping_mul(0x0100_0000_01b3);
        }
    }

    fn write_u64(&mut self, n: u64) {
        self.0 = n;
    }
}

/// A tag name's key: FNV-1a over its ASCII-lowercased bytes. The scan runs on every parse,
/// so names are neither copied nor lowercased into strings; a collision (two names, one key)
/// could only misjudge nesting, never change a page under the bound.
const fn key(name: &[u8]) -> u64 {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    let mut i = 0;
    while i < name.len() {
        hash ^= name[i].to_ascii_lowercase() as u64;
        hash = hash.wrapping_mul(0x0100_0000_01b3);
        i += 1;
    }
    hash
}

const fn keys<const N: usize>(names: [&str; N]) -> [u64; N] {
    let mut out = [0; N];
    let mut i = 0;
    while i < N {
        out[i] = key(names[i].as_bytes());
        i += 1;
    }
    out
}

/// `html` without the tags that would hold more than [`MAX_OPEN`] elements open (nor the end
/// tags that close them); borrowed unchanged when there are none, as on every real page.
/// A linear scan that follows the tokenizer where it matters: comments, quoted attribute
/// values, raw text and self-closing tags in SVG and MathML.
#[cfg(test)]
pub(crate) fn bounded(html: &str) -> Cow<'_, str> {
    scan(html).0
}

/// Where a comment whose text starts at `from` (just past `<!--`) ends, past its close, as a
/// browser reads it: `<!-->` and `<!--->` are empty comments, and `--!>` closes one as `-->`
/// does. None when it never closes.
pub(crate) fn comment_end(bytes: &[u8], from: usize) -> Option<usize> {
    let rest = bytes.get(from..)?;
    if rest.starts_with(b">") {
        return Some(from + 1);
    }
    if rest.starts_with(b"->") {
        return Some(from + 2);
    }
    let mut at = 0;
    while let Some(found) = memchr::memmem::find(&rest[at..], b"--") {
        let dashes = at + found;
        let after = &rest[dashes + 2..];
        if after.starts_with(b">") {
            return Some(from + dashes + 3);
        }
        if after.starts_with(b"!>") {
            return Some(from + dashes + 4);
        }
        at = dashes + 1;
    }
    None
}

/// [`bounded`], and what the scan saw.
fn scan(html: &str) -> (Cow<'_, str>, Scan) {
    let mut seen = Scan::default();
    let bytes = html.as_bytes();
    // Open elements by name key, and how many of each are open or were dropped.
    let mut open: Vec<u64> = Vec::new();
    let mut counts = ByKey::default();
    let mut dropped = ByKey::default();
    let mut foreign = 0usize;
    let mut cuts: Vec<(usize, usize)> = Vec::new();
    let mut i = 0;
    while let Some(at) = memchr::memchr(b'<', &bytes[i..]) {
        let start = i + at;
        let rest = &bytes[start..];
        if rest.starts_with(b"<!--") {
            i = comment_end(bytes, start + 4).unwrap_or(bytes.len());
            continue;
        }
        if rest.starts_with(b"<!") || rest.starts_with(b"<?") {
            i = memchr::memchr(b'>', rest).map_or(bytes.len(), |e| start + e + 1);
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
        let name = &bytes[name_at..name_end];
        let k = key(name);
        let end = tag_end(bytes, name_end);
        i = end;
        if closing {
            if let Some(n) = dropped.get_mut(&k).filter(|n| **n > 0) {
                *n -= 1;
                cuts.push((start, end));
            } else if counts.get(&k).is_some_and(|n| *n > 0) {
                // As the parser does for most end tags: close up to the element's start.
                while let Some(top) = open.pop() {
                    *counts.entry(top).or_default() -= 1;
                    foreign -= usize::from(FOREIGN.contains(&top));
                    if top == k {
                        break;
                    }
                }
            }
            continue;
        }
        if RAW_TEXT.contains(&k) {
            i = end_tag(bytes, end, name).unwrap_or(bytes.len());
            continue;
        }
        seen.start_tags += 1;
        let self_closed = foreign > 0 && bytes[..end].ends_with(b"/>");
        if VOID.contains(&k) || SELF_CLOSING_RUNS.contains(&k) || self_closed {
            continue;
        }
        if open.len() >= MAX_OPEN {
            *dropped.entry(k).or_default() += 1;
            cuts.push((start, end));
        } else {
            *counts.entry(k).or_default() += 1;
            foreign += usize::from(FOREIGN.contains(&k));
            open.push(k);
            seen.most_open = seen.most_open.max(open.len());
        }
    }
    if cuts.is_empty() {
        return (Cow::Borrowed(html), seen);
    }
    let mut out = String::with_capacity(html.len());
    let mut from = 0;
    for (start, end) in cuts {
        out.push_str(&html[from..start]);
        from = end;
    }
    out.push_str(&html[from..]);
    (Cow::Owned(out), seen)
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
                    i = memchr::memchr(q, &bytes[i + 1..]).map_or(bytes.len(), |n| i + 1 + n + 1);
                    continue;
                }
            }
            _ => i += 1,
        }
    }
    bytes.len()
}

/// Where the end tag `</name` (any case) first starts at or after `from`.
fn end_tag(bytes: &[u8], from: usize, name: &[u8]) -> Option<usize> {
    memchr::memmem::find_iter(&bytes[from..], b"</")
        .map(|n| from + n)
        .find(|&at| {
            bytes
                .get(at + 2..at + 2 + name.len())
                .is_some_and(|candidate| candidate.eq_ignore_ascii_case(name))
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn comments_end_where_a_browser_ends_them() {
        fn end(html: &str) -> Option<&str> {
            comment_end(html.as_bytes(), 4).map(|e| &html[e..])
        }
        assert_eq!(end("<!-->after"), Some("after"));
        assert_eq!(end("<!--->after"), Some("after"));
        assert_eq!(end("<!-- x -->after"), Some("after"));
        assert_eq!(end("<!-- x --->after"), Some("after"));
        assert_eq!(end("<!-- x --!>after"), Some("after"));
        assert_eq!(end("<!-- x -- y -->after"), Some("after"));
        assert_eq!(end("<!-- never closed"), None);
    }

    proptest::proptest! {
        // What is left once comments go reads as the page did: html5ever is the judge.
        #[test]
        fn dropping_comments_leaves_the_text_a_browser_reads(
            parts in proptest::collection::vec(proptest::sample::select(vec![
                "<!--", "-->", "--!>", "<!-->", "<!--->", "-", "--", ">", "!", "<p>", "</p>",
                "story", " ", "<b>", "</b>",
            ]), 0..24)
        ) {
            let html = parts.concat();
            let text = |h: &str| Document::from(h).select("body").text().to_string();
            proptest::prop_assert_eq!(text(&crate::without_inline_code(&html)), text(&html), "{}", html);
        }
    }

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
        let html = |n: usize| "<span>w</span>".repeat(n);
        let huge_page = |n: usize| huge(&html(n), &Document::from(html(n).as_str()));
        // html, head and body are elements too.
        assert!(!huge_page(MAX_READABLE_ELEMENTS - 3));
        assert!(huge_page(MAX_READABLE_ELEMENTS - 2));
        // Too few bytes for that many elements: not walked.
        assert!(!huge("<b>", &Document::from("<b>")));
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
            assert!(!huge(&html, &doc), "{}", page.display());
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
        /// Where the scan rules out a deep tree, the parser builds none: tables, lists,
        /// paragraphs and formatting elements opened again add levels the scan does not count.
        #[test]
        fn a_tree_the_scan_calls_light_is_shallow(
            parts in proptest::collection::vec(
                proptest::prop_oneof![
                    proptest::strategy::Just("<div>"),
                    proptest::strategy::Just("</div>"),
                    proptest::strategy::Just("<table><tr><td>"),
                    proptest::strategy::Just("<caption><colgroup>"),
                    proptest::strategy::Just("<ul><li><ol><li>"),
                    proptest::strategy::Just("<dl><dt><dd>"),
                    proptest::strategy::Just("<p><b><i><u><font><a href=x>"),
                    proptest::strategy::Just("</p>x<p>y"),
                    proptest::strategy::Just("<select><optgroup><option>"),
                    proptest::strategy::Just("<svg><g/><math>"),
                    proptest::strategy::Just("<ruby><rb><rt><rp>"),
                    proptest::strategy::Just("text"),
                ],
                0..400,
            )
        ) {
            let html: String = parts.concat();
            let (_, seen) = scan(&html);
            if seen.surely_light() {
                let doc = Document::from(html.as_str());
                proptest::prop_assert!(depth_of_deepest(&doc) <= 8 * (seen.most_open + 1) + 1);
            }
        }

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
