//! A hand-written HTTP/2 client connection, with the same surface as the `h2`-crate client
//! (`crate::reference`, behind the `reference` feature), built for few instructions per
//! request:
//!
//! - one read buffer and one write buffer per connection; frames are handled in place in the
//!   read buffer; every stream appends its frames to the one write buffer, which the
//!   connection's task writes once per scheduler tick (the requests of many VUs leave in one
//!   write, one TLS record);
//! - no `http::Request`, no `HeaderMap`: the request's header block is encoded straight from
//!   [`Request`] (static-table references and literals, no dynamic table, no Huffman); the
//!   response's is decoded by hand (`hpack_dec`: see there why not `loona-hpack`) into the stream's reused buffer and handed to the
//!   sink as [`Headers`];
//! - streams live in a small slab in `Rc<RefCell<..>>` state: no lock, no atomic, and a
//!   stream's task is woken only for its own events.
//!
//! **Must be used inside a [`tokio::task::LocalSet`]** (on a `current_thread` runtime, as the
//! engine's workers are): [`handshake`] spawns the connection's task with
//! [`tokio::task::spawn_local`], and the handles are `!Send`.
//!
//! Semantics (errors, bytes, headers) are those documented on [`crate::H2Connection::send`],
//! with two refinements: streams above a GOAWAY's last stream id fail as stale (the server
//! did not process them, a retry is safe), and [`handshake`] waits for the server's first
//! SETTINGS frame, so that the server's MAX_CONCURRENT_STREAMS is known before the first
//! request (a server that does not speak HTTP/2 fails the handshake, not the first request).

mod conn;
mod frame;
#[cfg(feature = "fuzzing")]
#[doc(hidden)]
pub mod fuzzing;
mod hpack;
mod hpack_dec;
mod hpack_tables;

use std::cell::RefCell;
use std::future::poll_fn;
use std::io::Read;
use std::net::SocketAddr;
use std::path::Path;
use std::rc::Rc;
use std::task::Poll;

use http::uri::Scheme;
use onrush_http::Moment;
use onrush_http::{BodySink, ConnectOptions, Error, ErrorKind, Headers, Piece, Request};
use onrush_http::{RequestBody, Response};
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt};

pub use crate::H2Settings;

use conn::{Closed, Driver, Fail, Shared, State, WRITE_HIGH};
use frame::{DATA, END_STREAM, MAX_FRAME_LIMIT, MAX_WINDOW};

/// Files are read in pieces of this size.
const FILE_CHUNK: usize = 64 * 1024;

/// Response heads with up to this many fields are passed to the sink from the stack.
const STACK_FIELDS: usize = 24;

/// A handle on an HTTP/2 connection. Cloning is cheap and gives another handle on the same
/// connection; handles on one thread send requests concurrently as separate streams. The
/// connection is closed (GOAWAY) when every handle is dropped and its streams are done.
pub struct H2Connection {
    st: Shared,
    https: bool,
    scheme: Rc<[u8]>,
}

impl Clone for H2Connection {
    fn clone(&self) -> Self {
        self.st.borrow_mut().handles += 1;
        H2Connection {
            st: self.st.clone(),
            https: self.https,
            scheme: self.scheme.clone(),
        }
    }
}

impl Drop for H2Connection {
    fn drop(&mut self) {
        let mut st = self.st.borrow_mut();
        st.handles -= 1;
        if st.handles == 0 {
            st.notify_driver();
        }
    }
}

impl std::fmt::Debug for H2Connection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("H2Connection")
            .field("scheme", &String::from_utf8_lossy(&self.scheme))
            .finish()
    }
}

/// Opens a TCP connection to `addr` and starts HTTP/2 on it with prior knowledge (h2c), as
/// [`crate::connect_h2c`] does. Inside a `LocalSet` only.
pub async fn connect_h2c(
    addr: SocketAddr,
    opts: &ConnectOptions,
    host: &[u8],
    settings: &H2Settings,
) -> Result<H2Connection, Error> {
    let tcp = onrush_http::connect_tcp(addr, opts).await?;
    handshake(tcp, Scheme::HTTP, host, settings).await
}

