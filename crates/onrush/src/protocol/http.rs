//! HTTP/1.1 behind the [`Client`] trait: templates rendered into reused buffers, connections kept
//! per virtual user according to the connection scope, cookies, redirects, decompression, the
//! response kept (up to a limit) only for steps with extractors or checks, failures classified.

use std::net::{IpAddr, SocketAddr};
use std::ops::Range;
use std::rc::Rc;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use onrush_http1::cookies::CookieJar;
use onrush_http1::{
    self as http1, BodySink, Decompress, ErrorKind, Headers, Request, RequestBody, TlsFailure,
};
use onrush_http2::H2Settings;
use onrush_metrics::{FailureClass, Handshake, RequestRecord};
use onrush_plan::{
    Body, CheckKind, ConnectionScope, CookieMode, HashAlgorithm, HttpSettings, HttpVersion,
    MultipartField, RenderContext, RequestStep, Unset,
};
use sha2::Digest;

use super::connect::{self, HttpConn};
use super::pool::ConnectionPool;
use super::{Client, Exchange};
use crate::engine::checks::ResponseView;
use crate::engine::ScenarioRun;

/// A resolved place to send requests: socket address and `Host` header value.
#[derive(Debug)]
pub struct HttpTarget {
    pub addr: SocketAddr,
    pub host_header: Vec<u8>,
    /// `https://`: connections are TLS, verified against `server_name`.
    pub tls: bool,
    pub server_name: String,
}

/// A request step ready to run: the plan's step, its target resolved, its settings fixed.
pub struct HttpStep {
    pub plan: RequestStep,
    /// Index into the session's connection slots (one slot per distinct target).
    pub target_slot: usize,
    pub target: Arc<HttpTarget>,
    /// Preformatted header lines that never change (constant templates + User-Agent, ...).
    constant_headers: Vec<u8>,
    timeout: Duration,
    /// A multipart body whose parts are all constant, laid out once.
    multipart: Option<http1::Multipart>,
    decompress: bool,
    redirects: u32,
    cookies: bool,
    /// Keep the body (up to `body_limit`) for extractors and body checks.
    keep_body: bool,
    body_limit: usize,
    /// Keep every response header (header extractors and checks, redirects).
    keep_headers: bool,
    hash: Option<HashAlgorithm>,
}

impl HttpStep {
    pub fn new(
        plan: RequestStep,
        target_slot: usize,
        target: Arc<HttpTarget>,
        http: &HttpSettings,
    ) -> Result<Self, String> {
        let has = |name: &str| {
            plan.headers
                .iter()
                .any(|(n, _)| n.eq_ignore_ascii_case(name))
        };
        let mut constant_headers = Vec::new();
        if !has("user-agent") {
            constant_headers.extend_from_slice(USER_AGENT);
        }
        if http.decompress && !has("accept-encoding") {
            constant_headers.extend_from_slice(b"Accept-Encoding: gzip, deflate, br\r\n");
        }
        if matches!(plan.body, Body::Form(_)) && !has("content-type") {
            constant_headers
                .extend_from_slice(b"Content-Type: application/x-www-form-urlencoded\r\n");
        }
        let vars = onrush_plan::Vars::default();
        let ctx = RenderContext::new(0, 0, &vars);
        let mut value = Vec::new();
        for (name, template) in &plan.headers {
            if template.is_constant() {
                value.clear();
                let _ = template.render(&ctx, &mut value);
                http1::push_header(&mut constant_headers, name.as_bytes(), &value)
                    .map_err(|e| format!("header {name:?}: {e}"))?;
            }
        }
        let multipart = match &plan.body {
            Body::Multipart(fields)
                if fields.iter().all(|f| match f {
                    MultipartField::Text { value, .. } => value.is_constant(),
                    MultipartField::File { .. } => true,
                }) =>
            {
                Some(build_multipart(fields, &ctx).map_err(|e| format!("multipart body: {e}"))?)
            }
            _ => None,
        };
        let hash = plan.checks.iter().find_map(|c| match &c.kind {
            CheckKind::BodyHash { algorithm, .. } => Some(*algorithm),
            _ => None,
        });
        let keep_headers = http.redirects > 0
            || plan
                .checks
                .iter()
                .any(|c| matches!(c.kind, CheckKind::Header { .. }))
            || plan.extract.iter().any(|e| {
                matches!(
                    e.source,
                    onrush_plan::ExtractSource::Header(_) | onrush_plan::ExtractSource::Cookie(_)
                )
            });
        let timeout = plan.timeout.unwrap_or(http.timeout);
        Ok(HttpStep {
            keep_body: plan.needs_body(),
            body_limit: http.body_limit.min(usize::MAX as u64) as usize,
            cookies: http.cookies != CookieMode::Off,
            decompress: http.decompress,
            redirects: http.redirects,
            keep_headers,
            hash,
            multipart,
            plan,
            target_slot,
            target,
            constant_headers,
            timeout,
        })
    }
}

