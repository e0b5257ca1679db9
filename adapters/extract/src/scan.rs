//! The elements every page is read for (links, forms, labels, `<base>`, the first `<title>` and
//! `<h1>`, challenge widgets and scripts), found in one walk over the document. Each
//! `select` is a walk of its own with a selector matched against every element; six of them
//! on every page cost more than the walk that finds them all. The matching rules are the
//! selectors' (kept beside each test below and checked against them in this module's tests).

use dom_query::{Element, NodeId, NodeRef, Tree};

/// Classes and ids of challenge widgets: `.g-recaptcha, .h-captcha, .cf-turnstile,
/// #challenge-form, #cf-challenge-running, #px-captcha`.
const WIDGET_CLASSES: &[&str] = &["g-recaptcha", "h-captcha", "cf-turnstile"];
const WIDGET_IDS: &[&str] = &["challenge-form", "cf-challenge-running", "px-captcha"];
/// `iframe[src*=...]` of challenge widgets.
const WIDGET_FRAMES: &[&str] = &["recaptcha", "hcaptcha"];
/// `script[src*=...]` loaded by challenge interstitials (and by any page with a guarded form).
const CHALLENGE_SCRIPTS: &[&str] = &["challenges.cloudflare.com", "hcaptcha.com", "recaptcha/api"];

/// What one walk found, in document order, as ids into the document's tree.
#[derive(Debug, Default)]
pub(crate) struct Found {
    /// `a[href], area[href]`
    pub links: Vec<NodeId>,
    /// `form`
    pub forms: Vec<NodeId>,
    /// `label[for]`
    pub labels: Vec<NodeId>,
    /// The first `base[href]`.
    pub base: Option<NodeId>,
    /// The first `title`.
    pub title: Option<NodeId>,
    /// The first `h1`.
    pub h1: Option<NodeId>,
    /// Challenge widgets (see the constants above, and `[data-sitekey]`).
    pub widgets: Vec<NodeId>,
    /// Whether a challenge script is loaded.
    pub challenge_script: bool,
    /// `meta`
    pub metas: Vec<NodeId>,
    /// `script[type='application/ld+json']` (the value read case-insensitively, as a
    /// selector reads `type` in an HTML document)
    pub json_ld: Vec<NodeId>,
    /// `link`
    pub link_tags: Vec<NodeId>,
}

impl Found {
    /// Walks every element under `root` (the document node), in document order.
    pub fn walk(root: NodeRef) -> Self {
        let mut found = Found::default();
        let mut next = root.first_child();
        while let Some(node) = next {
            found.visit(&node);
            next = following(node, root.id);
        }
        found
    }

    fn visit(&mut self, node: &NodeRef) {
        let Some(el) = node.element_ref() else {
            return;
        };
        let attr = |name: &str| plain_attr(&el, name);
        let id = node.id;
        match &*el.name.local {
            "a" | "area" if attr("href").is_some() => self.links.push(id),
            "form" => self.forms.push(id),
            "label" if attr("for").is_some() => self.labels.push(id),
            "base" if self.base.is_none() && attr("href").is_some() => self.base = Some(id),
            "title" if self.title.is_none() => self.title = Some(id),
            "h1" if self.h1.is_none() => self.h1 = Some(id),
            "script" => {
                self.challenge_script |= attr("src")
                    .is_some_and(|src| CHALLENGE_SCRIPTS.iter().any(|s| src.contains(s)));
                if attr("type").is_some_and(|t| t.eq_ignore_ascii_case("application/ld+json")) {
                    self.json_ld.push(id);
                }
            }
            "meta" => self.metas.push(id),
            "link" => self.link_tags.push(id),
            _ => {}
        }
        let frame = || {
            &*el.name.local == "iframe"
                && attr("src").is_some_and(|src| WIDGET_FRAMES.iter().any(|s| src.contains(s)))
        };
        let widget = attr("class").is_some_and(|classes| {
            classes
                .split_ascii_whitespace()
                .any(|c| WIDGET_CLASSES.contains(&c))
        }) || attr("id").is_some_and(|v| WIDGET_IDS.contains(&v))
            || frame()
            || attr("data-sitekey").is_some();
        if widget {
            self.widgets.push(id);
        }
    }

    /// The node of `id` in `tree`.
    pub fn node(tree: &Tree, id: NodeId) -> NodeRef<'_> {
        NodeRef::new(id, tree)
    }
}

/// The value of the attribute `name` in no namespace, as a selector's `[name]` reads it: an
/// SVG link's `xlink:href` is not an `href`.
fn plain_attr<'e>(el: &'e Element, name: &str) -> Option<&'e str> {
    el.attrs
        .iter()
        .find(|a| a.name.ns.is_empty() && &*a.name.local == name)
        .map(|a| a.value.as_ref())
}

