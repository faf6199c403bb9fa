//! What every handler answers with: the per-connection state a handler sees ([`Conn`]), the
//! response type and its builders (text, JSON, a 400 with a sentence), and small request
//! helpers. Its own module so that the handlers (`forms`, `login`, `scenario`) and the router
//! (`routes`) both use it without importing each other.

use std::collections::BTreeMap;
use std::sync::Arc;

use bytes::Bytes;
use http_body_util::BodyExt;
use hyper::body::Body;
use hyper::header::{HeaderValue, CONTENT_TYPE};
use hyper::{Response, StatusCode};

use crate::body::ResponseBody;
use crate::stats::{ConnCounter, LoginEvent, Shared};
use crate::tls::TlsInfo;

pub(crate) const TEXT: HeaderValue = HeaderValue::from_static("text/plain; charset=utf-8");
pub(crate) const JSON: HeaderValue = HeaderValue::from_static("application/json");
pub(crate) const HTML: HeaderValue = HeaderValue::from_static("text/html; charset=utf-8");
pub(crate) const XML: HeaderValue = HeaderValue::from_static("application/xml");

/// What a connection's service needs: the server's shared state, the connection's counter and,
/// over TLS, what its handshake negotiated (for `/tls`).
pub(crate) struct Conn {
    pub(crate) shared: Arc<Shared>,
    pub(crate) counter: ConnCounter,
    pub(crate) tls: Option<TlsInfo>,
    /// `Alt-Svc: h3=":PORT"` for the HTTP/1.1 and HTTP/2 responses of a TLS connection when
    /// the server answers HTTP/3 too; `None` otherwise.
    pub(crate) alt_svc: Option<HeaderValue>,
}

impl Conn {
    /// Counts a login event in this connection's shard.
    pub(crate) fn count(&self, event: LoginEvent) {
        self.shared.count_login(self.counter.shard(), event);
    }
}

pub(crate) type Resp = Response<ResponseBody>;

/// The request headers by lower-case name, repeated ones joined with `", "`.
pub(crate) fn header_map(parts: &hyper::http::request::Parts) -> BTreeMap<&str, String> {
    let mut headers: BTreeMap<&str, String> = BTreeMap::new();
    for (name, value) in &parts.headers {
        let value = String::from_utf8_lossy(value.as_bytes());
        headers
            .entry(name.as_str())
            .and_modify(|v| {
                v.push_str(", ");
                v.push_str(&value);
            })
            .or_insert_with(|| value.into_owned());
    }
    headers
}

/// What a request body is to the handlers: hyper's `Incoming` (HTTP/1.1, HTTP/2) or an HTTP/3
/// request stream's receiving half ([`crate::h3::H3Body`]). Handlers are generic over it, so
/// HTTP/1.1 and HTTP/2 compile to what they were before HTTP/3 existed.
pub(crate) trait ReqBody: Body<Data = Bytes, Error = Self::Fault> + Unpin + Send {
    type Fault: std::error::Error + Send + Sync + 'static;
}

impl<B> ReqBody for B
where
    B: Body<Data = Bytes> + Unpin + Send,
    B::Error: std::error::Error + Send + Sync + 'static,
{
    type Fault = B::Error;
}

/// Discards a request body the endpoint does not need, so hyper can reuse the connection.
pub(crate) async fn drain(mut body: impl ReqBody) {
    if body.is_end_stream() {
        return;
    }
    while let Some(Ok(_)) = body.frame().await {}
}

pub(crate) fn query_param<'a>(query: Option<&'a str>, name: &str) -> Option<&'a str> {
    query?.split('&').find_map(|pair| {
        let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
        (k == name).then_some(v)
    })
}

pub(crate) fn ok(content_type: HeaderValue, body: ResponseBody) -> Resp {
    let mut resp = Response::new(body);
    resp.headers_mut().insert(CONTENT_TYPE, content_type);
    resp
}

pub(crate) fn text(status: StatusCode, msg: String) -> Resp {
    let mut resp = ok(TEXT, ResponseBody::bytes(Bytes::from(msg)));
    *resp.status_mut() = status;
    resp
}

pub(crate) fn bad_request(msg: String) -> Resp {
    text(StatusCode::BAD_REQUEST, msg)
}

pub(crate) fn json(doc: &serde_json::Value) -> Resp {
    let mut out = serde_json::to_vec(doc).unwrap_or_default();
    out.push(b'\n');
    ok(JSON, ResponseBody::bytes(Bytes::from(out)))
}

pub(crate) fn hex(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut s = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        s.push(DIGITS[usize::from(b >> 4)] as char);
        s.push(DIGITS[usize::from(b & 15)] as char);
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use sha2::{Digest, Sha256};

    #[test]
    fn query_params() {
        assert_eq!(query_param(Some("a=1&chunked=1"), "chunked"), Some("1"));
        assert_eq!(query_param(Some("chunked"), "chunked"), Some(""));
        assert_eq!(query_param(Some("every=5"), "for"), None);
        assert_eq!(query_param(None, "for"), None);
    }

    #[test]
    fn hex_of_sha256_of_nothing() {
        assert_eq!(
            hex(&Sha256::digest(b"")),
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
        );
    }
}
