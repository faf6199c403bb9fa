//! Writing the request head into the connection's reused write buffer. (Header lines are
//! built with onrush-http's `push_header`, shared with HTTP/2.)
//!
//! Everything is appended to one `Vec<u8>` that keeps its capacity between requests, so a
//! steady-state request allocates nothing; numbers are formatted on the stack.

use crate::{Request, RequestBody};
use onrush_http::is_token;

/// Checks the parts of the request line and Host that come from templates: a space, CR or LF
/// there would change the meaning of the request rather than fail it.
pub(crate) fn validate(req: &Request<'_>) -> Result<(), &'static str> {
    if !is_token(req.method.as_bytes()) {
        return Err("invalid request: the method is not a token (e.g. GET)");
    }
    if req.target.is_empty() || req.target.iter().any(|&b| b <= b' ' || b == 0x7f) {
        return Err("invalid request: the target is empty or contains a space or control byte");
    }
    if req.host.iter().any(|&b| b < b' ' || b == 0x7f) {
        return Err("invalid request: the Host value contains CR, LF or a control byte");
    }
    Ok(())
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
}
