//! One virtual user's Thrift session: a connection per target (plain TCP or TLS, TCP's
//! `onrush_proto_tcp::stream`) kept per the connection scope,
//! each call encoded into a reused buffer, its reply read until the transport says it is whole
//! (a frame's length, or — buffered — until the message decodes), then classified.

use onrush_http::{IoOp, TlsSession};
use onrush_plan::{ConnectionScope, RenderContext, Template, Unset};
use onrush_proto_tcp::stream::{open, stream_failure, Dial, Stream};
use onrush_protocol::Moment;
use onrush_protocol::{
    micros, Exchange, FailureClass, RequestStart, ResponseView, Session, Warmed,
};
use onrush_thrift::reply::{decode_reply, Outcome};
use onrush_thrift::value::{encode_call, EncodeError};
use onrush_thrift::wire::{Encoder, WireError};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::classes;
use crate::plan::{ThriftPlan, ThriftStep};

/// The header that names a declared exception's type, for `header` extractors and checks.
const EXCEPTION_HEADER: &[u8] = b"exception";

/// One VU's Thrift connections and buffers (all reused from call to call).
pub struct ThriftSession {
    scope: ConnectionScope,
    /// The VU's TLS session, when the scenario has a `tls://` target.
    tls: Option<TlsSession>,
    connections: Vec<Option<Stream>>,
    /// The encoded call (with its frame length when framed).
    out: Vec<u8>,
    /// The compact protocol's field-id stack.
    stack: Vec<i16>,
    /// One rendered template leaf.
    scratch: Vec<u8>,
    /// Bytes read; a reply is consumed from its start.
    buffer: Vec<u8>,
    /// The last reply as JSON.
    body: Vec<u8>,
    /// `exception` and the declared exception's type name, when one was thrown.
    head: Vec<u8>,
    headers: Vec<(std::ops::Range<usize>, std::ops::Range<usize>)>,
    label: Vec<u8>,
    seqid: i32,
    unset: Option<usize>,
    /// `--debug` ([`onrush_protocol::debug`]): every reply decoded to JSON, whatever the step
    /// reads, to be printed.
    debug: bool,
}

impl ThriftSession {
    pub fn new(plan: &ThriftPlan, scenario: usize, vu: u64) -> Self {
        ThriftSession {
            scope: plan.scopes[scenario],
            tls: plan.tls.session(scenario, vu),
            connections: (0..plan.target_count()).map(|_| None).collect(),
            out: Vec::new(),
            stack: Vec::new(),
            scratch: Vec::new(),
            buffer: Vec::new(),
            body: Vec::new(),
            head: Vec::new(),
            headers: Vec::new(),
            label: Vec::new(),
            seqid: 0,
            unset: None,
            debug: onrush_protocol::debug::on(),
        }
    }

    /// Encodes the call into `out`; a template that cannot render is `variable_unset`, a value
    /// that does not fit its type `bad_argument`.
    fn encode(&mut self, step: &ThriftStep, ctx: &RenderContext<'_>) -> Result<(), FailureClass> {
        let plan = &step.plan;
        self.out.clear();
        if plan.framed {
            self.out.extend_from_slice(&[0; 4]);
        }
        self.seqid = self.seqid.wrapping_add(1);
        let mut e = Encoder::new(plan.protocol, &mut self.out, &mut self.stack);
        let mut render =
            |t: &Template, out: &mut Vec<u8>| -> Result<(), Unset> { t.render(ctx, out) };
        match encode_call(
            &mut e,
            plan.message_name.as_bytes(),
            plan.function().oneway,
            self.seqid,
            &plan.args,
            &mut self.scratch,
            &mut render,
        ) {
            Ok(()) => {}
            Err(EncodeError::Render(unset)) => {
                self.unset = Some(unset.slot);
                return Err(FailureClass::VariableUnset);
            }
            Err(EncodeError::BadValue(_)) => return Err(FailureClass::BadArgument),
        }
        if plan.framed {
            let len = (self.out.len() - 4) as u32;
            self.out[..4].copy_from_slice(&len.to_be_bytes());
        }
        Ok(())
    }

