//! The connection: buffers, the send/receive loop (writing a request: conn_write.rs), and mapping
//! I/O failures to [`ErrorKind`]s.
//!
//! Generic over the byte stream (`AsyncRead + AsyncWrite + Unpin`) so that TLS and the
//! bandwidth cap (onrush-http's transports) run beneath it; `TcpStream` is the default and
//! what [`connect`] returns.

use std::future::Future;
use std::net::SocketAddr;
use std::task::Poll;

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::TcpStream;

use crate::decode::Decoder;
use crate::idle::PendingInput;
use crate::{connect_tcp, ConnectOptions, PreparedRequest};
use crate::{BodySink, Error, ErrorKind, Request, Response, MAX_HEAD_BYTES};
use onrush_http::{refuse_throttle, IoOp as Op, Moment};

/// Read buffer size at first: a small response (a head of a few hundred bytes and a small body)
/// arrives in one read. 1 KiB, not more, because a run may hold tens of thousands of
/// connections and an idle one costs its buffer (issue 17: 16 KiB here was most of an idle VU;
/// 2 KiB left an idle VU at 6.7 KiB, over the 6 KiB goal); a connection whose reads fill the
/// buffer grows it (see below), once, and keeps the size: one more read per connection.
const READ_BUF: usize = 1024;

/// When a read fills the whole buffer, the server is sending more than we drain at a time:
/// the buffer grows fourfold, 1 KiB → 4 KiB → 16 KiB → 64 KiB, so a bulk body costs a quarter
/// of the read syscalls per step. Only connections that really download in bulk pay for
/// 64 KiB, and each growth happens once per connection (one extra read and copy).
const BULK_READ_BUF: usize = 64 * 1024;

/// File bodies are read and sent in pieces of this size, through the reused write buffer.
const FILE_CHUNK: usize = 64 * 1024;

/// In-memory bodies up to this size are copied behind the head so that head and body leave in
/// one write syscall; larger ones are written from the caller's slice, after the head.
pub(crate) const COALESCE_BODY: usize = 16 * 1024;

/// Opens a TCP connection to `addr`. The caller wraps it in a timeout and measures connect time.
///
/// Errors: [`ErrorKind::ConnectRefused`]; [`ErrorKind::AddrNotAvailable`] when this machine is
/// out of local ports (EADDRNOTAVAIL from connect, EADDRINUSE or EADDRNOTAVAIL from binding
/// `opts.local_addr`; the message says which, and names the source address) or
/// `opts.local_addr` is not an address of this host; else [`ErrorKind::ConnectOther`].
pub async fn connect(addr: SocketAddr, opts: &ConnectOptions) -> Result<Connection, Error> {
    refuse_throttle(opts, "connect_throttled")?;
    connect_tcp(addr, opts).await.map(Connection::new)
}

/// A connection's read and write buffers, without the connection: what a VU that opens a
/// connection per request hands from one connection to the next ([`Connection::with_buffers`],
/// [`Connection::into_buffers`]), so that a new connection allocates (and zeroes) no buffer.
///
/// Only storage passes on: a connection reads into its buffer from offset 0 and reads back only
/// bytes it received, so what a previous connection left in it is never seen.
#[derive(Debug)]
pub struct Buffers {
    rbuf: Box<[u8]>,
    wbuf: Vec<u8>,
}

impl Default for Buffers {
    /// A new connection's: [`READ_BUF`] bytes to read into, 256 to write from.
    fn default() -> Self {
        Buffers {
            rbuf: vec![0; READ_BUF].into_boxed_slice(),
            // Grows to the connection's largest request once, then is reused; most request
            // heads are a few hundred bytes.
            wbuf: Vec::with_capacity(256),
        }
    }
}

