//! The HTTP/2 client on the `h2` crate (hyper's), kept as the reference that [`crate::fast`]
//! is tested against, differentially (crates/onrush-http2/tests/fast_server.rs), and measured
//! against (benches/h2_cost.sh). Same surface as the fast client; its connection is driven by
//! a `tokio::spawn`ed task, so its handles are `Send`.
//!
//! Bytes: each [`Response`] carries the connection's HTTP/2 bytes (frames and compressed
//! headers as read and written, beneath TLS if any) since the previous response on that
//! connection.

use std::future::poll_fn;
use std::net::SocketAddr;
use std::sync::Arc;

use bytes::Bytes;
use h2::client::SendRequest;
use http::header::{HeaderName, HeaderValue};
use http::uri::{Authority, PathAndQuery, Scheme};
use onrush_http::Moment;
use onrush_http::{BodySink, ConnectOptions, Error, ErrorKind, Headers, Request, RequestBody};
use onrush_http::{Piece, Response};
use tokio::io::{AsyncRead, AsyncWrite};

use crate::wire::{Counted, WireCounters};
use crate::{body, is_connection_specific, H2Settings};

/// A handle on an HTTP/2 connection (see the crate documentation). Cloning is cheap and gives
/// another handle on the same connection.
#[derive(Clone)]
pub struct H2Connection {
    send: SendRequest<Bytes>,
    scheme: Scheme,
    authority: Authority,
    wire: Arc<WireCounters>,
}

impl std::fmt::Debug for H2Connection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("H2Connection")
            .field("scheme", &self.scheme)
            .field("authority", &self.authority)
            .finish()
    }
}

/// Opens a TCP connection to `addr` (as [`onrush_http::connect_tcp`] does with `opts`) and
/// starts HTTP/2 on it with prior knowledge (h2c: the server must expect HTTP/2 on this port).
/// `host` is the `:authority` of the requests (e.g. `127.0.0.1:8080`).
pub async fn connect_h2c(
    addr: SocketAddr,
    opts: &ConnectOptions,
    host: &[u8],
    settings: &H2Settings,
) -> Result<H2Connection, Error> {
    let tcp = onrush_http::connect_tcp(addr, opts).await?;
    handshake(tcp, Scheme::HTTP, host, settings).await
}

/// Starts HTTP/2 on `io` (a stream on which the server expects HTTP/2: TLS with ALPN `h2`, or
/// a plain stream with prior knowledge), with `scheme` and `host` as the requests'
/// `:scheme` and `:authority`. The connection's frames are driven by a task spawned on the
/// current tokio runtime, which ends when every handle and stream is dropped (the connection
/// is then closed with a GOAWAY) or the connection fails.
pub async fn handshake<T>(
    io: T,
    scheme: Scheme,
    host: &[u8],
    settings: &H2Settings,
) -> Result<H2Connection, Error>
where
    T: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let authority = Authority::try_from(host).map_err(|_| {
        Error::protocol(
            ErrorKind::ConnectOther,
            format!(
                "{:?} is not a valid HTTP/2 :authority",
                String::from_utf8_lossy(host)
            ),
            None,
        )
    })?;
    let wire = Arc::new(WireCounters::default());
    let (send, connection) = h2::client::Builder::new()
        .initial_window_size(settings.stream_window)
        .initial_connection_window_size(settings.connection_window)
        .max_frame_size(settings.max_frame_size)
        .enable_push(false)
        .handshake::<_, Bytes>(Counted::new(io, wire.clone()))
        .await
        .map_err(|e| h2_error(e, Stage::Connecting))?;
    tokio::spawn(async move {
        // Its failure reaches the streams: every request in flight or to come fails with it.
        let _ = connection.await;
    });
    Ok(H2Connection {
        send,
        scheme,
        authority,
        wire,
    })
}

/// Where a request was when HTTP/2 failed: before its stream was opened, a failure of the
/// connection means a reused connection had gone away (retry on a new one).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Stage {
    Connecting,
    Opening,
    Exchanging,
}

impl H2Connection {
    /// Sends `req` on a new stream and streams the response body into `sink`.
    ///
    /// `req.host` is sent as `:authority`; `req.close` is ignored (HTTP/2 has no per-request
    /// close: dropping every handle closes the connection). Connection-specific header lines
    /// (`Connection`, `Keep-Alive`, `Transfer-Encoding`, `Upgrade`, `Proxy-Connection`, `TE`
    /// other than `trailers`) are left out, as HTTP/2 forbids them; names are sent in lower
    /// case.
    ///
    /// Errors: a connection that failed or was closed by the server before this request's
    /// stream opened is [`Error::is_stale_reuse`] (retry on a new connection); a stream reset by
    /// the server is [`ErrorKind::Reset`]; a GOAWAY that ends the stream is
    /// [`ErrorKind::ClosedEarly`]; a protocol violation is [`ErrorKind::BadResponse`].
    pub async fn send(
        &mut self,
        req: &Request<'_>,
        sink: &mut impl BodySink,
    ) -> Result<Response, Error> {
        let (request, body_len) = self.build(req)?;
        poll_fn(|cx| self.send.poll_ready(cx))
            .await
            .map_err(|e| h2_error(e, Stage::Opening))?;
        let end_of_stream = body_len == 0;
        let (response, mut stream) = self
            .send
            .send_request(request, end_of_stream)
            .map_err(|e| h2_error(e, Stage::Opening))?;
        if !end_of_stream {
            body::send(&mut stream, req.body).await?;
        }
        let response = response.await.map_err(|e| h2_error(e, Stage::Exchanging))?;
        let first_byte_at = Moment::now();
        let (parts, mut body) = response.into_parts();
        let status = parts.status.as_u16();
        let head_bytes = {
            let raw: Vec<httparse::Header<'_>> = parts
                .headers
                .iter()
                .map(|(name, value)| httparse::Header {
                    name: name.as_str(),
                    value: value.as_bytes(),
                })
                .collect();
            sink.head(status, &Headers::new(&raw));
            // RFC 9113 §6.5.2's size of a header list: name + value + 32 per field.
            raw.iter()
                .map(|h| (h.name.len() + h.value.len() + 32) as u64)
                .sum::<u64>()
        };
        let mut body_bytes = 0u64;
        while let Some(chunk) = body.data().await {
            let chunk = chunk.map_err(|e| h2_error(e, Stage::Exchanging))?;
            if !chunk.is_empty() {
                sink.data(&chunk);
                body_bytes += chunk.len() as u64;
                // Give the window back at once: the sink has the bytes, h2 may drop them.
                let _ = body.flow_control().release_capacity(chunk.len());
            }
        }
        sink.end();
        let (bytes_in, bytes_out) = self.wire.take();
        Ok(Response {
            status,
            head_bytes,
            body_bytes,
            keep_alive: true,
            first_byte_at,
            done_at: Moment::now(),
            bytes_out,
            bytes_in,
        })
    }

