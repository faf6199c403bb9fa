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
use tokio::io::{AsyncRead, Interest, ReadBuf};
use tokio::net::TcpStream;
use tokio_rustls::client::TlsStream;

/// A transport that hands out what is already known to wait on it, without waiting.
pub trait PendingInput: AsyncRead + Unpin {
    /// Whether a write may stay in the transport until a flush (TLS keeps its last record):
    /// false lets a connection skip the flush, a future made and polled per request.
    const BUFFERS_WRITES: bool = true;

    /// Whether a read through `AsyncRead` that returns fewer bytes than it had room for
    /// leaves the transport knowing nothing waits (what [`PendingInput::read_waiting`] then
    /// finds, until tokio's driver looks again): then a caller not suspended since that read
    /// knows what `read_waiting` would say without asking
    /// ([`Connection::not_suspended_since_last_response`](crate::Connection::not_suspended_since_last_response)).
    /// False unless the transport guarantees it.
    const SHORT_READ_DRAINS: bool = false;

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

    /// [`PendingInput::write_now`] for a connection's first write, on a transport whose
    /// readiness tokio's driver may not have reported yet (a socket just connected and
    /// registered): `write_now` would find it unknown and wait for the driver's next turn
    /// although the socket takes the bytes. The default is `write_now`.
    fn write_unpolled(&mut self, buf: &[u8]) -> Poll<io::Result<usize>> {
        self.write_now(buf)
    }
}

impl PendingInput for TcpStream {
    /// A `TcpStream`'s flush does nothing: each write is a `send`.
    const BUFFERS_WRITES: bool = false;

    /// tokio clears a socket's read readiness when a read returns fewer bytes than the buffer
    /// had room for (edge-triggered epoll: the kernel's buffer was emptied, and what arrives
    /// next comes with a new event); `try_read` then returns `WouldBlock` without a system call
    /// until the driver's next look. The test below holds tokio to it.
    const SHORT_READ_DRAINS: bool = true;

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

    /// One `send` when tokio knows the socket writable (the steady state of a kept-alive
    /// connection), through `try_io` as `try_write`, skipping what `AsyncWrite::poll_write`
    /// adds per call (the task's co-operative budget, the waker's registration) and the
    /// `WriteAll` future (~150 user instructions per keep-alive request, callgrind). The
    /// [`send`] is made here.
    #[inline]
    fn write_now(&mut self, buf: &[u8]) -> Poll<io::Result<usize>> {
        match self.try_io(Interest::WRITABLE, || send(&*self, buf)) {
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => Poll::Pending,
            other => Poll::Ready(other),
        }
    }

    /// One `send` on the socket, whatever tokio's readiness says. A new connection's socket
    /// is registered with no readiness until the driver's next turn reports it writable, so
    /// `try_write` would not even try, and the request would leave only after a park, that
    /// turn and a wake-up: on loopback the connect is done when it returns
    /// (`onrush_http::connect_tcp`), and the request can go at once. Sending past tokio is
    /// safe: the readiness it did not see stays as the driver reports it (EAGAIN here, and the
    /// usual write waits for the driver as it would have).
    fn write_unpolled(&mut self, buf: &[u8]) -> Poll<io::Result<usize>> {
        match send(&*self, buf) {
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::WouldBlock | io::ErrorKind::Interrupted
                ) =>
            {
                Poll::Pending
            }
            other => Poll::Ready(other),
        }
    }
}

