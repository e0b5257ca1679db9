//! PDFs made here with lopdf (as pdf-extract re-exports it), so each case is exactly what it
//! says: text pages, an image-only page, a password, a damaged file, a deflate bomb.

use super::*;
use crate::inflate::check_inflated_size;
use pdf_extract::content::{Content, Operation};
use pdf_extract::encryption::{EncryptionState, EncryptionVersion, Permissions};
use pdf_extract::{Object, Stream, StringFormat, dictionary};
use proptest::prelude::*;

struct Built {
    pages: Vec<Vec<&'static str>>,
    info: Option<(&'static str, &'static str, &'static str)>,
    user_password: Option<&'static str>,
}

impl Built {
    fn pages(pages: Vec<Vec<&'static str>>) -> Self {
        Self {
            pages,
            info: None,
            user_password: None,
        }
    }

    fn bytes(&self) -> Vec<u8> {
        let mut doc = Document::with_version("1.5");
        let pages_id = doc.new_object_id();
        let font_id = doc.add_object(dictionary! {
            "Type" => "Font", "Subtype" => "Type1", "BaseFont" => "Helvetica",
            "Encoding" => "WinAnsiEncoding",
        });
        let resources_id =
            doc.add_object(dictionary! { "Font" => dictionary! { "F1" => font_id } });
        let mut kids = Vec::new();
        for lines in &self.pages {
            let mut operations = vec![
                Operation::new("BT", vec![]),
                Operation::new("Tf", vec!["F1".into(), 12.into()]),
                Operation::new("TL", vec![16.into()]),
                Operation::new("Td", vec![72.into(), 720.into()]),
            ];
            for line in lines {
                operations.push(Operation::new(
                    "Tj",
                    vec![Object::string_literal(line.as_bytes().to_vec())],
                ));
                operations.push(Operation::new("T*", vec![]));
            }
            operations.push(Operation::new("ET", vec![]));
            if lines.is_empty() {
                // A scanned page: a filled rectangle where the picture would be, no text.
                operations = vec![
                    Operation::new("re", vec![72.into(), 72.into(), 400.into(), 600.into()]),
                    Operation::new("f", vec![]),
                ];
            }
            let content = Content { operations }.encode().unwrap();
            let content_id = doc.add_object(Stream::new(dictionary! {}, content));
            kids.push(Object::from(doc.add_object(dictionary! {
                "Type" => "Page", "Parent" => pages_id, "Contents" => content_id,
            })));
        }
        let count = kids.len() as i64;
        doc.objects.insert(
            pages_id,
            Object::Dictionary(dictionary! {
                "Type" => "Pages", "Kids" => kids, "Count" => count,
                "Resources" => resources_id,
                "MediaBox" => vec![0.into(), 0.into(), 612.into(), 792.into()],
            }),
        );
        let catalog_id = doc.add_object(dictionary! { "Type" => "Catalog", "Pages" => pages_id });
        doc.trailer.set("Root", catalog_id);
        if let Some((title, author, created)) = self.info {
            let mut utf16 = vec![0xFE, 0xFF];
            utf16.extend(title.encode_utf16().flat_map(u16::to_be_bytes));
            let info_id = doc.add_object(dictionary! {
                "Title" => Object::String(utf16, StringFormat::Hexadecimal),
                "Author" => Object::string_literal(author),
                "CreationDate" => Object::string_literal(created),
            });
            doc.trailer.set("Info", info_id);
        }
        doc.compress();
        if let Some(password) = self.user_password {
            let id = Object::String(b"0123456789abcdef".to_vec(), StringFormat::Hexadecimal);
            doc.trailer.set("ID", vec![id.clone(), id]);
            let state = EncryptionState::try_from(EncryptionVersion::V2 {
                document: &doc,
                owner_password: "owner",
                user_password: password,
                key_length: 128,
                permissions: Permissions::default(),
            })
            .unwrap();
            doc.encrypt(&state).unwrap();
        }
        let mut out = Vec::new();
        doc.save_to(&mut out).unwrap();
        out
    }
}

fn read(bytes: &[u8]) -> Result<PdfText, PdfRefusal> {
    PdfExtractReader.read_pdf(bytes)
}

#[test]
fn pages_come_back_in_order_with_their_lines() {
    let pdf = Built::pages(vec![
        vec!["Quarterly report", "Revenue grew in every region."],
        vec!["Second page", "Costs fell."],
    ])
    .bytes();
    let text = read(&pdf).unwrap();
    assert_eq!(text.page_count, 2);
    assert_eq!(text.pages.len(), 2);
    assert_eq!(
        text.pages[0],
        "Quarterly report\nRevenue grew in every region."
    );
    assert_eq!(text.pages[1], "Second page\nCosts fell.");
    assert_eq!(text.title, None);
}

#[test]
fn the_information_dictionary_gives_title_author_and_date() {
    let mut built = Built::pages(vec![vec!["Body"]]);
    built.info = Some(("Über the manual", "Ada Lovelace", "D:20240315093000+01'00'"));
    let text = read(&built.bytes()).unwrap();
    assert_eq!(text.title.as_deref(), Some("Über the manual"));
    assert_eq!(text.author.as_deref(), Some("Ada Lovelace"));
    assert_eq!(
        text.created.map(|d| d.to_rfc3339()).as_deref(),
        Some("2024-03-15T08:30:00+00:00")
    );
}

#[test]
fn an_image_only_page_is_an_empty_string_for_the_caller_to_judge() {
    let text = read(&Built::pages(vec![vec![], vec![]]).bytes()).unwrap();
    assert_eq!(text.page_count, 2);
    assert!(text.pages.iter().all(String::is_empty), "{:?}", text.pages);
}

#[test]
fn a_password_protected_pdf_is_refused_as_encrypted() {
    let mut built = Built::pages(vec![vec!["Secret plans"]]);
    built.user_password = Some("hunter2");
    assert_eq!(read(&built.bytes()), Err(PdfRefusal::Encrypted));
}

#[test]
fn a_pdf_that_opens_with_the_empty_password_is_read() {
    let mut built = Built::pages(vec![vec!["Only printing is restricted"]]);
    built.user_password = Some("");
    let text = read(&built.bytes()).unwrap();
    assert_eq!(text.pages, vec!["Only printing is restricted"]);
}

#[test]
fn damaged_files_are_refused_as_damaged() {
    let pdf = Built::pages(vec![vec!["Hello"]]).bytes();
    for bad in [
        &b""[..],
        b"%PDF-1.7\n",
        b"not a pdf at all",
        &pdf[..pdf.len() / 3],
    ] {
        match read(bad) {
            Err(PdfRefusal::Damaged(_)) => {}
            other => panic!(
                "{:?}: {other:?}",
                String::from_utf8_lossy(&bad[..bad.len().min(20)])
            ),
        }
    }
}

fn zlib(data: &[u8]) -> Vec<u8> {
    use std::io::Write;
    let mut e = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::best());
    e.write_all(data).unwrap();
    e.finish().unwrap()
}

