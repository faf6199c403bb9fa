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
use std::io::ErrorKind;
use std::ops::Range;
use std::sync::Arc;
use std::time::Instant;

use bytes::BytesMut;
use futures_util::{SinkExt, StreamExt};
use onrush_http::{ConnectOptions, TlsSession};
use onrush_plan::{ConnectionScope, RenderContext, WsAction, WsPayload, WsUntil};
use onrush_protocol::{micros, Exchange, FailureClass, ResponseView, Session};
use tokio_tungstenite::tungstenite::client::ClientRequestBuilder;
use tokio_tungstenite::tungstenite::http::Uri;
use tokio_tungstenite::tungstenite::protocol::frame::coding::CloseCode;
use tokio_tungstenite::tungstenite::protocol::{CloseFrame, WebSocketConfig};
use tokio_tungstenite::tungstenite::{Bytes, Error as WsError, Message, Utf8Bytes};
use tokio_tungstenite::WebSocketStream;

use crate::plan::{WsPlan, WsStep};
use crate::transport::{buffered, Io, Transport, TUNGSTENITE_READ};

/// Data messages a `ping` keeps for later `receive`s while it waits for its pong; beyond
/// this the oldest are dropped.
pub const PENDING_MAX: usize = 256;

/// The close code shown when the socket ended without a close frame (RFC 6455 §7.1.5).
const ABNORMAL_CLOSE: u16 = 1006;

type Socket = WebSocketStream<Transport>;