/// Starts HTTP/2 on `io` (TLS with ALPN `h2`, or a plain stream with prior knowledge): sends
/// the preface and our SETTINGS, spawns the connection's task with
/// [`tokio::task::spawn_local`] (so this must run inside a [`tokio::task::LocalSet`]), and
/// waits for the server's SETTINGS. `host` must be a valid `:authority`; each request sends
/// its own `req.host`.
///
/// Settings sent: ENABLE_PUSH 0, INITIAL_WINDOW_SIZE `settings.stream_window` (at least
/// 65,535), MAX_FRAME_SIZE `settings.max_frame_size` (16 KiB..16 MiB), and a WINDOW_UPDATE
/// opening the connection window to `settings.connection_window`.
pub async fn handshake<T>(
    mut io: T,
    scheme: Scheme,
    host: &[u8],
    settings: &H2Settings,
) -> Result<H2Connection, Error>
where
    T: AsyncRead + AsyncWrite + Unpin + 'static,
{
    if host.is_empty() || !host.iter().all(|&b| b > 0x20 && b != 0x7f) {
        return Err(Error::protocol(
            ErrorKind::ConnectOther,
            format!(
                "{:?} is not a valid HTTP/2 :authority",
                String::from_utf8_lossy(host)
            ),
            None,
        ));
    }
    let settings = H2Settings {
        stream_window: settings.stream_window.clamp(65_535, MAX_WINDOW as u32),
        connection_window: settings.connection_window.clamp(65_535, MAX_WINDOW as u32),
        max_frame_size: settings
            .max_frame_size
            .clamp(frame::DEFAULT_MAX_FRAME as u32, MAX_FRAME_LIMIT),
    };
    let mut hello = Vec::with_capacity(64);
    hello.extend_from_slice(frame::PREFACE);
    frame::head(&mut hello, 18, frame::SETTINGS, 0, 0);
    frame::setting(&mut hello, frame::SETTINGS_ENABLE_PUSH, 0);
    frame::setting(
        &mut hello,
        frame::SETTINGS_INITIAL_WINDOW_SIZE,
        settings.stream_window,
    );
    frame::setting(
        &mut hello,
        frame::SETTINGS_MAX_FRAME_SIZE,
        settings.max_frame_size,
    );
    if settings.connection_window > 65_535 {
        frame::window_update(&mut hello, 0, settings.connection_window - 65_535);
    }
    let preface_failed = |e: std::io::Error| {
        Error::protocol(
            ErrorKind::ConnectOther,
            "the HTTP/2 connection preface could not be sent",
            Some(e),
        )
    };
    io.write_all(&hello).await.map_err(preface_failed)?;
    io.flush().await.map_err(preface_failed)?;
    let mut state = State::new(settings);
    state.wire_written = hello.len() as u64;
    let st: Shared = Rc::new(RefCell::new(state));
    let driver = Driver::new(io, st.clone(), settings.max_frame_size as usize);
    tokio::task::spawn_local(driver);
    let conn = H2Connection {
        st,
        https: scheme == Scheme::HTTPS,
        scheme: Rc::from(scheme.as_str().as_bytes()),
    };
    // The server's SETTINGS (its stream limit, windows, frame size) before the first request.
    poll_fn(|cx| {
        let mut st = conn.st.borrow_mut();
        if st.got_settings {
            return Poll::Ready(Ok(()));
        }
        if let Some(closed) = &mut st.closed {
            let e = conn_error(closed, None);
            return Poll::Ready(Err(Error::protocol(
                ErrorKind::ConnectOther,
                format!("the HTTP/2 handshake failed: {e}"),
                None,
            )));
        }
        st.handshake_waker = Some(cx.waker().clone());
        Poll::Pending
    })
    .await?;
    Ok(conn)
}

/// The error a stream reports for the connection's end.
fn conn_error(closed: &mut Closed, goaway: Option<(u32, u32)>) -> Error {
    match closed {
        Closed::Eof => match goaway {
            Some((_, code)) => Error::protocol(
                ErrorKind::ClosedEarly,
                format!(
                    "the server closed the HTTP/2 connection (GOAWAY {})",
                    frame::reason(code)
                ),
                None,
            ),
            None => Error::transport(std::io::ErrorKind::UnexpectedEof.into()),
        },
        Closed::Io(e, kind) => Error::transport(e.take().unwrap_or_else(|| (*kind).into())),
        Closed::Protocol(msg) => Error::protocol(
            ErrorKind::BadResponse,
            format!("HTTP/2 protocol error: {msg}"),
            None,
        ),
        Closed::Local => Error::protocol(
            ErrorKind::Io,
            "the HTTP/2 connection was closed by this side",
            None,
        ),
    }
}

