//! What a PDF's streams decode to, counted before lopdf decodes them whole. lopdf applies the
//! whole filter chain a stream's dictionary names (`/Filter`: FlateDecode, LZWDecode,
//! ASCII85Decode, one after another, any number) with no cap, and retries a Flate stream whose
//! zlib header is bad as raw deflate: a file of a few hundred KB can ask it for gigabytes, an
//! allocation that aborts the process. Streams are found by their `stream` keyword rather
//! than through the parser, so object streams (which lopdf decodes while loading) are counted
//! too; each one's dictionary is read for its filters as lopdf reads them (a direct name or
//! array of names; `/DecodeParms` a direct dictionary).

use std::io::{self, Write};

use svc_ports::PdfRefusal;

/// Filters one stream may name before the file is refused: real files use one or two.
const MAX_FILTERS: usize = 8;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Filter {
    Flate,
    Lzw {
        early_change: bool,
    },
    Ascii85,
    /// One lopdf does not decode (DCT, JPX, ...): the chain stops there.
    Other,
}

/// Decodes every stream of the file into nothing, counting, and refuses the file when the
/// total passes `budget`, or when finding and decoding the streams would read the file over
/// and over (a crafted file of many unterminated streams).
pub(crate) fn check_inflated_size(bytes: &[u8], budget: u64) -> Result<(), PdfRefusal> {
    // Every byte read or written by a decoder or a parse counts: a real file's work is its
    // size and what it decodes to (within `budget`), many times over at most.
    let mut work = Work {
        left: 2 * budget + 16 * bytes.len() as u64 + 64 * 1024 * 1024,
    };
    let dicts = stream_dicts(bytes, &mut work);
    let mut spent: u64 = 0;
    let mut at = 0;
    while let Some(found) = crate::find(&bytes[at..], b"stream") {
        let keyword = at + found;
        at = keyword + b"stream".len();
        if keyword >= 3 && &bytes[keyword - 3..keyword] == b"end" {
            continue;
        }
        let mut start = at;
        if bytes.get(start) == Some(&b'\r') {
            start += 1;
        }
        if bytes.get(start) == Some(&b'\n') {
            start += 1;
        }
        let Some(rest) = bytes.get(start..) else {
            break;
        };
        let room = budget - spent;
        spent += match dicts.get(&keyword) {
            Some(dict) => {
                let filters = filters(dict);
                if filters.len() > MAX_FILTERS {
                    return Err(PdfRefusal::TooLarge);
                }
                // lopdf reads `/Length` bytes when it can; past them is the next object.
                let data = match direct_int(dict, b"Length").and_then(|l| usize::try_from(l).ok()) {
                    Some(l) => &rest[..l.min(rest.len())],
                    None => rest,
                };
                chain_cost(data, &filters, room, &mut work)
            }
            // No dictionary this reading makes out (the word in a page's text, or a dictionary
            // crafted to hide from it): taken for Flate layers while each gives something
            // (Flate fails on text at its first two bytes, so the word costs next to nothing;
            // LZW and ASCII85 would read text as data, and are not guessed).
            None => chain_cost(rest, &[Filter::Flate; MAX_FILTERS], room, &mut work),
        };
        if spent > budget || work.left == 0 {
            return Err(PdfRefusal::TooLarge);
        }
    }
    Ok(())
}

/// Bytes the check may still read; a decoder or a parse reading more ends the check.
struct Work {
    left: u64,
}

impl Work {
    fn take(&mut self, n: u64) -> bool {
        self.left = self.left.saturating_sub(n);
        self.left > 0
    }
}

/// The largest input and output pair decoding `data` through `filters` holds at once (lopdf
/// keeps a layer's input and output), up to past `room`.
fn chain_cost(data: &[u8], filters: &[Filter], room: u64, work: &mut Work) -> u64 {
    let mut input: Vec<u8>;
    let mut current: &[u8] = data;
    let (mut previous, mut peak) = (0u64, 0u64);
    for (i, filter) in filters.iter().enumerate() {
        let last = i + 1 == filters.len();
        let mut out = Capped {
            kept: (!last).then(Vec::new),
            written: 0,
            cap: room,
        };
        // An unknown filter, or nothing left to decode: the chain ends.
        if !decode(*filter, current, &mut out, work) || out.written == 0 {
            break;
        }
        peak = peak.max(previous + out.written);
        if peak > room || work.left == 0 {
            return peak;
        }
        previous = out.written;
        match out.kept {
            Some(kept) => {
                input = kept;
                current = &input;
            }
            None => break,
        }
    }
    peak
}

