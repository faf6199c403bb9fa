//! Opening a session's connections: the options of a new connection, the shared pool's, and
//! the connect with its time recorded. A child of the session module, so it sees the
//! session's fields.

use onrush_protocol::Moment;

use onrush_http1 as http1;
use onrush_plan::{CloseMode, HttpVersion};
use onrush_protocol::{micros, FailureClass, Handshake, RequestRecord};

use super::HttpSession;
use crate::alt_svc::AltSvc;
use crate::classify::classify;
use crate::connect::{self, HttpConn};
use crate::step::HttpStep;
use crate::target::HttpTarget;

impl HttpSession {
    /// Options for a new connection of `step`'s request, due by `deadline`: the TCP connect
    /// and the TLS handshake must finish by the request's deadline, so that running out of
    /// time is classified by phase (`connect_timeout`, `tls_handshake_timeout`). The outer
    /// timeout of the request stays as the backstop.
    ///
    /// A plain HTTP/1.1 connect gets no deadline of its own: its only phase is the TCP
    /// connect, which the request's timer already classifies (`connecting`), and a deadline
    /// here arms a second timer in tokio's wheel and removes it again for every connection
    /// (~700 user instructions per connection, callgrind; docs/benchmarks.md).
    pub(super) fn connect_options(
        &mut self,
        step: &HttpStep,
        deadline: Moment,
    ) -> http1::ConnectOptions {
        let plain_h1 = self.is_plain_h1(step);
        let local_addr = if self.source_addresses.is_empty() {
            None
        } else {
            self.next_source = self.next_source.wrapping_add(1);
            Some(self.source_addresses[self.next_source % self.source_addresses.len()])
        };
        http1::ConnectOptions {
            local_addr,
            linger_reset: self.close == CloseMode::Reset,
            throttle: self.throttle,
            deadline: (!plain_h1).then(|| deadline.to_instant().into()),
            ..Default::default()
        }
    }

    /// `connections: shared`: the connection for `step`'s next request, from the worker's
    /// pool, or newly opened (its connect time and handshake go into `record`, and `opened` is
    /// set). The other scopes open theirs with [`HttpSession::open`] or
    /// [`HttpSession::open_plain`].
    pub(super) async fn shared_connection(
        &mut self,
        step: &HttpStep,
        record: &mut RequestRecord,
        opened: &mut bool,
    ) -> Result<HttpConn, FailureClass> {
        let slot = step.target_slot;
        // `auto` over TLS tries HTTP/2 until a server has chosen HTTP/1.1 once: VUs that start
        // together then wait for one connection instead of each opening its own.
        if self.version == HttpVersion::H3 || self.upgrade_port(step).is_some() {
            let lease = self.pool.h2_lease(slot);
            let entry = lease.entry.clone();
            let conn = entry
                .get_or_open_h3(|| async {
                    match self.open(step, record, opened).await {
                        Ok(HttpConn::H3 { conn, .. }) => Ok(conn),
                        // `auto`'s QUIC handshake failed and `open` fell back to TCP: this
                        // request goes on that connection, the pool's entry stays empty.
                        Ok(other) => Err(Ok(other)),
                        Err(class) => Err(Err(class)),
                    }
                })
                .await;
            return match conn {
                Ok(conn) => Ok(HttpConn::H3 {
                    conn,
                    lease: Some(lease),
                }),
                Err(Ok(fallback)) => Ok(fallback),
                Err(Err(class)) => Err(class),
            };
        }
        let try_h2 = self.version == HttpVersion::H2
            || (self.version == HttpVersion::Auto && step.target.tls && !self.pool.speaks_h1(slot));
        if try_h2 {
            let lease = self.pool.h2_lease(slot);
            let entry = lease.entry.clone();
            let conn = entry
                .get_or_open(|| async {
                    match self.open(step, record, opened).await {
                        Ok(HttpConn::H2 { conn, .. }) => Ok(conn),
                        // `open` speaks HTTP/3 only for `version: h3`, handled above.
                        Ok(HttpConn::H3 { .. }) => Err(Err(FailureClass::TlsProtocol)),
                        Ok(HttpConn::H1(h1)) => Err(Ok(h1)),
                        Err(class) => Err(Err(class)),
                    }
                })
                .await;
            return match conn {
                Ok(conn) => Ok(HttpConn::H2 {
                    conn,
                    lease: Some(lease),
                }),
                // `auto` and the server chose HTTP/1.1: this VU keeps that connection (it
                // joins the HTTP/1.1 pool after the request); VUs waiting on the entry open
                // their own.
                Err(Ok(h1)) => {
                    entry.mark_dead();
                    self.pool.set_speaks_h1(slot);
                    Ok(HttpConn::H1(h1))
                }
                Err(Err(class)) => Err(class),
            };
        }
        if let Some(idle) = self.pool.take_idle(slot) {
            return Ok(HttpConn::H1(idle));
        }
        self.open(step, record, opened).await
    }