/// Why a new stream can't be opened: stale (the connection is gone or going).
fn refusal(st: &mut State) -> Error {
    let goaway = st.goaway;
    if let Some(closed) = &mut st.closed {
        return conn_error(closed, goaway).into_stale();
    }
    let msg = match goaway {
        Some((_, code)) => format!(
            "the server closed the HTTP/2 connection (GOAWAY {})",
            frame::reason(code)
        ),
        None => "the HTTP/2 connection ran out of stream ids".to_string(),
    };
    Error::protocol(ErrorKind::ClosedEarly, msg, None).into_stale()
}

/// The error of a failed stream.
fn stream_error(st: &mut State, fail: Fail) -> Error {
    match fail {
        Fail::Reset(code) => {
            let e = Error::protocol(
                ErrorKind::Reset,
                format!(
                    "the server reset the HTTP/2 stream ({})",
                    frame::reason(code)
                ),
                None,
            );
            if code == frame::REFUSED_STREAM {
                e.into_stale()
            } else {
                e
            }
        }
        Fail::Unprocessed(code) => Error::protocol(
            ErrorKind::ClosedEarly,
            format!(
                "the server closed the HTTP/2 connection before this stream (GOAWAY {})",
                frame::reason(code)
            ),
            None,
        )
        .into_stale(),
        Fail::Malformed(msg) => Error::protocol(
            ErrorKind::BadResponse,
            format!("HTTP/2 protocol error: {msg}"),
            None,
        ),
        Fail::Conn => {
            let goaway = st.goaway;
            match &mut st.closed {
                Some(closed) => conn_error(closed, goaway),
                None => Error::protocol(ErrorKind::Io, "the HTTP/2 connection failed", None),
            }
        }
    }
}

/// Holds a stream's slot; gives it back (resetting the stream if still open) when dropped,
/// so a send future dropped mid-way (a timeout) leaves the connection usable.
struct Stream<'a> {
    st: &'a RefCell<State>,
    slot: Option<usize>,
    waiting: bool,
}

impl Drop for Stream<'_> {
    fn drop(&mut self) {
        let mut st = self.st.borrow_mut();
        if let Some(i) = self.slot.take() {
            st.release(i);
        } else if self.waiting {
            // We may have been woken for a slot we no longer want: pass it on.
            if let Some(w) = st.slot_waiters.pop_front() {
                w.wake();
            }
        }
    }
}

/// The length of a request body, and the multipart content type.
fn body_len<'a>(req: &Request<'a>) -> Result<(u64, Option<&'a str>), Error> {
    Ok(match req.body {
        RequestBody::Empty => (0, None),
        RequestBody::Bytes(b) => (b.len() as u64, None),
        RequestBody::File(path) => (
            std::fs::metadata(path)
                .map_err(|e| {
                    Error::protocol(
                        ErrorKind::Io,
                        format!("could not read the body file {}: {e}", path.display()),
                        None,
                    )
                })?
                .len(),
            None,
        ),
        RequestBody::Multipart(m) => (
            m.pieces()
                .map(|p| match p {
                    Piece::Bytes(b) => b.len() as u64,
                    Piece::File { len, .. } => len,
                })
                .sum(),
            Some(m.content_type()),
        ),
    })
}

