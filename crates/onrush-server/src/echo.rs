//! TCP echo on the plain port: lines, or length-prefixed messages (a 4-byte big-endian length,
//! then that many bytes), with the behaviours of [`crate::behave`]. Which framing a connection
//! uses is decided by its first byte ([`crate::sniff`]) and holds for the whole connection.
//!
//! Every complete message in what one read brought is answered, and the answers go out in one
//! write: a client that pipelines messages costs one read and one write per batch.

use std::sync::Arc;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use crate::behave::{self, Behaviour};
use crate::stats::{Event, Shared};

/// A line longer than this (its end not found) closes the connection.
pub(crate) const MAX_LINE: usize = 64 * 1024;
/// A length prefix announcing more than this closes the connection.
pub(crate) const MAX_FRAME: usize = 16 * 1024 * 1024;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Framing {
    Lines,
    LengthPrefixed,
}

impl Framing {
    /// The next complete message in `buf`: (payload range, bytes it takes), `Ok(None)` when
    /// incomplete, `Err` for a message over the limit.
    fn next(self, buf: &[u8]) -> Result<Option<(std::ops::Range<usize>, usize)>, ()> {
        match self {
            Framing::Lines => match buf.iter().position(|&b| b == b'\n') {
                Some(end) => {
                    let body = if end > 0 && buf[end - 1] == b'\r' {
                        end - 1
                    } else {
                        end
                    };
                    Ok(Some((0..body, end + 1)))
                }
                None if buf.len() > MAX_LINE => Err(()),
                None => Ok(None),
            },
            Framing::LengthPrefixed => {
                if buf.len() < 4 {
                    return Ok(None);
                }
                let len = u32::from_be_bytes([buf[0], buf[1], buf[2], buf[3]]) as usize;
                if len > MAX_FRAME {
                    return Err(());
                }
                if buf.len() < 4 + len {
                    return Ok(None);
                }
                Ok(Some((4..4 + len, 4 + len)))
            }
        }
    }

    /// Appends `payload` framed to `out`; `eol` is the line end the message came with.
    fn put(self, out: &mut Vec<u8>, payload: &[u8], eol: &[u8]) {
        match self {
            Framing::Lines => {
                out.extend_from_slice(payload);
                out.extend_from_slice(eol);
            }
            Framing::LengthPrefixed => {
                out.extend_from_slice(&(payload.len() as u32).to_be_bytes());
                out.extend_from_slice(payload);
            }
        }
    }
}

/// Serves one echo connection until the client closes it (or a command ends it).
pub(crate) async fn serve(
    mut stream: TcpStream,
    framing: Framing,
    shared: Arc<Shared>,
    shard: usize,
) {
    shared.count(shard, Event::TcpConnection);
    let mut buf: Vec<u8> = Vec::with_capacity(8192);
    let mut out: Vec<u8> = Vec::with_capacity(8192);
    let mut filled = 0;
    loop {
        if !read_more(&mut stream, &mut buf, &mut filled).await {
            return;
        }
        let mut start = 0;
        loop {
            let (range, used) = match framing.next(&buf[start..filled]) {
                Ok(Some(m)) => m,
                Ok(None) => break,
                // Over the limit: nothing sensible to answer on a stream we cannot resync.
                Err(()) => return,
            };
            let msg = &buf[start + range.start..start + range.end];
            let eol = &buf[start + range.end..start + used];
            start += used;
            shared.count(shard, Event::TcpMessage);
            match behave::parse(msg) {
                Behaviour::Echo(m) => framing.put(&mut out, m, eol),
                Behaviour::Error(e) => framing.put(&mut out, e.as_bytes(), b"\n"),
                Behaviour::Stream(n, m) => {
                    for _ in 0..n {
                        framing.put(&mut out, m, eol);
                    }
                }
                Behaviour::Delay(d, m) => {
                    // What came before is answered before the pause.
                    if !flush(&mut stream, &mut out).await {
                        return;
                    }
                    tokio::time::sleep(d).await;
                    framing.put(&mut out, m, eol);
                }
                Behaviour::Close(..) => {
                    let _ = flush(&mut stream, &mut out).await;
                    return;
                }
                Behaviour::Stall => {
                    let _ = flush(&mut stream, &mut out).await;
                    // Read and drop until the client gives up: the connection stays open and
                    // silent, as a hung server's would.
                    let mut sink = [0u8; 4096];
                    while matches!(stream.read(&mut sink).await, Ok(n) if n > 0) {}
                    return;
                }
            }
        }
        if !flush(&mut stream, &mut out).await {
            return;
        }
        buf.copy_within(start..filled, 0);
        filled -= start;
    }
}

/// Reads what the client sent next into `buf[filled..]`, growing `buf` so that at least 4 KiB
/// are free (a message longer than the buffer is read into a bigger one); false when the client
/// closed or the read failed. Shared by the echo and Thrift servers.
pub(crate) async fn read_more(
    stream: &mut TcpStream,
    buf: &mut Vec<u8>,
    filled: &mut usize,
) -> bool {
    if buf.len() < *filled + 4096 {
        buf.resize(*filled + 8192, 0);
    }
    match stream.read(&mut buf[*filled..]).await {
        Ok(0) | Err(_) => false,
        Ok(n) => {
            *filled += n;
            true
        }
    }
}

/// Writes what was answered and empties `out`; false when the client is gone.
pub(crate) async fn flush(stream: &mut TcpStream, out: &mut Vec<u8>) -> bool {
    if out.is_empty() {
        return true;
    }
    let ok = stream.write_all(out).await.is_ok();
    out.clear();
    ok
}
