//! What onrush's HTTP/1.1 (onrush-http1) and HTTP/2 (onrush-http2) clients share, so that the
//! engine runs the same steps, sinks, extractors and failure classes over both versions and
//! neither protocol crate depends on the other:
//!
//! - the request and response types: [`Request`], [`RequestBody`], [`BodySink`] (with
//!   [`Discard`] and `Vec<u8>`), [`Headers`], [`Response`];
//! - errors classified the way the engine counts failures: [`Error`], [`ErrorKind`], and why
//!   TLS failed ([`TlsFailure`]);
//! - the transports beneath both protocols: TCP with [`ConnectOptions`] ([`connect_tcp`]:
//!   source addresses, reset-on-close, deadlines), a per-connection bandwidth cap
//!   ([`Throttled`]), and TLS ([`tls`]: rustls with per-VU / shared / no session reuse, mTLS
//!   with many identities, ALPN; [`connect_tls_stream`]);
//! - request building blocks: header lines ([`push_header`]), `multipart/form-data` bodies
//!   streamed from disk ([`Multipart`]), form and percent encoding ([`form_urlencode`]);
//! - response building blocks: streaming decompression ([`Decompress`]) and the RFC 6265
//!   cookie jar ([`cookies`]).
//!
//! The HTTP/1.1 framing and its `Connection` are onrush-http1's, the HTTP/2 framing and
//! `H2Connection` onrush-http2's. onrush-http1 re-exports everything here at the paths it
//! always had (`onrush_http1::Request`, `onrush_http1::tls::TlsClient`, ...), so code written
//! against it keeps compiling.
//!
//! Certificates and keys are read by onrush-pki (PEM and PKCS#12), which onrush-plan also uses
//! to check identities when a plan loads.

mod connect;
pub mod cookies;
mod decompress;
mod error;
mod form;
mod header;
mod multipart;
mod session_store;
mod throttle;
pub mod tls;

pub use connect::{
    connect_tcp, refuse_throttle, start_tcp, ConnectOptions, Connecting, TcpConnect,
};
pub use decompress::{Decompress, Encoding};
pub use error::{Error, ErrorKind, IoOp};
pub use form::{form_urlencode, percent_encode_component};
pub use header::{is_token, push_header, InvalidHeader};
pub use multipart::{Multipart, Part, Piece};
pub use throttle::{required_rate, Throttled};
pub use tls::{cipher_suite_names, kx_group_names, ClientIdentity};
pub use tls::{
    connect_tls_stream, connect_tls_throttled_stream, HandshakeKind, SessionMode, TlsClient,
    TlsConfigError, TlsFailure, TlsOptions, TlsSession, TlsTcpStream, TlsVersion,
};

pub use onrush_clock::Moment;
use std::path::Path;

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

    /// Called once with the response's trailers (HTTP/2 only: a header block after the body,
    /// where gRPC puts `grpc-status`), before `end`; not called when there are none. The
    /// default does nothing.
    #[inline]
    fn trailers(&mut self, headers: &Headers<'_>) {
        let _ = headers;
    }
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
    pub first_byte_at: Moment,
    /// When the response was complete: the read that returned its last byte completed (for a
    /// response in one read, `first_byte_at`: no second clock read). A request's latency ends
    /// here, not after the tool has decoded what it read.
    pub done_at: Moment,
    /// Bytes written for the request: head and body.
    pub bytes_out: u64,
    /// Bytes read for the response as they were on the wire: heads, body, chunk framing, trailers.
    pub bytes_in: u64,
}
