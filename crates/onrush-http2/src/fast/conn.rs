//! The connection state shared by the handles and the driver task, and the driver: reads
//! frames into one reused buffer and handles them in place, writes the one write buffer that
//! every stream appends its frames to (so the requests of one scheduler tick leave in one
//! write, one TLS record).
//!
//! Everything lives on one thread: `Rc<RefCell<State>>`, no lock, no atomic. A stream's
//! future is woken only when something arrived for it (its head, data, end, reset, window), or
//! when the connection failed.

use std::cell::RefCell;
use std::collections::VecDeque;
use std::future::Future;
use std::io;
use std::pin::Pin;
use std::rc::Rc;
use std::task::{Context, Poll, Waker};

use onrush_http::Moment;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

use super::frame::{self, *};
use crate::H2Settings;

/// The read buffer's first size; it grows (once or twice) to hold the largest frame we allow
/// only when a frame that large arrives.
const READ_BUF: usize = 16 * 1024;

/// Streams stop appending DATA to the write buffer while it holds this much not yet written:
/// an upload never has more than this (plus one frame) in memory.
pub(crate) const WRITE_HIGH: usize = 64 * 1024;

/// A header block (HEADERS + CONTINUATION) larger than this is refused (a CONTINUATION flood).
const MAX_HEADER_BLOCK: usize = 1 << 20;

/// Response header fields kept per stream (more is a malformed response).
const MAX_FIELDS: usize = 1024;

/// PING and SETTINGS frames answered (each owes the server an ACK) while the ACKs already
/// owed could not be written: a server that sends more than this and reads none of the
/// answers is flooding us. Without the bound, every ACK waited in the write buffer: a PING
/// flood from a server that never read grew onrush to ~1 GB in 2 s. 1,000 (17 KB of ACKs) is
/// nghttp2's bound on queued ACKs too; a real server sends a handful.
const MAX_UNWRITTEN_ACKS: u32 = 1000;

pub(crate) type Shared = Rc<RefCell<State>>;

