//! An in-memory server side for the connection targets: it answers with the fuzz input, cut
//! into pieces of sizes drawn from a seed (partial reads are where framing code breaks), then
//! closes. Reads before the client's first write wait, as a real server's answer would.
//!
//! HTTP/2 needs more: a server's frames answer what the client sent, so the caller hands out
//! the pieces one at a time ([`Control::grant`], once per poll: the client has its turn
//! between two pieces), and once everything was read the server stays silent until the caller
//! closes it ([`Control::close`]): the client may still be sending.

use std::cell::RefCell;
use std::collections::VecDeque;
use std::io;
use std::pin::Pin;
use std::rc::Rc;
use std::task::{Context, Poll, Waker};

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

use crate::mutate::Rng;

pub(crate) struct Mock {
    pieces: VecDeque<Vec<u8>>,
    /// Reads wait for the first write.
    wait_for_write: bool,
    written: u64,
    reader: Option<Waker>,
    /// When set: pieces are handed out as the caller grants them, and drained, the mock is
    /// silent until `Control::close`.
    control: Option<Rc<RefCell<Control>>>,
}

/// The caller's side of a mock that stays open.
#[derive(Default)]
pub(crate) struct Control {
    pub drained: bool,
    closed: bool,
    /// Pieces that may be read before the next grant.
    granted: usize,
    reader: Option<Waker>,
}

impl Control {
    /// One more piece may be read.
    pub(crate) fn grant(&mut self) {
        self.granted = 1;
        if let Some(w) = self.reader.take() {
            w.wake();
        }
    }

    /// The server closes the connection: the next read is the end.
    pub(crate) fn close(&mut self) {
        self.closed = true;
        if let Some(w) = self.reader.take() {
            w.wake();
        }
    }
}

impl Mock {
    /// A mock for HTTP/2: `pieces` each on their own read, as granted; silent when drained
    /// until `Control::close`.
    pub(crate) fn frames(pieces: VecDeque<Vec<u8>>) -> (Mock, Rc<RefCell<Control>>) {
        let control = Rc::new(RefCell::new(Control::default()));
        let mock = Mock {
            pieces,
            wait_for_write: false,
            written: 0,
            reader: None,
            control: Some(control.clone()),
        };
        (mock, control)
    }

    /// `data` in pieces of 1..=`max_piece` bytes (all of it at once when `max_piece` is 0).
    pub(crate) fn new(data: &[u8], seed: u64, max_piece: usize, wait_for_write: bool) -> Mock {
        let mut pieces = VecDeque::new();
        let mut rng = Rng::new(seed);
        let mut rest = data;
        while !rest.is_empty() {
            let n = if max_piece == 0 {
                rest.len()
            } else {
                (1 + rng.below(max_piece)).min(rest.len())
            };
            pieces.push_back(rest[..n].to_vec());
            rest = &rest[n..];
        }
        Mock {
            pieces,
            wait_for_write,
            written: 0,
            reader: None,
            control: None,
        }
    }
}

impl AsyncRead for Mock {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        if this.wait_for_write && this.written == 0 {
            this.reader = Some(cx.waker().clone());
            return Poll::Pending;
        }
        if let Some(control) = &this.control {
            let mut c = control.borrow_mut();
            c.drained = this.pieces.is_empty();
            let silent = if c.drained { !c.closed } else { c.granted == 0 };
            if silent {
                c.reader = Some(cx.waker().clone());
                return Poll::Pending;
            }
            c.granted = c.granted.saturating_sub(1);
        }
        if let Some(piece) = this.pieces.front_mut() {
            let n = piece.len().min(buf.remaining());
            buf.put_slice(&piece[..n]);
            piece.drain(..n);
            if piece.is_empty() {
                this.pieces.pop_front();
            }
        }
        Poll::Ready(Ok(()))
    }
}

impl AsyncWrite for Mock {
    fn poll_write(self: Pin<&mut Self>, _: &mut Context<'_>, b: &[u8]) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        this.written += b.len() as u64;
        if let Some(w) = this.reader.take() {
            w.wake();
        }
        Poll::Ready(Ok(b.len()))
    }

    fn poll_flush(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }

    fn poll_shutdown(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }
}

/// A sink that keeps what a property needs: the status, the body length and a hash of it, and
/// how often `end` was called.
#[derive(Debug, Default)]
pub(crate) struct Seen {
    pub status: u16,
    pub heads: u32,
    pub body_len: u64,
    pub body_hash: u64,
    pub ends: u32,
}

impl onrush_http::BodySink for Seen {
    fn data(&mut self, chunk: &[u8]) {
        assert!(!chunk.is_empty(), "BodySink::data with an empty slice");
        self.body_len += chunk.len() as u64;
        for b in chunk {
            self.body_hash = (self.body_hash ^ u64::from(*b)).wrapping_mul(0x100_0000_01b3);
        }
    }

    fn head(&mut self, status: u16, headers: &onrush_http::Headers<'_>) {
        self.status = status;
        self.heads += 1;
        for (name, value) in headers.iter() {
            let _ = (name.len(), value.len());
        }
    }

    fn end(&mut self) {
        self.ends += 1;
    }
}
