//! onrush's HTTP/3 client connection: QUIC by quinn (on rustls with the *ring* provider, as the
//! rest of onrush), HTTP/3 framing and QPACK by the `h3` crate.
//!
//! [`connect`] opens a QUIC connection (TLS 1.3 inside it, ALPN `h3`) with a VU's
//! [`TlsSession`] — the same CA or `insecure` verifier, client identity and session cache as
//! its HTTP/1.1 and HTTP/2 connections — and starts HTTP/3 on it. An [`H3Connection`] is a cheap
//! handle (clone it to share the connection): every handle can [`H3Connection::send`] one
//! request at a time, and requests of different handles are concurrent QUIC streams on the one
//! connection, as onrush-http2's `H2Connection`.
//!
//! The request and response types are onrush-http's (`Request`, `BodySink`, `Response`,
//! `Error`), the same as HTTP/1.1's and HTTP/2's, so the engine runs the same steps, sinks,
//! extractors and failure classes over all three. Bodies stream both ways: a response's DATA
//! goes to the sink as QUIC delivers it, a request body file is read and sent in 64 KiB pieces.
//!
//! Failures QUIC has and TCP has not are failure classes of their own, registered by this crate
//! in the group `QUIC` ([`classes`]) and named on the [`Error`] ([`Error::class_name`]); a TLS
//! alert inside QUIC's handshake is a TLS failure as over TCP ([`Error::tls_failure`]).
//!
//! Bytes: QUIC interleaves streams in packets, so the wire bytes of one request are not
//! separable from its neighbours'. Each `Response` carries the connection's UDP payload bytes
//! (QUIC packets, handshake included) since the previous response on that connection: totals
//! over a run are exact, a single request's figure is approximate when its stream overlapped
//! others.

pub mod classes;
mod endpoint;
mod error;
mod request;

use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::{Buf, Bytes};
use onrush_http::{BodySink, ConnectOptions, Error, Headers, Moment, Request, Response};
use onrush_http::{HandshakeKind, TlsSession};

pub use endpoint::EndpointScope;
use error::{connection_error, stream_error, Stage};

/// QUIC settings of the client side of a connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct H3Settings {
    /// How long a connection may go without a packet from the server before quinn closes it
    /// (the smaller of this and the server's is used). A request waiting on a silent server
    /// fails as `quic_idle_timeout` then, unless its own timeout comes first.
    pub idle_timeout: Duration,
    /// Whether connections share one UDP socket per worker thread or each have their own (see
    /// [`EndpointScope`] and README.md for what was measured).
    pub endpoint: EndpointScope,
}

impl Default for H3Settings {
    fn default() -> Self {
        H3Settings {
            idle_timeout: Duration::from_secs(30),
            endpoint: EndpointScope::default(),
        }
    }
}

type SendRequest = h3::client::SendRequest<h3_quinn::OpenStreams, Bytes>;

/// A handle on an HTTP/3 connection (see the crate documentation). Cloning is cheap and gives
/// another handle on the same connection.
#[derive(Clone)]
pub struct H3Connection {
    send: SendRequest,
    quic: quinn::Connection,
    /// `https://host[:port]`, the requests' `:scheme` and `:authority` (rebuilt when a
    /// request's Host differs).
    authority: http::uri::Authority,
    /// UDP bytes (received, sent) already reported in a response.
    reported: Arc<[AtomicU64; 2]>,
    endpoint_port: u16,
}

impl std::fmt::Debug for H3Connection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("H3Connection")
            .field("authority", &self.authority)
            .field("remote", &self.quic.remote_address())
            .finish()
    }
}

