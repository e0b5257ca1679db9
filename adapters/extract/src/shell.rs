//! Whether a page's static HTML is a script shell: a single-page app whose content a script
//! bundle builds in the browser, so that reading the HTML as fetched gives nothing.
//!
//! The judgement (all three must hold):
//! 1. the page runs script: at least one `<script>` that is code (an external bundle, a
//!    module, or inline code; JSON-LD and other JSON data blocks do not count);
//! 2. it shows almost nothing: under [`SHELL_TEXT_CHARS`] characters of visible body text
//!    (`script`, `style`, `noscript`, `template` and `svg` left out);
//! 3. it says it is an app: an empty mount element (`#root`, `#app`, `#__next`, `[ng-app]`,
//!    `[data-reactroot]`, ...), or a `<noscript>` asking for JavaScript, or under
//!    [`BARE_TEXT_CHARS`] characters of text at all.
//!
//! A page with an article in its HTML never passes 2. `tests/script_shell.rs` counts the
//! judgement over both shared corpora (610 real pages): it must fire on none.

use dom_query::NodeRef;

use crate::{attr, select, select_first};

/// Visible text below which a page with scripts may be a shell.
pub const SHELL_TEXT_CHARS: usize = 200;
/// Visible text below which a page with scripts is a shell without any other sign.
pub const BARE_TEXT_CHARS: usize = 25;

/// Ids and attributes that frameworks mount an app on.
const MOUNT_IDS: &[&str] = &[
    "root",
    "app",
    "__next",
    "__nuxt",
    "___gatsby",
    "svelte",
    "app-root",
    "react-root",
    "main-app",
    "application",
];
const MOUNT_ATTRIBUTES: &str =
    "[ng-app], [data-ng-app], [ng-version], [data-reactroot], [data-v-app], [data-server-rendered]";

/// Elements whose text a reader never sees.
const HIDDEN: &[&str] = &["script", "style", "noscript", "template", "svg", "head"];

/// Elements whose contents a rendering browser neither parses as tags nor runs: a `<script`
/// inside one is text (`script` itself: a bundle that writes `<script` tags in a string).
const INERT: &[&str] = &[
    "script", "style", "textarea", "title", "xmp", "noscript", "template", "iframe", "noembed",
    "noframes",
];

/// `<script` tags in `html` that are code, not data: counted on the original text because the
/// extractor drops inline code before parsing. A `<script` in a comment or inside an element
/// from [`INERT`] never runs, so it does not count.
pub fn code_scripts(html: &str) -> usize {
    // ASCII lowercasing keeps every byte offset, so positions found in it hold in `html`.
    let lower = html.to_ascii_lowercase();
    let mut count = 0;
    let mut from = 0;
    while let Some(at) = memchr::memchr(b'<', &lower.as_bytes()[from..]) {
        let start = from + at;
        let rest = &lower[start..];
        if let Some(comment) = rest.strip_prefix("<!--") {
            match comment.find("-->") {
                Some(end) => from = start + 4 + end + 3,
                None => break, // the rest of the page is the comment
            }
            continue;
        }
        from = start + 1;
        let Some(name) = INERT.iter().find(|name| opens(rest, name)) else {
            continue;
        };
        if *name == "script" {
            // The tag's first 512 bytes at most: bytes, since that cut may fall inside a
            // character.
            let window = &rest.as_bytes()[..rest.len().min(512)];
            let end = memchr::memchr(b'>', window).unwrap_or(window.len());
            let tag = String::from_utf8_lossy(&window[..end]);
            // `type` naming JSON (JSON-LD, app state) or a template is data, not code.
            let data = tag.split("type").skip(1).any(|t| {
                t.trim_start().starts_with('=') && (t.contains("json") || t.contains("template"))
            });
            if !data {
                count += 1;
            }
        }
        // Its contents are text up to its end tag; without one, to the end of the page.
        match rest.find(&format!("</{name}")) {
            Some(end) => from = start + end + 2,
            None => break,
        }
    }
    count
}

