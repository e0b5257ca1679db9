//! [`PdfReader`] over pdf-extract (and the lopdf it re-exports): each page's text in the
//! order a reader meets it, and the document's title, author and creation date.
//!
//! Hostile input is the normal case here (a PDF is whatever a URL answered), so three guards
//! sit around the parser: every stream is inflated once, counting, before lopdf inflates
//! anything (a deflate bomb is refused, not allocated); the parse runs on its own thread with
//! a large stack; and a panic in the parser (pdf-extract has many `unwrap`s) is a damaged PDF,
//! not a dead worker.

mod forms;
mod inflate;
mod info;

use std::{
    collections::HashSet,
    panic::{AssertUnwindSafe, catch_unwind},
    sync::{
        Arc, Condvar, Mutex, OnceLock,
        atomic::{AtomicU8, AtomicUsize, Ordering},
        mpsc,
    },
    time::Duration,
};

use pdf_extract::{Document, ObjectId, OutputError, PlainTextOutput, output_doc_page};
use svc_ports::document::{MAX_PDF_INFLATED_BYTES, MAX_PDF_PAGES};
use svc_ports::{PdfReader, PdfRefusal, PdfText};

/// Stack for the parsing thread: lopdf bounds its nesting, and the content interpreter
/// recurses through form XObjects only as deep as `forms` lets it; 64 MiB is far past both
/// and costs only address space.
const PARSER_STACK_BYTES: usize = 64 * 1024 * 1024;

/// How long one PDF may take. Ordinary files take milliseconds; past this the parser is
/// taken to be looping on a structure no check caught, and the read is answered without it.
pub const PDF_TIME_LIMIT: Duration = Duration::from_secs(10);

/// Parents a page may have before its tree is taken to loop (real trees are a few deep).
const MAX_TREE_DEPTH: usize = 256;

#[derive(Debug, Clone, Copy, Default)]
pub struct PdfExtractReader;

impl PdfReader for PdfExtractReader {
    fn read_pdf(&self, bytes: &[u8]) -> Result<PdfText, PdfRefusal> {
        read_within(&PARSERS, bytes, PDF_TIME_LIMIT)
    }
}

/// Parser threads alive now: `running` in all, `overdue` of them past their time limit (their
/// callers answered already; each holds its place until it ends). For the metrics scrape.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ParserThreads {
    pub running: usize,
    pub overdue: usize,
}

pub fn parser_threads() -> ParserThreads {
    PARSERS.threads()
}

/// Where a parse stands, between its thread and its caller.
const RUNNING: u8 = 0;
const ENDED: u8 = 1;
const OVERDUE: u8 = 2;

fn read_within(pool: &'static Pool, bytes: &[u8], limit: Duration) -> Result<PdfText, PdfRefusal> {
    inflate::check_inflated_size(bytes, MAX_PDF_INFLATED_BYTES)?;
    check_xref_widths(bytes)?;
    let owned = bytes.to_vec();
    let (done, answer) = mpsc::channel();
    let turn = pool.take(max_parsers(), PDF_TIME_LIMIT)?;
    let state = Arc::new(AtomicU8::new(RUNNING));
    let ended = state.clone();
    std::thread::Builder::new()
        .name("pdf-reader".into())
        .stack_size(PARSER_STACK_BYTES)
        .spawn(move || {
            let _turn = turn;
            let _ = done.send(catch_unwind(AssertUnwindSafe(|| read(&owned))));
            if ended.swap(ENDED, Ordering::SeqCst) == OVERDUE {
                pool.overdue.fetch_sub(1, Ordering::SeqCst);
            }
        })
        .map_err(|e| PdfRefusal::Damaged(format!("no thread to read it on: {e}")))?;
    let answered = match answer.recv_timeout(limit) {
        Err(mpsc::RecvTimeoutError::Timeout) => {
            // Counted before it is marked, so the thread's count down never comes first.
            pool.overdue.fetch_add(1, Ordering::SeqCst);
            if state
                .compare_exchange(RUNNING, OVERDUE, Ordering::SeqCst, Ordering::SeqCst)
                .is_ok()
            {
                // The thread cannot be stopped from outside; it is left to finish on its own,
                // and the caller gets its answer now.
                return Err(PdfRefusal::Damaged(format!(
                    "reading it took longer than {} s",
                    limit.as_secs()
                )));
            }
            // It ended just as the time ran out: its answer is there.
            pool.overdue.fetch_sub(1, Ordering::SeqCst);
            answer
                .recv()
                .map_err(|_| mpsc::RecvTimeoutError::Disconnected)
        }
        other => other,
    };
    match answered {
        Ok(Ok(answer)) => answer,
        // The parser gave up on something it did not expect (a panic).
        Ok(Err(_)) | Err(_) => Err(PdfRefusal::Damaged(
            "the parser could not make sense of its structure".into(),
        )),
    }
}

