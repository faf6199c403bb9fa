//! One virtual user's WebSocket: one socket, open from `ws: connect` to `ws: close` (or a
//! failure, or the VU's end), and the actions on it.
//!
//! **Reading policy.** The socket is read only while a `ws:` step runs: no task reads it in the
//! background. Messages that arrive while the VU runs other steps (HTTP, TCP, think times) wait
//! in the kernel's socket buffer and the read buffers (onrush's, tungstenite's), in order, and
//! the next `receive` (or `await`) takes them from there: none is lost, and memory stays
//! bounded by the socket buffers (a server that sends faster than the VU reads is slowed by
//! TCP's flow control, as a real client that is busy would slow it). A server's ping waiting
//! there is answered when the socket is next read. The price: a server that closes clients
//! whose pong is late sees a VU busy elsewhere for longer than its ping timeout as dead (the
//! next `ws:` step then fails `closed_early`). A spawned reader per socket would answer at
//! once, at the cost of a task, a channel and an unbounded-or-dropping queue per VU.
//!
//! `receive` and `await` consume messages in order: those before the awaited one are counted
//! and dropped. Data messages that arrive while a `ping` waits for its pong are kept (up to
//! [`PENDING_MAX`]) for the next `receive`.

use std::collections::VecDeque;
use std::ops::Range;
use std::sync::Arc;
use std::time::SystemTime;

use onrush_protocol::Moment;

use onrush_http::{ConnectOptions, TlsSession};
use onrush_plan::{ConnectionScope, RenderContext};
use onrush_proto_http::CookieJar;
use onrush_protocol::{micros, Exchange, FailureClass, RequestStart, ResponseView, Session};

use crate::frame::{BINARY, TEXT};
use crate::handshake::Offer;
use crate::plan::{WsPlan, WsStep};
use crate::socket::{Kind, Socket};
use crate::transport::{Io, Transport};
use crate::{WsAction, WsConnect, WsPayload, WsUntil};

/// Data messages a `ping` keeps for later `receive`s while it waits for its pong; beyond
/// this the oldest are dropped.
pub const PENDING_MAX: usize = 256;

/// The close code shown when the socket ended without a close frame (RFC 6455 §7.1.5).
const ABNORMAL_CLOSE: u16 = 1006;

/// The close code shown for a close frame without a code (RFC 6455 §7.1.5).
const NO_STATUS: u16 = 1005;

/// One VU's socket and buffers.
pub struct WsSession {
    scope: ConnectionScope,
    tls: Option<TlsSession>,
    socket: Option<Socket>,
    /// Data messages received while a ping waited for its pong.
    pending: VecDeque<Vec<u8>>,
    /// Rendering buffer (a text message, the request path).
    out: Vec<u8>,
    /// The connect step's headers, rendered.
    rendered: Vec<(String, Vec<u8>)>,
    /// The last message received: the body for extractors and checks.
    body: Vec<u8>,
    /// The handshake response's status (101), else 0.
    status: u16,
    /// The handshake response's headers (`name: value\r\n` lines) and their ranges.
    head: Vec<u8>,
    headers: Vec<(Range<usize>, Range<usize>)>,
    /// The socket's URL, for `url` extractors.
    url: Vec<u8>,
    unset: Option<usize>,
}

impl WsSession {
    /// The session of VU `vu` of scenario `scenario`.
    pub fn new(plan: &Arc<WsPlan>, scenario: usize, vu: u64) -> Self {
        WsSession {
            scope: plan.scopes[scenario],
            tls: plan.tls[scenario]
                .as_ref()
                .map(|(client, mode)| client.session(*mode, vu)),
            socket: None,
            pending: VecDeque::new(),
            out: Vec::new(),
            rendered: Vec::new(),
            body: Vec::new(),
            status: 0,
            head: Vec::new(),
            headers: Vec::new(),
            url: Vec::new(),
            unset: None,
        }
    }

