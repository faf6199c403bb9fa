//! One virtual user's HTTP session: templates rendered into reused buffers, connections kept per
//! the connection scope, cookies, redirects, decompression, the response kept (up to a limit)
//! only for steps with extractors or checks, failures classified.

use std::net::IpAddr;
use std::pin::pin;
use std::rc::Rc;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use crate::request::Body;
use onrush_http1::cookies::CookieJar;
use onrush_http1::{self as http1, AnyConnection, Decompress};
use onrush_http2::H2Settings;
use onrush_plan::{CloseMode, ConnectionScope, CookieMode, HttpVersion, RenderContext};
use onrush_protocol::turn;
use onrush_protocol::{
    within, Exchange, FailureClass, Moment, RequestRecord, RequestStart, RequestTimer,
    ResponseView, Session, Warmed,
};

use crate::alt_svc::AltSvc;
use crate::capture::Capture;
use crate::classify::{classify, status_failure};
use crate::connect::{self, HttpConn};
use crate::plan::ScenarioHttp;
use crate::pool::ConnectionPool;
use crate::redirect::is_redirect;
use crate::render::{RenderError, RequestParts};
use crate::step::{build_multipart, HttpStep};

/// How long a `per_request` connection waits for the server to close it after a response to
/// `Connection: close` (`http.close: server`) before onrush closes it itself. A server that
/// honours the header sends its FIN right behind the response, so a round trip at most; one that
/// ignores it should not hold the VU long.
const SERVER_CLOSE_GRACE: Duration = Duration::from_millis(100);

mod follow;
mod open;

use follow::Ahead;
use open::PlainStart;

/// One virtual user's HTTP session.
pub struct HttpSession {
    /// The scenario's index, for the plan's scripts (`before:` hooks).
    pub(crate) scenario: u32,
    scope: ConnectionScope,
    cookie_mode: CookieMode,
    /// Source addresses to spread new connections over; each new connection takes the next one,
    /// starting at an offset given by the VU, so VUs and reconnects both spread.
    source_addresses: Arc<[IpAddr]>,
    next_source: usize,
    close: CloseMode,
    throttle: Option<u64>,
    /// The connection in use per target slot: the VU's own (per_vu, ...), or one taken from the
    /// worker's shared pool for the duration of one request (`connections: shared`).
    connections: Vec<Option<HttpConn>>,
    pool: Rc<ConnectionPool>,
    version: HttpVersion,
    h2: H2Settings,
    /// This VU's TLS session (its session cache, per the plan's `tls.session`), for https targets.
    tls: Option<http1::TlsSession>,
    /// True while a connect is in flight, so a timeout can say which phase it hit.
    connecting: bool,
    /// When the current request started: its timeout runs from here.
    request_started: Moment,
    /// When the first byte of the current request's first response arrived (`took`): its
    /// TTFB, worked out with the latency (`execute`).
    first_byte_at: Option<Moment>,
    /// Enforces the requests' timeouts (one timer per session, not one per request).
    timer: RequestTimer,
    /// The read and write buffers of the last plain HTTP/1.1 connection closed after its
    /// request (`per_request`), for the next one: two allocations (one zeroed) fewer per
    /// connection.
    spare_buffers: Option<http1::Buffers>,
    jar: CookieJar,
    sink: Decompress<Capture>,
    /// `version: auto`: what each target slot advertised of HTTP/3 (`Alt-Svc`).
    alt: Vec<AltSvc>,
    /// The last response's body hash (hex), when its step checks one.
    hash_hex: Option<String>,
    /// A runtime variable that was unset when the last request was rendered.
    unset: Option<usize>,
    /// The current request's target, headers and body, rendered into reused buffers.
    parts: RequestParts,
    /// The target slot and the engine's turn ([`turn`]) of the last response the short path
    /// received: the same turn at the next request on that slot means the VU was not
    /// suspended in between, and the connection's idle check can be skipped.
    last_response: (usize, u64),
    /// `--debug` ([`onrush_protocol::debug`]): every request rendered (none sent as its step
    /// encoded it ahead) and every response's head and body kept, to be printed.
    debug: bool,
    /// With `debug`: the last request's method, and why its body is not shown, if it is not
    /// (boxed: a word in every VU's session, which is off nearly always).
    debug_sent: Option<Box<(String, Option<&'static str>)>>,
}

impl HttpSession {
    /// The VU's cookie jar, unless the scenario turned cookies off (`http.cookies: off`): other
    /// protocols' requests that are HTTP at heart (a WebSocket's upgrade) send and store
    /// cookies through it, as a browser does.
    pub fn cookie_jar_mut(&mut self) -> Option<&mut CookieJar> {
        (self.cookie_mode != CookieMode::Off).then_some(&mut self.jar)
    }