/// Parser threads alive, those left running past [`PDF_TIME_LIMIT`] included.
static PARSERS: Pool = Pool::new();

/// Parser threads alive at once, at most: one per core, at least four. A thread past its
/// time limit cannot be stopped, so without this, files that each run long would take every
/// core one after another.
fn max_parsers() -> usize {
    static MAX: OnceLock<usize> = OnceLock::new();
    *MAX.get_or_init(|| std::thread::available_parallelism().map_or(4, |n| n.get().max(4)))
}

/// Threads alive, those past their time limit, and a signal when one ends.
struct Pool {
    live: Mutex<usize>,
    overdue: AtomicUsize,
    freed: Condvar,
}

impl Pool {
    const fn new() -> Self {
        Self {
            live: Mutex::new(0),
            overdue: AtomicUsize::new(0),
            freed: Condvar::new(),
        }
    }

    fn threads(&self) -> ParserThreads {
        ParserThreads {
            running: *self.live.lock().unwrap_or_else(|e| e.into_inner()),
            overdue: self.overdue.load(Ordering::SeqCst),
        }
    }

    /// A place among `max`, waiting up to `wait` for one.
    fn take(&'static self, max: usize, wait: Duration) -> Result<Turn, PdfRefusal> {
        let live = self.live.lock().unwrap_or_else(|e| e.into_inner());
        let (mut live, _) = self
            .freed
            .wait_timeout_while(live, wait, |n| *n >= max)
            .unwrap_or_else(|e| e.into_inner());
        if *live >= max {
            return Err(PdfRefusal::Busy(PDF_TIME_LIMIT.as_secs()));
        }
        *live += 1;
        Ok(Turn(self))
    }
}