/// Opens a QUIC connection to `addr` and starts HTTP/3 on it.
///
/// TLS is `session`'s configuration (its ALPN replaced by `h3` if it offers anything else),
/// for `server_name` (the target's host; the `TlsOptions::server_name` override wins when
/// set). `host` is the requests' `:authority` (e.g. `example.com:8443`). The QUIC handshake
/// must finish by `opts.deadline` when set (else `quic_handshake_timeout`); the caller's own
/// timeout is the backstop otherwise. `opts.local_addr` binds the UDP socket's source address
/// (with [`EndpointScope::PerConnection`]; a shared endpoint is bound once per thread).
///
/// Returns the connection, whether the handshake was full or resumed, and its duration.
/// quinn does not say whether rustls resumed a session inside QUIC, so the kind is always
/// [`HandshakeKind::Full`] (see README.md).
///
/// The connection's HTTP/3 control streams are driven by a task spawned on the current tokio
/// runtime (a worker's `current_thread` runtime, or any other), which ends when every handle is
/// dropped (the connection is then closed with H3_NO_ERROR) or the connection fails.
pub async fn connect(
    addr: SocketAddr,
    opts: &ConnectOptions,
    session: &TlsSession,
    server_name: &str,
    host: &[u8],
    settings: &H3Settings,
) -> Result<(H3Connection, HandshakeKind, Duration), Error> {
    classes::registered();
    let authority = authority(host)?;
    let config = endpoint::client_config(session, settings)?;
    let name = session.server_name_for(server_name);
    let started = Instant::now();
    let mut endpoint = endpoint::for_connection(settings.endpoint, addr, opts.local_addr)?;
    let mut connecting = endpoint.connect_with(config.clone(), addr, &name);
    if let Err(quinn::ConnectError::EndpointStopping) = connecting {
        // A shared endpoint made on a runtime that has ended: once more, on a new one.
        endpoint::forget(&endpoint);
        endpoint = endpoint::for_connection(settings.endpoint, addr, opts.local_addr)?;
        connecting = endpoint.connect_with(config, addr, &name);
    }
    let connecting = connecting.map_err(|e| error::connect_error(e, addr, &name))?;
    let endpoint_port = endpoint.local_addr().map_or(0, |a| a.port());
    let handshake = async {
        let quic = connecting
            .await
            .map_err(|e| connection_error(e, Stage::Handshake, addr))?;
        let (driver, send) = h3::client::builder()
            .send_grease(false)
            .build::<_, _, Bytes>(h3_quinn::Connection::new(quic.clone()))
            .await
            .map_err(|e| error::h3_connection_error(e, &quic, Stage::Handshake, addr))?;
        Ok::<_, Error>((quic, driver, send))
    };
    let (quic, mut driver, send) = match opts.deadline {
        Some(at) => match tokio::time::timeout_at(at, handshake).await {
            Ok(result) => result?,
            Err(_) => return Err(error::handshake_timeout(addr, started.elapsed())),
        },
        None => handshake.await?,
    };
    let took = started.elapsed();
    tokio::spawn(async move {
        // Ends with the connection: its error reaches the requests through their streams.
        let _ = std::future::poll_fn(|cx| driver.poll_close(cx)).await;
    });
    // Starting from zero, the handshake's bytes go to the first response, as the TLS
    // handshake's bytes do over TCP.
    let reported = Arc::new([AtomicU64::new(0), AtomicU64::new(0)]);
    Ok((
        H3Connection {
            send,
            quic,
            authority,
            reported,
            endpoint_port,
        },
        HandshakeKind::Full,
        took,
    ))
}

fn authority(host: &[u8]) -> Result<http::uri::Authority, Error> {
    http::uri::Authority::try_from(host).map_err(|_| {
        Error::new(
            onrush_http::ErrorKind::ConnectOther,
            format!(
                "{:?} is not a valid HTTP/3 :authority",
                String::from_utf8_lossy(host)
            ),
        )
    })
}

