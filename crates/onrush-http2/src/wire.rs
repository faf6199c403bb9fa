//! Wire byte counting beneath HTTP/2: the bytes read and written on the socket (or TLS
//! stream), handed out to responses as they complete.

use std::io;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::Arc;
use std::task::{Context, Poll};

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

/// Counters of one connection. Atomics because the connection's task must be `Send` for
/// `tokio::spawn`; every access is from the worker's own thread, so they are uncontended.
#[derive(Debug, Default)]
pub(crate) struct WireCounters {
    read: AtomicU64,
    written: AtomicU64,
    read_taken: AtomicU64,
    written_taken: AtomicU64,
}

impl WireCounters {
    /// The bytes read and written since the previous call.
    pub(crate) fn take(&self) -> (u64, u64) {
        let read = self.read.load(Relaxed);
        let written = self.written.load(Relaxed);
        let r = read - self.read_taken.swap(read, Relaxed);
        let w = written - self.written_taken.swap(written, Relaxed);
        (r, w)
    }
}

/// A byte stream that counts what passes through it.
pub(crate) struct Counted<T> {
    io: T,
    counters: Arc<WireCounters>,
}

impl<T> Counted<T> {
    pub(crate) fn new(io: T, counters: Arc<WireCounters>) -> Self {
        Counted { io, counters }
    }
}

impl<T: AsyncRead + Unpin> AsyncRead for Counted<T> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let before = buf.filled().len();
        let polled = Pin::new(&mut self.io).poll_read(cx, buf);
        if let Poll::Ready(Ok(())) = polled {
            let n = (buf.filled().len() - before) as u64;
            self.counters.read.fetch_add(n, Relaxed);
        }
        polled
    }
}

impl<T: AsyncWrite + Unpin> AsyncWrite for Counted<T> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let polled = Pin::new(&mut self.io).poll_write(cx, buf);
        if let Poll::Ready(Ok(n)) = polled {
            self.counters.written.fetch_add(n as u64, Relaxed);
        }
        polled
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let polled = Pin::new(&mut self.io).poll_write_vectored(cx, bufs);
        if let Poll::Ready(Ok(n)) = polled {
            self.counters.written.fetch_add(n as u64, Relaxed);
        }
        polled
    }

    fn is_write_vectored(&self) -> bool {
        self.io.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.io).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.io).poll_shutdown(cx)
    }
}
