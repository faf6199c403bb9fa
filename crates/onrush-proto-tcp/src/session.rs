//! One virtual user's TCP session: a connection per target kept per the connection scope, the
//! payload rendered into a reused buffer, the reply read up to its delimiter or length.

use std::io::ErrorKind;
use std::time::Instant;

use memchr::memmem;
use onrush_plan::{ConnectionScope, RenderContext, TcpPayload, TcpReply};
use onrush_protocol::{micros, Exchange, FailureClass, ResponseView, Session};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use crate::plan::{TcpPlan, TcpStep};

/// One VU's TCP connections and buffers.
pub struct TcpSession {
    scope: ConnectionScope,
    /// The open connection per target slot.
    connections: Vec<Option<TcpStream>>,
    /// The payload of the current request.
    out: Vec<u8>,
    /// The reply being read; bytes past the reply stay here for the next one (TCP is a stream).
    buffer: Vec<u8>,
    /// Length of the last complete reply at the start of `buffer`.
    reply_len: usize,
    /// `host:port` of the last step, for `url` extractors.
    label: Vec<u8>,
    unset: Option<usize>,
}

impl TcpSession {
    /// The session of a VU of scenario `scenario`.
    pub fn new(plan: &TcpPlan, scenario: usize) -> Self {
        TcpSession {
            scope: plan.scopes[scenario],
            connections: (0..plan.target_count()).map(|_| None).collect(),
            out: Vec::new(),
            buffer: Vec::new(),
            reply_len: 0,
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
        started: Instant,
    ) -> Result<(), FailureClass> {
        if self.connections[step.slot].is_none() {
            let stream = TcpStream::connect(step.addr)
                .await
                .map_err(connect_failure)?;
            let _ = stream.set_nodelay(true);
            exchange.record.connect_us = Some(micros(started.elapsed()));
            exchange.opened_connection = true;
            self.connections[step.slot] = Some(stream);
            self.buffer.clear();
        }
        let stream = self.connections[step.slot]
            .as_mut()
            .expect("connected above");
        if !self.out.is_empty() {
            stream.write_all(&self.out).await.map_err(io_failure)?;
            exchange.record.bytes_out += self.out.len() as u64;
        }
        let max = step.plan.max_reply;
        loop {
            if let Some(len) = reply_length(&step.plan.reply, &self.buffer) {
                self.reply_len = len;
                return Ok(());
            }
            if self.buffer.len() >= max {
                return Err(FailureClass::BadResponse);
            }
            // Reads into spare capacity: the buffer stays within about twice `max_reply`.
            self.buffer
                .reserve((max - self.buffer.len()).min(16 * 1024));
            let read = stream
                .read_buf(&mut self.buffer)
                .await
                .map_err(io_failure)?;
            if read == 0 {
                return Err(FailureClass::ClosedEarly);
            }
            if exchange.record.ttfb_us.is_none() {
                exchange.record.ttfb_us = Some(micros(started.elapsed()));
            }
            exchange.record.bytes_in += read as u64;
        }
    }
}

/// The length of the complete reply at the start of `buffer`, if it is complete.
fn reply_length(reply: &TcpReply, buffer: &[u8]) -> Option<usize> {
    match reply {
        TcpReply::None => Some(0),
        TcpReply::Bytes(n) => (buffer.len() >= *n).then_some(*n),
        TcpReply::Until(delimiter) => {
            memmem::find(buffer, delimiter).map(|at| at + delimiter.len())
        }
    }
}

fn connect_failure(e: std::io::Error) -> FailureClass {
    match e.kind() {
        ErrorKind::ConnectionRefused => FailureClass::ConnectRefused,
        ErrorKind::AddrNotAvailable => FailureClass::AddrNotAvailable,
        ErrorKind::TimedOut => FailureClass::ConnectTimeout,
        _ => FailureClass::Io,
    }
}

fn io_failure(e: std::io::Error) -> FailureClass {
    match e.kind() {
        ErrorKind::ConnectionReset | ErrorKind::BrokenPipe => FailureClass::Reset,
        ErrorKind::UnexpectedEof => FailureClass::ClosedEarly,
        _ => FailureClass::Io,
    }
}

impl Session for TcpSession {
    type Step = TcpStep;

    async fn execute(
        &mut self,
        step: &TcpStep,
        ctx: &RenderContext<'_>,
        intended_start: Instant,
    ) -> Exchange {
        let started = Instant::now();
        let mut exchange = Exchange::empty();
        // The previous reply is consumed; what followed it stays for this one.
        self.buffer.drain(..self.reply_len);
        self.reply_len = 0;
        self.label.clear();
        self.label.extend_from_slice(&step.label);
        self.out.clear();
        let rendered = match &step.plan.send {
            Some(TcpPayload::Text(template)) => template.render(ctx, &mut self.out),
            Some(TcpPayload::Bytes(bytes)) => {
                self.out.extend_from_slice(bytes);
                Ok(())
            }
            None => Ok(()),
        };
        match rendered {
            Err(unset) => {
                self.unset = Some(unset.slot);
                exchange.record.failure = Some(FailureClass::VariableUnset);
            }
            Ok(()) => {
                let outcome =
                    tokio::time::timeout(step.timeout, self.exchange(step, &mut exchange, started))
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
                    None => exchange.responded = true,
                    Some(class) => {
                        exchange.record.failure = Some(class);
                        self.connections[step.slot] = None;
                        self.buffer.clear();
                    }
                }
            }
        }
        if self.scope == ConnectionScope::PerRequest {
            self.connections[step.slot] = None;
            self.buffer.clear();
            self.reply_len = 0;
        }
        exchange.finish(started, intended_start);
        exchange
    }

    fn response(&self) -> ResponseView<'_> {
        let body = &self.buffer[..self.reply_len.min(self.buffer.len())];
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

    fn end_iteration(&mut self) {
        if self.scope == ConnectionScope::PerIteration {
            self.connections.iter_mut().for_each(|c| *c = None);
            self.buffer.clear();
            self.reply_len = 0;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reply_lengths() {
        let until = TcpReply::Until(b"\r\n".to_vec());
        assert_eq!(reply_length(&until, b"PONG\r\nmore"), Some(6));
        assert_eq!(reply_length(&until, b"PONG\r"), None);
        assert_eq!(reply_length(&TcpReply::Bytes(4), b"abc"), None);
        assert_eq!(reply_length(&TcpReply::Bytes(4), b"abcde"), Some(4));
        assert_eq!(reply_length(&TcpReply::None, b""), Some(0));
    }
}
