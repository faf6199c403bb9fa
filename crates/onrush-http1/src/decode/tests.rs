//! The decoder fed every way a network could deliver the bytes: whole, byte by byte, at every
//! single split point, and in deterministic pseudo-random splits. All must agree.

use super::Decoder;
use crate::{BodySink, Error, ErrorKind, Headers};

type Head = (u16, Vec<(Vec<u8>, Vec<u8>)>);

/// Records what the decoder gives a sink: heads, body, end calls, and checks their order.
#[derive(Debug, Default)]
struct Rec {
    heads: Vec<Head>,
    body: Vec<u8>,
    ends: u32,
}

impl BodySink for Rec {
    fn data(&mut self, chunk: &[u8]) {
        assert_eq!(self.heads.len(), 1, "body data before the head");
        assert_eq!(self.ends, 0, "body data after the end");
        assert!(!chunk.is_empty());
        self.body.extend_from_slice(chunk);
    }
    fn head(&mut self, status: u16, headers: &Headers<'_>) {
        assert!(status >= 200, "interim head passed");
        let hs = headers
            .iter()
            .map(|(n, v)| (n.to_vec(), v.to_vec()))
            .collect();
        self.heads.push((status, hs));
    }
    fn end(&mut self) {
        assert_eq!(self.heads.len(), 1, "end before the head");
        self.ends += 1;
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
struct Outcome {
    status: u16,
    head: Head,
    body: Vec<u8>,
    keep_alive: bool,
    head_bytes: u64,
    bytes_in: u64,
    leftover: Vec<u8>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Req {
    Get,
    Head,
    Close,
}

/// Small deterministic PRNG (xorshift64*) for the random splits.
pub(crate) struct Rng(u64);

impl Rng {
    pub(crate) fn new(seed: u64) -> Self {
        Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }
    pub(crate) fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    pub(crate) fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

/// Feeds `input` cut at `cuts` (sorted offsets), as a connection would: unconsumed bytes stay
/// in the buffer and the next piece is appended. `eof`: the connection closes after the input.
/// `Ok(None)`: the decoder is still waiting for more.
fn run(input: &[u8], cuts: &[usize], req: Req, eof: bool) -> Result<Option<Outcome>, Error> {
    let mut dec = Decoder::new(req == Req::Head, req == Req::Close);
    let mut body = Rec::default();
    let mut buf: Vec<u8> = Vec::new();
    let mut prev = 0;
    for &cut in cuts.iter().chain(std::iter::once(&input.len())) {
        buf.extend_from_slice(&input[prev..cut]);
        prev = cut;
        let (n, done) = dec.feed(&buf, &mut body)?;
        buf.drain(..n);
        if done {
            buf.extend_from_slice(&input[prev..]);
            return Ok(Some(outcome(&dec, body, buf)));
        }
    }
    if !eof {
        return Ok(None);
    }
    dec.eof(buf.len(), &mut body)?;
    Ok(Some(outcome(&dec, body, buf)))
}

fn outcome(dec: &Decoder, rec: Rec, leftover: Vec<u8>) -> Outcome {
    assert_eq!(dec.body_bytes, rec.body.len() as u64);
    assert_eq!(rec.heads.len(), 1, "one head per response");
    assert_eq!(rec.ends, 1, "one end per complete response");
    assert_eq!(rec.heads[0].0, dec.status);
    Outcome {
        status: dec.status,
        head: rec.heads.into_iter().next().unwrap(),
        body: rec.body,
        keep_alive: dec.keep_alive,
        head_bytes: dec.head_bytes,
        bytes_in: dec.bytes_in,
        leftover,
    }
}

fn same(a: &Result<Option<Outcome>, Error>, b: &Result<Option<Outcome>, Error>) -> bool {
    match (a, b) {
        (Ok(a), Ok(b)) => a == b,
        (Err(a), Err(b)) => a.kind() == b.kind(),
        _ => false,
    }
}

/// Runs `input` whole and in many splits; asserts they all agree and returns the result.
fn check(input: &[u8], req: Req, eof: bool) -> Result<Option<Outcome>, Error> {
    let whole = run(input, &[], req, eof);
    let mut variants: Vec<Vec<usize>> = Vec::new();
    if input.len() <= 4096 {
        variants.push((1..input.len()).collect()); // byte by byte
    }
    if input.len() <= 1024 {
        variants.extend((1..input.len()).map(|c| vec![c])); // every single split point
    }
    let mut rng = Rng::new(input.len() as u64);
    for _ in 0..64 {
        let pieces = 1 + rng.below(8);
        let mut cuts: Vec<usize> = (0..pieces).map(|_| rng.below(input.len() + 1)).collect();
        cuts.sort_unstable();
        variants.push(cuts);
    }
    for cuts in &variants {
        let r = run(input, cuts, req, eof);
        assert!(
            same(&whole, &r),
            "split at {cuts:?} gave {r:?}, whole gave {whole:?}, input {:?}",
            String::from_utf8_lossy(input)
        );
    }
    if let Ok(Some(o)) = &whole {
        assert_eq!(o.bytes_in + o.leftover.len() as u64, input.len() as u64);
    }
    whole
}

fn ok(input: &[u8], req: Req, eof: bool) -> Outcome {
    check(input, req, eof)
        .unwrap_or_else(|e| panic!("{e} for {:?}", String::from_utf8_lossy(input)))
        .expect("complete")
}

fn err(input: &[u8], req: Req, eof: bool) -> Error {
    match check(input, req, eof) {
        Err(e) => e,
        Ok(o) => panic!("expected an error, got {o:?}"),
    }
}

#[test]
fn content_length() {
    let o = ok(
        b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello",
        Req::Get,
        false,
    );
    assert_eq!(
        (o.status, &o.body[..], o.keep_alive),
        (200, &b"hello"[..], true)
    );
    assert_eq!(o.head_bytes, 38);
    assert!(o.leftover.is_empty());
    let o = ok(
        b"HTTP/1.1 404 Not Found\r\ncontent-length:  0 \r\n\r\n",
        Req::Get,
        false,
    );
    assert_eq!((o.status, o.body.len(), o.keep_alive), (404, 0, true));
    let o = ok(
        b"HTTP/1.1 200 OK\r\nContent-Length: 2, 2\r\n\r\nok",
        Req::Get,
        false,
    );
    assert_eq!(o.body, b"ok");
    let o = ok(
        b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Length: 2\r\n\r\nok",
        Req::Get,
        false,
    );
    assert_eq!(o.body, b"ok");
}

#[test]
fn bytes_after_the_response_are_left_unconsumed() {
    let next = b"HTTP/1.1 204 No Content\r\n\r\n";
    let mut input = b"HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\nabc".to_vec();
    input.extend_from_slice(next);
    let o = ok(&input, Req::Get, false);
    assert_eq!((&o.body[..], &o.leftover[..]), (&b"abc"[..], &next[..]));
    let mut input =
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n1\r\nx\r\n0\r\n\r\n".to_vec();
    input.extend_from_slice(next);
    let o = ok(&input, Req::Get, false);
    assert_eq!((&o.body[..], &o.leftover[..]), (&b"x"[..], &next[..]));
}

#[test]
fn chunked_with_extensions_and_trailers() {
    let input = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n\
        5;foo=bar\r\nhello\r\n6 ; a=\"x;y\" ;b\r\n world\r\nA\r\n0123456789\r\n\
        00000000000000000000001\r\n!\r\n0;last\r\nX-Trailer: 1\r\nY: two words\r\n\r\n";
    let o = ok(input, Req::Get, false);
    assert_eq!(o.body, b"hello world0123456789!");
    assert!(o.keep_alive);
    let o = ok(
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, Chunked\r\n\r\n0\r\n\r\n",
        Req::Get,
        false,
    );
    assert_eq!(o.body, b"");
    // Both framings: chunked wins, but the connection is not reused.
    let input = b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nab\r\n0\r\n\r\n";
    let o = ok(input, Req::Get, false);
    assert_eq!((&o.body[..], o.keep_alive), (&b"ab"[..], false));
}

#[test]
fn close_delimited() {
    let input = b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n\r\nuntil the end";
    let o = ok(input, Req::Get, true);
    assert_eq!((&o.body[..], o.keep_alive), (&b"until the end"[..], false));
    assert!(
        check(input, Req::Get, false).unwrap().is_none(),
        "waits for EOF"
    );
    // Transfer-Encoding without chunked last: also until close.
    let o = ok(
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\n\r\nzz",
        Req::Get,
        true,
    );
    assert_eq!((&o.body[..], o.keep_alive), (&b"zz"[..], false));
}

#[test]
fn no_body_responses() {
    let next = b"HTTP/1.1 200 OK\r\n";
    for (head, req) in [
        (
            &b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n"[..],
            Req::Head,
        ),
        (
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n",
            Req::Head,
        ),
        (b"HTTP/1.1 204 No Content\r\n\r\n", Req::Get),
        (
            b"HTTP/1.1 204 No Content\r\nContent-Length: 7\r\n\r\n",
            Req::Get,
        ),
        (
            b"HTTP/1.1 304 Not Modified\r\nContent-Length: 10\r\nETag: \"x\"\r\n\r\n",
            Req::Get,
        ),
    ] {
        let mut input = head.to_vec();
        input.extend_from_slice(next);
        let o = ok(&input, req, false);
        assert_eq!((o.body.len(), o.keep_alive), (0, true), "{head:?}");
        assert_eq!(o.leftover, next);
        assert_eq!(o.head_bytes, head.len() as u64);
    }
}

#[test]
fn interim_responses_are_skipped() {
    let input = b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\nLink: </a.css>\r\n\r\n\
        HTTP/1.1 201 Created\r\nContent-Length: 2\r\n\r\nok";
    let o = ok(input, Req::Get, false);
    assert_eq!((o.status, &o.body[..]), (201, &b"ok"[..]));
    assert_eq!(o.head_bytes, input.len() as u64 - 2);
    let e = err(b"HTTP/1.1 100 Continue\r\n\r\n", Req::Get, true);
    assert_eq!(e.kind(), ErrorKind::ClosedEarly);
    assert!(e.to_string().contains("interim"), "{e}");
}

#[test]
fn keep_alive_rules() {
    let ka = |input: &[u8], req| ok(input, req, true).keep_alive;
    assert!(!ka(
        b"HTTP/1.0 200 OK\r\nContent-Length: 2\r\n\r\nok",
        Req::Get
    ));
    assert!(ka(
        b"HTTP/1.0 200 OK\r\nConnection: Keep-Alive\r\nContent-Length: 2\r\n\r\nok",
        Req::Get
    ));
    assert!(
        !ka(
            b"HTTP/1.0 200 OK\r\nConnection: keep-alive\r\n\r\nok",
            Req::Get
        ),
        "close-delimited"
    );
    assert!(!ka(
        b"HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 2\r\n\r\nok",
        Req::Get
    ));
    assert!(!ka(
        b"HTTP/1.1 200 OK\r\nConnection: Upgrade, CLOSE\r\nContent-Length: 2\r\n\r\nok",
        Req::Get
    ));
    assert!(ka(
        b"HTTP/1.1 200 OK\r\nConnection: closed\r\nContent-Length: 2\r\n\r\nok",
        Req::Get
    ));
    assert!(!ka(
        b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok",
        Req::Close
    ));
    let o = ok(b"HTTP/1.0 200 OK\r\n\r\nold style", Req::Get, true);
    assert_eq!(o.body, b"old style");
}

#[test]
fn malformed_heads() {
    for input in [
        &b"HTTP/1.1 2OO OK\r\n\r\n"[..],
        b"HTTX/1.1 200 OK\r\n\r\n",
        b"HTTP/2 200\r\n\r\n",
        b"garbage\r\n\r\n",
        b"HTTP/1.1 200 OK\r\nBad Header: x\r\n\r\n",
        b"HTTP/1.1 200 OK\r\n: empty name\r\n\r\n",
        b"HTTP/1.1 200 OK\r\nX: a\x00b\r\n\r\n",
        b"HTTP/1.1 099 Low\r\n\r\n",
        b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n\r\n",
        b"HTTP/1.1 200 OK\r\nContent-Length: abc\r\n\r\n",
        b"HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n",
        b"HTTP/1.1 200 OK\r\nContent-Length: \r\n\r\n",
        b"HTTP/1.1 200 OK\r\nContent-Length: 1,\r\n\r\n",
        b"HTTP/1.1 200 OK\r\nContent-Length: 5, 6\r\n\r\n",
        b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\n",
        b"HTTP/1.1 200 OK\r\nContent-Length: 99999999999999999999\r\n\r\n",
        b"HTTP/1.0 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
    ] {
        let e = err(input, Req::Get, true);
        assert_eq!(
            e.kind(),
            ErrorKind::BadResponse,
            "{:?}: {e}",
            String::from_utf8_lossy(input)
        );
    }
}

#[test]
fn bad_chunks() {
    let head = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n";
    for body in [
        &b"zz\r\nhello\r\n0\r\n\r\n"[..],
        b"\r\n",
        b"5\nhello\r\n0\r\n\r\n",
        b"5\r\nhelloX\r\n0\r\n\r\n",
        b"5\r\nhello\n0\r\n\r\n",
        b"5\r\nhello\rX0\r\n\r\n",
        b"5\r\nhello\r\r\n0\r\n\r\n",
        b"5 x\r\nhello\r\n",
        b"5;ext\nhello\r\n",
        b"-5\r\n",
        b"0x5\r\nhello\r\n",
        b"10000000000000000\r\n",
        b"0\r\nTrailer: x\n\r\n",
        b"0\r\n\rX",
        b"0\r\nT: 1\r\rX",
    ] {
        let mut input = head.to_vec();
        input.extend_from_slice(body);
        let e = err(&input, Req::Get, true);
        assert_eq!(
            e.kind(),
            ErrorKind::BadResponse,
            "{:?}: {e}",
            String::from_utf8_lossy(body)
        );
    }
    // The largest chunk size that fits in 64 bits is accepted (and then the body is short).
    let mut input = head.to_vec();
    input.extend_from_slice(b"fffffffffffffff\r\nabc");
    assert_eq!(err(&input, Req::Get, true).kind(), ErrorKind::ClosedEarly);
}

#[test]
fn closed_early() {
    for input in [
        &b""[..],
        b"HTTP/1.1 200 OK\r\nContent-Le",
        b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nhello",
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhel",
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n",
    ] {
        let e = err(input, Req::Get, true);
        assert_eq!(
            e.kind(),
            ErrorKind::ClosedEarly,
            "{:?}",
            String::from_utf8_lossy(input)
        );
        assert!(
            check(input, Req::Get, false).unwrap().is_none(),
            "waits for more"
        );
    }
    let e = err(b"", Req::Get, true);
    assert!(e.to_string().contains("without sending a response"), "{e}");
    let e = err(
        b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nhello",
        Req::Get,
        true,
    );
    assert!(e.to_string().contains("5 bytes before the end"), "{e}");
}

fn head_with_headers(n: usize, value_len: usize) -> Vec<u8> {
    let mut h = b"HTTP/1.1 200 OK\r\n".to_vec();
    for i in 0..n {
        h.extend_from_slice(format!("X-H{i}: ").as_bytes());
        h.resize(h.len() + value_len, b'v');
        h.extend_from_slice(b"\r\n");
    }
    h.extend_from_slice(b"Content-Length: 0\r\n\r\n");
    h
}

#[test]
fn header_count_limit() {
    assert_eq!(ok(&head_with_headers(63, 3), Req::Get, false).status, 200);
    let e = err(&head_with_headers(64, 3), Req::Get, true);
    assert_eq!(e.kind(), ErrorKind::BadResponse);
    assert!(e.to_string().contains("more than 64 header lines"), "{e}");
}

#[test]
fn head_size_limit() {
    // ~60 KiB head: accepted.
    let big = head_with_headers(60, 1000);
    assert!(big.len() < crate::MAX_HEAD_BYTES);
    assert_eq!(
        run(&big, &[1000, 30000, 50000], Req::Get, false)
            .unwrap()
            .unwrap()
            .status,
        200
    );
    // ~70 KiB head: refused once 64 KiB are buffered, whether or not it is complete.
    let huge = head_with_headers(50, 1400);
    assert!(huge.len() > crate::MAX_HEAD_BYTES);
    for cuts in [&[][..], &[100, 40000][..], &[crate::MAX_HEAD_BYTES][..]] {
        let e = run(&huge, cuts, Req::Get, true).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::BadResponse);
        assert!(e.to_string().contains("larger than 64 KiB"), "{e}");
    }
}

/// Random responses: random framing, sizes, chunkings and splits; compares the decoded body
/// with what was encoded.
#[test]
fn random_responses_roundtrip() {
    let mut rng = Rng::new(7);
    for round in 0..300 {
        let len = match rng.below(4) {
            0 => rng.below(4),
            1 => rng.below(100),
            _ => rng.below(5000),
        };
        let body: Vec<u8> = (0..len).map(|_| rng.next() as u8).collect();
        let mut input = b"HTTP/1.1 200 OK\r\n".to_vec();
        let chunked = rng.below(2) == 0;
        if chunked {
            input.extend_from_slice(b"Transfer-Encoding: chunked\r\n\r\n");
            let mut rest = &body[..];
            while !rest.is_empty() {
                let n = (1 + rng.below(700)).min(rest.len());
                let size = if rng.below(2) == 0 {
                    format!("{n:x}")
                } else {
                    format!("{n:X};e=1")
                };
                input.extend_from_slice(size.as_bytes());
                input.extend_from_slice(b"\r\n");
                input.extend_from_slice(&rest[..n]);
                input.extend_from_slice(b"\r\n");
                rest = &rest[n..];
            }
            input.extend_from_slice(b"0\r\n");
            if rng.below(2) == 0 {
                input.extend_from_slice(b"Checksum: abc\r\n");
            }
            input.extend_from_slice(b"\r\n");
        } else {
            input.extend_from_slice(format!("Content-Length: {len}\r\n\r\n").as_bytes());
            input.extend_from_slice(&body);
        }
        let mut cuts: Vec<usize> = (0..rng.below(20))
            .map(|_| rng.below(input.len() + 1))
            .collect();
        cuts.sort_unstable();
        let o = run(&input, &cuts, Req::Get, false)
            .unwrap()
            .expect("complete");
        assert_eq!(o.body, body, "round {round}, chunked {chunked}");
        assert_eq!(o.bytes_in, input.len() as u64);
    }
}

#[test]
fn head_reaches_the_sink_once_with_every_header_in_order() {
    let input = b"HTTP/1.1 100 Continue\r\nX-Interim: 1\r\n\r\n\
HTTP/1.1 103 Early Hints\r\nLink: </a.css>; rel=preload\r\n\r\n\
HTTP/1.1 302 Found\r\nSet-Cookie: a=1; Path=/\r\nLocation: /next\r\nset-cookie: b=2\r\n\
Content-Type: text/plain\r\nSET-COOKIE: c=3; Secure\r\nContent-Length: 2\r\n\r\nok";
    let o = ok(input, Req::Get, false);
    let (status, headers) = &o.head;
    assert_eq!(*status, 302);
    let names: Vec<&[u8]> = headers.iter().map(|(n, _)| &n[..]).collect();
    assert_eq!(
        names,
        [
            &b"Set-Cookie"[..],
            b"Location",
            b"set-cookie",
            b"Content-Type",
            b"SET-COOKIE",
            b"Content-Length"
        ]
    );
    let cookies: Vec<&[u8]> = headers
        .iter()
        .filter(|(n, _)| n.eq_ignore_ascii_case(b"set-cookie"))
        .map(|(_, v)| &v[..])
        .collect();
    assert_eq!(cookies, [&b"a=1; Path=/"[..], b"b=2", b"c=3; Secure"]);
    assert_eq!(o.body, b"ok");

    // Responses without a body still get their head and end.
    let o = ok(b"HTTP/1.1 204 No Content\r\nX: y\r\n\r\n", Req::Get, false);
    assert_eq!(o.head, (204, vec![(b"X".to_vec(), b"y".to_vec())]));
    let o = ok(
        b"HTTP/1.1 200 OK\r\nContent-Length: 9\r\n\r\n",
        Req::Head,
        false,
    );
    assert_eq!(o.head.0, 200);
    let o = ok(b"HTTP/1.0 200 OK\r\n\r\nuntil close", Req::Get, true);
    assert_eq!(o.body, b"until close");
}

#[test]
fn headers_view_lookups() {
    let mut raw = [httparse::EMPTY_HEADER; 8];
    let mut resp = httparse::Response::new(&mut raw);
    resp.parse(
        b"HTTP/1.1 200 OK\r\nSet-Cookie: a=1\r\nContent-Encoding: gzip\r\nset-cookie: b=2\r\n\r\n",
    )
    .unwrap();
    let h = Headers::new(resp.headers);
    assert_eq!(h.len(), 3);
    assert!(!h.is_empty());
    assert_eq!(h.get("content-encoding"), Some(&b"gzip"[..]));
    assert_eq!(h.get("x-missing"), None);
    let all: Vec<&[u8]> = h.get_all("SET-COOKIE").collect();
    assert_eq!(all, [&b"a=1"[..], b"b=2"]);
    assert!(format!("{h:?}").contains("Content-Encoding"));
}

#[test]
fn framing_errors_give_the_parse_reason() {
    // A garbage status line: what was expected, and how the response began.
    let e = err(b"GARBAGE 200 OK\r\n\r\n", Req::Get, true);
    let text = e.to_string();
    assert!(
        text.contains("not an HTTP/1.x status line")
            && text.contains("began \"GARBAGE 200 OK\\r\\n"),
        "{text}"
    );
    // TLS answered on a plain port: the bytes say so.
    let e = err(b"\x16\x03\x01\x00\x2a\x02\x00\x00", Req::Get, true);
    assert!(e.to_string().contains("began \"\\x16\\x03\\x01"), "{e}");
    // A bad chunk size names the byte.
    let mut input = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n".to_vec();
    input.extend_from_slice(b"5g\r\nhello\r\n0\r\n\r\n");
    let e = err(&input, Req::Get, true);
    assert!(
        e.to_string()
            .contains("invalid chunk size (at byte 'g' (0x67))"),
        "{e}"
    );
}

#[test]
fn content_length_values_fast_and_slow() {
    use super::parse_content_length;
    for (value, want) in [
        (&b"0"[..], Some(0)),
        (b"18", Some(18)),
        (b"007", Some(7)),
        (b"9999999999999999999", Some(9_999_999_999_999_999_999)),
        (b"18446744073709551615", Some(u64::MAX)),
        (b"18446744073709551616", None),
        (b"99999999999999999999", None),
        (b"5, 5", Some(5)),
        (b" 5 ", Some(5)),
        (b"5, 6", None),
        (b"", None),
        (b"+5", None),
        (b"5a", None),
        (b"-1", None),
    ] {
        assert_eq!(
            parse_content_length(value).ok(),
            want,
            "{:?}",
            String::from_utf8_lossy(value)
        );
    }
}
