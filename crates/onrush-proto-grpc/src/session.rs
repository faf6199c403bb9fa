//! A VU's gRPC calls: its HTTP/2 connection per target (or a stream on one of the worker's
//! pooled ones, `connections: shared`, up to `max_streams` calls per connection), the
//! request rendered into reused buffers, the response deframed as it arrives, the outcome
//! read from `grpc-status`.
//!
//! Streaming calls: the plan gives a client stream's messages up front, so every call sends
//! its request messages (one DATA frame sequence, flow-controlled) and half-closes, then reads
//! every response message until the trailers. A bidirectional call therefore works with
//! servers that answer as messages arrive (echo, chat) and with those that answer at the
//! end; what it cannot express is a reply that depends on an answer it has not read yet.

use std::ops::Range;
use std::rc::Rc;
use std::sync::Arc;

use onrush_http::{push_header, BodySink, ConnectOptions, Headers, Request};
use onrush_http::{RequestBody, TlsSession};
use onrush_http2::{H2Connection, H2Settings};
use onrush_plan::{ConnectionScope, RenderContext};
use onrush_proto_http::{ConnectionPool, Lease};
use onrush_protocol::Moment;
use onrush_protocol::{
    micros, Exchange, FailureClass, RequestStart, ResponseView, Session, Warmed,
};
use prost::Message as _;
use prost_reflect::{DynamicMessage, MessageDescriptor};

use crate::classes::{self, code};
use crate::codec::{decode_message, encode, parse_status, Deframer, FrameError};
use crate::message::{build, BuildError};
use crate::plan::{GrpcPlan, GrpcStep};

/// The JSON of the response messages kept for extractors and checks, at most (a long server
/// stream is counted whole, but kept only up to here).
const JSON_LIMIT: usize = 4 << 20;

/// One VU's connections and buffers.
pub struct GrpcSession {
    scope: ConnectionScope,
    tls: Option<TlsSession>,
    /// Per target slot (all scopes but `shared`).
    conns: Vec<Option<H2Connection>>,
    /// The worker's pool (`shared`): connections of up to `http.max_streams` calls at once.
    shared: Rc<ConnectionPool>,
    /// The stream slot of the call in flight on a pooled connection (`shared`), given back
    /// when the call ends.
    lease: Option<Lease>,
    headers: Vec<u8>,
    body: Vec<u8>,
    render: Vec<u8>,
    encoded: Vec<u8>,
    sink: Reply,
    url: Vec<u8>,
    unset: Option<usize>,
    /// `--debug` ([`onrush_protocol::debug`]): the request messages as JSON (in
    /// `debug_sent`, an array when the method streams its requests), the reply decoded.
    debug: Option<Box<Debug>>,
}

/// What `--debug` shows of a call.
#[derive(Default)]
struct Debug {
    sent: Vec<u8>,
}

/// The response as it arrives: head and trailers as `name: value` lines, messages deframed
/// and (when the step reads them) kept as JSON.
struct Reply {
    status: u16,
    head: Vec<u8>,
    fields: Vec<(Range<usize>, Range<usize>)>,
    deframer: Deframer,
    frame_error: Option<FrameError>,
    /// Decode messages to JSON into `json` (else only count them).
    keep: Option<MessageDescriptor>,
    /// A server stream: `json` is an array.
    array: bool,
    /// `--debug`: decode every reply, whatever the step reads.
    debug: bool,
    json: Vec<u8>,
    messages: u64,
    /// A message that is not valid protobuf for the method's output type.
    undecodable: bool,
    grpc_status: Option<u32>,
    grpc_message: String,
}

impl Reply {
    fn new() -> Self {
        Reply {
            status: 0,
            head: Vec::new(),
            fields: Vec::new(),
            deframer: Deframer::new(),
            frame_error: None,
            keep: None,
            array: false,
            debug: false,
            json: Vec::new(),
            messages: 0,
            undecodable: false,
            grpc_status: None,
            grpc_message: String::new(),
        }
    }

