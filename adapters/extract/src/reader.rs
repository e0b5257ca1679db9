//! The page extractor: one dom_query parse, read first for links, forms, metadata and obstacle
//! signals, then given to dom_smoothie (a port of Readability.js) for the main content
//! (`article.rs`), serialised to Markdown, text and HTML by dom_query. `docs/extraction-evaluation.md` records
//! why this engine was chosen.

use dom_query::{Document as QueryDocument, Matcher, NodeRef as QueryNode};
use svc_ports::{ExtractError, ExtractOptions, Extraction, MainContent, PageExtractor};
use url::Url;

use crate::{Document, article::main_content, obstacles::Obstacles};

/// Elements that never carry readable content when the whole body is kept.
const NON_CONTENT: &str = "script, style, noscript, template, iframe, object, embed, svg, canvas";

/// Stateless; one value serves every request.
#[derive(Debug, Clone, Copy, Default)]
pub struct HtmlExtractor;

impl HtmlExtractor {
    pub fn new() -> Self {
        Self
    }
}

fn matcher(selector: &str) -> Result<Matcher, ExtractError> {
    Matcher::new(selector).map_err(|_| ExtractError::InvalidSelector {
        selector: selector.to_owned(),
    })
}

impl PageExtractor for HtmlExtractor {
    fn select_texts(
        &self,
        html: &str,
        selectors: &[String],
    ) -> Result<Vec<Option<String>>, ExtractError> {
        let matchers = selectors
            .iter()
            .map(|s| matcher(s))
            .collect::<Result<Vec<_>, _>>()?;
        let doc = crate::depth::parse(html);
        Ok(matchers
            .iter()
            .map(|m| {
                let first = doc.select_single_matcher(m);
                first.exists().then(|| {
                    first
                        .text()
                        .split_whitespace()
                        .collect::<Vec<_>>()
                        .join(" ")
                })
            })
            .collect())
    }

    fn check_options(&self, options: &ExtractOptions) -> Result<(), ExtractError> {
        for s in options
            .include_selectors
            .iter()
            .chain(&options.exclude_selectors)
        {
            matcher(s)?;
        }
        Ok(())
    }

    fn extract(
        &self,
        html: &str,
        page_url: &str,
        options: &ExtractOptions,
    ) -> Result<Extraction, ExtractError> {
        // Selectors are checked before any parsing so a typo costs nothing.
        let exclude = options
            .exclude_selectors
            .iter()
            .map(|s| matcher(s))
            .collect::<Result<Vec<_>, _>>()?;
        let include = if options.include_selectors.is_empty() {
            None
        } else {
            for s in &options.include_selectors {
                matcher(s)?;
            }
            Some(matcher(&options.include_selectors.join(", "))?)
        };
        let url = Url::parse(page_url)
            .unwrap_or_else(|_| Url::parse("http://invalid.invalid/").expect("literal URL parses"));

        let original = html;
        // Inline scripts and styles are nearly half the bytes of a typical page and never
        // content: the parser need not tokenise them.
        let html = &*crate::without_inline_code(html);
        // Everything read from the page as it came (less what the caller excluded), before
        // the content is cut out of it.
        let page = Document::parse_without(html, &url, &exclude);
        let links = page.links();
        let forms = page.forms();
        let mut metadata = page.metadata();
        let obstacles = Obstacles::of(&page);
        // As if the content were empty; ruled out below when it is not.
        let shell = crate::shell::script_shell(original, &page.root(), 0);
        let base = page.base().clone();

        let query = page.into_dom();
        // The length of what the page shows, for the obstacle and shell verdicts: the
        // content's, unless the caller picked the content (a heading picked from an article
        // beside a login box is not a login wall).
        let mut shown_chars = None;
        let content = match include {
            Some(m) => {
                shown_chars = query
                    .body()
                    .map(|b| crate::shell::visible_text_chars(&b, usize::MAX));
                absolutize(&query, &base);
                body_content(&crate::picked::outermost(&query, &m), options.html)
            }
            // Readability visits every element several times over, each reading again:
            // a page past this size (ten times the largest real one we know) is read whole.
            None if options.main_content_only && !crate::depth::huge(html, &query) => {
                // The page again for a second reading: as first read, without what the
                // caller excluded. A copy of the tree costs a tenth of parsing it again.
                let first = query.clone();
                main_content(
                    query,
                    html,
                    &first,
                    url.as_str(),
                    &base,
                    &mut metadata,
                    options.html,
                )
            }
            None => {
                absolutize(&query, &base);
                body_content(&query, options.html)
            }
        };
        if metadata.excerpt.is_none() {
            metadata.excerpt = metadata.description.clone();
        }
        let shown_chars = shown_chars.unwrap_or_else(|| content.text.chars().count());
        let mut signals = obstacles.judge(&forms, &metadata, shown_chars);
        signals.script_shell = shell.filter(|_| shown_chars < crate::shell::SHELL_TEXT_CHARS);
        Ok(Extraction {
            content,
            links,
            forms,
            metadata,
            signals,
        })
    }
}

