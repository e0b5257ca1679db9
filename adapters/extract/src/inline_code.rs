//! What the parser need not read: inline scripts, styles and comments, cut out of the page's
//! text before it is parsed.

/// `html` without inline `<script>` (except JSON-LD, which is metadata), `<style>` elements
/// and comments; scripts with `src` stay (they are empty, and they are challenge signals).
/// Comments are never read (nor conditional comments' markup, which no browser of today runs)
/// and are a few percent of a page's bytes; a tag-like string inside one is left alone. Where
/// a closing tag or a comment's end is missing, the rest of the document is kept as it was.
pub fn without_inline_code(html: &str) -> std::borrow::Cow<'_, str> {
    let bytes = html.as_bytes();
    let starts_with_ci = |at: usize, what: &str| {
        bytes
            .get(at..at + what.len())
            .is_some_and(|b| b.eq_ignore_ascii_case(what.as_bytes()))
    };
    // `what` is a closing tag: every candidate starts with `<`, found by memchr (scripts are
    // about half of a page's bytes, and this skips over them).
    let find_ci = |from: usize, what: &str| -> Option<usize> {
        debug_assert!(what.starts_with('<'));
        memchr::memchr_iter(b'<', bytes.get(from..)?)
            .map(|i| from + i)
            .find(|&i| starts_with_ci(i, what))
    };
    let mut out: Option<String> = None;
    let mut copied_to = 0;
    let mut i = 0;
    while let Some(offset) = html[i..].find('<') {
        let at = i + offset;
        if starts_with_ci(at, "<!--") {
            let Some(end) = crate::depth::comment_end(bytes, at + 4) else {
                break;
            };
            let o = out.get_or_insert_with(|| String::with_capacity(html.len()));
            o.push_str(&html[copied_to..at]);
            copied_to = end;
            i = end;
            continue;
        }
        let tag = if starts_with_ci(at, "<script") {
            "script"
        } else if starts_with_ci(at, "<style") {
            "style"
        } else {
            i = at + 1;
            continue;
        };
        let name_end = at + 1 + tag.len();
        // `<scripts>` or `<style-x>` are other elements.
        if !matches!(
            bytes.get(name_end),
            Some(b' ' | b'\t' | b'\n' | b'\r' | b'\x0c' | b'>' | b'/')
        ) {
            i = name_end;
            continue;
        }
        let Some(open_end) = html[name_end..].find('>').map(|e| name_end + e) else {
            break;
        };
        let attributes = html[name_end..open_end].to_ascii_lowercase();
        let keep =
            tag == "script" && (attributes.contains("ld+json") || attributes.contains("src"));
        let close = format!("</{tag}");
        let Some(close_at) = find_ci(open_end + 1, &close) else {
            break;
        };
        let Some(element_end) = html[close_at..].find('>').map(|e| close_at + e + 1) else {
            break;
        };
        if !keep {
            let o = out.get_or_insert_with(|| String::with_capacity(html.len()));
            o.push_str(&html[copied_to..at]);
            copied_to = element_end;
        }
        i = element_end;
    }
    match out {
        Some(mut o) => {
            o.push_str(&html[copied_to..]);
            std::borrow::Cow::Owned(o)
        }
        None => std::borrow::Cow::Borrowed(html),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn inline_scripts_styles_and_comments_go_but_json_ld_and_external_scripts_stay() {
        let html = "<head><SCRIPT>var a = '<b>';</SCRIPT><style>p{}</style>\
            <script type=\"application/ld+json\">{\"@type\":\"Thing\"}</script>\
            <script src=\"https://challenges.cloudflare.com/x.js\"></script>\
            <!-- <script> in a comment --><scripts>custom</scripts></head><body><p>Hi</p></body>";
        let stripped = without_inline_code(html);
        assert!(!stripped.contains("var a"));
        assert!(!stripped.contains("p{}"));
        assert!(stripped.contains("ld+json"));
        assert!(stripped.contains("challenges.cloudflare.com"));
        assert!(!stripped.contains("in a comment"));
        assert!(stripped.contains("<scripts>custom</scripts>"));
        // The comment's `<script>` opened nothing: what follows it is all there.
        assert!(stripped.contains("</head><body>"));
        assert!(stripped.contains("<p>Hi</p>"));
        // Nothing to strip: no copy. An unclosed script: the rest is left as it was.
        assert!(matches!(
            without_inline_code("<p>x</p>"),
            std::borrow::Cow::Borrowed(_)
        ));
        assert_eq!(
            without_inline_code("<p>a</p><script>never closed"),
            "<p>a</p><script>never closed"
        );
        assert_eq!(
            without_inline_code("<p>a<!-- b --></p><!-- never closed <p>c</p>"),
            "<p>a</p><!-- never closed <p>c</p>"
        );
    }
}