    fn reset(&mut self, step: &GrpcStep) {
        self.status = 0;
        self.head.clear();
        self.fields.clear();
        self.deframer.reset(step.plan.max_message);
        self.frame_error = None;
        self.keep = (step.needs_json || self.debug).then(|| step.plan.method.output());
        self.array = step.streams_out;
        self.json.clear();
        if self.json.capacity() > JSON_LIMIT * 2 {
            self.json = Vec::new();
        }
        self.messages = 0;
        self.undecodable = false;
        self.grpc_status = None;
        self.grpc_message.clear();
    }

    fn add_fields(&mut self, headers: &Headers<'_>) {
        for (name, value) in headers.iter() {
            if name.eq_ignore_ascii_case(b"grpc-status") {
                self.grpc_status = Some(parse_status(value).unwrap_or(2));
            } else if name.eq_ignore_ascii_case(b"grpc-message") {
                self.grpc_message = decode_message(value);
            } else if name.eq_ignore_ascii_case(b"grpc-encoding") {
                self.deframer.gzip = value.eq_ignore_ascii_case(b"gzip");
            }
            let n = self.head.len()..self.head.len() + name.len();
            self.head.extend_from_slice(name);
            self.head.extend_from_slice(b": ");
            let v = self.head.len()..self.head.len() + value.len();
            self.head.extend_from_slice(value);
            self.head.extend_from_slice(b"\r\n");
            self.fields.push((n, v));
        }
    }

    fn add_count_field(&mut self) {
        let name = b"onrush-grpc-messages";
        let n = self.head.len()..self.head.len() + name.len();
        self.head.extend_from_slice(name);
        self.head.extend_from_slice(b": ");
        let start = self.head.len();
        self.head
            .extend_from_slice(self.messages.to_string().as_bytes());
        let v = start..self.head.len();
        self.head.extend_from_slice(b"\r\n");
        self.fields.push((n, v));
    }
}

impl BodySink for Reply {
    fn data(&mut self, chunk: &[u8]) {
        if self.frame_error.is_some() {
            return;
        }
        let Reply {
            deframer,
            keep,
            array,
            json,
            messages,
            undecodable,
            ..
        } = self;
        let result = deframer.push(chunk, |bytes| {
            *messages += 1;
            let Some(desc) = keep else {
                return;
            };
            let Ok(msg) = DynamicMessage::decode(desc.clone(), bytes) else {
                *undecodable = true;
                return;
            };
            if json.len() >= JSON_LIMIT {
                return;
            }
            if *array {
                json.push(if json.is_empty() { b'[' } else { b',' });
            } else if !json.is_empty() {
                // A unary response with more than one message: gRPC calls it a protocol
                // error; the outcome says so (see `outcome`).
                *undecodable = true;
                return;
            }
            let mut ser = serde_json::Serializer::new(&mut *json);
            if serde::Serialize::serialize(&msg, &mut ser).is_err() {
                *undecodable = true;
            }
        });
        if let Err(e) = result {
            self.frame_error = Some(e);
        }
    }

    fn head(&mut self, status: u16, headers: &Headers<'_>) {
        self.status = status;
        self.add_fields(headers);
    }

    fn trailers(&mut self, headers: &Headers<'_>) {
        self.add_fields(headers);
    }

    fn end(&mut self) {
        if self.frame_error.is_none() {
            if let Err(e) = self.deframer.finish() {
                self.frame_error = Some(e);
            }
        }
        if self.array && self.keep.is_some() {
            if self.json.is_empty() {
                self.json.push(b'[');
            }
            self.json.push(b']');
        }
    }
}

impl GrpcSession {
    pub fn new(
        plan: &Arc<GrpcPlan>,
        scenario: usize,
        vu: u64,
        shared: &Rc<ConnectionPool>,
    ) -> Self {
        GrpcSession {
            scope: plan.scopes[scenario],
            tls: plan.tls[scenario]
                .as_ref()
                .map(|(client, mode)| client.session(*mode, vu)),
            conns: Vec::new(),
            shared: shared.clone(),
            lease: None,
            headers: Vec::new(),
            body: Vec::new(),
            render: Vec::new(),
            encoded: Vec::new(),
            sink: Reply {
                debug: onrush_protocol::debug::on(),
                ..Reply::new()
            },
            url: Vec::new(),
            unset: None,
            debug: onrush_protocol::debug::on().then(Box::default),
        }
    }

