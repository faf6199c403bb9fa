//! HTTP/3 (`onrush serve --tls --http3`): a QUIC endpoint (quinn) per server thread on the HTTPS
//! port number over UDP, HTTP/3 framing by the `h3` crate, and the same routes and counters as
//! HTTP/1.1 and HTTP/2.
//!
//! Each thread's endpoint has its own UDP socket, all bound to the same port with
//! `SO_REUSEPORT` ([`crate::listen::bind_udp_group`]): the kernel hashes a client's address and
//! port to one socket, so every packet of a connection reaches the thread that accepted it, and
//! a connection's tasks (the connection's, one per request) all run on that thread's
//! `current_thread` runtime, as a TCP connection's do (the per-connection counters rely on it).
//!
//! A request's body is the receiving half of its stream ([`H3Body`]), handed to the routes as
//! hyper's `Incoming` is, so every endpoint that reads a body (`/echo`, `/upload`, `/form`,
//! `POST /login`) streams it the same way. The response's head is sent as one HEADERS frame,
//! its body frame by frame as the endpoint produces it (QUIC flow control applies the
//! back-pressure HTTP/2's windows do).

use std::io;
use std::net::UdpSocket;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use bytes::{Buf, Bytes};
use http_body_util::BodyExt;
use hyper::body::{Body, Frame};
use rustls::pki_types::CertificateDer;

use crate::respond::Conn;
use crate::routes;
use crate::stats::{ConnCounter, Shared};
use crate::tls::{self, TlsInfo};

type RecvHalf = h3::server::RequestStream<h3_quinn::RecvStream, Bytes>;

/// An HTTP/3 request's body: the DATA of its stream's receiving half, as hyper frames.
pub(crate) struct H3Body {
    recv: RecvHalf,
    done: bool,
}

/// Reading an HTTP/3 request body failed (the client reset the stream, the connection broke).
#[derive(Debug)]
pub(crate) struct BodyError(String);

impl std::fmt::Display for BodyError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for BodyError {}

impl Body for H3Body {
    type Data = Bytes;
    type Error = BodyError;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, BodyError>>> {
        let this = self.get_mut();
        if this.done {
            return Poll::Ready(None);
        }
        match this.recv.poll_recv_data(cx) {
            Poll::Pending => Poll::Pending,
            Poll::Ready(Ok(Some(mut data))) => {
                let bytes = data.copy_to_bytes(data.remaining());
                Poll::Ready(Some(Ok(Frame::data(bytes))))
            }
            Poll::Ready(Ok(None)) => {
                this.done = true;
                Poll::Ready(None)
            }
            Poll::Ready(Err(e)) => {
                this.done = true;
                Poll::Ready(Some(Err(BodyError(e.to_string()))))
            }
        }
    }

    fn is_end_stream(&self) -> bool {
        self.done
    }
}

/// quinn's server configuration from the TLS configuration [`tls::build`] made for QUIC, with
/// `max_streams` concurrent request streams per connection (as HTTP/2's
/// `SETTINGS_MAX_CONCURRENT_STREAMS`).
pub(crate) fn server_config(
    tls: Arc<rustls::ServerConfig>,
    max_streams: u32,
) -> io::Result<quinn::ServerConfig> {
    let crypto = quinn::crypto::rustls::QuicServerConfig::try_from(tls).map_err(|e| {
        io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("the TLS configuration cannot serve QUIC: {e}"),
        )
    })?;
    let mut config = quinn::ServerConfig::with_crypto(Arc::new(crypto));
    let mut transport = quinn::TransportConfig::default();
    transport.max_concurrent_bidi_streams(max_streams.into());
    config.transport_config(Arc::new(transport));
    Ok(config)
}

/// A thread's endpoint on its UDP socket; must be called inside the thread's runtime.
pub(crate) fn endpoint(
    config: quinn::ServerConfig,
    socket: UdpSocket,
) -> io::Result<quinn::Endpoint> {
    quinn::Endpoint::new(
        quinn::EndpointConfig::default(),
        Some(config),
        socket,
        Arc::new(quinn::TokioRuntime),
    )
}