    /// Connect (when needed), send, read and decode the reply. Any error drops the connection
    /// (its stream position is then unknown).
    async fn exchange(
        &mut self,
        step: &ThriftStep,
        exchange: &mut Exchange,
        started: Moment,
    ) -> Result<Option<Outcome>, FailureClass> {
        if self.connections[step.slot].is_none() {
            let dial = Dial::new(
                step.addr,
                step.plan.tls,
                self.tls.as_ref(),
                &step.plan.host,
                started,
                step.timeout,
            )?;
            // Boxed: the TLS handshake's future is large, and inline it would size every
            // VU's request future, idle or not (see the `memory` test).
            self.connections[step.slot] = Some(Box::pin(open(dial, exchange, started)).await?);
            self.buffer.clear();
        }
        let stream = self.connections[step.slot]
            .as_mut()
            .expect("connected above");
        let sending = |e| stream_failure(e, IoOp::Sending);
        stream.write_all(&self.out).await.map_err(sending)?;
        // TLS may keep the last record until flushed (plain TCP: a no-op).
        stream.flush().await.map_err(sending)?;
        exchange.record.bytes_out += self.out.len() as u64;
        let plan = &step.plan;
        if plan.function().oneway {
            return Ok(None);
        }
        let max = plan.max_message;
        loop {
            if let Some((start, end)) = frame(plan.framed, &self.buffer, max)? {
                self.body.clear();
                let json = (step.needs_json || self.debug).then_some(&mut self.body);
                let decoded = decode_reply(
                    plan.protocol,
                    &self.buffer[start..end],
                    plan.message_name.as_bytes(),
                    self.seqid,
                    plan.function(),
                    &plan.schema,
                    json,
                );
                match decoded {
                    Ok(reply) => {
                        let consumed = if plan.framed { end } else { reply.consumed };
                        self.buffer.drain(..consumed);
                        return Ok(Some(reply.outcome));
                    }
                    // Buffered: the message goes on past what was read.
                    Err(WireError::NeedMore) if !plan.framed => {
                        if self.buffer.len() > max {
                            return Err(FailureClass::BadResponse);
                        }
                    }
                    // Framed: the frame ended inside the message.
                    Err(_) => return Err(FailureClass::BadResponse),
                }
            }
            self.buffer.reserve(16 * 1024);
            let read = stream
                .read_buf(&mut self.buffer)
                .await
                .map_err(|e| stream_failure(e, IoOp::Reading))?;
            if read == 0 {
                return Err(FailureClass::ClosedEarly);
            }
            if exchange.record.ttfb_us.is_none() {
                exchange.record.ttfb_us = Some(micros(started.elapsed()));
            }
            exchange.record.bytes_in += read as u64;
        }
    }

    /// The reply's view for a declared exception: its type name as the `exception` header.
    fn set_exception(&mut self, step: &ThriftStep, outcome: Option<Outcome>) {
        self.head.clear();
        self.headers.clear();
        if let Some(Outcome::Exception(i)) = outcome {
            let f = step.plan.function();
            let name = step.plan.schema.type_name(&f.throws[i].ty);
            self.head.extend_from_slice(EXCEPTION_HEADER);
            self.head.extend_from_slice(name.as_bytes());
            self.headers.push((
                0..EXCEPTION_HEADER.len(),
                EXCEPTION_HEADER.len()..self.head.len(),
            ));
        }
    }
}

/// Where the next message lies in `buffer` when the transport can tell: framed, the frame
/// (`4..4+len`) once whole; buffered, everything read so far (the decoder says if it is
/// whole). A frame longer than `max` fails as soon as its length is read.
fn frame(framed: bool, buffer: &[u8], max: usize) -> Result<Option<(usize, usize)>, FailureClass> {
    if !framed {
        return Ok((!buffer.is_empty()).then_some((0, buffer.len())));
    }
    let Some(prefix) = buffer.get(..4) else {
        return Ok(None);
    };
    let len = i32::from_be_bytes(prefix.try_into().expect("4 bytes"));
    if len <= 0 || len as usize > max {
        return Err(FailureClass::BadResponse);
    }
    let end = 4 + len as usize;
    Ok((buffer.len() >= end).then_some((4, end)))
}

