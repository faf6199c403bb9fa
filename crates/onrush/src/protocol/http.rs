//! HTTP/1.1 behind the [`Client`] trait: templates rendered into reused buffers, connections kept
//! per virtual user according to the connection scope, failures classified.

use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::time::{Duration, Instant};

use onrush_http1::{self as http1, Connection, ErrorKind, Request, RequestBody, TlsFailure};
use onrush_metrics::{FailureClass, Handshake, RequestRecord};
use onrush_plan::{Body, ConnectionScope, RenderContext, RequestStep};

use super::{Client, Exchange};

/// A resolved place to send requests: socket address and `Host` header value.
#[derive(Debug)]
pub struct HttpTarget {
    pub addr: SocketAddr,
    pub host_header: Vec<u8>,
    /// `https://`: connections are TLS, verified against `server_name`.
    pub tls: bool,
    pub server_name: String,
}

/// A connection of either transport; the HTTP/1.1 framing above it is the same.
enum Conn {
    Plain(Connection),
    Tls(Box<http1::TlsConnection>),
}

impl Conn {
    async fn send(
        &mut self,
        request: &Request<'_>,
        sink: &mut http1::Discard,
    ) -> Result<http1::Response, http1::Error> {
        match self {
            Conn::Plain(c) => c.send(request, sink).await,
            Conn::Tls(c) => c.send(request, sink).await,
        }
    }
}

/// A request step ready to run: the plan's step, its target resolved.
pub struct HttpStep {
    pub plan: RequestStep,
    /// Index into the session's connection slots (one slot per distinct target).
    pub target_slot: usize,
    pub target: Arc<HttpTarget>,
    /// Preformatted header lines that never change (constant templates + User-Agent).
    constant_headers: Vec<u8>,
    timeout: Duration,
}

impl HttpStep {
    pub fn new(
        plan: RequestStep,
        target_slot: usize,
        target: Arc<HttpTarget>,
        default_timeout: Duration,
    ) -> Result<Self, String> {
        let mut constant_headers = Vec::new();
        let has_user_agent = plan
            .headers
            .iter()
            .any(|(n, _)| n.eq_ignore_ascii_case("user-agent"));
        if !has_user_agent {
            constant_headers.extend_from_slice(USER_AGENT);
        }
        let ctx = RenderContext {
            vu: 0,
            iteration: 0,
        };
        let mut value = Vec::new();
        for (name, template) in &plan.headers {
            if template.is_constant() {
                value.clear();
                template.render(&ctx, &mut value);
                http1::push_header(&mut constant_headers, name.as_bytes(), &value)
                    .map_err(|e| format!("header {name:?}: {e}"))?;
            }
        }
        let timeout = plan.timeout.unwrap_or(default_timeout);
        Ok(HttpStep {
            plan,
            target_slot,
            target,
            constant_headers,
            timeout,
        })
    }
}

const USER_AGENT: &[u8] =
    concat!("User-Agent: onrush/", env!("CARGO_PKG_VERSION"), "\r\n").as_bytes();

/// One virtual user's HTTP session.
pub struct HttpClient {
    scope: ConnectionScope,
    /// Source addresses to spread new connections over; each new connection takes the next one,
    /// starting at an offset given by the VU, so VUs and reconnects both spread.
    source_addresses: Arc<[IpAddr]>,
    next_source: usize,
    close_reset: bool,
    connections: Vec<Option<Conn>>,
    /// This VU's TLS session (its session cache, per the plan's `tls.session`), for https targets.
    tls: Option<http1::TlsSession>,
    /// True while a connect is in flight, so a timeout can say which phase it hit.
    connecting: bool,
    path: Vec<u8>,
    headers: Vec<u8>,
    body: Vec<u8>,
}

impl HttpClient {
    pub fn new(
        scope: ConnectionScope,
        target_slots: usize,
        source_addresses: Arc<[IpAddr]>,
        close_reset: bool,
        vu: u64,
        tls: Option<http1::TlsSession>,
    ) -> Self {
        HttpClient {
            scope,
            tls,
            next_source: vu as usize,
            source_addresses,
            close_reset,
            connections: (0..target_slots).map(|_| None).collect(),
            connecting: false,
            path: Vec::with_capacity(256),
            headers: Vec::with_capacity(256),
            body: Vec::new(),
        }
    }

    fn connect_options(&mut self) -> http1::ConnectOptions {
        let local_addr = if self.source_addresses.is_empty() {
            None
        } else {
            self.next_source = self.next_source.wrapping_add(1);
            Some(self.source_addresses[self.next_source % self.source_addresses.len()])
        };
        http1::ConnectOptions {
            local_addr,
            linger_reset: self.close_reset,
            ..Default::default()
        }
    }

    /// Renders the per-request parts of `step` into the session's buffers.
    fn render(&mut self, step: &HttpStep, ctx: &RenderContext) -> Result<(), String> {
        self.path.clear();
        step.plan.path.render(ctx, &mut self.path);
        self.headers.clear();
        self.headers.extend_from_slice(&step.constant_headers);
        for (name, template) in &step.plan.headers {
            if !template.is_constant() {
                self.body.clear();
                template.render(ctx, &mut self.body);
                http1::push_header(&mut self.headers, name.as_bytes(), &self.body)
                    .map_err(|e| format!("header {name:?}: {e}"))?;
            }
        }
        self.body.clear();
        if let Body::Inline(template) = &step.plan.body {
            template.render(ctx, &mut self.body);
        }
        Ok(())
    }

