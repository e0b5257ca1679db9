//! What may stand between a visitor and a page's content: a bot challenge or a sign-in wall.
//! Judged by what the page shows once its content's length is known, not by whether a
//! widget's script is present: an article beside a comment form's captcha is a page.

use std::collections::HashMap;

use dom_query::{NodeId, NodeRef};
use svc_ports::{Form, PageMetadata, PageSignals};

use crate::{Document, select_first, text};

/// Below this many characters of content, a page titled as a challenge or a sign-in, or showing
/// a challenge widget of its own, is that obstacle.
const OBSTACLE_TEXT_CHARS: usize = 1500;
/// Below this many characters there is nothing else to read: a password form or a challenge
/// script alone then makes the page an obstacle. Above it, a login box or a comment form's
/// captcha beside an article (a Slashdot story, a blog post) leaves the article a page.
const NOTHING_ELSE_CHARS: usize = 300;

const CHALLENGE_TITLES: &[&str] = &[
    "just a moment",
    "attention required",
    "are you a robot",
    "are you human",
    "verify you are human",
    "human verification",
    "security check",
    "captcha",
    "access denied",
    "bot detection",
];

// The challenge widgets a visitor sees and the challenge scripts are found by `crate::scan`.

/// Fields a person fills in a form of the page's own (a comment, a newsletter sign-up): a
/// captcha among them guards that form, it does not stand between the visitor and the page.
const OWN_FORM_FIELDS: &str = "textarea, input[type='email'], input[type='text'], \
    input:not([type])";

const SIGN_IN_WORDS: &[&str] = &[
    "sign in",
    "sign-in",
    "signin",
    "log in",
    "log-in",
    "login",
    "anmelden",
    "connexion",
    "iniciar sesión",
];

/// What the page shows that may stand between a visitor and its content, read before the
/// content is taken; judged once the content's length is known.
pub(crate) struct Obstacles {
    title: String,
    heading: String,
    /// The first challenge widget that does not guard a form of the page's own, by tag.
    widget: Option<String>,
    challenge_script: bool,
}

impl Obstacles {
    pub(crate) fn of(page: &Document) -> Self {
        let found = page.found();
        let lower_text = |id: Option<dom_query::NodeId>| {
            page.nodes(id.as_slice())
                .next()
                .map(|n| text(&n).to_lowercase())
                .unwrap_or_default()
        };
        Self {
            title: lower_text(found.title),
            heading: lower_text(found.h1),
            widget: {
                let mut forms = HashMap::new();
                page.nodes(&found.widgets)
                    .find(|w| !guards_own_form(w, &mut forms))
                    .map(|w| w.node_name().map(|n| n.to_string()).unwrap_or_default())
            },
            challenge_script: found.challenge_script,
        }
    }

    pub(crate) fn judge(
        &self,
        forms: &[Form],
        metadata: &PageMetadata,
        chars: usize,
    ) -> PageSignals {
        let short = chars < OBSTACLE_TEXT_CHARS;
        let title = &self.title;
        let captcha = if let Some(t) = CHALLENGE_TITLES
            .iter()
            .find(|t| title.contains(*t) && short)
        {
            Some(format!("challenge page title ({t})"))
        } else if let Some(w) = self.widget.as_ref().filter(|_| short) {
            Some(format!("challenge widget <{w}>"))
        } else if chars < NOTHING_ELSE_CHARS && self.challenge_script {
            Some("challenge script and nothing else to read".to_owned())
        } else {
            None
        };

        let has_password = forms
            .iter()
            .flat_map(|f| &f.fields)
            .any(|f| f.field_type == "password");
        let meta_title = metadata.title.as_deref().unwrap_or("").to_lowercase();
        let says_sign_in = SIGN_IN_WORDS
            .iter()
            .any(|w| title.contains(w) || self.heading.contains(w) || meta_title.contains(w));
        let login_wall = (has_password && ((short && says_sign_in) || chars < NOTHING_ELSE_CHARS))
            .then(|| format!("password form with {chars} characters of other content"));
        PageSignals {
            captcha,
            login_wall,
            script_shell: None,
        }
    }
}

/// Whether a challenge widget sits in a form with fields of its own (comment, e-mail): it guards
/// that form. Each form is searched once (`forms`), however many widgets it holds.
fn guards_own_form(widget: &NodeRef, forms: &mut HashMap<NodeId, bool>) -> bool {
    widget
        .ancestors_it(None)
        .find(|a| a.has_name("form"))
        .is_some_and(|form| {
            *forms
                .entry(form.id)
                .or_insert_with(|| select_first(form, OWN_FORM_FIELDS).is_some())
        })
}

#[cfg(test)]
mod tests {
    use svc_ports::{ExtractOptions, Extraction, PageExtractor, PageSignals};

    use super::NOTHING_ELSE_CHARS;
    use crate::HtmlExtractor;

    fn read(html: &str, options: &ExtractOptions) -> Extraction {
        HtmlExtractor
            .extract(html, "https://example.com/a/page.html", options)
            .unwrap()
    }

    #[test]
    fn a_captcha_interstitial_is_a_signal_not_content() {
        let html = r#"<html><head><title>Just a moment...</title></head><body>
            <form id="challenge-form"><div class="cf-turnstile" data-sitekey="x"></div></form>
            <p>Checking your browser before accessing example.com.</p></body></html>"#;
        let e = read(html, &ExtractOptions::default());
        assert!(e.signals.captcha.is_some());
        assert!(e.signals.login_wall.is_none());

        let widget_only = r#"<html><head><title>Shop</title></head><body>
            <div class="g-recaptcha" data-sitekey="x"></div><p>Please confirm.</p></body></html>"#;
        assert!(
            read(widget_only, &ExtractOptions::default())
                .signals
                .captcha
                .is_some()
        );
    }

