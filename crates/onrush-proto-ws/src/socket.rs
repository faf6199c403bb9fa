//! A client's WebSocket over a [`Transport`]: the opening handshake, then messages — frames
//! assembled from fragments, inflated when permessage-deflate was agreed, control frames
//! answered (a ping with its pong, a close with its echo) — all checked as RFC 6455 and 7692
//! require of a server. Anything a server may not send is `bad_response`, with its reason kept
//! as the class's example.
//!
//! **Why onrush's own codec** (it used tungstenite before): tungstenite 0.30 has no
//! permessage-deflate; it zero-fills its read buffer before every read (72% of an echo
//! worker's instructions at its default size, docs/benchmarks.md); and it keeps the buffer of
//! its handshake for the socket's life, 4 KiB of each idle socket. Here a message's payload is
//! read in place and given to the step without a copy when it came in one frame; the read
//! buffer exists only while it holds bytes, so an idle socket holds no buffer at all.

use std::future::poll_fn;
use std::hash::{BuildHasher, RandomState};
use std::ops::Range;
use std::task::Poll;

use onrush_protocol::{failure_examples, io_failure, FailureClass};
use tokio::io::ReadBuf;

use crate::deflate::{Deflate, InflateError};
use crate::frame::{self, BINARY, CLOSE, CONTINUATION, CONTROL_MAX, PING, PONG, TEXT};
use crate::handshake::{self, Offer};
use crate::transport::Transport;

/// Bytes read from the socket at a time (a VU holds one socket among thousands).
pub(crate) const READ_BUFFER: usize = 8 * 1024;

/// What [`Socket::next`] received; the payload is [`Socket::payload`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    Text,
    Binary,
    Pong,
    /// A close frame, with its code if it had one (its reason is the payload after the code).
    Close(Option<u16>),
}

/// What the handshake's response said, for the step's extractors and checks.
pub(crate) struct Response<'a> {
    pub status: u16,
    pub headers: &'a [(&'a str, &'a [u8])],
}

pub(crate) struct Socket {
    io: Transport,
    /// Bytes read; `rbuf[at..]` not yet taken. Freed whenever it is drained and the socket
    /// has nothing more to read.
    rbuf: Vec<u8>,
    at: usize,
    /// Where the last message's payload is.
    last: Last,
    /// A message assembled from fragments, or inflated.
    message: Vec<u8>,
    /// A fragmented message begun: its opcode and whether it is compressed.
    fragmented: Option<(u8, bool)>,
    /// A frame being written; a compressed message.
    wbuf: Vec<u8>,
    scratch: Vec<u8>,
    max_message: usize,
    deflate: Option<Deflate>,
    close_sent: bool,
    /// The masking keys' generator (splitmix64, seeded from the process's random keys).
    rng: u64,
}

enum Last {
    Read(Range<usize>),
    Message,
}

/// A failure the server caused, with why.
fn bad(reason: impl Into<String>) -> FailureClass {
    let reason = reason.into();
    failure_examples::note(FailureClass::BadResponse, || format!("WebSocket: {reason}"));
    FailureClass::BadResponse
}

