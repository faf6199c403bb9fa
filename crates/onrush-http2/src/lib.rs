//! onrush's HTTP/2 client connection over onrush-http's transports.
//!
//! [`handshake`] starts HTTP/2 on any byte stream — a TLS stream whose ALPN chose `h2`
//! (from [`onrush_http::connect_tls_stream`]) or a plain TCP stream with prior knowledge
//! (h2c, [`connect_h2c`]). An [`H2Connection`] is a cheap handle (clone it to share the
//! connection): every handle can [`H2Connection::send`] one request at a time, and requests of
//! different handles are concurrent streams on the one connection.
//!
//! The request and response types are onrush-http's (`Request`, `BodySink`, `Response`,
//! `Error`), the same as HTTP/1.1's (onrush-http1), so the engine runs the same steps, sinks, extractors and failure classes over
//! both protocols. Bodies stream both ways under HTTP/2 flow control, so memory does not grow
//! with body sizes.
//!
//! Two implementations with one surface: [`fast`] (the default, re-exported here), a lean
//! hand-written framing with its own HPACK decoder, driven by a `spawn_local` task — call
//! [`handshake`] inside a `tokio::task::LocalSet`, as onrush's workers do; and `reference`,
//! on the `h2` crate, kept to test `fast` against: behind the non-default cargo feature
//! `reference`, so the product does not ship the h2 crate (this crate's tests and examples
//! enable it). Measured with callgrind (5 connections x 10
//! streams over TLS, marginal instructions per request): fast 3,941, the h2 crate 19,640,
//! h2load 11,074 (see README.md).
//!
//! Bytes: an HTTP/2 connection interleaves streams, so the wire bytes of one request are not
//! separable from its neighbours'. Each `Response` carries the connection's HTTP/2 bytes
//! (frames and compressed headers as read and written, beneath TLS if any) since the previous
//! response on that connection: totals over a run are exact, a single request's figure is
//! approximate when its stream overlapped others.

// `body` and `wire` serve the h2-crate client only.
#[cfg(feature = "reference")]
mod body;
pub mod fast;
#[cfg(feature = "reference")]
pub mod reference;
#[cfg(feature = "reference")]
mod wire;

pub use fast::{connect_h2c, handshake, H2Connection};

/// HTTP/2 settings of the client side of a connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct H2Settings {
    /// The receive window of each stream. HTTP/2's default (64 KiB) caps one stream's download
    /// at a window per round trip; a larger one lets a big body stream at link speed. Memory is
    /// only used for data received and not yet handed to the sink, which happens at once.
    pub stream_window: u32,
    /// The receive window of the whole connection (all streams together).
    pub connection_window: u32,
    /// The largest frame the server may send. Larger frames cost fewer frame headers and
    /// wake-ups per byte of a large body.
    pub max_frame_size: u32,
}

impl Default for H2Settings {
    fn default() -> Self {
        H2Settings {
            stream_window: 1 << 20,
            connection_window: 4 << 20,
            max_frame_size: 64 << 10,
        }
    }
}

/// Header fields HTTP/2 forbids (RFC 9113 §8.2.2), and `Host`, which becomes `:authority`.
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn connection_specific_headers_are_left_out() {
        assert!(is_connection_specific(b"Connection", b"close"));
        assert!(is_connection_specific(b"transfer-encoding", b"chunked"));
        assert!(is_connection_specific(b"TE", b"gzip"));
        assert!(!is_connection_specific(b"te", b"trailers"));
        assert!(!is_connection_specific(b"content-type", b"text/plain"));
    }
}