impl H2Connection {
    /// Sends `req` on a new stream and streams the response body into `sink`; the semantics
    /// of [`crate::H2Connection::send`] (see the module documentation for the refinements).
    pub async fn send(
        &mut self,
        req: &Request<'_>,
        sink: &mut impl BodySink,
    ) -> Result<Response, Error> {
        let (len, content_type) = body_len(req)?;
        let has_body = !matches!(req.body, RequestBody::Empty)
            || matches!(req.method, "POST" | "PUT" | "PATCH");
        let extra = hpack::Extra {
            https: self.https,
            scheme: &self.scheme,
            content_length: has_body.then_some(len),
            content_type,
        };
        let end_stream = len == 0;
        let mut stream = Stream {
            st: &self.st,
            slot: None,
            waiting: false,
        };
        // Open the stream: a slot under the server's limit, an id, the HEADERS queued.
        let idx = self.open(req, &extra, end_stream, &mut stream).await?;
        if !end_stream {
            self.send_body(idx, req.body).await?;
        }
        // The response: head, data, end, in as few polls as they arrived.
        let mut body_bytes = 0u64;
        poll_fn(|cx| {
            let mut guard = self.st.borrow_mut();
            let st = &mut *guard;
            let s = &mut st.slots[idx];
            if s.status != 0 && !s.head_given {
                s.head_given = true;
                give_head(sink, s);
            }
            if !s.data.is_empty() {
                let n = s.data.len();
                sink.data(&s.data);
                s.data.clear();
                body_bytes += n as u64;
                st.consumed(idx, n as u32);
            }
            let s = &mut st.slots[idx];
            if s.end_received {
                return Poll::Ready(if s.head_given {
                    Ok(())
                } else {
                    Err(stream_error(
                        st,
                        Fail::Malformed("a stream ended without a response"),
                    ))
                });
            }
            if let Some(fail) = s.fail {
                return Poll::Ready(Err(stream_error(st, fail)));
            }
            s.register(cx);
            Poll::Pending
        })
        .await?;
        {
            let st = self.st.borrow();
            let s = &st.slots[idx];
            if let Some(from) = s.trailers_from {
                give_fields(s, &s.fields[from..], |h| sink.trailers(h));
            }
        }
        sink.end();
        let mut st = self.st.borrow_mut();
        let s = &st.slots[idx];
        let (status, head_bytes) = (s.status, s.head_bytes);
        let first_byte_at = s.first_byte_at.unwrap_or_else(Moment::now);
        let (bytes_in, bytes_out) = st.take_wire();
        drop(st);
        drop(stream);
        Ok(Response {
            status,
            head_bytes,
            body_bytes,
            keep_alive: true,
            first_byte_at,
            done_at: Moment::now(),
            bytes_out,
            bytes_in,
        })
    }

    /// Opens a stream (waiting for a slot under the server's MAX_CONCURRENT_STREAMS) and
    /// queues its HEADERS; the slot is `stream`'s from then on.
    async fn open(
        &self,
        req: &Request<'_>,
        extra: &hpack::Extra<'_>,
        end_stream: bool,
        stream: &mut Stream<'_>,
    ) -> Result<usize, Error> {
        poll_fn(|cx| {
            let mut st = self.st.borrow_mut();
            let st = &mut *st;
            if !st.accepts_streams() {
                return Poll::Ready(Err(refusal(st)));
            }
            if st.active >= st.peer_max_streams {
                st.slot_waiters.push_back(cx.waker().clone());
                stream.waiting = true;
                return Poll::Pending;
            }
            let mark = st.wbuf.len();
            st.wbuf.extend_from_slice(&[0; 9]);
            if let Err(msg) = hpack::encode_request(&mut st.wbuf, req, extra) {
                st.wbuf.truncate(mark);
                return Poll::Ready(Err(Error::protocol(ErrorKind::Io, msg, None)));
            }
            let (idx, id) = st.open();
            stream.slot = Some(idx);
            stream.waiting = false;
            let block = st.wbuf.len() - mark - 9;
            let flags = if end_stream { END_STREAM } else { 0 };
            if block <= st.peer_max_frame {
                frame::patch_head(
                    &mut st.wbuf,
                    mark,
                    block,
                    frame::HEADERS,
                    flags | frame::END_HEADERS,
                    id,
                );
            } else {
                split_block(&mut st.wbuf, mark, id, flags, st.peer_max_frame);
            }
            if end_stream {
                st.slots[idx].local_done = true;
            }
            st.notify_driver();
            Poll::Ready(Ok(idx))
        })
        .await
    }

    /// Sends the body as DATA frames under flow control, then END_STREAM.
    async fn send_body(&self, idx: usize, body: RequestBody<'_>) -> Result<(), Error> {
        match body {
            RequestBody::Empty => self.push(idx, &[], true).await,
            RequestBody::Bytes(b) => self.push(idx, b, true).await,
            RequestBody::File(path) => {
                self.push_file(idx, path, None).await?;
                self.push(idx, &[], true).await
            }
            RequestBody::Multipart(m) => {
                for piece in m.pieces() {
                    match piece {
                        Piece::Bytes(b) => self.push(idx, b, false).await?,
                        Piece::File { path, len } => self.push_file(idx, path, Some(len)).await?,
                    }
                }
                self.push(idx, &[], true).await
            }
        }
    }

