//! The fast path against httparse: whenever it answers, httparse must give the same head; on
//! everything unusual or malformed it must step aside (and never panic).

use super::{parse, FastHead, FAST_HEADERS};
use crate::decode::tests::Rng;
use crate::decode::{named, Framing};
use crate::MAX_HEADERS;
use std::mem::MaybeUninit;

type Parsed = (u8, u16, usize, Vec<(String, Vec<u8>)>, Framing);

fn fast(input: &[u8]) -> Option<Parsed> {
    let mut slots = [MaybeUninit::uninit(); FAST_HEADERS];
    let mut framing = Framing::default();
    let (
        FastHead {
            version,
            status,
            len,
        },
        headers,
    ) = parse(input, &mut slots, &mut framing)?;
    let list = headers
        .iter()
        .map(|h| (h.name.to_string(), h.value.to_vec()))
        .collect();
    Some((version, status, len, list, framing))
}

/// httparse with the decoder's configuration, and the framing its lines give when read one by
/// one after the parse (the decoder's general path); `None` when incomplete or an error.
fn reference(input: &[u8]) -> Option<Parsed> {
    let mut headers = [MaybeUninit::<httparse::Header<'_>>::uninit(); MAX_HEADERS];
    let mut resp = httparse::Response::new(&mut []);
    let n = match httparse::ParserConfig::default().parse_response_with_uninit_headers(
        &mut resp,
        input,
        &mut headers,
    ) {
        Ok(httparse::Status::Complete(n)) => n,
        _ => return None,
    };
    let mut framing = Framing::default();
    for h in &*resp.headers {
        // The fast path steps aside on a line the framing refuses.
        framing.header(h.name.as_bytes(), h.value).ok()?;
    }
    let list = resp
        .headers
        .iter()
        .map(|h| (h.name.to_string(), h.value.to_vec()))
        .collect();
    Some((resp.version?, resp.code?, n, list, framing))
}

/// Whenever the fast path answers, httparse answers the same, and the framing the fast path
/// gathered as it scanned is what a loop over httparse's lines gives.
fn agrees(input: &[u8]) -> bool {
    match fast(input) {
        Some(parsed) => {
            assert_eq!(
                Some(&parsed),
                reference(input).as_ref(),
                "fast path and httparse differ on {:?}",
                String::from_utf8_lossy(input)
            );
            true
        }
        None => false,
    }
}

const COMMON: &[&[u8]] = &[
    b"HTTP/1.1 200 OK\r\ncontent-type: text/plain; charset=utf-8\r\ncontent-length: 18\r\n\
      date: Thu, 26 Nov 2026 22:46:24 GMT\r\n\r\nHello from onrush\n",
    b"HTTP/1.1 200 OK\r\nServer: nginx/1.24.0\r\nDate: Thu, 26 Nov 2026 22:46:24 GMT\r\n\
      Content-Type: text/html\r\nContent-Length: 2\r\nLast-Modified: Sun, 22 Nov 2026 10:00:00 GMT\r\n\
      Connection: keep-alive\r\nETag: \"6541-2\"\r\nAccept-Ranges: bytes\r\n\r\nok",
    b"HTTP/1.0 404 Not Found\r\nContent-Length: 0\r\n\r\n",
    b"HTTP/1.1 204 \r\n\r\n",
    b"HTTP/1.1 200 OK\r\n\r\n",
    b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\nx",
    b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nX-Empty:\r\nX-Spaces:    \r\n\
      X-Trail: a b   \r\nX-Lead:   v\r\nX-Odd!#$%&'*+-.^_`|~09: ~!@\r\n\r\n0\r\n\r\n",
    // Every framing header, in forms the framing reads token by token (and mutations of it).
    b"HTTP/1.1 200 OK\r\nCONNECTION: Close, keep-alive\r\nTransfer-Encoding: gzip , Chunked\r\n\
      content-length: 5, 5\r\ntransfer-encoding: chunked\r\nConnection: x\r\n\r\n0\r\n\r\n",
];

#[test]
fn common_heads_take_the_fast_path_and_agree() {
    for head in COMMON {
        assert!(agrees(head), "{:?}", String::from_utf8_lossy(head));
    }
    let (version, status, len, headers, framing) = fast(COMMON[0]).unwrap();
    assert_eq!(framing.content_length, Some(18));
    assert_eq!((version, status, len), (1, 200, COMMON[0].len() - 18));
    assert_eq!(headers[1], ("content-length".into(), b"18".to_vec()));
    let (_, _, _, headers, framing) = fast(COMMON[6]).unwrap();
    assert!(framing.te_present && framing.te_chunked && !framing.close);
    let (_, _, _, _, framing) = fast(COMMON[7]).unwrap();
    let want = Framing {
        close: true,
        keep_alive_token: true,
        te_present: true,
        te_chunked: true,
        content_length: Some(5),
    };
    assert_eq!(framing, want);
    let values: Vec<&[u8]> = headers.iter().map(|(_, v)| &v[..]).collect();
    assert_eq!(
        values,
        [&b"chunked"[..], b"", b"", b"a b", b"v", b"~!@"],
        "empty values, leading and trailing spaces as httparse gives them"
    );
}

#[test]
fn every_prefix_steps_aside_or_agrees() {
    for head in COMMON {
        for end in 0..head.len() {
            agrees(&head[..end]);
        }
    }
    // An incomplete head is httparse's to report as partial.
    assert_eq!(fast(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n"), None);
    assert_eq!(fast(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r"), None);
}

#[test]
fn unusual_or_malformed_heads_step_aside() {
    let aside: &[&[u8]] = &[
        b"\r\nHTTP/1.1 200 OK\r\n\r\n", // blank line first (httparse skips it)
        b"HTTP/1.1 200\r\n\r\n",        // no reason phrase
        b"HTTP/1.1  200 OK\r\n\r\n",    // two spaces
        b"HTTP/2.0 200 OK\r\n\r\n",     // another version
        b"http/1.1 200 OK\r\n\r\n",     // lower case
        b"HTTP/1.1 2x0 OK\r\n\r\n",     // not a code
        b"HTTP/1.1 200 O\tK\r\n\r\n",   // tab in the reason
        b"HTTP/1.1 200 \xc3\xa9\r\n\r\n", // obs-text in the reason
        b"HTTP/1.1 200 OK\n\n",         // bare LF
        b"HTTP/1.1 200 OK\r\nA: b\n\r\n", // bare LF after a header
        b"HTTP/1.1 200 OK\r\nA: b\rc\r\n\r\n", // lone CR in a value
        b"HTTP/1.1 200 OK\r\nA : b\r\n\r\n", // space before the colon
        b"HTTP/1.1 200 OK\r\n A: b\r\n\r\n", // space before the name
        b"HTTP/1.1 200 OK\r\nA\"B: c\r\n\r\n", // not a token
        b"HTTP/1.1 200 OK\r\nA: b\r\n folded\r\n\r\n", // obs-fold
        b"HTTP/1.1 200 OK\r\nA:\tb\r\n\r\n", // tab after the colon
        b"HTTP/1.1 200 OK\r\nA: b\t\r\n\r\n", // tab at the end
        b"HTTP/1.1 200 OK\r\nA: \x7f\r\n\r\n", // DEL in a value
        b"HTTP/1.1 200 OK\r\nA: \x00\r\n\r\n", // NUL in a value
        b"HTTP/1.1 200 OK\r\nA: caf\xc3\xa9 latte\r\n\r\n", // obs-text in a value
        b"HTTP/1.1 200 OK\r\nA: b\r\n\r", // the end cut short
        b"HTTP/1.1 200 OK\r\nA: b\r\n\rX", // CR without LF at the end
        b"HTTP/1.1 200 OK\r\n:b\r\n\r\n", // empty name
    ];
    for head in aside {
        assert_eq!(fast(head), None, "{:?}", String::from_utf8_lossy(head));
    }
}

#[test]
fn more_headers_than_the_fast_path_holds_go_to_httparse() {
    let mut head = b"HTTP/1.1 200 OK\r\n".to_vec();
    for i in 0..FAST_HEADERS {
        head.extend_from_slice(format!("X-{i}: {i}\r\n").as_bytes());
    }
    let mut full = head.clone();
    full.extend_from_slice(b"\r\n");
    assert!(agrees(&full), "exactly {FAST_HEADERS} headers fit");
    head.extend_from_slice(b"X-Last: 1\r\n\r\n");
    assert_eq!(fast(&head), None);
}

#[test]
fn the_text_scan_stops_at_the_first_unusual_byte_in_every_position() {
    // Each stop byte at each offset of a 0..=24-byte run, so every lane of the 8-byte words
    // and the byte-wise remainder are covered, with ordinary bytes after it.
    // Every byte at 0..=40, so both scans (16 and 8 bytes at a time) and the byte-wise
    // remainder see every lane, with ordinary bytes after it (and without).
    let is_text = |b: u8| (0x20..0x7f).contains(&b);
    for stop in 0..=255u8 {
        for at in 0..=40 {
            let mut bytes = vec![b'a'; at];
            bytes.push(stop);
            bytes.extend_from_slice(b"tail of ordinary bytes");
            let want = if is_text(stop) { bytes.len() } else { at };
            assert_eq!(super::text_len(&bytes), want, "byte {stop:#x} at {at}");
            bytes.truncate(at + 1);
            assert_eq!(super::text_len(&bytes), want.min(at + 1));
        }
    }
    for len in 0..=40 {
        let bytes: Vec<u8> = (0..len).map(|i| 0x20 + (i * 7 % 95) as u8).collect();
        assert_eq!(super::text_len(&bytes), len);
    }
}

#[test]
fn random_mutations_never_disagree_with_httparse() {
    let mut rng = Rng::new(0x5eed_fa57);
    let alphabet = b" \t\r\n:HTP/1.02OKabc-\x7f\x80\x00\"";
    let mut answered = 0;
    for round in 0..40_000 {
        let mut head = COMMON[round % COMMON.len()].to_vec();
        for _ in 0..1 + rng.below(3) {
            let at = rng.below(head.len());
            match rng.below(3) {
                0 => head[at] = alphabet[rng.below(alphabet.len())],
                1 => head.insert(at, alphabet[rng.below(alphabet.len())]),
                _ => {
                    head.remove(at);
                }
            }
            if head.is_empty() {
                break;
            }
        }
        if agrees(&head) {
            answered += 1;
        }
    }
    // Most mutations hit a body or leave the head valid: the comparison ran, not only `None`s.
    assert!(
        answered > 10_000,
        "only {answered} mutated heads took the fast path"
    );
}

#[test]
fn token_bytes_are_ascii_so_a_name_is_utf8() {
    // What the `from_utf8_unchecked` in `parse` relies on.
    assert!((0x80..=0xff).all(|b| !super::TOKEN[b]));
    assert!((0..=0x20).all(|b| !super::TOKEN[b]) && !super::TOKEN[0x7f]);
}

#[test]
fn the_name_scan_agrees_with_the_token_table_for_every_byte_in_every_position() {
    let byte_by_byte = |bytes: &[u8]| bytes.iter().position(|&b| !super::TOKEN[usize::from(b)]);
    for stop in 0..=255u8 {
        for at in 0..=40 {
            for filler in [b'a', b'Z', b'7', b'-', b'~'] {
                let mut bytes = vec![filler; at];
                bytes.push(stop);
                bytes.extend_from_slice(b"more-bytes: after");
                assert_eq!(
                    super::token_len(&bytes),
                    byte_by_byte(&bytes),
                    "byte {stop:#x} at {at}"
                );
                bytes.truncate(at + 1);
                assert_eq!(super::token_len(&bytes), byte_by_byte(&bytes));
            }
        }
    }
}

#[test]
fn framing_names_match_themselves_in_any_case_and_nothing_else() {
    fn check<const N: usize>(lower: &[u8; N]) {
        assert!(named(lower, lower));
        assert!(named(&lower.to_ascii_uppercase(), lower));
        // Every byte at every position: only the same letter in the other case still matches.
        for at in 0..N {
            for b in 0..=255u8 {
                let mut name = *lower;
                name[at] = b;
                let same = b.eq_ignore_ascii_case(&lower[at]);
                assert_eq!(
                    named(&name, lower),
                    same,
                    "{:?}",
                    String::from_utf8_lossy(&name)
                );
            }
        }
        // Longer or shorter: never (the prefix alone is not the name).
        assert!(!named(&lower[..N - 1], lower));
        assert!(!named(&[lower.as_slice(), b"s"].concat(), lower));
    }
    check(b"connection");
    check(b"content-length");
    check(b"transfer-encoding");
}

/// A common response decoded whole, and a loop for counting the decoder's instructions per
/// response under callgrind without building the whole tool (one round unless told):
/// `ONRUSH_DECODE_ROUNDS=20000 valgrind --tool=callgrind TEST_BINARY --exact decode::fast_head::tests::decode_rounds`
/// (then `callgrind_annotate --inclusive=yes` and divide `Decoder::feed` by the rounds).
#[test]
fn decode_rounds() {
    /// Reads the headers as the tool's capture does (it looks for Set-Cookie).
    struct Cookies(usize);
    impl crate::BodySink for Cookies {
        fn data(&mut self, chunk: &[u8]) {
            self.0 += chunk.len();
        }
        fn head(&mut self, _status: u16, headers: &crate::Headers<'_>) {
            for (name, _) in headers.iter() {
                self.0 += usize::from(name.eq_ignore_ascii_case(b"set-cookie"));
            }
        }
    }
    let rounds: usize = std::env::var("ONRUSH_DECODE_ROUNDS").map_or(1, |r| r.parse().unwrap());
    let response =
        b"HTTP/1.1 200 OK\r\ncontent-type: text/plain; charset=utf-8\r\ncontent-length: 18\r\n\
date: Fri, 27 Nov 2026 01:27:13 GMT\r\n\r\nHello from onrush\n";
    let mut sink = Cookies(0);
    for _ in 0..rounds {
        let mut decoder = crate::decode::Decoder::new(false, false);
        let input = std::hint::black_box(&response[..]);
        let (n, done) = decoder.feed(input, &mut sink).unwrap();
        assert!(done && n == response.len());
    }
    assert_eq!(sink.0, rounds * 18);
}