    /// The session of VU `vu` of a scenario whose HTTP settings are `scenario`; `pool` is the
    /// scenario's shared connection pool on this worker (used with `connections: shared`).
    pub fn new(
        scenario: &ScenarioHttp,
        target_slots: usize,
        vu: u64,
        pool: Rc<ConnectionPool>,
    ) -> Self {
        let mut session = HttpSession {
            scenario: 0,
            scope: scenario.scope,
            cookie_mode: scenario.cookies,
            pool,
            version: scenario.version,
            h2: H2Settings::default(),
            tls: scenario
                .tls
                .as_ref()
                .map(|(client, mode)| client.session(*mode, vu)),
            next_source: vu as usize,
            source_addresses: scenario.source_addresses.clone(),
            close: scenario.close,
            throttle: scenario.throttle,
            connections: (0..target_slots).map(|_| None).collect(),
            connecting: false,
            request_started: Moment::now(),
            first_byte_at: None,
            timer: RequestTimer::default(),
            spare_buffers: None,
            jar: CookieJar::new(),
            sink: Decompress::new(Capture::keeping_alt_svc(
                scenario.version == HttpVersion::Auto,
            )),
            alt: vec![AltSvc::None; target_slots],
            hash_hex: None,
            unset: None,
            parts: RequestParts::default(),
            last_response: (0, turn::NONE),
            debug: onrush_protocol::debug::on(),
            debug_sent: None,
        };
        if session.debug {
            session.sink.get_mut().keep_all();
        }
        session
    }

    /// Adds the `Cookie` header for the current request.
    fn add_cookies(&mut self, step: &HttpStep) {
        if !step.cookies || self.jar.is_empty() {
            return;
        }
        self.parts.scratch.clear();
        let path_end = self
            .parts
            .path
            .iter()
            .position(|b| *b == b'?')
            .unwrap_or(self.parts.path.len());
        if self.jar.header_value(
            &step.target.server_name,
            &self.parts.path[..path_end],
            step.target.tls,
            SystemTime::now(),
            &mut self.parts.scratch,
        ) {
            let _ = http1::push_header(&mut self.parts.headers, b"Cookie", &self.parts.scratch);
        }
    }

    /// Stores the last response's `Set-Cookie` headers in the jar.
    fn store_cookies(&mut self, step: &HttpStep) {
        let c = self.sink.get_ref();
        if !step.cookies || c.headers.is_empty() {
            return;
        }
        let now = SystemTime::now();
        let path_end = self
            .parts
            .path
            .iter()
            .position(|b| *b == b'?')
            .unwrap_or(self.parts.path.len());
        for (n, v) in &c.headers {
            if &c.head[n.clone()] == b"set-cookie" {
                self.jar.store(
                    &c.head[v.clone()],
                    &step.target.server_name,
                    &self.parts.path[..path_end],
                    now,
                );
            }
        }
    }

