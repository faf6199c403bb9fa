//! The socket's byte stream: TCP, or TLS over TCP, counting the bytes each way (frames and
//! handshake included) for the step's `bytes_in` and `bytes_out`.

use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};

use tokio::io::{AsyncRead, AsyncWriteExt, ReadBuf};
use tokio::net::TcpStream;
use tokio_rustls::client::TlsStream;

pub(crate) enum Io {
    Plain(TcpStream),
    Tls(Box<TlsStream<TcpStream>>),
}

pub(crate) struct Transport {
    io: Io,
    /// Bytes (read, written) since the current step began.
    pub(crate) counted: (u64, u64),
}

impl Transport {
    pub(crate) fn new(io: Io) -> Self {
        Transport {
            io,
            counted: (0, 0),
        }
    }

    /// Reads what the socket has into `buf`, counting it.
    pub(crate) fn poll_read(
        &mut self,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let before = buf.filled().len();
        let poll = match &mut self.io {
            Io::Plain(s) => Pin::new(s).poll_read(cx, buf),
            Io::Tls(s) => Pin::new(s.as_mut()).poll_read(cx, buf),
        };
        self.counted.0 += (buf.filled().len() - before) as u64;
        poll
    }

    /// Writes all of `data` and flushes it (TLS holds records until a flush).
    pub(crate) async fn write_all(&mut self, data: &[u8]) -> io::Result<()> {
        match &mut self.io {
            Io::Plain(s) => s.write_all(data).await?,
            Io::Tls(s) => {
                s.write_all(data).await?;
                s.flush().await?;
            }
        }
        self.counted.1 += data.len() as u64;
        Ok(())
    }
}