/// Whether `rest` (lowercased, at a `<`) opens a `name` element: `<scripts>` and `<script-x>`
/// do not open a `script`.
fn opens(rest: &str, name: &str) -> bool {
    let bytes = rest.as_bytes();
    bytes.get(1..=name.len()) == Some(name.as_bytes())
        && bytes
            .get(name.len() + 1)
            .is_none_or(|b| b.is_ascii_whitespace() || *b == b'>' || *b == b'/')
}

/// Characters of visible text under `node`, counted until `limit`. A stack, not recursion: a
/// page may nest elements deeper than any thread's stack.
pub(crate) fn visible_text_chars(node: &NodeRef, limit: usize) -> usize {
    let mut count = 0;
    // Children pushed last to first, so they are popped in document order.
    let mut pending: Vec<NodeRef> = node.children_it(true).collect();
    while let Some(n) = pending.pop() {
        if count >= limit {
            break;
        }
        if n.is_text() {
            count += n
                .text()
                .split_whitespace()
                .map(|w| w.chars().count() + 1)
                .sum::<usize>();
        } else if n.is_element()
            && !n
                .node_name()
                .is_some_and(|name| HIDDEN.contains(&name.as_ref()))
        {
            pending.extend(n.children_it(true));
        }
    }
    count
}

fn empty_mount(root: &NodeRef) -> Option<String> {
    let by_id = MOUNT_IDS
        .iter()
        .map(|id| format!("#{id}"))
        .collect::<Vec<_>>()
        .join(", ");
    let selector = format!("{by_id}, {MOUNT_ATTRIBUTES}");
    select(*root, &selector).into_iter().find_map(|el| {
        (visible_text_chars(&el, BARE_TEXT_CHARS) < BARE_TEXT_CHARS).then(|| {
            match attr(&el, "id") {
                Some(id) if MOUNT_IDS.contains(&id.as_str()) => format!("an empty #{id}"),
                _ => format!(
                    "an empty <{}> app mount",
                    el.node_name().unwrap_or_default()
                ),
            }
        })
    })
}

fn noscript_asks_for_javascript(root: &NodeRef) -> bool {
    select(*root, "noscript").iter().any(|n| {
        let text = n.text().to_ascii_lowercase();
        text.contains("javascript") || text.contains("enable js")
    })
}

