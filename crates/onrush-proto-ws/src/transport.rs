//! The socket's byte stream under tungstenite: TCP or TLS over TCP, counting the bytes each way
//! (frames and handshake included) for the step's `bytes_in` and `bytes_out`, and buffering
//! what it reads.
//!
//! **Why a read buffer here.** tungstenite 0.30 zero-fills the free part of its own read
//! buffer, up to `read_buffer_size` bytes, before every read (`FrameCodec::read_in` resizes
//! its `BytesMut` with zeros), including the read that only finds the socket empty: with an
//! 8 KiB `read_buffer_size`, 16 KiB of `memset` per echo round trip, 58% of the client's
//! instructions (docs/benchmarks.md, "Protocols against HTTP/1.1 keep-alive"). A small
//! `read_buffer_size` makes that fill small, but then tungstenite asks for at most that many
//! bytes per read: a 1 MiB message would take a thousand `read` system calls. So the socket is
//! read here, into a buffer that is zeroed once when the socket opens, in [`READ_BUFFER`]
//! chunks, and tungstenite takes its small pieces from it with a copy. A read for at least a
//! whole buffer goes to the socket directly.

use std::io;
use std::pin::Pin;
use std::task::{ready, Context, Poll};

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;
use tokio_rustls::client::TlsStream;

/// Bytes read from the socket at a time, allocated when the socket opens (a VU holds one socket
/// among thousands: tungstenite's default, 128 KiB, is for one busy socket). Measured with 1000
/// VUs each holding a socket (connect, 3 s think, echo, close): 98.8 MB maximum RSS with
/// tungstenite's 128 KiB, 31 MB with 8 KiB.
pub(crate) const READ_BUFFER: usize = 8 * 1024;

/// tungstenite's `read_buffer_size`: what it zero-fills before each read, and the most it asks
/// for at a time. Small, as it reads from [`READ_BUFFER`] in memory. A message longer than this
/// still arrives whole: tungstenite grows its buffer to the frame's announced length, up to
/// `max_message`.
pub(crate) const TUNGSTENITE_READ: usize = 1024;

pub(crate) struct Transport {
    io: Io,
    /// Bytes (read, written) since the current step began.
    pub(crate) counted: (u64, u64),
    /// Read from the socket, not yet taken: `buf[start..end]`.
    buf: Box<[u8]>,
    start: usize,
    end: usize,
}

pub(crate) enum Io {
    Plain(TcpStream),
    Tls(Box<TlsStream<TcpStream>>),
}

impl Transport {
    pub(crate) fn new(io: Io) -> Self {
        Transport {
            io,
            counted: (0, 0),
            // Initialised once, so that no read has to zero it again (tokio's `ReadBuf` only
            // hands a reader memory it knows is initialised, or zeroes it first).
            buf: vec![0; READ_BUFFER].into_boxed_slice(),
            start: 0,
            end: 0,
        }
    }
}

impl Io {
    fn poll_read(&mut self, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        match self {
            Io::Plain(s) => Pin::new(s).poll_read(cx, buf),
            Io::Tls(s) => Pin::new(s.as_mut()).poll_read(cx, buf),
        }
    }
}

impl AsyncRead for Transport {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        out: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        if this.start == this.end {
            if out.remaining() >= this.buf.len() {
                // As much as the buffer holds is asked for: no need to copy it through.
                let before = out.filled().len();
                ready!(this.io.poll_read(cx, out))?;
                this.counted.0 += (out.filled().len() - before) as u64;
                return Poll::Ready(Ok(()));
            }
            let mut fill = ReadBuf::new(&mut this.buf);
            ready!(this.io.poll_read(cx, &mut fill))?;
            let n = fill.filled().len();
            this.counted.0 += n as u64;
            (this.start, this.end) = (0, n);
            // n == 0: the end of the stream, told to the reader as a read of nothing.
        }
        let n = out.remaining().min(this.end - this.start);
        out.put_slice(&this.buf[this.start..this.start + n]);
        this.start += n;
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
    /// byte is counted once.
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
        let mut transport = Transport::new(Io::Plain(TcpStream::connect(addr).await.unwrap()));
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
    }
}