fn build_multipart(
    fields: &[MultipartField],
    ctx: &RenderContext,
) -> Result<http1::Multipart, String> {
    let mut parts = Vec::with_capacity(fields.len());
    for f in fields {
        parts.push(match f {
            MultipartField::Text { name, value } => http1::Part::Text {
                name: name.clone(),
                value: value
                    .render_to_vec(ctx)
                    .map_err(|u| format!("unset variable {u:?}"))?,
            },
            MultipartField::File {
                name,
                path,
                filename,
                content_type,
            } => http1::Part::File {
                name: name.clone(),
                file_name: filename.clone(),
                content_type: content_type.clone(),
                path: path.clone(),
            },
        });
    }
    http1::Multipart::new(parts).map_err(|e| e.to_string())
}

const USER_AGENT: &[u8] =
    concat!("User-Agent: onrush/", env!("CARGO_PKG_VERSION"), "\r\n").as_bytes();

/// What is kept of the current response.
#[derive(Default)]
struct Capture {
    keep_headers: bool,
    keep_body: bool,
    limit: usize,
    status: u16,
    /// Header names (lower case) and values, concatenated; `headers` indexes it.
    head: Vec<u8>,
    headers: Vec<(Range<usize>, Range<usize>)>,
    body: Vec<u8>,
    size: u64,
    hasher: Option<Hasher>,
}

enum Hasher {
    Md5(md5::Md5),
    Sha256(sha2::Sha256),
}

impl Capture {
    fn reset(&mut self, step: &HttpStep) {
        self.keep_headers = step.keep_headers;
        self.keep_body = step.keep_body;
        self.limit = step.body_limit;
        self.status = 0;
        self.head.clear();
        self.headers.clear();
        self.body.clear();
        self.size = 0;
        self.hasher = step.hash.map(|h| match h {
            HashAlgorithm::Md5 => Hasher::Md5(md5::Md5::new()),
            HashAlgorithm::Sha256 => Hasher::Sha256(sha2::Sha256::new()),
        });
    }

    fn push_header(&mut self, name: &[u8], value: &[u8]) {
        let n = self.head.len();
        self.head.extend(name.iter().map(u8::to_ascii_lowercase));
        let v = self.head.len();
        self.head.extend_from_slice(value);
        self.headers.push((n..v, v..self.head.len()));
    }

    fn header(&self, name: &str) -> Option<&[u8]> {
        self.headers
            .iter()
            .find(|(n, _)| &self.head[n.clone()] == name.as_bytes())
            .map(|(_, v)| &self.head[v.clone()])
    }

    fn hash_hex(&mut self) -> Option<String> {
        let digest: Vec<u8> = match self.hasher.take()? {
            Hasher::Md5(h) => h.finalize().to_vec(),
            Hasher::Sha256(h) => h.finalize().to_vec(),
        };
        Some(digest.iter().map(|b| format!("{b:02x}")).collect())
    }
}

impl BodySink for Capture {
    #[inline]
    fn data(&mut self, chunk: &[u8]) {
        self.size += chunk.len() as u64;
        if self.keep_body && self.body.len() < self.limit {
            let take = (self.limit - self.body.len()).min(chunk.len());
            self.body.extend_from_slice(&chunk[..take]);
        }
        match &mut self.hasher {
            Some(Hasher::Md5(h)) => h.update(chunk),
            Some(Hasher::Sha256(h)) => h.update(chunk),
            None => {}
        }
    }

    fn head(&mut self, status: u16, headers: &Headers<'_>) {
        self.status = status;
        self.head.clear();
        self.headers.clear();
        // Set-Cookie is always kept (the cookie jar reads it); everything only when asked.
        for (name, value) in headers.iter() {
            if self.keep_headers || name.eq_ignore_ascii_case(b"set-cookie") {
                self.push_header(name, value);
            }
        }
    }
}

