//! What a PDF's streams decode to, counted before lopdf decodes them whole. lopdf applies each
//! stream's whole filter chain (Flate, LZW, ASCII85, one after another) with no cap, and
//! retries a Flate stream whose zlib header is bad as raw deflate: a file of a few hundred KB
//! can ask it for gigabytes, an allocation that aborts the process. Streams are found by their
//! `stream` keyword rather than through the parser, so object streams (which lopdf decodes
//! while loading) are counted too, and their filters are not read: every decoder lopdf has is
//! tried at each layer, the one that gives the most taken further.

use std::io::{self, Read};

use svc_ports::PdfRefusal;

/// Layers of decoding followed down one stream: real files use one or two.
const MAX_LAYERS: usize = 4;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Layer {
    Zlib,
    /// lopdf's retry of a Flate stream: its two header bytes skipped, the rest raw deflate.
    RawDeflate,
    Lzw,
    /// Only as a stream's first layer (it is the outermost encoding; its output is never
    /// larger than its input, so it is decoded in memory).
    Ascii85,
}

/// Decodes every stream of the file into nothing, counting, and refuses the file when the
/// total passes `budget`.
pub(crate) fn check_inflated_size(bytes: &[u8], budget: u64) -> Result<(), PdfRefusal> {
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
        let Some(data) = bytes.get(start..) else {
            break;
        };
        spent += stream_cost(data, budget - spent);
        if spent > budget {
            return Err(PdfRefusal::TooLarge);
        }
    }
    Ok(())
}

/// What decoding `data` costs, up to past `room`: lopdf holds one layer's input and output at
/// once, so the largest such pair along the chain whose every layer gives the most. Garbage
/// decoded from a real stream's output (LZW reads a run of zeros as codes) is counted too:
/// a pair, not a sum, keeps that within twice the real output.
fn stream_cost(data: &[u8], room: u64) -> u64 {
    let mut chain: Vec<Layer> = Vec::new();
    let (mut previous, mut peak) = (0u64, 0u64);
    while chain.len() < MAX_LAYERS {
        let first = chain.is_empty();
        let best = [Layer::Zlib, Layer::RawDeflate, Layer::Lzw, Layer::Ascii85]
            .into_iter()
            .filter(|l| first || *l != Layer::Ascii85)
            .map(|l| {
                let mut tried = chain.clone();
                tried.push(l);
                (count(decoded(data, &tried), room), l)
            })
            .max_by_key(|(n, _)| *n);
        let Some((given, layer)) = best.filter(|(n, _)| *n > 0) else {
            break;
        };
        peak = peak.max(previous + given);
        if peak > room {
            break;
        }
        previous = given;
        chain.push(layer);
    }
    peak
}

/// `data` read through `chain`, first layer first.
fn decoded<'a>(data: &'a [u8], chain: &[Layer]) -> Box<dyn Read + 'a> {
    let mut reader: Box<dyn Read + 'a> = Box::new(data);
    for layer in chain {
        reader = match layer {
            Layer::Zlib => Box::new(flate2::read::ZlibDecoder::new(reader)),
            Layer::RawDeflate => {
                let mut header = [0u8; 2];
                if reader.read_exact(&mut header).is_err() {
                    return Box::new(io::empty());
                }
                Box::new(flate2::read::DeflateDecoder::new(reader))
            }
            Layer::Lzw => Box::new(Lzw::new(reader)),
            Layer::Ascii85 => Box::new(io::Cursor::new(ascii85(data))),
        };
    }
    reader
}

/// How many bytes `reader` gives, up to `cap + 1`; a damaged stream counts what it gave before
/// the damage.
fn count(reader: impl Read, cap: u64) -> u64 {
    let mut limited = reader.take(cap.saturating_add(1));
    let mut buf = vec![0u8; 64 * 1024];
    let mut total = 0;
    loop {
        match limited.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => total += n as u64,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(_) => break,
        }
    }
    total
}

/// LZW as lopdf reads it (most significant bit first, the code size growing one code early),
/// as a reader.
struct Lzw<R> {
    inner: R,
    decoder: weezl::decode::Decoder,
    buf: Vec<u8>,
    at: usize,
    filled: usize,
    eof: bool,
    done: bool,
}