/// One thread's place in its [`Pool`], given back when dropped (the thread ended).
struct Turn(&'static Pool);

impl Drop for Turn {
    fn drop(&mut self) {
        *self.0.live.lock().unwrap_or_else(|e| e.into_inner()) -= 1;
        self.0.freed.notify_one();
    }
}

fn read(bytes: &[u8]) -> Result<PdfText, PdfRefusal> {
    let mut doc = Document::load_mem(bytes).map_err(|e| PdfRefusal::Damaged(e.to_string()))?;
    if doc.is_encrypted() {
        // Most "encrypted" PDFs only restrict printing or copying and open with the empty
        // user password; those are read. One that needs a real password is not.
        doc.decrypt("").map_err(|_| PdfRefusal::Encrypted)?;
    }
    let pages_by_number = doc.get_pages();
    // pdf-extract looks up inherited attributes by climbing `/Parent` without a bound: a tree
    // that loops would spin forever (found by scripts/fuzz.sh).
    if let Some(number) = pages_by_number
        .iter()
        .find(|(_, id)| parents_loop(&doc, **id))
        .map(|(n, _)| *n)
    {
        return Err(PdfRefusal::Damaged(format!(
            "the page tree loops above page {number}"
        )));
    }
    let page_ids: Vec<ObjectId> = pages_by_number
        .values()
        .copied()
        .take(MAX_PDF_PAGES)
        .collect();
    forms::check_forms(&doc, &page_ids).map_err(|e| PdfRefusal::Damaged(e.to_string()))?;
    let page_numbers: Vec<u32> = pages_by_number.keys().copied().collect();
    let mut pages = Vec::with_capacity(page_numbers.len().min(MAX_PDF_PAGES));
    for &number in page_numbers.iter().take(MAX_PDF_PAGES) {
        pages.push(page_text(&doc, number)?);
    }
    if page_numbers.is_empty() {
        return Err(PdfRefusal::Damaged("it has no pages".into()));
    }
    let info = info::DocumentInfo::of(&doc);
    Ok(PdfText {
        pages,
        page_count: page_numbers.len(),
        title: info.title,
        author: info.author,
        created: info.created,
    })
}

/// Whether climbing `/Parent` from `page` comes back to an object already seen, or goes on
/// past any real tree's depth.
fn parents_loop(doc: &Document, page: ObjectId) -> bool {
    let mut seen = HashSet::new();
    let mut at = page;
    loop {
        if !seen.insert(at) || seen.len() > MAX_TREE_DEPTH {
            return true;
        }
        let parent = doc
            .get_dictionary(at)
            .ok()
            .and_then(|d| d.get(b"Parent").ok())
            .and_then(|p| p.as_reference().ok());
        match parent {
            Some(next) => at = next,
            None => return false,
        }
    }
}

fn page_text(doc: &Document, number: u32) -> Result<String, PdfRefusal> {
    let mut text = String::new();
    let mut output = PlainTextOutput::new(&mut text);
    match output_doc_page(doc, &mut output, number) {
        Ok(()) => Ok(tidy(&text)),
        Err(OutputError::PdfError(e)) => Err(PdfRefusal::Damaged(format!("page {number}: {e}"))),
        Err(e) => Err(PdfRefusal::Damaged(format!("page {number}: {e}"))),
    }
}

/// Lines without trailing blanks, runs of blank lines down to one, no NUL or other control
/// characters (a font without a usable encoding maps glyphs to them).
fn tidy(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut blank_run = 0;
    for line in text.lines() {
        let line: String = line
            .chars()
            .filter(|c| !c.is_control() || *c == '\t')
            .collect();
        let line = line.trim_end();
        if line.trim().is_empty() {
            blank_run += 1;
            if blank_run > 1 || out.is_empty() {
                continue;
            }
            out.push('\n');
        } else {
            blank_run = 0;
            out.push_str(line);
            out.push('\n');
        }
    }
    out.trim_end().to_owned()
}

/// Widest field an xref stream's `/W` may give, in bytes. Real files use 1 to 4 (8 at most: the
/// fields are integers); lopdf allocates each width as a buffer before reading, so a width of
/// 888888888888888 (found by scripts/fuzz.sh) is an allocation that aborts the process.
const MAX_XREF_FIELD_WIDTH: u64 = 32;

/// Refuses a file whose `/W` arrays name a field wider than [`MAX_XREF_FIELD_WIDTH`], found by
/// the key in the raw bytes (xref stream dictionaries are never compressed).
fn check_xref_widths(bytes: &[u8]) -> Result<(), PdfRefusal> {
    let mut at = 0;
    while let Some(found) = find(&bytes[at..], b"/W") {
        let key_end = at + found + 2;
        at = key_end;
        // `/Widths` and the like are other keys.
        let rest = &bytes[key_end..];
        // PDF whitespace includes NUL.
        let start = rest
            .iter()
            .position(|b| !b.is_ascii_whitespace() && *b != 0);
        let Some(start) = start.filter(|&i| rest[i] == b'[') else {
            continue;
        };
        let Some(len) = rest[start..].iter().position(|&b| b == b']') else {
            continue;
        };
        let inside = &rest[start + 1..start + len];
        let too_wide = inside
            .split(|b| !b.is_ascii_digit())
            .filter(|t| !t.is_empty())
            .any(|t| {
                t.len() > 3
                    || std::str::from_utf8(t)
                        .ok()
                        .and_then(|n| n.parse::<u64>().ok())
                        .is_none_or(|n| n > MAX_XREF_FIELD_WIDTH)
            });
        if too_wide {
            return Err(PdfRefusal::Damaged(
                "its cross-reference stream declares fields wider than any file has".into(),
            ));
        }
    }
    Ok(())
}

pub(crate) fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

#[cfg(test)]
mod tests;
