//! HTML extraction: the page is parsed once, with dom_query, and read for its links, forms,
//! metadata and obstacle signals before Readability (dom_smoothie, on the same DOM) takes its
//! main content. Kept behind this adapter so the HTML parser can be swapped without touching
//! services.

mod article;
mod breaks;
mod clean;
mod comments;
mod depth;
pub mod evaluation;
mod inline_code;
mod lead;
mod metadata;
mod obstacles;
mod picked;
mod reader;
mod retry;
mod scan;
mod sections;
pub mod shell;
mod tail;
mod teasers;
mod widen;

pub use inline_code::without_inline_code;
pub use reader::HtmlExtractor;

use std::collections::HashMap;

use dom_query::{Document as Dom, Matcher, NodeRef, Selection};
use svc_ports::{FieldOption, Form, FormField, Link, PageMetadata, fetch::site_of};
use url::Url;

/// A parsed page and the URL its relative links resolve against.
pub struct Document {
    dom: Dom,
    base: Url,
    page: Url,
    found: scan::Found,
}

/// `s` with every run of whitespace one space, and none at either end.
fn collapse(s: &str) -> String {
    // Without the intermediate `Vec` of words: every link text and label goes through here.
    let mut out = String::with_capacity(s.len());
    for word in s.split_whitespace() {
        if !out.is_empty() {
            out.push(' ');
        }
        out.push_str(word);
    }
    out
}

fn attr(node: &NodeRef, name: &str) -> Option<String> {
    node.attr(name).map(|v| v.to_string())
}

fn text(node: &NodeRef) -> String {
    node.text().to_string()
}

/// The elements under `node` that match `selector` (a constant of this crate: it parses), in
/// document order.
fn select<'a>(node: NodeRef<'a>, selector: &str) -> Vec<NodeRef<'a>> {
    Selection::from(node).select(selector).nodes().to_vec()
}

fn select_first<'a>(node: NodeRef<'a>, selector: &str) -> Option<NodeRef<'a>> {
    Selection::from(node)
        .select_single(selector)
        .nodes()
        .first()
        .copied()
}

impl Document {
    /// Parses `html` fetched from `page_url`; a `<base href>` changes where links resolve.
    pub fn parse(html: &str, page_url: &Url) -> Self {
        Self::read(depth::parse(html), page_url)
    }

    /// `html` parsed without the matches of `exclude`: they are removed before anything is
    /// read from the page (its links, forms, metadata and obstacles too).
    pub(crate) fn parse_without(html: &str, page_url: &Url, exclude: &[Matcher]) -> Self {
        Self::read(depth::parse_without(html, exclude), page_url)
    }

    fn read(dom: Dom, page_url: &Url) -> Self {
        let found = scan::Found::walk(dom.root());
        let base = found
            .base
            .and_then(|b| attr(&scan::Found::node(&dom.tree, b), "href"))
            .and_then(|h| page_url.join(h.trim()).ok())
            .unwrap_or_else(|| page_url.clone());
        Self {
            dom,
            base,
            page: page_url.clone(),
            found,
        }
    }

    /// What the walk at parse time found.
    pub(crate) fn found(&self) -> &scan::Found {
        &self.found
    }

