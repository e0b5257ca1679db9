//! Paragraphs made with line breaks inside one `<p>`: `<p>A link!<br><br>On the second day
//! ...</p>` shows as two paragraphs. Readability makes paragraphs of the breaks too, but as a
//! `<p>` cannot hold paragraphs it turns the `<p>` into a `<div>`, and then judges that `<div>`
//! by its share of links like a sidebar box: a paragraph led by a link goes, story and all.
//! Splitting it beforehand into the paragraphs a reader sees keeps them paragraphs.

use dom_query::{Document, NodeRef};

/// Splits every `<p>` at each run of two or more `<br>` (with only blanks between them) into
/// as many `<p>` as it shows; the first keeps the element and its attributes.
pub(crate) fn split_paragraphs(doc: &Document) {
    for p in doc.select("p").nodes() {
        let children = p.children();
        if !children.iter().any(|c| c.has_name("br")) {
            continue;
        }
        let segments = segments(&children);
        if segments.len() < 2 {
            continue;
        }
        let mut last = *p;
        for (i, segment) in segments.iter().enumerate() {
            let holder = if i == 0 {
                *p
            } else {
                let next = doc.tree.new_element("p");
                last.insert_after(&next);
                next
            };
            for node in segment {
                holder.append_child(node);
            }
            last = holder;
        }
        // The breaks and blanks between paragraphs are left behind in the first: drop them.
        for child in p.children() {
            if !segments[0].iter().any(|n| n.id == child.id) {
                child.remove_from_parent();
            }
        }
    }
}

/// The children of a paragraph in the runs a reader sees as paragraphs: split at each run of
/// two or more `<br>` and blank text, runs holding nothing but blanks left out.
fn segments<'a>(children: &[NodeRef<'a>]) -> Vec<Vec<NodeRef<'a>>> {
    let blank = |n: &NodeRef| n.is_text() && n.text().trim().is_empty();
    let mut segments = vec![Vec::new()];
    let mut i = 0;
    while i < children.len() {
        let node = children[i];
        if node.has_name("br") {
            // The run of breaks and blanks from here, and how many breaks it holds.
            let mut end = i;
            let mut breaks = 0;
            while end < children.len() && (children[end].has_name("br") || blank(&children[end])) {
                breaks += usize::from(children[end].has_name("br"));
                end += 1;
            }
            if breaks >= 2 {
                segments.push(Vec::new());
                i = end;
                continue;
            }
        }
        segments
            .last_mut()
            .expect("one segment at least")
            .push(node);
        i += 1;
    }
    segments.retain(|s| s.iter().any(|n| !blank(n) && !n.has_name("br")));
    segments
}

#[cfg(test)]
mod tests {
    use super::*;

    fn split(html: &str) -> String {
        let doc = Document::from(html);
        split_paragraphs(&doc);
        doc.select("body").html().to_string()
    }

    #[test]
    fn two_breaks_make_two_paragraphs_and_one_break_is_a_line() {
        assert_eq!(
            split(
                "<p class=\"x\"><a href=\"/a\">A template</a>!<br> <br> On the <b>second</b> day\
                 <br>a line</p>"
            ),
            "<body><p class=\"x\"><a href=\"/a\">A template</a>!</p><p> On the <b>second</b> \
             day<br>a line</p></body>"
        );
    }

    #[test]
    fn breaks_at_either_end_or_in_a_row_make_no_empty_paragraph() {
        assert_eq!(
            split("<p><br><br>One<br><br><br><br>Two<br><br></p><p>Three</p>"),
            "<body><p>One</p><p>Two</p><p>Three</p></body>"
        );
        // Nothing to split: left as it is.
        assert_eq!(
            split("<p>One<br>Two</p><div>A<br><br>B</div>"),
            "<body><p>One<br>Two</p><div>A<br><br>B</div></body>"
        );
    }
}
