//! The opening handshake (RFC 6455 §4), sans I/O: the client's upgrade request written into a
//! buffer, and the server's response read and checked (status 101, `Upgrade`, `Connection`,
//! the accept key, the subprotocol and extensions it chose against those offered).

use base64::engine::general_purpose::STANDARD as BASE64;
use base64::Engine;
use sha1::{Digest, Sha1};

use crate::deflate::{self, Agreed};

/// The GUID of §1.3 that the accept key hashes with the client's key.
const GUID: &str = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11";

/// The longest response head read: a server that sends more is not answering a handshake.
pub(crate) const HEAD_MAX: usize = 16 * 1024;

/// The most header lines read from a response.
const HEADERS_MAX: usize = 64;

/// What the client asks for.
pub(crate) struct Offer<'a> {
    /// `host:port` as the URL wrote it (IPv6 in brackets): the `Host` header.
    pub authority: &'a str,
    /// Path and query, percent-encoded.
    pub target: &'a str,
    /// The plan's headers, rendered; a `Host` among them replaces onrush's.
    pub headers: &'a [(String, Vec<u8>)],
    pub subprotocols: &'a [String],
    pub deflate: bool,
}

/// The key of a handshake from 16 random bytes.
pub(crate) fn key(nonce: [u8; 16]) -> String {
    BASE64.encode(nonce)
}

/// The `Sec-WebSocket-Accept` a server must answer `key` with.
pub(crate) fn accept_key(key: &str) -> String {
    let mut sha = Sha1::new();
    sha.update(key.as_bytes());
    sha.update(GUID.as_bytes());
    BASE64.encode(sha.finalize())
}

/// Appends the upgrade request to `out`.
/// `key` is the `Sec-WebSocket-Key`, from [`key`].
pub(crate) fn write_request(offer: &Offer<'_>, key: &str, out: &mut Vec<u8>) {
    out.extend_from_slice(b"GET ");
    out.extend_from_slice(offer.target.as_bytes());
    out.extend_from_slice(b" HTTP/1.1\r\n");
    if !offer
        .headers
        .iter()
        .any(|(n, _)| n.eq_ignore_ascii_case("host"))
    {
        out.extend_from_slice(b"Host: ");
        out.extend_from_slice(offer.authority.as_bytes());
        out.extend_from_slice(b"\r\n");
    }
    out.extend_from_slice(b"Connection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: ");
    out.extend_from_slice(key.as_bytes());
    out.extend_from_slice(b"\r\n");
    if !offer.subprotocols.is_empty() {
        out.extend_from_slice(b"Sec-WebSocket-Protocol: ");
        out.extend_from_slice(offer.subprotocols.join(", ").as_bytes());
        out.extend_from_slice(b"\r\n");
    }
    if offer.deflate {
        out.extend_from_slice(b"Sec-WebSocket-Extensions: ");
        out.extend_from_slice(deflate::OFFER.as_bytes());
        out.extend_from_slice(b"\r\n");
    }
    for (name, value) in offer.headers {
        out.extend_from_slice(name.as_bytes());
        out.extend_from_slice(b": ");
        out.extend_from_slice(value);
        out.extend_from_slice(b"\r\n");
    }
    out.extend_from_slice(b"\r\n");
}

/// A response head, read.
pub(crate) struct Head<'b> {
    pub status: u16,
    /// Bytes of the head, the blank line included: what follows is frames.
    pub len: usize,
    pub headers: Vec<(&'b str, &'b [u8])>,
}

/// Reads the response head at the start of `buf`: `None` while it is incomplete.
pub(crate) fn parse_head(buf: &[u8]) -> Result<Option<Head<'_>>, String> {
    let mut slots = [httparse::EMPTY_HEADER; HEADERS_MAX];
    let mut response = httparse::Response::new(&mut slots);
    match response.parse(buf) {
        Ok(httparse::Status::Complete(len)) => Ok(Some(Head {
            status: response.code.unwrap_or(0),
            len,
            headers: response.headers.iter().map(|h| (h.name, h.value)).collect(),
        })),
        Ok(httparse::Status::Partial) if buf.len() >= HEAD_MAX => Err(format!(
            "no end of the response head in its first {HEAD_MAX} bytes"
        )),
        Ok(httparse::Status::Partial) => Ok(None),
        Err(e) => Err(format!("a malformed response head: {e}")),
    }
}

/// What the server agreed to.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Agreement {
    pub subprotocol: Option<String>,
    pub deflate: Option<Agreed>,
}

