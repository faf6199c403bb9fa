//! One virtual user's TCP session: a connection per target (plain or TLS, `stream.rs`) kept per
//! the connection scope, the payload rendered into a reused buffer, the reply read until its
//! framing says it is complete (a delimiter, a length, a length prefix, the server's silence or
//! its close).

use std::io::{ErrorKind, Read as _};
use std::path::Path;

use memchr::memmem;
use onrush_http::{IoOp, TlsSession};
use onrush_plan::{ConnectionScope, RenderContext, TcpPayload};

use crate::TcpReply;
use onrush_protocol::Moment;
use onrush_protocol::{
    micros, Exchange, FailureClass, RequestStart, ResponseView, Session, Warmed,
};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::plan::{TcpPlan, TcpStep};
use crate::stream::{open, stream_failure, Dial, Stream};

/// One VU's TCP connections and buffers.
pub struct TcpSession {
    scope: ConnectionScope,
    /// The VU's TLS session (its session cache and client identity), when the scenario has a
    /// `tls://` target.
    tls: Option<TlsSession>,
    /// The open connection per target slot.
    connections: Vec<Option<Stream>>,
    /// The payload of the current request.
    out: Vec<u8>,
    /// The reply being read; bytes past the reply stay here for the next one (TCP is a stream).
    buffer: Vec<u8>,
    /// The last complete reply is `buffer[reply_start..reply_end]` (`reply_start` skips a
    /// length prefix); the next exchange consumes `..reply_end`.
    reply_start: usize,
    reply_end: usize,
    /// `host:port` of the last step, for `url` extractors.
    label: Vec<u8>,
    unset: Option<usize>,
}

impl TcpSession {
    /// The session of VU `vu` of scenario `scenario`.
    pub fn new(plan: &TcpPlan, scenario: usize, vu: u64) -> Self {
        TcpSession {
            scope: plan.scopes[scenario],
            tls: plan.tls.session(scenario, vu),
            connections: (0..plan.target_count()).map(|_| None).collect(),
            out: Vec::new(),
            buffer: Vec::new(),
            reply_start: 0,
            reply_end: 0,
            label: Vec::new(),
            unset: None,
        }
    }

    /// Connect (when needed), send, read the reply. Errors are failure classes; the
    /// connection is dropped on any error, since its stream position is then unknown.
    async fn exchange(
        &mut self,
        step: &TcpStep,
        exchange: &mut Exchange,
        started: Moment,
        closed: &mut bool,
    ) -> Result<(), FailureClass> {
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
        match &step.plan.send {
            Some(TcpPayload::File(path)) => {
                send_file(stream, path, &mut self.out, &mut exchange.record.bytes_out).await?
            }
            _ if !self.out.is_empty() => {
                stream
                    .write_all(&self.out)
                    .await
                    .map_err(|e| stream_failure(e, IoOp::Sending))?;
                exchange.record.bytes_out += self.out.len() as u64;
            }
            _ => {}
        }
        // TLS may keep the last record of what was written until flushed (plain TCP: no-op).
        stream
            .flush()
            .await
            .map_err(|e| stream_failure(e, IoOp::Sending))?;
        let max = step.plan.max_reply;
        let reply = &step.plan.reply;
        loop {
            if let Some((start, end)) = frame(reply, &self.buffer, max)? {
                (self.reply_start, self.reply_end) = (start, end);
                return Ok(());
            }
            // No complete reply: one byte more than `max_reply` proves the reply too long
            // (a framed reply that fits was found above; a reply that ends at the server's
            // silence or close may be exactly `max_reply` long).
            if self.buffer.len() > max {
                return Err(FailureClass::BadResponse);
            }
            // Reads into spare capacity, at most what the reply may still need (a length prefix
            // was checked against `max_reply` before any of its message was read): the buffer
            // stays within about twice `max_reply`, whatever the server announces or sends.
            let wanted = match reply {
                TcpReply::LengthPrefix(prefix) => match prefix.frame_len(&self.buffer) {
                    Some(Ok(frame)) => frame as usize - self.buffer.len(),
                    _ => prefix.bytes as usize - self.buffer.len(),
                },
                _ => max + 1 - self.buffer.len(),
            };
            self.buffer.reserve(wanted.min(16 * 1024));
            let read = match reply {
                // The reply has begun: it ends when the server is silent for `idle`.
                TcpReply::Idle(idle) if !self.buffer.is_empty() => {
                    match tokio::time::timeout(*idle, stream.read_buf(&mut self.buffer)).await {
                        Ok(read) => read.map_err(|e| stream_failure(e, IoOp::Reading))?,
                        Err(_silent) => {
                            (self.reply_start, self.reply_end) = (0, self.buffer.len());
                            return Ok(());
                        }
                    }
                }
                _ => stream
                    .read_buf(&mut self.buffer)
                    .await
                    .map_err(|e| stream_failure(e, IoOp::Reading))?,
            };
            if read == 0 {
                let ends_at_close = match reply {
                    TcpReply::UntilClose => true,
                    TcpReply::Idle(_) => !self.buffer.is_empty(),
                    _ => false,
                };
                if !ends_at_close {
                    return Err(FailureClass::ClosedEarly);
                }
                (self.reply_start, self.reply_end) = (0, self.buffer.len());
                // The server closed: the reply is complete, the connection is done.
                *closed = true;
                return Ok(());
            }
            if exchange.record.ttfb_us.is_none() {
                exchange.record.ttfb_us = Some(micros(started.elapsed()));
            }
            exchange.record.bytes_in += read as u64;
        }
    }
}

