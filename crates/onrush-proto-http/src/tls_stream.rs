//! A TLS connection for the other protocols' steps (`wss://`, `grpcs://`, `tls://` of TCP and
//! Thrift): opened by onrush-http as HTTPS opens its own, its failure classified as HTTPS's,
//! and its timings recorded in the step's exchange the same way.

use std::net::SocketAddr;

use onrush_http::{ConnectOptions, HandshakeKind, TlsSession, TlsTcpStream};
use onrush_protocol::Moment;
use onrush_protocol::{micros, Exchange, FailureClass, Handshake};

use crate::classify::classify;

/// Connects to `addr` and makes the TLS handshake with `session` for `host`; records in
/// `exchange` the connect time (the TCP part, from `started`, when the step began) and the
/// handshake (full or resumed, and how long it took).
pub async fn connect_tls(
    addr: SocketAddr,
    opts: &ConnectOptions,
    session: &TlsSession,
    host: &str,
    exchange: &mut Exchange,
    started: Moment,
) -> Result<TlsTcpStream, FailureClass> {
    let (stream, kind, took) = onrush_http::connect_tls_stream(addr, opts, session, host)
        .await
        .map_err(|e| classify(&e))?;
    exchange.record.connect_us = Some(micros(started.elapsed().saturating_sub(took)));
    exchange.record.handshake = Some(Handshake {
        resumed: kind == HandshakeKind::Resumed,
        duration_us: micros(took),
    });
    Ok(stream)
}
