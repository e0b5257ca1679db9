//! Paragraphs made with line breaks inside one `<p>`: `<p>A link!<br><br>On the second day
//! ...</p>` shows as two paragraphs. Readability makes paragraphs of the breaks too, but as a
//! `<p>` cannot hold paragraphs it turns the `<p>` into a `<div>`, and then judges that `<div>`
//! by its share of links like a sidebar box: a paragraph led by a link goes, story and all.
//! Splitting it beforehand into the paragraphs a reader sees keeps them paragraphs.

use std::collections::HashSet;

use dom_query::{Document, NodeRef};

/// Splits every `<p>` at each run of two or more `<br>` (with only blanks between them) into
/// as many `<p>` as it shows; the first is the element itself, the others get its attributes
/// but its `id` (a hidden or sidebar paragraph stays hidden or sidebar, as the `<div>`
/// Readability would have made of it does).
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
        let first: HashSet<_> = segments[0].iter().map(|n| n.id).collect();
        // The first run stays where it is, in the element itself; each other gets a `<p>`.
        let mut last = *p;
        for segment in &segments[1..] {
            let next = doc.tree.new_element("p");
            for a in p.attrs().iter().filter(|a| &*a.name.local != "id") {
                next.set_attr(&a.name.local, &a.value);
            }
            last.insert_after(&next);
            for node in segment {
                next.append_child(node);
            }
            last = next;
        }
        // What is left in the element past its first run (the breaks and blanks between
        // paragraphs) goes.
        for child in p.children() {
            if !first.contains(&child.id) {
                child.remove_from_parent();
            }
        }
    }
}

/// The children of a paragraph in the runs a reader sees as paragraphs: split at each run of
/// two or more `<br>` and blank text, runs holding nothing but blanks left out.
fn segments<'a>(children: &[NodeRef<'a>]) -> Vec<Vec<NodeRef<'a>>> {
    // As Readability tells a run of breaks: anything but an element, blank (a comment too).
    let blank = |n: &NodeRef| !n.is_element() && n.text().trim().is_empty();
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
            "<body><p class=\"x\"><a href=\"/a\">A template</a>!</p><p class=\"x\"> On the \
             <b>second</b> day<br>a line</p></body>"
        );
    }

    #[test]
    fn the_paragraphs_keep_the_elements_attributes_but_its_id() {
        assert_eq!(
            split("<p id=\"i\" class=\"share\" hidden>A<br><br>B</p>"),
            "<body><p id=\"i\" class=\"share\" hidden=\"\">A</p>\
             <p class=\"share\" hidden=\"\">B</p></body>"
        );
    }

    #[test]
    fn a_comment_between_breaks_is_a_blank_as_readability_reads_it() {
        assert_eq!(
            split("<p>A<br><!-- ad --><br>B<br><br><!-- ad --></p>"),
            "<body><p>A</p><p>B</p></body>"
        );
    }

    /// One paragraph of many lines (a poem, a log), split whole.
    #[test]
    fn a_paragraph_of_many_lines_is_split_whole() {
        let lines = (0..50_000)
            .map(|i| format!("line {i}<br>"))
            .collect::<String>();
        let doc = Document::from(format!("<p>{lines}<br>last</p>").as_str());
        split_paragraphs(&doc);
        let ps = doc.select("p");
        assert_eq!(ps.length(), 2);
        assert!(ps.nodes()[0].text().contains("line 49999"));
        assert_eq!(&*ps.nodes()[1].text(), "last");
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
