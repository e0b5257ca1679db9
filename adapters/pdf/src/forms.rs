//! What drawing a page's form XObjects would cost, worked out before pdf-extract draws them.
//!
//! pdf-extract draws a form (`Do`) by interpreting its content in place, recursively, with
//! no check of its own: a form that draws itself recurses until the thread's stack runs out,
//! which aborts the process (no panic to catch), and forms that each draw the next many times
//! are exponential work in a file of a few hundred bytes. Here each form's content is decoded
//! once and the draws are counted, so both are refused as damaged before any page is drawn.

use std::collections::HashMap;

use pdf_extract::content::Content;
use pdf_extract::{Dictionary, Document, Object, ObjectId};

/// Forms drawn inside forms, at most: real files nest two or three.
const MAX_FORM_DEPTH: usize = 32;
/// Operations interpreted inside forms over the whole document, at most. pdf-extract draws
/// about a million text operations a second and half a million path operations (a release
/// build on a 2-core AMD EPYC: 6.1 million text operations in 6.5 s, a form of 4 million
/// `m`/`l` in 8.6 s), so a file past this would hit the parser's 10 s limit anyway; a cap past
/// it (100 million until the fuzzer found such a file) answered at the limit but left the
/// parser drawing for minutes, holding its place. Real files stay far below: a plot of 400k
/// points stored as a form, a letterhead of 5k operations on each of 500 pages (2.5 million).
const MAX_FORM_OPERATIONS: u64 = 5_000_000;
/// Pages' parents followed for inherited resources, at most (the tree was checked not to
/// loop before this runs).
const MAX_PARENTS: usize = 256;

/// Why drawing the document's forms is refused.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum FormRefusal {
    /// A form draws itself, through others or directly.
    Loops,
    /// Forms nested deeper than [`MAX_FORM_DEPTH`].
    TooDeep,
    /// Past [`MAX_FORM_OPERATIONS`].
    TooMuchWork,
}

impl std::fmt::Display for FormRefusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            FormRefusal::Loops => "a form XObject draws itself",
            FormRefusal::TooDeep => "its form XObjects nest deeper than any real file",
            FormRefusal::TooMuchWork => "its form XObjects draw each other too many times over",
        })
    }
}

/// Counts what drawing the forms of `pages` would take, as pdf-extract would draw them.
pub(crate) fn check_forms(doc: &Document, pages: &[ObjectId]) -> Result<(), FormRefusal> {
    let mut walk = Walk {
        doc,
        cost: HashMap::new(),
        drawing: Vec::new(),
        spent: 0,
    };
    let empty = Dictionary::new();
    for &page in pages {
        let Ok(dict) = doc.get_dictionary(page) else {
            continue;
        };
        let resources = inherited_resources(doc, dict).unwrap_or(&empty);
        // Content that does not decode makes pdf-extract give up on the page (a panic it
        // catches), so there is nothing to count.
        let Ok(content) = doc.get_page_content(page) else {
            continue;
        };
        walk.content(&content, resources)?;
    }
    Ok(())
}

struct Walk<'a> {
    doc: &'a Document,
    /// Operations drawing a form costs, and how deep its own forms nest below it, by form and
    /// the resources it was drawn with (a form without its own resources uses its caller's),
    /// once worked out.
    cost: HashMap<(ObjectId, usize), (u64, usize)>,
    /// The forms being drawn, outermost first.
    drawing: Vec<ObjectId>,
    /// Operations inside forms the pages' draws come to so far.
    spent: u64,
}