    /// Renders the request: its headers (fixed ones and metadata) and its framed messages.
    fn render(&mut self, step: &GrpcStep, ctx: &RenderContext<'_>) -> Result<(), FailureClass> {
        self.headers.clear();
        self.headers.extend_from_slice(&step.fixed_headers);
        for (name, value) in &step.plan.metadata {
            self.render.clear();
            if let Err(u) = value.render(ctx, &mut self.render) {
                self.unset = Some(u.slot);
                return Err(FailureClass::VariableUnset);
            }
            if let Err(e) = push_header(&mut self.headers, name.as_bytes(), &self.render) {
                warn_invalid_once(&step.plan.path, &format!("metadata {name}: {e:?}"));
                return Err(classes::status(code::INVALID_ARGUMENT));
            }
        }
        self.body.clear();
        if let Some(debug) = &mut self.debug {
            debug.sent.clear();
        }
        for m in &step.plan.messages {
            let msg = match build(m, ctx, &mut self.render) {
                Ok(msg) => msg,
                Err(BuildError::Unset(slot)) => {
                    self.unset = Some(slot);
                    return Err(FailureClass::VariableUnset);
                }
                Err(BuildError::Invalid(why)) => {
                    warn_invalid_once(&step.plan.path, &why);
                    return Err(classes::status(code::INVALID_ARGUMENT));
                }
            };
            if let Some(debug) = &mut self.debug {
                // A client stream's messages as one JSON array, a unary call's as it is.
                if step.plan.method.is_client_streaming() {
                    debug
                        .sent
                        .push(if debug.sent.is_empty() { b'[' } else { b',' });
                }
                let mut ser = serde_json::Serializer::new(&mut debug.sent);
                let _ = serde::Serialize::serialize(&msg, &mut ser);
            }
            self.encoded.clear();
            msg.encode(&mut self.encoded)
                .expect("a Vec grows as needed");
            encode(&mut self.body, &self.encoded, step.plan.gzip);
        }
        if let Some(debug) = &mut self.debug {
            if step.plan.method.is_client_streaming() {
                if debug.sent.is_empty() {
                    debug.sent.push(b'[');
                }
                debug.sent.push(b']');
            }
        }
        Ok(())
    }

    /// The connection for `step`: the VU's, or a stream slot on one of the worker's pooled
    /// connections (`shared`: the first with fewer than `max_streams` calls in flight, else a
    /// new one; VUs that start together wait for the connection being opened), opened when
    /// there is none (or the server no longer accepts streams on it).
    async fn connection(
        &mut self,
        step: &GrpcStep,
        exchange: &mut Exchange,
        started: Moment,
    ) -> Result<H2Connection, FailureClass> {
        let slot = step.target.slot;
        if self.scope == ConnectionScope::Shared {
            // A pooled connection the server has since closed (GOAWAY) takes no new stream:
            // out of service, and the next lease finds (or opens) another.
            loop {
                let lease = self.shared.h2_lease(slot);
                let entry = lease.entry.clone();
                let mut conn = entry
                    .get_or_open(|| self.open(step, exchange, started))
                    .await?;
                if conn.is_open() {
                    self.lease = Some(lease);
                    return Ok(conn);
                }
                entry.mark_dead();
            }
        }
        if let Some(mut conn) = self.conns.get(slot).cloned().flatten() {
            if conn.is_open() {
                return Ok(conn);
            }
        }
        let conn = self.open(step, exchange, started).await?;
        if self.scope != ConnectionScope::PerRequest {
            if self.conns.len() <= slot {
                self.conns.resize_with(slot + 1, || None);
            }
            self.conns[slot] = Some(conn.clone());
        }
        Ok(conn)
    }