pub(crate) fn body_content(query: &QueryDocument, want_html: bool) -> MainContent {
    query.select(NON_CONTENT).remove();
    let (html, markdown, text) = match query.body() {
        Some(body) => (
            if want_html {
                body.inner_html().to_string()
            } else {
                String::new()
            },
            body.md(None).to_string(),
            body.formatted_text().to_string(),
        ),
        None => (
            if want_html {
                query.html().to_string()
            } else {
                String::new()
            },
            query.md(None).to_string(),
            query.formatted_text().to_string(),
        ),
    };
    MainContent {
        markdown: markdown.trim().to_owned(),
        text: text.trim().to_owned(),
        html,
    }
}

/// Makes link and image targets absolute so Markdown taken out of the page still points home.
pub(crate) fn absolutize(query: &QueryDocument, base: &Url) {
    for (selector, attribute) in [
        ("a[href]", "href"),
        ("img[src]", "src"),
        ("form[action]", "action"),
    ] {
        for node in query.select(selector).nodes() {
            resolve_attribute(node, attribute, base);
        }
    }
}

fn resolve_attribute(node: &QueryNode, attribute: &str, base: &Url) {
    if let Some(value) = node.attr(attribute)
        && let Ok(absolute) = base.join(value.trim())
    {
        node.set_attr(attribute, absolute.as_str());
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use svc_ports::PageSignals;

    use super::*;

    fn read(html: &str, options: &ExtractOptions) -> Extraction {
        HtmlExtractor
            .extract(html, "https://example.com/a/page.html", options)
            .unwrap()
    }

    /// A small article page; `article.rs`'s tests read it too.
    pub(crate) const ARTICLE: &str = r#"<!doctype html><html lang="en"><head><title>Tides of the North Sea | Coast News</title>
        <meta name="description" content="Why the tides turn.">
        <meta property="og:site_name" content="Coast News"></head>
        <body><nav><a href="/">Home</a> <a href="/about">About us</a></nav>
        <article><h1>Tides of the North Sea</h1><p class="byline">By Ann Example</p>
        <p>The North Sea has two tides a day. Sailors who ignore them run aground on the sandbanks
        that shift every winter, and harbour masters publish tables so that no one has to guess.</p>
        <p>Read the <a href="tables.html">tide tables</a> before you sail. Spring tides come after
        new and full moon; neap tides in between, when the range is smallest.</p>
        <p>Storm surges add to all of this when a north-westerly gale pushes water south.</p></article>
        <footer>Copyright Coast News <a href="/privacy">Privacy</a></footer></body></html>"#;

    /// A reader who does not ask for HTML gets none, and the same Markdown and text, whichever
    /// way the content was chosen (Readability's article, the whole body, picked selectors).
    #[test]
    fn html_is_made_only_when_asked_and_changes_nothing_else() {
        for options in [
            ExtractOptions::default(),
            ExtractOptions {
                main_content_only: false,
                ..Default::default()
            },
            ExtractOptions {
                include_selectors: vec!["article p".into()],
                ..Default::default()
            },
        ] {
            let with = read(ARTICLE, &options);
            let without = read(
                ARTICLE,
                &ExtractOptions {
                    html: false,
                    ..options.clone()
                },
            );
            assert!(with.content.html.contains("Storm surges"), "{options:?}");
            assert_eq!(without.content.html, "", "{options:?}");
            assert_eq!(without.content.markdown, with.content.markdown);
            assert_eq!(without.content.text, with.content.text);
            assert!(without.content.text.contains("Storm surges"));
            assert_eq!(without.metadata, with.metadata);
            assert_eq!(without.links, with.links);
        }
    }

    #[test]
    fn a_lead_set_apart_from_the_story_goes_back_on_top() {
        let lead = "Harbour road closes for good after the council's vote on Tuesday night.";
        let story = "<p>The council met for three hours before the vote, hearing from residents \
            who use the old harbour road every day and from the engineers who inspected it.</p>"
            .repeat(6);
        let page = format!(
            r#"<html><body><header><h1>Road closes</h1><p class="article-lead">{lead}</p></header>
            <div class="story"><article>{story}</article></div></body></html>"#
        );
        let e = read(&page, &ExtractOptions::default());
        assert!(e.content.text.starts_with(lead), "{}", e.content.text);
        assert!(
            e.content.markdown.starts_with(lead),
            "{}",
            e.content.markdown
        );
        // Once only, when the article holds it already.
        let inside = page.replace("<article>", &format!("<article><p>{lead}</p>"));
        let e = read(&inside, &ExtractOptions::default());
        assert_eq!(
            e.content.text.matches(lead).count(),
            1,
            "{}",
            e.content.text
        );
    }

    #[test]
    fn a_link_back_in_history_is_not_the_story() {
        let back = r#"<p><a href="javascript:history.back()" class="back">zurück</a></p>
            <p><a href="JavaScript:History.go(-1);">Back</a></p></article>"#;
        let e = read(
            &ARTICLE.replace("</article>", back),
            &ExtractOptions::default(),
        );
        assert!(
            e.content.text.ends_with("pushes water south."),
            "{}",
            e.content.text
        );
    }

    /// A paragraph led by a link with two breaks in it (`<p><a>A template</a>!<br><br>On the
    /// second day ...</p>`) is two paragraphs of the story, not a box of links.
    #[test]
    fn paragraphs_made_with_breaks_and_led_by_a_link_stay() {
        let days = r#"<p>On the first day of email marketing, the sponsor sent to me a letter
            about the season, which you may sing to your co-workers if you dare.</p>
            <p><a href="/t">A template for your email</a>!<br> <br> On the second day of email
            marketing, the sponsor sent to me</p>
            <p><a href="/c">An email marketing checklist</a>!</p></article>"#;
        let e = read(
            &ARTICLE.replace("</article>", days),
            &ExtractOptions::default(),
        );
        let text = &e.content.text;
        assert!(text.contains("A template for your email!\n"), "{text}");
        assert!(text.contains("On the second day of email"), "{text}");
    }

    #[test]
    fn a_short_story_beats_a_longer_box_of_the_sidebar() {
        let story = "Verizon Wireless will pay its shareholders an $8.5 billion dividend before \
            the end of the year, after a $10 billion payout in 2011. That means another big \
            payday for the two owners of the mobile venture, who split it by their stakes.";
        let about = "<p>Along with original content and posts from across the network, this \
            section includes pieces we have read, discussions we have followed and stuff we \
            like. Six posts from other sites are included here each weekday, but we only run \
            the headlines and link to the original sites for the rest of each piece.</p>"
            .repeat(3);
        let latest = (1..=12)
            .map(|i| format!(r#"<li><a href="/news/{i}">Headline {i} of the latest news</a></li>"#))
            .collect::<String>();
        let page = format!(
            r#"<html><body><div id="content"><div id="main"><div class="post"><h1>Another big
            dividend</h1><div class="entry"><div class="article-body"><p>{story}</p></div></div>
            <ul class="latest">{latest}</ul></div></div><div id="side"><div id="primary-sidebar">
            <div class="module about-module"><h2>About this section</h2>{about}</div></div></div>
            </div></body></html>"#
        );
        let e = read(&page, &ExtractOptions::default());
        assert!(e.content.text.contains("big payday"), "{}", e.content.text);
        assert!(!e.content.text.contains("Six posts"), "{}", e.content.text);
        // Where the story is as long as Readability wants, the sidebar never mattered; a
        // layout named for its sidebar that holds the story is not a margin.
        let wrapped = page.replace(r#"<div id="content">"#, r#"<div class="has-sidebar">"#);
        let e = read(&wrapped, &ExtractOptions::default());
        assert!(e.content.text.contains("big payday"), "{}", e.content.text);
    }

    #[test]
    fn a_page_of_deeply_nested_tags_is_read_for_its_text() {
        // 100k nested tags: before the depth bounds this read did not finish in hours.
        let html = "<div>".repeat(50_000) + "Deep down, the text. " + &"<span>".repeat(50_000);
        for main_content_only in [true, false] {
            let options = ExtractOptions {
                main_content_only,
                ..ExtractOptions::default()
            };
            let e = read(&html, &options);
            assert_eq!(e.content.text, "Deep down, the text.");
        }
    }

    #[test]
    fn main_content_drops_navigation_and_footer_and_keeps_absolute_links() {
        let e = read(ARTICLE, &ExtractOptions::default());
        assert!(e.content.text.contains("two tides a day"));
        assert!(!e.content.text.contains("About us"), "{}", e.content.text);
        assert!(!e.content.text.contains("Copyright"));
        assert!(
            e.content
                .markdown
                .contains("(https://example.com/a/tables.html)"),
            "{}",
            e.content.markdown
        );
        assert!(e.content.html.contains("<p>"));
        assert_eq!(e.metadata.title.as_deref(), Some("Tides of the North Sea"));
        assert_eq!(e.metadata.site_name.as_deref(), Some("Coast News"));
        assert_eq!(e.metadata.excerpt.as_deref(), Some("Why the tides turn."));
        assert_eq!(e.signals, PageSignals::default());
        // Links are the page's, not only the content's.
        assert!(e.links.iter().any(|l| l.url == "https://example.com/about"));
    }

    /// The Markdown is written before the classes go: a code block keeps its language.
    #[test]
    fn code_blocks_keep_their_language_in_markdown() {
        let html = ARTICLE.replace(
            "<p>Storm surges",
            r#"<pre><code class="language-rust">fn tide() -> u32 { 2 }</code></pre><p>Storm surges"#,
        );
        let e = read(&html, &ExtractOptions::default());
        assert!(
            e.content.markdown.contains("```rust"),
            "{}",
            e.content.markdown
        );
        assert!(!e.content.html.contains("class="), "{}", e.content.html);
    }

    /// Issue 21: share bars, related cards and sign-ups inside the article were kept.
    #[test]
    fn boilerplate_inside_the_article_goes_and_its_classes_with_it() {
        let html = ARTICLE.replace(
            "<p>Storm surges",
            r#"<div class="share-tools"><a href="/s">Share this article</a></div>
            <div class="newsletter-signup"><h3>Our newsletter</h3><p>Get the tides by e-mail every week.</p></div>
            <ul class="related-stories"><li><a href="/r">Ten harbours to visit</a></li></ul>
            <p>Storm surges"#,
        );
        let e = read(&html, &ExtractOptions::default());
        assert!(
            e.content.text.contains("Storm surges"),
            "{}",
            e.content.text
        );
        for gone in ["Share this", "by e-mail", "Ten harbours"] {
            assert!(!e.content.text.contains(gone), "{gone}: {}", e.content.text);
            assert!(
                !e.content.markdown.contains(gone),
                "{gone}: {}",
                e.content.markdown
            );
            assert!(!e.content.html.contains(gone), "{gone}: {}", e.content.html);
        }
        assert!(!e.content.html.contains("class="), "{}", e.content.html);
    }

    /// Issue 21: a story in a block whose class Readability weighs against it (Drupal's
    /// `field--label-hidden` says "hidden") was cut from the box that holds it and its
    /// 600-character teaser, so reading the page without that box finds nothing either;
    /// Readability loosens its rules by itself only under 500 characters.
    #[test]
    fn a_story_under_a_class_readability_distrusts_wins_over_its_teaser() {
        let teaser =
            "The harbour of Kirkwall was rebuilt this year, and the town, which had waited \
            for it for a decade, now wonders what it will do with the space, the boats, the \
            visitors and the sudden attention of the whole archipelago. "
                .repeat(3);
        let story =
            "<p>The old quay, built of stone, was taken down in the spring, and the new one, \
            twice as long, was poured in concrete over the summer, while the ferries kept to \
            their timetable, the fishermen moved to the north pier, and the harbour master, \
            who had seen three storms that year, kept a log of every tide.</p>"
                .repeat(6);
        let html = format!(
            r#"<html><head><title>Kirkwall harbour</title></head><body>
            <article><div class="node"><p>{teaser}</p>
            <div class="node__content"><div class="field field--label-hidden">{story}</div></div>
            <h3>Read next</h3><p>It snows plastic in the Alps, from the cities and the sea.</p>
            </div></article></body></html>"#
        );
        let e = read(&html, &ExtractOptions::default());
        assert!(
            e.content
                .text
                .contains("harbour master, who had seen three storms"),
            "{}",
            e.content.text
        );
    }

    /// Issue 21: a paper's page that shows the abstract and the bibliography came back as the
    /// bibliography, its longest text (and the short-article retry must not bring it back).
    #[test]
    fn a_papers_abstract_wins_over_its_references() {
        let reference = |i: usize| {
            format!(
                r#"<li class="c-article-references__item"><p>{i}. Shear NH, Spielberg SP,
                Roujeau J, et al. Anticonvulsant hypersensitivity syndrome: in vitro
                assessment of risk, a prospective survey of {i} cases. J Clin Investig.
                1988;82(6):1826-32.</p></li>"#
            )
        };
        let references: String = (1..=40).map(reference).collect();
        let html = format!(
            r#"<html><head><title>DRESS syndrome</title></head><body><main><article>
            <h1>DRESS syndrome in rheumatology practice</h1>
            <section id="Abs1"><h2>Abstract</h2><div class="c-article-section__content">
            <p>The purpose of the review is to summarise the various drugs used in
            rheumatology practice implicated in the causation of the syndrome, which
            carries a mortality of up to ten per cent and often begins weeks after the
            drug was first given.</p>
            <p>The most commonly reported drugs are allopurinol, sulfasalazine and
            minocycline, followed by strontium ranelate, leflunomide and the biologic
            agents, with fewer reports for hydroxychloroquine and methotrexate in the
            literature we reviewed for this paper.</p></div></section>
            <section id="Bib1"><h2>References</h2><div class="c-article-section__content">
            <ol class="c-article-references">{references}</ol></div></section>
            </article></main></body></html>"#
        );
        let e = read(&html, &ExtractOptions::default());
        assert!(
            e.content.text.contains("The most commonly reported drugs"),
            "{}",
            e.content.text
        );
        assert!(
            !e.content.text.contains("J Clin Investig"),
            "{}",
            e.content.text
        );
    }

    /// Issue 21: a short post above a long thread came back as the thread.
    #[test]
    fn a_short_post_above_a_long_comment_thread_is_the_post() {
        let comment = |i: usize| {
            format!(
                r#"<li id="comment-{i}" class="comment"><div class="comment-author vcard">Reader {i}</div>
                <div class="comment-meta">September 29, 2012</div><p>What a wonderful picture, I cannot
                take my eyes off it, the coat, the light, the whole composition is just right, and I
                keep coming back to look at it again and again, thank you for sharing it with us.</p></li>"#
            )
        };
        let thread: String = (0..12).map(comment).collect();
        let html = format!(
            r#"<html><head><title>Coat of the day</title></head><body><div id="content">
            <div id="post-1" class="hentry post"><h2 class="entry-title">Coat of the day</h2>
            <div class="entry-content"><p><img src="coat.jpg"></p><p>Seen this morning on the
            harbour front: a camel coat, a red belt, a grey sky.</p></div></div>
            <div id="comments"><div id="comments-list" class="comments"><ol>{thread}</ol></div></div>
            </div></body></html>"#
        );
        let e = read(&html, &ExtractOptions::default());
        assert!(e.content.text.contains("camel coat"), "{}", e.content.text);
        assert!(
            !e.content.text.contains("wonderful picture"),
            "{}",
            e.content.text
        );
    }

    #[test]
    fn whole_body_keeps_navigation_but_never_scripts() {
        let html = ARTICLE.replace("<footer>", "<script>var secret = 1;</script><footer>");
        let e = read(
            &html,
            &ExtractOptions {
                main_content_only: false,
                ..Default::default()
            },
        );
        assert!(e.content.text.contains("About us"));
        assert!(e.content.text.contains("Copyright"));
        assert!(!e.content.text.contains("secret"));
        assert!(
            e.content.markdown.contains("(https://example.com/about)"),
            "{}",
            e.content.markdown
        );
    }

    #[test]
    fn include_selectors_pick_the_content_in_document_order() {
        let e = read(
            ARTICLE,
            &ExtractOptions {
                include_selectors: vec!["footer".into(), "nav".into()],
                ..Default::default()
            },
        );
        let nav = e.content.text.find("About us").expect("nav kept");
        let footer = e.content.text.find("Copyright").expect("footer kept");
        assert!(nav < footer, "document order");
        assert!(!e.content.text.contains("two tides"));
    }

    #[test]
    fn exclude_selectors_remove_before_main_content_is_found() {
        let e = read(
            ARTICLE,
            &ExtractOptions {
                exclude_selectors: vec!["p:nth-of-type(3)".into()],
                ..Default::default()
            },
        );
        assert!(e.content.text.contains("two tides a day"));
        assert!(
            !e.content.text.contains("Spring tides"),
            "{}",
            e.content.text
        );
    }

    #[test]
    fn an_invalid_selector_is_refused_by_name() {
        for options in [
            ExtractOptions {
                include_selectors: vec!["div[".into()],
                ..Default::default()
            },
            ExtractOptions {
                exclude_selectors: vec!["p".into(), "::nonsense(".into()],
                ..Default::default()
            },
        ] {
            let err = HtmlExtractor
                .extract(ARTICLE, "https://example.com/", &options)
                .unwrap_err();
            assert!(matches!(err, ExtractError::InvalidSelector { .. }), "{err}");
        }
    }

    #[test]
    fn select_texts_reads_the_first_match_of_each_selector() {
        let html = "<html><body><p class=ok>Order <b>42</b>\n placed</p><p class=ok>second</p></body></html>";
        let got = HtmlExtractor::new()
            .select_texts(html, &["p.ok".into(), "#missing".into()])
            .unwrap();
        assert_eq!(got, vec![Some("Order 42 placed".to_owned()), None]);
        assert!(
            HtmlExtractor::new()
                .select_texts(html, &["p[".into()])
                .is_err()
        );
    }

    #[test]
    fn a_page_without_an_article_falls_back_to_its_body() {
        let e = read(
            "<html><body><p>Hi</p></body></html>",
            &ExtractOptions::default(),
        );
        assert_eq!(e.content.text, "Hi");
    }
}