/// `input` through one filter as lopdf decodes it, into `out`; whether the chain goes on.
fn decode(filter: Filter, input: &[u8], out: &mut Capped, work: &mut Work) -> bool {
    match filter {
        Filter::Flate => {
            let mut zlib = flate2::read::ZlibDecoder::new(input);
            let failed = io::copy(&mut zlib, out).is_err();
            work.take(zlib.total_in());
            // lopdf's retry: the zlib header skipped, the rest raw deflate.
            if failed && out.written == 0 && input.len() > 2 {
                let mut raw = flate2::read::DeflateDecoder::new(&input[2..]);
                let _ = io::copy(&mut raw, out);
                work.take(raw.total_in());
            }
        }
        Filter::Lzw { early_change } => {
            let mut decoder = if early_change {
                weezl::decode::Decoder::with_tiff_size_switch(weezl::BitOrder::Msb, 8)
            } else {
                weezl::decode::Decoder::new(weezl::BitOrder::Msb, 8)
            };
            let result = decoder.into_stream(&mut *out).decode_all(input);
            work.take(result.bytes_read as u64);
        }
        Filter::Ascii85 => {
            let (decoded, read) = ascii85(input);
            work.take(read as u64);
            let _ = out.write_all(&decoded);
        }
        Filter::Other => return false,
    }
    work.take(out.written);
    true
}

/// Counts what is written, keeps it when asked to (for the next filter), and fails past `cap`.
struct Capped {
    kept: Option<Vec<u8>>,
    written: u64,
    cap: u64,
}

impl Write for Capped {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.written += buf.len() as u64;
        if self.written > self.cap {
            return Err(io::Error::other("past the budget"));
        }
        if let Some(kept) = &mut self.kept {
            kept.extend_from_slice(buf);
        }
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// ASCII85 as lopdf decodes it (whitespace skipped, `z` four zeros, stopping at the first byte
/// outside the alphabet), and how many bytes it read.
fn ascii85(input: &[u8]) -> (Vec<u8>, usize) {
    let mut out = Vec::new();
    let (mut group, mut n) = (0u32, 0);
    let mut read = input.len();
    for (i, &c) in input.iter().enumerate() {
        if c == b'z' && n == 0 {
            out.extend_from_slice(&[0; 4]);
            continue;
        }
        if c.is_ascii_whitespace() {
            continue;
        }
        if !(b'!'..=b'u').contains(&c) {
            read = i;
            break;
        }
        group = group.wrapping_mul(85).wrapping_add(u32::from(c - b'!'));
        n += 1;
        if n == 5 {
            out.extend_from_slice(&group.to_be_bytes());
            (group, n) = (0, 0);
        }
    }
    if n > 1 {
        for _ in n..5 {
            group = group.wrapping_mul(85).wrapping_add(84);
        }
        out.extend_from_slice(&group.to_be_bytes()[..n - 1]);
    }
    (out, read)
}

/// A PDF object, as far as a stream's dictionary needs it.
#[derive(Debug, Clone, PartialEq)]
enum Obj {
    Name(Vec<u8>),
    Int(i64),
    Array(Vec<Obj>),
    Dict(Vec<(Vec<u8>, Obj)>),
    Other,
}

type Dict = Vec<(Vec<u8>, Obj)>;

/// Stream dictionaries by the position of their `stream` keyword: every `N G obj` read
/// forward, in the file's order, past each object read (so an `obj` inside its strings is not
/// taken for another), as lopdf's parser reads the objects its cross-reference table points at.
fn stream_dicts(bytes: &[u8], work: &mut Work) -> std::collections::HashMap<usize, Dict> {
    let mut found = std::collections::HashMap::new();
    let mut at = 0;
    while let Some(i) = crate::find(&bytes[at..], b"obj") {
        let after = at + i + b"obj".len();
        at = after;
        if !bytes.get(after).is_none_or(|&c| is_delimiter(c)) {
            continue;
        }
        let start = skip_space(bytes, after);
        if bytes.get(start..start + 2) != Some(b"<<") {
            continue;
        }
        let mut end = start;
        let parsed = object(bytes, &mut end, 0);
        if !work.take((end - start) as u64) {
            break;
        }
        let keyword = skip_space(bytes, end);
        if let Some(Obj::Dict(dict)) = parsed
            && bytes.get(keyword..keyword + 6) == Some(b"stream")
        {
            found.insert(keyword, dict);
            at = keyword;
        }
    }
    found
}

/// The filters lopdf applies: `/Filter` a name or an array of names (anything else, no
/// decoding at all); LZW's early change off only where `/DecodeParms` says `/EarlyChange 0`.
fn filters(dict: &Dict) -> Vec<Filter> {
    let early_change = match get(dict, b"DecodeParms") {
        Some(Obj::Dict(params)) => direct_int(params, b"EarlyChange") != Some(0),
        _ => true,
    };
    let one = |name: &[u8]| match name {
        b"FlateDecode" => Filter::Flate,
        b"LZWDecode" => Filter::Lzw { early_change },
        b"ASCII85Decode" => Filter::Ascii85,
        _ => Filter::Other,
    };
    match get(dict, b"Filter") {
        Some(Obj::Name(n)) => vec![one(n)],
        Some(Obj::Array(items)) if items.iter().all(|i| matches!(i, Obj::Name(_))) => items
            .iter()
            .map(|i| match i {
                Obj::Name(n) => one(n),
                _ => Filter::Other,
            })
            .collect(),
        _ => Vec::new(),
    }
}

fn get<'a>(dict: &'a [(Vec<u8>, Obj)], key: &[u8]) -> Option<&'a Obj> {
    dict.iter().find(|(k, _)| k == key).map(|(_, v)| v)
}