impl H3Connection {
    /// Sends `req` on a new QUIC stream and streams the response body into `sink`.
    ///
    /// `req.host` is sent as `:authority`; `req.close` is ignored (HTTP/3 has no per-request
    /// close: dropping every handle closes the connection). Connection-specific header lines
    /// (`Connection`, `Keep-Alive`, `Transfer-Encoding`, `Upgrade`, `Proxy-Connection`, `TE`
    /// other than `trailers`) are left out, as HTTP/3 forbids them (RFC 9114 §4.2); names are
    /// sent in lower case.
    ///
    /// Errors: a connection that failed or was closed by the server (GOAWAY) before this
    /// request's stream opened is [`Error::is_stale_reuse`] (retry on a new connection); a
    /// stream the server reset is classified by its HTTP/3 error code (`h3_request_rejected`,
    /// ... — H3_REQUEST_REJECTED is also stale: the server did not process it); the
    /// connection's failure by what QUIC says (`quic_idle_timeout`, `quic_stateless_reset`,
    /// ...).
    pub async fn send(
        &mut self,
        req: &Request<'_>,
        sink: &mut impl BodySink,
    ) -> Result<Response, Error> {
        let (request, body_len) = request::build(req, &mut self.authority)?;
        let mut stream = self
            .send
            .send_request(request)
            .await
            .map_err(|e| stream_error(e, &self.quic, Stage::Opening))?;
        request::send_body(&mut stream, req.body, body_len)
            .await
            .map_err(|e| e.unwrap_or_else(|e| stream_error(e, &self.quic, Stage::Exchanging)))?;
        let response = stream
            .recv_response()
            .await
            .map_err(|e| stream_error(e, &self.quic, Stage::Exchanging))?;
        let first_byte_at = Moment::now();
        let status = response.status().as_u16();
        let head_bytes = {
            let raw: Vec<httparse::Header<'_>> = response
                .headers()
                .iter()
                .map(|(name, value)| httparse::Header {
                    name: name.as_str(),
                    value: value.as_bytes(),
                })
                .collect();
            sink.head(status, &Headers::new(&raw));
            // RFC 9114 §4.2.2's size of a field section: name + value + 32 per field.
            raw.iter()
                .map(|h| (h.name.len() + h.value.len() + 32) as u64)
                .sum::<u64>()
        };
        let mut body_bytes = 0u64;
        let mut done_at = first_byte_at;
        while let Some(mut chunk) = stream
            .recv_data()
            .await
            .map_err(|e| stream_error(e, &self.quic, Stage::Exchanging))?
        {
            while chunk.has_remaining() {
                let piece = chunk.chunk();
                let n = piece.len();
                sink.data(piece);
                body_bytes += n as u64;
                chunk.advance(n);
            }
            done_at = Moment::now();
        }
        sink.end();
        let (bytes_in, bytes_out) = self.take_bytes();
        Ok(Response {
            status,
            head_bytes,
            body_bytes,
            keep_alive: true,
            first_byte_at,
            done_at,
            bytes_out,
            bytes_in,
        })
    }

    /// The connection's UDP bytes (received, sent) since the last call on any of its handles.
    fn take_bytes(&self) -> (u64, u64) {
        let stats = self.quic.stats();
        let rx = stats.udp_rx.bytes;
        let tx = stats.udp_tx.bytes;
        let prev_rx = self.reported[0].fetch_max(rx, Ordering::Relaxed);
        let prev_tx = self.reported[1].fetch_max(tx, Ordering::Relaxed);
        (rx.saturating_sub(prev_rx), tx.saturating_sub(prev_tx))
    }

    /// Whether the connection can still take new streams, as far as is known without waiting
    /// (closed by either side, timed out or reset: false).
    pub fn is_open(&self) -> bool {
        self.quic.close_reason().is_none()
    }

    /// The QUIC connection's statistics (packets lost, congestion events, round-trip time,
    /// UDP datagrams and bytes), as quinn keeps them.
    pub fn stats(&self) -> quinn::ConnectionStats {
        self.quic.stats()
    }

    /// The server's address.
    pub fn remote_address(&self) -> SocketAddr {
        self.quic.remote_address()
    }

    /// The local UDP port of the connection's endpoint (shared by a worker thread's connections
    /// with [`EndpointScope::PerThread`]).
    pub fn local_port(&self) -> u16 {
        self.endpoint_port
    }
}
