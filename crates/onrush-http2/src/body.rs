//! Request bodies as DATA frames under the peer's flow control: never more in memory than the
//! window the server opened (and one 64 KiB piece of a file).

use std::future::poll_fn;
use std::io::Read;
use std::path::Path;

use bytes::{Bytes, BytesMut};
use h2::SendStream;
use onrush_http::{Error, ErrorKind, Piece, RequestBody};

/// Files are read in pieces of this size.
const FILE_CHUNK: usize = 64 * 1024;

/// Sends the whole of `body` on `stream` and ends the stream.
pub(crate) async fn send(
    stream: &mut SendStream<Bytes>,
    body: RequestBody<'_>,
) -> Result<(), Error> {
    match body {
        RequestBody::Empty => send_data(stream, Bytes::new(), true).await,
        RequestBody::Bytes(b) => send_data(stream, Bytes::copy_from_slice(b), true).await,
        RequestBody::File(path) => {
            send_file(stream, path, None).await?;
            send_data(stream, Bytes::new(), true).await
        }
        RequestBody::Multipart(m) => {
            for piece in m.pieces() {
                match piece {
                    Piece::Bytes(b) => send_data(stream, Bytes::copy_from_slice(b), false).await?,
                    Piece::File { path, len } => send_file(stream, path, Some(len)).await?,
                }
            }
            send_data(stream, Bytes::new(), true).await
        }
    }
}

/// Streams a file; with `expected`, a file whose size changed fails before its first byte.
async fn send_file(
    stream: &mut SendStream<Bytes>,
    path: &Path,
    expected: Option<u64>,
) -> Result<(), Error> {
    let file_error = |e: std::io::Error| {
        Error::protocol(
            ErrorKind::Io,
            format!("could not read the body file {}: {e}", path.display()),
            None,
        )
    };
    let mut file = std::fs::File::open(path).map_err(file_error)?;
    if let Some(len) = expected {
        let now = file.metadata().map_err(file_error)?.len();
        if now != len {
            return Err(Error::protocol(
                ErrorKind::Io,
                format!(
                    "the body file {} changed size since the body was built ({len} bytes then, \
                     {now} now)",
                    path.display()
                ),
                None,
            ));
        }
    }
    loop {
        let mut chunk = BytesMut::zeroed(FILE_CHUNK);
        let n = file.read(&mut chunk).map_err(file_error)?;
        if n == 0 {
            return Ok(());
        }
        chunk.truncate(n);
        send_data(stream, chunk.freeze(), false).await?;
    }
}

/// Sends `data` as the window allows, waiting for capacity rather than buffering ahead.
async fn send_data(
    stream: &mut SendStream<Bytes>,
    mut data: Bytes,
    end: bool,
) -> Result<(), Error> {
    let failed = |e: h2::Error| {
        Error::protocol(
            ErrorKind::Reset,
            format!("the request body could not be sent: {e}"),
            None,
        )
    };
    if data.is_empty() {
        return if end {
            stream.send_data(data, true).map_err(failed)
        } else {
            Ok(())
        };
    }
    while !data.is_empty() {
        stream.reserve_capacity(data.len());
        let granted = match poll_fn(|cx| stream.poll_capacity(cx)).await {
            Some(Ok(n)) => n,
            Some(Err(e)) => return Err(failed(e)),
            None => {
                return Err(Error::protocol(
                    ErrorKind::Reset,
                    "the server closed the stream before the request body was sent",
                    None,
                ))
            }
        };
        if granted == 0 {
            continue;
        }
        let piece = data.split_to(granted.min(data.len()));
        stream
            .send_data(piece, end && data.is_empty())
            .map_err(failed)?;
    }
    Ok(())
}