/// One HTTP/1.1 client connection, carrying requests one after the other (no pipelining).
///
/// Owns one read buffer and one write buffer, both reused for every request, so that a request
/// on a kept-alive connection allocates nothing.
#[derive(Debug)]
pub struct Connection<S = TcpStream> {
    io: S,
    /// Read buffer; `rbuf[start..end]` holds received bytes not yet consumed (a partial head).
    /// Between requests it is empty: bytes beyond a response are refused, never kept for the
    /// next request. Nothing beyond `end` is ever read back, so it may hold a previous
    /// connection's bytes ([`Buffers`]).
    rbuf: Box<[u8]>,
    start: usize,
    end: usize,
    wbuf: Vec<u8>,
    requests: u64,
    /// False once a response said the connection won't carry another, after any error, and
    /// while a send is in progress (so a send cancelled by a timeout poisons the connection).
    reusable: bool,
    /// Nothing written yet: the first write goes to the transport at once
    /// ([`PendingInput::write_unpolled`]), before tokio's driver has reported the new socket
    /// writable.
    fresh: bool,
    /// Look for bytes waiting before the first request too ([`Connection::check_idle`]), not
    /// only before later ones: false for a connection opened for its first request
    /// ([`Connection::for_request`]).
    check_first: bool,
    /// The last response ended with a read that left the transport knowing nothing waits
    /// ([`PendingInput::SHORT_READ_DRAINS`]).
    drained: bool,
    /// The next send skips the idle check: its caller says it was not suspended since the last
    /// response, which ended drained ([`Connection::not_suspended_since_last_response`]).
    skip_idle_check: bool,
}

impl<S: AsyncRead + AsyncWrite + PendingInput + Unpin> Connection<S> {
    /// Wraps an established byte stream (a TcpStream, later a TLS stream).
    pub fn new(io: S) -> Self {
        Connection::with_buffers(io, Buffers::default())
    }

    /// Wraps an established byte stream, reading and writing through `buffers` (those of a
    /// connection that is done, or new ones): their sizes carry over, their bytes do not.
    pub fn with_buffers(io: S, buffers: Buffers) -> Self {
        let Buffers { rbuf, mut wbuf } = buffers;
        wbuf.clear();
        Connection {
            io,
            rbuf,
            start: 0,
            end: 0,
            wbuf,
            requests: 0,
            reusable: true,
            fresh: true,
            check_first: true,
            drained: false,
            skip_idle_check: false,
        }
    }

    /// [`Connection::with_buffers`] for a connection opened for the request about to be sent
    /// on it (any plain connect the session makes for a request): that request is sent
    /// without first looking for bytes waiting ([`Connection::send`]'s check for unsolicited
    /// bytes applies from the second request on). Just connected, nothing can be known to wait (tokio's driver has
    /// not reported the socket yet: the look cost ~90 instructions per connection and found
    /// nothing), and bytes a server sends as it accepts (an immediate 503) answer this
    /// connection's request: they are its response, not bytes nobody asked for. A connection
    /// opened ahead of its first request (a warm-up's) is made with [`Connection::new`] and
    /// looked at before it.
    pub fn for_request(io: S, buffers: Buffers) -> Self {
        Connection {
            check_first: false,
            ..Connection::with_buffers(io, buffers)
        }
    }

    /// Drops the stream (closing it) and keeps the buffers, for the next connection.
    pub fn into_buffers(self) -> Buffers {
        Buffers {
            rbuf: self.rbuf,
            wbuf: self.wbuf,
        }
    }

    /// Requests started on this connection: a value above zero before a send means the
    /// connection is being reused.
    pub fn requests_sent(&self) -> u64 {
        self.requests
    }

    /// Whether another request may be sent: the last response kept the connection alive and
    /// no error or cancelled send happened.
    pub fn is_reusable(&self) -> bool {
        self.reusable
    }

    /// Tells the connection that its caller has not been suspended (no `Pending`) since the
    /// last response on it ended: tokio's driver, which only looks for I/O between polls, has
    /// not looked since, so what tokio knows to wait on the socket is what it knew then. If
    /// that response's last read drained the transport ([`PendingInput::SHORT_READ_DRAINS`]),
    /// the next send's idle check would find nothing without asking, and is skipped (~60
    /// user instructions a keep-alive request, callgrind: the `try_read` that returns
    /// `WouldBlock`, its error's kind and drop).
    ///
    /// The one thing tokio may still know then: the server's close (EPOLLRDHUP) reported with
    /// the response's last bytes, by a server that closes without saying so. The request is
    /// then sent and the close comes back as its end of stream or reset, the same as a close
    /// that arrives just after the idle check: a stale reuse, which the caller retries on a
    /// new connection ([`Error::is_stale_reuse`]).
    pub fn not_suspended_since_last_response(&mut self) {
        self.skip_idle_check = self.drained;
    }

