//! A PDF read as a page: what counts as readable, and its Markdown and text.

use super::{
    BlockReason, Blocked, CacheInfo, ContentFormat, PageRead, ReadError, ReadOutcome, ReadRequest,
    ReadService, content_hash, escape_html,
};
use svc_ports::{FetchedPage, PageMetadata, PdfRefusal, PdfText, RobotsDecision};

impl ReadService {
    /// A fetched (or saved) PDF: its pages as a page, or why it cannot be read.
    pub(super) async fn read_pdf_page(
        &self,
        page: FetchedPage,
        request: &ReadRequest,
        cache: CacheInfo,
    ) -> Result<ReadOutcome, ReadError> {
        let blocked = |reason: BlockReason, detail: String, retryable: bool| {
            Ok(Blocked::answer(
                &page, &cache, false, reason, detail, retryable,
            ))
        };
        // An error answer is not the document asked for, whatever its type.
        if page.status >= 400 {
            let retryable = page.status == 429 || page.status >= 500;
            return blocked(
                BlockReason::HttpError,
                format!("the site answered HTTP {}", page.status),
                retryable,
            );
        }
        let bytes = page.raw.clone().unwrap_or_default();
        let reader = self.pdf.clone();
        let span = tracing::Span::current();
        let text = tokio::task::spawn_blocking(move || span.in_scope(|| reader.read_pdf(&bytes)))
            .await
            .map_err(|e| ReadError::Internal(anyhow::anyhow!("PDF task: {e}")))?;
        if let Err(busy @ PdfRefusal::Busy(_)) = text {
            return Err(ReadError::PdfBusy(busy));
        }
        match judge(text, page.truncated) {
            Ok(document) => {
                let robots = page.robots.checked.then(|| page.robots.clone());
                Ok(ReadOutcome::Page(Box::new(page_read(
                    document, page, robots, request, cache,
                ))))
            }
            Err((reason, detail)) => blocked(reason, detail, false),
        }
    }
}

/// Between pages: a form feed in the text (as `pdftotext` writes), a rule in the Markdown.
pub(crate) const TEXT_PAGE_BREAK: &str = "\n\u{c}\n";
pub(crate) const MARKDOWN_PAGE_BREAK: &str = "\n\n---\n\n";

/// A PDF with text is a page; one without any is blocked with its own reason, never an empty
/// page, and so is one that needs a password or cannot be parsed.
pub(crate) fn judge(
    read: Result<PdfText, PdfRefusal>,
    cut_at_cap: bool,
) -> Result<PdfText, (BlockReason, String)> {
    match read {
        Ok(text) if text.pages.iter().all(|p| p.trim().is_empty()) => Err((
            BlockReason::ImageOnlyPdf,
            if text.page_count > text.pages.len() {
                // Only the pages read were judged: later ones may hold text.
                format!(
                    "the first {} of the PDF's {} pages hold no text, only images (a scan?); pages past them are not read",
                    text.pages.len(),
                    text.page_count
                )
            } else {
                format!(
                    "the PDF's {} page(s) hold no text, only images (a scan?); it needs OCR",
                    text.page_count
                )
            },
        )),
        Ok(text) => Ok(text),
        Err(PdfRefusal::Encrypted) => {
            Err((BlockReason::EncryptedPdf, PdfRefusal::Encrypted.to_string()))
        }
        Err(PdfRefusal::Damaged(_)) if cut_at_cap => Err((
            BlockReason::UnsupportedContent,
            "the PDF is larger than the 10 MiB fetch cap, and a cut PDF cannot be read".into(),
        )),
        Err(refusal) => Err((BlockReason::UnsupportedContent, refusal.to_string())),
    }
}

pub(crate) fn page_read(
    document: PdfText,
    page: FetchedPage,
    robots: Option<RobotsDecision>,
    request: &ReadRequest,
    cache: CacheInfo,
) -> PageRead {
    let text = document.pages.join(TEXT_PAGE_BREAK);
    let markdown = document
        .pages
        .iter()
        .map(|p| markdown_of(p))
        .filter(|p| !p.is_empty())
        .collect::<Vec<_>>()
        .join(MARKDOWN_PAGE_BREAK);
    let excerpt = text
        .split("\n\n")
        .map(|p| p.split_whitespace().collect::<Vec<_>>().join(" "))
        .find(|p| p.chars().count() >= 40)
        .map(|p| p.chars().take(300).collect());
    let metadata = PageMetadata {
        title: document.title.clone(),
        author: document.author,
        published_time: document.created.map(|d| d.to_rfc3339()),
        excerpt,
        ..PageMetadata::default()
    };
    PageRead {
        requested_url: page.requested_url,
        final_url: page.final_url,
        status_code: page.status,
        content_type: page.content_type,
        title: document.title,
        format: request.format,
        content_hash: content_hash(&text),
        html: (request.format == ContentFormat::Html)
            .then(|| format!("<pre>{}</pre>", escape_html(&text))),
        markdown,
        text,
        links: Vec::new(),
        forms: Vec::new(),
        metadata,
        page_count: Some(document.page_count),
        truncated: page.truncated || document.pages.len() < document.page_count,
        redirects: page.redirects,
        robots,
        fetched_at: page.fetched_at,
        cache,
        rendered: false,
    }
}

