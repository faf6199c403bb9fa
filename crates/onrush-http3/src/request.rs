//! A request as h3 takes it: the `http::Request` head, and the body sent on the stream in
//! pieces (a file in 64 KiB reads, never whole in memory).

use std::io::Read;
use std::path::Path;

use bytes::{Bytes, BytesMut};
use http::header::{HeaderName, HeaderValue};
use http::uri::{Authority, PathAndQuery, Scheme};
use onrush_http::{Error, ErrorKind, Piece, Request, RequestBody};

type Stream = h3::client::RequestStream<h3_quinn::BidiStream<Bytes>, Bytes>;

/// Files are read in pieces of this size.
const FILE_CHUNK: usize = 64 * 1024;

/// Header fields HTTP/3 forbids (RFC 9114 §4.2), and `Host`, which becomes `:authority`.
pub(crate) fn is_connection_specific(name: &[u8], value: &[u8]) -> bool {
    const FORBIDDEN: [&[u8]; 6] = [
        b"connection",
        b"keep-alive",
        b"proxy-connection",
        b"transfer-encoding",
        b"upgrade",
        b"host",
    ];
    FORBIDDEN.iter().any(|f| name.eq_ignore_ascii_case(f))
        || (name.eq_ignore_ascii_case(b"te") && !value.eq_ignore_ascii_case(b"trailers"))
}

/// The `http::Request` of `req` (head only) and the length of its body; `authority` is
/// replaced when the request's Host differs from it.
pub(crate) fn build(
    req: &Request<'_>,
    authority: &mut Authority,
) -> Result<(http::Request<()>, u64), Error> {
    let invalid = |what: &'static str| Error::new(ErrorKind::Io, what);
    if authority.as_str().as_bytes() != req.host {
        *authority = Authority::try_from(req.host)
            .map_err(|_| invalid("the Host is not a valid HTTP/3 :authority"))?;
    }
    let path = PathAndQuery::try_from(req.target)
        .map_err(|_| invalid("the request target is not a valid path and query"))?;
    let uri = http::Uri::builder()
        .scheme(Scheme::HTTPS)
        .authority(authority.clone())
        .path_and_query(path)
        .build()
        .map_err(|_| invalid("the request target is not a valid URI"))?;
    let method = http::Method::from_bytes(req.method.as_bytes())
        .map_err(|_| invalid("the method is not a valid HTTP method"))?;
    let mut request = http::Request::new(());
    *request.method_mut() = method;
    *request.uri_mut() = uri;
    *request.version_mut() = http::Version::HTTP_3;
    let headers = request.headers_mut();
    for line in req.headers.split(|b| *b == b'\n') {
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        let Some(colon) = line.iter().position(|b| *b == b':') else {
            continue;
        };
        let (name, value) = (line[..colon].trim_ascii(), line[colon + 1..].trim_ascii());
        if is_connection_specific(name, value) {
            continue;
        }
        let name = HeaderName::from_bytes(name)
            .map_err(|_| invalid("a request header name is not valid in HTTP/3"))?;
        let value = HeaderValue::from_bytes(value)
            .map_err(|_| invalid("a request header value is not valid"))?;
        headers.append(name, value);
    }
    let len = match req.body {
        RequestBody::Empty => 0,
        RequestBody::Bytes(b) => b.len() as u64,
        RequestBody::File(path) => std::fs::metadata(path)
            .map_err(|e| file_error(path, e))?
            .len(),
        RequestBody::Multipart(m) => {
            let value = HeaderValue::from_str(m.content_type())
                .map_err(|_| invalid("the multipart content type is not valid"))?;
            headers.insert(http::header::CONTENT_TYPE, value);
            m.pieces()
                .map(|p| match p {
                    Piece::Bytes(b) => b.len() as u64,
                    Piece::File { len, .. } => len,
                })
                .sum()
        }
    };
    let has_body =
        !matches!(req.body, RequestBody::Empty) || matches!(req.method, "POST" | "PUT" | "PATCH");
    if has_body {
        headers.insert(http::header::CONTENT_LENGTH, HeaderValue::from(len));
    }
    Ok((request, len))
}

fn file_error(path: &Path, e: std::io::Error) -> Error {
    Error::new(
        ErrorKind::Io,
        format!("could not read the body file {}: {e}", path.display()),
    )
}

/// Sends the whole of `body` (`len` bytes) on `stream` and finishes its sending side. Errors:
/// `Err(Ok(_))` the body's own (a file), `Err(Err(_))` the stream's.
pub(crate) async fn send_body(
    stream: &mut Stream,
    body: RequestBody<'_>,
    len: u64,
) -> Result<(), Result<Error, h3::error::StreamError>> {
    if len > 0 {
        match body {
            RequestBody::Empty => {}
            RequestBody::Bytes(b) => stream
                .send_data(Bytes::copy_from_slice(b))
                .await
                .map_err(Err)?,
            RequestBody::File(path) => send_file(stream, path, None).await?,
            RequestBody::Multipart(m) => {
                for piece in m.pieces() {
                    match piece {
                        Piece::Bytes([]) => {}
                        Piece::Bytes(b) => stream
                            .send_data(Bytes::copy_from_slice(b))
                            .await
                            .map_err(Err)?,
                        Piece::File { path, len } => send_file(stream, path, Some(len)).await?,
                    }
                }
            }
        }
    }
    stream.finish().await.map_err(Err)
}

/// Streams a file; with `expected`, a file whose size changed fails before its first byte.
async fn send_file(
    stream: &mut Stream,
    path: &Path,
    expected: Option<u64>,
) -> Result<(), Result<Error, h3::error::StreamError>> {
    let mut file = std::fs::File::open(path).map_err(|e| Ok(file_error(path, e)))?;
    if let Some(len) = expected {
        let now = file.metadata().map_err(|e| Ok(file_error(path, e)))?.len();
        if now != len {
            return Err(Ok(Error::new(
                ErrorKind::Io,
                format!(
                    "the body file {} changed size since the body was built ({len} bytes then, \
                     {now} now)",
                    path.display()
                ),
            )));
        }
    }
    loop {
        let mut chunk = BytesMut::zeroed(FILE_CHUNK);
        let n = file.read(&mut chunk).map_err(|e| Ok(file_error(path, e)))?;
        if n == 0 {
            return Ok(());
        }
        chunk.truncate(n);
        stream.send_data(chunk.freeze()).await.map_err(Err)?;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn connection_specific_headers_are_left_out() {
        assert!(is_connection_specific(b"Connection", b"close"));
        assert!(is_connection_specific(b"Host", b"example.com"));
        assert!(is_connection_specific(b"TE", b"gzip"));
        assert!(!is_connection_specific(b"te", b"trailers"));
        assert!(!is_connection_specific(b"content-type", b"text/plain"));
    }

    #[test]
    fn a_request_becomes_an_https_head_with_its_headers() {
        let mut authority = Authority::from_static("a.test:443");
        let req = Request {
            method: "POST",
            target: b"/x?y=1",
            host: b"b.test:8443",
            headers: b"Content-Type: text/plain\r\nConnection: close\r\nX-A: 1\r\n",
            body: RequestBody::Bytes(b"hello"),
            close: true,
        };
        let (head, len) = build(&req, &mut authority).unwrap();
        assert_eq!(len, 5);
        assert_eq!(head.uri().to_string(), "https://b.test:8443/x?y=1");
        assert_eq!(authority.as_str(), "b.test:8443");
        assert_eq!(head.headers()["content-length"], "5");
        assert_eq!(head.headers()["x-a"], "1");
        assert!(head.headers().get("connection").is_none());
    }
}