/// Checks a 101 response against the offer (§4.2.2, §4.1 items 5-6; RFC 7692 §5).
pub(crate) fn check(head: &Head<'_>, offer: &Offer<'_>, key: &str) -> Result<Agreement, String> {
    let values = |name: &'static str| {
        head.headers
            .iter()
            .filter(move |(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| std::str::from_utf8(v).unwrap_or("\u{fffd}").trim())
    };
    if !values("upgrade").any(|v| v.eq_ignore_ascii_case("websocket")) {
        return Err("no `Upgrade: websocket` in the 101 response".into());
    }
    if !values("connection").any(|v| {
        v.split(',')
            .any(|token| token.trim().eq_ignore_ascii_case("upgrade"))
    }) {
        return Err("no `Connection: Upgrade` in the 101 response".into());
    }
    let expected = accept_key(key);
    match values("sec-websocket-accept").next() {
        Some(v) if v == expected => {}
        Some(v) => return Err(format!("Sec-WebSocket-Accept {v:?}, expected {expected:?}")),
        None => return Err("no Sec-WebSocket-Accept in the 101 response".into()),
    }
    let subprotocol = match values("sec-websocket-protocol").next() {
        Some(p) if offer.subprotocols.iter().any(|o| o == p) => Some(p.to_string()),
        Some(p) => {
            return Err(format!(
                "the server chose subprotocol {p:?}, which was not offered"
            ))
        }
        None => None,
    };
    let deflate = deflate::parse_answer(values("sec-websocket-extensions"))?;
    if deflate.is_some() && !offer.deflate {
        return Err("the server accepted permessage-deflate, which was not offered".into());
    }
    Ok(Agreement {
        subprotocol,
        deflate,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const KEY: &str = "dGhlIHNhbXBsZSBub25jZQ==";

    fn offer<'a>(headers: &'a [(String, Vec<u8>)], subprotocols: &'a [String]) -> Offer<'a> {
        Offer {
            authority: "server.example.com:80",
            target: "/chat?x=1",
            headers,
            subprotocols,
            deflate: true,
        }
    }

    /// RFC 6455 §1.3's example key and accept.
    #[test]
    fn the_accept_key_is_the_rfcs() {
        assert_eq!(accept_key(KEY), "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=");
        assert_eq!(key([0; 16]), "AAAAAAAAAAAAAAAAAAAAAA==");
    }

    #[test]
    fn the_request_carries_the_offer_and_the_plans_headers() {
        let headers = vec![("X-Token".to_string(), b"secret".to_vec())];
        let subprotocols = vec!["chat.v1".to_string(), "chat.v2".to_string()];
        let mut out = Vec::new();
        write_request(&offer(&headers, &subprotocols), KEY, &mut out);
        let text = String::from_utf8(out).unwrap();
        assert_eq!(
            text,
            "GET /chat?x=1 HTTP/1.1\r\nHost: server.example.com:80\r\nConnection: Upgrade\r\n\
             Upgrade: websocket\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: \
             dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Protocol: chat.v1, chat.v2\r\n\
             Sec-WebSocket-Extensions: permessage-deflate\r\nX-Token: secret\r\n\r\n"
        );
        let own_host = vec![("host".to_string(), b"virtual".to_vec())];
        let mut out = Vec::new();
        write_request(&offer(&own_host, &[]), KEY, &mut out);
        let text = String::from_utf8(out).unwrap();
        assert!(!text.contains("Host: server"), "{text}");
        assert!(text.contains("host: virtual\r\n"), "{text}");
    }

    #[test]
    fn a_good_answer_is_agreed_and_a_bad_one_says_why() {
        let subprotocols = vec!["chat.v1".to_string()];
        let o = offer(&[], &subprotocols);
        let good = "HTTP/1.1 101 Switching Protocols\r\nUpgrade: WebSocket\r\nConnection: keep-alive, Upgrade\r\n\
                    Sec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=\r\nSec-WebSocket-Protocol: chat.v1\r\n\
                    Sec-WebSocket-Extensions: permessage-deflate; server_max_window_bits=12\r\n\r\n\x01\x00";
        let head = parse_head(good.as_bytes()).unwrap().unwrap();
        assert_eq!(head.status, 101);
        assert_eq!(
            head.len,
            good.len() - 2,
            "the frame after the head is not part of it"
        );
        assert_eq!(
            check(&head, &o, KEY),
            Ok(Agreement {
                subprotocol: Some("chat.v1".into()),
                deflate: Some(Agreed::default())
            })
        );
        let cases = [
            ("Upgrade: h2c", "Upgrade: websocket"),
            ("Connection: close", "Connection: Upgrade"),
            ("Sec-WebSocket-Accept: wrong", "expected"),
            ("Sec-WebSocket-Protocol: chat.v9", "not offered"),
            ("Sec-WebSocket-Extensions: x-custom", "not offered"),
        ];
        for (line, reason) in cases {
            let name = line.split(':').next().unwrap();
            let mut bad: String = good
                .lines()
                .filter(|l| !l.starts_with(name) && !l.starts_with('\u{1}'))
                .map(|l| format!("{l}\r\n"))
                .collect();
            bad.truncate(bad.len() - 2);
            bad.push_str(line);
            bad.push_str("\r\n\r\n");
            let head = parse_head(bad.as_bytes()).unwrap().unwrap();
            let err = check(&head, &o, KEY).unwrap_err();
            assert!(err.contains(reason), "{line}: {err}");
        }
        let no_deflate = Offer {
            deflate: false,
            ..offer(&[], &subprotocols)
        };
        let head = parse_head(good.as_bytes()).unwrap().unwrap();
        assert!(check(&head, &no_deflate, KEY)
            .unwrap_err()
            .contains("not offered"));
    }

    #[test]
    fn a_head_is_read_whole_within_its_limit() {
        assert!(parse_head(b"HTTP/1.1 101 Switching").unwrap().is_none());
        let endless = format!("HTTP/1.1 101 OK\r\n{}", "X-A: b\r\n".repeat(3000));
        assert!(parse_head(endless.as_bytes()).is_err());
        assert!(parse_head(b"garbage\r\n\r\n").is_err());
        let refused = parse_head(b"HTTP/1.1 403 Forbidden\r\nContent-Length: 0\r\n\r\n")
            .unwrap()
            .unwrap();
        assert_eq!(refused.status, 403);
    }
}