/// One virtual user's HTTP session.
pub struct HttpClient {
    scope: ConnectionScope,
    /// Source addresses to spread new connections over; each new connection takes the next one,
    /// starting at an offset given by the VU, so VUs and reconnects both spread.
    source_addresses: Arc<[IpAddr]>,
    next_source: usize,
    close_reset: bool,
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
    request_started: Instant,
    jar: CookieJar,
    sink: Decompress<Capture>,
    /// The last response's body hash (hex), when its step checks one.
    hash_hex: Option<String>,
    /// A runtime variable that was unset when the last request was rendered.
    unset: Option<usize>,
    path: Vec<u8>,
    headers: Vec<u8>,
    body: Vec<u8>,
    scratch: Vec<u8>,
}

impl HttpClient {
    pub fn new(
        scenario: &ScenarioRun,
        target_slots: usize,
        vu: u64,
        pool: Rc<ConnectionPool>,
    ) -> Self {
        HttpClient {
            scope: scenario.scope,
            pool,
            version: scenario.version,
            h2: H2Settings::default(),
            tls: scenario
                .tls
                .as_ref()
                .map(|(client, mode)| client.session(*mode, vu)),
            next_source: vu as usize,
            source_addresses: scenario.source_addresses.clone(),
            close_reset: scenario.close_reset,
            throttle: scenario.throttle,
            connections: (0..target_slots).map(|_| None).collect(),
            connecting: false,
            request_started: Instant::now(),
            jar: CookieJar::new(),
            sink: Decompress::new(Capture::default()),
            hash_hex: None,
            unset: None,
            path: Vec::with_capacity(256),
            headers: Vec::with_capacity(256),
            body: Vec::new(),
            scratch: Vec::new(),
        }
    }

    /// Empties the cookie jar (`cookies: per_iteration`).
    pub fn clear_cookies(&mut self) {
        self.jar.clear();
    }

    /// The runtime variable that made the last request fail to render, if any.
    pub fn take_unset(&mut self) -> Option<usize> {
        self.unset.take()
    }