/// The evidence that the page is a script shell, or `None`. `html` is the page as fetched (with
/// its inline scripts), `root` its parsed document; `content_chars` the length of the extracted
/// main content, which rules a page with an article out before anything else is looked at.
pub fn script_shell(html: &str, root: &NodeRef, content_chars: usize) -> Option<String> {
    if content_chars >= SHELL_TEXT_CHARS {
        return None;
    }
    // The text first: counting stops at a few lines, where the scripts are counted on the
    // whole page (every page read asks).
    let body = select_first(*root, "body")?;
    let chars = visible_text_chars(&body, SHELL_TEXT_CHARS);
    if chars >= SHELL_TEXT_CHARS {
        return None;
    }
    let scripts = code_scripts(html);
    if scripts == 0 {
        return None;
    }
    let sign = empty_mount(root)
        .or_else(|| {
            noscript_asks_for_javascript(root).then(|| "a <noscript> asking for JavaScript".into())
        })
        .or_else(|| (chars < BARE_TEXT_CHARS).then(|| "nothing else in the body".into()))?;
    Some(format!(
        "{scripts} script(s), {chars} characters of visible text, {sign}"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn judge(html: &str) -> Option<String> {
        let stripped = crate::without_inline_code(html);
        let dom = dom_query::Document::from(&*stripped);
        script_shell(html, &dom.root(), 0)
    }

    #[test]
    fn an_empty_mount_point_and_a_bundle_is_a_shell() {
        let html = r#"<!doctype html><html><head><title>App</title>
            <script type="module" src="/assets/index-3f2a.js"></script></head>
            <body><div id="root"></div></body></html>"#;
        let evidence = judge(html).expect("a shell");
        assert!(evidence.contains("#root"), "{evidence}");
    }

    #[test]
    fn a_noscript_plea_or_a_bare_body_with_code_is_a_shell() {
        let plea = r#"<html><body><noscript>You need to enable JavaScript to run this app.</noscript>
            <div class="container">Loading the newest stories for you, please wait a moment</div>
            <script src="/main.js"></script></body></html>"#;
        assert!(judge(plea).unwrap().contains("noscript"));
        let bare =
            "<html><body><script>document.body.innerHTML = '<p>hi</p>'</script></body></html>";
        assert!(judge(bare).unwrap().contains("nothing else"));
    }

    #[test]
    fn pages_with_text_or_without_code_are_not_shells() {
        let article = format!(
            "<html><body><div id=\"root\"><p>{}</p></div><script src=\"/a.js\"></script></body></html>",
            "Tides rise and fall twice a day. ".repeat(10)
        );
        assert_eq!(judge(&article), None);
        // No code: JSON-LD and JSON state are data.
        let data = r#"<html><body><div id="app"></div>
            <script type="application/ld+json">{"@type":"Article"}</script>
            <script type = "application/json" id="state">{}</script></body></html>"#;
        assert_eq!(judge(data), None);
        // Little text and a script, but no sign of an app: a short page, read as it is.
        let short = r#"<html><body><h1>Opening hours</h1><p>Monday to Friday, nine to five.</p>
            <script src="/analytics.js"></script></body></html>"#;
        assert_eq!(judge(short), None);
    }

    #[test]
    fn script_tags_are_told_apart_from_look_alikes() {
        assert_eq!(
            code_scripts("<SCRIPT src=a.js></SCRIPT><script>1</script>"),
            2
        );
        assert_eq!(
            code_scripts("<scripts></scripts><script-x></script-x><p>"),
            0
        );
        assert_eq!(code_scripts("<script type=\"text/template\"></script>"), 0);
    }

    #[test]
    fn scripts_that_never_run_are_not_counted() {
        // In a comment, an unclosed comment, and inert elements.
        assert_eq!(
            code_scripts("<!-- <script src=a.js></script> --><p>x</p>"),
            0
        );
        assert_eq!(code_scripts("<p>x</p><!-- <script src=a.js>"), 0);
        for inert in ["noscript", "template", "textarea", "TITLE"] {
            let html = format!("<{inert}><script src=a.js></script></{inert}><p>x</p>");
            assert_eq!(code_scripts(&html), 0, "{html}");
        }
        // A bundle writing a script tag is one script; a real one after a comment counts.
        assert_eq!(
            code_scripts("<script>document.write('<script src=b.js><\\/script>')</script>"),
            1
        );
        assert_eq!(code_scripts("<!-- old --><Script>go()</Script><p>"), 1);
        // Counting goes on after an inert element's end tag.
        assert_eq!(
            code_scripts("<textarea><script></textarea><script src=c.js></script>"),
            1
        );
    }

    #[test]
    fn a_long_script_tag_is_cut_at_a_byte_not_inside_a_character() {
        // The 512th byte falls inside an `é`: cutting the text there panicked.
        let html = format!(r#"<script x="{}"></script>"#, "é".repeat(300));
        assert_eq!(code_scripts(&html), 1);
        let html = format!("<script x=\"{}", "€".repeat(300));
        assert_eq!(code_scripts(&html), 1);
        // A page of `<script` and no end tag is one script (the rest is its text), found
        // without searching the page once per `<script`.
        assert_eq!(code_scripts(&"<script ".repeat(200_000)), 1);
        assert_eq!(code_scripts(&"<script></script>".repeat(100_000)), 100_000);
    }
}