impl Session for ThriftSession {
    type Step = ThriftStep;

    async fn execute(
        &mut self,
        step: &ThriftStep,
        ctx: &RenderContext<'_>,
        start: RequestStart,
    ) -> Exchange {
        let started = start.begin();
        let mut exchange = Exchange::empty();
        self.label.clear();
        self.label.extend_from_slice(&step.label);
        self.body.clear();
        self.set_exception(step, None);
        match self.encode(step, ctx) {
            Err(class) => exchange.record.failure = Some(class),
            Ok(()) => {
                let outcome =
                    tokio::time::timeout(step.timeout, self.exchange(step, &mut exchange, started))
                        .await;
                let result = match outcome {
                    Ok(result) => result,
                    Err(_elapsed) if self.connections[step.slot].is_none() => {
                        Err(FailureClass::ConnectTimeout)
                    }
                    Err(_elapsed) => Err(FailureClass::Timeout),
                };
                match result {
                    Ok(outcome) => {
                        exchange.responded = true;
                        exchange.record.failure = match outcome {
                            None | Some(Outcome::Success) => None,
                            Some(Outcome::Exception(_)) => Some(classes::exception()),
                            Some(Outcome::Application(_)) => Some(classes::application_exception()),
                        };
                        self.set_exception(step, outcome);
                    }
                    Err(class) => {
                        exchange.record.failure = Some(class);
                        self.connections[step.slot] = None;
                        self.buffer.clear();
                        self.body.clear();
                    }
                }
            }
        }
        if self.scope == ConnectionScope::PerRequest {
            self.connections[step.slot] = None;
            self.buffer.clear();
        }
        exchange.finish(started, start.intended);
        exchange
    }

    fn response(&self) -> ResponseView<'_> {
        ResponseView {
            head: &self.head,
            headers: &self.headers,
            body: &self.body,
            body_size: self.body.len() as u64,
            url: &self.label,
            ..ResponseView::default()
        }
    }

    fn take_unset(&mut self) -> Option<usize> {
        self.unset.take()
    }

    /// Opens the VU's stream ahead of the load (an open model's warm-up): see
    /// [`onrush_proto_tcp::stream::warm_up`].
    async fn warm_up(&mut self, step: &ThriftStep) -> Warmed {
        let warmed = onrush_proto_tcp::stream::warm_up(
            &mut self.connections[step.slot],
            self.scope,
            step.addr,
            step.plan.tls,
            self.tls.as_ref(),
            &step.plan.host,
            step.timeout,
        )
        .await;
        if warmed == Warmed::Opened {
            self.buffer.clear();
        }
        warmed
    }

    fn end_iteration(&mut self) {
        if self.scope == ConnectionScope::PerIteration {
            self.connections.iter_mut().for_each(|c| *c = None);
            self.buffer.clear();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames() {
        assert_eq!(frame(true, b"\0\0\0", 64), Ok(None));
        assert_eq!(frame(true, b"\0\0\0\x02a", 64), Ok(None));
        assert_eq!(frame(true, b"\0\0\0\x02abNEXT", 64), Ok(Some((4, 6))));
        // Longer than max_message, zero or negative: bad_response before any of it is read.
        assert_eq!(
            frame(true, b"\0\0\x01\0", 255),
            Err(FailureClass::BadResponse)
        );
        assert_eq!(
            frame(true, b"\0\0\0\0", 255),
            Err(FailureClass::BadResponse)
        );
        assert_eq!(
            frame(true, b"\xff\xff\xff\xff", 255),
            Err(FailureClass::BadResponse)
        );
        assert_eq!(frame(false, b"", 64), Ok(None));
        assert_eq!(frame(false, b"abc", 64), Ok(Some((0, 3))));
    }
}