/// One VU's socket and buffers.
pub struct WsSession {
    scope: ConnectionScope,
    tls: Option<TlsSession>,
    socket: Option<Socket>,
    /// Data messages received while a ping waited for its pong.
    pending: VecDeque<Message>,
    /// Rendering buffer (a text message, the request path).
    out: Vec<u8>,
    /// A text message's payload, copied from `out` (see `text_message`).
    text: BytesMut,
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
            text: BytesMut::new(),
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
        started: Instant,
        connecting: &mut bool,
    ) -> Result<(), FailureClass> {
        match &step.plan.action {
            WsAction::Connect(connect) => {
                *connecting = true;
                // Boxed: the handshake's future (TCP, TLS, HTTP upgrade) is large, and inline
                // it would size every VU's request future, of every protocol, while idle; a
                // connect is one allocation beside a new socket.
                Box::pin(self.connect(step, connect, ctx, exchange, started)).await
            }
            WsAction::Send { payload, until } => {
                let message = match payload {
                    WsPayload::Text(template) => {
                        self.out.clear();
                        template.render(ctx, &mut self.out).map_err(|unset| {
                            self.unset = Some(unset.slot);
                            FailureClass::VariableUnset
                        })?;
                        Message::Text(self.text_message())
                    }
                    // Shared with the step: a reference count, not a copy.
                    WsPayload::Binary(_) => Message::Binary(step.binary.clone()),
                };
                let socket = self.socket.as_mut().ok_or(FailureClass::ClosedEarly)?;
                socket.send(message).await.map_err(failure)?;
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
        connect: &onrush_plan::WsConnect,
        ctx: &RenderContext<'_>,
        exchange: &mut Exchange,
        started: Instant,
    ) -> Result<(), FailureClass> {
        // A socket still open is replaced (dropped without a close handshake).
        self.socket = None;
        self.pending.clear();
        let target = step.target.as_ref().expect("connect steps have a target");
        // The request: URI and headers rendered first, so that an unset variable opens nothing.
        let mut request = {
            self.out.clear();
            connect.path.render(ctx, &mut self.out).map_err(|unset| {
                self.unset = Some(unset.slot);
                FailureClass::VariableUnset
            })?;
            let mut uri = target.origin.clone();
            percent_encode_into(&self.out, &mut uri);
            self.url.clear();
            self.url.extend_from_slice(uri.as_bytes());
            let uri: Uri = uri.parse().map_err(|_| FailureClass::Io)?;
            ClientRequestBuilder::new(uri)
        };
        for (name, value) in &connect.headers {
            self.out.clear();
            value.render(ctx, &mut self.out).map_err(|unset| {
                self.unset = Some(unset.slot);
                FailureClass::VariableUnset
            })?;
            request = request.with_header(
                name.clone(),
                String::from_utf8_lossy(&self.out).into_owned(),
            );
        }
        for protocol in &connect.subprotocols {
            request = request.with_sub_protocol(protocol.clone());
        }
        let opts = ConnectOptions::default();
        let transport = match (&self.tls, connect.tls) {
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
                buffered(Io::Tls(Box::new(stream)))
            }
            // The plan builds a TLS client for every scenario with a `wss://` URL.
            (None, true) => return Err(FailureClass::TlsOther),
            (_, false) => {
                let stream = onrush_http::connect_tcp(target.addr, &opts)
                    .await
                    .map_err(|e| onrush_proto_http::classify(&e))?;
                exchange.record.connect_us = Some(micros(started.elapsed()));
                buffered(Io::Plain(stream))
            }
        };
        exchange.opened_connection = true;
        let config = WebSocketConfig::default()
            .read_buffer_size(TUNGSTENITE_READ)
            .max_message_size(Some(connect.max_message))
            .max_frame_size(Some(connect.max_message));
        let (socket, response) =
            tokio_tungstenite::client_async_with_config(request, transport, Some(config))
                .await
                .map_err(|e| {
                    if let WsError::Http(response) = &e {
                        self.status = response.status().as_u16();
                    }
                    failure(e)
                })?;
        exchange.record.ttfb_us = Some(micros(started.elapsed()));
        self.status = response.status().as_u16();
        for (name, value) in response.headers() {
            let n = self.head.len()..self.head.len() + name.as_str().len();
            self.head.extend_from_slice(name.as_str().as_bytes());
            self.head.extend_from_slice(b": ");
            let v = self.head.len()..self.head.len() + value.len();
            self.head.extend_from_slice(value.as_bytes());
            self.head.extend_from_slice(b"\r\n");
            self.headers.push((n, v));
        }
        self.socket = Some(socket);
        Ok(())
    }

    /// The next data message: one kept by a ping, else from the socket (pings answered, pongs
    /// skipped). A close from the server is `closed_early`, its code and reason the body.
    async fn next_message(&mut self) -> Result<Message, FailureClass> {
        if let Some(message) = self.pending.pop_front() {
            return Ok(message);
        }
        let socket = self.socket.as_mut().ok_or(FailureClass::ClosedEarly)?;
        loop {
            match socket.next().await {
                None => return Err(FailureClass::ClosedEarly),
                Some(Err(e)) => return Err(failure(e)),
                Some(Ok(Message::Close(frame))) => {
                    self.closed_by(frame.as_ref(), ABNORMAL_CLOSE);
                    return Err(FailureClass::ClosedEarly);
                }
                Some(Ok(Message::Ping(_) | Message::Pong(_) | Message::Frame(_))) => continue,
                Some(Ok(message)) => return Ok(message),
            }
        }
    }

    /// Receives until `until` holds; the last message received is the body.
    async fn receive(
        &mut self,
        until: &WsUntil,
        exchange: &mut Exchange,
        started: Instant,
    ) -> Result<(), FailureClass> {
        let mut received = 0u64;
        loop {
            let message = self.next_message().await?;
            if exchange.record.ttfb_us.is_none() {
                exchange.record.ttfb_us = Some(micros(started.elapsed()));
            }
            received += 1;
            let data: &[u8] = match &message {
                Message::Text(text) => text.as_bytes(),
                Message::Binary(bytes) => bytes,
                _ => &[],
            };
            self.body.clear();
            self.body.extend_from_slice(data);
            let done = match &until.pattern {
                Some(pattern) => pattern.0.is_match(data),
                None => received >= until.count,
            };
            if done {
                return Ok(());
            }
        }
    }

    /// Sends a ping and waits for its pong; data messages meanwhile are kept for later.
    async fn ping(
        &mut self,
        exchange: &mut Exchange,
        started: Instant,
    ) -> Result<(), FailureClass> {
        const PAYLOAD: &[u8] = b"onrush";
        let socket = self.socket.as_mut().ok_or(FailureClass::ClosedEarly)?;
        socket
            .send(Message::Ping(Bytes::from_static(PAYLOAD)))
            .await
            .map_err(failure)?;
        loop {
            match socket.next().await {
                None => return Err(FailureClass::ClosedEarly),
                Some(Err(e)) => return Err(failure(e)),
                Some(Ok(Message::Pong(payload))) if payload == PAYLOAD => {
                    exchange.record.ttfb_us = Some(micros(started.elapsed()));
                    self.body.clear();
                    self.body.extend_from_slice(&payload);
                    return Ok(());
                }
                Some(Ok(Message::Close(frame))) => {
                    self.closed_by(frame.as_ref(), ABNORMAL_CLOSE);
                    return Err(FailureClass::ClosedEarly);
                }
                Some(Ok(message @ (Message::Text(_) | Message::Binary(_)))) => {
                    if self.pending.len() == PENDING_MAX {
                        self.pending.pop_front();
                    }
                    self.pending.push_back(message);
                }
                Some(Ok(_)) => {}
            }
        }
    }

    /// Sends a close frame and waits for the server's; its code and reason are the body (1006
    /// when the server ended the connection without one).
    async fn close(&mut self, code: u16) -> Result<(), FailureClass> {
        self.pending.clear();
        let socket = self.socket.as_mut().ok_or(FailureClass::ClosedEarly)?;
        let frame = CloseFrame {
            code: CloseCode::from(code),
            reason: "".into(),
        };
        match socket.close(Some(frame)).await {
            Ok(()) => {}
            // The server closed first: its close frame is read below.
            Err(WsError::ConnectionClosed | WsError::AlreadyClosed) => {}
            Err(e) => return Err(failure(e)),
        }
        let mut last: Option<CloseFrame> = None;
        let mut framed = false;
        loop {
            match socket.next().await {
                Some(Ok(Message::Close(frame))) => {
                    framed = true;
                    last = frame;
                }
                Some(Ok(_)) => {}
                None | Some(Err(_)) => break,
            }
        }
        self.closed_by(last.as_ref(), if framed { 1005 } else { ABNORMAL_CLOSE });
        // The socket is dropped by `execute`, once its bytes are counted.
        Ok(())
    }
}

