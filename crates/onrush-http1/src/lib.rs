//! onrush's HTTP/1.1 client connection: the request/response loop on the load tool's hot path.
//!
//! Why hand-written framing on `httparse` rather than hyper: measured on the project's machines,
//! a tokio `current_thread` + `httparse` loop costs ~3,200 user instructions per keep-alive
//! request against hyper's ~14,400 (see `shared/stack.md`); onrush promises that the load tool
//! spends almost no CPU per request. The price is that framing is ours to get right, hence the
//! sans-I/O `decode` module, tested with every split of the input, and the differential tests
//! against hyper's server.
//!
//! Steady-state cost per request on a kept-alive connection: no heap allocation, one `write`
//! syscall for the head and a small body, one `read` syscall when the response fits the read
//! buffer (16 KiB, grown once to 64 KiB only for a head that needs it).
//!
//! See README.md for what is and isn't handled.

mod any;
mod conn;
pub mod cookies;
mod decode;
mod decompress;
mod encode;
mod error;
mod form;
mod multipart;
mod session_store;
mod throttle;
pub mod tls;

pub use any::{connect_any, AnyConnection};
pub use conn::{connect, connect_tcp, ConnectOptions, Connection};
pub use decompress::{Decompress, Encoding};
pub use encode::{push_header, InvalidHeader};
pub use error::{Error, ErrorKind};
pub use form::{form_urlencode, percent_encode_component};
pub use multipart::{Multipart, Part, Piece};
pub use throttle::{connect_throttled, Throttled, ThrottledConnection};
pub use tls::{cipher_suite_names, ClientIdentity};
pub use tls::{
    connect_tls, connect_tls_stream, connect_tls_throttled, HandshakeKind, SessionMode,
    ThrottledTlsConnection, TlsClient, TlsConfigError, TlsConnection, TlsFailure, TlsOptions,
    TlsSession, TlsVersion,
};

use std::path::Path;
use std::time::Instant;

/// The largest response head (status line + headers, and each interim 1xx head) accepted.
pub const MAX_HEAD_BYTES: usize = 64 * 1024;

/// The most header lines in one response head; more is reported as a bad response.
pub const MAX_HEADERS: usize = 64;

/// The body of a request.
#[derive(Debug, Clone, Copy)]
pub enum RequestBody<'a> {
    /// No body. `POST`, `PUT` and `PATCH` still get `Content-Length: 0` (RFC 9110 §8.6: a user
    /// agent should send it when the method defines a meaning for content; some servers answer
    /// 411 without it). Other methods get no Content-Length.
    Empty,
    /// An in-memory body, sent with `Content-Length: len` (also when empty).
    Bytes(&'a [u8]),
    /// A file streamed from disk in 64 KiB reads, with `Content-Length` from its metadata.
    File(&'a Path),
    /// A `multipart/form-data` body built once with [`Multipart::new`]: text fields and files,
    /// files streamed from disk in 64 KiB reads like `File`. The crate adds the
    /// `Content-Type: multipart/form-data; boundary=...` and `Content-Length` headers (don't put
    /// a Content-Type in `Request::headers`). A file whose size changed since
    /// `Multipart::new` fails the request (kind `Io`) before anything is sent.
    Multipart(&'a Multipart),
}

/// One request, borrowed from the caller's (reused) buffers.
#[derive(Debug, Clone, Copy)]
pub struct Request<'a> {
    /// The method, upper case: "GET", "POST", ...
    pub method: &'a str,
    /// Origin-form target: path and query, e.g. `b"/bytes/1024?x=1"`.
    pub target: &'a [u8],
    /// The `Host` header value, e.g. `b"127.0.0.1:8080"`.
    pub host: &'a [u8],
    /// Zero or more preformatted `Name: value\r\n` lines, built with [`push_header`].
    pub headers: &'a [u8],
    /// The body.
    pub body: RequestBody<'a>,
    /// Send `Connection: close`: the server will close after the response, which is then
    /// reported with `keep_alive == false`.
    pub close: bool,
}

/// Receives the decoded (de-chunked) body bytes of a response, as they arrive.
///
/// Chunks are slices of the connection's read buffer: a sink that needs the bytes later must
/// copy them. Bodies are never accumulated by the connection itself, so a 100 MiB body costs
/// no more memory than a 2-byte one.
pub trait BodySink {
    /// Called with each piece of the body, in order; never with an empty slice.
    fn data(&mut self, chunk: &[u8]);

    /// Called once per final (non-1xx) response, after its head was parsed and before any of
    /// its body: the status and the header lines in the order received (repeated headers such
    /// as `Set-Cookie` appear once each). Interim 1xx heads are not passed. The headers borrow
    /// the connection's read buffer: copy what you keep. The default does nothing.
    #[inline]
    fn head(&mut self, status: u16, headers: &Headers<'_>) {
        let _ = (status, headers);
    }

    /// Called once when the body of the final response is complete (also when it has none),
    /// before `send` returns successfully; not called when the response fails. The default
    /// does nothing.
    #[inline]
    fn end(&mut self) {}
}

/// The header lines of a response head, as passed to [`BodySink::head`]: a view over the
/// parsed head (no copy, no allocation).
#[derive(Clone, Copy)]
pub struct Headers<'a> {
    raw: &'a [httparse::Header<'a>],
}

