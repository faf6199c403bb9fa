//! HTTPS for HTTP/1.1: a [`Connection`] over a TLS stream.
//!
//! TLS itself (rustls, [`TlsClient`], [`TlsSession`] and its session modes, client
//! identities, handshake failures) is onrush-http's, shared with HTTP/2, and re-exported here
//! at the paths it always had (`onrush_http1::tls::TlsClient`, ...). This module adds the
//! HTTP/1.1 connections over it.

use std::net::SocketAddr;
use std::time::Duration;

use tokio::net::TcpStream;
use tokio_rustls::client::TlsStream;

pub use onrush_http::tls::*;

use crate::{ConnectOptions, Connection, Error, Throttled};

/// A connection over TLS, as [`connect_tls`] returns it.
pub type TlsConnection = Connection<TlsStream<TcpStream>>;

/// Opens a TCP connection to `addr` (as [`crate::connect`] does, with `opts`), then performs
/// the TLS handshake with `session`'s configuration, for `server_name` (the target's host; the
/// `TlsOptions::server_name` override wins when set; an IP address is verified against the
/// certificate's IP addresses and sends no SNI).
///
/// Returns the connection, whether the handshake was full or resumed, and the handshake's
/// duration (TCP connect excluded). With [`ConnectOptions::deadline`] set, a connect or
/// handshake still running then fails with its own class (below); without, the caller wraps
/// it in a timeout.
///
/// Errors: those of [`crate::connect`]; a handshake failure is [`crate::ErrorKind::ConnectOther`]
/// with [`Error::tls_failure`] saying why; a handshake still running at
/// [`ConnectOptions::deadline`] is [`crate::ErrorKind::ConnectTimeout`] with
/// [`TlsFailure::HandshakeTimeout`]. With TLS 1.3 a server that refuses the client
/// certificate (or its absence) says so only after the client's side of the handshake is done:
/// that failure then comes from the first [`Connection::send`] instead, with the same
/// [`Error::tls_failure`] classification.
pub async fn connect_tls(
    addr: SocketAddr,
    opts: &ConnectOptions,
    session: &TlsSession,
    server_name: &str,
) -> Result<(Connection<TlsStream<TcpStream>>, HandshakeKind, Duration), Error> {
    let (stream, kind, took) = connect_tls_stream(addr, opts, session, server_name).await?;
    Ok((Connection::new(stream), kind, took))
}

/// A TLS connection with a bandwidth cap beneath TLS, as [`connect_tls_throttled`] returns it.
pub type ThrottledTlsConnection = Connection<TlsStream<Throttled<TcpStream>>>;

/// [`connect_tls`] with the TCP stream capped to `opts.throttle` bytes per second in each
/// direction (which must be `Some`, else `ConnectOther`). The cap applies to the wire bytes,
/// handshake and TLS records included, and so slows the handshake too, as on a slow link.
pub async fn connect_tls_throttled(
    addr: SocketAddr,
    opts: &ConnectOptions,
    session: &TlsSession,
    server_name: &str,
) -> Result<(ThrottledTlsConnection, HandshakeKind, Duration), Error> {
    let (stream, kind, took) =
        connect_tls_throttled_stream(addr, opts, session, server_name).await?;
    Ok((Connection::new(stream), kind, took))
}
