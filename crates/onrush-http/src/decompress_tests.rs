//! Decompression of gzip, zlib/deflate and brotli bodies, fed in every split and with broken input.

use super::*;
use std::io::Write;

fn headers_with<R>(enc: &str, f: impl FnOnce(&Headers<'_>) -> R) -> R {
    let raw = [httparse::Header {
        name: "Content-Encoding",
        value: enc.as_bytes(),
    }];
    f(&Headers::new(&raw))
}

/// Feeds `body` in pieces of `piece` bytes; returns (decoded, error).
fn run(enc: &str, body: &[u8], piece: usize) -> (Vec<u8>, Option<String>) {
    let mut d = Decompress::new(Vec::new());
    headers_with(enc, |h| d.head(200, h));
    for c in body.chunks(piece.max(1)) {
        d.data(c);
    }
    d.end();
    assert_eq!(d.decoded_bytes(), d.get_ref().len() as u64);
    let err = d.error().map(str::to_string);
    (d.into_inner(), err)
}

fn gzip(data: &[u8], builder: flate2::GzBuilder) -> Vec<u8> {
    let mut e = builder.write(Vec::new(), flate2::Compression::default());
    e.write_all(data).unwrap();
    e.finish().unwrap()
}

fn text() -> Vec<u8> {
    (0..200_000u32)
        .flat_map(|i| format!("{} ", i % 977).into_bytes())
        .collect()
}

#[test]
fn every_piece_size_gives_the_same_result() {
    let data = text();
    let mut zlib = flate2::write::ZlibEncoder::new(Vec::new(), Default::default());
    zlib.write_all(&data).unwrap();
    let zlib = zlib.finish().unwrap();
    let mut raw = flate2::write::DeflateEncoder::new(Vec::new(), Default::default());
    raw.write_all(&data).unwrap();
    let raw = raw.finish().unwrap();
    let mut br = Vec::new();
    brotli_compress(&data, &mut br);
    let gz = gzip(
        &data,
        flate2::GzBuilder::new()
            .filename("f.txt")
            .comment("a comment")
            .extra(vec![1, 2, 3, 4, 5]),
    );
    for (enc, body) in [
        ("gzip", &gz),
        ("deflate", &zlib),
        ("deflate", &raw),
        ("br", &br),
    ] {
        for piece in [1, 2, 3, 7, 100, 4096, 65_536, usize::MAX] {
            if piece == 1 && body.len() > 200_000 {
                continue;
            }
            let (out, err) = run(enc, body, piece);
            assert_eq!(err, None, "{enc} in pieces of {piece}");
            assert!(out == data, "{enc} in pieces of {piece}");
        }
    }
}

#[test]
fn gzip_header_crc_members_and_trailing_bytes() {
    // FHCRC: two header-CRC bytes after the fixed header (skipped, not checked).
    let mut g = gzip(b"hello", flate2::GzBuilder::new());
    g[3] |= FHCRC;
    g.splice(10..10, [0xab, 0xcd]);
    assert_eq!(run("gzip", &g, 1), (b"hello".to_vec(), None));
    // Two members: concatenated; then trailing zeros are ignored.
    let mut two = gzip(b"one ", flate2::GzBuilder::new());
    two.extend(gzip(b"two", flate2::GzBuilder::new()));
    assert_eq!(run("x-gzip", &two, 3), (b"one two".to_vec(), None));
    two.extend([0u8; 16]);
    assert_eq!(run("GZIP", &two, 5), (b"one two".to_vec(), None));
    // A bad CRC or length in the trailer.
    let mut bad = gzip(b"hello", flate2::GzBuilder::new());
    let n = bad.len();
    bad[n - 8] ^= 1;
    assert!(run("gzip", &bad, 4).1.unwrap().contains("CRC"));
    let mut bad = gzip(b"hello", flate2::GzBuilder::new());
    bad[n - 1] ^= 1;
    assert!(run("gzip", &bad, 4).1.unwrap().contains("length"));
    // Not gzip at all.
    assert!(run("gzip", b"plain text, not gzip", 4)
        .1
        .unwrap()
        .contains("not a gzip"));
}

#[test]
fn garbage_never_panics() {
    // Random bytes are sometimes a valid (short) stream, brotli's especially: require no
    // panic, and an error for nearly all.
    let mut errors = 0;
    let mut x = 0x2545_f491_4f6c_dd1du64;
    for round in 0..300 {
        let len = 1 + round * 7;
        let body: Vec<u8> = (0..len)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                x as u8
            })
            .collect();
        for enc in ["gzip", "deflate", "br"] {
            let mut with_magic = body.clone();
            if enc == "gzip" && with_magic.len() >= 3 {
                with_magic[..3].copy_from_slice(&[0x1f, 0x8b, 8]);
            }
            let (_, err) = run(enc, &with_magic, 1 + round % 13);
            errors += usize::from(err.is_some());
        }
    }
    assert!(errors > 850, "only {errors} of 900 garbage bodies reported");
}

#[test]
fn passthrough_empty_and_truncated() {
    assert_eq!(run("identity", b"abc", 2), (b"abc".to_vec(), None));
    assert_eq!(run("compress", b"abc", 2), (b"abc".to_vec(), None));
    assert_eq!(run("gzip, br", b"abc", 2), (b"abc".to_vec(), None));
    let mut d = Decompress::new(Vec::new());
    headers_with("gzip, br", |h| d.head(200, h));
    assert_eq!(d.encoding(), Encoding::Unsupported);
    headers_with("identity, br", |h| d.head(200, h));
    assert_eq!(d.encoding(), Encoding::Brotli);
    // No body at all (HEAD, 204, 304): no error.
    for enc in ["gzip", "deflate", "br"] {
        assert_eq!(run(enc, b"", 1), (Vec::new(), None));
    }
    // Truncated: reported at the end.
    let g = gzip(&text(), flate2::GzBuilder::new());
    let (out, err) = run("gzip", &g[..g.len() - 4], 1000);
    assert!(err.unwrap().contains("truncated"));
    assert_eq!(out.len(), text().len()); // all data, the trailer cut
    assert!(run("deflate", &[0x78], 1).1.unwrap().contains("truncated"));
    // After an error, the next head starts afresh.
    let mut d = Decompress::new(Vec::new());
    headers_with("gzip", |h| d.head(200, h));
    d.data(b"nope nope nope");
    assert!(d.error().is_some());
    headers_with("gzip", |h| d.head(200, h));
    d.data(&gzip(b"ok", flate2::GzBuilder::new()));
    d.end();
    assert_eq!(d.error(), None);
    assert!(format!("{d:?}").contains("Gzip"));
}

fn brotli_compress(data: &[u8], out: &mut Vec<u8>) {
    let mut w = brotli::CompressorWriter::new(out, 4096, 5, 22);
    w.write_all(data).unwrap();
}