/// Accepts QUIC connections until the endpoint closes (the thread's runtime ending).
pub(crate) async fn accept_loop(endpoint: quinn::Endpoint, index: usize, shared: Arc<Shared>) {
    while let Some(incoming) = endpoint.accept().await {
        tokio::spawn(serve_connection(incoming, index, shared.clone()));
    }
}

/// One QUIC connection: its handshake (counted), then HTTP/3 requests, each on a task of its
/// own, until the client closes the connection or it fails.
async fn serve_connection(incoming: quinn::Incoming, index: usize, shared: Arc<Shared>) {
    let connecting = match incoming.accept() {
        Ok(connecting) => connecting,
        Err(_) => {
            shared.count_quic_handshake(index, false);
            return;
        }
    };
    let quic = match connecting.await {
        Ok(quic) => quic,
        Err(_) => {
            shared.count_quic_handshake(index, false);
            return;
        }
    };
    shared.count_quic_handshake(index, true);
    let info = info_of(&quic);
    if let Some(name) = &info.client_name {
        shared.count_client(index, name);
    }
    let conn = Arc::new(Conn {
        shared,
        counter: ConnCounter::new(index),
        tls: Some(info),
        alt_svc: None,
    });
    // No grease (RFC 9114 §7.2.8's reserved frame and stream types): aioquic 1.3's client
    // drops the end of a response whose last frame is a grease frame, and never sees it end
    // (found by tests/builtin.rs in onrush-http3). onrush's client sends none either.
    let Ok(mut h3) = h3::server::builder()
        .send_grease(false)
        .build::<_, Bytes>(h3_quinn::Connection::new(quic))
        .await
    else {
        return;
    };
    // Ends when the client closes (or its idle timeout passes): the connection's error says
    // which, and there is no one to tell.
    while let Ok(Some(resolver)) = h3.accept().await {
        let conn = conn.clone();
        tokio::spawn(async move {
            let _ = serve_request(resolver, &conn).await;
        });
    }
}

/// Reads one request's head, routes it, and sends the response's head and body. An error is
/// the client's doing (a reset stream, a closed connection): nothing to answer.
async fn serve_request(
    resolver: h3::server::RequestResolver<h3_quinn::Connection, Bytes>,
    conn: &Conn,
) -> Result<(), h3::error::StreamError> {
    let (req, stream) = resolver.resolve_request().await?;
    let (mut send, recv) = stream.split();
    let req = req.map(|()| H3Body { recv, done: false });
    let (parts, mut body) = routes::handle_h3(req, conn).await.into_parts();
    send.send_response(hyper::Response::from_parts(parts, ()))
        .await?;
    while let Some(frame) = body.frame().await {
        // The body's error type is `Infallible`; trailers are not produced by any endpoint.
        if let Ok(Ok(data)) = frame.map(Frame::into_data) {
            if !data.is_empty() {
                send.send_data(data).await?;
            }
        }
    }
    send.finish().await
}

/// What `/tls` says about a QUIC connection. quinn does not tell the cipher suite or whether
/// the handshake resumed a session, so they are `unknown` and `false`; the version is TLS 1.3,
/// the only one QUIC has.
fn info_of(quic: &quinn::Connection) -> TlsInfo {
    let client_subject = quic
        .peer_identity()
        .and_then(|any| any.downcast::<Vec<CertificateDer<'static>>>().ok())
        .and_then(|chain| chain.first().map(|cert| tls::subject(cert)));
    let (client_subject, client_name) = match client_subject {
        Some(Some(subject)) => {
            let name = subject.common_name().unwrap_or_else(|| subject.to_string());
            (Some(subject.to_string()), Some(name))
        }
        Some(None) => (Some(String::new()), Some(String::new())),
        None => (None, None),
    };
    TlsInfo {
        version: "TLSv1_3",
        cipher: "unknown",
        alpn: Some("h3"),
        resumed: false,
        client_subject,
        client_name,
    }
}
