//! Decoding a body to text: the charset from Content-Type, else a byte-order mark, else a
//! `<meta>` declaration in the first 1024 bytes, else UTF-8 if the bytes are valid UTF-8, else
//! windows-1252 (what browsers assume for legacy pages).

use encoding_rs::{Encoding, UTF_8, WINDOWS_1252};

fn label_after_charset(s: &str) -> Option<&str> {
    let start = s.find("charset")? + "charset".len();
    let rest = s[start..].trim_start();
    let rest = rest.strip_prefix('=')?.trim_start();
    let rest = rest.trim_start_matches(['"', '\'']);
    let end = rest.find(|c: char| {
        c == '"' || c == '\'' || c == ';' || c == '>' || c == '/' || c.is_whitespace()
    });
    let label = &rest[..end.unwrap_or(rest.len())];
    (!label.is_empty()).then_some(label)
}

fn from_content_type(content_type: Option<&str>) -> Option<&'static Encoding> {
    let ct = content_type?.to_ascii_lowercase();
    Encoding::for_label(label_after_charset(&ct)?.as_bytes())
}

fn from_meta(prefix: &[u8]) -> Option<&'static Encoding> {
    let head = String::from_utf8_lossy(&prefix[..prefix.len().min(1024)]).to_ascii_lowercase();
    let mut search = head.as_str();
    while let Some(i) = search.find("<meta") {
        let tag = &search[i..];
        let tag = &tag[..tag.find('>').unwrap_or(tag.len())];
        if let Some(enc) = label_after_charset(tag).and_then(|l| Encoding::for_label(l.as_bytes()))
        {
            // A page cannot truly be UTF-16 if its <meta> is readable as ASCII (HTML spec).
            return Some(
                if enc == encoding_rs::UTF_16BE || enc == encoding_rs::UTF_16LE {
                    UTF_8
                } else {
                    enc
                },
            );
        }
        search = &search[i + 5..];
    }
    None
}

/// Returns the decoded text and the name of the encoding used.
pub fn decode(bytes: &[u8], content_type: Option<&str>) -> (String, &'static str) {
    let (bom_encoding, _) = Encoding::for_bom(bytes).unzip();
    let encoding = bom_encoding
        .or_else(|| from_content_type(content_type))
        .or_else(|| from_meta(bytes))
        .unwrap_or_else(|| match std::str::from_utf8(bytes) {
            Ok(_) => UTF_8,
            // Valid up to a character cut short at the end: a body cut at the size cap.
            Err(e) if e.error_len().is_none() => UTF_8,
            Err(_) => WINDOWS_1252,
        });
    let (text, used, _) = encoding.decode(bytes);
    (text.into_owned(), used.name())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_charset_wins_over_meta() {
        let body = b"<meta charset=utf-8><p>caf\xe9</p>";
        let (text, name) = decode(body, Some("text/html; charset=ISO-8859-1"));
        assert_eq!(name, "windows-1252");
        assert!(text.contains("café"));
    }

    #[test]
    fn meta_declarations_are_found() {
        let (_, name) = decode(
            b"<html><head><meta charset=\"shift_jis\">",
            Some("text/html"),
        );
        assert_eq!(name, "Shift_JIS");
        let (_, name) = decode(
            b"<meta http-equiv=\"Content-Type\" content=\"text/html; charset=koi8-r\">",
            None,
        );
        assert_eq!(name, "KOI8-R");
    }

    #[test]
    fn bom_and_fallbacks() {
        let (text, name) = decode(b"\xef\xbb\xbfhi", Some("text/html; charset=windows-1252"));
        assert_eq!((text.as_str(), name), ("hi", "UTF-8"));
        assert_eq!(decode("héllo".as_bytes(), None).1, "UTF-8");
        let (text, name) = decode(b"h\xe9llo", None);
        assert_eq!((text.as_str(), name), ("héllo", "windows-1252"));
        // A UTF-8 body cut inside its last character (the size cap) is still UTF-8.
        let cut = &"naïve café €".as_bytes()[.."naïve café €".len() - 1];
        let (text, name) = decode(cut, None);
        assert_eq!(name, "UTF-8");
        assert!(text.starts_with("naïve café "), "{text}");
    }
}