/// A page's lines as Markdown paragraphs: the lines of a block joined (a PDF breaks lines
/// where the column ends, not where the sentence does), a word split by a hyphen at a line's
/// end joined again, and a paragraph that would read as Markdown syntax escaped. A line well
/// short of the block's longest ends its paragraph (a heading, a paragraph's last line).
fn markdown_of(page: &str) -> String {
    page.split("\n\n")
        .flat_map(|block| {
            let lines: Vec<&str> = block
                .lines()
                .map(str::trim)
                .filter(|l| !l.is_empty())
                .collect();
            let longest = lines.iter().map(|l| l.chars().count()).max().unwrap_or(0);
            let mut paragraphs = vec![Vec::new()];
            for line in lines {
                paragraphs.last_mut().expect("one").push(line);
                if line.chars().count() * 10 < longest * 6 && !line.ends_with('-') {
                    paragraphs.push(Vec::new());
                }
            }
            paragraphs
        })
        .map(|lines| {
            let mut paragraph = String::new();
            for line in lines {
                if paragraph.ends_with('-') && !paragraph.ends_with(" -") {
                    // "care-" + "ful" is one word; "X-" + "Ray" keeps its hyphen.
                    if line.starts_with(|c: char| c.is_lowercase()) {
                        paragraph.pop();
                    }
                } else if !paragraph.is_empty() {
                    paragraph.push(' ');
                }
                paragraph.push_str(line);
            }
            escape_block_start(&paragraph)
        })
        .filter(|p| !p.is_empty())
        .collect::<Vec<_>>()
        .join("\n\n")
}

fn escape_block_start(paragraph: &str) -> String {
    let starts_syntax = paragraph.starts_with(['#', '>', '-', '*', '+', '=', '|', '`'])
        || paragraph.split_once(['.', ')']).is_some_and(|(n, _)| {
            !n.is_empty() && n.len() <= 9 && n.bytes().all(|b| b.is_ascii_digit())
        });
    if starts_syntax {
        format!("\\{paragraph}")
    } else {
        paragraph.to_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pdf(pages: &[&str]) -> PdfText {
        PdfText {
            pages: pages.iter().map(|p| p.to_string()).collect(),
            page_count: pages.len(),
            ..PdfText::default()
        }
    }

    #[test]
    fn text_is_a_page_and_no_text_is_image_only() {
        assert!(judge(Ok(pdf(&["", "words"])), false).is_ok());
        assert_eq!(
            judge(Ok(pdf(&["", " \n "])), false).unwrap_err().0,
            BlockReason::ImageOnlyPdf
        );
        // Past the page cap, the detail says only the pages read were judged.
        let mut scanned = pdf(&[""; 3]);
        scanned.page_count = 800;
        let (reason, detail) = judge(Ok(scanned), false).unwrap_err();
        assert_eq!(reason, BlockReason::ImageOnlyPdf);
        assert!(
            detail.contains("first 3 of the PDF's 800 pages"),
            "{detail}"
        );
        assert_eq!(
            judge(Err(PdfRefusal::Encrypted), false).unwrap_err().0,
            BlockReason::EncryptedPdf
        );
        let (reason, detail) = judge(Err(PdfRefusal::Damaged("x".into())), true).unwrap_err();
        assert_eq!(reason, BlockReason::UnsupportedContent);
        assert!(detail.contains("10 MiB"), "{detail}");
        assert_eq!(
            judge(Err(PdfRefusal::TooLarge), false).unwrap_err().0,
            BlockReason::UnsupportedContent
        );
    }

    #[test]
    fn markdown_reflows_lines_and_keeps_paragraphs() {
        assert_eq!(
            markdown_of(
                "The quick brown\nfox jumps over a care-\nful dog.\n\n# not a heading\n\n1. not a list"
            ),
            "The quick brown fox jumps over a careful dog.\n\n\\# not a heading\n\n\\1. not a list"
        );
        assert_eq!(
            markdown_of("Title\nA first line that is long enough\nto wrap.\nEnd."),
            "Title\n\nA first line that is long enough to wrap.\n\nEnd."
        );
        assert_eq!(markdown_of("well -\nknown"), "well - known");
        assert_eq!(markdown_of("X-\nRay"), "X-Ray");
    }
}