fn direct_int(dict: &[(Vec<u8>, Obj)], key: &[u8]) -> Option<i64> {
    match get(dict, key) {
        Some(Obj::Int(i)) => Some(*i),
        _ => None,
    }
}

/// PDF whitespace (NUL included) and comments skipped from `at`.
fn skip_space(bytes: &[u8], mut at: usize) -> usize {
    while let Some(&c) = bytes.get(at) {
        if matches!(c, b' ' | b'\t' | b'\n' | b'\r' | b'\x0C' | 0) {
            at += 1;
        } else if c == b'%' {
            while bytes.get(at).is_some_and(|&c| c != b'\n' && c != b'\r') {
                at += 1;
            }
        } else {
            break;
        }
    }
    at
}

fn is_delimiter(c: u8) -> bool {
    matches!(
        c,
        b'(' | b')' | b'<' | b'>' | b'[' | b']' | b'{' | b'}' | b'/' | b'%'
    ) || matches!(c, b' ' | b'\t' | b'\n' | b'\r' | b'\x0C' | 0)
}

/// Nesting of arrays and dictionaries this reading follows.
const MAX_NESTING: usize = 32;

/// The object at `*at`, moving `*at` past it.
fn object(bytes: &[u8], at: &mut usize, depth: usize) -> Option<Obj> {
    if depth > MAX_NESTING {
        return None;
    }
    *at = skip_space(bytes, *at);
    let c = *bytes.get(*at)?;
    match c {
        b'<' if bytes.get(*at + 1) == Some(&b'<') => {
            *at += 2;
            let mut entries = Vec::new();
            loop {
                *at = skip_space(bytes, *at);
                if bytes.get(*at..*at + 2)? == b">>" {
                    *at += 2;
                    return Some(Obj::Dict(entries));
                }
                let Obj::Name(key) = object(bytes, at, depth + 1)? else {
                    return None;
                };
                let value = object(bytes, at, depth + 1)?;
                entries.push((key, value));
            }
        }
        b'<' => {
            let end = bytes[*at..].iter().position(|&c| c == b'>')?;
            *at += end + 1;
            Some(Obj::Other)
        }
        b'[' => {
            *at += 1;
            let mut items = Vec::new();
            loop {
                *at = skip_space(bytes, *at);
                if *bytes.get(*at)? == b']' {
                    *at += 1;
                    return Some(Obj::Array(items));
                }
                items.push(object(bytes, at, depth + 1)?);
            }
        }
        b'(' => {
            let mut nesting = 0usize;
            while let Some(&c) = bytes.get(*at) {
                *at += 1;
                match c {
                    b'\\' => *at += 1,
                    b'(' => nesting += 1,
                    b')' => {
                        nesting -= 1;
                        if nesting == 0 {
                            return Some(Obj::Other);
                        }
                    }
                    _ => {}
                }
            }
            None
        }
        b'/' => {
            *at += 1;
            let mut name = Vec::new();
            while let Some(&c) = bytes.get(*at).filter(|&&c| !is_delimiter(c)) {
                *at += 1;
                // `#xx` is the byte xx: `/Fl#61teDecode` is FlateDecode.
                let hex = bytes
                    .get(*at..*at + 2)
                    .and_then(|h| std::str::from_utf8(h).ok())
                    .and_then(|h| u8::from_str_radix(h, 16).ok());
                match hex.filter(|_| c == b'#') {
                    Some(byte) => {
                        name.push(byte);
                        *at += 2;
                    }
                    None => name.push(c),
                }
            }
            Some(Obj::Name(name))
        }
        b')' | b'>' | b']' | b'{' | b'}' => None,
        _ => {
            let start = *at;
            while bytes.get(*at).is_some_and(|&c| !is_delimiter(c)) {
                *at += 1;
            }
            let token = std::str::from_utf8(&bytes[start..*at]).ok()?;
            let Ok(number) = token.parse::<i64>() else {
                // A real number, true, false, null: nothing a filter is named by.
                return Some(Obj::Other);
            };
            // `N G R` is a reference: not an integer lopdf would take as one.
            let mut ahead = skip_space(bytes, *at);
            let generation = ahead;
            while bytes.get(ahead).is_some_and(u8::is_ascii_digit) {
                ahead += 1;
            }
            if ahead > generation {
                let r = skip_space(bytes, ahead);
                if bytes.get(r) == Some(&b'R') && bytes.get(r + 1).is_none_or(|&c| is_delimiter(c))
                {
                    *at = r + 1;
                    return Some(Obj::Other);
                }
            }
            Some(Obj::Int(number))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn zlib(data: &[u8]) -> Vec<u8> {
        let mut e = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::best());
        e.write_all(data).unwrap();
        e.finish().unwrap()
    }

    fn lzw(data: &[u8], early_change: bool) -> Vec<u8> {
        let mut encoder = if early_change {
            weezl::encode::Encoder::with_tiff_size_switch(weezl::BitOrder::Msb, 8)
        } else {
            weezl::encode::Encoder::new(weezl::BitOrder::Msb, 8)
        };
        encoder.encode(data).unwrap()
    }

    fn ascii85_encode(data: &[u8]) -> Vec<u8> {
        let mut out = Vec::new();
        for chunk in data.chunks(4) {
            let mut word = [0u8; 4];
            word[..chunk.len()].copy_from_slice(chunk);
            let mut v = u32::from_be_bytes(word);
            let mut digits = [0u8; 5];
            for d in digits.iter_mut().rev() {
                *d = (v % 85) as u8 + b'!';
                v /= 85;
            }
            out.extend_from_slice(&digits[..chunk.len() + 1]);
        }
        out.extend_from_slice(b"~>");
        out
    }

    fn file(dict: &str, stream: &[u8]) -> Vec<u8> {
        let mut f = format!("%PDF-1.5\n1 0 obj {dict}\nstream\n").into_bytes();
        f.extend(stream);
        f.extend(b"\nendstream\nendobj\n");
        f
    }

    const MIB: u64 = 1024 * 1024;

    #[test]
    fn each_chain_lopdf_decodes_is_counted() {
        let big = vec![0u8; 4 * MIB as usize];
        let raw_deflate = {
            // A bad zlib header over raw deflate: lopdf's retry reads it.
            let mut e = flate2::write::DeflateEncoder::new(Vec::new(), flate2::Compression::best());
            e.write_all(&big).unwrap();
            [b"\x00\x00".to_vec(), e.finish().unwrap()].concat()
        };
        let flate5 = (0..5).fold(big.clone(), |d, _| zlib(&d));
        for (name, dict, stream) in [
            ("flate", "<< /Filter /FlateDecode >>".to_owned(), zlib(&big)),
            (
                "raw deflate",
                "<< /Filter /FlateDecode >>".into(),
                raw_deflate,
            ),
            ("lzw", "<< /Filter /LZWDecode >>".into(), lzw(&big, true)),
            (
                "lzw, no early change",
                "<< /Filter /LZWDecode /DecodeParms << /EarlyChange 0 >> >>".into(),
                lzw(&big, false),
            ),
            (
                "five flates",
                format!("<< /Filter [{}] >>", "/FlateDecode ".repeat(5)),
                flate5,
            ),
            (
                "flate, ascii85, flate",
                "<< /Filter [/FlateDecode /ASCII85Decode /FlateDecode] >>".into(),
                zlib(&ascii85_encode(&zlib(&big))),
            ),
            (
                "escaped name, direct length, a string with brackets",
                "<< /T (a >> b \\) <<) /Length 99999999 /Filter /Fl#61teDecode >>".into(),
                zlib(&big),
            ),
        ] {
            let f = file(&dict, &stream);
            assert_eq!(
                check_inflated_size(&f, 2 * MIB),
                Err(PdfRefusal::TooLarge),
                "{name}"
            );
            assert_eq!(check_inflated_size(&f, 16 * MIB), Ok(()), "{name}");
        }
    }

    #[test]
    fn undeclared_and_unknown_filters_decode_nothing() {
        let big = zlib(&vec![0u8; 4 * MIB as usize]);
        // lopdf decodes neither: a stream without /Filter, or with one it does not know.
        for dict in [
            "<< /Length 5 >>",
            "<< /Filter /DCTDecode >>",
            "<< /Filter 3 0 R >>",
        ] {
            assert_eq!(
                check_inflated_size(&file(dict, &big), MIB),
                Ok(()),
                "{dict}"
            );
        }
        // `/Length` bounds what is read: the bomb after it is another object's bytes.
        let f = file(
            "<< /Filter /ASCII85Decode /Length 2 >>",
            &ascii85_encode(&big),
        );
        assert_eq!(check_inflated_size(&f, MIB), Ok(()));
    }

    #[test]
    fn filters_hidden_from_a_backward_look_are_still_read() {
        let bomb = (0..5).fold(vec![0u8; 4 * MIB as usize], |d, _| zlib(&d));
        let filters = "/FlateDecode ".repeat(5);
        // A string full of `<<` and `obj` between the object's start and its filters.
        let pad = "<< 7 0 obj >> x ".repeat(5000);
        let f = file(&format!("<< /Pad ({pad}) /Filter [{filters}] >>"), &bomb);
        assert_eq!(check_inflated_size(&f, 2 * MIB), Err(PdfRefusal::TooLarge));
        assert_eq!(check_inflated_size(&f, 16 * MIB), Ok(()));
        // A dictionary not read at all (inside a string that swallows the object): guessed.
        let mut f = b"%PDF-1.5\n9 0 obj << /S (".to_vec();
        f.extend(file(&format!("<< /Filter [{filters}] >>"), &bomb));
        f.extend(b") >> stream\nendstream\n");
        assert_eq!(check_inflated_size(&f, 2 * MIB), Err(PdfRefusal::TooLarge));
        // Many `stream` words with no dictionary (a page's text): each guessed, cheaply.
        let f = [
            b"%PDF-1.5\n".to_vec(),
            b"<< 7 0 obj >> stream x ".repeat(5000),
        ]
        .concat();
        assert_eq!(check_inflated_size(&f, 16 * MIB), Ok(()));
    }

    #[test]
    fn a_file_of_many_unterminated_streams_is_not_read_over_and_over() {
        let mut f = b"%PDF-1.4\n".to_vec();
        for _ in 0..10_000 {
            f.extend(b"1 0 obj << /Filter /ASCII85Decode >> stream");
            f.extend(std::iter::repeat_n(b' ', 1000));
        }
        assert_eq!(
            check_inflated_size(&f, 256 * MIB),
            Err(PdfRefusal::TooLarge)
        );
    }

    #[test]
    fn ascii85_decodes_as_lopdf_does() {
        for data in [
            &b""[..],
            b"a",
            b"ab",
            b"abc",
            b"abcd",
            b"hello world, again",
        ] {
            assert_eq!(ascii85(&ascii85_encode(data)).0, data, "{data:?}");
        }
        assert_eq!(ascii85(b"z!!!!!").0, vec![0u8; 8]);
    }
}
