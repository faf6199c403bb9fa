//! The connection under a stream step (`tcp:` here, `thrift:` in onrush-proto-thrift): plain
//! TCP, or TLS over it for a `tls://HOST:PORT` target. TLS is onrush-http's (the rustls
//! configuration HTTPS, `wss://` and `grpcs://` use), so the scenario's `http.tls` applies as
//! it does to them: CA, `insecure`, client identities (mutual TLS), versions, ciphers,
//! `kx_groups`, `server_name`, and `session` (resume, shared, full). No ALPN is offered: these
//! are not HTTP.
//!
//! Metrics as for HTTPS: the TCP connect is `connect_us`, the handshake its own `handshake`
//! (full or resumed, and its duration). Failures as for HTTPS: a connect or handshake still
//! running at the step's deadline is `connect_timeout` or `tls_handshake_timeout`, a failed
//! handshake the TLS class that says why (`tls_certificate_unknown`,
//! `tls_client_certificate_required`, ...), also when the server says so only after the
//! handshake (TLS 1.3 and a refused client certificate: the first read fails with the alert).

use std::io;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use onrush_http::{ConnectOptions, IoOp, SessionMode, TlsClient, TlsSession};
use onrush_plan::{ConnectionScope, Plan};
use onrush_protocol::Moment;
use onrush_protocol::{connect_failure, micros, Exchange, FailureClass, Warmed};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;
use tokio_rustls::client::TlsStream;

/// An open connection: TCP, or TLS over TCP.
pub enum Stream {
    Plain(TcpStream),
    Tls(Box<TlsStream<TcpStream>>),
}

/// Per scenario, the TLS client of its `http.tls`, built when a step of the scenario first
/// names a `tls://` target (a plan without one builds none, and reads no CA file).
#[derive(Default)]
pub struct TlsClients {
    clients: Vec<Option<(Arc<TlsClient>, SessionMode)>>,
}

impl TlsClients {
    pub fn new(plan: &Plan) -> Self {
        TlsClients {
            clients: plan.scenarios.iter().map(|_| None).collect(),
        }
    }

    /// Builds scenario `scenario`'s TLS client, once; a bad `http.tls` (a CA file that is not
    /// PEM, a certificate without its key, ...) is the error, naming the scenario.
    pub fn require(&mut self, plan: &Plan, scenario: usize) -> anyhow::Result<()> {
        if self.clients[scenario].is_some() {
            return Ok(());
        }
        let scenario_plan = &plan.scenarios[scenario];
        let mut options = onrush_proto_http::tls_options(&scenario_plan.http.tls);
        options.no_alpn = true;
        let client = TlsClient::new(&options)
            .map_err(|e| anyhow::anyhow!("scenario {}: http.tls: {e}", scenario_plan.name))?;
        self.clients[scenario] = Some((
            Arc::new(client),
            onrush_proto_http::session_mode(scenario_plan.http.tls.session),
        ));
        Ok(())
    }

    /// VU `vu`'s TLS session in scenario `scenario` (its session cache, its client identity),
    /// when the scenario has a `tls://` target.
    pub fn session(&self, scenario: usize, vu: u64) -> Option<TlsSession> {
        self.clients[scenario]
            .as_ref()
            .map(|(client, mode)| client.session(*mode, vu))
    }
}

/// Where a connection goes: the address, and for TLS the VU's session and the host as written
/// (the server name sent and checked, unless `http.tls.server_name` says otherwise).
pub struct Dial<'a> {
    pub addr: SocketAddr,
    pub tls: Option<(&'a TlsSession, &'a str)>,
    /// When connecting (and the handshake) must be done by: the step's deadline.
    pub deadline: tokio::time::Instant,
}

impl<'a> Dial<'a> {
    /// A connection to `addr`, over TLS when `tls` (a `tls://` target) with the VU's
    /// `session`, for `host`; due `timeout` after `started`.
    pub fn new(
        addr: SocketAddr,
        tls: bool,
        session: Option<&'a TlsSession>,
        host: &'a str,
        started: Moment,
        timeout: std::time::Duration,
    ) -> Result<Self, FailureClass> {
        let tls = match (session, tls) {
            (Some(session), true) => Some((session, host)),
            // The plan builds a TLS client for every scenario with a `tls://` target.
            (None, true) => return Err(FailureClass::TlsOther),
            (_, false) => None,
        };
        Ok(Dial {
            addr,
            tls,
            deadline: (started + timeout).to_instant().into(),
        })
    }
}