impl Socket {
    /// Sends the upgrade request and reads the response; `on_response` sees its status and
    /// headers, whatever the status. Any status but 101 is a failure of its class.
    pub(crate) async fn open(
        io: Transport,
        offer: &Offer<'_>,
        max_message: usize,
        on_response: impl FnOnce(Response<'_>),
    ) -> Result<Socket, FailureClass> {
        let mut rng = RandomState::new().hash_one(std::time::Instant::now());
        let mut nonce = [0u8; 16];
        nonce[..8].copy_from_slice(&splitmix(&mut rng).to_le_bytes());
        nonce[8..].copy_from_slice(&splitmix(&mut rng).to_le_bytes());
        let key = handshake::key(nonce);
        let mut socket = Socket {
            io,
            rbuf: Vec::new(),
            at: 0,
            last: Last::Read(0..0),
            message: Vec::new(),
            fragmented: None,
            wbuf: Vec::new(),
            scratch: Vec::new(),
            max_message,
            deflate: None,
            close_sent: false,
            rng,
        };
        handshake::write_request(offer, &key, &mut socket.wbuf);
        socket
            .io
            .write_all(&socket.wbuf)
            .await
            .map_err(io_failure)?;
        socket.wbuf = Vec::new();
        loop {
            match handshake::parse_head(&socket.rbuf).map_err(bad)? {
                Some(head) => {
                    on_response(Response {
                        status: head.status,
                        headers: &head.headers,
                    });
                    match head.status {
                        101 => {}
                        400..=499 => return Err(FailureClass::Http4xx),
                        500..=599 => return Err(FailureClass::Http5xx),
                        _ => return Err(FailureClass::UnexpectedStatus),
                    }
                    let agreed = handshake::check(&head, offer, &key).map_err(bad)?;
                    socket.at = head.len;
                    socket.deflate = agreed.deflate.map(Deflate::new);
                    return Ok(socket);
                }
                None => socket.fill(1).await?,
            }
        }
    }

    /// The payload of the last message [`next`](Self::next) returned.
    pub(crate) fn payload(&self) -> &[u8] {
        match &self.last {
            Last::Read(range) => &self.rbuf[range.clone()],
            Last::Message => &self.message,
        }
    }

    /// The bytes counted since [`count_from_zero`](Self::count_from_zero): (in, out).
    pub(crate) fn counted(&self) -> (u64, u64) {
        self.io.counted
    }

    pub(crate) fn count_from_zero(&mut self) {
        self.io.counted = (0, 0);
    }

    /// The next message or pong or close; a ping is answered on the way. The end of the
    /// connection without a close frame is `closed_early`.
    pub(crate) async fn next(&mut self) -> Result<Kind, FailureClass> {
        let next = self.next_or_end().await;
        if next == Err(FailureClass::ClosedEarly) {
            failure_examples::note(FailureClass::ClosedEarly, || {
                "WebSocket: the server ended the connection without a close frame".into()
            });
        }
        next
    }

    /// [`next`](Self::next), the end of the connection not noted as a failure (after a close
    /// handshake it is the expected end).
    async fn next_or_end(&mut self) -> Result<Kind, FailureClass> {
        loop {
            let parsed = frame::parse_header(
                &self.rbuf[self.at..],
                self.max_message,
                self.deflate.is_some(),
            )
            .map_err(bad)?;
            let header = match parsed {
                Some(h) if self.rbuf.len() - self.at >= h.frame_len() => h,
                Some(h) => {
                    self.fill(h.frame_len()).await?;
                    continue;
                }
                None => {
                    self.fill(1).await?;
                    continue;
                }
            };
            let start = self.at + header.header_len;
            let payload = start..start + header.payload_len;
            self.at = payload.end;
            match header.opcode {
                PING => {
                    let mut copy = [0u8; CONTROL_MAX];
                    let n = payload.len();
                    copy[..n].copy_from_slice(&self.rbuf[payload]);
                    self.send(PONG, &copy[..n]).await?;
                }
                PONG => {
                    self.last = Last::Read(payload);
                    return Ok(Kind::Pong);
                }
                CLOSE => {
                    let code = close_code(&self.rbuf[payload.clone()]).map_err(bad)?;
                    if !self.close_sent {
                        // The echo of §5.5.1; the socket ends whether it is written or not.
                        let echo = code.map(u16::to_be_bytes);
                        let _ = self.send(CLOSE, echo.as_ref().map_or(&[][..], |c| c)).await;
                    }
                    self.last = Last::Read(payload);
                    return Ok(Kind::Close(code));
                }
                TEXT | BINARY if self.fragmented.is_some() => {
                    return Err(bad("a new message began inside a fragmented one"))
                }
                TEXT | BINARY if header.fin && !header.rsv1 => {
                    if header.opcode == TEXT
                        && std::str::from_utf8(&self.rbuf[payload.clone()]).is_err()
                    {
                        return Err(bad("a text message that is not UTF-8"));
                    }
                    self.last = Last::Read(payload);
                    return Ok(kind_of(header.opcode));
                }
                TEXT | BINARY => {
                    self.message.clear();
                    self.fragmented = Some((header.opcode, header.rsv1));
                    if let Some(kind) = self.fragment(payload, header.fin)? {
                        return Ok(kind);
                    }
                }
                _ => {
                    debug_assert_eq!(header.opcode, CONTINUATION);
                    if self.fragmented.is_none() {
                        return Err(bad("a continuation frame with no message begun"));
                    }
                    if header.rsv1 {
                        return Err(bad("RSV1 set on a continuation frame"));
                    }
                    if let Some(kind) = self.fragment(payload, header.fin)? {
                        return Ok(kind);
                    }
                }
            }
        }
    }

    /// Adds a data frame's payload to the message begun; with the last one, the message.
    fn fragment(&mut self, payload: Range<usize>, fin: bool) -> Result<Option<Kind>, FailureClass> {
        let (opcode, compressed) = self.fragmented.expect("a message begun");
        if self.message.len() + payload.len() > self.max_message {
            return Err(bad("a message longer than max_message"));
        }
        if !fin {
            self.message.extend_from_slice(&self.rbuf[payload]);
            return Ok(None);
        }
        self.fragmented = None;
        if compressed {
            let deflate = self.deflate.as_mut().expect("RSV1 is refused without it");
            // The input: this frame alone, or the fragments before it and this one.
            let input: &[u8] = if self.message.is_empty() {
                &self.rbuf[payload]
            } else {
                self.message.extend_from_slice(&self.rbuf[payload]);
                std::mem::swap(&mut self.message, &mut self.scratch);
                &self.scratch
            };
            self.message.clear();
            deflate
                .decompress(input, &mut self.message, self.max_message)
                .map_err(|e| match e {
                    InflateError::TooLong => bad("a message that inflates past max_message"),
                    InflateError::Corrupt => bad("a compressed message that does not inflate"),
                })?;
            self.scratch.clear();
            shrink(&mut self.scratch);
        } else {
            self.message.extend_from_slice(&self.rbuf[payload]);
        }
        if opcode == TEXT && std::str::from_utf8(&self.message).is_err() {
            return Err(bad("a text message that is not UTF-8"));
        }
        self.last = Last::Message;
        Ok(Some(kind_of(opcode)))
    }

    /// Sends one frame: a data message (compressed when permessage-deflate was agreed), or a
    /// control frame.
    pub(crate) async fn send(&mut self, opcode: u8, payload: &[u8]) -> Result<(), FailureClass> {
        let mask = splitmix(&mut self.rng).to_le_bytes();
        let mask = [mask[0], mask[1], mask[2], mask[3]];
        self.wbuf.clear();
        match &mut self.deflate {
            Some(deflate) if opcode == TEXT || opcode == BINARY => {
                self.scratch.clear();
                deflate.compress(payload, &mut self.scratch);
                frame::encode(&mut self.wbuf, opcode, true, &self.scratch, mask);
                shrink(&mut self.scratch);
            }
            _ => frame::encode(&mut self.wbuf, opcode, false, payload, mask),
        }
        if opcode == CLOSE {
            self.close_sent = true;
        }
        let written = self.io.write_all(&self.wbuf).await.map_err(io_failure);
        shrink(&mut self.wbuf);
        written
    }

    /// Sends a close frame with `code` (unless one was sent) and reads until the server's,
    /// then until the server ends the connection (it keeps the TIME_WAIT, §7.1.1). The server's
    /// close frame (its code, and its payload), `None` when the connection ended without one.
    pub(crate) async fn close(
        &mut self,
        code: u16,
    ) -> Result<Option<(Option<u16>, Vec<u8>)>, FailureClass> {
        if !self.close_sent {
            self.send(CLOSE, &code.to_be_bytes()).await?;
        }
        let mut theirs = None;
        loop {
            match self.next_or_end().await {
                Ok(Kind::Close(code)) if theirs.is_none() => {
                    theirs = Some((code, self.payload().to_vec()))
                }
                Ok(_) => {}
                Err(_) => return Ok(theirs),
            }
        }
    }

    /// Reads once more from the socket, with room for `need` bytes past `at`.
    async fn fill(&mut self, need: usize) -> Result<(), FailureClass> {
        if self.at == self.rbuf.len() {
            self.rbuf.clear();
        } else if self.at > 0 {
            self.rbuf.drain(..self.at);
        }
        self.at = 0;
        let room = need.saturating_sub(self.rbuf.len()).max(READ_BUFFER);
        let rbuf = &mut self.rbuf;
        let io = &mut self.io;
        let n = poll_fn(|cx| {
            if rbuf.capacity() - rbuf.len() < room.min(READ_BUFFER) {
                rbuf.reserve(room);
            }
            let mut read = ReadBuf::uninit(rbuf.spare_capacity_mut());
            match io.poll_read(cx, &mut read) {
                Poll::Ready(Ok(())) => {
                    let n = read.filled().len();
                    // SAFETY: the read initialised the first `n` bytes of the spare capacity.
                    unsafe { rbuf.set_len(rbuf.len() + n) };
                    Poll::Ready(Ok(n))
                }
                Poll::Ready(Err(e)) => Poll::Ready(Err(e)),
                Poll::Pending => {
                    // Waiting with nothing held: an idle socket holds no buffer.
                    if rbuf.is_empty() {
                        *rbuf = Vec::new();
                    }
                    Poll::Pending
                }
            }
        })
        .await
        .map_err(io_failure)?;
        if n == 0 {
            return Err(FailureClass::ClosedEarly);
        }
        Ok(())
    }
}

fn kind_of(opcode: u8) -> Kind {
    if opcode == TEXT {
        Kind::Text
    } else {
        Kind::Binary
    }
}

/// A close frame's code (§5.5.1, §7.4): none, or one a server may send; the reason UTF-8.
fn close_code(payload: &[u8]) -> Result<Option<u16>, String> {
    match payload {
        [] => Ok(None),
        [_] => Err("a close frame of one byte".into()),
        [a, b, reason @ ..] => {
            let code = u16::from_be_bytes([*a, *b]);
            if !matches!(code, 1000..=1003 | 1007..=1014 | 3000..=4999) {
                return Err(format!(
                    "close code {code}, which a close frame may not carry"
                ));
            }
            if std::str::from_utf8(reason).is_err() {
                return Err("a close reason that is not UTF-8".into());
            }
            Ok(Some(code))
        }
    }
}

/// Frees a buffer grown past [`READ_BUFFER`] by a large message: an idle socket keeps none.
fn shrink(buf: &mut Vec<u8>) {
    if buf.capacity() > READ_BUFFER {
        *buf = Vec::new();
    }
}

/// splitmix64: masking keys need not be secret from the client's own user, only unpredictable
/// to a proxy (RFC 6455 §10.3); seeded per socket from the process's random hash keys.
fn splitmix(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::transport::Io;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    use tokio::net::{TcpListener, TcpStream};

    #[test]
    fn close_codes_are_checked() {
        assert_eq!(close_code(b""), Ok(None));
        assert_eq!(close_code(&[0x03, 0xE8]), Ok(Some(1000)));
        assert_eq!(close_code(&[0x0F, 0xA1, b'b', b'y', b'e']), Ok(Some(4001)));
        for bad in [
            &[0x03][..],
            &[0x03, 0xED],
            &[0x03, 0xEE],
            &[0x07, 0xD0],
            &[0x03, 0xE8, 0xFF],
        ] {
            assert!(close_code(bad).is_err(), "{bad:?}");
        }
    }

    /// A scripted server (raw bytes on a socket): the client's handshake accepted, then
    /// `frames` written in pieces of `step` bytes; the messages the client reads, in order.
    async fn read_from(
        frames: Vec<u8>,
        step: usize,
        max: usize,
    ) -> Vec<Result<(Kind, Vec<u8>), FailureClass>> {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let pinged = frames.windows(3).any(|w| w == [0x89, 0x02, b'p']);
        let server = tokio::spawn(async move {
            let (mut peer, _) = listener.accept().await.unwrap();
            let mut head = Vec::new();
            while !head.ends_with(b"\r\n\r\n") {
                let mut b = [0u8; 1];
                peer.read_exact(&mut b).await.unwrap();
                head.push(b[0]);
            }
            let text = String::from_utf8(head).unwrap();
            let key = text
                .lines()
                .find_map(|l| l.strip_prefix("Sec-WebSocket-Key: "))
                .unwrap();
            let response = format!(
                "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: {}\r\n\r\n",
                handshake::accept_key(key)
            );
            peer.write_all(response.as_bytes()).await.unwrap();
            for piece in frames.chunks(step) {
                peer.write_all(piece).await.unwrap();
                tokio::time::sleep(std::time::Duration::from_millis(1)).await;
            }
            // The server's side ends; then whatever the client sends back (pongs), until it
            // hangs up.
            peer.shutdown().await.unwrap();
            let mut sink = Vec::new();
            let _ = peer.read_to_end(&mut sink).await;
            sink
        });
        let io = Transport::new(Io::Plain(TcpStream::connect(addr).await.unwrap()));
        let offer = Offer {
            authority: "127.0.0.1",
            target: "/",
            headers: &[],
            subprotocols: &[],
            deflate: false,
        };
        let mut socket = Socket::open(io, &offer, max, |r| assert_eq!(r.status, 101))
            .await
            .unwrap();
        let mut got = Vec::new();
        loop {
            match socket.next().await {
                Ok(kind) => got.push(Ok((kind, socket.payload().to_vec()))),
                Err(e) => {
                    got.push(Err(e));
                    break;
                }
            }
            if matches!(got.last(), Some(Ok((Kind::Close(_), _)))) {
                break;
            }
        }
        drop(socket);
        let back = server.await.unwrap();
        // Each ping was answered by a masked pong carrying its payload.
        let pongs = back.windows(2).filter(|w| w == &[0x8A, 0x82]).count();
        if pinged {
            assert_eq!(pongs, 1, "{back:?}");
        }
        got
    }

    #[tokio::test]
    async fn fragments_pings_and_close_read_as_the_rfc_says_in_any_pieces() {
        let mut frames = Vec::new();
        frames.extend_from_slice(&[0x81, 0x05]);
        frames.extend_from_slice(b"Hello");
        // A fragmented text message with a ping between its fragments (§5.4).
        frames.extend_from_slice(&[0x01, 0x03]);
        frames.extend_from_slice(b"Hel");
        frames.extend_from_slice(&[0x89, 0x02, b'p', b'!']);
        frames.extend_from_slice(&[0x80, 0x02]);
        frames.extend_from_slice(b"lo");
        // 300 bytes binary, a 16-bit length.
        frames.extend_from_slice(&[0x82, 0x7E, 0x01, 0x2C]);
        frames.extend((0..300).map(|i| i as u8));
        frames.extend_from_slice(&[0x88, 0x05, 0x0F, 0xA1, b'b', b'y', b'e']);
        for step in [1, 3, 7, 1000] {
            let got = read_from(frames.clone(), step, 1 << 20).await;
            let kinds: Vec<_> = got.iter().map(|r| r.as_ref().map(|(k, _)| *k)).collect();
            assert_eq!(
                kinds,
                [
                    Ok(Kind::Text),
                    Ok(Kind::Text),
                    Ok(Kind::Binary),
                    Ok(Kind::Close(Some(4001)))
                ],
                "pieces of {step}"
            );
            let payloads: Vec<_> = got.iter().map(|r| r.as_ref().unwrap().1.clone()).collect();
            assert_eq!(payloads[0], b"Hello");
            assert_eq!(payloads[1], b"Hello");
            assert_eq!(payloads[2], (0..300).map(|i| i as u8).collect::<Vec<_>>());
            assert_eq!(&payloads[3][2..], b"bye");
        }
    }

    #[tokio::test]
    async fn what_a_server_may_not_send_fails_as_a_bad_response() {
        let cases: [&[u8]; 5] = [
            &[0x8F, 0x00],                   // reserved opcode
            &[0x80, 0x01, b'x'],             // continuation with nothing begun
            &[0x01, 0x01, b'x', 0x81, 0x00], // a new message inside a fragmented one
            &[0x81, 0x02, 0xC3, 0x28],       // text that is not UTF-8
            &[0x82, 0x7E, 0x10, 0x00],       // 4096 bytes announced, max 1024
        ];
        for frames in cases {
            let got = read_from(frames.to_vec(), 1000, 1024).await;
            assert_eq!(
                got.last(),
                Some(&Err(FailureClass::BadResponse)),
                "{frames:?}"
            );
        }
        // A frame cut short by the end of the connection.
        let got = read_from(vec![0x81, 0x64, b'y', b'y'], 1000, 1024).await;
        assert_eq!(got, [Err(FailureClass::ClosedEarly)]);
    }
}