    /// The underlying stream.
    pub fn get_ref(&self) -> &S {
        &self.io
    }

    /// After a response that ended the connection (we sent `Connection: close`, or the server
    /// said it): waits for the server to close its side, reading and discarding anything it
    /// still sends (a TLS close_notify), so that the server, which closed first, is the side
    /// that keeps the TIME_WAIT. Returns at the end of the stream, or with the read's error (a
    /// reset). The caller bounds the wait: a server may ignore `Connection: close`.
    pub async fn closed_by_server(&mut self) -> std::io::Result<()> {
        self.reusable = false;
        loop {
            if self.io.read(&mut self.rbuf).await? == 0 {
                return Ok(());
            }
        }
    }

    /// [`Connection::closed_by_server`] without waiting: reads and discards what is known to
    /// wait (see [`PendingInput`]), and says whether the server's close (end of stream, or a
    /// reset) was among it. Usually its FIN is in by the time the response has been read, and
    /// then this is the one `read` that returns 0, with no timer and no future to set up for
    /// the wait; `false` means the wait is still to be done.
    pub fn server_closed_yet(&mut self) -> bool {
        self.reusable = false;
        // The FIN came with the response's readiness event: nothing to read for it. (Bytes a
        // server sent after its response and before its FIN would then be left unread, and the
        // close would reset rather than end the connection; the server has closed already.)
        if self.io.close_seen() {
            return true;
        }
        loop {
            match self.io.read_waiting(&mut self.rbuf) {
                Poll::Pending => return false,
                Poll::Ready(Ok(0) | Err(_)) => return true,
                Poll::Ready(Ok(_)) => continue,
            }
        }
    }

    /// Sends `req`, reads the response head (skipping interim 1xx responses), and passes the
    /// body to `sink` until its end. The connection is then ready for the next request if the
    /// response says `keep_alive`; otherwise, or after an error, drop it.
    ///
    /// Bytes nobody asked for fail with [`ErrorKind::Unsolicited`] and leave the connection
    /// unusable: bytes found waiting before the request is sent (the request is then not
    /// sent), or bytes beyond the end of the response. Blank lines between responses, which
    /// some servers send, are skipped; a `408` on an idle connection followed by its close is
    /// the server closing an idle connection, reported like a close ([`Error::is_stale_reuse`]).
    ///
    /// A `RequestBody::File` is read from disk in 64 KiB pieces through the reused write
    /// buffer, so memory does not grow with the file. Those reads are blocking `std::fs` reads
    /// on the worker thread, on purpose: `tokio::fs` would hand every 64 KiB read to the
    /// blocking thread pool and back (two thread switches each), costing more CPU than the read
    /// itself when the file sits in the page cache, as a repeatedly uploaded payload does.
    pub fn send<'a, 'r, K: BodySink>(
        &'a mut self,
        req: &'a Request<'r>,
        sink: &'a mut K,
    ) -> impl Future<Output = Result<Response, Error>> + use<'a, 'r, S, K> {
        // Not an `async fn` awaiting `send_outgoing`: a layer less to enter and leave on every
        // request (as `send_prepared`).
        self.send_outgoing(Outgoing::Encode(req), sink)
    }