    /// Opens a new connection for `step` and records its connect time and handshake.
    pub(super) async fn open(
        &mut self,
        step: &HttpStep,
        record: &mut RequestRecord,
        opened: &mut bool,
    ) -> Result<HttpConn, FailureClass> {
        let (started, options, buffers) = self.begin_connect(step);
        let tls = if step.target.tls {
            self.tls.as_ref()
        } else {
            None
        };
        if let Some(port) = self.upgrade_port(step) {
            // The QUIC handshake gets half the time left, so that a fallback to TCP still
            // has the other half (quinn ignores ICMP: a closed UDP port is a silent one).
            let now = tokio::time::Instant::now();
            let quic_options = http1::ConnectOptions {
                deadline: options
                    .deadline
                    .map(|at| now + at.saturating_duration_since(now) / 2),
                ..options
            };
            let target = HttpTarget {
                addr: std::net::SocketAddr::new(step.target.addr.ip(), port),
                host_header: step.target.host_header.clone(),
                tls: true,
                server_name: step.target.server_name.clone(),
            };
            let quic =
                connect::open(&target, &quic_options, tls, HttpVersion::H3, &self.h2, None).await;
            if quic.is_ok() {
                crate::alt_svc::count_upgrade();
                return self.opened(quic, started, record, opened);
            }
            crate::alt_svc::count_fallback();
            self.alt[step.target_slot] = AltSvc::Broken {
                until: std::time::Instant::now() + crate::alt_svc::BROKEN_FOR,
            };
        }
        let result =
            connect::open(&step.target, &options, tls, self.version, &self.h2, buffers).await;
        self.opened(result, started, record, opened)
    }

    /// `version: auto` over TLS: the UDP port of the HTTP/3 that `step`'s origin advertised
    /// (`Alt-Svc`) and that has not expired nor failed; `None` otherwise.
    pub(super) fn upgrade_port(&self, step: &HttpStep) -> Option<u16> {
        if self.version != HttpVersion::Auto || !step.target.tls || self.tls.is_none() {
            return None;
        }
        self.alt[step.target_slot].h3_port(std::time::Instant::now())
    }

    /// A plain `http://` target spoken as HTTP/1.1: [`HttpSession::open_plain`] opens its
    /// connections.
    pub(super) fn is_plain_h1(&self, step: &HttpStep) -> bool {
        !step.target.tls && self.version != HttpVersion::H2
    }

    /// [`HttpSession::open`] for a plain HTTP/1.1 target ([`HttpSession::is_plain_h1`]):
    /// the same, through [`connect::open_plain`]'s smaller future.
    pub(super) async fn open_plain(
        &mut self,
        step: &HttpStep,
        record: &mut RequestRecord,
        opened: &mut bool,
    ) -> Result<HttpConn, FailureClass> {
        let (started, options, buffers) = self.begin_connect(step);
        let result = connect::open_plain(&step.target, &options, buffers).await;
        self.opened(result, started, record, opened)
    }