    /// Whether the server still accepts new streams on this connection, as far as is known
    /// without waiting (a GOAWAY received or a failed connection make it false).
    pub fn is_open(&mut self) -> bool {
        // Polled once without waiting: nobody needs waking (`Waker::noop` needs Rust 1.85).
        struct Noop;
        impl std::task::Wake for Noop {
            fn wake(self: Arc<Self>) {}
        }
        let waker = std::task::Waker::from(Arc::new(Noop));
        let mut cx = std::task::Context::from_waker(&waker);
        !matches!(
            self.send.poll_ready(&mut cx),
            std::task::Poll::Ready(Err(_))
        )
    }

    /// The `http::Request` of `req` (head only) and the length of its body.
    fn build(&mut self, req: &Request<'_>) -> Result<(http::Request<()>, u64), Error> {
        let invalid = |what: &'static str| Error::protocol(ErrorKind::Io, what, None);
        if self.authority.as_str().as_bytes() != req.host {
            self.authority = Authority::try_from(req.host)
                .map_err(|_| invalid("the Host is not a valid HTTP/2 :authority"))?;
        }
        let path = PathAndQuery::try_from(req.target)
            .map_err(|_| invalid("the request target is not a valid path and query"))?;
        let uri = http::Uri::builder()
            .scheme(self.scheme.clone())
            .authority(self.authority.clone())
            .path_and_query(path)
            .build()
            .map_err(|_| invalid("the request target is not a valid URI"))?;
        let method = http::Method::from_bytes(req.method.as_bytes())
            .map_err(|_| invalid("the method is not a valid HTTP method"))?;
        let mut request = http::Request::new(());
        *request.method_mut() = method;
        *request.uri_mut() = uri;
        *request.version_mut() = http::Version::HTTP_2;
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
                .map_err(|_| invalid("a request header name is not valid in HTTP/2"))?;
            let value = HeaderValue::from_bytes(value)
                .map_err(|_| invalid("a request header value is not valid"))?;
            headers.append(name, value);
        }
        let len = match req.body {
            RequestBody::Empty => 0,
            RequestBody::Bytes(b) => b.len() as u64,
            RequestBody::File(path) => std::fs::metadata(path)
                .map_err(|e| {
                    Error::protocol(
                        ErrorKind::Io,
                        format!("could not read the body file {}: {e}", path.display()),
                        None,
                    )
                })?
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
        let has_body = !matches!(req.body, RequestBody::Empty)
            || matches!(req.method, "POST" | "PUT" | "PATCH");
        if has_body {
            headers.insert(http::header::CONTENT_LENGTH, HeaderValue::from(len));
        }
        Ok((request, len))
    }
}

/// An `h2` error as an onrush-http [`Error`], classified like an HTTP/1.1 failure.
fn h2_error(e: h2::Error, stage: Stage) -> Error {
    let before_stream = stage != Stage::Exchanging;
    if e.is_io() {
        let io = e.into_io().expect("is_io");
        let err = if stage == Stage::Connecting {
            Error::protocol(
                ErrorKind::ConnectOther,
                "the HTTP/2 connection preface could not be sent",
                Some(io),
            )
        } else {
            Error::transport(io)
        };
        return if stage == Stage::Opening {
            err.into_stale()
        } else {
            err
        };
    }
    let reason = e
        .reason()
        .map_or_else(|| "unknown".to_string(), |r| format!("{r:?}"));
    if e.is_go_away() {
        let err = Error::protocol(
            ErrorKind::ClosedEarly,
            format!("the server closed the HTTP/2 connection (GOAWAY {reason})"),
            None,
        );
        return if before_stream { err.into_stale() } else { err };
    }
    if e.is_reset() && e.is_remote() {
        let err = Error::protocol(
            ErrorKind::Reset,
            format!("the server reset the HTTP/2 stream ({reason})"),
            None,
        );
        // REFUSED_STREAM: the server did not process it, so trying again is safe.
        return if e.reason() == Some(h2::Reason::REFUSED_STREAM) {
            err.into_stale()
        } else {
            err
        };
    }
    Error::protocol(
        ErrorKind::BadResponse,
        format!("HTTP/2 protocol error: {e}"),
        None,
    )
}
