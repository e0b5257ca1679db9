//! Any bytes given to the PDF reader come back as text or a refusal: no panic escapes, no
//! allocation past the caps, no hang (libFuzzer's -timeout and -rss_limit_mb catch those).
#![no_main]

use std::sync::Once;

use libfuzzer_sys::fuzz_target;
use svc_ports::PdfReader;

static HOOK: Once = Once::new();

fuzz_target!(|bytes: &[u8]| {
    // libfuzzer-sys aborts on every panic, even a caught one. The reader catches the parser's
    // panics on its own thread by design (a damaged PDF); only a panic elsewhere is a crash.
    HOOK.call_once(|| {
        let crash = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if std::thread::current().name() != Some("pdf-reader") {
                crash(info);
            }
        }));
    });
    if let Ok(text) = svc_pdf::PdfExtractReader.read_pdf(bytes) {
        assert!(text.pages.len() <= svc_ports::document::MAX_PDF_PAGES);
        assert!(text.pages.len() <= text.page_count);
    }
});
