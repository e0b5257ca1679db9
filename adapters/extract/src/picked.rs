//! The content the caller picked with `include_selectors`.

use dom_query::{Document as QueryDocument, Matcher, NodeId, NodeRef as QueryNode};

/// Every match that is not inside another match, in document order, copied into a document
/// of their own. A table's rows and cells go into a table (and cells into a row) again, one
/// for each they came from: outside one they would be read as one run of text.
pub(crate) fn outermost(query: &QueryDocument, m: &Matcher) -> QueryDocument {
    let picked = query.select_matcher(m);
    let ids: std::collections::HashSet<_> = picked.nodes().iter().map(|n| n.id).collect();
    let doc = QueryDocument::from("<body></body>");
    {
        let body = doc.select_single("body");
        // The table and the row last copied into, by the page's table and row they stand for.
        let mut table: Option<(Option<NodeId>, QueryNode)> = None;
        let mut row: Option<(Option<NodeId>, QueryNode)> = None;
        let within = |node: &QueryNode, name: &str| {
            node.ancestors_it(None)
                .find(|a| a.has_name(name))
                .map(|a| a.id)
        };
        for node in picked.nodes() {
            if node.ancestors_it(None).any(|a| ids.contains(&a.id)) {
                continue;
            }
            let name = node.node_name().unwrap_or_default();
            // The whole page or its body picked (`html`, `*`, `body`): the body's content,
            // not a `<head>` or a `<body>` inside the body.
            if matches!(name.as_ref(), "html" | "body") {
                if let Some(page_body) = query.body() {
                    body.append_html(page_body.inner_html());
                }
                (table, row) = (None, None);
                continue;
            }
            let copy = dom_query::Selection::from(*node);
            if !TABLE_PARTS.contains(&name.as_ref()) {
                body.append_selection(&copy);
                (table, row) = (None, None);
                continue;
            }
            let from_table = within(node, "table");
            let into_table = match &table {
                Some((t, copy)) if *t == from_table => *copy,
                _ => {
                    let t = doc.tree.new_element("table");
                    body.nodes()[0].append_child(&t);
                    table = Some((from_table, t));
                    row = None;
                    t
                }
            };
            if matches!(name.as_ref(), "td" | "th") {
                let from_row = within(node, "tr");
                let into_row = match &row {
                    Some((r, copy)) if *r == from_row => *copy,
                    _ => {
                        let r = doc.tree.new_element("tr");
                        into_table.append_child(&r);
                        row = Some((from_row, r));
                        r
                    }
                };
                dom_query::Selection::from(into_row).append_selection(&copy);
            } else {
                dom_query::Selection::from(into_table).append_selection(&copy);
                row = None;
            }
        }
    }
    doc
}

/// Elements that are read as a table's only inside one.
const TABLE_PARTS: &[&str] = &[
    "tr", "td", "th", "thead", "tbody", "tfoot", "caption", "colgroup", "col",
];

#[cfg(test)]
mod tests {
    use svc_ports::{ExtractOptions, PageExtractor};

    use crate::HtmlExtractor;

    #[test]
    fn include_selectors_may_pick_a_tables_rows_or_cells() {
        let page = r#"<html><head><title>Prices</title></head><body><table><tr><th>Name</th><th>Price</th></tr>
            <tr><td>Tea</td><td class="price">3 EUR</td></tr>
            <tr><td>Cake</td><td class="price">4 EUR</td></tr></table></body></html>"#;
        let pick = |s: &str| {
            HtmlExtractor
                .extract(
                    page,
                    "https://example.com/prices",
                    &ExtractOptions {
                        include_selectors: vec![s.into()],
                        ..Default::default()
                    },
                )
                .unwrap()
                .content
        };
        let rows = pick("tr");
        assert!(rows.text.contains("Tea") && rows.text.contains("3 EUR"));
        assert!(!rows.text.contains("Tea3"), "{}", rows.text);
        assert!(rows.markdown.contains('|'), "{}", rows.markdown);
        // The whole page picked is its body's content: no title from the head, no body in
        // the body.
        for whole in ["html", "body", "*"] {
            let content = pick(whole);
            assert!(
                !content.text.contains("Prices"),
                "{whole}: {}",
                content.text
            );
            assert!(!content.html.contains("<body"), "{whole}: {}", content.html);
            assert!(content.text.contains("Tea"), "{whole}: {}", content.text);
        }
        let prices = pick("td.price");
        assert!(!prices.text.contains("EUR4"), "{}", prices.text);
    }
}