#[test]
fn streams_are_counted_inflated_and_a_bomb_is_refused() {
    let bomb = zlib(&vec![0u8; 2 * 1024 * 1024]);
    let mut file = b"%PDF-1.5\n1 0 obj << /Filter /FlateDecode >>\nstream\r\n".to_vec();
    file.extend(&bomb);
    file.extend(b"\nendstream\nendobj\n");
    assert_eq!(
        check_inflated_size(&file, 1024 * 1024),
        Err(PdfRefusal::TooLarge)
    );
    assert_eq!(check_inflated_size(&file, 4 * 1024 * 1024), Ok(()));
    // Two streams share one budget.
    let twice = [file.clone(), file].concat();
    assert_eq!(
        check_inflated_size(&twice, 3 * 1024 * 1024),
        Err(PdfRefusal::TooLarge)
    );
}

#[test]
fn a_bomb_inside_a_real_pdf_is_refused_before_parsing() {
    let pdf = Built::pages(vec![vec!["Hello"]]).bytes();
    let size = MAX_PDF_INFLATED_BYTES as usize + 1024;
    // Inserted as an unreferenced object before the cross-reference table: the counting
    // pass finds it by its keyword, as it would an object stream lopdf inflates on load.
    let at = find(&pdf, b"xref").unwrap();
    let mut file = pdf[..at].to_vec();
    file.extend(b"99 0 obj << /Filter /FlateDecode >>\nstream\n");
    file.extend(zlib(&vec![b'A'; size]));
    file.extend(b"\nendstream\nendobj\n");
    file.extend(&pdf[at..]);
    assert_eq!(read(&file), Err(PdfRefusal::TooLarge));
}