    /// [`Connection::send`] for a request encoded ahead: its bytes are written as they are,
    /// with no validation or encoding per request. Everything else is `send`'s.
    pub fn send_prepared<'a, K: BodySink>(
        &'a mut self,
        req: &'a PreparedRequest,
        sink: &'a mut K,
    ) -> impl Future<Output = Result<Response, Error>> + use<'a, S, K> {
        self.send_outgoing(Outgoing::Encoded(req), sink)
    }

    /// The whole exchange in one function: the idle check, the write, the read loop and the
    /// response. It was five nested `async fn`s (`send_outgoing`, `exchange`, `write_all`,
    /// `read_response`, and `send`'s own), each entered, resumed and left on every request and
    /// moving its result out: ~200 of this crate's ~400 instructions per keep-alive request
    /// were that plumbing (callgrind, docs/benchmarks.md).
    async fn send_outgoing<K: BodySink>(
        &mut self,
        req: Outgoing<'_, '_>,
        sink: &mut K,
    ) -> Result<Response, Error> {
        if !self.reusable {
            return Err(Error::new(
                ErrorKind::Io,
                "this connection can't carry another request (closed by the server, or an \
                 earlier request failed or was cancelled)",
            ));
        }
        let reused = self.requests > 0;
        self.reusable = false;
        self.requests += 1;
        let skip_idle_check = std::mem::take(&mut self.skip_idle_check);
        self.drained = false;
        // A reused connection that fails before any byte of the response, by a reset or a
        // close, was given up by the server while idle: the caller may retry it once.
        let stale = |e: Error| {
            if reused && matches!(e.kind(), ErrorKind::Reset | ErrorKind::ClosedEarly) {
                e.into_stale()
            } else {
                e
            }
        };
        if (reused || self.check_first) && !skip_idle_check {
            self.check_idle().map_err(stale)?;
        }
        let (bytes_out, head, close) = match req {
            Outgoing::Encode(req) => (
                self.write_request(req).await.map_err(stale)?,
                req.method == "HEAD",
                req.close,
            ),
            Outgoing::Encoded(p) => {
                let bytes = p.bytes();
                // At once when the socket takes it (a keep-alive request nearly always): the
                // write future is made only for what it did not take.
                let taken = write_now(&mut self.io, bytes, &mut self.fresh).map_err(stale)?;
                if taken < bytes.len() {
                    self.io
                        .write_all(&bytes[taken..])
                        .await
                        .map_err(|e| stale(Error::io(e, Op::Sending)))?;
                }
                (bytes.len() as u64, p.head, p.close)
            }
        };
        if S::BUFFERS_WRITES {
            // A TLS transport needs it to push its last record out.
            self.io
                .flush()
                .await
                .map_err(|e| stale(Error::io(e, Op::Sending)))?;
        }
        let mut dec = Decoder::new(head, close);
        let mut first_byte_at = None;
        // Whether a read after the first one returned bytes: then the response's end is timed
        // by a clock read of its own, else it is the first byte's.
        let mut more_reads = false;
        // Whether the last read drained the transport (see `drained`).
        let mut drained = false;
        // Reads until the decoder says the response is complete. Body bytes are consumed as
        // they arrive, so the buffer empties after every read in the body phase and each read
        // starts at offset 0; only a partial head is kept (moved to the front) while waiting
        // for the rest.
        loop {
            if self.start < self.end {
                let (n, done) = dec.feed(&self.rbuf[self.start..self.end], sink)?;
                self.start += n;
                if done {
                    let rest = &self.rbuf[self.start..self.end];
                    self.start = 0;
                    self.end = 0;
                    if !is_blank(rest) {
                        return Err(Error::unsolicited(
                            "the server sent more bytes after the end of the response (a \
                             second response to one request, or a body its framing did not \
                             announce): they answer no request, so the connection was dropped",
                        ));
                    }
                    self.drained = drained;
                    break;
                }
            }
            if self.start == self.end {
                self.start = 0;
                self.end = 0;
            } else if self.start > 0 {
                // A partial head: move it to the front so the rest can follow it.
                self.rbuf.copy_within(self.start..self.end, 0);
                self.end -= self.start;
                self.start = 0;
            }
            if self.end == self.rbuf.len() {
                // A head larger than the buffer: grow fourfold, up to the head limit. (At the
                // limit, the decoder has already reported the head as too large.)
                debug_assert!(self.rbuf.len() < MAX_HEAD_BYTES);
                let mut bigger =
                    vec![0; (self.rbuf.len() * 4).min(MAX_HEAD_BYTES)].into_boxed_slice();
                bigger[..self.end].copy_from_slice(&self.rbuf[..self.end]);
                self.rbuf = bigger;
            }
            let space = self.rbuf.len() - self.end;
            let n = match self.io.read(&mut self.rbuf[self.end..]).await {
                Ok(n) => n,
                Err(e) => {
                    let e = Error::io(e, Op::Reading);
                    return Err(if first_byte_at.is_none() { stale(e) } else { e });
                }
            };
            if n == 0 {
                let at_end = dec.eof(self.end - self.start, sink);
                match at_end {
                    // The end of a body delimited by the close is known at the close.
                    Ok(()) => {
                        more_reads = true;
                        break;
                    }
                    Err(e) if first_byte_at.is_none() => return Err(stale(e)),
                    Err(e) => return Err(e),
                }
            }
            drained = S::SHORT_READ_DRAINS && n < space;
            if n == space && self.end == 0 && self.rbuf.len() < BULK_READ_BUF {
                let mut bigger =
                    vec![0; (self.rbuf.len() * 4).min(BULK_READ_BUF)].into_boxed_slice();
                bigger[..n].copy_from_slice(&self.rbuf[..n]);
                self.rbuf = bigger;
            }
            if first_byte_at.is_none() {
                first_byte_at = Some(Moment::now());
            } else {
                more_reads = true;
            }
            self.end += n;
        }
        self.reusable = dec.keep_alive;
        let first_byte_at = first_byte_at.unwrap_or_else(Moment::now);
        let done_at = if more_reads {
            Moment::now()
        } else {
            first_byte_at
        };
        Ok(Response {
            status: dec.status,
            head_bytes: dec.head_bytes,
            body_bytes: dec.body_bytes,
            keep_alive: dec.keep_alive,
            first_byte_at,
            done_at,
            bytes_out,
            bytes_in: dec.bytes_in,
        })
    }
}