    async fn exchange(
        &mut self,
        step: &HttpStep,
        record: &mut RequestRecord,
        opened: &mut bool,
    ) -> Result<http1::Response, FailureClass> {
        let slot = step.target_slot;
        // A reused keep-alive connection may have been closed by the server while idle; that
        // race is not the target's fault, so retry once on a fresh connection.
        for attempt in 0..2 {
            if self.connections[slot].is_none() {
                let options = self.connect_options();
                let started = Instant::now();
                self.connecting = true;
                let conn = match (&step.target.tls, &self.tls) {
                    (true, Some(session)) => {
                        let target = &step.target;
                        http1::connect_tls(target.addr, &options, session, &target.server_name)
                            .await
                            .map(|(conn, kind, took)| {
                                record.handshake = Some(Handshake {
                                    resumed: kind == http1::HandshakeKind::Resumed,
                                    duration_us: micros(took),
                                });
                                Conn::Tls(Box::new(conn))
                            })
                    }
                    _ => http1::connect(step.target.addr, &options)
                        .await
                        .map(Conn::Plain),
                };
                self.connecting = false;
                let conn = conn.map_err(|e| classify(&e))?;
                record.connect_us = Some(micros(started.elapsed()));
                *opened = true;
                self.connections[slot] = Some(conn);
            }
            let conn = self.connections[slot].as_mut().expect("connected above");
            let body = match &step.plan.body {
                Body::None => RequestBody::Empty,
                Body::Inline(_) => RequestBody::Bytes(&self.body),
                Body::File(path) => RequestBody::File(path),
            };
            let request = Request {
                method: &step.plan.method,
                target: &self.path,
                host: &step.target.host_header,
                headers: &self.headers,
                body,
                close: false,
            };
            match conn.send(&request, &mut http1::Discard).await {
                Ok(response) => return Ok(response),
                Err(e) => {
                    self.connections[slot] = None;
                    if attempt == 0 && e.is_stale_reuse() {
                        continue;
                    }
                    return Err(classify(&e));
                }
            }
        }
        Err(FailureClass::ClosedEarly)
    }
}

impl Client for HttpClient {
    type Step = HttpStep;

    async fn execute(
        &mut self,
        step: &HttpStep,
        ctx: &RenderContext,
        intended_start: Instant,
    ) -> Exchange {
        let started = Instant::now();
        let mut record = RequestRecord {
            latency_us: 0,
            service_us: 0,
            connect_us: None,
            ttfb_us: None,
            bytes_in: 0,
            bytes_out: 0,
            status: 0,
            failure: None,
            handshake: None,
        };
        let mut opened = false;
        if let Err(message) = self.render(step, ctx) {
            // A runtime value made an invalid header: the plan's fault, counted, not fatal.
            let _ = message;
            record.failure = Some(FailureClass::Io);
        } else {
            let outcome =
                tokio::time::timeout(step.timeout, self.exchange(step, &mut record, &mut opened))
                    .await;
            match outcome {
                Ok(Ok(response)) => {
                    record.status = response.status;
                    record.bytes_in = response.bytes_in;
                    record.bytes_out = response.bytes_out;
                    record.ttfb_us = Some(micros(
                        response.first_byte_at.saturating_duration_since(started),
                    ));
                    record.failure = status_failure(response.status, &step.plan.expect_status);
                    if !response.keep_alive {
                        self.connections[step.target_slot] = None;
                    }
                }
                Ok(Err(class)) => record.failure = Some(class),
                Err(_elapsed) => {
                    self.connections[step.target_slot] = None;
                    record.failure = Some(if self.connecting {
                        FailureClass::ConnectTimeout
                    } else {
                        FailureClass::Timeout
                    });
                    self.connecting = false;
                }
            }
        }
        if self.scope == ConnectionScope::PerRequest {
            self.connections[step.target_slot] = None;
        }
        let finished = Instant::now();
        record.service_us = micros(finished - started);
        record.latency_us =
            micros(finished.saturating_duration_since(intended_start)).max(record.service_us);
        Exchange {
            record,
            opened_connection: opened,
        }
    }

    fn end_iteration(&mut self) {
        if self.scope == ConnectionScope::PerIteration {
            self.connections.iter_mut().for_each(|c| *c = None);
        }
    }
}

fn status_failure(status: u16, expected: &Option<Vec<u16>>) -> Option<FailureClass> {
    match expected {
        Some(list) if list.contains(&status) => None,
        Some(_) => Some(FailureClass::UnexpectedStatus),
        None if status >= 500 => Some(FailureClass::Http5xx),
        None if status >= 400 => Some(FailureClass::Http4xx),
        None => None,
    }
}

fn classify(error: &http1::Error) -> FailureClass {
    if let Some(tls) = error.tls_failure() {
        return match tls {
            TlsFailure::CertificateUnknown => FailureClass::TlsCertificateUnknown,
            TlsFailure::CertificateExpired => FailureClass::TlsCertificateExpired,
            TlsFailure::NameMismatch => FailureClass::TlsNameMismatch,
            TlsFailure::ClientCertificateRequired => FailureClass::TlsClientCertificateRequired,
            TlsFailure::ClientCertificateRejected => FailureClass::TlsClientCertificateRejected,
            TlsFailure::Protocol => FailureClass::TlsProtocol,
            TlsFailure::Other => FailureClass::TlsOther,
        };
    }
    match error.kind() {
        ErrorKind::ConnectRefused => FailureClass::ConnectRefused,
        ErrorKind::AddrNotAvailable => FailureClass::AddrNotAvailable,
        ErrorKind::Reset => FailureClass::Reset,
        ErrorKind::ClosedEarly => FailureClass::ClosedEarly,
        ErrorKind::BadResponse => FailureClass::BadResponse,
        ErrorKind::ConnectOther | ErrorKind::Io => FailureClass::Io,
    }
}

pub(crate) fn micros(d: Duration) -> u64 {
    d.as_micros().min(u64::MAX as u128) as u64
}