#[test]
fn pages_past_the_cap_are_counted_but_not_read() {
    let many: Vec<Vec<&str>> = (0..MAX_PDF_PAGES + 3).map(|_| vec!["x"]).collect();
    let text = read(&Built::pages(many).bytes()).unwrap();
    assert_eq!(text.page_count, MAX_PDF_PAGES + 3);
    assert_eq!(text.pages.len(), MAX_PDF_PAGES);
}

#[test]
fn tidy_keeps_lines_and_single_blank_lines_only() {
    assert_eq!(tidy("\n\na  \n\n\n\nb\u{0}c\n\n"), "a\n\nbc");
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// Whatever a flipped byte or a cut does to a good PDF, the answer is text or a refusal.
    #[test]
    fn a_damaged_pdf_never_panics(cut in 0usize..2000, flips in proptest::collection::vec((0usize..2000, any::<u8>()), 0..8)) {
        let mut pdf = Built::pages(vec![vec!["Hello", "world"], vec!["Again"]]).bytes();
        for (at, byte) in flips {
            let at = at % pdf.len();
            pdf[at] = byte;
        }
        pdf.truncate(pdf.len().saturating_sub(cut % pdf.len()));
        let _ = read(&pdf);
    }
}

/// Writes the PDFs the API and CLI tests serve (`tests/fixtures/pdf/`), and the fuzzer's seeds
/// of forms that loop or fan out, so those files are exactly these cases:
/// `cargo nextest run -p svc-pdf --run-ignored only write_fixtures`.
#[test]
#[ignore]
fn write_fixtures() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/pdf");
    std::fs::create_dir_all(&dir).unwrap();
    let mut report = Built::pages(vec![
        vec![
            "Field notes on agent reading",
            "Agents meet PDFs constantly: papers, manuals, invoices and",
            "filings. This report is two pages long.",
        ],
        vec!["Second page", "The end of the report."],
    ]);
    report.info = Some(("Field notes", "Ada Lovelace", "D:20240315093000+01'00'"));
    std::fs::write(dir.join("report.pdf"), report.bytes()).unwrap();
    let mut locked = Built::pages(vec![vec!["Secret plans"]]);
    locked.user_password = Some("hunter2");
    std::fs::write(dir.join("encrypted.pdf"), locked.bytes()).unwrap();
    std::fs::write(
        dir.join("scanned.pdf"),
        Built::pages(vec![vec![], vec![]]).bytes(),
    )
    .unwrap();
    let seeds = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz/seeds/read_pdf");
    std::fs::write(seeds.join("form-loop.pdf"), with_forms(2, 1, "F0")).unwrap();
    std::fs::write(seeds.join("form-fan-out.pdf"), with_forms(13, 10, "")).unwrap();
}

/// The input scripts/fuzz.sh found: a `/Pages` node that is its own `/Parent`, which sent
/// pdf-extract's inherited-attribute lookup round forever.
#[test]
fn a_page_tree_that_loops_is_damaged_not_a_hang() {
    let found = include_bytes!("../fuzz/seeds/read_pdf/parent-loop.pdf");
    match read(found) {
        Err(PdfRefusal::Damaged(detail)) => assert!(detail.contains("loops"), "{detail}"),
        other => panic!("{other:?}"),
    }
    // The same loop made on purpose in a good file.
    let mut doc = Document::load_mem(&Built::pages(vec![vec!["Hello"]]).bytes()).unwrap();
    let pages_id = doc
        .catalog()
        .unwrap()
        .get(b"Pages")
        .unwrap()
        .as_reference()
        .unwrap();
    doc.get_dictionary_mut(pages_id)
        .unwrap()
        .set("Parent", Object::Reference(pages_id));
    let mut looped = Vec::new();
    doc.save_to(&mut looped).unwrap();
    assert!(matches!(read(&looped), Err(PdfRefusal::Damaged(_))));
}

