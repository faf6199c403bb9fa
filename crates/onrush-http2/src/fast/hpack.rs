//! Request header blocks (HPACK, RFC 7541), encoded statelessly: pseudo-headers fully indexed
//! from the static table where it has the value (`GET`, `POST`, `/`, `http`, `https`), every
//! other field a literal without indexing, with a static-table name reference for the common
//! names, no Huffman coding. The server's decoder state never changes, so the block costs a
//! few copies and no table lookups; the bytes saved by indexing would cost the client CPU
//! the load tool is meant to save. Response blocks are decoded by `hpack_dec`.

use onrush_http::{Request, RequestBody};

/// An HPACK integer with an `n`-bit prefix, `flags` in the bits above it (RFC 7541 §5.1).
#[inline]
pub(crate) fn int(buf: &mut Vec<u8>, n: u8, flags: u8, mut value: usize) {
    let max = (1usize << n) - 1;
    if value < max {
        buf.push(flags | value as u8);
        return;
    }
    buf.push(flags | max as u8);
    value -= max;
    while value >= 128 {
        buf.push((value % 128 + 128) as u8);
        value /= 128;
    }
    buf.push(value as u8);
}

/// A string literal, not Huffman-coded.
#[inline]
fn string(buf: &mut Vec<u8>, s: &[u8]) {
    int(buf, 7, 0, s.len());
    buf.extend_from_slice(s);
}

/// A literal field without indexing whose name is static-table entry `index`.
#[inline]
fn literal_indexed_name(buf: &mut Vec<u8>, index: usize, value: &[u8]) {
    int(buf, 4, 0, index);
    string(buf, value);
}

/// The static-table index of a (lower-case) header name commonly sent by clients.
fn static_name(name: &[u8]) -> Option<usize> {
    let idx = match name.len() {
        6 if name.eq_ignore_ascii_case(b"accept") => 19,
        6 if name.eq_ignore_ascii_case(b"cookie") => 32,
        7 if name.eq_ignore_ascii_case(b"referer") => 51,
        10 if name.eq_ignore_ascii_case(b"user-agent") => 58,
        12 if name.eq_ignore_ascii_case(b"content-type") => 31,
        13 if name.eq_ignore_ascii_case(b"authorization") => 23,
        13 if name.eq_ignore_ascii_case(b"cache-control") => 24,
        13 if name.eq_ignore_ascii_case(b"if-none-match") => 41,
        15 if name.eq_ignore_ascii_case(b"accept-encoding") => 16,
        15 if name.eq_ignore_ascii_case(b"accept-language") => 17,
        _ => return None,
    };
    Some(idx)
}

/// RFC 9110 token characters (header names, methods).
#[inline]
fn is_tchar(b: u8) -> bool {
    matches!(b,
        b'a'..=b'z' | b'A'..=b'Z' | b'0'..=b'9'
        | b'!' | b'#' | b'$' | b'%' | b'&' | b'\'' | b'*' | b'+' | b'-' | b'.'
        | b'^' | b'_' | b'`' | b'|' | b'~')
}

/// A header value HTTP/2 can carry: visible ASCII, obs-text, space and tab (no CR, LF, NUL).
#[inline]
fn valid_value(v: &[u8]) -> bool {
    v.iter().all(|&b| (b >= 0x20 && b != 0x7f) || b == b'\t')
}

/// `:path` and `:authority`: no controls, no spaces, not empty.
#[inline]
fn valid_uri_part(v: &[u8]) -> bool {
    !v.is_empty() && v.iter().all(|&b| b > 0x20 && b != 0x7f)
}

/// The request fields the block needs besides `req` itself.
pub(crate) struct Extra<'a> {
    pub https: bool,
    /// The `:scheme` when neither http nor https.
    pub scheme: &'a [u8],
    pub content_length: Option<u64>,
    pub content_type: Option<&'a str>,
}

