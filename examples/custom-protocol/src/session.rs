//! One virtual user's Redis session: its connections (one per server and settings, or drawn
//! from the worker's pool for `connections: shared`), the commands rendered into one reused
//! buffer, and the replies read until each command has its own.
//!
//! A reply is scanned in place (`resp::scan`, no allocation) and written as JSON only when the
//! step's extractors or checks read it. An error reply fails the step with its class
//! (`redis_wrongtype`, ...) and keeps the connection: Redis answers the next command as
//! usual. Anything else that goes wrong (a time-out, a reset, a reply that is not RESP) drops
//! the connection, whose state is then unknown.

use std::cell::RefCell;
use std::rc::Rc;
use std::sync::Arc;

use onrush_http::{IoOp, TlsSession};
use onrush_metrics::failure_examples;
use onrush_plan::RenderContext;
use onrush_proto_tcp::stream::{self, Dial, Stream};
use onrush_protocol::{
    micros, within, Exchange, FailureClass, Moment, RequestStart, RequestTimer, ResponseView,
    Session,
};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::classes::Classes;
use crate::plan::{Endpoint, RedisPlan, RedisStep};
use crate::resp::{self, Limits};

/// An open connection and what was read from it and not used yet.
pub struct Conn {
    stream: Stream,
    buf: Vec<u8>,
}

/// A worker's idle connections per endpoint, for `connections: shared` (one thread: no lock).
#[derive(Clone, Default)]
pub struct Pool(Rc<RefCell<Vec<Vec<Conn>>>>);

impl Pool {
    fn take(&self, endpoint: usize) -> Option<Conn> {
        self.0.borrow_mut().get_mut(endpoint)?.pop()
    }

    fn give(&self, endpoint: usize, conn: Conn) {
        let mut idle = self.0.borrow_mut();
        if idle.len() <= endpoint {
            idle.resize_with(endpoint + 1, Vec::new);
        }
        idle[endpoint].push(conn);
    }
}

/// A VU's Redis session.
pub struct RedisSession {
    plan: Arc<RedisPlan>,
    pool: Pool,
    classes: &'static Classes,
    tls: Option<TlsSession>,
    /// Per endpoint: the VU's own connection (`connections: per_vu`).
    conns: Vec<Option<Conn>>,
    /// The commands of the current request, encoded.
    out: Vec<u8>,
    /// One argument, rendered before its length is written.
    arg: Vec<u8>,
    /// The last reply as JSON (a pipeline's as an array), when the step reads it.
    body: Vec<u8>,
    endpoint: usize,
    unset: Option<usize>,
    /// One timer for every request, left armed between them (a timer armed and removed per
    /// request cost ~1,000 instructions in onrush's HTTP session).
    timer: RequestTimer,
}

impl RedisSession {
    pub fn new(
        plan: &Arc<RedisPlan>,
        pool: &Pool,
        classes: &'static Classes,
        scenario: usize,
        vu: u64,
    ) -> Self {
        RedisSession {
            plan: plan.clone(),
            pool: pool.clone(),
            classes,
            tls: plan.tls.session(scenario, vu),
            conns: plan.endpoints.iter().map(|_| None).collect(),
            out: Vec::new(),
            arg: Vec::new(),
            body: Vec::new(),
            endpoint: 0,
            unset: None,
            timer: RequestTimer::default(),
        }
    }

    /// Renders the step's commands into `out`; `Err` names the unset variable's slot.
    fn render(&mut self, step: &RedisStep, ctx: &RenderContext<'_>) -> Result<(), usize> {
        self.out.clear();
        for command in &step.commands {
            resp::push_array(&mut self.out, command.len());
            for arg in command {
                // Rendered apart first: a bulk string's length comes before its bytes.
                self.arg.clear();
                arg.render(ctx, &mut self.arg).map_err(|unset| unset.slot)?;
                resp::push_bulk(&mut self.out, &self.arg);
            }
        }
        Ok(())
    }
}

/// What one exchange needs besides the connection.
struct Call<'a> {
    endpoint: &'a Endpoint,
    tls: Option<&'a TlsSession>,
    request: &'a [u8],
    replies: usize,
    step: &'a RedisStep,
    classes: &'static Classes,
}