    /// Opens a connection to `step`'s target (TCP, TLS with ALPN `h2` for `grpcs://`, the
    /// HTTP/2 preface) and records its connect and handshake times.
    async fn open(
        &self,
        step: &GrpcStep,
        exchange: &mut Exchange,
        started: Moment,
    ) -> Result<H2Connection, FailureClass> {
        let opts = ConnectOptions::default();
        let settings = H2Settings::default();
        let conn = match (&self.tls, step.plan.tls) {
            (Some(tls), true) => {
                let stream = onrush_proto_http::connect_tls(
                    step.target.addr,
                    &opts,
                    tls,
                    &step.plan.host,
                    exchange,
                    started,
                )
                .await?;
                if stream.get_ref().1.alpn_protocol() != Some(b"h2") {
                    // A gRPC server always speaks HTTP/2.
                    return Err(FailureClass::TlsProtocol);
                }
                onrush_http2::handshake(
                    stream,
                    http::uri::Scheme::HTTPS,
                    &step.authority,
                    &settings,
                )
                .await
                .map_err(|e| onrush_proto_http::classify(&e))?
            }
            // The plan builds a TLS client for every scenario with a `grpcs://` step.
            (None, true) => return Err(FailureClass::TlsOther),
            (_, false) => {
                let conn =
                    onrush_http2::connect_h2c(step.target.addr, &opts, &step.authority, &settings)
                        .await
                        .map_err(|e| onrush_proto_http::classify(&e))?;
                exchange.record.connect_us = Some(micros(started.elapsed()));
                conn
            }
        };
        exchange.opened_connection = true;
        Ok(conn)
    }

    /// The call, up to its outcome's failure class.
    async fn call(
        &mut self,
        step: &GrpcStep,
        exchange: &mut Exchange,
        started: Moment,
        connecting: &mut bool,
    ) -> Result<(), FailureClass> {
        // Boxed: opening a connection (TCP, TLS, the HTTP/2 preface) is a large future, and
        // inline it would size every VU's request future, of every protocol, while idle
        // (one allocation per new connection, none per request on a kept one).
        let mut conn = Box::pin(self.connection(step, exchange, started)).await?;
        *connecting = false;
        let req = Request {
            method: "POST",
            target: step.plan.path.as_bytes(),
            host: &step.authority,
            headers: &self.headers,
            body: RequestBody::Bytes(&self.body),
            close: false,
        };
        self.sink.reset(step);
        let result = conn.send(&req, &mut self.sink).await;
        match result {
            Ok(resp) => {
                exchange.responded = true;
                exchange.record.status = resp.status;
                exchange.record.bytes_in = resp.bytes_in;
                exchange.record.bytes_out = resp.bytes_out;
                exchange.record.ttfb_us = Some(micros(
                    resp.first_byte_at.saturating_duration_since(started),
                ));
                self.sink.add_count_field();
                outcome(&self.sink)
            }
            Err(e) => {
                self.drop_connection(step.target.slot);
                Err(onrush_proto_http::classify(&e))
            }
        }
    }

    /// The call failed with its connection: no new call goes on that connection (the
    /// VU's is forgotten, a pooled one taken out of service).
    fn drop_connection(&mut self, slot: usize) {
        if self.scope == ConnectionScope::Shared {
            if let Some(lease) = &self.lease {
                lease.entry.mark_dead();
            }
        } else if let Some(c) = self.conns.get_mut(slot) {
            *c = None;
        }
    }
}

/// The call's outcome from a complete response: HTTP status, framing, `grpc-status`.
fn outcome(r: &Reply) -> Result<(), FailureClass> {
    if r.status != 200 {
        // gRPC's mapping of HTTP statuses from a server (or proxy) that did not answer in gRPC.
        return Err(match r.status {
            400 => classes::status(code::INTERNAL),
            401 => classes::status(code::UNAUTHENTICATED),
            403 => classes::status(code::PERMISSION_DENIED),
            404 => classes::status(code::UNIMPLEMENTED),
            429 | 502..=504 => classes::status(code::UNAVAILABLE),
            _ => classes::status(code::UNKNOWN),
        });
    }
    match r.frame_error {
        Some(FrameError::Oversized) => return Err(classes::status(code::RESOURCE_EXHAUSTED)),
        Some(_) => return Err(FailureClass::BadResponse),
        None => {}
    }
    match r.grpc_status {
        None => Err(FailureClass::BadResponse),
        Some(status) => match classes::of_status(status) {
            Some(class) => Err(class),
            None if r.undecodable => Err(FailureClass::BadResponse),
            None => Ok(()),
        },
    }
}