impl<'a> Headers<'a> {
    /// A view over parsed header lines; also how another protocol (HTTP/2) hands its decoded
    /// header fields to a [`BodySink`].
    pub fn new(raw: &'a [httparse::Header<'a>]) -> Self {
        Headers { raw }
    }

    /// All header lines, `(name, value)`, in the order received. Names are as sent (compare
    /// them case-insensitively).
    pub fn iter(&self) -> impl Iterator<Item = (&'a [u8], &'a [u8])> + 'a {
        self.raw.iter().map(|h| (h.name.as_bytes(), h.value))
    }

    /// The value of the first header named `name` (ASCII case-insensitive).
    pub fn get(&self, name: &str) -> Option<&'a [u8]> {
        self.get_all(name).next()
    }

    /// The values of every header named `name` (ASCII case-insensitive), in order.
    pub fn get_all<'n>(&self, name: &'n str) -> impl Iterator<Item = &'a [u8]> + 'n
    where
        'a: 'n,
    {
        self.raw
            .iter()
            .filter(move |h| h.name.eq_ignore_ascii_case(name))
            .map(|h| h.value)
    }

    /// The number of header lines.
    pub fn len(&self) -> usize {
        self.raw.len()
    }

    /// Whether the head has no header lines.
    pub fn is_empty(&self) -> bool {
        self.raw.is_empty()
    }
}

impl std::fmt::Debug for Headers<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list()
            .entries(
                self.iter()
                    .map(|(n, v)| (String::from_utf8_lossy(n), String::from_utf8_lossy(v))),
            )
            .finish()
    }
}

/// A sink that throws the body away: the default on the hot path.
#[derive(Debug, Clone, Copy, Default)]
pub struct Discard;

impl BodySink for Discard {
    #[inline]
    fn data(&mut self, _chunk: &[u8]) {}
}

/// Collects the body (for extractors and tests). Grows with the body: not for the hot path.
impl BodySink for Vec<u8> {
    fn data(&mut self, chunk: &[u8]) {
        self.extend_from_slice(chunk);
    }
}

impl<T: BodySink + ?Sized> BodySink for &mut T {
    #[inline]
    fn data(&mut self, chunk: &[u8]) {
        (**self).data(chunk)
    }
    #[inline]
    fn head(&mut self, status: u16, headers: &Headers<'_>) {
        (**self).head(status, headers)
    }
    #[inline]
    fn end(&mut self) {
        (**self).end()
    }
}

/// What the connection learned about one response; its body went to the sink.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Response {
    /// Status code of the final (non-1xx) response.
    pub status: u16,
    /// Bytes of the response heads (status line, headers, blank line), interim 1xx heads included.
    pub head_bytes: u64,
    /// Decoded body bytes, as given to the sink (chunk framing and trailers not counted).
    pub body_bytes: u64,
    /// Whether the connection can carry the next request. False after `Connection: close`
    /// (sent or received), an HTTP/1.0 response without `Connection: keep-alive`, a body
    /// delimited by the connection closing, or a response with both Transfer-Encoding and
    /// Content-Length (a smuggling signature).
    pub keep_alive: bool,
    /// When the first byte of the response arrived (the read that returned it completed).
    pub first_byte_at: Instant,
    /// Bytes written for the request: head and body.
    pub bytes_out: u64,
    /// Bytes read for the response as they were on the wire: heads, body, chunk framing, trailers.
    pub bytes_in: u64,
}
