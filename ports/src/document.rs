//! Documents read from their bytes rather than as HTML: PDFs today.

use chrono::{DateTime, Utc};

/// Pages past this are not read (the answer says `truncated`): a 500-page manual is read
/// whole, a 40,000-page dump does not hold a worker for minutes.
pub const MAX_PDF_PAGES: usize = 500;
/// Bytes all of a PDF's streams may inflate to. A 10 MiB file (the fetch cap) of ordinary
/// text and fonts inflates to a few tens of MiB; a deflate bomb inflates to gigabytes.
pub const MAX_PDF_INFLATED_BYTES: u64 = 256 * 1024 * 1024;

/// A PDF's text and document information.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct PdfText {
    /// Each page's text in reading order, lines separated by `\n`, at most
    /// [`MAX_PDF_PAGES`] pages.
    pub pages: Vec<String>,
    /// Pages the document has (more than `pages.len()` when it was cut at the cap).
    pub page_count: usize,
    pub title: Option<String>,
    pub author: Option<String>,
    /// The document's creation date, when it states one that parses.
    pub created: Option<DateTime<Utc>>,
}

/// Why a PDF gave no text.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PdfRefusal {
    /// It needs a password to open.
    #[error("the PDF is encrypted and needs a password to open")]
    Encrypted,
    /// Its streams would inflate past [`MAX_PDF_INFLATED_BYTES`].
    #[error("the PDF's streams inflate to more than {} MiB", MAX_PDF_INFLATED_BYTES / (1024 * 1024))]
    TooLarge,
    /// Not a PDF that can be parsed (cut short, damaged, or not a PDF at all).
    #[error("the PDF could not be parsed: {0}")]
    Damaged(String),
    /// Every parser is busy (with files that ran past their time limit, which cannot be
    /// stopped): nothing is wrong with this one, and it can be read again in a while.
    #[error("every PDF reader is busy with files that ran past {0} s; try again shortly")]
    Busy(u64),
}

/// Reads PDFs. Pure CPU work, deterministic for the same bytes. Implementations MUST answer
/// every input (damaged, hostile, huge) with `Ok` or a [`PdfRefusal`] without panicking or
/// exhausting memory, MUST stop at [`MAX_PDF_PAGES`] and [`MAX_PDF_INFLATED_BYTES`], and MUST
/// NOT decide whether the text is enough to read: a page of only images comes back as an empty
/// string and the caller judges.
#[cfg_attr(feature = "mock", mockall::automock)]
pub trait PdfReader: Send + Sync {
    fn read_pdf(&self, bytes: &[u8]) -> Result<PdfText, PdfRefusal>;
}

/// Whether an answer is a PDF: its type says so, or it has no useful type and its bytes start
/// as a PDF does (servers often send PDFs as `application/octet-stream`).
pub fn is_pdf(content_type: Option<&str>, head: &[u8]) -> bool {
    let essence = content_type
        .and_then(|c| c.split(';').next())
        .map(|c| c.trim().to_ascii_lowercase());
    match essence.as_deref() {
        Some("application/pdf" | "application/x-pdf") => true,
        None | Some("" | "application/octet-stream" | "binary/octet-stream") => {
            head.starts_with(b"%PDF-")
        }
        Some(_) => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pdf_is_known_by_its_type_or_its_first_bytes() {
        assert!(is_pdf(Some("application/pdf"), b""));
        assert!(is_pdf(Some("Application/PDF; qs=0.9"), b""));
        assert!(is_pdf(None, b"%PDF-1.7\n"));
        assert!(is_pdf(Some("application/octet-stream"), b"%PDF-2.0"));
        assert!(!is_pdf(Some("text/html"), b"%PDF-1.7"));
        assert!(!is_pdf(None, b"<html>"));
        assert!(!is_pdf(Some("application/octet-stream"), b"PK\x03\x04"));
    }
}