/// Encodes the header block of `req` into `buf`. On error, `buf` may hold a partial block
/// (the caller truncates).
pub(crate) fn encode_request(
    buf: &mut Vec<u8>,
    req: &Request<'_>,
    extra: &Extra<'_>,
) -> Result<(), &'static str> {
    match req.method {
        "GET" => buf.push(0x80 | 2),
        "POST" => buf.push(0x80 | 3),
        m => {
            if m.is_empty() || !m.bytes().all(is_tchar) {
                return Err("the method is not a valid HTTP method");
            }
            literal_indexed_name(buf, 2, m.as_bytes());
        }
    }
    match (extra.https, extra.scheme) {
        (true, _) => buf.push(0x80 | 7),
        (false, b"http") => buf.push(0x80 | 6),
        (false, s) => literal_indexed_name(buf, 6, s),
    }
    if !valid_uri_part(req.host) {
        return Err("the Host is not a valid HTTP/2 :authority");
    }
    literal_indexed_name(buf, 1, req.host);
    if req.target == b"/" {
        buf.push(0x80 | 4);
    } else {
        if !valid_uri_part(req.target) {
            return Err("the request target is not a valid path and query");
        }
        literal_indexed_name(buf, 4, req.target);
    }
    let multipart = matches!(req.body, RequestBody::Multipart(_));
    for line in req.headers.split(|b| *b == b'\n') {
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        let Some(colon) = line.iter().position(|b| *b == b':') else {
            continue;
        };
        let (name, value) = (line[..colon].trim_ascii(), line[colon + 1..].trim_ascii());
        if crate::is_connection_specific(name, value)
            || (extra.content_length.is_some() && name.eq_ignore_ascii_case(b"content-length"))
            || (multipart && name.eq_ignore_ascii_case(b"content-type"))
        {
            continue;
        }
        if name.is_empty() || !name.iter().all(|&b| is_tchar(b)) {
            return Err("a request header name is not valid in HTTP/2");
        }
        if !valid_value(value) {
            return Err("a request header value is not valid");
        }
        match static_name(name) {
            Some(idx) => literal_indexed_name(buf, idx, value),
            None => {
                buf.push(0);
                int(buf, 7, 0, name.len());
                buf.extend(name.iter().map(u8::to_ascii_lowercase));
                string(buf, value);
            }
        }
    }
    if let Some(ct) = extra.content_type {
        if !valid_value(ct.as_bytes()) {
            return Err("the multipart content type is not valid");
        }
        literal_indexed_name(buf, 31, ct.as_bytes());
    }
    if let Some(len) = extra.content_length {
        let mut digits = [0u8; 20];
        let mut i = digits.len();
        let mut n = len;
        loop {
            i -= 1;
            digits[i] = b'0' + (n % 10) as u8;
            n /= 10;
            if n == 0 {
                break;
            }
        }
        literal_indexed_name(buf, 28, &digits[i..]);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn integers_follow_rfc7541_examples() {
        let mut b = Vec::new();
        int(&mut b, 5, 0, 10);
        assert_eq!(b, [10]);
        b.clear();
        int(&mut b, 5, 0, 1337);
        assert_eq!(b, [31, 154, 10]);
        b.clear();
        int(&mut b, 8, 0, 42);
        assert_eq!(b, [42]);
    }

    #[test]
    fn a_request_block_decodes_with_a_reference_decoder() {
        let req = Request {
            method: "PATCH",
            target: b"/a?b=c",
            host: b"example.com:8443",
            headers: b"User-Agent: onrush\r\nX-Custom: v 1\r\nConnection: close\r\nHost: x\r\n",
            body: RequestBody::Bytes(b"abc"),
            close: false,
        };
        let mut buf = Vec::new();
        let extra = Extra {
            https: true,
            scheme: b"https",
            content_length: Some(3),
            content_type: None,
        };
        encode_request(&mut buf, &req, &extra).unwrap();
        let mut dec = crate::fast::hpack_dec::Decoder::new(4096);
        let mut fields: Vec<(String, String)> = Vec::new();
        dec.decode(&buf, |n, v| {
            fields.push((
                String::from_utf8(n.to_vec()).unwrap(),
                String::from_utf8(v.to_vec()).unwrap(),
            ))
        })
        .unwrap();
        let expect = [
            (":method", "PATCH"),
            (":scheme", "https"),
            (":authority", "example.com:8443"),
            (":path", "/a?b=c"),
            ("user-agent", "onrush"),
            ("x-custom", "v 1"),
            ("content-length", "3"),
        ];
        let expect: Vec<(String, String)> = expect
            .iter()
            .map(|(n, v)| (n.to_string(), v.to_string()))
            .collect();
        assert_eq!(fields, expect);
    }

    #[test]
    fn invalid_input_is_refused() {
        let mut req = Request {
            method: "GET",
            target: b"/ x",
            host: b"h",
            headers: b"",
            body: RequestBody::Empty,
            close: false,
        };
        let extra = Extra {
            https: false,
            scheme: b"http",
            content_length: None,
            content_type: None,
        };
        assert!(encode_request(&mut Vec::new(), &req, &extra).is_err());
        req.target = b"/";
        req.headers = b"Bad Name: v\r\n";
        assert!(encode_request(&mut Vec::new(), &req, &extra).is_err());
        req.headers = b"X: a\0b\r\n";
        assert!(encode_request(&mut Vec::new(), &req, &extra).is_err());
        req.headers = b"X: ok\r\n";
        assert!(encode_request(&mut Vec::new(), &req, &extra).is_ok());
    }
}