    /// A new connection for the step's slot (TCP, TLS handshake, HTTP/2 preface, or one from
    /// the shared pool).
    async fn open_slot(
        &mut self,
        step: &HttpStep,
        record: &mut RequestRecord,
        opened: &mut bool,
    ) -> Result<HttpConn, FailureClass> {
        // Boxed: opening a connection (TCP, TLS handshake, HTTP/2 preface, the shared pool's
        // wait) is the largest future of the session; inline, every VU's task would carry its
        // bytes even while it waits on a kept-alive connection. One allocation per new
        // connection, none per request on a kept one. Only the shared pool's scope boxes the
        // pool's wait with it: the others box the connect alone, a smaller allocation.
        if self.scope == ConnectionScope::Shared {
            Box::pin(self.shared_connection(step, record, opened)).await
        } else if self.is_plain_h1(step) && self.throttle.is_none() {
            // Without a future while the connect needs no wait (loopback): boxed is only the
            // wait for a handshake still in progress.
            match self.start_plain(step, record, opened)? {
                PlainStart::Open(conn) => Ok(conn),
                PlainStart::Connecting(c) => Box::pin(self.finish_plain(c, record, opened)).await,
            }
        } else if self.is_plain_h1(step) {
            Box::pin(self.open_plain(step, record, opened)).await
        } else {
            Box::pin(self.open(step, record, opened)).await
        }
    }
}

/// How far `execute`'s short path took a request: to its outcome (`None`: timed out), or to
/// where `follow` goes on, from the first hop's response when there is one.
enum Short {
    Done(Option<Result<http1::Response, FailureClass>>),
    Follow(Option<http1::Response>),
}

impl Session for HttpSession {
    type Step = HttpStep;

