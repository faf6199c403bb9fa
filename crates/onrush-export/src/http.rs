//! A tiny blocking HTTP/1.1 client (one POST per connection, `Connection: close`) and the
//! request-head reader of the `/metrics` server. Both bound every wait with time-outs and every
//! read with a size cap.

use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpStream, ToSocketAddrs};
use std::time::{Duration, Instant};

/// Largest response (head and body) read from a server; the rest is ignored.
const MAX_RESPONSE: usize = 64 * 1024;

/// An `http://` URL split for a request.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct HttpUrl {
    /// Host name or address, without brackets.
    pub host: String,
    pub port: u16,
    /// The `Host` header value (`host[:port]`, brackets kept for IPv6).
    pub authority: String,
    /// Request target: path and query, starting with `/`.
    pub target: String,
}

impl HttpUrl {
    pub fn parse(url: &str) -> Result<HttpUrl, String> {
        let rest = match url.split_once("://") {
            Some((scheme, rest)) if scheme.eq_ignore_ascii_case("http") => rest,
            Some((scheme, _)) if scheme.eq_ignore_ascii_case("https") => {
                return Err(
                    "https is not supported: use http:// (e.g. through a local proxy)".into(),
                )
            }
            _ => return Err("expected http://HOST:PORT/PATH?QUERY".into()),
        };
        let (authority, target) = match rest.find(['/', '?', '#']) {
            Some(i) => (&rest[..i], &rest[i..]),
            None => (rest, ""),
        };
        let target = target.split('#').next().unwrap_or("");
        if authority.contains('@') {
            return Err("credentials in the URL are not supported: use a token, or u=/p= query parameters (v1)".into());
        }
        let (host, port) = if let Some(v6) = authority.strip_prefix('[') {
            let (h, after) = v6.split_once(']').ok_or("unterminated [IPv6] address")?;
            match after {
                "" => (h, None),
                p => (
                    h,
                    Some(p.strip_prefix(':').ok_or("expected :PORT after ]")?),
                ),
            }
        } else {
            match authority.rsplit_once(':') {
                Some((h, p)) => (h, Some(p)),
                None => (authority, None),
            }
        };
        if host.is_empty() {
            return Err("no host".into());
        }
        let port = match port {
            None => 80,
            Some(p) => p
                .parse::<u16>()
                .ok()
                .filter(|&p| p != 0)
                .ok_or_else(|| format!("invalid port {p:?}"))?,
        };
        if target.is_empty() || target.starts_with('?') || target == "/" {
            return Err(
                "the URL needs the write endpoint, e.g. http://127.0.0.1:8086/write?db=onrush (v1) \
                 or http://127.0.0.1:8086/api/v2/write?org=ORG&bucket=BUCKET (v2)"
                    .into(),
            );
        }
        if target.bytes().any(|b| b <= b' ' || b == 0x7f) {
            return Err(
                "spaces or control characters in the path or query (percent-encode them)".into(),
            );
        }
        Ok(HttpUrl {
            host: host.to_string(),
            port,
            authority: authority.to_string(),
            target: target.to_string(),
        })
    }

    /// The value of query parameter `name` (not percent-decoded), if present.
    pub fn query_param(&self, name: &str) -> Option<&str> {
        let q = self.target.split_once('?')?.1;
        q.split('&').find_map(|kv| {
            let (k, v) = kv.split_once('=').unwrap_or((kv, ""));
            (k == name).then_some(v)
        })
    }
}

/// Status and the beginning of the body of a response.
#[derive(Debug)]
pub(crate) struct Response {
    pub status: u16,
    pub body: Vec<u8>,
}

/// Opens a connection to `url`, trying each resolved address with `timeout`.
fn connect(url: &HttpUrl, timeout: Duration) -> io::Result<TcpStream> {
    let addrs: Vec<SocketAddr> = (url.host.as_str(), url.port).to_socket_addrs()?.collect();
    let mut last = io::Error::new(io::ErrorKind::NotFound, "no address for the host");
    for a in addrs {
        match TcpStream::connect_timeout(&a, timeout) {
            Ok(s) => return Ok(s),
            Err(e) => last = e,
        }
    }
    Err(last)
}

/// POSTs `body` to `url` on a new connection (`Connection: close`) and reads the status line
/// and up to 64 KiB of the response. Every step is bounded by `timeout`, and the whole exchange
/// by twice that plus the time to send the body.
pub(crate) fn post(
    url: &HttpUrl,
    extra_headers: &[(&str, &str)],
    content_type: &str,
    body: &[u8],
    timeout: Duration,
) -> io::Result<Response> {
    let mut s = connect(url, timeout)?;
    s.set_write_timeout(Some(timeout))?;
    s.set_read_timeout(Some(timeout))?;
    let _ = s.set_nodelay(true);
    let mut head = format!(
        "POST {} HTTP/1.1\r\nHost: {}\r\nUser-Agent: onrush/{}\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\nConnection: close\r\n",
        url.target,
        url.authority,
        env!("CARGO_PKG_VERSION"),
        body.len()
    );
    for (k, v) in extra_headers {
        head.push_str(k);
        head.push_str(": ");
        head.push_str(v);
        head.push_str("\r\n");
    }
    head.push_str("\r\n");
    s.write_all(head.as_bytes())?;
    s.write_all(body)?;
    s.flush()?;
    read_response(&mut s, Instant::now() + timeout * 2)
}