    async fn push_file(&self, idx: usize, path: &Path, expected: Option<u64>) -> Result<(), Error> {
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
                        "the body file {} changed size since the body was built ({len} bytes \
                         then, {now} now)",
                        path.display()
                    ),
                    None,
                ));
            }
        }
        let mut chunk = vec![0; FILE_CHUNK];
        loop {
            let n = file.read(&mut chunk).map_err(file_error)?;
            if n == 0 {
                return Ok(());
            }
            self.push(idx, &chunk[..n], false).await?;
        }
    }

    /// Queues `data` as DATA frames as the windows and the write buffer allow (with
    /// END_STREAM after the last byte when `end`). Stops quietly when the server already
    /// ended the stream (its response is then complete).
    async fn push(&self, idx: usize, mut data: &[u8], end: bool) -> Result<(), Error> {
        poll_fn(|cx| {
            let mut guard = self.st.borrow_mut();
            let st = &mut *guard;
            loop {
                let s = &st.slots[idx];
                if let Some(fail) = s.fail {
                    return Poll::Ready(Err(stream_error(st, fail)));
                }
                if s.end_received || s.local_done {
                    return Poll::Ready(Ok(()));
                }
                if data.is_empty() {
                    if end {
                        let id = s.id;
                        frame::head(&mut st.wbuf, 0, DATA, END_STREAM, id);
                        st.slots[idx].local_done = true;
                        st.notify_driver();
                    }
                    return Poll::Ready(Ok(()));
                }
                let room = WRITE_HIGH.saturating_sub(st.wbuf.len());
                let n = (data.len() as i64)
                    .min(st.conn_send_window)
                    .min(s.send_window)
                    .min(st.peer_max_frame as i64)
                    .min(room as i64);
                if n <= 0 {
                    st.slots[idx].register(cx);
                    st.send_waiters.push(cx.waker().clone());
                    return Poll::Pending;
                }
                let n = n as usize;
                let last = end && n == data.len();
                let id = s.id;
                frame::head(&mut st.wbuf, n, DATA, if last { END_STREAM } else { 0 }, id);
                st.wbuf.extend_from_slice(&data[..n]);
                data = &data[n..];
                st.conn_send_window -= n as i64;
                let s = &mut st.slots[idx];
                s.send_window -= n as i64;
                if last {
                    s.local_done = true;
                }
                st.notify_driver();
                if last {
                    return Poll::Ready(Ok(()));
                }
            }
        })
        .await
    }

    /// Whether the server still accepts new streams on this connection, as far as is known
    /// without waiting (a GOAWAY received, a failed connection or exhausted stream ids make it
    /// false).
    pub fn is_open(&mut self) -> bool {
        self.st.borrow().accepts_streams()
    }
}

/// Passes a stream's final head to the sink.
fn give_head(sink: &mut impl BodySink, s: &conn::Slot) {
    let head = &s.fields[..s.trailers_from.unwrap_or(s.fields.len())];
    give_fields(s, head, |h| sink.head(s.status, h));
}

/// Calls `give` with `fields` (of `s`) as [`Headers`].
fn give_fields(s: &conn::Slot, fields: &[(u32, u32, u32)], give: impl FnOnce(&Headers<'_>)) {
    let mut stack = [httparse::EMPTY_HEADER; STACK_FIELDS];
    let mut heap;
    let raw: &mut [httparse::Header<'_>] = if fields.len() <= STACK_FIELDS {
        &mut stack[..fields.len()]
    } else {
        heap = vec![httparse::EMPTY_HEADER; fields.len()];
        &mut heap
    };
    for (h, &(a, b, c)) in raw.iter_mut().zip(fields) {
        h.name = std::str::from_utf8(&s.hbuf[a as usize..b as usize]).unwrap_or("");
        h.value = &s.hbuf[b as usize..c as usize];
    }
    give(&Headers::new(raw));
}

/// Splits the header block written after the placeholder at `mark` into HEADERS +
/// CONTINUATION frames of at most `max` bytes (a block larger than the server's frame size).
fn split_block(wbuf: &mut Vec<u8>, mark: usize, id: u32, flags: u8, max: usize) {
    let block = wbuf.split_off(mark + 9);
    wbuf.truncate(mark);
    let mut chunks = block.chunks(max).peekable();
    let mut first = true;
    while let Some(c) = chunks.next() {
        let last = chunks.peek().is_none();
        let eh = if last { frame::END_HEADERS } else { 0 };
        if first {
            frame::head(wbuf, c.len(), frame::HEADERS, flags | eh, id);
            first = false;
        } else {
            frame::head(wbuf, c.len(), frame::CONTINUATION, eh, id);
        }
        wbuf.extend_from_slice(c);
    }
}
