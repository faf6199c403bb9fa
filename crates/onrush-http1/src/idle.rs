//! Has the server sent something while no request was outstanding?
//!
//! HTTP/1.1 has no request ids: a response is the answer to the oldest request waiting. Bytes a
//! server sends unasked (a second response to one request, data on an idle keep-alive
//! connection) would therefore be read as the answer to the *next* request, and every answer
//! after it would be shifted by one. Before each request
//! [`Connection::send`](crate::Connection::send) takes whatever is known to wait on the
//! connection, and refuses to send on one that has some.
//!
//! "Known" is what tokio's driver has seen: asking the kernel (`recv(MSG_PEEK | MSG_DONTWAIT)`,
//! `FIONREAD`, `poll`) costs a system call per request, measured at ~450 ns of CPU on the
//! benchmark machine, about a tenth of a whole keep-alive request, so it is not done. What
//! arrives after the last read and before the driver's next look (microseconds, when a VU runs
//! its requests back to back) is not seen here; it is caught when it comes with the next
//! response (bytes beyond a response are refused too), see docs/results.md.

use std::future::Future;
use std::io;
use std::pin::Pin;
use std::task::{Context, Poll, Waker};

use onrush_http::Throttled;
use tokio::io::{AsyncRead, ReadBuf};
use tokio::net::TcpStream;
use tokio_rustls::client::TlsStream;

/// A transport that hands out what is already known to wait on it, without waiting.
pub trait PendingInput: AsyncRead + Unpin {
    /// Reads into `buf` what waits, without waiting and without arranging a wake-up:
    /// `Pending` when nothing is known to wait, `Ready(Ok(0))` when the peer has closed.
    ///
    /// The default polls the stream once with a waker that does nothing: the next real read
    /// registers its own.
    fn read_waiting(&mut self, buf: &mut [u8]) -> Poll<io::Result<usize>> {
        let mut cx = Context::from_waker(Waker::noop());
        let mut buf = ReadBuf::new(buf);
        match Pin::new(self).poll_read(&mut cx, &mut buf) {
            Poll::Ready(Ok(())) => Poll::Ready(Ok(buf.filled().len())),
            Poll::Ready(Err(e)) => Poll::Ready(Err(e)),
            Poll::Pending => Poll::Pending,
        }
    }

    /// Whether the peer's close is already known, without a system call: tokio's driver saw
    /// the connection's read side closed (EPOLLRDHUP: the FIN came in with, or before, the
    /// last readiness event). `false` when it is not known, or the transport cannot tell: the
    /// caller then reads, as [`PendingInput::read_waiting`] does.
    fn close_seen(&mut self) -> bool {
        false
    }

    /// The write side's counterpart (here because every transport beneath a connection
    /// implements this trait): writes what the transport takes at once, without waiting and
    /// without arranging a wake-up; `Pending` when nothing was written and the caller must
    /// write the usual way (`AsyncWrite`, which waits).
    ///
    /// The default is always `Pending`: the usual way, for transports that buffer or pace
    /// their writes (TLS, the bandwidth cap).
    fn write_now(&mut self, buf: &[u8]) -> Poll<io::Result<usize>> {
        let _ = buf;
        Poll::Pending
    }
}

impl PendingInput for TcpStream {
    /// `try_read`: an atomic load of tokio's readiness when nothing is known to wait (the
    /// steady state: the read that ended the response drained the socket and cleared it).
    #[inline]
    fn read_waiting(&mut self, buf: &mut [u8]) -> Poll<io::Result<usize>> {
        match self.try_read(buf) {
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => Poll::Pending,
            other => Poll::Ready(other),
        }
    }

    /// Polls tokio's readiness once with a waker that does nothing: a load of the socket's
    /// readiness word, no system call (the `recvfrom` that would return 0 costs one per
    /// connection).
    fn close_seen(&mut self) -> bool {
        let mut cx = Context::from_waker(Waker::noop());
        let ready = std::pin::pin!(self.ready(tokio::io::Interest::READABLE));
        matches!(ready.poll(&mut cx), Poll::Ready(Ok(r)) if r.is_read_closed())
    }

    /// `try_write`: one `send` when tokio knows the socket writable (the steady state of a
    /// kept-alive connection), skipping what `AsyncWrite::poll_write` adds per call (the
    /// task's co-operative budget, the waker's registration) and the `WriteAll` future
    /// (~150 user instructions per keep-alive request, callgrind).
    #[inline]
    fn write_now(&mut self, buf: &[u8]) -> Poll<io::Result<usize>> {
        match self.try_write(buf) {
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => Poll::Pending,
            other => Poll::Ready(other),
        }
    }
}

/// Through the cap (when its budget is spent, waiting bytes are seen at a later request).
impl<S: AsyncRead + Unpin> PendingInput for Throttled<S> {}

/// Through TLS: a record that carries no data (a session ticket) is consumed and yields
/// `Pending`; decrypted data rustls still holds counts as waiting.
impl<S: AsyncRead + tokio::io::AsyncWrite + Unpin> PendingInput for TlsStream<S> {}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    /// A real loopback connection: its close is seen from tokio's readiness once the driver has
    /// reported it, and not before; what waits is still read by `read_waiting`.
    #[tokio::test]
    async fn a_tcp_close_is_seen_from_the_readiness_once_the_driver_reported_it() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let mut client = TcpStream::connect(listener.local_addr().unwrap())
            .await
            .unwrap();
        let (mut server, _) = listener.accept().await.unwrap();
        assert!(!client.close_seen(), "open, nothing in");

        server.write_all(b"response").await.unwrap();
        let mut buf = [0u8; 64];
        let n = client.read(&mut buf).await.unwrap();
        assert_eq!(&buf[..n], b"response");
        assert!(!client.close_seen(), "data, but no FIN");

        drop(server);
        // The FIN is in the kernel at once on loopback; tokio knows once its driver has looked.
        client.readable().await.unwrap();
        assert!(client.close_seen(), "the FIN, reported by the driver");
        // Seeing it consumed nothing: the read still returns the end of the stream.
        assert!(matches!(client.read_waiting(&mut buf), Poll::Ready(Ok(0))));
    }
}