/// Streams the file at `path` to `stream` through `chunk` (reused): a payload of any size costs
/// one chunk of memory. The file is read with plain blocking reads: a chunk from the page cache
/// takes microseconds, where tokio's `fs` would hand every chunk to a blocking thread and back.
/// A file that cannot be read any more (removed since the plan was loaded) is an `io` failure.
async fn send_file(
    stream: &mut Stream,
    path: &Path,
    chunk: &mut Vec<u8>,
    sent: &mut u64,
) -> Result<(), FailureClass> {
    const CHUNK: usize = 64 * 1024;
    let mut file = std::fs::File::open(path).map_err(|_| FailureClass::Io)?;
    chunk.resize(CHUNK, 0);
    loop {
        let n = match file.read(chunk) {
            Ok(0) => return Ok(()),
            Ok(n) => n,
            Err(e) if e.kind() == ErrorKind::Interrupted => continue,
            Err(_) => return Err(FailureClass::Io),
        };
        stream
            .write_all(&chunk[..n])
            .await
            .map_err(|e| stream_failure(e, IoOp::Sending))?;
        *sent += n as u64;
    }
}

/// Where the complete reply at the start of `buffer` lies (`start..end`), if it is complete by
/// the step's framing alone; a reply that ends with silence or a close is never complete here.
/// A reply longer than `max` is `bad_response`, told as soon as it is known (a length prefix
/// announcing more than `max` before any of it is read).
fn frame(
    reply: &TcpReply,
    buffer: &[u8],
    max: usize,
) -> Result<Option<(usize, usize)>, FailureClass> {
    let end = match reply {
        TcpReply::None => Some(0),
        TcpReply::Bytes(n) => (buffer.len() >= *n).then_some(*n),
        TcpReply::Until(delimiter) => {
            memmem::find(buffer, delimiter).map(|at| at + delimiter.len())
        }
        TcpReply::LengthPrefix(prefix) => {
            let n = prefix.bytes as usize;
            return match prefix.frame_len(buffer) {
                None => Ok(None),
                Some(Err(())) => Err(FailureClass::BadResponse),
                Some(Ok(frame)) if frame - n as u64 > max as u64 => Err(FailureClass::BadResponse),
                Some(Ok(frame)) => {
                    let frame = frame as usize;
                    Ok((buffer.len() >= frame).then_some((n, frame)))
                }
            };
        }
        TcpReply::Idle(_) | TcpReply::UntilClose => None,
    };
    match end {
        Some(end) if end > max => Err(FailureClass::BadResponse),
        end => Ok(end.map(|end| (0, end))),
    }
}

impl Session for TcpSession {
    type Step = TcpStep;