/// The node after `node` in document order, staying under the node `root`.
fn following(node: NodeRef, root: NodeId) -> Option<NodeRef> {
    if let Some(child) = node.first_child() {
        return Some(child);
    }
    let mut at = node;
    loop {
        if at.id == root {
            return None;
        }
        if let Some(sibling) = at.next_sibling() {
            return Some(sibling);
        }
        at = at.parent()?;
    }
}

#[cfg(test)]
mod tests {
    use dom_query::{Document, Selection};

    use super::*;

    fn ids(doc: &Document, selector: &str) -> Vec<NodeId> {
        Selection::from(doc.root())
            .select(selector)
            .nodes()
            .iter()
            .map(|n| n.id)
            .collect()
    }

    fn first(doc: &Document, selector: &str) -> Option<NodeId> {
        ids(doc, selector).first().copied()
    }

    /// The walk finds what the selectors it replaces find, in the same order.
    fn agrees_with_the_selectors(html: &str) {
        let doc = Document::from(html);
        let found = Found::walk(doc.root());
        assert_eq!(found.links, ids(&doc, "a[href], area[href]"), "{html}");
        assert_eq!(found.forms, ids(&doc, "form"), "{html}");
        assert_eq!(found.labels, ids(&doc, "label[for]"), "{html}");
        assert_eq!(found.base, first(&doc, "base[href]"), "{html}");
        assert_eq!(found.title, first(&doc, "title"), "{html}");
        assert_eq!(found.h1, first(&doc, "h1"), "{html}");
        assert_eq!(
            found.widgets,
            ids(
                &doc,
                ".g-recaptcha, .h-captcha, .cf-turnstile, #challenge-form, \
                 #cf-challenge-running, #px-captcha, iframe[src*='recaptcha'], \
                 iframe[src*='hcaptcha'], [data-sitekey]"
            ),
            "{html}"
        );
        assert_eq!(
            found.challenge_script,
            first(
                &doc,
                "script[src*='challenges.cloudflare.com'], script[src*='hcaptcha.com'], \
                 script[src*='recaptcha/api']"
            )
            .is_some(),
            "{html}"
        );
        assert_eq!(found.metas, ids(&doc, "meta"), "{html}");
        assert_eq!(
            found.json_ld,
            ids(&doc, "script[type='application/ld+json']"),
            "{html}"
        );
        assert_eq!(found.link_tags, ids(&doc, "link"), "{html}");
    }

    #[test]
    fn one_walk_finds_what_each_selector_finds() {
        for html in [
            "",
            "<p>no elements of interest</p>",
            r#"<html><head><title>T</title><base href="/b/"><base href="/c/"></head><body>
               <h1>One</h1><h1>Two</h1><a>no href</a><a href="/x">x</a>
               <map><area href="/m"><area></map><svg><a href="/s">svg link</a><a xlink:href="/x">xlink</a><title>svg</title></svg>
               <form id="f"><label for="q">Q</label><label>bare</label><input id="q"></form>
               <div class="x g-recaptcha y" data-sitekey="k"></div><div class="G-RECAPTCHA"></div>
               <div id="px-captcha"></div><div id="px-captcha-not"></div>
               <iframe src="https://www.google.com/recaptcha/api2/anchor"></iframe><iframe src="/other"></iframe>
               <span data-sitekey></span>
               <script src="https://www.google.com/recaptcha/api.js"></script><script src="/app.js"></script>
               <template><a href="/in-template">t</a></template>
               <script type="application/ld+json">{}</script><script TYPE="Application/LD+JSON">{}</script>
               <script type="application/ld+json ">{}</script><meta name="a" content="b"><link rel="icon" href="/i">
               </body></html>"#,
            r#"<body><script src="https://challenges.cloudflare.com/turnstile/v0/api.js"></script>
               <div class="cf-turnstile"></div><div id="challenge-form"><form></form></div>
               <h1></h1><title>late title</title></body>"#,
            "<table><tr><td><a href=/cell>in a cell</a></td></tr></table><p><a href=''>empty</a>",
        ] {
            agrees_with_the_selectors(html);
        }
    }

    #[test]
    fn the_walk_stays_under_its_root_and_visits_every_element() {
        let doc =
            Document::from("<div><p><a href=/1>1</a></p><a href=/2>2</a></div><a href=/3>3</a>");
        assert_eq!(Found::walk(doc.root()).links.len(), 3);
        let div = doc.select_single("div").nodes()[0];
        assert_eq!(Found::walk(div).links.len(), 2);
    }
}