    /// Runs the step's action. A failure is a class; `connecting` tells a timeout of the TCP
    /// connect from a later one.
    async fn act(
        &mut self,
        step: &WsStep,
        ctx: &RenderContext<'_>,
        exchange: &mut Exchange,
        started: Moment,
        connecting: &mut bool,
        cookies: Option<&mut CookieJar>,
    ) -> Result<(), FailureClass> {
        match &step.plan.action {
            WsAction::Connect(connect) => {
                *connecting = true;
                // Boxed: the handshake's future (TCP, TLS, HTTP upgrade) is large, and inline
                // it would size every VU's request future, of every protocol, while idle; a
                // connect is one allocation beside a new socket.
                Box::pin(self.connect(step, connect, ctx, exchange, started, cookies)).await
            }
            WsAction::Send { payload, until } => {
                let socket = self.socket.as_mut().ok_or(FailureClass::ClosedEarly)?;
                match payload {
                    WsPayload::Text(template) => {
                        self.out.clear();
                        template.render(ctx, &mut self.out).map_err(|unset| {
                            self.unset = Some(unset.slot);
                            FailureClass::VariableUnset
                        })?;
                        // A text message is UTF-8 (RFC 6455 §5.6): a template that rendered
                        // other bytes (a variable holding them) sends U+FFFD in their place.
                        match String::from_utf8_lossy(&self.out) {
                            std::borrow::Cow::Borrowed(_) => socket.send(TEXT, &self.out).await?,
                            std::borrow::Cow::Owned(fixed) => {
                                socket.send(TEXT, fixed.as_bytes()).await?
                            }
                        }
                    }
                    WsPayload::Binary(_) => socket.send(BINARY, &step.binary).await?,
                }
                match until {
                    Some(until) => self.receive(until, exchange, started).await,
                    None => Ok(()),
                }
            }
            WsAction::Receive(until) => self.receive(until, exchange, started).await,
            WsAction::Ping => self.ping(exchange, started).await,
            WsAction::Close { code } => self.close(*code).await,
        }
    }

    async fn connect(
        &mut self,
        step: &WsStep,
        connect: &WsConnect,
        ctx: &RenderContext<'_>,
        exchange: &mut Exchange,
        started: Moment,
        mut cookies: Option<&mut CookieJar>,
    ) -> Result<(), FailureClass> {
        // A socket still open is replaced (dropped without a close handshake).
        self.socket = None;
        self.pending.clear();
        let target = step.target.as_ref().expect("connect steps have a target");
        // The request's target and headers rendered first, so that an unset variable opens
        // nothing.
        self.out.clear();
        connect.path.render(ctx, &mut self.out).map_err(|unset| {
            self.unset = Some(unset.slot);
            FailureClass::VariableUnset
        })?;
        let mut path = String::new();
        percent_encode_into(&self.out, &mut path);
        self.url.clear();
        self.url.extend_from_slice(target.origin.as_bytes());
        self.url.extend_from_slice(path.as_bytes());
        self.rendered.clear();
        for (name, value) in &connect.headers {
            let mut out = Vec::new();
            value.render(ctx, &mut out).map_err(|unset| {
                self.unset = Some(unset.slot);
                FailureClass::VariableUnset
            })?;
            // A value may not break the request's lines.
            out.retain(|&b| b != b'\r' && b != b'\n');
            self.rendered.push((name.clone(), out));
        }
        // The VU's cookies for this host and path, as a browser sends them with the upgrade
        // (unless the plan writes its own `Cookie` header).
        let path_only = path.split('?').next().unwrap_or("/");
        if let Some(jar) = cookies.as_deref() {
            let mut value = Vec::new();
            if !self
                .rendered
                .iter()
                .any(|(n, _)| n.eq_ignore_ascii_case("cookie"))
                && jar.header_value(
                    &target.host,
                    path_only.as_bytes(),
                    connect.tls,
                    SystemTime::now(),
                    &mut value,
                )
            {
                self.rendered.push(("Cookie".to_string(), value));
            }
        }
        let opts = ConnectOptions::default();
        let io = match (&self.tls, connect.tls) {
            (Some(tls), true) => {
                let stream = onrush_proto_http::connect_tls(
                    target.addr,
                    &opts,
                    tls,
                    &target.host,
                    exchange,
                    started,
                )
                .await?;
                Io::Tls(Box::new(stream))
            }
            // The plan builds a TLS client for every scenario with a `wss://` URL.
            (None, true) => return Err(FailureClass::TlsOther),
            (_, false) => {
                let stream = onrush_http::connect_tcp(target.addr, &opts)
                    .await
                    .map_err(|e| onrush_proto_http::classify(&e))?;
                exchange.record.connect_us = Some(micros(started.elapsed()));
                Io::Plain(stream)
            }
        };
        exchange.opened_connection = true;
        let offer = Offer {
            authority: &target.authority,
            target: &path,
            headers: &self.rendered,
            subprotocols: &connect.subprotocols,
            deflate: connect.deflate,
        };
        let (status, head, headers) = (&mut self.status, &mut self.head, &mut self.headers);
        let host = target.host.as_str();
        let socket = Socket::open(
            Transport::new(io),
            &offer,
            connect.max_message,
            |response| {
                *status = response.status;
                for (name, value) in response.headers {
                    if let Some(jar) = cookies.as_deref_mut() {
                        if name.eq_ignore_ascii_case("set-cookie") {
                            jar.store(value, host, path_only.as_bytes(), SystemTime::now());
                        }
                    }
                    let n = head.len()..head.len() + name.len();
                    head.extend_from_slice(name.as_bytes());
                    head.extend_from_slice(b": ");
                    let v = head.len()..head.len() + value.len();
                    head.extend_from_slice(value);
                    head.extend_from_slice(b"\r\n");
                    headers.push((n, v));
                }
            },
        )
        .await?;
        exchange.record.ttfb_us = Some(micros(started.elapsed()));
        self.socket = Some(socket);
        Ok(())
    }

