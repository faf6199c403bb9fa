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
//! buffer (2 KiB, grown fourfold up to 64 KiB by a connection whose reads fill it). Before each request the
//! connection takes what is known to wait on it (`idle`: no syscall in the steady state) and
//! refuses bytes nobody asked for.
//!
//! The request, sink, response and error types, the TCP and TLS transports, cookies,
//! decompression and multipart bodies are onrush-http's, shared with HTTP/2, and re-exported
//! here; this crate owns the HTTP/1.1 framing ([`Connection`], its decoder and head writer).
//!
//! See README.md for what is and isn't handled.

mod any;
mod conn;
mod decode;
mod encode;
mod idle;
mod prepared;
mod throttle;
pub mod tls;

// What HTTP/1.1 and HTTP/2 share lives in onrush-http; re-exported here at the paths this
// crate always had, so callers (the engine) keep compiling unchanged.
pub use onrush_http::cookies;
pub use onrush_http::{
    connect_tcp, form_urlencode, percent_encode_component, push_header, start_tcp, BodySink,
    ConnectOptions, Connecting, Decompress, Discard, Encoding, Error, ErrorKind, Headers,
    InvalidHeader, Multipart, Part, Piece, Request, RequestBody, Response, TcpConnect, Throttled,
};

pub use any::{connect_any, connect_any_with, AnyConnection};
pub use conn::{connect, Buffers, Connection};
pub use idle::PendingInput;
pub use prepared::PreparedRequest;
pub use throttle::{connect_throttled, ThrottledConnection};
pub use tls::{cipher_suite_names, kx_group_names, ClientIdentity};
pub use tls::{
    connect_tls, connect_tls_stream, connect_tls_throttled, HandshakeKind, SessionMode,
    ThrottledTlsConnection, TlsClient, TlsConfigError, TlsConnection, TlsFailure, TlsOptions,
    TlsSession, TlsVersion,
};

/// The largest response head (status line + headers, and each interim 1xx head) accepted.
pub const MAX_HEAD_BYTES: usize = 64 * 1024;

/// The most header lines in one response head; more is reported as a bad response.
pub const MAX_HEADERS: usize = 64;
