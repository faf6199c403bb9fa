//! Writing the request head into the connection's reused write buffer. (Header lines are
//! built with onrush-http's `push_header`, shared with HTTP/2.)
//!
//! Everything is appended to one `Vec<u8>` that keeps its capacity between requests, so a
//! steady-state request allocates nothing; numbers are formatted on the stack.

use crate::{Request, RequestBody};
use onrush_http::is_token;

/// Checks the parts of the request line and Host that come from templates: a space, CR or LF
/// there would change the meaning of the request rather than fail it.
///
/// Runs for every request, so the byte checks take eight bytes at a time (issue 17: the
/// byte-wise loops cost ~150 instructions per request for a 15-byte Host and a short path).
pub(crate) fn validate(req: &Request<'_>) -> Result<(), &'static str> {
    // The common methods are known tokens; any other is checked byte by byte.
    if !matches!(
        req.method,
        "GET" | "POST" | "PUT" | "HEAD" | "DELETE" | "PATCH"
    ) && !is_token(req.method.as_bytes())
    {
        return Err("invalid request: the method is not a token (e.g. GET)");
    }
    if req.target.is_empty() || has_byte_below_or_del(req.target, b' ' + 1) {
        return Err("invalid request: the target is empty or contains a space or control byte");
    }
    if has_byte_below_or_del(req.host, b' ') {
        return Err("invalid request: the Host value contains CR, LF or a control byte");
    }
    Ok(())
}

/// Whether `bytes` holds a byte below `limit` (at most 0x80) or a DEL (0x7f). Bytes of 0x80
/// and above pass, as they did byte by byte.
fn has_byte_below_or_del(bytes: &[u8], limit: u8) -> bool {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGH: u64 = 0x8080_8080_8080_8080;
    debug_assert!(limit <= 0x80);
    if bytes.len() < 8 {
        return bytes.iter().any(|&b| b < limit || b == 0x7f);
    }
    // Exact for "any": without a byte below `limit` (or a DEL) nothing borrows across bytes.
    let flagged = |word: &[u8]| {
        let w = u64::from_le_bytes(word.try_into().expect("8 bytes"));
        let x = w ^ (ONES * 0x7f);
        (w.wrapping_sub(ONES * u64::from(limit)) & !w) | (x.wrapping_sub(ONES) & !x)
    };
    let mut words = bytes.chunks_exact(8);
    let mut any = (&mut words).fold(0, |acc, word| acc | flagged(word));
    if !words.remainder().is_empty() {
        // The last eight bytes, overlapping the last word: no byte-wise tail.
        any |= flagged(&bytes[bytes.len() - 8..]);
    }
    any & HIGH != 0
}

/// The Content-Length to announce for a body of this kind and known length.
pub(crate) fn content_length(req: &Request<'_>, body_len: u64) -> Option<u64> {
    match req.body {
        RequestBody::Empty => match req.method {
            "POST" | "PUT" | "PATCH" => Some(0),
            _ => None,
        },
        RequestBody::Bytes(_) | RequestBody::File(_) | RequestBody::Multipart(_) => Some(body_len),
    }
}

/// Appends the request head: request line, Host, the caller's header lines, Content-Length,
/// `Connection: close` when asked, and the blank line.
pub(crate) fn write_head(buf: &mut Vec<u8>, req: &Request<'_>, content_length: Option<u64>) {
    buf.extend_from_slice(req.method.as_bytes());
    buf.push(b' ');
    buf.extend_from_slice(req.target);
    buf.extend_from_slice(b" HTTP/1.1\r\nHost: ");
    buf.extend_from_slice(req.host);
    buf.extend_from_slice(b"\r\n");
    buf.extend_from_slice(req.headers);
    if let RequestBody::Multipart(m) = req.body {
        buf.extend_from_slice(m.content_type_line());
    }
    if let Some(n) = content_length {
        buf.extend_from_slice(b"Content-Length: ");
        push_u64(buf, n);
        buf.extend_from_slice(b"\r\n");
    }
    if req.close {
        buf.extend_from_slice(b"Connection: close\r\n");
    }
    buf.extend_from_slice(b"\r\n");
}

/// Decimal formatting without `fmt` machinery or allocation.
pub(crate) fn push_u64(buf: &mut Vec<u8>, mut n: u64) {
    let mut digits = [0u8; 20];
    let mut i = digits.len();
    loop {
        i -= 1;
        digits[i] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    buf.extend_from_slice(&digits[i..]);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::push_header;

    fn req<'a>(method: &'a str, body: RequestBody<'a>, headers: &'a [u8]) -> Request<'a> {
        Request {
            method,
            target: b"/a?b=1",
            host: b"127.0.0.1:8080",
            headers,
            body,
            close: false,
        }
    }

    #[test]
    fn numbers() {
        for n in [0u64, 1, 9, 10, 99, 100, 12345, u64::MAX] {
            let mut b = Vec::new();
            push_u64(&mut b, n);
            assert_eq!(b, n.to_string().as_bytes());
        }
    }

    #[test]
    fn head_layout() {
        let mut h = Vec::new();
        push_header(&mut h, b"User-Agent", b"onrush/0.1").unwrap();
        let r = req("GET", RequestBody::Empty, &h);
        let mut b = Vec::new();
        write_head(&mut b, &r, content_length(&r, 0));
        assert_eq!(
            b,
            b"GET /a?b=1 HTTP/1.1\r\nHost: 127.0.0.1:8080\r\nUser-Agent: onrush/0.1\r\n\r\n"
        );

        let mut r = req("POST", RequestBody::Bytes(b"hello"), b"");
        r.close = true;
        b.clear();
        write_head(&mut b, &r, content_length(&r, 5));
        assert_eq!(
            b,
            &b"POST /a?b=1 HTTP/1.1\r\nHost: 127.0.0.1:8080\r\nContent-Length: 5\r\nConnection: close\r\n\r\n"[..]
        );

        let r = req("POST", RequestBody::Empty, b"");
        assert_eq!(content_length(&r, 0), Some(0));
        let r = req("DELETE", RequestBody::Empty, b"");
        assert_eq!(content_length(&r, 0), None);
        let r = req("DELETE", RequestBody::Bytes(b""), b"");
        assert_eq!(content_length(&r, 0), Some(0));
    }

    #[test]
    fn request_validation() {
        assert!(validate(&req("GET", RequestBody::Empty, b"")).is_ok());
        let mut r = req("GET", RequestBody::Empty, b"");
        r.target = b"/a b";
        assert!(validate(&r).is_err());
        r.target = b"/a\r\nX: y";
        assert!(validate(&r).is_err());
        r.target = b"";
        assert!(validate(&r).is_err());
        let mut r = req("GE T", RequestBody::Empty, b"");
        assert!(validate(&r).is_err());
        r.method = "GET";
        r.host = b"h\r\nX: y";
        assert!(validate(&r).is_err());
    }

    #[test]
    fn the_word_wise_byte_checks_agree_with_byte_by_byte() {
        // Every bad byte at every position of inputs of 0..=20 bytes (both the 8-byte words
        // and the remainder), around ordinary and high (0x80+) bytes.
        for limit in [b' ', b' ' + 1] {
            let byte_by_byte = |bytes: &[u8]| bytes.iter().any(|&b| b < limit || b == 0x7f);
            for len in 0..=20 {
                for filler in [b'a', b'~', 0x80, 0xff, limit] {
                    let clean = vec![filler; len];
                    assert_eq!(has_byte_below_or_del(&clean, limit), byte_by_byte(&clean));
                    for at in 0..len {
                        for bad in [0u8, b'\t', b'\n', b'\r', b' ', 0x1f, 0x7f] {
                            let mut bytes = clean.clone();
                            bytes[at] = bad;
                            assert_eq!(
                                has_byte_below_or_del(&bytes, limit),
                                byte_by_byte(&bytes),
                                "limit {limit:#x}, {bytes:?}"
                            );
                        }
                    }
                }
            }
        }
        let mut r = req("GET", RequestBody::Empty, b"");
        r.target = b"/a/long/path?with=query&and=more\x7f";
        assert!(validate(&r).is_err());
        r.target = "/caf\u{e9}/\u{1F600}".as_bytes();
        assert!(validate(&r).is_ok(), "non-ASCII bytes pass, as before");
        r.host = b"example.com:8080\x01";
        assert!(validate(&r).is_err());
        r.host = b"";
        assert!(
            validate(&r).is_ok(),
            "an empty Host is not this check's business"
        );
        r.method = "M-SEARCH";
        assert!(validate(&r).is_ok());
        r.method = "GET\r\n";
        assert!(validate(&r).is_err());
    }
}