/// The input scripts/fuzz.sh found: an xref stream whose `/W` names a field 888888888888888
/// bytes wide, which lopdf allocated (an allocation failure aborts the process).
#[test]
fn an_absurd_xref_field_width_is_damaged_not_an_abort() {
    let found = include_bytes!("../fuzz/seeds/read_pdf/huge-xref-width.pdf");
    match read(found) {
        Err(PdfRefusal::Damaged(detail)) => assert!(detail.contains("wider"), "{detail}"),
        other => panic!("{other:?}"),
    }
    assert!(check_xref_widths(b"<< /Type /XRef /W [1 2 1] /Size 5 >>").is_ok());
    assert!(check_xref_widths(b"<< /Widths [600 600 600 1000] /W[1 4 2] >>").is_ok());
    assert!(check_xref_widths(b"<< /W [ 1 99 1 ] >>").is_err());
}

/// A one-page PDF whose page draws form `F0`, and forms `F0..forms` where each draws the
/// next `times` times and the last draws `last` (by name, from its own resources).
fn with_forms(forms: usize, times: usize, last: &str) -> Vec<u8> {
    let mut doc = Document::with_version("1.5");
    let pages_id = doc.new_object_id();
    let font_id = doc.add_object(dictionary! {
        "Type" => "Font", "Subtype" => "Type1", "BaseFont" => "Helvetica",
        "Encoding" => "WinAnsiEncoding",
    });
    let ids: Vec<ObjectId> = (0..forms).map(|_| doc.new_object_id()).collect();
    let draw = |name: &str| Operation::new("Do", vec![Object::Name(name.as_bytes().to_vec())]);
    for (i, &id) in ids.iter().enumerate() {
        let (operations, xobjects) = if i + 1 < forms {
            let next = format!("F{}", i + 1);
            (
                (0..times).map(|_| draw(&next)).collect(),
                dictionary! { next.as_str() => ids[i + 1] },
            )
        } else {
            let mut operations = vec![
                Operation::new("BT", vec![]),
                Operation::new("Tf", vec!["F1".into(), 12.into()]),
                Operation::new("Td", vec![72.into(), 720.into()]),
                Operation::new("Tj", vec![Object::string_literal("Running header")]),
                Operation::new("ET", vec![]),
            ];
            if !last.is_empty() {
                operations.push(draw(last));
            }
            let target = last.trim_start_matches('F').parse::<usize>().ok();
            let xobjects = match target {
                Some(t) => dictionary! { last => ids[t] },
                None => dictionary! {},
            };
            (operations, xobjects)
        };
        let content = Content { operations }.encode().unwrap();
        let dict = dictionary! {
            "Type" => "XObject", "Subtype" => "Form",
            "BBox" => vec![0.into(), 0.into(), 612.into(), 792.into()],
            "Resources" => dictionary! { "XObject" => xobjects, "Font" => dictionary! { "F1" => font_id } },
        };
        doc.objects
            .insert(id, Object::Stream(Stream::new(dict, content)));
    }
    let page_content = Content {
        operations: vec![draw("F0")],
    }
    .encode()
    .unwrap();
    let content_id = doc.add_object(Stream::new(dictionary! {}, page_content));
    let page_id = doc.add_object(dictionary! {
        "Type" => "Page", "Parent" => pages_id, "Contents" => content_id,
        "Resources" => dictionary! { "XObject" => dictionary! { "F0" => ids[0] } },
    });
    doc.objects.insert(
        pages_id,
        Object::Dictionary(dictionary! {
            "Type" => "Pages", "Kids" => vec![page_id.into()], "Count" => 1,
            "MediaBox" => vec![0.into(), 0.into(), 612.into(), 792.into()],
        }),
    );
    let catalog_id = doc.add_object(dictionary! { "Type" => "Catalog", "Pages" => pages_id });
    doc.trailer.set("Root", catalog_id);
    let mut out = Vec::new();
    doc.save_to(&mut out).unwrap();
    out
}