    /// The next data message into `body`: one kept by a ping, else from the socket (pings
    /// answered, pongs skipped). A close from the server is `closed_early`, its code and
    /// reason the body.
    async fn next_message(&mut self) -> Result<(), FailureClass> {
        if let Some(message) = self.pending.pop_front() {
            self.body = message;
            return Ok(());
        }
        let socket = self.socket.as_mut().ok_or(FailureClass::ClosedEarly)?;
        loop {
            match socket.next().await? {
                Kind::Text | Kind::Binary => {
                    self.body.clear();
                    self.body.extend_from_slice(socket.payload());
                    return Ok(());
                }
                Kind::Pong => continue,
                Kind::Close(code) => {
                    closed_by(&mut self.body, code, socket.payload());
                    return Err(FailureClass::ClosedEarly);
                }
            }
        }
    }

    /// Receives until `until` holds; the last message received is the body.
    async fn receive(
        &mut self,
        until: &WsUntil,
        exchange: &mut Exchange,
        started: Moment,
    ) -> Result<(), FailureClass> {
        let mut received = 0u64;
        loop {
            self.next_message().await?;
            if exchange.record.ttfb_us.is_none() {
                exchange.record.ttfb_us = Some(micros(started.elapsed()));
            }
            received += 1;
            let done = match &until.pattern {
                Some(pattern) => pattern.0.is_match(&self.body),
                None => received >= until.count,
            };
            if done {
                return Ok(());
            }
        }
    }

    /// Sends a ping and waits for its pong; data messages meanwhile are kept for later.
    async fn ping(&mut self, exchange: &mut Exchange, started: Moment) -> Result<(), FailureClass> {
        const PAYLOAD: &[u8] = b"onrush";
        let socket = self.socket.as_mut().ok_or(FailureClass::ClosedEarly)?;
        socket.send(crate::frame::PING, PAYLOAD).await?;
        loop {
            match socket.next().await? {
                Kind::Pong if socket.payload() == PAYLOAD => {
                    exchange.record.ttfb_us = Some(micros(started.elapsed()));
                    self.body.clear();
                    self.body.extend_from_slice(PAYLOAD);
                    return Ok(());
                }
                Kind::Pong => {}
                Kind::Close(code) => {
                    closed_by(&mut self.body, code, socket.payload());
                    return Err(FailureClass::ClosedEarly);
                }
                Kind::Text | Kind::Binary => {
                    if self.pending.len() == PENDING_MAX {
                        self.pending.pop_front();
                    }
                    self.pending.push_back(socket.payload().to_vec());
                }
            }
        }
    }

    /// Sends a close frame and waits for the server's; its code and reason are the body (1005
    /// for a frame without a code, 1006 when the server ended the connection without one).
    async fn close(&mut self, code: u16) -> Result<(), FailureClass> {
        self.pending.clear();
        let socket = self.socket.as_mut().ok_or(FailureClass::ClosedEarly)?;
        match socket.close(code).await? {
            Some((theirs, payload)) => closed_by(&mut self.body, theirs, &payload),
            None => closed_by(&mut self.body, Some(ABNORMAL_CLOSE), &[]),
        }
        // The socket is dropped by `execute`, once its bytes are counted.
        Ok(())
    }
}

