//! The document information dictionary: title, author, creation date.

use chrono::{DateTime, FixedOffset, NaiveDate, TimeZone, Utc};
use pdf_extract::{Dictionary, Document, Object};

#[derive(Debug, Default)]
pub(crate) struct DocumentInfo {
    pub title: Option<String>,
    pub author: Option<String>,
    pub created: Option<DateTime<Utc>>,
}

impl DocumentInfo {
    pub(crate) fn of(doc: &Document) -> Self {
        let Some(info) = info_dictionary(doc) else {
            return Self::default();
        };
        let string = |key: &[u8]| match info.get(key).ok().map(|o| resolve(doc, o)) {
            Some(Object::String(bytes, _)) => text_string(bytes),
            _ => None,
        };
        let created = match info.get(b"CreationDate").ok().map(|o| resolve(doc, o)) {
            Some(Object::String(bytes, _)) => std::str::from_utf8(bytes).ok().and_then(date),
            _ => None,
        };
        Self {
            title: string(b"Title"),
            author: string(b"Author"),
            created,
        }
    }
}

fn info_dictionary(doc: &Document) -> Option<&Dictionary> {
    match resolve(doc, doc.trailer.get(b"Info").ok()?) {
        Object::Dictionary(d) => Some(d),
        _ => None,
    }
}

fn resolve<'a>(doc: &'a Document, object: &'a Object) -> &'a Object {
    match object {
        Object::Reference(id) => doc.get_object(*id).unwrap_or(object),
        other => other,
    }
}

/// A PDF text string: UTF-16BE after a byte-order mark, UTF-8 after one (PDF 2.0), else
/// PDFDocEncoding, which agrees with Latin-1 on every printable character but a few in
/// 0x80-0x9F (typographic quotes and dashes), mapped here.
pub(crate) fn text_string(bytes: &[u8]) -> Option<String> {
    let text = if let Some(rest) = bytes.strip_prefix(&[0xFE, 0xFF]) {
        let units: Vec<u16> = rest
            .chunks_exact(2)
            .map(|p| u16::from_be_bytes([p[0], p[1]]))
            .collect();
        String::from_utf16_lossy(&units)
    } else if let Some(rest) = bytes.strip_prefix(&[0xEF, 0xBB, 0xBF]) {
        String::from_utf8_lossy(rest).into_owned()
    } else {
        bytes.iter().map(|&b| pdf_doc_char(b)).collect()
    };
    let text: String = text
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    let text = text.split_whitespace().collect::<Vec<_>>().join(" ");
    (!text.is_empty()).then_some(text)
}

fn pdf_doc_char(b: u8) -> char {
    match b {
        0x80 => '•',
        0x81 => '†',
        0x82 => '‡',
        0x83 => '…',
        0x84 => '—',
        0x85 => '–',
        0x86 => 'ƒ',
        0x87 => '⁄',
        0x88 => '‹',
        0x89 => '›',
        0x8A => '−',
        0x8B => '‰',
        0x8C => '„',
        0x8D => '“',
        0x8E => '”',
        0x8F => '‘',
        0x90 => '’',
        0x91 => '‚',
        0x92 => '™',
        0x93 => 'ﬁ',
        0x94 => 'ﬂ',
        0x95 => 'Ł',
        0x96 => 'Œ',
        0x97 => 'Š',
        0x98 => 'Ÿ',
        0x99 => 'Ž',
        0x9A => 'ı',
        0x9B => 'ł',
        0x9C => 'œ',
        0x9D => 'š',
        0x9E => 'ž',
        0xA0 => '€',
        other => char::from(other),
    }
}

/// `D:YYYYMMDDHHmmSSOHH'mm'`, every part after the year optional (PDF 32000-1, 7.9.4); no
/// offset means UTC here (the standard says "unknown").
pub(crate) fn date(s: &str) -> Option<DateTime<Utc>> {
    let s = s.trim();
    let s = s.strip_prefix("D:").unwrap_or(s);
    let digits = s.bytes().take_while(u8::is_ascii_digit).count();
    if digits < 4 || digits % 2 != 0 || digits > 14 {
        return None;
    }
    let field = |at: usize, default: u32| -> u32 {
        s.get(at..at + 2)
            .filter(|_| at + 2 <= digits)
            .and_then(|f| f.parse().ok())
            .unwrap_or(default)
    };
    let year: i32 = s[..4].parse().ok()?;
    let naive = NaiveDate::from_ymd_opt(year, field(4, 1), field(6, 1))?.and_hms_opt(
        field(8, 0),
        field(10, 0),
        field(12, 0),
    )?;
    let rest = &s[digits..];
    let offset_seconds = match rest.chars().next() {
        Some(sign @ ('+' | '-')) => {
            let numbers: Vec<i32> = rest[1..]
                .split(|c: char| !c.is_ascii_digit())
                .filter(|p| !p.is_empty())
                .map(|p| p.parse().unwrap_or(0))
                .collect();
            let hours = *numbers.first().unwrap_or(&0);
            let minutes = *numbers.get(1).unwrap_or(&0);
            if hours > 23 || minutes > 59 {
                return None;
            }
            let total = hours * 3600 + minutes * 60;
            if sign == '-' { -total } else { total }
        }
        _ => 0,
    };
    let zone = FixedOffset::east_opt(offset_seconds)?;
    Some(
        zone.from_local_datetime(&naive)
            .single()?
            .with_timezone(&Utc),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn dates_in_every_precision() {
        let at = |s| date(s).map(|d| d.to_rfc3339());
        assert_eq!(
            at("D:20240315093000+01'00'").as_deref(),
            Some("2024-03-15T08:30:00+00:00")
        );
        assert_eq!(
            at("D:20240315093000Z").as_deref(),
            Some("2024-03-15T09:30:00+00:00")
        );
        assert_eq!(
            at("D:20240315093000-05'30").as_deref(),
            Some("2024-03-15T15:00:00+00:00")
        );
        assert_eq!(at("D:2024").as_deref(), Some("2024-01-01T00:00:00+00:00"));
        assert_eq!(at("20240315").as_deref(), Some("2024-03-15T00:00:00+00:00"));
        assert_eq!(at("D:20241345"), None, "month 13");
        assert_eq!(at("D:202"), None);
        assert_eq!(at("yesterday"), None);
        assert_eq!(at("D:20240315093000+99'00'"), None);
    }

    #[test]
    fn text_strings_in_each_encoding() {
        assert_eq!(
            text_string(&[0xFE, 0xFF, 0, b'H', 0, b'i', 0x20, 0xAC]).as_deref(),
            Some("Hi€")
        );
        assert_eq!(
            text_string("\u{feff}Ünïcode".as_bytes()).as_deref(),
            Some("Ünïcode")
        );
        assert_eq!(
            text_string(b"Caf\xe9 \x8dquoted\x8e").as_deref(),
            Some("Café “quoted”")
        );
        assert_eq!(text_string(b"  \x00 \n "), None);
    }

    proptest! {
        #[test]
        fn any_bytes_are_a_string_or_nothing(bytes in proptest::collection::vec(any::<u8>(), 0..64)) {
            if let Some(s) = text_string(&bytes) {
                prop_assert!(!s.contains('\0'));
                prop_assert_eq!(s.trim(), s.as_str());
            }
        }

        #[test]
        fn any_date_text_parses_or_not_without_panicking(s in "\\PC{0,30}") {
            let _ = date(&s);
            let _ = date(&format!("D:{s}"));
        }
    }
}
