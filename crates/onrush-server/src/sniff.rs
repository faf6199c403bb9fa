//! Which protocol a plain connection speaks, decided from its first bytes (peeked, never
//! consumed), so that one port serves every protocol of the built-in server.
//!
//! One port instead of one per protocol: a plan names the built-in server with one host
//! (`builtin`) whatever the step, and `onrush serve` prints one address. Every client of these
//! protocols speaks first, and their first bytes differ:
//!
//! | first bytes | protocol |
//! |---|---|
//! | the HTTP/2 preface `PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n` | HTTP/2 with prior knowledge (h2c, gRPC) |
//! | `0x00`, a 4-byte length, then `0x80 0x01` (binary) or `0x82` and a byte `xxx00001` (compact) | Thrift, framed transport |
//! | `0x00` otherwise | TCP echo of length-prefixed messages (4-byte big-endian length) |
//! | `0x80 0x01` (binary), or `0x82` then a byte `xxx00001` (compact: version 1, any message type) | Thrift, buffered transport |
//! | `0x16 0x03`, a TLS handshake record (a ClientHello) | a TLS client on the plain port: answered with an HTTP 400 and closed, as a plain web server would |
//! | a first line `GET /ws/... HTTP/1.1` | WebSocket (RFC 6455) |
//! | a first line ending in ` HTTP/1.x` (or no line end within [`PEEK`] bytes) | HTTP/1.1 |
//! | any other first line | TCP echo of lines |
//!
//! A length-prefixed message therefore has fewer than 16 MiB (its first byte is 0) and does not
//! itself start like a Thrift message; a line connection's first line is not an HTTP request
//! line and does not start with the bytes 0x80 or 0x82 (not UTF-8 text anyway). Thrift's own
//! rules give the same first bytes: every message of the strict binary protocol starts with the
//! version word `0x8001`, every compact one with the protocol id `0x82` and version 1 in the
//! low 5 bits of the next byte, and a framed call of a few KB has a length whose first byte is 0.

use std::io;
use std::time::Duration;

use tokio::net::TcpStream;

/// What a plain connection speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Wire {
    Http1,
    H2,
    WebSocket,
    Lines,
    LengthPrefixed,
    ThriftFramed,
    ThriftBuffered,
    /// A TLS ClientHello: an `https://` client on this plain port.
    TlsHello,
}

/// What an HTTP/2 client sends first (RFC 9113 3.4).
pub(crate) const H2_PREFACE: &[u8; 24] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";

/// Bytes looked at: enough for the request line of nearly every HTTP request. A longer first
/// line with no end in sight is taken for HTTP, which answers it (414/400) as before.
pub(crate) const PEEK: usize = 2048;

/// Where the WebSocket endpoints live on the HTTP port.
pub(crate) const WS_PREFIX: &[u8] = b"GET /ws/";

/// Classifies `buf`, the first bytes of a connection; `None` when more bytes are needed.
/// `closed`: the peer sent nothing more (end of stream), so decide with what is there.
pub(crate) fn classify(buf: &[u8], closed: bool) -> Option<Wire> {
    if buf.is_empty() {
        // A connection closed before its first byte: HTTP/1.1 closes it as before.
        return closed.then_some(Wire::Http1);
    }
    let n = buf.len().min(H2_PREFACE.len());
    if buf[..n] == H2_PREFACE[..n] {
        if n == H2_PREFACE.len() {
            return Some(Wire::H2);
        }
        return if closed { Some(Wire::Http1) } else { None };
    }
    if buf[0] == 0 {
        return classify_binary(buf, closed);
    }
    // A TLS record header: content type 22 (handshake), version 3.x.
    if buf[0] == 0x16 {
        match buf.get(1) {
            Some(0x03) => return Some(Wire::TlsHello),
            None if !closed => return None,
            _ => {}
        }
    }
    if buf[0] == 0x80 || buf[0] == 0x82 {
        match buf.get(1) {
            Some(&second) if is_thrift(buf[0], second) => return Some(Wire::ThriftBuffered),
            Some(_) => {}
            None if closed => return Some(Wire::Lines),
            None => return None,
        }
    }
    match buf.iter().position(|&b| b == b'\n') {
        Some(end) => {
            let line = &buf[..end];
            let line = line.strip_suffix(b"\r").unwrap_or(line);
            if is_http_request_line(line) {
                if line.starts_with(WS_PREFIX) {
                    Some(Wire::WebSocket)
                } else {
                    Some(Wire::Http1)
                }
            } else {
                Some(Wire::Lines)
            }
        }
        None if closed || buf.len() >= PEEK => Some(Wire::Http1),
        None => None,
    }
}

/// Whether two bytes open a Thrift message: the strict binary protocol's version `0x80 0x01`,
/// or the compact protocol's id `0x82` and version 1 (the message type is in the top 3 bits).
fn is_thrift(first: u8, second: u8) -> bool {
    (first == 0x80 && second == 0x01) || (first == 0x82 && second & 0x1f == 1)
}