fn read_response(s: &mut TcpStream, deadline: Instant) -> io::Result<Response> {
    let mut buf = Vec::with_capacity(1024);
    let mut chunk = [0u8; 4096];
    loop {
        if Instant::now() >= deadline {
            return Err(io::Error::new(io::ErrorKind::TimedOut, "response too slow"));
        }
        let n = s.read(&mut chunk)?;
        if n == 0 {
            break;
        }
        buf.extend_from_slice(&chunk[..n]);
        let mut headers = [httparse::EMPTY_HEADER; 64];
        let mut resp = httparse::Response::new(&mut headers);
        match resp.parse(&buf) {
            Ok(httparse::Status::Complete(head_len)) => {
                let status = resp.code.unwrap_or(0);
                if (100..200).contains(&status) {
                    // An interim response (100 Continue): skip it and read on.
                    buf.drain(..head_len);
                    continue;
                }
                let content_length = resp
                    .headers
                    .iter()
                    .find(|h| h.name.eq_ignore_ascii_case("content-length"))
                    .and_then(|h| {
                        std::str::from_utf8(h.value)
                            .ok()?
                            .trim()
                            .parse::<usize>()
                            .ok()
                    });
                let no_body = status == 204 || status == 304;
                let want = if no_body { Some(0) } else { content_length };
                // Read the body (capped) until its length, the connection's end or the cap.
                while want.is_none_or(|w| buf.len() - head_len < w)
                    && buf.len() < MAX_RESPONSE
                    && Instant::now() < deadline
                {
                    match s.read(&mut chunk) {
                        Ok(0) => break,
                        Ok(n) => buf.extend_from_slice(&chunk[..n]),
                        Err(_) => break, // the status is what matters
                    }
                }
                let end = want.map_or(buf.len(), |w| (head_len + w).min(buf.len()));
                return Ok(Response {
                    status,
                    body: buf[head_len..end].to_vec(),
                });
            }
            Ok(httparse::Status::Partial) if buf.len() < MAX_RESPONSE => {}
            Ok(httparse::Status::Partial) => {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidData,
                    "response head too large",
                ))
            }
            Err(e) => {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidData,
                    format!("invalid HTTP response: {e}"),
                ))
            }
        }
    }
    Err(io::Error::new(
        io::ErrorKind::UnexpectedEof,
        "connection closed before a complete response head",
    ))
}

/// Reads a request head (up to `max` bytes) from `s`. `Ok(None)`: the peer closed first. The
/// bytes read may go on past the head (the start of a body). The `/metrics` server's and the
/// live page's (onrush-live) reader.
pub fn read_request_head(
    s: &mut TcpStream,
    max: usize,
    deadline: Instant,
) -> io::Result<Option<Vec<u8>>> {
    let mut buf = Vec::with_capacity(512);
    let mut chunk = [0u8; 1024];
    loop {
        if Instant::now() >= deadline {
            return Err(io::Error::new(io::ErrorKind::TimedOut, "request too slow"));
        }
        let n = s.read(&mut chunk)?;
        if n == 0 {
            return Ok(None);
        }
        buf.extend_from_slice(&chunk[..n]);
        if buf.windows(4).any(|w| w == b"\r\n\r\n") || buf.windows(2).any(|w| w == b"\n\n") {
            return Ok(Some(buf));
        }
        if buf.len() > max {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                "request head too large",
            ));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls() {
        let u = HttpUrl::parse("http://127.0.0.1:8086/write?db=onrush&precision=ms").unwrap();
        assert_eq!((u.host.as_str(), u.port), ("127.0.0.1", 8086));
        assert_eq!(u.authority, "127.0.0.1:8086");
        assert_eq!(u.target, "/write?db=onrush&precision=ms");
        assert_eq!(u.query_param("db"), Some("onrush"));
        assert_eq!(u.query_param("precision"), Some("ms"));
        assert_eq!(u.query_param("bucket"), None);
        let u = HttpUrl::parse("HTTP://[::1]:9/api/v2/write?org=o&bucket=b#frag").unwrap();
        assert_eq!((u.host.as_str(), u.port), ("::1", 9));
        assert_eq!(u.authority, "[::1]:9");
        assert_eq!(u.target, "/api/v2/write?org=o&bucket=b");
        let u = HttpUrl::parse("http://influx/write?db=x").unwrap();
        assert_eq!((u.host.as_str(), u.port), ("influx", 80));
        for bad in [
            "https://h:1/write",
            "h:1/write",
            "http://h:1",
            "http://h:1/",
            "http://h:1?db=x",
            "http://:1/write",
            "http://h:0/write",
            "http://h:x/write",
            "http://u:p@h:1/write",
            "http://[::1/write",
            "http://h:1/wr ite",
        ] {
            assert!(HttpUrl::parse(bad).is_err(), "{bad}");
        }
    }
}
