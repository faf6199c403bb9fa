//! One connection type for every transport (plain or TLS, with or without a bandwidth cap), so a
//! caller holds one type and one `send`; the match costs one branch per request, not per read.

use std::net::SocketAddr;
use std::time::Duration;

use crate::tls::{connect_tls_throttled, ThrottledTlsConnection};
use crate::{
    connect_tcp, connect_throttled, connect_tls, BodySink, Buffers, ConnectOptions, Connection,
    Error, HandshakeKind, PreparedRequest, Request, Response, ThrottledConnection, TlsConnection,
    TlsSession,
};

/// A connection over any transport, as [`connect_any`] returns it.
#[derive(Debug)]
pub enum AnyConnection {
    /// Plain TCP.
    Plain(Connection),
    /// TLS over TCP.
    Tls(Box<TlsConnection>),
    /// Plain TCP with a bandwidth cap.
    Throttled(Box<ThrottledConnection>),
    /// TLS over TCP with a bandwidth cap (beneath TLS).
    ThrottledTls(Box<ThrottledTlsConnection>),
}

impl AnyConnection {
    /// [`Connection::send`] on whichever transport.
    pub async fn send(
        &mut self,
        req: &Request<'_>,
        sink: &mut impl BodySink,
    ) -> Result<Response, Error> {
        match self {
            AnyConnection::Plain(c) => c.send(req, sink).await,
            AnyConnection::Tls(c) => c.send(req, sink).await,
            AnyConnection::Throttled(c) => c.send(req, sink).await,
            AnyConnection::ThrottledTls(c) => c.send(req, sink).await,
        }
    }

    /// [`Connection::send_prepared`] on whichever transport.
    pub async fn send_prepared(
        &mut self,
        req: &PreparedRequest,
        sink: &mut impl BodySink,
    ) -> Result<Response, Error> {
        match self {
            AnyConnection::Plain(c) => c.send_prepared(req, sink).await,
            AnyConnection::Tls(c) => c.send_prepared(req, sink).await,
            AnyConnection::Throttled(c) => c.send_prepared(req, sink).await,
            AnyConnection::ThrottledTls(c) => c.send_prepared(req, sink).await,
        }
    }

    /// [`Connection::is_reusable`].
    pub fn is_reusable(&self) -> bool {
        match self {
            AnyConnection::Plain(c) => c.is_reusable(),
            AnyConnection::Tls(c) => c.is_reusable(),
            AnyConnection::Throttled(c) => c.is_reusable(),
            AnyConnection::ThrottledTls(c) => c.is_reusable(),
        }
    }

    /// [`Connection::closed_by_server`].
    pub async fn closed_by_server(&mut self) -> std::io::Result<()> {
        match self {
            AnyConnection::Plain(c) => c.closed_by_server().await,
            AnyConnection::Tls(c) => c.closed_by_server().await,
            AnyConnection::Throttled(c) => c.closed_by_server().await,
            AnyConnection::ThrottledTls(c) => c.closed_by_server().await,
        }
    }

    /// [`Connection::server_closed_yet`].
    pub fn server_closed_yet(&mut self) -> bool {
        match self {
            AnyConnection::Plain(c) => c.server_closed_yet(),
            AnyConnection::Tls(c) => c.server_closed_yet(),
            AnyConnection::Throttled(c) => c.server_closed_yet(),
            AnyConnection::ThrottledTls(c) => c.server_closed_yet(),
        }
    }

    /// Closes the connection and keeps its buffers for the next one ([`Buffers`]). Only a
    /// plain connection's are kept: the others are opened with new buffers (their set-up
    /// costs far more than two allocations), so theirs are freed.
    pub fn into_buffers(self) -> Option<Buffers> {
        match self {
            AnyConnection::Plain(c) => Some(c.into_buffers()),
            _ => None,
        }
    }

    /// [`Connection::requests_sent`].
    pub fn requests_sent(&self) -> u64 {
        match self {
            AnyConnection::Plain(c) => c.requests_sent(),
            AnyConnection::Tls(c) => c.requests_sent(),
            AnyConnection::Throttled(c) => c.requests_sent(),
            AnyConnection::ThrottledTls(c) => c.requests_sent(),
        }
    }
}

/// Opens a connection to `addr`: TLS when `tls` is `Some((session, server_name))` (as
/// [`connect_tls`]), plain TCP otherwise (as [`connect`]); with a bandwidth cap when
/// `opts.throttle` is `Some`. Returns the connection and, for TLS, the handshake's kind and
/// duration.
pub async fn connect_any(
    addr: SocketAddr,
    opts: &ConnectOptions,
    tls: Option<(&TlsSession, &str)>,
) -> Result<(AnyConnection, Option<(HandshakeKind, Duration)>), Error> {
    connect_any_with(addr, opts, tls, None).await
}

/// [`connect_any`], a plain connection reading and writing through `buffers` when given (a
/// previous connection's, from [`AnyConnection::into_buffers`]); the other transports
/// allocate their own.
pub async fn connect_any_with(
    addr: SocketAddr,
    opts: &ConnectOptions,
    tls: Option<(&TlsSession, &str)>,
    buffers: Option<Buffers>,
) -> Result<(AnyConnection, Option<(HandshakeKind, Duration)>), Error> {
    Ok(match (tls, opts.throttle.is_some()) {
        (None, false) => {
            let stream = connect_tcp(addr, opts).await?;
            let conn = Connection::with_buffers(stream, buffers.unwrap_or_default());
            (AnyConnection::Plain(conn), None)
        }
        (None, true) => (
            AnyConnection::Throttled(Box::new(connect_throttled(addr, opts).await?)),
            None,
        ),
        // The TLS handshakes are boxed: their futures hold a TLS client (kilobytes), and inline
        // they would size this whole future, plain connections included, which every VU
        // connecting at once holds together (issue 17: freed, that memory stays resident).
        (Some((session, name)), false) => {
            let (c, kind, took) = Box::pin(connect_tls(addr, opts, session, name)).await?;
            (AnyConnection::Tls(Box::new(c)), Some((kind, took)))
        }
        (Some((session, name)), true) => {
            let (c, kind, took) =
                Box::pin(connect_tls_throttled(addr, opts, session, name)).await?;
            (AnyConnection::ThrottledTls(Box::new(c)), Some((kind, took)))
        }
    })
}