    async fn execute(
        &mut self,
        step: &HttpStep,
        ctx: &RenderContext<'_>,
        start: RequestStart,
    ) -> Exchange {
        let started = start.begin();
        self.request_started = started;
        // Left set by a request cut in flight (its future dropped), it is reset here.
        self.first_byte_at = None;
        let mut exchange = Exchange::empty();
        let record = &mut exchange.record;
        let mut opened = false;
        // When the final response's last byte arrived, if there was one: the latency's end.
        let mut done_at = None;
        self.hash_hex = None;
        self.sink.get_mut().reset(step);
        if self.debug {
            let note = match step.plan.body {
                Body::File(_) => Some("a file's content, not shown"),
                Body::Multipart(_) => Some("a multipart body, not shown"),
                _ => None,
            };
            self.debug_sent = Some(Box::new((step.plan.method.clone(), note)));
        }
        // A request that never changes is sent as its step encoded it, unless the jar would
        // add a `Cookie` header to it (`add_cookies`): then it is rendered as any other.
        let prepared = step
            .prepared
            .as_ref()
            .filter(|_| (!step.cookies || self.jar.is_empty()) && !self.debug);
        let rendered = match prepared {
            Some(p) => {
                // The target is still the session's, for cookies, redirects and checks.
                // Nearly always there from the step's last request: compared, not copied
                // (clearing and copying it cost ~45 instructions per request, callgrind).
                if self.parts.path[..] != p.path[..] {
                    self.parts.path.clear();
                    self.parts.path.extend_from_slice(&p.path);
                }
                Ok(())
            }
            None => match (self.parts.render(step, ctx), step.plan.before) {
                (Ok(()), Some(hook)) => {
                    crate::before::run(hook, self.scenario, ctx, &step.plan.method, &mut self.parts)
                        .map_err(RenderError::Script)
                }
                (rendered, _) => rendered,
            },
        };
        // A multipart body with per-request values is laid out per request.
        let built;
        let multipart = match (&step.multipart, &step.plan.body) {
            (Some(m), _) => Some(m),
            (None, Body::Multipart(fields)) if rendered.is_ok() => {
                built = build_multipart(fields, ctx).ok();
                built.as_ref()
            }
            _ => None,
        };
        match rendered {
            Err(RenderError::Unset(u)) => {
                self.unset = Some(u.slot);
                record.failure = Some(FailureClass::VariableUnset);
            }
            // A runtime value made an invalid header: the plan's fault, counted, not fatal.
            Err(RenderError::Header) => record.failure = Some(FailureClass::Io),
            Err(RenderError::Script(class)) => record.failure = Some(class),
            Ok(()) if matches!(step.plan.body, Body::Multipart(_)) && multipart.is_none() => {
                record.failure = Some(FailureClass::Io);
            }
            Ok(()) => {
                let deadline = started + step.timeout;
                let outcome = {
                    let ahead = match (prepared, multipart) {
                        (Some(p), _) => Ahead::Request(&p.request),
                        (None, Some(m)) => Ahead::Multipart(m),
                        (None, None) => Ahead::Nothing,
                    };
                    let slot = step.target_slot;
                    // The common request, a layer less (`follow`'s: ~180 instructions a
                    // request, callgrind): encoded ahead, on the step's open plain HTTP/1.1
                    // connection, nothing to decompress. (`execute` reset the capture above.)
                    // What it cannot finish goes to `follow`: a redirect to follow
                    // (`redirects` > 0, as in JMeter plans imported with "follow redirects"),
                    // with its response; a reused connection the server gave up while idle,
                    // which `follow` retries once on a fresh one; and every other request.
                    let short = match (&mut self.connections[slot], ahead) {
                        (Some(HttpConn::H1(AnyConnection::Plain(c))), Ahead::Request(p))
                            if !step.decompress =>
                        {
                            let now = turn::current();
                            if now != turn::NONE && self.last_response == (slot, now) {
                                c.not_suspended_since_last_response();
                            }
                            let sent = {
                                let send = pin!(c.send_prepared(p, self.sink.get_mut()));
                                within(&mut self.timer, deadline, send).await
                            };
                            if let Some(Ok(_)) = &sent {
                                self.last_response = (slot, turn::current());
                            }
                            match sent {
                                Some(Ok(response))
                                    if step.redirects > 0 && is_redirect(response.status) =>
                                {
                                    Short::Follow(Some(response))
                                }
                                Some(Ok(response)) => {
                                    self.took(step, &response, record, true);
                                    Short::Done(Some(Ok(response)))
                                }
                                Some(Err(e)) if e.is_stale_reuse() => {
                                    self.connections[slot] = None;
                                    Short::Follow(None)
                                }
                                Some(Err(e)) => {
                                    self.connections[slot] = None;
                                    Short::Done(Some(Err(classify(&e))))
                                }
                                None => Short::Done(None),
                            }
                        }
                        _ => Short::Follow(None),
                    };
                    match short {
                        Short::Done(outcome) => outcome,
                        Short::Follow(first) => {
                            // `follow` borrows the whole session: the timer is lent out of it
                            // meanwhile.
                            let mut timer = std::mem::take(&mut self.timer);
                            let outcome = {
                                let follow =
                                    pin!(self.follow(step, ahead, record, &mut opened, first));
                                within(&mut timer, deadline, follow).await
                            };
                            self.timer = timer;
                            outcome
                        }
                    }
                };
                match outcome {
                    Some(Ok(response)) => {
                        done_at = Some(response.done_at);
                        record.status = response.status;
                        record.failure = status_failure(response.status, &step.plan.expect_status);
                        if step.hash.is_some() {
                            self.hash_hex = self.sink.get_mut().hash_hex();
                        }
                    }
                    Some(Err(class)) => record.failure = Some(class),
                    None => {
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
        }
        exchange.responded = exchange.record.status != 0;
        exchange.opened_connection = opened;
        // The latency is taken here: waiting for the server's close below is not in it. A
        // response ends when its last byte arrived (timed by the connection's read, one clock
        // read less), a failure now.
        match done_at {
            Some(at) => exchange.finish_at(at, started, start.intended),
            None => exchange.finish(started, start.intended),
        }
        if let Some(first_byte) = self.first_byte_at.take() {
            exchange.record.ttfb_us = Some(first_byte.micros_since(started));
        }
        match self.scope {
            ConnectionScope::PerRequest => {
                if let Some(HttpConn::H1(mut c)) = self.connections[step.target_slot].take() {
                    // The server was asked to close: let it close first, so that the
                    // TIME_WAIT is its own. Its FIN is usually in already: seen in tokio's
                    // readiness, or one read that returns 0, and no timer. A server that ignores
                    // the request gets a short grace, then onrush closes (and keeps the
                    // TIME_WAIT, as with `normal`).
                    if self.close == CloseMode::Server && !c.server_closed_yet() {
                        // Boxed, as connecting is: not in the future every VU waits in.
                        let closed = tokio::time::timeout(SERVER_CLOSE_GRACE, c.closed_by_server());
                        let _ = Box::pin(closed).await;
                    }
                    self.spare_buffers = c.into_buffers();
                }
            }
            ConnectionScope::Shared => match self.connections[step.target_slot].take() {
                Some(HttpConn::H1(c)) if c.is_reusable() => self.pool.put_idle(step.target_slot, c),
                // HTTP/2: dropping the handle gives the stream slot back.
                _ => {}
            },
            ConnectionScope::PerVu | ConnectionScope::PerIteration => {}
        }
        exchange
    }

    #[inline]
    fn response(&self) -> ResponseView<'_> {
        let c = self.sink.get_ref();
        ResponseView {
            status: c.status,
            head: &c.head,
            headers: &c.headers,
            body: &c.body,
            body_size: c.size,
            body_hash: self.hash_hex.as_deref(),
            url: &self.parts.path,
        }
    }

    fn request(&self) -> Option<onrush_protocol::RequestView<'_>> {
        if !self.debug {
            return None;
        }
        let step = self.debug_sent.as_ref()?;
        Some(onrush_protocol::RequestView {
            method: self.parts.method.as_deref().unwrap_or(&step.0),
            target: &self.parts.path,
            headers: &self.parts.headers,
            body: &self.parts.body,
            body_note: step.1,
        })
    }

    #[inline]
    fn take_unset(&mut self) -> Option<usize> {
        self.unset.take()
    }

    fn iteration_hooks(&self) -> bool {
        self.cookie_mode == CookieMode::PerIteration || self.scope == ConnectionScope::PerIteration
    }

    #[inline]
    fn begin_iteration(&mut self) {
        if self.cookie_mode == CookieMode::PerIteration {
            self.jar.clear();
        }
    }

    /// `connections: per_vu` (the default): the VU's keep-alive connection to the step's
    /// target, opened as the step's first request would open it (version, TLS, source
    /// address). `shared` over HTTP/1.1: one more idle connection in the worker's pool.
    /// `per_iteration` and `per_request` open nothing: their connects are part of what each
    /// iteration or request measures. Neither its connect time nor its TLS handshake is a
    /// request's, so they are in no step's figures; the engine counts the connection.
    async fn warm_up(&mut self, step: &HttpStep) -> Warmed {
        let slot = step.target_slot;
        let shared_h1 = self.scope == ConnectionScope::Shared
            && (self.version == HttpVersion::H1
                || (self.version == HttpVersion::Auto && !step.target.tls));
        if !(self.scope == ConnectionScope::PerVu || shared_h1) || self.connections[slot].is_some()
        {
            return Warmed::Nothing;
        }
        let options = self.connect_options(step, Moment::now() + step.timeout);
        let tls = if step.target.tls {
            self.tls.as_ref()
        } else {
            None
        };
        let opened = Box::pin(connect::open(
            &step.target,
            &options,
            tls,
            self.version,
            &self.h2,
            None,
        ));
        match tokio::time::timeout(step.timeout, opened).await {
            Ok(Ok(connect::Opened { conn, .. })) => {
                match conn {
                    HttpConn::H1(c) if shared_h1 => self.pool.put_idle(slot, c),
                    conn => self.connections[slot] = Some(conn),
                }
                Warmed::Opened
            }
            Ok(Err(_)) | Err(_) => Warmed::Failed,
        }
    }

    #[inline]
    fn end_iteration(&mut self) {
        if self.scope == ConnectionScope::PerIteration {
            self.connections.iter_mut().for_each(|c| *c = None);
        }
    }
}

#[cfg(test)]
#[path = "session_tests.rs"]
mod tests;