    /// The nodes of `ids` in this document.
    pub(crate) fn nodes<'a>(
        &'a self,
        ids: &'a [dom_query::NodeId],
    ) -> impl Iterator<Item = NodeRef<'a>> {
        ids.iter().map(|id| scan::Found::node(&self.dom.tree, *id))
    }

    /// The document node.
    pub fn root(&self) -> NodeRef<'_> {
        self.dom.root()
    }

    /// The parsed document, for whoever reads on after this (Readability changes it).
    pub fn into_dom(self) -> Dom {
        self.dom
    }

    pub fn base(&self) -> &Url {
        &self.base
    }

    fn absolute(&self, href: &str) -> Option<Url> {
        self.base.join(href.trim()).ok()
    }

    /// Every `<a href>` and `<area href>` with an http(s) target, in document order.
    pub fn links(&self) -> Vec<Link> {
        self.nodes(&self.found.links)
            .filter_map(|a| {
                let url = self.absolute(&a.attr("href")?)?;
                if !matches!(url.scheme(), "http" | "https") {
                    return None;
                }
                let text = collapse(&a.text());
                let text = if text.is_empty() {
                    a.attr("aria-label")
                        .or_else(|| a.attr("title"))
                        .map(|t| collapse(&t))
                        .unwrap_or_default()
                } else {
                    text
                };
                let rel = a
                    .attr("rel")
                    .map(|r| r.split_whitespace().map(str::to_ascii_lowercase).collect())
                    .unwrap_or_default();
                Some(Link {
                    same_site: same_site(&self.page, &url),
                    url: url.to_string(),
                    text,
                    rel,
                })
            })
            .collect()
    }

    /// Every `<form>` with its fillable fields (hidden ones too: they are submitted).
    pub fn forms(&self) -> Vec<Form> {
        if self.found.forms.is_empty() {
            return Vec::new();
        }
        // `<label for>` texts by id, the first label for an id winning, read once for every
        // field of every form.
        let mut labels: HashMap<String, String> = HashMap::new();
        for l in self.nodes(&self.found.labels) {
            if let Some(id) = attr(&l, "for") {
                labels.entry(id).or_insert_with(|| collapse(&l.text()));
            }
        }
        self.nodes(&self.found.forms)
            .map(|form| {
                let action = attr(&form, "action")
                    .filter(|a| !a.trim().is_empty())
                    .and_then(|a| self.absolute(&a))
                    .unwrap_or_else(|| self.page.clone());
                let method = match attr(&form, "method").map(|m| m.trim().to_ascii_uppercase()) {
                    Some(m) if m == "POST" => "POST".to_owned(),
                    _ => "GET".to_owned(),
                };
                let enctype = attr(&form, "enctype")
                    .map(|e| e.trim().to_ascii_lowercase())
                    .filter(|e| e == "multipart/form-data" || e == "text/plain")
                    .unwrap_or_else(|| "application/x-www-form-urlencoded".to_owned());
                Form {
                    id: attr(&form, "id"),
                    name: attr(&form, "name"),
                    action: action.to_string(),
                    method,
                    enctype,
                    fields: fields(form, &labels),
                }
            })
            .collect()
    }

    pub fn metadata(&self) -> PageMetadata {
        metadata::extract(self)
    }
}

fn fields(form: NodeRef, labels: &HashMap<String, String>) -> Vec<FormField> {
    select(form, "input, select, textarea")
        .into_iter()
        .filter_map(|control| {
            let name = attr(&control, "name")?.trim().to_owned();
            if name.is_empty() || control.has_attr("disabled") {
                return None;
            }
            let tag = control
                .node_name()
                .map(|n| n.to_string())
                .unwrap_or_default();
            let field_type = match tag.as_str() {
                "input" => attr(&control, "type")
                    .map(|t| t.trim().to_ascii_lowercase())
                    .unwrap_or_else(|| "text".into()),
                other => other.to_owned(),
            };
            if matches!(field_type.as_str(), "submit" | "reset" | "button" | "image") {
                return None;
            }
            let mut options = Vec::new();
            let default_value = match tag.as_str() {
                "select" => {
                    for o in select(control, "option") {
                        let label = collapse(&o.text());
                        let value = attr(&o, "value").unwrap_or_else(|| label.clone());
                        options.push(FieldOption {
                            value,
                            label,
                            selected: o.has_attr("selected"),
                        });
                    }
                    options
                        .iter()
                        .find(|o| o.selected)
                        .or(options.first())
                        .map(|o| o.value.clone())
                }
                "textarea" => Some(text(&control)).filter(|t| !t.is_empty()),
                _ if matches!(field_type.as_str(), "checkbox" | "radio") => control
                    .has_attr("checked")
                    .then(|| attr(&control, "value").unwrap_or_else(|| "on".to_owned())),
                _ => attr(&control, "value"),
            };
            let label = label_for(&control, labels).or_else(|| {
                attr(&control, "aria-label")
                    .or_else(|| attr(&control, "placeholder"))
                    .map(|l| collapse(&l))
                    .filter(|l| !l.is_empty())
            });
            Some(FormField {
                label,
                required: control.has_attr("required")
                    || attr(&control, "aria-required").as_deref() == Some("true"),
                name,
                field_type,
                default_value,
                options,
            })
        })
        .collect()
}

