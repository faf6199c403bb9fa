//! The socket's byte stream under tungstenite: TCP or TLS over TCP, counting the bytes each way
//! (frames and handshake included) for the step's `bytes_in` and `bytes_out`. Reads go through
//! a read-ahead buffer of [`READ_BUFFER`] bytes that exists only while it holds bytes.
//!
//! **Why a read buffer under tungstenite's.** tungstenite 0.30 zero-fills the free part of its
//! own read buffer, up to `read_buffer_size` bytes, before every read (`FrameCodec::read_in`
//! resizes its `BytesMut` with zeros), including the read that only finds the socket empty:
//! with an 8 KiB `read_buffer_size`, 16 KiB of `memset` per echo round trip, 72% of the
//! worker's instructions (docs/benchmarks.md, "Protocols against HTTP/1.1 keep-alive"). A
//! small `read_buffer_size` makes that fill small, but then tungstenite asks for at most that
//! many bytes per read: a 1 MiB message would take a thousand `read` system calls. So the
//! socket is read [`READ_BUFFER`] bytes at a time, and tungstenite takes its small pieces from
//! that buffer with a copy (a read for at least a whole buffer goes to the socket directly).
//!
//! **Why the buffer comes and goes.** A VU holds its socket for minutes while it waits, and
//! thousands of VUs do: a buffer kept per socket (tokio's `BufReader`, zeroed when the socket
//! opened) was 8 KiB of each idle socket's ~18 KiB (massif, 1,000 idle sockets). The buffer is
//! allocated when a read needs it, filled without zeroing, and freed once tungstenite has taken
//! every byte of it, which for messages smaller than the buffer is after each read: an
//! allocation and a free per socket read (tens of ns, against a system call's µs).

use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;
use tokio_rustls::client::TlsStream;

/// Bytes read from the socket at a time (a VU holds one socket among thousands: tungstenite's
/// default, 128 KiB, is for one busy socket).
pub(crate) const READ_BUFFER: usize = 8 * 1024;

/// tungstenite's `read_buffer_size`: what it zero-fills before each read, and the most it asks
/// for at a time. Small, as it reads from the [`READ_BUFFER`] in memory. A message longer than this
/// still arrives whole: tungstenite grows its buffer to the frame's announced length, up to
/// `max_message`.
pub(crate) const TUNGSTENITE_READ: usize = 1024;

pub(crate) struct Transport {
    io: Io,
    /// Bytes (read, written) since the current step began.
    pub(crate) counted: (u64, u64),
    /// Bytes read from the socket that tungstenite has not taken yet (`ahead[taken..]`); no
    /// allocation while there are none.
    ahead: Vec<u8>,
    taken: usize,
}

pub(crate) enum Io {
    Plain(TcpStream),
    Tls(Box<TlsStream<TcpStream>>),
}

/// The stream tungstenite reads: `io` behind a [`READ_BUFFER`] (writes go straight through).
pub(crate) fn buffered(io: Io) -> Transport {
    Transport {
        io,
        counted: (0, 0),
        ahead: Vec::new(),
        taken: 0,
    }
}

impl Transport {
    /// Reads from the socket into `buf`, counting what arrives.
    fn poll_socket(&mut self, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        let before = buf.filled().len();
        let poll = match &mut self.io {
            Io::Plain(s) => Pin::new(s).poll_read(cx, buf),
            Io::Tls(s) => Pin::new(s.as_mut()).poll_read(cx, buf),
        };
        self.counted.0 += (buf.filled().len() - before) as u64;
        poll
    }
}

impl AsyncRead for Transport {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        out: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        if this.taken == this.ahead.len() {
            // Nothing ahead: a large read goes straight to the socket; a small one fills a
            // fresh buffer (uninitialised: the socket writes what it has, nothing is zeroed).
            if out.remaining() >= READ_BUFFER {
                return this.poll_socket(cx, out);
            }
            let mut ahead = Vec::with_capacity(READ_BUFFER);
            let mut fill = ReadBuf::uninit(&mut ahead.spare_capacity_mut()[..READ_BUFFER]);
            match this.poll_socket(cx, &mut fill) {
                Poll::Ready(Ok(())) => {}
                other => return other,
            }
            let n = fill.filled().len();
            // SAFETY: `fill` covers the first READ_BUFFER bytes of `ahead`'s spare capacity
            // and reports the first `n` of them initialised by the read.
            unsafe { ahead.set_len(n) };
            this.ahead = ahead;
            this.taken = 0;
        }
        let ready = &this.ahead[this.taken..];
        let n = ready.len().min(out.remaining());
        out.put_slice(&ready[..n]);
        this.taken += n;
        if this.taken == this.ahead.len() {
            // All taken: an idle socket holds no buffer.
            this.ahead = Vec::new();
            this.taken = 0;
        }
        Poll::Ready(Ok(()))
    }
}

impl AsyncWrite for Transport {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        data: &[u8],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        let poll = match &mut this.io {
            Io::Plain(s) => Pin::new(s).poll_write(cx, data),
            Io::Tls(s) => Pin::new(s.as_mut()).poll_write(cx, data),
        };
        if let Poll::Ready(Ok(n)) = poll {
            this.counted.1 += n as u64;
        }
        poll
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match &mut self.get_mut().io {
            Io::Plain(s) => Pin::new(s).poll_flush(cx),
            Io::Tls(s) => Pin::new(s.as_mut()).poll_flush(cx),
        }
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match &mut self.get_mut().io {
            Io::Plain(s) => Pin::new(s).poll_shutdown(cx),
            Io::Tls(s) => Pin::new(s.as_mut()).poll_shutdown(cx),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    use tokio::net::TcpListener;

    /// Reads of every size (smaller than the buffer, as tungstenite's; at least the buffer,
    /// straight from the socket) return the bytes in order, none lost or repeated, and every
    /// byte is counted once, when it comes from the socket.
    #[tokio::test]
    async fn reads_of_any_size_see_the_stream_in_order() {
        const LEN: usize = 5 * READ_BUFFER + 123;
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let sent: Vec<u8> = (0..LEN).map(|i| (i % 251) as u8).collect();
        let writer = {
            let sent = sent.clone();
            tokio::spawn(async move {
                let (mut peer, _) = listener.accept().await.unwrap();
                peer.write_all(&sent).await.unwrap();
            })
        };
        let mut transport = buffered(Io::Plain(TcpStream::connect(addr).await.unwrap()));
        let mut got = Vec::new();
        let sizes = [1, TUNGSTENITE_READ, 7, READ_BUFFER, 3 * READ_BUFFER, 100];
        let mut i = 0;
        loop {
            let mut chunk = vec![0; sizes[i % sizes.len()]];
            i += 1;
            let n = transport.read(&mut chunk).await.unwrap();
            if n == 0 {
                break;
            }
            got.extend_from_slice(&chunk[..n]);
        }
        writer.await.unwrap();
        assert_eq!(got.len(), LEN);
        assert!(got == sent, "the bytes read differ from those written");
        assert_eq!(transport.counted.0, LEN as u64);
        assert_eq!(transport.ahead.capacity(), 0, "a drained buffer is freed");
    }
}