/// Why the connection ended.
pub(crate) enum Closed {
    /// The server closed the connection (EOF).
    Eof,
    /// A read or write failed; the error is handed to the first stream that reports it.
    Io(Option<io::Error>, io::ErrorKind),
    /// The server violated the protocol: we sent GOAWAY with this message's code.
    Protocol(&'static str),
    /// Every handle was dropped: we said GOAWAY(NO_ERROR).
    Local,
}

/// Why one stream failed (the connection's failure is `Conn`).
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Fail {
    /// RST_STREAM from the server, with its code.
    Reset(u32),
    /// A GOAWAY whose last stream id is below this stream: not processed, safe to retry.
    Unprocessed(u32),
    /// The response was malformed (we reset the stream with PROTOCOL_ERROR).
    Malformed(&'static str),
    /// The connection failed or closed (see `State::closed`).
    Conn,
}

/// One stream in flight; slots are reused, keeping their buffers' capacity.
#[derive(Default)]
pub(crate) struct Slot {
    /// 0: free.
    pub id: u32,
    /// We sent END_STREAM (or gave up sending: RST).
    pub local_done: bool,
    /// The server sent END_STREAM.
    pub end_received: bool,
    pub fail: Option<Fail>,
    /// The final status; 0 until the final head arrived.
    pub status: u16,
    pub head_given: bool,
    pub head_bytes: u64,
    pub first_byte_at: Option<Moment>,
    /// Decoded response fields: names and values back to back in `hbuf`; each entry is
    /// (name start, name end = value start, value end).
    pub hbuf: Vec<u8>,
    pub fields: Vec<(u32, u32, u32)>,
    /// Where the trailers' fields start in `fields`, when a trailer block arrived (gRPC's
    /// `grpc-status` is there).
    pub trailers_from: Option<usize>,
    /// Body bytes received and not yet handed to the sink.
    pub data: Vec<u8>,
    /// What we may still send on this stream (may go negative after a SETTINGS change).
    pub send_window: i64,
    /// What the server may still send on this stream.
    pub recv_window: i64,
    /// Bytes the sink consumed that were not yet given back by a WINDOW_UPDATE.
    pub unacked: u32,
    pub waker: Option<Waker>,
}

impl Slot {
    #[inline]
    pub(crate) fn wake(&mut self) {
        if let Some(w) = self.waker.take() {
            w.wake();
        }
    }

    #[inline]
    pub(crate) fn register(&mut self, cx: &Context<'_>) {
        match &self.waker {
            Some(w) if w.will_wake(cx.waker()) => {}
            _ => self.waker = Some(cx.waker().clone()),
        }
    }
}

/// Everything the handles and the driver share.
pub(crate) struct State {
    pub settings: H2Settings,
    pub peer_max_streams: u32,
    pub peer_initial_window: i64,
    pub peer_max_frame: usize,
    /// The server's first SETTINGS arrived (the handshake waits for it).
    pub got_settings: bool,
    pub conn_send_window: i64,
    pub conn_recv_window: i64,
    pub conn_unacked: u32,
    pub slots: Vec<Slot>,
    free: Vec<u32>,
    /// Streams open (counted against the server's MAX_CONCURRENT_STREAMS).
    pub active: u32,
    pub next_id: u32,
    /// Sends waiting for a stream slot (MAX_CONCURRENT_STREAMS).
    pub slot_waiters: VecDeque<Waker>,
    /// Sends waiting for the connection window or write-buffer room.
    pub send_waiters: Vec<Waker>,
    pub wbuf: Vec<u8>,
    /// ACKs (of PING, SETTINGS) appended to `wbuf` since it was last written out in full.
    unwritten_acks: u32,
    driver: Option<Waker>,
    driver_notified: bool,
    /// GOAWAY received: (last stream id, code).
    pub goaway: Option<(u32, u32)>,
    pub closed: Option<Closed>,
    pub handles: u32,
    /// Woken when the server's first SETTINGS arrives or the connection fails.
    pub handshake_waker: Option<Waker>,
    decoder: super::hpack_dec::Decoder,
    /// A header block being assembled from HEADERS + CONTINUATION.
    block: Vec<u8>,
    block_stream: u32,
    block_end_stream: bool,
    expect_continuation: bool,
    /// When the current read batch arrived (taken lazily, once per batch, when a head completes).
    read_at: Option<Moment>,
    pub wire_read: u64,
    pub wire_written: u64,
    read_taken: u64,
    written_taken: u64,
}

/// A connection error found while handling a frame: GOAWAY with this code.
pub(crate) struct ConnError(pub u32, pub &'static str);

impl State {
    pub(crate) fn new(settings: H2Settings) -> State {
        // We announce no SETTINGS_HEADER_TABLE_SIZE: the default, 4096.
        let decoder = super::hpack_dec::Decoder::new(4096);
        State {
            settings,
            // Until the server's SETTINGS say otherwise (the handshake waits for them anyway).
            peer_max_streams: 100,
            peer_initial_window: DEFAULT_WINDOW,
            peer_max_frame: DEFAULT_MAX_FRAME,
            got_settings: false,
            conn_send_window: DEFAULT_WINDOW,
            conn_recv_window: settings.connection_window as i64,
            conn_unacked: 0,
            slots: Vec::new(),
            free: Vec::new(),
            active: 0,
            next_id: 1,
            slot_waiters: VecDeque::new(),
            send_waiters: Vec::new(),
            wbuf: Vec::with_capacity(4096),
            unwritten_acks: 0,
            driver: None,
            driver_notified: false,
            goaway: None,
            closed: None,
            handles: 1,
            handshake_waker: None,
            decoder,
            block: Vec::new(),
            block_stream: 0,
            block_end_stream: false,
            expect_continuation: false,
            read_at: None,
            wire_read: 0,
            wire_written: 0,
            read_taken: 0,
            written_taken: 0,
        }
    }

    /// Wakes the driver (once per tick however many streams ask).
    #[inline]
    pub(crate) fn notify_driver(&mut self) {
        if !self.driver_notified {
            self.driver_notified = true;
            if let Some(w) = &self.driver {
                w.wake_by_ref();
            }
        }
    }

    /// The wire bytes read and written since the previous call.
    pub(crate) fn take_wire(&mut self) -> (u64, u64) {
        let r = self.wire_read - self.read_taken;
        let w = self.wire_written - self.written_taken;
        self.read_taken = self.wire_read;
        self.written_taken = self.wire_written;
        (r, w)
    }

    /// Whether a new stream may be opened (else the reason: the connection is closing).
    pub(crate) fn accepts_streams(&self) -> bool {
        self.closed.is_none() && self.goaway.is_none() && self.next_id <= MAX_STREAM_ID
    }

    /// Takes a slot for a new stream and gives it the next id. The caller checked
    /// `accepts_streams` and the concurrency limit.
    pub(crate) fn open(&mut self) -> (usize, u32) {
        let id = self.next_id;
        self.next_id += 2;
        self.active += 1;
        let idx = match self.free.pop() {
            Some(i) => i as usize,
            None => {
                self.slots.push(Slot::default());
                self.slots.len() - 1
            }
        };
        let initial = self.peer_initial_window;
        let recv = self.settings.stream_window as i64;
        let s = &mut self.slots[idx];
        s.id = id;
        s.send_window = initial;
        s.recv_window = recv;
        (idx, id)
    }

    /// Gives a slot back: resets the stream if it is still open on the wire, gives back the
    /// connection window of data nobody consumed, and lets a waiting send have the slot.
    pub(crate) fn release(&mut self, idx: usize) {
        let closed = self.closed.is_some();
        let s = &mut self.slots[idx];
        let id = s.id;
        let finished = s.end_received && s.local_done;
        let gone = matches!(
            s.fail,
            Some(Fail::Reset(_) | Fail::Malformed(_) | Fail::Conn)
        );
        let open_on_wire = !finished && !gone;
        let unconsumed = s.data.len() as u32;
        s.id = 0;
        s.local_done = false;
        s.end_received = false;
        s.fail = None;
        s.status = 0;
        s.head_given = false;
        s.head_bytes = 0;
        s.first_byte_at = None;
        s.hbuf.clear();
        s.fields.clear();
        s.trailers_from = None;
        s.data.clear();
        s.unacked = 0;
        s.waker = None;
        if s.data.capacity() > (1 << 20) {
            // After a big download: don't keep a window's worth per idle slot.
            s.data = Vec::new();
        }
        self.free.push(idx as u32);
        self.active -= 1;
        if !closed {
            if open_on_wire {
                frame::rst_stream(&mut self.wbuf, id, CANCEL);
                self.notify_driver();
            }
            if unconsumed > 0 {
                self.give_back_conn(unconsumed);
            }
        }
        if let Some(w) = self.slot_waiters.pop_front() {
            w.wake();
        }
    }

    /// Counts `n` bytes of the connection window as consumed; sends a WINDOW_UPDATE once half
    /// the window is.
    #[inline]
    pub(crate) fn give_back_conn(&mut self, n: u32) {
        self.conn_unacked += n;
        if self.conn_unacked >= self.settings.connection_window / 2 && self.closed.is_none() {
            let inc = self.conn_unacked;
            self.conn_unacked = 0;
            self.conn_recv_window += inc as i64;
            frame::window_update(&mut self.wbuf, 0, inc);
            self.notify_driver();
        }
    }

    /// Counts `n` bytes of stream `idx`'s window as consumed by the sink.
    #[inline]
    pub(crate) fn consumed(&mut self, idx: usize, n: u32) {
        let half = self.settings.stream_window / 2;
        let s = &mut self.slots[idx];
        s.unacked += n;
        if s.unacked >= half && !s.end_received && s.fail.is_none() {
            let inc = s.unacked;
            s.unacked = 0;
            s.recv_window += inc as i64;
            let id = s.id;
            frame::window_update(&mut self.wbuf, id, inc);
            self.notify_driver();
        }
        self.give_back_conn(n);
    }

    fn slot_of(&self, id: u32) -> Option<usize> {
        self.slots.iter().position(|s| s.id == id)
    }

    /// The connection ended: every stream and waiter learns it.
    fn close(&mut self, why: Closed) {
        if self.closed.is_some() {
            return;
        }
        self.closed = Some(why);
        for s in &mut self.slots {
            if s.id != 0 && s.fail.is_none() && !s.end_received {
                s.fail = Some(Fail::Conn);
            }
            s.wake();
        }
        for w in self.slot_waiters.drain(..) {
            w.wake();
        }
        for w in self.send_waiters.drain(..) {
            w.wake();
        }
        if let Some(w) = self.handshake_waker.take() {
            w.wake();
        }
    }

    /// A connection error of ours: GOAWAY with its code, then close.
    fn fail_connection(&mut self, e: ConnError) {
        if self.closed.is_none() {
            frame::goaway(&mut self.wbuf, 0, e.0);
        }
        self.close(Closed::Protocol(e.1));
    }

    /// Resets stream `idx` for a malformed response.
    fn malformed(&mut self, idx: usize, why: &'static str) {
        let s = &mut self.slots[idx];
        if s.fail.is_none() {
            s.fail = Some(Fail::Malformed(why));
            let id = s.id;
            s.wake();
            frame::rst_stream(&mut self.wbuf, id, PROTOCOL_ERROR);
        }
    }

    fn wake_senders(&mut self) {
        for w in self.send_waiters.drain(..) {
            w.wake();
        }
    }

    /// Handles one complete frame.
    fn on_frame(&mut self, typ: u8, flags: u8, id: u32, p: &[u8]) -> Result<(), ConnError> {
        if self.expect_continuation && (typ != CONTINUATION || id != self.block_stream) {
            return Err(ConnError(
                PROTOCOL_ERROR,
                "a header block was interrupted by another frame",
            ));
        }
        match typ {
            DATA => self.on_data(flags, id, p),
            HEADERS => self.on_headers(flags, id, p),
            CONTINUATION => self.on_continuation(flags, id, p),
            PRIORITY => {
                if id == 0 {
                    return Err(ConnError(PROTOCOL_ERROR, "PRIORITY on stream 0"));
                }
                if p.len() != 5 {
                    return Err(ConnError(
                        FRAME_SIZE_ERROR,
                        "a PRIORITY frame is not 5 bytes",
                    ));
                }
                Ok(())
            }
            RST_STREAM => {
                if id == 0 || id.is_multiple_of(2) || id >= self.next_id {
                    return Err(ConnError(
                        PROTOCOL_ERROR,
                        "RST_STREAM on a stream never opened",
                    ));
                }
                if p.len() != 4 {
                    return Err(ConnError(
                        FRAME_SIZE_ERROR,
                        "an RST_STREAM frame is not 4 bytes",
                    ));
                }
                if let Some(i) = self.slot_of(id) {
                    let s = &mut self.slots[i];
                    if s.fail.is_none() {
                        s.fail = Some(Fail::Reset(be32(p)));
                    }
                    s.wake();
                }
                Ok(())
            }
            SETTINGS => self.on_settings(flags, id, p),
            PUSH_PROMISE => Err(ConnError(
                PROTOCOL_ERROR,
                "the server sent PUSH_PROMISE although push is disabled",
            )),
            PING => {
                if id != 0 {
                    return Err(ConnError(PROTOCOL_ERROR, "PING on a stream"));
                }
                if p.len() != 8 {
                    return Err(ConnError(FRAME_SIZE_ERROR, "a PING frame is not 8 bytes"));
                }
                if flags & ACK == 0 {
                    self.owe_ack("a PING flood: the server sent over 1,000 PING frames without reading our ACKs")?;
                    frame::head(&mut self.wbuf, 8, PING, ACK, 0);
                    self.wbuf.extend_from_slice(p);
                }
                Ok(())
            }
            GOAWAY => {
                if id != 0 {
                    return Err(ConnError(PROTOCOL_ERROR, "GOAWAY on a stream"));
                }
                if p.len() < 8 {
                    return Err(ConnError(FRAME_SIZE_ERROR, "a GOAWAY frame is too short"));
                }
                let last = be32(p) & 0x7fff_ffff;
                let code = be32(&p[4..]);
                // A second GOAWAY may only lower the last stream id.
                let last = self.goaway.map_or(last, |(l, _)| l.min(last));
                self.goaway = Some((last, code));
                for s in &mut self.slots {
                    if s.id > last && s.fail.is_none() && !s.end_received {
                        s.fail = Some(Fail::Unprocessed(code));
                        s.wake();
                    }
                }
                for w in self.slot_waiters.drain(..) {
                    w.wake();
                }
                Ok(())
            }
            WINDOW_UPDATE => {
                if p.len() != 4 {
                    return Err(ConnError(
                        FRAME_SIZE_ERROR,
                        "a WINDOW_UPDATE frame is not 4 bytes",
                    ));
                }
                let inc = (be32(p) & 0x7fff_ffff) as i64;
                if id == 0 {
                    if inc == 0 {
                        return Err(ConnError(PROTOCOL_ERROR, "a WINDOW_UPDATE of 0"));
                    }
                    self.conn_send_window += inc;
                    if self.conn_send_window > MAX_WINDOW {
                        return Err(ConnError(
                            FLOW_CONTROL_ERROR,
                            "the server's WINDOW_UPDATE overflowed the connection window",
                        ));
                    }
                    self.wake_senders();
                } else if let Some(i) = self.slot_of(id) {
                    if inc == 0 {
                        self.malformed(i, "a WINDOW_UPDATE of 0");
                        return Ok(());
                    }
                    let s = &mut self.slots[i];
                    s.send_window += inc;
                    if s.send_window > MAX_WINDOW {
                        self.malformed(
                            i,
                            "the server's WINDOW_UPDATE overflowed the stream window",
                        );
                        return Ok(());
                    }
                    s.wake();
                } else if id >= self.next_id {
                    return Err(ConnError(PROTOCOL_ERROR, "WINDOW_UPDATE on an idle stream"));
                }
                Ok(())
            }
            // Unknown frame types are ignored (RFC 9113 §4.1).
            _ => Ok(()),
        }
    }

    /// Counts an ACK about to be queued; a flood (see [`MAX_UNWRITTEN_ACKS`]) is a connection
    /// error (GOAWAY ENHANCE_YOUR_CALM) named by `flood`.
    fn owe_ack(&mut self, flood: &'static str) -> Result<(), ConnError> {
        self.unwritten_acks += 1;
        if self.unwritten_acks > MAX_UNWRITTEN_ACKS {
            return Err(ConnError(ENHANCE_YOUR_CALM, flood));
        }
        Ok(())
    }

    fn on_settings(&mut self, flags: u8, id: u32, p: &[u8]) -> Result<(), ConnError> {
        if id != 0 {
            return Err(ConnError(PROTOCOL_ERROR, "SETTINGS on a stream"));
        }
        if flags & ACK != 0 {
            if !p.is_empty() {
                return Err(ConnError(FRAME_SIZE_ERROR, "a SETTINGS ACK with a payload"));
            }
            return Ok(());
        }
        if !p.len().is_multiple_of(6) {
            return Err(ConnError(
                FRAME_SIZE_ERROR,
                "a SETTINGS frame is not a multiple of 6 bytes",
            ));
        }
        for s in p.chunks_exact(6) {
            let key = u16::from_be_bytes([s[0], s[1]]);
            let value = be32(&s[2..]);
            match key {
                SETTINGS_ENABLE_PUSH if value > 1 => {
                    return Err(ConnError(PROTOCOL_ERROR, "SETTINGS_ENABLE_PUSH above 1"));
                }
                SETTINGS_MAX_CONCURRENT_STREAMS => {
                    let more = value > self.peer_max_streams;
                    self.peer_max_streams = value;
                    if more {
                        for w in self.slot_waiters.drain(..) {
                            w.wake();
                        }
                    }
                }
                SETTINGS_INITIAL_WINDOW_SIZE => {
                    if value as i64 > MAX_WINDOW {
                        return Err(ConnError(
                            FLOW_CONTROL_ERROR,
                            "SETTINGS_INITIAL_WINDOW_SIZE above 2^31-1",
                        ));
                    }
                    let delta = value as i64 - self.peer_initial_window;
                    self.peer_initial_window = value as i64;
                    for s in &mut self.slots {
                        if s.id != 0 {
                            s.send_window += delta;
                            if s.send_window > MAX_WINDOW {
                                return Err(ConnError(
                                    FLOW_CONTROL_ERROR,
                                    "a SETTINGS_INITIAL_WINDOW_SIZE change overflowed a window",
                                ));
                            }
                            if delta > 0 {
                                s.wake();
                            }
                        }
                    }
                }
                SETTINGS_MAX_FRAME_SIZE => {
                    if !(DEFAULT_MAX_FRAME as u32..=MAX_FRAME_LIMIT).contains(&value) {
                        return Err(ConnError(
                            PROTOCOL_ERROR,
                            "SETTINGS_MAX_FRAME_SIZE out of range",
                        ));
                    }
                    self.peer_max_frame = value as usize;
                }
                // HEADER_TABLE_SIZE: our encoder uses no dynamic table, any size suits it.
                // MAX_HEADER_LIST_SIZE and unknown settings: nothing to do.
                _ => {}
            }
        }
        self.owe_ack(
            "a SETTINGS flood: the server sent over 1,000 SETTINGS frames without reading our ACKs",
        )?;
        frame::head(&mut self.wbuf, 0, SETTINGS, ACK, 0);
        if !self.got_settings {
            self.got_settings = true;
            if let Some(w) = self.handshake_waker.take() {
                w.wake();
            }
        }
        Ok(())
    }

    fn on_data(&mut self, flags: u8, id: u32, p: &[u8]) -> Result<(), ConnError> {
        if id == 0 {
            return Err(ConnError(PROTOCOL_ERROR, "DATA on stream 0"));
        }
        let len = p.len();
        self.conn_recv_window -= len as i64;
        if self.conn_recv_window < 0 {
            return Err(ConnError(
                FLOW_CONTROL_ERROR,
                "the server sent more DATA than the connection window allowed",
            ));
        }
        let data = unpad(flags, p)?;
        let padding = (len - data.len()) as u32;
        let Some(i) = self.slot_of(id) else {
            if id >= self.next_id || id.is_multiple_of(2) {
                return Err(ConnError(PROTOCOL_ERROR, "DATA on a stream never opened"));
            }
            // A stream we reset or finished: its bytes still count against the connection.
            self.give_back_conn(len as u32);
            return Ok(());
        };
        let s = &mut self.slots[i];
        if s.fail.is_some() {
            self.give_back_conn(len as u32);
            return Ok(());
        }
        if s.end_received {
            return Err(ConnError(STREAM_CLOSED, "DATA after the end of a stream"));
        }
        s.recv_window -= len as i64;
        if s.recv_window < 0 {
            self.give_back_conn(len as u32);
            self.malformed(
                i,
                "the server sent more DATA than the stream window allowed",
            );
            return Ok(());
        }
        if s.status == 0 {
            self.give_back_conn(len as u32);
            self.malformed(i, "DATA before the response head");
            return Ok(());
        }
        s.data.extend_from_slice(data);
        if flags & END_STREAM != 0 {
            s.end_received = true;
        }
        s.wake();
        if padding > 0 {
            // Padding is never consumed by anyone: give it back now.
            self.slots[i].unacked += padding;
            self.give_back_conn(padding);
        }
        Ok(())
    }

    fn on_headers(&mut self, flags: u8, id: u32, p: &[u8]) -> Result<(), ConnError> {
        if id == 0 || id.is_multiple_of(2) || id >= self.next_id {
            return Err(ConnError(
                PROTOCOL_ERROR,
                "HEADERS on a stream we did not open",
            ));
        }
        let mut frag = unpad(flags, p)?;
        if flags & PRIORITY_FLAG != 0 {
            if frag.len() < 5 {
                return Err(ConnError(
                    FRAME_SIZE_ERROR,
                    "HEADERS too short for its priority",
                ));
            }
            frag = &frag[5..];
        }
        let end_stream = flags & END_STREAM != 0;
        if flags & END_HEADERS != 0 {
            return self.on_block(id, end_stream, frag);
        }
        self.block.clear();
        self.block.extend_from_slice(frag);
        self.block_stream = id;
        self.block_end_stream = end_stream;
        self.expect_continuation = true;
        Ok(())
    }

    fn on_continuation(&mut self, flags: u8, id: u32, p: &[u8]) -> Result<(), ConnError> {
        if !self.expect_continuation || id != self.block_stream {
            return Err(ConnError(
                PROTOCOL_ERROR,
                "CONTINUATION without a header block",
            ));
        }
        if self.block.len() + p.len() > MAX_HEADER_BLOCK {
            return Err(ConnError(ENHANCE_YOUR_CALM, "a header block over 1 MiB"));
        }
        self.block.extend_from_slice(p);
        if flags & END_HEADERS == 0 {
            return Ok(());
        }
        self.expect_continuation = false;
        let block = std::mem::take(&mut self.block);
        let result = self.on_block(id, self.block_end_stream, &block);
        self.block = block;
        result
    }

    /// A complete header block for stream `id`: decoded always (the HPACK table must follow
    /// the server's), kept only for a stream that waits for it.
    fn on_block(&mut self, id: u32, end_stream: bool, block: &[u8]) -> Result<(), ConnError> {
        let idx = self
            .slot_of(id)
            .filter(|&i| self.slots[i].fail.is_none() && !self.slots[i].end_received);
        let State { decoder, slots, .. } = self;
        let Some(i) = idx else {
            return decoder.decode(block, |_, _| {}).map_err(|_| {
                ConnError(
                    COMPRESSION_ERROR,
                    "a response header block could not be decoded",
                )
            });
        };
        let s = &mut slots[i];
        let trailers = s.status != 0;
        let mark = s.fields.len();
        let hmark = s.hbuf.len();
        let mut status: u16 = 0;
        let mut bad: Option<&'static str> = None;
        let mut head_bytes = 0u64;
        let decoded = decoder.decode(block, |name, value| {
            if bad.is_some() {
                return;
            }
            if let Some(pseudo) = name.strip_prefix(b":") {
                if trailers || pseudo != b"status" || status != 0 || s.fields.len() != mark {
                    bad = Some("an unexpected pseudo-header in a response");
                    return;
                }
                status = match value {
                    [a @ b'1'..=b'9', b @ b'0'..=b'9', c @ b'0'..=b'9'] => {
                        (a - b'0') as u16 * 100 + (b - b'0') as u16 * 10 + (c - b'0') as u16
                    }
                    _ => {
                        bad = Some("the :status is not a 3-digit code");
                        return;
                    }
                };
                return;
            }
            if name.is_empty() || std::str::from_utf8(name).is_err() {
                bad = Some("a response header name is not valid");
                return;
            }
            if s.fields.len() >= MAX_FIELDS {
                bad = Some("too many response header fields");
                return;
            }
            head_bytes += (name.len() + value.len() + 32) as u64;
            let start = s.hbuf.len() as u32;
            s.hbuf.extend_from_slice(name);
            let mid = s.hbuf.len() as u32;
            s.hbuf.extend_from_slice(value);
            s.fields.push((start, mid, s.hbuf.len() as u32));
        });
        if decoded.is_err() {
            return Err(ConnError(
                COMPRESSION_ERROR,
                "a response header block could not be decoded",
            ));
        }
        if trailers {
            if !end_stream {
                self.malformed(i, "a second header block without END_STREAM");
            } else if let Some(why) = bad {
                let why = if why.starts_with("an unexpected pseudo") {
                    "pseudo-headers in trailers"
                } else {
                    why
                };
                self.malformed(i, why);
            } else {
                let s = &mut self.slots[i];
                s.trailers_from = Some(mark);
                s.end_received = true;
                s.wake();
            }
            return Ok(());
        }
        if bad.is_none() && status == 0 {
            bad = Some("a response without :status");
        }
        if let Some(why) = bad {
            self.malformed(i, why);
            return Ok(());
        }
        if status < 200 {
            // An interim response: skipped.
            let s = &mut self.slots[i];
            s.fields.truncate(mark);
            s.hbuf.truncate(hmark);
            if end_stream {
                self.malformed(i, "an interim (1xx) response ended the stream");
            }
            return Ok(());
        }
        let at = *self.read_at.get_or_insert_with(Moment::now);
        let s = &mut self.slots[i];
        s.status = status;
        s.head_bytes = head_bytes;
        s.first_byte_at = Some(at);
        if end_stream {
            s.end_received = true;
        }
        s.wake();
        Ok(())
    }
}

/// The payload of a frame without its padding (PADDED flag).
#[inline]
fn unpad(flags: u8, p: &[u8]) -> Result<&[u8], ConnError> {
    if flags & PADDED == 0 {
        return Ok(p);
    }
    let Some((&pad, rest)) = p.split_first() else {
        return Err(ConnError(
            FRAME_SIZE_ERROR,
            "a padded frame without its pad length",
        ));
    };
    if pad as usize > rest.len() {
        return Err(ConnError(PROTOCOL_ERROR, "padding longer than the frame"));
    }
    Ok(&rest[..rest.len() - pad as usize])
}

/// The connection's task: reads and handles frames, writes what the streams queued.
pub(crate) struct Driver<T> {
    pub io: T,
    pub st: Shared,
    rbuf: Box<[u8]>,
    start: usize,
    end: usize,
    /// Bytes of `wbuf` already written.
    wpos: usize,
    need_flush: bool,
    /// The largest frame we accept (what we announced).
    max_frame: usize,
}

impl<T: AsyncRead + AsyncWrite + Unpin> Driver<T> {
    pub(crate) fn new(io: T, st: Shared, max_frame: usize) -> Self {
        Driver {
            io,
            st,
            rbuf: vec![0; READ_BUF].into_boxed_slice(),
            start: 0,
            end: 0,
            wpos: 0,
            need_flush: false,
            max_frame,
        }
    }

    /// Handles every complete frame in the read buffer.
    fn handle_frames(&mut self, st: &mut State) -> Result<(), ConnError> {
        st.read_at = None;
        while self.end - self.start >= 9 {
            let h = &self.rbuf[self.start..self.start + 9];
            let len = (h[0] as usize) << 16 | (h[1] as usize) << 8 | h[2] as usize;
            if len > self.max_frame {
                return Err(ConnError(
                    FRAME_SIZE_ERROR,
                    "a frame larger than our MAX_FRAME_SIZE",
                ));
            }
            if self.end - self.start < 9 + len {
                break;
            }
            let (typ, flags, id) = (h[3], h[4], be32(&h[5..]) & 0x7fff_ffff);
            let p = &self.rbuf[self.start + 9..self.start + 9 + len];
            st.on_frame(typ, flags, id, p)?;
            self.start += 9 + len;
        }
        if self.start == self.end {
            self.start = 0;
            self.end = 0;
        }
        Ok(())
    }

    /// Makes room to read: moves a partial frame to the front, grows for a large frame.
    fn make_room(&mut self) {
        if self.start > 0 && self.rbuf.len() - self.end < 4096 {
            self.rbuf.copy_within(self.start..self.end, 0);
            self.end -= self.start;
            self.start = 0;
        }
        if self.end == self.rbuf.len() {
            let cap = self.max_frame + 9 + READ_BUF;
            let new_len = (self.rbuf.len() * 4).min(cap).max(self.rbuf.len());
            let mut bigger = vec![0; new_len].into_boxed_slice();
            bigger[..self.end].copy_from_slice(&self.rbuf[..self.end]);
            self.rbuf = bigger;
        }
    }

    /// Reads until the socket has nothing more.
    fn poll_reads(&mut self, cx: &mut Context<'_>, st: &mut State) {
        loop {
            if st.closed.is_some() {
                return;
            }
            self.make_room();
            let mut rb = ReadBuf::new(&mut self.rbuf[self.end..]);
            match Pin::new(&mut self.io).poll_read(cx, &mut rb) {
                Poll::Pending => return,
                Poll::Ready(Ok(())) => {
                    let n = rb.filled().len();
                    if n == 0 {
                        st.close(Closed::Eof);
                        return;
                    }
                    self.end += n;
                    st.wire_read += n as u64;
                    if let Err(e) = self.handle_frames(st) {
                        st.fail_connection(e);
                        return;
                    }
                }
                Poll::Ready(Err(e)) => {
                    let kind = e.kind();
                    st.close(Closed::Io(Some(e), kind));
                    return;
                }
            }
        }
    }

    /// Writes the write buffer out; Ready when it is all written and flushed.
    fn poll_writes(&mut self, cx: &mut Context<'_>, st: &mut State) -> Poll<io::Result<()>> {
        while self.wpos < st.wbuf.len() {
            match Pin::new(&mut self.io).poll_write(cx, &st.wbuf[self.wpos..]) {
                Poll::Pending => return Poll::Pending,
                Poll::Ready(Ok(0)) => return Poll::Ready(Err(io::ErrorKind::WriteZero.into())),
                Poll::Ready(Ok(n)) => {
                    self.wpos += n;
                    st.wire_written += n as u64;
                    self.need_flush = true;
                }
                Poll::Ready(Err(e)) => return Poll::Ready(Err(e)),
            }
        }
        if self.wpos > 0 {
            st.wbuf.clear();
            self.wpos = 0;
            st.wake_senders();
        }
        // Everything owed is on its way: the server reads what we write.
        st.unwritten_acks = 0;
        if self.need_flush {
            match Pin::new(&mut self.io).poll_flush(cx) {
                Poll::Pending => return Poll::Pending,
                Poll::Ready(Err(e)) => return Poll::Ready(Err(e)),
                Poll::Ready(Ok(())) => self.need_flush = false,
            }
        }
        Poll::Ready(Ok(()))
    }
}

impl<T: AsyncRead + AsyncWrite + Unpin> Future for Driver<T> {
    type Output = ();

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        let this = self.get_mut();
        let shared = this.st.clone();
        let mut st = shared.borrow_mut();
        let st = &mut *st;
        st.driver_notified = false;
        match &st.driver {
            Some(w) if w.will_wake(cx.waker()) => {}
            _ => st.driver = Some(cx.waker().clone()),
        }
        loop {
            this.poll_reads(cx, st);
            let written = this.poll_writes(cx, st);
            if let Poll::Ready(Err(e)) = written {
                let kind = e.kind();
                st.close(Closed::Io(Some(e), kind));
                st.wbuf.clear();
                this.wpos = 0;
                return Poll::Ready(());
            }
            if st.closed.is_some() {
                // Our GOAWAY (if any) is out or could not be: close the socket. After a
                // protocol error the GOAWAY is best effort: a server that stopped reading (a
                // flood) would otherwise keep this task and its socket forever.
                if written.is_pending() && !matches!(st.closed, Some(Closed::Protocol(_))) {
                    return Poll::Pending;
                }
                let _ = Pin::new(&mut this.io).poll_shutdown(cx);
                st.wbuf.clear();
                return Poll::Ready(());
            }
            if st.handles == 0 && st.active == 0 {
                frame::goaway(&mut st.wbuf, 0, NO_ERROR);
                st.close(Closed::Local);
                continue;
            }
            if written.is_ready() && !st.wbuf.is_empty() {
                // Frames queued while handling the reads (ACKs): write them now.
                continue;
            }
            return Poll::Pending;
        }
    }
}