/// A rendered value that does not fit its field fails the call as `invalid_argument`; say
/// why once per step path, not per call.
fn warn_invalid_once(path: &str, why: &str) {
    use std::sync::Mutex;
    static SEEN: Mutex<Vec<String>> = Mutex::new(Vec::new());
    let mut seen = SEEN.lock().unwrap_or_else(|e| e.into_inner());
    if seen.len() < 64 && !seen.iter().any(|p| p == path) {
        seen.push(path.to_string());
        eprintln!(
            "warning: grpc {path}: a rendered value does not fit its field ({why}); the call \
             is counted as invalid_argument and not sent"
        );
    }
}

impl Session for GrpcSession {
    type Step = GrpcStep;

    async fn execute(
        &mut self,
        step: &GrpcStep,
        ctx: &RenderContext<'_>,
        start: RequestStart,
    ) -> Exchange {
        let started = start.begin();
        let mut exchange = Exchange::empty();
        self.url.clear();
        self.url.extend_from_slice(&step.authority);
        self.url.extend_from_slice(step.plan.path.as_bytes());
        let result = match self.render(step, ctx) {
            Err(class) => Err(class),
            Ok(()) => {
                let mut connecting = true;
                let call = self.call(step, &mut exchange, started, &mut connecting);
                match tokio::time::timeout(step.timeout, call).await {
                    Ok(r) => r,
                    Err(_) => {
                        // A stream given up is reset by the HTTP/2 client; the connection
                        // stays (unless it was still being opened).
                        if connecting {
                            self.drop_connection(step.target.slot);
                            Err(FailureClass::ConnectTimeout)
                        } else {
                            Err(classes::status(code::DEADLINE_EXCEEDED))
                        }
                    }
                }
            }
        };
        if let Err(class) = result {
            exchange.record.failure = Some(class);
        }
        // The call's stream slot on a pooled connection is free again.
        self.lease = None;
        if self.scope == ConnectionScope::PerRequest {
            self.conns.clear();
        }
        exchange.finish(started, start.intended);
        exchange
    }

    fn response(&self) -> ResponseView<'_> {
        ResponseView {
            status: self.sink.status,
            head: &self.sink.head,
            headers: &self.sink.fields,
            body: &self.sink.json,
            body_size: self.sink.json.len() as u64,
            body_hash: None,
            url: &self.url,
        }
    }

    fn request(&self) -> Option<onrush_protocol::RequestView<'_>> {
        let debug = self.debug.as_ref()?;
        Some(onrush_protocol::RequestView {
            method: "gRPC",
            target: &self.url,
            headers: &self.headers,
            body: &debug.sent,
            body_note: None,
        })
    }

    fn take_unset(&mut self) -> Option<usize> {
        self.unset.take()
    }

    fn end_iteration(&mut self) {
        if self.scope == ConnectionScope::PerIteration {
            self.conns.clear();
        }
    }

    /// `connections: per_vu` (the default): the VU's HTTP/2 connection to the step's target
    /// (TCP, TLS with ALPN, the preface), as its first call would open it. `shared`: the
    /// worker's pooled connection when it has none with a free stream (the VUs warming up
    /// together wait for the one being opened, as their calls would). `per_iteration` and
    /// `per_request` open nothing: their connects are part of what they measure. The connect
    /// and handshake are in no call's figures; the engine counts the connection.
    async fn warm_up(&mut self, step: &GrpcStep) -> Warmed {
        if !matches!(self.scope, ConnectionScope::PerVu | ConnectionScope::Shared) {
            return Warmed::Nothing;
        }
        let mut exchange = Exchange::empty();
        let connect = Box::pin(self.connection(step, &mut exchange, Moment::now()));
        let connected = tokio::time::timeout(step.timeout, connect).await;
        // A pooled connection's stream slot, taken as a call would, is not used.
        self.lease = None;
        match connected {
            Ok(Ok(_)) if exchange.opened_connection => Warmed::Opened,
            Ok(Ok(_)) => Warmed::Nothing,
            Ok(Err(_)) | Err(_) => Warmed::Failed,
        }
    }
}