/// The server's close frame as the body, `CODE REASON`, for checks (`body_contains:
/// "1000"`): `payload` is the frame's (the code's two bytes, then the reason). (Not the status:
/// statuses are HTTP's, 100..599.)
fn closed_by(body: &mut Vec<u8>, code: Option<u16>, payload: &[u8]) {
    body.clear();
    body.extend_from_slice(code.unwrap_or(NO_STATUS).to_string().as_bytes());
    if let Some(reason) = payload.get(2..).filter(|r| !r.is_empty()) {
        body.push(b' ');
        body.extend_from_slice(reason);
    }
}

/// Appends `path` to `uri`, percent-encoding the bytes a URI may not hold as they are.
fn percent_encode_into(path: &[u8], uri: &mut String) {
    const HEX: &[u8; 16] = b"0123456789ABCDEF";
    for &b in path {
        if b.is_ascii_graphic()
            && !matches!(
                b,
                b'"' | b'<' | b'>' | b'\\' | b'^' | b'`' | b'{' | b'|' | b'}'
            )
        {
            uri.push(b as char);
        } else {
            uri.push('%');
            uri.push(HEX[(b >> 4) as usize] as char);
            uri.push(HEX[(b & 15) as usize] as char);
        }
    }
}

impl WsSession {
    /// [`Session::execute`] with the VU's cookie jar (its HTTP session's): a connect sends the
    /// cookies that match its URL and stores those the upgrade's response sets, as a browser
    /// does. `None`: no cookies (the VU has made no HTTP request, or `http.cookies: off`).
    pub async fn execute_with_cookies(
        &mut self,
        step: &WsStep,
        ctx: &RenderContext<'_>,
        start: RequestStart,
        cookies: Option<&mut CookieJar>,
    ) -> Exchange {
        let started = start.begin();
        let mut exchange = Exchange::empty();
        self.body.clear();
        self.status = 0;
        self.head.clear();
        self.headers.clear();
        if let Some(socket) = &mut self.socket {
            socket.count_from_zero();
        }
        let mut connecting = false;
        let outcome = tokio::time::timeout(
            step.timeout,
            self.act(step, ctx, &mut exchange, started, &mut connecting, cookies),
        )
        .await;
        let failure = match outcome {
            Ok(Ok(())) => None,
            Ok(Err(class)) => Some(class),
            Err(_elapsed) if connecting && !exchange.opened_connection => {
                Some(FailureClass::ConnectTimeout)
            }
            Err(_elapsed) => Some(FailureClass::Timeout),
        };
        if let Some(socket) = &self.socket {
            (exchange.record.bytes_in, exchange.record.bytes_out) = socket.counted();
        }
        exchange.record.status = self.status;
        if matches!(step.plan.action, WsAction::Close { .. }) {
            self.socket = None;
        }
        match failure {
            None => exchange.responded = true,
            // A message not (yet) come leaves the socket as it was: its framing is intact.
            Some(FailureClass::Timeout) if !connecting => {
                exchange.record.failure = Some(FailureClass::Timeout)
            }
            Some(class) => {
                exchange.record.failure = Some(class);
                self.socket = None;
                self.pending.clear();
            }
        }
        exchange.finish(started, start.intended);
        exchange
    }
}

impl Session for WsSession {
    type Step = WsStep;

    async fn execute(
        &mut self,
        step: &WsStep,
        ctx: &RenderContext<'_>,
        start: RequestStart,
    ) -> Exchange {
        self.execute_with_cookies(step, ctx, start, None).await
    }

    fn response(&self) -> ResponseView<'_> {
        ResponseView {
            status: self.status,
            head: &self.head,
            headers: &self.headers,
            body: &self.body,
            body_size: self.body.len() as u64,
            body_hash: None,
            url: &self.url,
        }
    }

    fn take_unset(&mut self) -> Option<usize> {
        self.unset.take()
    }

    fn end_iteration(&mut self) {
        if self.scope == ConnectionScope::PerIteration {
            self.socket = None;
            self.pending.clear();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_are_percent_encoded() {
        let mut uri = String::from("ws://h:1");
        percent_encode_into(b"/chat?u=a b&x=\xc3\xa9", &mut uri);
        assert_eq!(uri, "ws://h:1/chat?u=a%20b&x=%C3%A9");
    }

    #[test]
    fn a_close_frame_is_the_body() {
        let mut body = b"old".to_vec();
        closed_by(&mut body, Some(4001), &[0x0F, 0xA1, b'b', b'y', b'e']);
        assert_eq!(body, b"4001 bye");
        closed_by(&mut body, None, &[]);
        assert_eq!(body, b"1005");
    }
}