/// A binary connection: Thrift framed (a frame whose payload opens like a Thrift message) or a
/// length-prefixed echo.
fn classify_binary(buf: &[u8], closed: bool) -> Option<Wire> {
    if buf.len() < 4 {
        return if closed {
            Some(Wire::LengthPrefixed)
        } else {
            None
        };
    }
    let len = u32::from_be_bytes([buf[0], buf[1], buf[2], buf[3]]);
    if len < 2 {
        // Too short to be a Thrift message: no more bytes need to arrive to know.
        return Some(Wire::LengthPrefixed);
    }
    if buf.len() < 6 {
        return if closed {
            Some(Wire::LengthPrefixed)
        } else {
            None
        };
    }
    if is_thrift(buf[4], buf[5]) {
        Some(Wire::ThriftFramed)
    } else {
        Some(Wire::LengthPrefixed)
    }
}

/// `METHOD SP target SP HTTP/x.y` (RFC 9112 3), loosely: the last word starts with `HTTP/`
/// and the first is an upper-case token.
fn is_http_request_line(line: &[u8]) -> bool {
    let Some(space) = line.iter().rposition(|&b| b == b' ') else {
        return false;
    };
    let method_end = line.iter().position(|&b| b == b' ').unwrap_or(0);
    method_end > 0
        && line[..method_end]
            .iter()
            .all(|b| b.is_ascii_uppercase() || *b == b'-')
        && line[space + 1..].starts_with(b"HTTP/")
}

/// Peeks at a plain connection until [`classify`] decides. Only peeks: the bytes stay in the
/// socket for whoever serves the connection. One `recvfrom` per connection in the usual case
/// (a client's first write holds its whole first message or request line).
pub(crate) async fn sniff(stream: &TcpStream) -> io::Result<Wire> {
    let mut buf = vec![0u8; PEEK];
    let mut wait = Duration::from_millis(1);
    let mut last = usize::MAX;
    loop {
        let n = stream.peek(&mut buf).await?;
        // The same count twice after a wait: the peer sent nothing more. Peeking cannot tell
        // "closed" from "nothing new" (the socket stays readable), except for 0 bytes.
        if let Some(wire) = classify(&buf[..n], n == 0) {
            return Ok(wire);
        }
        if n == last && wait >= Duration::from_secs(1) {
            // A client that sent a partial first message and then waits for us: nothing more
            // is coming, decide on what is there (a stuck HTTP client then hears from hyper).
            return Ok(classify(&buf[..n], true).unwrap_or(Wire::Http1));
        }
        last = n;
        // Peeking again at once would return the same bytes (the socket stays readable), so
        // wait a little, longer each time, for the rest.
        tokio::time::sleep(wait).await;
        wait = (wait * 2).min(Duration::from_secs(1));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_protocol_by_its_first_bytes() {
        assert_eq!(classify(H2_PREFACE, false), Some(Wire::H2));
        assert_eq!(classify(&H2_PREFACE[..10], false), None);
        assert_eq!(
            classify(b"GET / HTTP/1.1\r\nHost: a\r\n\r\n", false),
            Some(Wire::Http1)
        );
        assert_eq!(classify(b"POST /echo HTTP/1.0\n", false), Some(Wire::Http1));
        assert_eq!(
            classify(b"GET /ws/echo HTTP/1.1\r\nUpgrade: websocket\r\n", false),
            Some(Wire::WebSocket)
        );
        assert_eq!(classify(b"hello\n", false), Some(Wire::Lines));
        assert_eq!(
            classify(&[0x16, 0x03, 0x01, 0x02], false),
            Some(Wire::TlsHello)
        );
        assert_eq!(classify(&[0x16], false), None);
        assert_eq!(classify(b"PING 1\r\n", false), Some(Wire::Lines));
        assert_eq!(classify(b"GET / HTTP", false), None);
        assert_eq!(classify(b"hello", true), Some(Wire::Http1));
        assert_eq!(
            classify(&[0, 0, 0, 3, b'a', b'b', b'c'], false),
            Some(Wire::LengthPrefixed)
        );
        assert_eq!(
            classify(&[0, 0, 0, 1, b'a'], false),
            Some(Wire::LengthPrefixed)
        );
        assert_eq!(classify(&[0, 0, 0, 20, 0x80], false), None);
        assert_eq!(
            classify(&[0, 0, 0, 20, 0x80, 0x01, 0, 1], false),
            Some(Wire::ThriftFramed)
        );
        assert_eq!(
            classify(&[0, 0, 0, 20, 0x82, 0x21, 7], false),
            Some(Wire::ThriftFramed)
        );
        // 0x82 then a version other than 1: an echo of a binary message.
        assert_eq!(
            classify(&[0, 0, 0, 20, 0x82, 0x22, 7], false),
            Some(Wire::LengthPrefixed)
        );
        assert_eq!(
            classify(&[0x80, 0x01, 0, 1], false),
            Some(Wire::ThriftBuffered)
        );
        assert_eq!(
            classify(&[0x82, 0x21, 7], false),
            Some(Wire::ThriftBuffered)
        );
        assert_eq!(
            classify(&[0x82, 0x81, 7], false),
            Some(Wire::ThriftBuffered)
        );
        assert_eq!(classify(&[0x80], false), None);
        assert_eq!(classify(&[0x80, 0x02, b'\n'], false), Some(Wire::Lines));
        assert_eq!(classify(&[0x82], true), Some(Wire::Lines));
        assert_eq!(classify(&[0, 0], false), None);
        assert_eq!(classify(&[], true), Some(Wire::Http1));
        assert_eq!(classify(&[b'x'; PEEK], false), Some(Wire::Http1));
    }
}