    #[test]
    fn a_long_article_with_a_newsletter_captcha_is_not_blocked() {
        let body = "<p>Plenty of real reading here about the sea and its moods. </p>".repeat(40);
        let html = format!(
            r#"<html><head><title>Essay</title></head><body><article>{body}</article>
            <form><div class="g-recaptcha" data-sitekey="x"></div><input name="email"></form></body></html>"#
        );
        let e = read(&html, &ExtractOptions::default());
        assert_eq!(e.signals, PageSignals::default());
    }

    /// Issue 21: nine corpus pages with a full article came back blocked: Slashdot stories
    /// with a login box, and a post whose comment form loads reCAPTCHA.
    #[test]
    fn a_short_article_beside_a_login_box_or_a_guarded_comment_form_is_a_page() {
        let story =
            "<p>A short story of some eight hundred characters, about the sea. </p>".repeat(12);
        let login_box = format!(
            r#"<html><head><title>Being honest in exit interviews - Slashdot</title>
            <script src="https://www.google.com/recaptcha/api.js"></script></head><body>
            <article><h1>Being honest in exit interviews</h1>{story}</article>
            <aside><form action="/login" method="post"><input name="unickname">
            <input type="password" name="upasswd"><button>Log in</button></form></aside>
            <form action="/comment" method="post"><textarea name="c"></textarea>
            <div class="g-recaptcha" data-sitekey="x"></div></form></body></html>"#
        );
        let e = read(&login_box, &ExtractOptions::default());
        assert!(e.content.text.chars().count() > NOTHING_ELSE_CHARS);
        assert_eq!(e.signals, PageSignals::default(), "{:?}", e.signals);
    }

    #[test]
    fn a_page_with_nothing_but_a_challenge_script_or_a_password_form_is_the_obstacle() {
        let script_only = r#"<html><head><title>example.com</title>
            <script src="https://challenges.cloudflare.com/turnstile/v0/api.js"></script></head>
            <body><p>One moment.</p></body></html>"#;
        assert!(
            read(script_only, &ExtractOptions::default())
                .signals
                .captcha
                .is_some()
        );
        let password_only = r#"<html><head><title>Members</title></head><body>
            <form method="post"><input name="user"><input type="password" name="pw"></form>
            <p>Members only.</p></body></html>"#;
        assert!(
            read(password_only, &ExtractOptions::default())
                .signals
                .login_wall
                .is_some()
        );
    }

    #[test]
    fn a_form_of_many_widgets_is_searched_for_its_fields_once() {
        // Each widget searched the whole form for a field of its own: 10^10 steps here.
        let html = format!(
            "<html><body><p>Short.</p><form>{}<textarea></textarea></form></body></html>",
            "<i data-sitekey=x></i>".repeat(100_000)
        );
        assert_eq!(
            read(&html, &ExtractOptions::default()).signals.captcha,
            None
        );
        let unguarded = html.replace("<textarea></textarea>", "");
        assert!(
            read(&unguarded, &ExtractOptions::default())
                .signals
                .captcha
                .is_some()
        );
    }

    #[test]
    fn the_callers_selectors_shape_what_the_page_is_judged_by() {
        let story =
            "<p>A short story of some eight hundred characters, about the sea. </p>".repeat(6);
        let page = format!(
            r#"<html><head><title>Harbour news</title>
            <script src="https://www.google.com/recaptcha/api.js"></script></head><body>
            <header><form action="/login" method="post"><input name="user">
            <input type="password" name="pw"></form></header>
            <article><h1>Harbour stays open</h1>{story}</article>
            <div id="promo"><div class="g-recaptcha" data-sitekey="x"></div>
            <a href="/win">Win a cruise</a></div></body></html>"#
        );
        // The page as it is: a short story beside a challenge widget of no form of its own.
        assert!(
            read(&page, &ExtractOptions::default())
                .signals
                .captcha
                .is_some()
        );
        // Without the widget, as the caller asked: removed before anything is read.
        let e = read(
            &page,
            &ExtractOptions {
                exclude_selectors: vec!["#promo".into()],
                ..Default::default()
            },
        );
        assert_eq!(e.signals, PageSignals::default(), "{:?}", e.signals);
        assert!(
            !e.links.iter().any(|l| l.url.ends_with("/win")),
            "{:?}",
            e.links
        );
        // Only the heading picked: the page still shows its story, not a login wall.
        let e = read(
            &page,
            &ExtractOptions {
                include_selectors: vec!["h1".into()],
                exclude_selectors: vec!["#promo".into()],
                ..Default::default()
            },
        );
        assert_eq!(e.content.text, "Harbour stays open");
        assert_eq!(e.signals, PageSignals::default(), "{:?}", e.signals);
    }

    #[test]
    fn a_sign_in_page_is_a_login_wall() {
        let html = r#"<html><head><title>Sign in - Example</title></head><body><h1>Sign in to continue</h1>
            <form method="post" action="/session"><label>Email <input name="email"></label>
            <label>Password <input type="password" name="password"></label></form></body></html>"#;
        let e = read(html, &ExtractOptions::default());
        assert!(e.signals.login_wall.is_some());
        assert_eq!(e.forms.len(), 1, "forms are still reported");
    }
}