    /// What was kept of the last response.
    pub fn response(&self) -> ResponseView<'_> {
        let c = self.sink.get_ref();
        ResponseView {
            status: c.status,
            head: &c.head,
            headers: &c.headers,
            body: &c.body,
            body_size: c.size,
            body_hash: self.hash_hex.as_deref(),
            url: &self.path,
        }
    }

    /// Options for a new connection of `step`'s request that started at `started`: the TCP
    /// connect and the TLS handshake must finish by the request's deadline, so that running
    /// out of time is classified by phase (`connect_timeout`, `tls_handshake_timeout`). The
    /// outer timeout of the request stays as the backstop.
    fn connect_options(&mut self, deadline: Instant) -> http1::ConnectOptions {
        let local_addr = if self.source_addresses.is_empty() {
            None
        } else {
            self.next_source = self.next_source.wrapping_add(1);
            Some(self.source_addresses[self.next_source % self.source_addresses.len()])
        };
        http1::ConnectOptions {
            local_addr,
            linger_reset: self.close_reset,
            throttle: self.throttle,
            deadline: Some(deadline.into()),
            ..Default::default()
        }
    }

    /// Renders the per-request parts of `step` into the session's buffers.
    fn render(&mut self, step: &HttpStep, ctx: &RenderContext) -> Result<(), RenderError> {
        self.path.clear();
        step.plan.path.render(ctx, &mut self.path)?;
        for (name, value) in &step.plan.query {
            self.path.push(if self.path.contains(&b'?') {
                b'&'
            } else {
                b'?'
            });
            http1::percent_encode_component(name.as_bytes(), &mut self.path);
            self.path.push(b'=');
            self.scratch.clear();
            value.render(ctx, &mut self.scratch)?;
            http1::percent_encode_component(&self.scratch, &mut self.path);
        }
        self.headers.clear();
        self.headers.extend_from_slice(&step.constant_headers);
        for (name, template) in &step.plan.headers {
            if !template.is_constant() {
                self.scratch.clear();
                template.render(ctx, &mut self.scratch)?;
                http1::push_header(&mut self.headers, name.as_bytes(), &self.scratch)
                    .map_err(|_| RenderError::Header)?;
            }
        }
        self.body.clear();
        match &step.plan.body {
            Body::Inline(template) => template.render(ctx, &mut self.body)?,
            Body::Form(pairs) => {
                for (i, (name, value)) in pairs.iter().enumerate() {
                    if i > 0 {
                        self.body.push(b'&');
                    }
                    self.scratch.clear();
                    value.render(ctx, &mut self.scratch)?;
                    http1::form_urlencode(
                        std::iter::once((name.as_bytes(), &self.scratch[..])),
                        &mut self.body,
                    );
                }
            }
            _ => {}
        }
        Ok(())
    }

    /// Adds the `Cookie` header for the current request.
    fn add_cookies(&mut self, step: &HttpStep) {
        if !step.cookies || self.jar.is_empty() {
            return;
        }
        self.scratch.clear();
        let path_end = self
            .path
            .iter()
            .position(|b| *b == b'?')
            .unwrap_or(self.path.len());
        if self.jar.header_value(
            &step.target.server_name,
            &self.path[..path_end],
            step.target.tls,
            SystemTime::now(),
            &mut self.scratch,
        ) {
            let _ = http1::push_header(&mut self.headers, b"Cookie", &self.scratch);
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
            .path
            .iter()
            .position(|b| *b == b'?')
            .unwrap_or(self.path.len());
        for (n, v) in &c.headers {
            if &c.head[n.clone()] == b"set-cookie" {
                self.jar.store(
                    &c.head[v.clone()],
                    &step.target.server_name,
                    &self.path[..path_end],
                    now,
                );
            }
        }
    }

    /// The connection for `step`'s next request: from the shared pool, or newly opened (its
    /// connect time and handshake go into `record`, and `opened` is set).
    async fn connection(
        &mut self,
        step: &HttpStep,
        record: &mut RequestRecord,
        opened: &mut bool,
    ) -> Result<HttpConn, FailureClass> {
        let slot = step.target_slot;
        if self.scope != ConnectionScope::Shared {
            return self.open(step, record, opened).await;
        }
        // `auto` over TLS tries HTTP/2 until a server has chosen HTTP/1.1 once: VUs that start
        // together then wait for one connection instead of each opening its own.
        let try_h2 = self.version == HttpVersion::H2
            || (self.version == HttpVersion::Auto && step.target.tls && !self.pool.speaks_h1(slot));
        if try_h2 {
            let lease = self.pool.h2_lease(slot);
            let entry = lease.entry.clone();
            let conn = entry
                .get_or_open(|| async {
                    match self.open(step, record, opened).await {
                        Ok(HttpConn::H2 { conn, .. }) => Ok(conn),
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
    async fn open(
        &mut self,
        step: &HttpStep,
        record: &mut RequestRecord,
        opened: &mut bool,
    ) -> Result<HttpConn, FailureClass> {
        let started = Instant::now();
        let options = self.connect_options(self.request_started + step.timeout);
        self.connecting = true;
        let tls = if step.target.tls {
            self.tls.as_ref()
        } else {
            None
        };
        let result = connect::open(&step.target, &options, tls, self.version, &self.h2).await;
        self.connecting = false;
        let connect::Opened { conn, handshake } = result?;
        if let Some((kind, took)) = handshake {
            record.handshake = Some(Handshake {
                resumed: kind == http1::HandshakeKind::Resumed,
                duration_us: micros(took),
            });
        }
        record.connect_us = Some(micros(started.elapsed()));
        *opened = true;
        Ok(conn)
    }

    /// One request/response on the step's connection (connecting when needed). `method` and
    /// `with_body` differ from the step's after a redirect that turns the request into a GET.
    async fn exchange(
        &mut self,
        step: &HttpStep,
        method: &str,
        with_body: bool,
        multipart: Option<&http1::Multipart>,
        record: &mut RequestRecord,
        opened: &mut bool,
    ) -> Result<http1::Response, FailureClass> {
        let slot = step.target_slot;
        // A reused keep-alive connection may have been closed by the server while idle; that
        // race is not the target's fault, so retry once on a fresh connection.
        for attempt in 0..2 {
            if self.connections[slot].is_none() {
                let conn = self.connection(step, record, opened).await?;
                self.connections[slot] = Some(conn);
            }
            let conn = self.connections[slot].as_mut().expect("connected above");
            let body = if !with_body {
                RequestBody::Empty
            } else {
                match (&step.plan.body, multipart) {
                    (Body::None, _) => RequestBody::Empty,
                    (Body::Inline(_) | Body::Form(_), _) => RequestBody::Bytes(&self.body),
                    (Body::File(path), _) => RequestBody::File(path),
                    (Body::Multipart(_), Some(m)) => RequestBody::Multipart(m),
                    (Body::Multipart(_), None) => RequestBody::Empty,
                }
            };
            let request = Request {
                method,
                target: &self.path,
                host: &step.target.host_header,
                headers: &self.headers,
                body,
                // Not `Connection: close` for `per_request` (which would make the server close
                // first and keep the TIME_WAIT): measured over TLS it cost ~15-30 µs more
                // system time per connection (the server's close_notify and FIN to read).
                close: false,
            };
            self.sink.get_mut().reset(step);
            let sent = match (conn, step.decompress) {
                (HttpConn::H1(c), true) => c.send(&request, &mut self.sink).await,
                (HttpConn::H1(c), false) => c.send(&request, self.sink.get_mut()).await,
                (HttpConn::H2 { conn, .. }, true) => conn.send(&request, &mut self.sink).await,
                (HttpConn::H2 { conn, .. }, false) => {
                    conn.send(&request, self.sink.get_mut()).await
                }
            };
            match sent {
                Ok(response) => {
                    if step.decompress && self.sink.error().is_some() {
                        self.connections[slot] = None;
                        return Err(FailureClass::BadResponse);
                    }
                    return Ok(response);
                }
                Err(e) => {
                    if let Some(HttpConn::H2 {
                        conn,
                        lease: Some(lease),
                    }) = &mut self.connections[slot]
                    {
                        // A failed stream on a live connection leaves it to the others.
                        if e.is_stale_reuse() || !conn.is_open() {
                            lease.entry.mark_dead();
                        }
                    }
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

    /// The request with its redirects: the final response, bytes of every hop counted.
    async fn follow(
        &mut self,
        step: &HttpStep,
        multipart: Option<&http1::Multipart>,
        record: &mut RequestRecord,
        opened: &mut bool,
        started: Instant,
    ) -> Result<http1::Response, FailureClass> {
        let mut method = step.plan.method.as_str();
        let mut with_body = true;
        let mut hops = 0;
        loop {
            self.add_cookies(step);
            let response = self
                .exchange(step, method, with_body, multipart, record, opened)
                .await?;
            if record.ttfb_us.is_none() {
                record.ttfb_us = Some(micros(
                    response.first_byte_at.saturating_duration_since(started),
                ));
            }
            record.bytes_in += response.bytes_in;
            record.bytes_out += response.bytes_out;
            if !response.keep_alive {
                self.connections[step.target_slot] = None;
            }
            self.store_cookies(step);
            let redirect = matches!(response.status, 301 | 302 | 303 | 307 | 308);
            if !redirect || hops >= step.redirects {
                return Ok(response);
            }
            let Some(location) = self.sink.get_ref().header("location") else {
                return Ok(response);
            };
            let Some(next) = same_origin_target(location, &step.target, &self.path) else {
                // Another origin: onrush resolves targets when the plan loads, so the chain
                // stops here and the 3xx is the response.
                return Ok(response);
            };
            hops += 1;
            self.path = next;
            if response.status == 303 || (matches!(response.status, 301 | 302) && method == "POST")
            {
                method = "GET";
                with_body = false;
                // The body's headers no longer apply.
                remove_header(&mut self.headers, b"content-type");
            }
        }
    }
}

/// Why a request could not be rendered.
enum RenderError {
    Unset(Unset),
    Header,
}

impl From<Unset> for RenderError {
    fn from(u: Unset) -> Self {
        RenderError::Unset(u)
    }
}

impl Client for HttpClient {
    type Step = HttpStep;

    async fn execute(
        &mut self,
        step: &HttpStep,
        ctx: &RenderContext<'_>,
        intended_start: Instant,
    ) -> Exchange {
        let started = Instant::now();
        self.request_started = started;
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
        self.hash_hex = None;
        self.sink.get_mut().reset(step);
        let rendered = self.render(step, ctx);
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
            Ok(()) if matches!(step.plan.body, Body::Multipart(_)) && multipart.is_none() => {
                record.failure = Some(FailureClass::Io);
            }
            Ok(()) => {
                let outcome = tokio::time::timeout(
                    step.timeout,
                    self.follow(step, multipart, &mut record, &mut opened, started),
                )
                .await;
                match outcome {
                    Ok(Ok(response)) => {
                        record.status = response.status;
                        record.failure = status_failure(response.status, &step.plan.expect_status);
                        if step.hash.is_some() {
                            self.hash_hex = self.sink.get_mut().hash_hex();
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
        }
        match self.scope {
            ConnectionScope::PerRequest => self.connections[step.target_slot] = None,
            ConnectionScope::Shared => match self.connections[step.target_slot].take() {
                Some(HttpConn::H1(c)) if c.is_reusable() => self.pool.put_idle(step.target_slot, c),
                // HTTP/2: dropping the handle gives the stream slot back.
                _ => {}
            },
            ConnectionScope::PerVu | ConnectionScope::PerIteration => {}
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

/// The origin-form target a `Location` points to, when it stays on `target`'s origin.
fn same_origin_target(location: &[u8], target: &HttpTarget, current: &[u8]) -> Option<Vec<u8>> {
    let loc = location.trim_ascii();
    if loc.starts_with(b"//") {
        return None;
    }
    if loc.starts_with(b"/") {
        return Some(loc.to_vec());
    }
    for scheme in [&b"http://"[..], b"https://"] {
        if let Some(rest) = loc.strip_prefix(scheme) {
            if (scheme == b"https://") != target.tls {
                return None;
            }
            let end = rest
                .iter()
                .position(|b| matches!(b, b'/' | b'?'))
                .unwrap_or(rest.len());
            if !rest[..end].eq_ignore_ascii_case(&target.host_header) {
                return None;
            }
            let path = &rest[end..];
            return Some(if path.starts_with(b"/") {
                path.to_vec()
            } else {
                [&b"/"[..], path].concat()
            });
        }
    }
    if loc.contains(&b':') && !loc.contains(&b'/') {
        return None;
    }
    // Relative to the current path's directory.
    let path_end = current
        .iter()
        .position(|b| *b == b'?')
        .unwrap_or(current.len());
    let dir_end = current[..path_end]
        .iter()
        .rposition(|b| *b == b'/')
        .map_or(1, |i| i + 1);
    Some([&current[..dir_end], loc].concat())
}

/// Removes header lines named `name` from preformatted header lines.
fn remove_header(headers: &mut Vec<u8>, name: &[u8]) {
    let mut out = Vec::with_capacity(headers.len());
    for line in headers.split_inclusive(|b| *b == b'\n') {
        let n = line.iter().position(|b| *b == b':').unwrap_or(0);
        if !line[..n].eq_ignore_ascii_case(name) {
            out.extend_from_slice(line);
        }
    }
    *headers = out;
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

pub(crate) fn classify(error: &http1::Error) -> FailureClass {
    if let Some(tls) = error.tls_failure() {
        return match tls {
            TlsFailure::CertificateUnknown => FailureClass::TlsCertificateUnknown,
            TlsFailure::CertificateExpired => FailureClass::TlsCertificateExpired,
            TlsFailure::NameMismatch => FailureClass::TlsNameMismatch,
            TlsFailure::ClientCertificateRequired => FailureClass::TlsClientCertificateRequired,
            TlsFailure::ClientCertificateRejected => FailureClass::TlsClientCertificateRejected,
            TlsFailure::Protocol => FailureClass::TlsProtocol,
            TlsFailure::HandshakeTimeout => FailureClass::TlsHandshakeTimeout,
            TlsFailure::Other => FailureClass::TlsOther,
        };
    }
    match error.kind() {
        ErrorKind::ConnectRefused => FailureClass::ConnectRefused,
        ErrorKind::ConnectTimeout => FailureClass::ConnectTimeout,
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

#[cfg(test)]
mod tests {
    use super::*;

    fn target(tls: bool) -> HttpTarget {
        HttpTarget {
            addr: "127.0.0.1:8080".parse().unwrap(),
            host_header: b"127.0.0.1:8080".to_vec(),
            tls,
            server_name: "127.0.0.1".into(),
        }
    }

    #[test]
    fn redirect_targets() {
        let t = target(false);
        let cur = b"/a/b?x=1";
        assert_eq!(same_origin_target(b"/c", &t, cur).unwrap(), b"/c");
        assert_eq!(same_origin_target(b"d?y", &t, cur).unwrap(), b"/a/d?y");
        assert_eq!(
            same_origin_target(b"http://127.0.0.1:8080/e", &t, cur).unwrap(),
            b"/e"
        );
        assert_eq!(
            same_origin_target(b"http://127.0.0.1:8080", &t, cur).unwrap(),
            b"/"
        );
        assert!(same_origin_target(b"http://example.com/e", &t, cur).is_none());
        assert!(same_origin_target(b"https://127.0.0.1:8080/e", &t, cur).is_none());
        assert!(same_origin_target(b"//other/x", &t, cur).is_none());
    }

    #[test]
    fn removes_headers() {
        let mut h = b"Content-Type: a\r\nX: 1\r\ncontent-type: b\r\n".to_vec();
        remove_header(&mut h, b"content-type");
        assert_eq!(h, b"X: 1\r\n");
    }
}