impl<S: PendingInput> Connection<S> {
    /// Before a request: fails if the server is known to have sent anything since the last
    /// response ended (see [`PendingInput`] for what "known" costs and covers). Blank lines are
    /// skipped; end of stream, a reset or a `408` are the server closing an idle connection;
    /// anything else answers no request.
    fn check_idle(&mut self) -> Result<(), Error> {
        debug_assert_eq!(self.start, self.end, "the buffer is empty between requests");
        loop {
            let n = match self.io.read_waiting(&mut self.rbuf) {
                Poll::Pending => return Ok(()),
                Poll::Ready(Ok(n)) => n,
                Poll::Ready(Err(e)) => return Err(Error::io(e, Op::Reading)),
            };
            let bytes = &self.rbuf[..n];
            if bytes.is_empty() {
                return Err(Error::closed_early(
                    "the server closed the idle keep-alive connection",
                ));
            }
            if is_blank(bytes) {
                continue;
            }
            if is_request_timeout(bytes) {
                // RFC 9110 §15.5.9: a server may send 408 on an idle connection as it closes it.
                return Err(Error::closed_early(
                    "the server timed out the idle keep-alive connection (408) and closed it",
                ));
            }
            return Err(Error::unsolicited(
                "the server sent data on the idle keep-alive connection, before the request \
                 was sent (a second response to an earlier request?): it answers no request, \
                 so the request was not sent and the connection was dropped",
            ));
        }
    }
}

/// What a send writes: a request to encode, or one encoded ahead.
#[derive(Clone, Copy)]
enum Outgoing<'a, 'r> {
    Encode(&'a Request<'r>),
    Encoded(&'a PreparedRequest),
}

/// Empty, or only CR and LF: the blank lines some servers put between responses.
fn is_blank(bytes: &[u8]) -> bool {
    bytes.iter().all(|b| matches!(b, b'\r' | b'\n'))
}

/// Starts like a `408 Request Timeout` status line (blank lines before it skipped).
fn is_request_timeout(bytes: &[u8]) -> bool {
    let start = bytes.iter().position(|b| !matches!(b, b'\r' | b'\n'));
    let line = &bytes[start.unwrap_or(bytes.len())..];
    line.len() >= 12 && line.starts_with(b"HTTP/1.") && line[8] == b' ' && line[9..12] == *b"408"
}

#[path = "conn_write.rs"]
mod write;
use write::write_now;

#[cfg(test)]
#[path = "conn_tests.rs"]
mod tests;