/// Opens a VU's stream into `slot` ahead of the load (an open model's warm-up:
/// `Session::warm_up`), as its first exchange would, when the connection scope keeps one:
/// `per_vu`, and `shared` (per VU for a byte stream). `per_iteration` and `per_request` open
/// nothing: connecting is part of what they measure. The connect's figures belong to no step:
/// a scratch exchange takes them.
pub async fn warm_up(
    slot: &mut Option<Stream>,
    scope: ConnectionScope,
    addr: SocketAddr,
    tls: bool,
    session: Option<&TlsSession>,
    host: &str,
    timeout: std::time::Duration,
) -> Warmed {
    let keeps = matches!(scope, ConnectionScope::PerVu | ConnectionScope::Shared);
    if !keeps || slot.is_some() {
        return Warmed::Nothing;
    }
    let started = Moment::now();
    let Ok(dial) = Dial::new(addr, tls, session, host, started, timeout) else {
        return Warmed::Failed;
    };
    let mut scratch = Exchange::empty();
    match tokio::time::timeout(timeout, Box::pin(open(dial, &mut scratch, started))).await {
        Ok(Ok(stream)) => {
            *slot = Some(stream);
            Warmed::Opened
        }
        Ok(Err(_)) | Err(_) => Warmed::Failed,
    }
}

/// Opens a connection as `dial` says, recording its connect time (the TCP part), its TLS
/// handshake and `opened_connection` in `exchange` (`started`: when the step began).
pub async fn open(
    dial: Dial<'_>,
    exchange: &mut Exchange,
    started: Moment,
) -> Result<Stream, FailureClass> {
    let stream = match dial.tls {
        None => {
            let stream = TcpStream::connect(dial.addr)
                .await
                .map_err(connect_failure)?;
            let _ = stream.set_nodelay(true);
            exchange.record.connect_us = Some(micros(started.elapsed()));
            Stream::Plain(stream)
        }
        Some((session, host)) => {
            let opts = ConnectOptions {
                nodelay: true,
                deadline: Some(dial.deadline),
                ..ConnectOptions::default()
            };
            let stream =
                onrush_proto_http::connect_tls(dial.addr, &opts, session, host, exchange, started)
                    .await?;
            Stream::Tls(Box::new(stream))
        }
    };
    exchange.opened_connection = true;
    Ok(stream)
}

/// The failure class of an error reading or writing an open connection: a TLS alert (a
/// refused client certificate, ...) by its TLS class, with its hint kept as the class's
/// example; else as `onrush_protocol::io_failure` says (reset, closed early, io).
pub fn stream_failure(e: io::Error, op: IoOp) -> FailureClass {
    let carries_tls = e
        .get_ref()
        .is_some_and(|inner| inner.is::<tokio_rustls::rustls::Error>());
    if carries_tls {
        onrush_proto_http::classify(&onrush_http::Error::io(e, op))
    } else {
        onrush_protocol::io_failure(e)
    }
}

impl AsyncRead for Stream {
    /// A TLS peer that closes its TCP connection without TLS's close_notify (many servers do,
    /// Python's `ssl` among them) reads as the end of the stream, as a plain close does: a
    /// reply that ends with the close (`until_close`) is then complete, and any other reply
    /// ends early (`closed_early`), in TLS as in plain TCP.
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Stream::Plain(s) => Pin::new(s).poll_read(cx, buf),
            Stream::Tls(s) => match Pin::new(s.as_mut()).poll_read(cx, buf) {
                Poll::Ready(Err(e)) if e.kind() == io::ErrorKind::UnexpectedEof => {
                    Poll::Ready(Ok(()))
                }
                poll => poll,
            },
        }
    }
}

impl AsyncWrite for Stream {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        data: &[u8],
    ) -> Poll<io::Result<usize>> {
        match self.get_mut() {
            Stream::Plain(s) => Pin::new(s).poll_write(cx, data),
            Stream::Tls(s) => Pin::new(s.as_mut()).poll_write(cx, data),
        }
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Stream::Plain(s) => Pin::new(s).poll_flush(cx),
            Stream::Tls(s) => Pin::new(s.as_mut()).poll_flush(cx),
        }
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Stream::Plain(s) => Pin::new(s).poll_shutdown(cx),
            Stream::Tls(s) => Pin::new(s.as_mut()).poll_shutdown(cx),
        }
    }
}
