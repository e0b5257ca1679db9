//! HTML extraction with kuchikiki: the links, forms and metadata of a page. Kept behind this
//! adapter so the HTML parser can be swapped without touching services.

pub mod evaluation;
mod metadata;
mod reader;
pub mod shell;

pub use reader::{HtmlExtractor, without_inline_code};

use kuchikiki::{NodeRef, traits::TendrilSink};
use svc_ports::{FieldOption, Form, FormField, Link, PageMetadata};
use url::Url;

/// A parsed page and the URL its relative links resolve against.
pub struct Document {
    root: NodeRef,
    base: Url,
    page: Url,
}

fn collapse(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

fn attr(node: &NodeRef, name: &str) -> Option<String> {
    node.as_element()?
        .attributes
        .borrow()
        .get(name)
        .map(str::to_owned)
}

impl Document {
    /// Parses `html` fetched from `page_url`; a `<base href>` changes where links resolve.
    pub fn parse(html: &str, page_url: &Url) -> Self {
        let root = kuchikiki::parse_html().one(html).document_node;
        let base = root
            .select_first("base[href]")
            .ok()
            .and_then(|b| {
                b.attributes
                    .borrow()
                    .get("href")
                    .and_then(|h| page_url.join(h.trim()).ok())
            })
            .unwrap_or_else(|| page_url.clone());
        Self {
            root,
            base,
            page: page_url.clone(),
        }
    }

    pub fn root(&self) -> &NodeRef {
        &self.root
    }

    fn absolute(&self, href: &str) -> Option<Url> {
        self.base.join(href.trim()).ok()
    }

    /// Every `<a href>` and `<area href>` with an http(s) target, in document order.
    pub fn links(&self) -> Vec<Link> {
        let Ok(anchors) = self.root.select("a[href], area[href]") else {
            return Vec::new();
        };
        anchors
            .filter_map(|a| {
                let attrs = a.attributes.borrow();
                let url = self.absolute(attrs.get("href")?)?;
                if !matches!(url.scheme(), "http" | "https") {
                    return None;
                }
                let text = collapse(&a.text_contents());
                let text = if text.is_empty() {
                    attrs
                        .get("aria-label")
                        .or(attrs.get("title"))
                        .map(collapse)
                        .unwrap_or_default()
                } else {
                    text
                };
                let rel = attrs
                    .get("rel")
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
        let Ok(forms) = self.root.select("form") else {
            return Vec::new();
        };
        forms
            .map(|form| {
                let node = form.as_node();
                let attrs = form.attributes.borrow();
                let action = attrs
                    .get("action")
                    .filter(|a| !a.trim().is_empty())
                    .and_then(|a| self.absolute(a))
                    .unwrap_or_else(|| self.page.clone());
                let method = match attrs.get("method").map(|m| m.trim().to_ascii_uppercase()) {
                    Some(m) if m == "POST" => "POST".to_owned(),
                    _ => "GET".to_owned(),
                };
                let enctype = attrs
                    .get("enctype")
                    .map(|e| e.trim().to_ascii_lowercase())
                    .filter(|e| e == "multipart/form-data" || e == "text/plain")
                    .unwrap_or_else(|| "application/x-www-form-urlencoded".to_owned());
                Form {
                    id: attrs.get("id").map(str::to_owned),
                    name: attrs.get("name").map(str::to_owned),
                    action: action.to_string(),
                    method,
                    enctype,
                    fields: self.fields(node),
                }
            })
            .collect()
    }

    fn fields(&self, form: &NodeRef) -> Vec<FormField> {
        let Ok(controls) = form.select("input, select, textarea") else {
            return Vec::new();
        };
        controls
            .filter_map(|control| {
                let node = control.as_node();
                let attrs = control.attributes.borrow();
                let name = attrs.get("name")?.trim().to_owned();
                if name.is_empty() || attrs.contains("disabled") {
                    return None;
                }
                let tag = control.name.local.to_string();
                let field_type = match tag.as_str() {
                    "input" => attrs
                        .get("type")
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
                        for o in node.select("option").into_iter().flatten() {
                            let oa = o.attributes.borrow();
                            let label = collapse(&o.text_contents());
                            let value = oa
                                .get("value")
                                .map(str::to_owned)
                                .unwrap_or_else(|| label.clone());
                            options.push(FieldOption {
                                value,
                                label,
                                selected: oa.contains("selected"),
                            });
                        }
                        options
                            .iter()
                            .find(|o| o.selected)
                            .or(options.first())
                            .map(|o| o.value.clone())
                    }
                    "textarea" => Some(control.text_contents()).filter(|t| !t.is_empty()),
                    _ if matches!(field_type.as_str(), "checkbox" | "radio") => attrs
                        .contains("checked")
                        .then(|| attrs.get("value").unwrap_or("on").to_owned()),
                    _ => attrs.get("value").map(str::to_owned),
                };
                Some(FormField {
                    label: self.label_for(node, attrs.get("id")).or_else(|| {
                        attrs
                            .get("aria-label")
                            .or(attrs.get("placeholder"))
                            .map(collapse)
                            .filter(|l| !l.is_empty())
                    }),
                    required: attrs.contains("required")
                        || attrs.get("aria-required") == Some("true"),
                    name,
                    field_type,
                    default_value,
                    options,
                })
            })
            .collect()
    }

    fn label_for(&self, control: &NodeRef, id: Option<&str>) -> Option<String> {
        if let Some(id) = id.filter(|i| !i.is_empty()) {
            let by_for = self
                .root
                .select("label[for]")
                .ok()?
                .find(|l| l.attributes.borrow().get("for") == Some(id));
            if let Some(l) = by_for {
                return Some(collapse(&l.text_contents())).filter(|t| !t.is_empty());
            }
        }
        control
            .ancestors()
            .find(|a| a.as_element().is_some_and(|e| &*e.name.local == "label"))
            .map(|l| collapse(&l.text_contents()))
            .filter(|t| !t.is_empty())
    }

    pub fn metadata(&self) -> PageMetadata {
        metadata::extract(self)
    }
}

/// The registrable part of a host, approximated without the public-suffix list: the last two
/// labels, or three under a two-letter country code with a generic second level (`co.uk`).
fn site_of(host: &str) -> String {
    let labels: Vec<&str> = host.trim_end_matches('.').split('.').collect();
    let n = labels.len();
    let take = if n >= 3
        && labels[n - 1].len() == 2
        && matches!(
            labels[n - 2],
            "co" | "com" | "net" | "org" | "gov" | "ac" | "edu" | "ne" | "or"
        ) {
        3
    } else {
        2
    };
    labels[n.saturating_sub(take)..]
        .join(".")
        .to_ascii_lowercase()
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

    #[test]
    fn sites_compare_by_registrable_domain() {
        assert_eq!(site_of("a.b.example.co.uk"), "example.co.uk");
        assert_eq!(site_of("www.example.com"), "example.com");
        assert_eq!(site_of("localhost"), "localhost");
    }
}
