//! Opening TLS streams: TCP (with or without a bandwidth cap beneath TLS), then the handshake,
//! driven to its end so that its kind and duration are known before the first request.

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use rustls::pki_types::ServerName;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::TcpStream;
use tokio_rustls::client::TlsStream;

use super::{HandshakeKind, TlsSession};
use crate::{connect_tcp, refuse_throttle, required_rate, ConnectOptions, Error, Throttled};

/// Opens a TCP connection to `addr` (as [`connect_tcp`] does, with `opts`), then performs the
/// TLS handshake with `session`'s configuration, for `server_name` (the target's host; the
/// `TlsOptions::server_name` override wins when set; an IP address is verified against the
/// certificate's IP addresses and sends no SNI). The stream is for a protocol to run over:
/// onrush-http1's `connect_tls` wraps it in a `Connection`, onrush-http2 starts HTTP/2 on it
/// when `stream.get_ref().1.alpn_protocol()` says the server chose `h2` from
/// [`TlsOptions::alpn`](super::TlsOptions::alpn).
///
/// Returns the stream, whether the handshake was full or resumed, and the handshake's
/// duration (TCP connect excluded). With [`ConnectOptions::deadline`] set, a connect or
/// handshake still running then fails with its own class (below); without, the caller wraps
/// it in a timeout. `opts.throttle` must be `None` (else `ConnectOther`): use
/// [`connect_tls_throttled_stream`].
///
/// Errors: those of [`connect_tcp`]; a handshake failure is [`crate::ErrorKind::ConnectOther`]
/// with [`Error::tls_failure`] saying why; a handshake still running at
/// [`ConnectOptions::deadline`] is [`crate::ErrorKind::ConnectTimeout`] with
/// [`TlsFailure::HandshakeTimeout`](super::TlsFailure::HandshakeTimeout). With TLS 1.3 a
/// server that refuses the client certificate (or its absence) says so only after the client's
/// side of the handshake is done: that failure then comes from the first request instead,
/// with the same [`Error::tls_failure`] classification.
/// A TLS connection over TCP, as [`connect_tls_stream`] opens it.
pub type TlsTcpStream = TlsStream<TcpStream>;

pub async fn connect_tls_stream(
    addr: SocketAddr,
    opts: &ConnectOptions,
    session: &TlsSession,
    server_name: &str,
) -> Result<(TlsStream<TcpStream>, HandshakeKind, Duration), Error> {
    refuse_throttle(opts, "connect_tls_throttled")?;
    let name = session.name_for(server_name)?;
    let tcp = connect_tcp(addr, opts).await?;
    handshake(session, name, tcp, addr, opts.deadline).await
}

/// [`connect_tls_stream`] with the TCP stream capped to `opts.throttle` bytes per second in
/// each direction (which must be `Some`, else `ConnectOther`). The cap applies to the wire
/// bytes, handshake and TLS records included, and so slows the handshake too, as on a slow
/// link.
pub async fn connect_tls_throttled_stream(
    addr: SocketAddr,
    opts: &ConnectOptions,
    session: &TlsSession,
    server_name: &str,
) -> Result<(TlsStream<Throttled<TcpStream>>, HandshakeKind, Duration), Error> {
    let rate = required_rate(opts)?;
    let name = session.name_for(server_name)?;
    let tcp = connect_tcp(addr, opts).await?;
    handshake(
        session,
        name,
        Throttled::new(tcp, rate),
        addr,
        opts.deadline,
    )
    .await
}

impl TlsSession {
    fn name_for(&self, server_name: &str) -> Result<ServerName<'static>, Error> {
        match &self.server_name {
            Some(name) => Ok(name.clone()),
            None => ServerName::try_from(server_name.to_owned())
                .map_err(|_| Error::tls_name(server_name)),
        }
    }
}

async fn handshake<S: AsyncRead + AsyncWrite + Unpin>(
    session: &TlsSession,
    name: ServerName<'static>,
    io: S,
    addr: SocketAddr,
    deadline: Option<tokio::time::Instant>,
) -> Result<(TlsStream<S>, HandshakeKind, Duration), Error> {
    let started = Instant::now();
    let connecting = session.connector.connect(name, io);
    let result = match deadline {
        Some(at) => match tokio::time::timeout_at(at, connecting).await {
            Ok(result) => result,
            Err(_elapsed) => return Err(Error::tls_handshake_timeout(addr, started.elapsed())),
        },
        None => connecting.await,
    };
    let stream = result.map_err(|e| Error::tls_handshake(e, addr))?;
    let took = started.elapsed();
    let kind = match stream.get_ref().1.handshake_kind() {
        Some(rustls::HandshakeKind::Resumed) => HandshakeKind::Resumed,
        _ => HandshakeKind::Full,
    };
    Ok((stream, kind, took))
}