    /// [`HttpSession::open_plain`] for a connection without a bandwidth cap, without a
    /// future: the connection, its connect time recorded, when the TCP handshake was done as
    /// connect() returned (loopback, usually); else the connect in progress, for
    /// [`HttpSession::finish_plain`].
    pub(super) fn start_plain(
        &mut self,
        step: &HttpStep,
        record: &mut RequestRecord,
        opened: &mut bool,
    ) -> Result<PlainStart, FailureClass> {
        let (started, options, buffers) = self.begin_connect(step);
        let result = match http1::start_tcp(step.target.addr, &options) {
            Ok(http1::TcpConnect::Open(stream)) => Ok(plain(stream, buffers)),
            Ok(http1::TcpConnect::InProgress(connecting)) => {
                return Ok(PlainStart::Connecting(PlainConnecting {
                    started,
                    connecting,
                    buffers,
                }));
            }
            Err(e) => Err(classify(&e)),
        };
        self.opened(result, started, record, opened)
            .map(PlainStart::Open)
    }

    /// The rest of [`HttpSession::start_plain`]'s connect: the wait for its handshake.
    pub(super) async fn finish_plain(
        &mut self,
        c: PlainConnecting,
        record: &mut RequestRecord,
        opened: &mut bool,
    ) -> Result<HttpConn, FailureClass> {
        let PlainConnecting {
            started,
            connecting,
            buffers,
        } = c;
        let result = match connecting.finish().await {
            Ok(stream) => Ok(plain(stream, buffers)),
            Err(e) => Err(classify(&e)),
        };
        self.opened(result, started, record, opened)
    }

    /// What a request's connect starts with: the instant it starts, its options (due by the
    /// request's deadline), the last connection's buffers; `connecting` set until
    /// [`HttpSession::opened`].
    fn begin_connect(
        &mut self,
        step: &HttpStep,
    ) -> (Moment, http1::ConnectOptions, Option<http1::Buffers>) {
        let started = Moment::now();
        let options = self.connect_options(step, self.request_started + step.timeout);
        self.connecting = true;
        (started, options, self.spare_buffers.take())
    }

    /// After a connect that started at `started`: its connect time and handshake recorded.
    fn opened(
        &mut self,
        result: Result<connect::Opened, FailureClass>,
        started: Moment,
        record: &mut RequestRecord,
        opened: &mut bool,
    ) -> Result<HttpConn, FailureClass> {
        self.connecting = false;
        let connect::Opened { conn, handshake } = result?;
        if let Some((kind, took)) = handshake {
            record.handshake = Some(Handshake {
                resumed: kind == http1::HandshakeKind::Resumed,
                duration_us: micros(took),
            });
        }
        record.connect_us = Some(Moment::now().micros_since(started));
        *opened = true;
        Ok(conn)
    }
}

/// What [`HttpSession::start_plain`] got to without waiting.
pub(super) enum PlainStart {
    Open(HttpConn),
    Connecting(PlainConnecting),
}

/// A plain HTTP/1.1 connect whose TCP handshake is in progress: when it started, the connect,
/// the buffers the connection will have.
pub(super) struct PlainConnecting {
    started: Moment,
    connecting: http1::Connecting,
    buffers: Option<http1::Buffers>,
}

/// A plain HTTP/1.1 connection on `stream`, through `buffers` (a previous connection's),
/// opened for the request about to be sent on it ([`http1::Connection::for_request`]).
fn plain(stream: tokio::net::TcpStream, buffers: Option<http1::Buffers>) -> connect::Opened {
    let conn = http1::Connection::for_request(stream, buffers.unwrap_or_default());
    connect::Opened {
        conn: HttpConn::H1(http1::AnyConnection::Plain(conn)),
        handshake: None,
    }
}