/// `send(2)` on a connected socket, made inline by rustix rather than through glibc: glibc's
/// `send` is a thread-cancellation point, and the wrapper with the cancellation state it
/// enables and disables around the call cost ~55 user instructions a request against ~10
/// (callgrind: `send`, `__pthread_enable_asynccancel`, `__pthread_disable_asynccancel`;
/// docs/benchmarks.md, session 9). onrush cancels no thread. `MSG_NOSIGNAL`, as std's own
/// socket writes: a peer that has gone is an error, not a SIGPIPE.
///
/// (The reads stay tokio's `poll_read`: it clears the read readiness on a short read, which
/// `try_io` around an inline `recv` can do only by turning the short read into a `WouldBlock`
/// error, whose making, inspection and drop cost what the inline call saved.)
#[inline]
fn send(socket: &TcpStream, buf: &[u8]) -> io::Result<usize> {
    Ok(rustix::net::send(
        socket,
        buf,
        rustix::net::SendFlags::NOSIGNAL,
    )?)
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

    /// A connected loopback pair: the client's side and the server's.
    async fn loopback() -> (TcpStream, TcpStream) {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let client = TcpStream::connect(listener.local_addr().unwrap())
            .await
            .unwrap();
        let (server, _) = listener.accept().await.unwrap();
        (client, server)
    }

    /// A real loopback connection: its close is seen from tokio's readiness once the driver has
    /// reported it, and not before; what waits is still read by `read_waiting`.
    #[tokio::test]
    async fn a_tcp_close_is_seen_from_the_readiness_once_the_driver_reported_it() {
        let (mut client, mut server) = loopback().await;
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

    /// What `SHORT_READ_DRAINS` promises for a `TcpStream`: after a read that returned fewer
    /// bytes than it had room for, bytes that arrive are not seen by `read_waiting` until
    /// tokio's driver has looked again (here: until the task waits), and then they are.
    #[tokio::test]
    async fn after_a_short_read_nothing_is_known_to_wait_until_the_driver_looks() {
        let (mut client, mut server) = loopback().await;
        server.write_all(b"response").await.unwrap();
        let mut buf = [0u8; 64];
        let n = client.read(&mut buf).await.unwrap();
        assert_eq!(&buf[..n], b"response", "a short read: 8 of 64 bytes");

        // Bytes in the kernel's buffer, but no driver turn since the short read: the server
        // writes from another thread while this task keeps the thread.
        let mut server = server.into_std().unwrap();
        server.set_nonblocking(false).unwrap();
        std::thread::spawn(move || {
            use std::io::Write;
            server.write_all(b"late").unwrap();
            std::thread::sleep(std::time::Duration::from_secs(5));
        });
        std::thread::sleep(std::time::Duration::from_millis(100));
        assert!(
            client.read_waiting(&mut buf).is_pending(),
            "tokio cleared the readiness at the short read"
        );

        client.readable().await.unwrap();
        assert!(matches!(client.read_waiting(&mut buf), Poll::Ready(Ok(4))));
        assert_eq!(&buf[..4], b"late");
    }

    /// `write_now`'s inline `send`: the bytes arrive; a peer that has reset the connection is
    /// an error (not a SIGPIPE), and the socket then stays usable for reading the end.
    #[tokio::test]
    async fn write_now_sends_and_reports_a_reset_peer() {
        let (mut client, server) = loopback().await;
        client.writable().await.unwrap();
        assert!(matches!(client.write_now(b"hello"), Poll::Ready(Ok(5))));
        let mut server = server.into_std().unwrap();
        server.set_nonblocking(false).unwrap();
        let mut buf = [0u8; 5];
        std::io::Read::read_exact(&mut server, &mut buf).unwrap();
        assert_eq!(&buf, b"hello");
        // A close with unread bytes resets the connection.
        std::io::Write::write_all(&mut server, b"x").unwrap();
        socket2::SockRef::from(&server)
            .set_linger(Some(std::time::Duration::ZERO))
            .unwrap();
        drop(server);
        let mut error = None;
        for _ in 0..100 {
            match client.write_now(b"more") {
                Poll::Ready(Err(e)) => {
                    error = Some(e);
                    break;
                }
                _ => tokio::time::sleep(std::time::Duration::from_millis(10)).await,
            }
        }
        let e = error.expect("a write to a reset peer fails");
        assert!(
            matches!(
                e.kind(),
                io::ErrorKind::ConnectionReset | io::ErrorKind::BrokenPipe
            ),
            "{e:?}"
        );
    }

    /// A socket just connected: tokio's driver has not reported it writable yet, so
    /// `write_now` does not try, while `write_unpolled` sends at once.
    #[tokio::test]
    async fn a_new_connection_takes_its_first_write_before_the_driver_reports_it() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let mut client = onrush_http::connect_tcp(addr, &onrush_http::ConnectOptions::default())
            .await
            .unwrap();
        let (mut server, _) = listener.accept().unwrap();
        assert!(
            client.write_now(b"x").is_pending(),
            "readiness not known yet"
        );
        assert!(matches!(client.write_unpolled(b"GET"), Poll::Ready(Ok(3))));
        let mut buf = [0u8; 8];
        server
            .set_read_timeout(Some(std::time::Duration::from_secs(5)))
            .unwrap();
        let n = std::io::Read::read(&mut server, &mut buf).unwrap();
        assert_eq!(&buf[..n], b"GET");
    }

    /// The request on a new connection leaves in the send's first poll, not after a turn of
    /// tokio's driver; the response then completes the send as usual.
    #[tokio::test]
    async fn a_new_connections_request_leaves_in_the_first_poll() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let stream = onrush_http::connect_tcp(addr, &onrush_http::ConnectOptions::default())
            .await
            .unwrap();
        let (mut server, _) = listener.accept().unwrap();
        let mut conn = crate::Connection::new(stream);
        let req = crate::Request {
            method: "GET",
            target: b"/",
            host: b"h",
            headers: b"",
            body: crate::RequestBody::Empty,
            close: false,
        };
        let mut sink = crate::Discard;
        let mut send = std::pin::pin!(conn.send(&req, &mut sink));
        let mut cx = Context::from_waker(Waker::noop());
        assert!(send.as_mut().poll(&mut cx).is_pending(), "no response yet");
        server.set_nonblocking(true).unwrap();
        let mut buf = [0u8; 256];
        let n = std::io::Read::read(&mut server, &mut buf).expect("the request is in");
        assert!(
            buf[..n].starts_with(b"GET / HTTP/1.1\r\n"),
            "{:?}",
            &buf[..n]
        );
        std::io::Write::write_all(
            &mut server,
            b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok",
        )
        .unwrap();
        let response = send.await.unwrap();
        assert_eq!(response.status, 200);
    }
}