impl WsSession {
    /// The rendered text (`out`) as a text message's payload, without an allocation once the
    /// socket has sent one: the payload is split off `text`, whose memory tungstenite gives
    /// back (the frame is copied into its write buffer and dropped) before the next send
    /// reclaims it. A template that rendered invalid UTF-8 (a variable holding other bytes)
    /// sends it with U+FFFD in their place, as a text message must be UTF-8 (RFC 6455 §5.6).
    fn text_message(&mut self) -> Utf8Bytes {
        self.text.extend_from_slice(&self.out);
        Utf8Bytes::try_from(self.text.split())
            .unwrap_or_else(|_| Utf8Bytes::from(String::from_utf8_lossy(&self.out).into_owned()))
    }

    /// The server's close frame as the body, `CODE REASON`, for checks (`body_contains:
    /// "1000"`); `none` is the code shown when there was no frame or it had no code. (Not the
    /// status: statuses are HTTP's, 100..599.)
    fn closed_by(&mut self, frame: Option<&CloseFrame>, none: u16) {
        let code = frame.map_or(none, |f| u16::from(f.code));
        self.body.clear();
        self.body.extend_from_slice(code.to_string().as_bytes());
        if let Some(frame) = frame.filter(|f| !f.reason.is_empty()) {
            self.body.push(b' ');
            self.body.extend_from_slice(frame.reason.as_bytes());
        }
    }
}

/// The failure class of a WebSocket error.
fn failure(e: WsError) -> FailureClass {
    use tokio_tungstenite::tungstenite::error::ProtocolError;
    match e {
        WsError::ConnectionClosed | WsError::AlreadyClosed => FailureClass::ClosedEarly,
        WsError::Protocol(ProtocolError::ResetWithoutClosingHandshake) => FailureClass::ClosedEarly,
        WsError::Io(e) => match e.kind() {
            ErrorKind::ConnectionReset | ErrorKind::BrokenPipe => FailureClass::Reset,
            ErrorKind::UnexpectedEof => FailureClass::ClosedEarly,
            _ => FailureClass::Io,
        },
        // Malformed frames, a bad handshake response, invalid UTF-8 in a text message, a message
        // over `max_message`: the server's fault, told as a bad response.
        WsError::Protocol(_)
        | WsError::Capacity(_)
        | WsError::Utf8(_)
        | WsError::AttackAttempt
        | WsError::HttpFormat(_) => FailureClass::BadResponse,
        WsError::Http(response) => match response.status().as_u16() {
            400..=499 => FailureClass::Http4xx,
            500..=599 => FailureClass::Http5xx,
            _ => FailureClass::UnexpectedStatus,
        },
        WsError::Tls(_) => FailureClass::TlsOther,
        WsError::WriteBufferFull(_) | WsError::Url(_) => FailureClass::Io,
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

impl Session for WsSession {
    type Step = WsStep;

    async fn execute(
        &mut self,
        step: &WsStep,
        ctx: &RenderContext<'_>,
        intended_start: Instant,
    ) -> Exchange {
        let started = Instant::now();
        let mut exchange = Exchange::empty();
        self.body.clear();
        self.status = 0;
        self.head.clear();
        self.headers.clear();
        if let Some(socket) = &mut self.socket {
            socket.get_mut().counted = (0, 0);
        }
        let mut connecting = false;
        let outcome = tokio::time::timeout(
            step.timeout,
            self.act(step, ctx, &mut exchange, started, &mut connecting),
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
            (exchange.record.bytes_in, exchange.record.bytes_out) = socket.get_ref().counted;
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
        exchange.finish(started, intended_start);
        exchange
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
    fn errors_are_classified() {
        use tokio_tungstenite::tungstenite::error::{CapacityError, ProtocolError};
        assert_eq!(
            failure(WsError::Capacity(CapacityError::MessageTooLong {
                size: 2,
                max_size: 1
            })),
            FailureClass::BadResponse
        );
        assert_eq!(
            failure(WsError::Protocol(
                ProtocolError::ResetWithoutClosingHandshake
            )),
            FailureClass::ClosedEarly
        );
        assert_eq!(
            failure(WsError::Io(std::io::Error::from(
                ErrorKind::ConnectionReset
            ))),
            FailureClass::Reset
        );
        assert_eq!(
            failure(WsError::ConnectionClosed),
            FailureClass::ClosedEarly
        );
    }
}