    async fn execute(
        &mut self,
        step: &TcpStep,
        ctx: &RenderContext<'_>,
        start: RequestStart,
    ) -> Exchange {
        let started = start.begin();
        let mut exchange = Exchange::empty();
        // The previous reply is consumed; what followed it stays for this one.
        self.buffer.drain(..self.reply_end);
        (self.reply_start, self.reply_end) = (0, 0);
        self.label.clear();
        self.label.extend_from_slice(&step.label);
        self.out.clear();
        let rendered = match &step.plan.send {
            Some(TcpPayload::Text(template)) => template.render(ctx, &mut self.out),
            Some(TcpPayload::Bytes(bytes)) => {
                self.out.extend_from_slice(bytes);
                Ok(())
            }
            // Streamed while the exchange runs, `out` its chunk buffer.
            Some(TcpPayload::File(_)) | None => Ok(()),
        };
        match rendered {
            Err(unset) => {
                self.unset = Some(unset.slot);
                exchange.record.failure = Some(FailureClass::VariableUnset);
            }
            Ok(()) => {
                let mut closed = false;
                let outcome = tokio::time::timeout(
                    step.timeout,
                    self.exchange(step, &mut exchange, started, &mut closed),
                )
                .await;
                let failure = match outcome {
                    Ok(Ok(())) => None,
                    Ok(Err(class)) => Some(class),
                    Err(_elapsed) if self.connections[step.slot].is_none() => {
                        Some(FailureClass::ConnectTimeout)
                    }
                    Err(_elapsed) => Some(FailureClass::Timeout),
                };
                match failure {
                    None => {
                        exchange.responded = true;
                        if closed {
                            // The reply stays in the buffer for extractors; the next exchange
                            // reconnects (and clears it).
                            self.connections[step.slot] = None;
                        }
                    }
                    Some(class) => {
                        exchange.record.failure = Some(class);
                        self.connections[step.slot] = None;
                        self.buffer.clear();
                    }
                }
            }
        }
        if self.scope == ConnectionScope::PerRequest {
            // Only the connection: the reply stays for this step's extractors and checks, and
            // the buffer is cleared when the next connection opens.
            self.connections[step.slot] = None;
        }
        exchange.finish(started, start.intended);
        exchange
    }

    fn response(&self) -> ResponseView<'_> {
        let end = self.reply_end.min(self.buffer.len());
        let body = &self.buffer[self.reply_start.min(end)..end];
        ResponseView {
            body,
            body_size: body.len() as u64,
            url: &self.label,
            ..ResponseView::default()
        }
    }

    fn take_unset(&mut self) -> Option<usize> {
        self.unset.take()
    }

    /// Opens the VU's stream ahead of the load (an open model's warm-up): see
    /// [`crate::stream::warm_up`].
    async fn warm_up(&mut self, step: &TcpStep) -> Warmed {
        let warmed = crate::stream::warm_up(
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
            (self.reply_start, self.reply_end) = (0, 0);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames() {
        let until = TcpReply::Until(b"\r\n".to_vec());
        assert_eq!(frame(&until, b"PONG\r\nmore", 64), Ok(Some((0, 6))));
        assert_eq!(frame(&until, b"PONG\r", 64), Ok(None));
        assert_eq!(
            frame(&until, b"PONG\r\n", 5),
            Err(FailureClass::BadResponse)
        );
        assert_eq!(frame(&TcpReply::Bytes(4), b"abc", 64), Ok(None));
        assert_eq!(frame(&TcpReply::Bytes(4), b"abcde", 64), Ok(Some((0, 4))));
        assert_eq!(frame(&TcpReply::None, b"", 64), Ok(Some((0, 0))));
        assert_eq!(frame(&TcpReply::UntilClose, b"abc", 64), Ok(None));
    }

    #[test]
    fn length_prefixes() {
        let prefix = |bytes, little_endian, includes_prefix| {
            TcpReply::LengthPrefix(crate::LengthPrefix {
                bytes,
                little_endian,
                includes_prefix,
            })
        };
        let be2 = prefix(2, false, false);
        assert_eq!(frame(&be2, b"\x00", 64), Ok(None));
        assert_eq!(frame(&be2, b"\x00\x03ab", 64), Ok(None));
        assert_eq!(frame(&be2, b"\x00\x03abcNEXT", 64), Ok(Some((2, 5))));
        let le4_incl = prefix(4, true, true);
        assert_eq!(frame(&le4_incl, b"\x06\0\0\0abX", 64), Ok(Some((4, 6))));
        // Shorter than the prefix it counts: malformed.
        assert_eq!(
            frame(&le4_incl, b"\x03\0\0\0", 64),
            Err(FailureClass::BadResponse)
        );
        // Announcing more than max_reply fails at once, before the message is read.
        assert_eq!(
            frame(&be2, b"\x01\x00", 255),
            Err(FailureClass::BadResponse)
        );
        assert_eq!(frame(&be2, b"\x00\xff", 255), Ok(None));
        // An 8-byte prefix announcing u64::MAX neither overflows nor allocates.
        let be8 = prefix(8, false, false);
        assert_eq!(frame(&be8, &[0xff; 8], 64), Err(FailureClass::BadResponse));
        assert_eq!(
            frame(&prefix(1, false, false), b"\x00", 64),
            Ok(Some((1, 1)))
        );
    }
}