impl<R: Read> Lzw<R> {
    fn new(inner: R) -> Self {
        Self {
            inner,
            decoder: weezl::decode::Decoder::with_tiff_size_switch(weezl::BitOrder::Msb, 8),
            buf: vec![0u8; 16 * 1024],
            at: 0,
            filled: 0,
            eof: false,
            done: false,
        }
    }
}

impl<R: Read> Read for Lzw<R> {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        while !self.done && !out.is_empty() {
            if self.at == self.filled && !self.eof {
                self.filled = self.inner.read(&mut self.buf)?;
                self.at = 0;
                self.eof = self.filled == 0;
            }
            let r = self
                .decoder
                .decode_bytes(&self.buf[self.at..self.filled], out);
            self.at += r.consumed_in;
            let stuck =
                r.consumed_in == 0 && r.consumed_out == 0 && (self.eof || self.at < self.filled);
            if matches!(r.status, Ok(weezl::LzwStatus::Done) | Err(_)) || stuck {
                self.done = true;
            }
            if r.consumed_out > 0 {
                return Ok(r.consumed_out);
            }
        }
        Ok(0)
    }
}

/// ASCII85 as lopdf decodes it: whitespace skipped, `z` four zeros, stopping at the first
/// byte outside the alphabet.
fn ascii85(input: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    let (mut group, mut n) = (0u32, 0);
    for &c in input {
        if c == b'z' && n == 0 {
            out.extend_from_slice(&[0; 4]);
            continue;
        }
        if c.is_ascii_whitespace() {
            continue;
        }
        if !(b'!'..=b'u').contains(&c) {
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
    out
}

#[cfg(test)]
mod tests {
    use std::io::Write;

    use super::*;

    fn zlib(data: &[u8]) -> Vec<u8> {
        let mut e = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::best());
        e.write_all(data).unwrap();
        e.finish().unwrap()
    }

    fn lzw(data: &[u8]) -> Vec<u8> {
        weezl::encode::Encoder::with_tiff_size_switch(weezl::BitOrder::Msb, 8)
            .encode(data)
            .unwrap()
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

    fn file(stream: &[u8]) -> Vec<u8> {
        let mut f = b"%PDF-1.5\n1 0 obj << >>\nstream\n".to_vec();
        f.extend(stream);
        f.extend(b"\nendstream\nendobj\n");
        f
    }

    const MIB: u64 = 1024 * 1024;

    #[test]
    fn each_decoder_lopdf_has_is_counted_and_chains_of_them_too() {
        let big = vec![0u8; 4 * MIB as usize];
        let raw_deflate = {
            // A bad zlib header over raw deflate: lopdf's retry reads it.
            let mut e = flate2::write::DeflateEncoder::new(Vec::new(), flate2::Compression::best());
            e.write_all(&big).unwrap();
            [b"\x00\x00".to_vec(), e.finish().unwrap()].concat()
        };
        for (name, stream) in [
            ("flate", zlib(&big)),
            ("raw deflate", raw_deflate),
            ("lzw", lzw(&big)),
            ("flate of flate", zlib(&zlib(&big))),
            ("ascii85 of flate", ascii85_encode(&zlib(&big))),
            ("flate of lzw", zlib(&lzw(&big))),
        ] {
            let f = file(&stream);
            assert_eq!(
                check_inflated_size(&f, 2 * MIB),
                Err(PdfRefusal::TooLarge),
                "{name}"
            );
            assert_eq!(check_inflated_size(&f, 16 * MIB), Ok(()), "{name}");
        }
    }

    #[test]
    fn a_nested_bomb_counts_its_inner_layer() {
        // The outer layer alone is 1 MiB; the inner one is 64 MiB.
        let inner = zlib(&vec![0u8; 64 * MIB as usize]);
        let f = file(&zlib(&inner));
        assert!(inner.len() as u64 <= MIB);
        assert_eq!(check_inflated_size(&f, 8 * MIB), Err(PdfRefusal::TooLarge));
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
            assert_eq!(ascii85(&ascii85_encode(data)), data, "{data:?}");
        }
        assert_eq!(ascii85(b"z!!!!!"), vec![0u8; 8]);
    }
}