#[test]
fn text_drawn_by_forms_is_read() {
    // A header form drawn through two more forms, three times each: nine headers.
    let text = read(&with_forms(3, 3, "")).expect("read");
    assert_eq!(
        text.pages[0].matches("Running header").count(),
        9,
        "{:?}",
        text.pages
    );
    // Drawn many times over, within reason: a thousand headers are read, not refused.
    let text = read(&with_forms(4, 10, "")).expect("read");
    assert_eq!(text.pages[0].matches("Running header").count(), 1000);
}

/// A form that draws itself made pdf-extract recurse until the stack ran out: an abort of the
/// whole process, which no `catch_unwind` stops (found by a review of the parser).
#[test]
fn a_form_that_draws_itself_is_damaged_not_an_abort() {
    for (forms, last) in [(1, "F0"), (4, "F1")] {
        match read(&with_forms(forms, 1, last)) {
            Err(PdfRefusal::Damaged(detail)) => {
                assert!(detail.contains("draws itself"), "{detail}")
            }
            other => panic!("{other:?}"),
        }
    }
}

#[test]
fn forms_that_draw_each_other_many_times_over_are_refused() {
    // 10^12 draws of the header in a file of a few kilobytes; and 10^7, which the parser
    // would have drawn for a minute past its time limit (the fuzzer found a file of 10^8).
    for forms in [13, 8] {
        match read(&with_forms(forms, 10, "")) {
            Err(PdfRefusal::Damaged(detail)) => {
                assert!(detail.contains("too many times"), "{forms}: {detail}")
            }
            other => panic!("{forms}: {other:?}"),
        }
    }
    // Nested deeper than any real file.
    match read(&with_forms(40, 1, "")) {
        Err(PdfRefusal::Damaged(detail)) => assert!(detail.contains("deeper"), "{detail}"),
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_parser_waits_for_a_place_and_gives_it_back() {
    let pool: &'static Pool = Box::leak(Box::new(Pool::new()));
    let wait = Duration::from_millis(20);
    let first = pool.take(2, wait).unwrap();
    let second = pool.take(2, wait).unwrap();
    // Full: refused once the wait is over.
    assert!(matches!(pool.take(2, wait), Err(PdfRefusal::Busy(_))));
    drop(first);
    let third = pool.take(2, wait).expect("a place was given back");
    // A place given back while waiting is taken.
    let waiting = std::thread::spawn(move || pool.take(2, Duration::from_secs(60)).is_ok());
    drop(second);
    assert!(waiting.join().unwrap());
    drop(third);
}

#[test]
fn a_parse_past_its_time_is_counted_overdue_until_its_thread_ends() {
    let pool: &'static Pool = Box::leak(Box::new(Pool::new()));
    let bytes = with_forms(4, 10, "");
    // No time at all: the caller is answered at once, the thread goes on.
    match read_within(pool, &bytes, Duration::ZERO) {
        Err(PdfRefusal::Damaged(why)) => {
            assert!(why.contains("took longer"), "{why}");
            let now = pool.threads();
            assert!(now.overdue <= now.running && now.running <= 1, "{now:?}");
        }
        // It ended before the caller looked: then its answer is given, nothing overdue.
        Ok(_) => assert_eq!(pool.threads().overdue, 0),
        Err(other) => panic!("{other:?}"),
    }
    // Once the thread ends, neither count holds it.
    while pool.threads().running > 0 {
        std::thread::yield_now();
    }
    assert_eq!(
        pool.threads(),
        ParserThreads {
            running: 0,
            overdue: 0
        }
    );
    // With time enough the same file is read and nothing is left overdue.
    assert!(read_within(pool, &bytes, PDF_TIME_LIMIT).is_ok());
    assert_eq!(pool.threads().overdue, 0);
}
