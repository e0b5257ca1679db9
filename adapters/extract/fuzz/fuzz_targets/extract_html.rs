//! Any text given to the HTML extractor, with and without main-content detection and with a
//! selector, comes back as an extraction: no panic, no hang, no runaway memory.
#![no_main]

use libfuzzer_sys::fuzz_target;
use svc_ports::{ExtractOptions, PageExtractor};

fuzz_target!(|html: &str| {
    let extractor = svc_extract::HtmlExtractor::new();
    let mut options = ExtractOptions::default();
    let _ = extractor.extract(html, "https://example.com/a/b", &options);
    options.main_content_only = false;
    options.exclude_selectors = vec!["nav, footer".into()];
    let _ = extractor.extract(html, "https://example.com/a/b", &options);
});