impl<'a> Walk<'a> {
    /// Counts the forms `content` draws with `resources`; returns its own operations, what
    /// drawing its forms costs, and how many forms deep they go.
    fn content(
        &mut self,
        content: &[u8],
        resources: &'a Dictionary,
    ) -> Result<(u64, u64, usize), FormRefusal> {
        let Ok(content) = Content::decode(content) else {
            return Ok((0, 0, 0));
        };
        let mut forms = 0u64;
        let mut depth = 0usize;
        for operation in &content.operations {
            if operation.operator != "Do" {
                continue;
            }
            let Some(Ok(name)) = operation.operands.first().map(Object::as_name) else {
                continue;
            };
            let Some((id, form)) = self.form(resources, name) else {
                continue;
            };
            let (cost, height) = self.draw(id, form, resources)?;
            forms = forms.saturating_add(cost);
            depth = depth.max(height);
        }
        Ok((content.operations.len() as u64, forms, depth))
    }

    /// The stream `name` stands for in `resources`' `/XObject`, with its object id.
    fn form(
        &self,
        resources: &'a Dictionary,
        name: &[u8],
    ) -> Option<(ObjectId, &'a pdf_extract::Stream)> {
        let xobjects = self
            .deref(resources.get(b"XObject").ok()?)?
            .as_dict()
            .ok()?;
        let id = xobjects.get(name).ok()?.as_reference().ok()?;
        let form = self.doc.get_object(id).ok()?.as_stream().ok()?;
        Some((id, form))
    }

    fn deref(&self, object: &'a Object) -> Option<&'a Object> {
        self.doc.dereference(object).ok().map(|(_, o)| o)
    }

    /// Counts drawing the form `id` once, from a caller whose resources are `outer`: what it
    /// costs, and how many forms deep it goes (itself included).
    fn draw(
        &mut self,
        id: ObjectId,
        form: &'a pdf_extract::Stream,
        outer: &'a Dictionary,
    ) -> Result<(u64, usize), FormRefusal> {
        let resources = form
            .dict
            .get(b"Resources")
            .ok()
            .and_then(|r| self.deref(r))
            .and_then(|r| r.as_dict().ok())
            .unwrap_or(outer);
        let key = (id, std::ptr::from_ref(resources) as usize);
        let (cost, height) = match self.cost.get(&key) {
            Some(&known) => known,
            None => {
                if self.drawing.contains(&id) {
                    return Err(FormRefusal::Loops);
                }
                if self.drawing.len() >= MAX_FORM_DEPTH {
                    return Err(FormRefusal::TooDeep);
                }
                // As pdf-extract reads it: inflated where it can be, as stored where not.
                let content = form
                    .decompressed_content()
                    .unwrap_or_else(|_| form.content.clone());
                self.drawing.push(id);
                let counted = self.content(&content, resources);
                self.drawing.pop();
                let (own, forms, below) = counted?;
                let known = (own.saturating_add(forms), below + 1);
                self.cost.insert(key, known);
                known
            }
        };
        // A form worked out where it sat shallow may be drawn again deeper down.
        if self.drawing.len() + height > MAX_FORM_DEPTH {
            return Err(FormRefusal::TooDeep);
        }
        if cost > MAX_FORM_OPERATIONS {
            return Err(FormRefusal::TooMuchWork);
        }
        // A page's own draws are what is spent; a form's inner draws are in its cost.
        if self.drawing.is_empty() {
            self.spent = self.spent.saturating_add(cost);
            if self.spent > MAX_FORM_OPERATIONS {
                return Err(FormRefusal::TooMuchWork);
            }
        }
        Ok((cost, height))
    }
}

/// The page's `/Resources`, its own or its nearest parent's, as pdf-extract finds them.
fn inherited_resources<'a>(doc: &'a Document, page: &'a Dictionary) -> Option<&'a Dictionary> {
    let mut at = page;
    for _ in 0..MAX_PARENTS {
        if let Some(resources) = at
            .get(b"Resources")
            .ok()
            .and_then(|r| doc.dereference(r).ok())
            .and_then(|(_, r)| r.as_dict().ok())
        {
            return Some(resources);
        }
        at = doc
            .get_dictionary(at.get(b"Parent").ok()?.as_reference().ok()?)
            .ok()?;
    }
    None
}
