//! Streaming decompression (`Content-Encoding` gzip, deflate, br) of a hostile body.
//!
//! First byte: the coding (low 2 bits) and the size of the pieces the body arrives in (the
//! rest). The body is decoded twice, in one piece and in pieces: whether it failed, and the
//! output when it did not, must not depend on how the body was cut.

use onrush_http::{BodySink, Decompress, Headers};

use super::mock::Seen;

pub fn run(data: &[u8]) {
    let Some((&flags, body)) = data.split_first() else {
        return;
    };
    let coding = ["gzip", "deflate", "br", "x-gzip"][usize::from(flags & 3)];
    let piece = 1 + usize::from(flags >> 2);
    let whole = decode(coding, body, body.len().max(1));
    let cut = decode(coding, body, piece);
    // Corrupt data fails whatever the split (what was decoded before the damage may differ:
    // in pieces, the part before it has already been passed on); good data decodes the same.
    assert_eq!(
        whole.2, cut.2,
        "{coding}: failed in one piece but not in pieces of {piece}, or the reverse"
    );
    if !whole.2 {
        assert_eq!(
            whole, cut,
            "{coding} decodes differently in pieces of {piece}"
        );
    }
}

/// Decoded length, hash, and failure of `body` fed in pieces of `piece` bytes.
fn decode(coding: &str, body: &[u8], piece: usize) -> (u64, u64, bool) {
    let raw = [httparse::Header {
        name: "Content-Encoding",
        value: coding.as_bytes(),
    }];
    let mut sink = Decompress::new(Seen::default());
    sink.head(200, &Headers::new(&raw));
    for chunk in body.chunks(piece) {
        sink.data(chunk);
    }
    sink.end();
    let failed = sink.error().is_some();
    assert_eq!(sink.decoded_bytes(), sink.get_ref().body_len);
    assert_eq!(sink.get_ref().ends, 1);
    (sink.get_ref().body_len, sink.get_ref().body_hash, failed)
}

pub const DICT: &[&[u8]] = &[
    // gzip header (deflate, no flags / FEXTRA|FNAME|FCOMMENT|FHCRC), zlib headers.
    b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\xff",
    b"\x1f\x8b\x08\x1e\x00\x00\x00\x00\x00\xff",
    b"\x78\x9c",
    b"\x78\x01",
    b"\x78\xda",
    // A stored block, an empty fixed block, an empty brotli stream.
    b"\x01\x00\x00\xff\xff",
    b"\x03\x00",
    b"\x06",
    b"\x3b",
    b"\x00\x00\x00\x00",
    b"\xff\xff\xff\xff",
];
