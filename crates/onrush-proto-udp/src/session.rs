//! One virtual user's UDP session: a connected socket per target, the payload rendered into a
//! reused buffer, one datagram sent and (unless the step says `reply: none`) one received.

use std::cell::RefCell;
use std::io::ErrorKind;
use std::net::{Ipv4Addr, Ipv6Addr, SocketAddr};

use onrush_plan::{RenderContext, TcpPayload};
use onrush_protocol::Moment;
use onrush_protocol::{micros, Exchange, FailureClass, RequestStart, ResponseView, Session};
use tokio::io::Interest;
use tokio::net::UdpSocket;

use crate::plan::{UdpPlan, UdpStep};

thread_local! {
    /// Where a datagram lands before it is copied into its session: a datagram must be read
    /// whole into a buffer as large as the largest allowed (else the kernel truncates it), and
    /// one such buffer per worker thread, instead of one per VU, keeps thousands of VUs from
    /// holding 64 KiB each. Borrowed only between a readiness wakeup and the copy (no await).
    static SCRATCH: RefCell<Vec<u8>> = const { RefCell::new(Vec::new()) };
}

/// One VU's UDP sockets and buffers.
pub struct UdpSession {
    /// The socket per target slot, connected to it: only its datagrams are received, and an
    /// ICMP "port unreachable" surfaces as `connect_refused`.
    sockets: Vec<Option<UdpSocket>>,
    /// The payload of the current request.
    out: Vec<u8>,
    /// The last reply datagram.
    reply: Vec<u8>,
    /// `host:port` of the last step, for `url` extractors.
    label: Vec<u8>,
    unset: Option<usize>,
}

impl UdpSession {
    pub fn new(plan: &UdpPlan) -> Self {
        UdpSession {
            sockets: (0..plan.target_count()).map(|_| None).collect(),
            out: Vec::new(),
            reply: Vec::new(),
            label: Vec::new(),
            unset: None,
        }
    }

    /// Sends the datagram and waits for the reply, if any. Errors are failure classes.
    async fn exchange(
        &mut self,
        step: &UdpStep,
        exchange: &mut Exchange,
        started: Moment,
    ) -> Result<(), FailureClass> {
        if self.sockets[step.slot].is_none() {
            let local: SocketAddr = if step.addr.is_ipv4() {
                (Ipv4Addr::UNSPECIFIED, 0).into()
            } else {
                (Ipv6Addr::UNSPECIFIED, 0).into()
            };
            let socket = UdpSocket::bind(local).await.map_err(io_failure)?;
            socket.connect(step.addr).await.map_err(io_failure)?;
            exchange.opened_connection = true;
            self.sockets[step.slot] = Some(socket);
        }
        let socket = self.sockets[step.slot].as_ref().expect("bound above");
        // A reply that came after an earlier request gave up on it (`no_reply`) would be taken
        // for this request's reply: drop whatever is already queued before sending.
        let max = step.plan.max_reply;
        SCRATCH.with_borrow_mut(|scratch| {
            scratch.resize(scratch.len().max(max + 1), 0);
            while socket.try_recv(scratch).is_ok() {}
        });
        socket.send(&self.out).await.map_err(io_failure)?;
        exchange.record.bytes_out += self.out.len() as u64;
        if !step.plan.wait_reply {
            return Ok(());
        }
        let reply = &mut self.reply;
        let received = tokio::time::timeout(step.timeout, async {
            loop {
                // Error interest too: an ICMP "port unreachable" sets the socket's error, which
                // wakes only an error interest, and would otherwise surface as a `no_reply`
                // after the timeout (and as `connect_refused` on the next send).
                let ready = socket.ready(Interest::READABLE | Interest::ERROR).await?;
                if ready.is_error() {
                    if let Some(e) = socket.take_error()? {
                        return Err(e);
                    }
                }
                let got = SCRATCH.with_borrow_mut(|scratch| {
                    scratch.resize(scratch.len().max(max + 1), 0);
                    let n = socket.try_recv(scratch)?;
                    reply.clear();
                    reply.extend_from_slice(&scratch[..n.min(max)]);
                    Ok::<usize, std::io::Error>(n)
                });
                match got {
                    Err(e) if e.kind() == ErrorKind::WouldBlock => continue,
                    other => return other,
                }
            }
        })
        .await;
        let n = match received {
            Err(_elapsed) => return Err(crate::classes::no_reply()),
            Ok(n) => n.map_err(io_failure)?,
        };
        exchange.record.ttfb_us = Some(micros(started.elapsed()));
        exchange.record.bytes_in += n as u64;
        // One byte more than `max_reply` was room for: the datagram is longer than allowed.
        if n > max {
            return Err(FailureClass::BadResponse);
        }
        Ok(())
    }
}

fn io_failure(e: std::io::Error) -> FailureClass {
    match e.kind() {
        // An ICMP "port unreachable" for an earlier datagram: nothing listens there.
        ErrorKind::ConnectionRefused => FailureClass::ConnectRefused,
        ErrorKind::AddrNotAvailable => FailureClass::AddrNotAvailable,
        _ => FailureClass::Io,
    }
}

impl Session for UdpSession {
    type Step = UdpStep;

    async fn execute(
        &mut self,
        step: &UdpStep,
        ctx: &RenderContext<'_>,
        start: RequestStart,
    ) -> Exchange {
        let started = start.begin();
        let mut exchange = Exchange::empty();
        self.reply.clear();
        self.label.clear();
        self.label.extend_from_slice(&step.label);
        self.out.clear();
        let rendered = match &step.plan.send {
            Some(TcpPayload::Text(template)) => template.render(ctx, &mut self.out),
            Some(TcpPayload::Bytes(bytes)) => {
                self.out.extend_from_slice(bytes);
                Ok(())
            }
            // The plan allows no file payload on UDP (a datagram is one message in memory).
            Some(TcpPayload::File(_)) | None => Ok(()),
        };
        match rendered {
            Err(unset) => {
                self.unset = Some(unset.slot);
                exchange.record.failure = Some(FailureClass::VariableUnset);
            }
            Ok(()) => match self.exchange(step, &mut exchange, started).await {
                Ok(()) => exchange.responded = true,
                Err(class) => {
                    exchange.record.failure = Some(class);
                    if class != crate::classes::no_reply() && class != FailureClass::BadResponse {
                        // The socket's state is unknown (an ICMP error is sticky): a new one.
                        self.sockets[step.slot] = None;
                    }
                }
            },
        }
        exchange.finish(started, start.intended);
        exchange
    }

    fn response(&self) -> ResponseView<'_> {
        ResponseView {
            body: &self.reply,
            body_size: self.reply.len() as u64,
            url: &self.label,
            ..ResponseView::default()
        }
    }

    fn take_unset(&mut self) -> Option<usize> {
        self.unset.take()
    }
}
