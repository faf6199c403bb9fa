//! Writing a request on a [`Connection`]: the head and a small body in one write, a multipart
//! body or a file in pieces through the reused write buffer, and what the transport takes at
//! once without a future.

use std::io::Read;
use std::task::Poll;

use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt};

use super::{Connection, COALESCE_BODY, FILE_CHUNK};
use crate::encode;
use crate::idle::PendingInput;
use crate::{Error, ErrorKind, Piece, Request, RequestBody};
use onrush_http::IoOp as Op;

impl<S: AsyncRead + AsyncWrite + PendingInput + Unpin> Connection<S> {
    /// Writes the head, and the body if any. Head and a small body go out in one write.
    pub(super) async fn write_request(&mut self, req: &Request<'_>) -> Result<u64, Error> {
        encode::validate(req).map_err(Error::invalid_request)?;
        self.wbuf.clear();
        match req.body {
            RequestBody::Empty => {
                encode::write_head(&mut self.wbuf, req, encode::content_length(req, 0));
                self.write_wbuf().await?;
                Ok(self.wbuf.len() as u64)
            }
            RequestBody::Bytes(body) => {
                encode::write_head(&mut self.wbuf, req, Some(body.len() as u64));
                let head = self.wbuf.len() as u64;
                if body.len() <= COALESCE_BODY {
                    self.wbuf.extend_from_slice(body);
                    self.write_wbuf().await?;
                } else {
                    self.write_wbuf().await?;
                    write_all(&mut self.io, body, &mut self.fresh).await?;
                }
                Ok(head + body.len() as u64)
            }
            RequestBody::File(path) => self.write_file_request(req, path).await,
            RequestBody::Multipart(m) => self.write_multipart_request(req, m).await,
        }
    }

    /// Streams a multipart body: its in-memory segments and files pass through the write
    /// buffer, which is flushed whenever it holds [`FILE_CHUNK`] bytes or more, so it never
    /// grows beyond the head plus twice that. Every file is opened and its size checked
    /// before anything is written: a file that changed since `Multipart::new` would make the
    /// announced Content-Length wrong.
    async fn write_multipart_request(
        &mut self,
        req: &Request<'_>,
        m: &crate::Multipart,
    ) -> Result<u64, Error> {
        let mut files = Vec::new();
        for piece in m.pieces() {
            if let Piece::File { path, len } = piece {
                let err = |e: std::io::Error| {
                    Error::new(
                        ErrorKind::Io,
                        format!("could not read the multipart file {}: {e}", path.display()),
                    )
                };
                let file = std::fs::File::open(path).map_err(err)?;
                let now = file.metadata().map_err(err)?.len();
                if now != len {
                    return Err(Error::new(
                        ErrorKind::Io,
                        format!(
                            "the multipart file {} changed size since the body was built \
                             ({len} bytes then, {now} now): rebuild the Multipart",
                            path.display()
                        ),
                    ));
                }
                files.push(file);
            }
        }
        let mut files = files.into_iter();
        encode::write_head(&mut self.wbuf, req, Some(m.content_length()));
        let mut sent = 0u64;
        for piece in m.pieces() {
            match piece {
                Piece::Bytes(bytes) => {
                    if self.wbuf.len() + bytes.len() > FILE_CHUNK && !self.wbuf.is_empty() {
                        self.write_wbuf().await?;
                        sent += self.wbuf.len() as u64;
                        self.wbuf.clear();
                    }
                    if bytes.len() > FILE_CHUNK {
                        write_all(&mut self.io, bytes, &mut self.fresh).await?;
                        sent += bytes.len() as u64;
                    } else {
                        self.wbuf.extend_from_slice(bytes);
                    }
                }
                Piece::File { len, .. } => {
                    let mut file = files.next().expect("opened above");
                    let mut remaining = len;
                    while remaining > 0 {
                        if self.wbuf.len() >= FILE_CHUNK {
                            self.write_wbuf().await?;
                            sent += self.wbuf.len() as u64;
                            self.wbuf.clear();
                        }
                        let n = remaining.min((FILE_CHUNK - self.wbuf.len()) as u64) as usize;
                        let base = self.wbuf.len();
                        self.wbuf.resize(base + n, 0);
                        file.read_exact(&mut self.wbuf[base..])
                            .map_err(|e| Error::io(e, Op::ReadingFile))?;
                        remaining -= n as u64;
                    }
                }
            }
        }
        if !self.wbuf.is_empty() {
            self.write_wbuf().await?;
            sent += self.wbuf.len() as u64;
            self.wbuf.clear();
        }
        Ok(sent)
    }

    async fn write_file_request(
        &mut self,
        req: &Request<'_>,
        path: &std::path::Path,
    ) -> Result<u64, Error> {
        let open_err = |e: std::io::Error| {
            Error::new(
                ErrorKind::Io,
                format!(
                    "could not read the request body file {}: {e}",
                    path.display()
                ),
            )
        };
        let mut file = std::fs::File::open(path).map_err(open_err)?;
        let len = file.metadata().map_err(open_err)?.len();
        encode::write_head(&mut self.wbuf, req, Some(len));
        let mut sent = 0u64;
        let mut remaining = len;
        // The first piece of the file rides with the head; the buffer never holds more than
        // the head plus FILE_CHUNK bytes.
        loop {
            let n = remaining.min(FILE_CHUNK as u64) as usize;
            let base = self.wbuf.len();
            self.wbuf.resize(base + n, 0);
            file.read_exact(&mut self.wbuf[base..])
                .map_err(|e| Error::io(e, Op::ReadingFile))?;
            remaining -= n as u64;
            self.write_wbuf().await?;
            sent += self.wbuf.len() as u64;
            self.wbuf.clear();
            if remaining == 0 {
                return Ok(sent);
            }
        }
    }

    async fn write_wbuf(&mut self) -> Result<(), Error> {
        write_all(&mut self.io, &self.wbuf, &mut self.fresh).await
    }
}

/// Writes what the transport takes at once of `bytes` ([`PendingInput::write_now`], or
/// [`PendingInput::write_unpolled`] for a connection's first write, `fresh`, cleared here):
/// how many bytes it took (0 when it would wait).
pub(super) fn write_now<S: PendingInput>(
    io: &mut S,
    bytes: &[u8],
    fresh: &mut bool,
) -> Result<usize, Error> {
    let now = if std::mem::take(fresh) {
        io.write_unpolled(bytes)
    } else {
        io.write_now(bytes)
    };
    match now {
        Poll::Ready(Ok(n)) => Ok(n),
        Poll::Ready(Err(e)) => Err(Error::io(e, Op::Sending)),
        Poll::Pending => Ok(0),
    }
}

/// Writes all of `bytes`: at once when the transport takes them ([`write_now`]), else (what it
/// did not take) the usual way, waiting for the socket.
async fn write_all<S: AsyncWrite + PendingInput>(
    io: &mut S,
    bytes: &[u8],
    fresh: &mut bool,
) -> Result<(), Error> {
    let taken = write_now(io, bytes, fresh)?;
    if taken < bytes.len() {
        io.write_all(&bytes[taken..])
            .await
            .map_err(|e| Error::io(e, Op::Sending))?;
    }
    Ok(())
}