/// Writes the request (after HELLO/AUTH/SELECT on a new connection) and reads its replies.
/// `Ok(Some(class))` is an error reply: the connection is fine, the step failed.
async fn exchange(
    call: Call<'_>,
    slot: &mut Option<Conn>,
    body: &mut Vec<u8>,
    exchange: &mut Exchange,
    started: Moment,
) -> Result<Option<FailureClass>, FailureClass> {
    let mut skip = 0;
    if slot.is_none() {
        let e = call.endpoint;
        let dial = Dial::new(e.addr, e.tls, call.tls, &e.host, started, call.step.timeout)?;
        let stream = stream::open(dial, exchange, started).await?;
        *slot = Some(Conn {
            stream,
            buf: Vec::with_capacity(16 * 1024),
        });
        skip = e.hello_replies;
    }
    let conn = slot.as_mut().expect("opened above");
    if skip > 0 {
        // One write for the connection's first commands and the step's: one round trip.
        let mut first = Vec::with_capacity(call.endpoint.hello.len() + call.request.len());
        first.extend_from_slice(&call.endpoint.hello);
        first.extend_from_slice(call.request);
        write(conn, &first).await?;
        exchange.record.bytes_out += first.len() as u64;
    } else {
        write(conn, call.request).await?;
        exchange.record.bytes_out += call.request.len() as u64;
    }
    let limits = Limits::default();
    let needs_body = call.step.needs_body;
    let (mut pos, mut seen) = (0, 0);
    let mut failed = None;
    if needs_body && call.step.pipeline {
        body.push(b'[');
    }
    loop {
        while seen < skip + call.replies {
            let frame = match resp::scan(&conn.buf[pos..], &limits) {
                Ok(Some(frame)) => frame,
                Ok(None) => break,
                Err(e) => {
                    let class = call.classes.protocol;
                    failure_examples::note(class, || format!("{e}"));
                    return Err(class);
                }
            };
            let reply = &conn.buf[pos..pos + frame.len];
            if let Some(text) = &frame.error {
                let text = &reply[text.clone()];
                let class = call.classes.of_error(resp::error_kind(text));
                failure_examples::note(class, || String::from_utf8_lossy(text).into_owned());
                if seen < skip {
                    // A connection whose AUTH or SELECT failed serves nobody.
                    return Err(class);
                }
                failed.get_or_insert(class);
            }
            if seen >= skip && needs_body {
                if seen > skip && call.step.pipeline {
                    body.push(b',');
                }
                resp::write_json(reply, body);
            }
            pos += frame.len;
            seen += 1;
        }
        if seen == skip + call.replies {
            break;
        }
        if conn.buf.capacity() - conn.buf.len() < 4096 {
            conn.buf.reserve(16 * 1024);
        }
        let n = conn
            .stream
            .read_buf(&mut conn.buf)
            .await
            .map_err(|e| stream::stream_failure(e, IoOp::Reading))?;
        if n == 0 {
            return Err(FailureClass::ClosedEarly);
        }
        if exchange.record.ttfb_us.is_none() {
            exchange.record.ttfb_us = Some(micros(started.elapsed()));
        }
        exchange.record.bytes_in += n as u64;
    }
    if needs_body && call.step.pipeline {
        body.push(b']');
    }
    // Bytes beyond the last reply would be a reply to nothing: the connection is confused.
    if pos != conn.buf.len() {
        return Err(FailureClass::UnsolicitedResponse);
    }
    conn.buf.clear();
    Ok(failed)
}

async fn write(conn: &mut Conn, bytes: &[u8]) -> Result<(), FailureClass> {
    conn.stream
        .write_all(bytes)
        .await
        .map_err(|e| stream::stream_failure(e, IoOp::Sending))
}

impl Session for RedisSession {
    type Step = RedisStep;

    async fn execute(
        &mut self,
        step: &RedisStep,
        ctx: &RenderContext<'_>,
        start: RequestStart,
    ) -> Exchange {
        let started = start.begin();
        let mut result = Exchange::empty();
        self.body.clear();
        self.endpoint = step.endpoint;
        if step.encoded.is_none() {
            if let Err(slot) = self.render(step, ctx) {
                self.unset = Some(slot);
                result.record.failure = Some(FailureClass::VariableUnset);
                result.finish(started, start.intended);
                return result;
            }
        }
        let request = step.encoded.as_deref().unwrap_or(&self.out);
        let mut slot = if step.shared {
            self.pool.take(step.endpoint)
        } else {
            self.conns[step.endpoint].take()
        };
        let call = Call {
            endpoint: &self.plan.endpoints[step.endpoint],
            tls: self.tls.as_ref(),
            request,
            replies: step.commands.len(),
            step,
            classes: self.classes,
        };
        let connected = slot.is_some();
        // The exchange's future borrows the slot and the exchange: it ends with this block.
        let outcome = {
            let fut = std::pin::pin!(exchange(
                call,
                &mut slot,
                &mut self.body,
                &mut result,
                started
            ));
            within(&mut self.timer, started + step.timeout, fut).await
        };
        let keep = match outcome {
            Some(Ok(failed)) => {
                result.responded = true;
                result.record.failure = failed;
                true
            }
            Some(Err(class)) => {
                result.record.failure = Some(class);
                false
            }
            None => {
                let class = if connected || result.record.connect_us.is_some() {
                    FailureClass::Timeout
                } else {
                    FailureClass::ConnectTimeout
                };
                result.record.failure = Some(class);
                false
            }
        };
        if keep {
            if let Some(conn) = slot {
                if step.shared {
                    self.pool.give(step.endpoint, conn);
                } else {
                    self.conns[step.endpoint] = Some(conn);
                }
            }
        }
        result.finish(started, start.intended);
        result
    }

    fn response(&self) -> ResponseView<'_> {
        ResponseView {
            body: &self.body,
            body_size: self.body.len() as u64,
            url: self
                .plan
                .endpoints
                .get(self.endpoint)
                .map_or(&[][..], |e| &e.label),
            ..ResponseView::default()
        }
    }

    fn take_unset(&mut self) -> Option<usize> {
        self.unset.take()
    }

    fn iteration_hooks(&self) -> bool {
        false
    }
}