/// The `<label for>` naming the control's id, else the `<label>` around it.
fn label_for(control: &NodeRef, labels: &HashMap<String, String>) -> Option<String> {
    if let Some(by_for) = attr(control, "id")
        .filter(|i| !i.is_empty())
        .and_then(|id| labels.get(&id))
    {
        return Some(by_for.clone()).filter(|t| !t.is_empty());
    }
    control
        .ancestors_it(None)
        .find(|a| a.has_name("label"))
        .map(|l| collapse(&l.text()))
        .filter(|t| !t.is_empty())
}

fn same_site(page: &Url, link: &Url) -> bool {
    match (page.host_str(), link.host_str()) {
        (Some(a), Some(b)) => a.eq_ignore_ascii_case(b) || site_of(a) == site_of(b),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    proptest::proptest! {
        #[test]
        fn collapse_joins_the_words_with_one_space(s in "(\\PC|\\s){0,40}") {
            proptest::prop_assert_eq!(collapse(&s), s.split_whitespace().collect::<Vec<_>>().join(" "));
        }
    }

    fn doc(html: &str) -> Document {
        Document::parse(
            html,
            &Url::parse("https://shop.example.com/a/page.html").unwrap(),
        )
    }

    #[test]
    fn links_are_absolute_with_rel_and_site() {
        let d = doc(
            r#"<base href="/b/"><a href="x">X <b>y</b></a><a rel="nofollow Author" href="https://other.org/">o</a>
            <a href="https://www.example.com/z" title="zed"></a><a href="mailto:a@b.c">m</a><a href="javascript:void(0)">j</a>"#,
        );
        let links = d.links();
        assert_eq!(links.len(), 3);
        assert_eq!(links[0].url, "https://shop.example.com/b/x");
        assert_eq!(links[0].text, "X y");
        assert!(links[0].same_site);
        assert_eq!(links[1].rel, vec!["nofollow", "author"]);
        assert!(!links[1].same_site);
        assert!(links[2].same_site);
        assert_eq!(links[2].text, "zed");
    }

    #[test]
    fn forms_carry_fields_labels_and_defaults() {
        let d = doc(
            r#"<form id="f" action="/search" method="post" enctype="multipart/form-data">
            <label for="q">Search for</label><input id="q" name="q" required value="shoes">
            <label>Size <select name="size"><option>S</option><option value="m" selected>Medium</option></select></label>
            <textarea name="note" placeholder="Anything else?">hi</textarea>
            <input type="checkbox" name="gift" checked>
            <input type="hidden" name="csrf" value="t0k">
            <input type="submit" name="go" value="Go"><input name="off" disabled>
            </form><form><input name="x" aria-label="Ex"></form>"#,
        );
        let forms = d.forms();
        assert_eq!(forms.len(), 2);
        let f = &forms[0];
        assert_eq!(
            (f.action.as_str(), f.method.as_str(), f.enctype.as_str()),
            (
                "https://shop.example.com/search",
                "POST",
                "multipart/form-data"
            )
        );
        let names: Vec<_> = f.fields.iter().map(|x| x.name.as_str()).collect();
        assert_eq!(names, ["q", "size", "note", "gift", "csrf"]);
        assert_eq!(f.fields[0].label.as_deref(), Some("Search for"));
        assert!(f.fields[0].required);
        assert_eq!(f.fields[0].default_value.as_deref(), Some("shoes"));
        assert_eq!(f.fields[1].field_type, "select");
        assert_eq!(f.fields[1].default_value.as_deref(), Some("m"));
        assert_eq!(f.fields[1].options.len(), 2);
        assert!(f.fields[1].label.as_deref().unwrap().starts_with("Size"));
        assert_eq!(f.fields[2].label.as_deref(), Some("Anything else?"));
        assert_eq!(f.fields[3].default_value.as_deref(), Some("on"));
        assert_eq!(f.fields[4].field_type, "hidden");
        let g = &forms[1];
        assert_eq!(
            (g.method.as_str(), g.action.as_str()),
            ("GET", "https://shop.example.com/a/page.html")
        );
        assert_eq!(g.fields[0].label.as_deref(), Some("Ex"));
    }
}
