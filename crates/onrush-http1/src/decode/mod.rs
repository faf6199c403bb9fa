//! Sans-I/O response decoder: bytes in, body pieces to the sink, framing decisions out.
//!
//! Kept free of I/O so that the unit tests can feed it every possible split of a response
//! (byte by byte, all two-way splits, random splits): partial reads are where hand-written
//! clients break. The connection owns the buffer; the decoder only says how many bytes of
//! what it was shown it consumed. It consumes body bytes as soon as it sees them (so large
//! bodies stream through a fixed buffer) and never consumes part of a head (so a head split
//! across reads is simply parsed again when more has arrived).
//!
//! Framing follows RFC 9112 §6.3 for responses, as hyper's client does:
//! 1. 1xx (other than 101) are interim: skipped, the final response follows;
//!    HEAD responses, 204 and 304 have no body.
//! 2. Transfer-Encoding with `chunked` last → chunked; Transfer-Encoding without it → read until
//!    close; Transfer-Encoding in an HTTP/1.0 response → bad response.
//! 3. Content-Length (identical repeated values allowed) → that many bytes; invalid → bad.
//! 4. Otherwise the body ends when the connection closes.

mod chunked;
mod fast_head;
#[cfg(test)]
pub(crate) mod tests;

use std::mem::MaybeUninit;

use crate::{BodySink, Error, Headers, MAX_HEADERS, MAX_HEAD_BYTES};
use chunked::Chunked;

#[derive(Debug)]
enum State {
    /// Waiting for a (final or interim) response head.
    Head,
    /// Content-Length body with this many bytes still to come (> 0).
    Length(u64),
    Chunked(Chunked),
    /// Body delimited by the connection closing.
    UntilClose,
    Done,
}

/// Decodes one response. Create one per request.
#[derive(Debug)]
pub(crate) struct Decoder {
    state: State,
    head_request: bool,
    request_close: bool,
    /// `BodySink::end` was called.
    ended: bool,
    pub status: u16,
    pub keep_alive: bool,
    pub head_bytes: u64,
    pub body_bytes: u64,
    /// Wire bytes consumed so far.
    pub bytes_in: u64,
}

impl Decoder {
    /// `head_request`: the request was HEAD, so the response has no body whatever its headers
    /// say. `request_close`: we sent `Connection: close`, so the connection is not reusable.
    pub fn new(head_request: bool, request_close: bool) -> Self {
        Decoder {
            state: State::Head,
            head_request,
            request_close,
            ended: false,
            status: 0,
            keep_alive: false,
            head_bytes: 0,
            body_bytes: 0,
            bytes_in: 0,
        }
    }

    /// Consumes what it can of `input`, passing body bytes to `sink`. Returns the number of
    /// bytes consumed and whether the response is complete. When it is not complete, the
    /// unconsumed rest (a partial head) must be shown again with more bytes appended.
    /// When it is complete, the unconsumed rest is not part of it (the connection refuses
    /// it: no request asked for it).
    pub fn feed(&mut self, input: &[u8], sink: &mut impl BodySink) -> Result<(usize, bool), Error> {
        let mut pos = 0;
        let done = loop {
            let rest = &input[pos..];
            match &mut self.state {
                State::Head => match self.parse_head(rest, sink)? {
                    Some(n) => pos += n,
                    None => break false,
                },
                State::Length(remaining) => {
                    let take = (*remaining).min(rest.len() as u64) as usize;
                    if take > 0 {
                        sink.data(&rest[..take]);
                    }
                    pos += take;
                    *remaining -= take as u64;
                    self.body_bytes += take as u64;
                    if *remaining > 0 {
                        break false;
                    }
                    self.state = State::Done;
                }
                State::Chunked(c) => {
                    let (n, done) = c.decode(rest, sink, &mut self.body_bytes)?;
                    pos += n;
                    if !done {
                        break false;
                    }
                    self.state = State::Done;
                }
                State::UntilClose => {
                    if !rest.is_empty() {
                        sink.data(rest);
                    }
                    self.body_bytes += rest.len() as u64;
                    pos = input.len();
                    break false;
                }
                State::Done => {
                    if !self.ended {
                        self.ended = true;
                        sink.end();
                    }
                    break true;
                }
            }
        };
        self.bytes_in += pos as u64;
        Ok((pos, done))
    }

    /// The connection reached EOF. `unconsumed` is how many bytes were shown but not consumed
    /// (a partial head). Completes a close-delimited body; anything else ended too early.
    pub fn eof(&mut self, unconsumed: usize, sink: &mut impl BodySink) -> Result<(), Error> {
        match &self.state {
            State::UntilClose => {
                self.state = State::Done;
                if !self.ended {
                    self.ended = true;
                    sink.end();
                }
                Ok(())
            }
            State::Done => Ok(()),
            State::Head if unconsumed == 0 && self.head_bytes == 0 => Err(Error::closed_early(
                "the server closed the connection without sending a response",
            )),
            State::Head if unconsumed == 0 => Err(Error::closed_early(
                "the server closed the connection after an interim (1xx) response, \
                 before the final one",
            )),
            State::Head => Err(Error::closed_early(
                "the server closed the connection in the middle of the response head",
            )),
            State::Length(remaining) => Err(Error::closed_early(format!(
                "the server closed the connection {remaining} bytes before the end of the body \
                 (Content-Length {}, got {})",
                self.body_bytes + remaining,
                self.body_bytes
            ))),
            State::Chunked(_) => Err(Error::closed_early(format!(
                "the server closed the connection in the middle of a chunked body (after {} body bytes)",
                self.body_bytes
            ))),
        }
    }

    /// Parses a head at the start of `input`. Returns its length when complete, `None` when
    /// more bytes are needed, and sets up the body state.
    fn parse_head(
        &mut self,
        input: &[u8],
        sink: &mut impl BodySink,
    ) -> Result<Option<usize>, Error> {
        // The common head is parsed by hand (fast_head.rs); anything else by httparse.
        // Both arrays uninitialised: the parser writes the lines it finds, and zeroing them
        // cost more than parsing a short line.
        let mut fast_headers =
            [MaybeUninit::<httparse::Header<'_>>::uninit(); fast_head::FAST_HEADERS];
        let mut headers = [MaybeUninit::<httparse::Header<'_>>::uninit(); MAX_HEADERS];
        let mut resp = httparse::Response::new(&mut []);
        let mut framing = Framing::default();
        let mut general = false;
        let (version, status, n, parsed_headers) =
            match fast_head::parse(input, &mut fast_headers, &mut framing) {
                Some((head, lines)) => (head.version, head.status, head.len, lines),
                None => {
                    let n = match httparse::ParserConfig::default()
                        .parse_response_with_uninit_headers(&mut resp, input, &mut headers)
                    {
                        Ok(httparse::Status::Complete(n)) if n <= MAX_HEAD_BYTES => n,
                        Ok(_) if input.len() >= MAX_HEAD_BYTES => {
                            return Err(Error::bad("the response head is larger than 64 KiB"))
                        }
                        Ok(httparse::Status::Partial) => return Ok(None),
                        Ok(httparse::Status::Complete(_)) => {
                            unreachable!("covered by the guard above")
                        }
                        Err(e) => {
                            return Err(Error::bad(format!(
                                "{}; the response began {}",
                                head_error(e),
                                show_start(input)
                            )))
                        }
                    };
                    // The fast path may have seen some lines before it stepped aside; the
                    // lines are read below, once the status says they count.
                    framing = Framing::default();
                    general = true;
                    (
                        resp.version.unwrap_or(1),
                        resp.code.unwrap_or(0),
                        n,
                        &*resp.headers,
                    )
                }
            };
        self.head_bytes += n as u64;
        match status {
            0..=99 => return Err(Error::bad("the response status code is below 100")),
            101 => {
                return Err(Error::bad(
                    "the server switched protocols (101) though no upgrade was requested",
                ))
            }
            100..=199 => return Ok(Some(n)), // interim (100 Continue, 103 Early Hints): skip
            _ => {}
        }
        self.status = status;
        if general {
            for h in parsed_headers {
                framing.header(h.name.as_bytes(), h.value)?;
            }
        }
        let Framing {
            close,
            keep_alive_token,
            te_present,
            te_chunked,
            content_length,
        } = framing;

        self.keep_alive = !close && !self.request_close && (version == 1 || keep_alive_token);
        self.state = if self.head_request || status == 204 || status == 304 {
            State::Done
        } else if te_present {
            if version == 0 {
                return Err(Error::bad(
                    "an HTTP/1.0 response must not have a Transfer-Encoding header",
                ));
            }
            if content_length.is_some() {
                // Both: Transfer-Encoding wins, but the framing is suspect; don't reuse.
                self.keep_alive = false;
            }
            if te_chunked {
                State::Chunked(Chunked::default())
            } else {
                self.keep_alive = false;
                State::UntilClose
            }
        } else {
            match content_length {
                Some(0) => State::Done,
                Some(len) => State::Length(len),
                None => {
                    self.keep_alive = false;
                    State::UntilClose
                }
            }
        };
        sink.head(status, &Headers::new(parsed_headers));
        Ok(Some(n))
    }
}

/// What the framing headers of a head say, gathered line by line: by the fast path as it
/// scans, or by a loop over httparse's lines.
#[derive(Debug, Default, PartialEq, Eq)]
struct Framing {
    close: bool,
    keep_alive_token: bool,
    te_present: bool,
    te_chunked: bool,
    content_length: Option<u64>,
}

impl Framing {
    /// Takes one header line into account. Only a final (2xx-5xx) head's lines count: an
    /// interim head's Content-Length, however malformed, is never read. Inlined: a call per
    /// line cost ~16 instructions of saving and restoring registers.
    #[inline(always)]
    fn header(&mut self, name: &[u8], value: &[u8]) -> Result<(), Error> {
        // The length first: most lines are none of the three and cost one compare.
        match name.len() {
            10 if named(name, b"connection") => {
                for token in value.split(|&b| b == b',') {
                    let token = trim(token);
                    self.close |= token.eq_ignore_ascii_case(b"close");
                    self.keep_alive_token |= token.eq_ignore_ascii_case(b"keep-alive");
                }
            }
            14 if named(name, b"content-length") => {
                let n = parse_content_length(value)?;
                if self.content_length.is_some_and(|prev| prev != n) {
                    return Err(Error::bad(
                        "the response has several different Content-Length values",
                    ));
                }
                self.content_length = Some(n);
            }
            17 if named(name, b"transfer-encoding") => {
                self.te_present = true;
                // Only the last coding of the last field decides (RFC 9112 §6.3).
                let last = value.rsplit(|&b| b == b',').next().unwrap_or(b"");
                self.te_chunked = trim(last).eq_ignore_ascii_case(b"chunked");
            }
            _ => {}
        }
        Ok(())
    }
}

/// Whether `name` is `lower` in any case. `lower` is at least 8 bytes of lower-case letters and
/// `-`, a constant once inlined: compared eight bytes at a time (three or four instructions a
/// word) rather than byte by byte (`eq_ignore_ascii_case` cost ~100 instructions a response).
#[inline(always)]
fn named<const N: usize>(name: &[u8], lower: &[u8; N]) -> bool {
    const ONES: u64 = 0x0101_0101_0101_0101;
    let Ok(name) = <&[u8; N]>::try_from(name) else {
        return false;
    };
    let word =
        |s: &[u8; N], at: usize| u64::from_le_bytes(s[at..at + 8].try_into().expect("8 bytes"));
    let mut at = 0;
    while at < N {
        // The last word overlaps the one before it when N is not a multiple of 8.
        let start = at.min(N - 8);
        let want = word(lower, start);
        // Bit 5 set in the letters' bytes only (bit 6 marks a lower-case letter, not `-`):
        // setting it lower-cases exactly the upper-case letters, and no other byte becomes a
        // letter; the `-` bytes must match exactly.
        let letters = (want & (ONES * 0x40)) >> 1;
        if word(name, start) | letters != want {
            return false;
        }
        at += 8;
    }
    true
}

/// Strips optional whitespace (SP / HTAB) around a list element.
fn trim(mut s: &[u8]) -> &[u8] {
    while let [b' ' | b'\t', rest @ ..] = s {
        s = rest;
    }
    while let [rest @ .., b' ' | b'\t'] = s {
        s = rest;
    }
    s
}

/// Content-Length: 1*DIGIT, or a list of identical values ("5, 5"), which RFC 9110 §8.6
/// lets a recipient accept.
#[inline(always)]
fn parse_content_length(value: &[u8]) -> Result<u64, Error> {
    // What nearly every response sends: one value of at most 19 digits (no overflow), read in
    // one pass; the rest out of line, so that the common case stays small enough to inline.
    if !value.is_empty() && value.len() <= 19 {
        let mut n: u64 = 0;
        let mut digits = true;
        for &b in value {
            let d = b.wrapping_sub(b'0');
            digits &= d <= 9;
            // Wrapping: a non-digit's value is thrown away, but must not overflow first.
            n = n.wrapping_mul(10).wrapping_add(u64::from(d));
        }
        if digits {
            return Ok(n);
        }
    }
    content_length_list(value)
}

/// [`parse_content_length`] beyond one short number: a list, spaces, long or invalid values.
#[cold]
#[inline(never)]
fn content_length_list(value: &[u8]) -> Result<u64, Error> {
    let mut result: Option<u64> = None;
    for part in value.split(|&b| b == b',') {
        let part = trim(part);
        if part.is_empty() || !part.iter().all(u8::is_ascii_digit) {
            return Err(Error::bad("the response has an invalid Content-Length"));
        }
        let mut n: u64 = 0;
        for &d in part {
            n = n
                .checked_mul(10)
                .and_then(|n| n.checked_add(u64::from(d - b'0')))
                .ok_or_else(|| Error::bad("the response's Content-Length is too large"))?;
        }
        if result.is_some_and(|prev| prev != n) {
            return Err(Error::bad(
                "the response has several different Content-Length values",
            ));
        }
        result = Some(n);
    }
    result.ok_or_else(|| Error::bad("the response has an invalid Content-Length"))
}

/// A byte as a person reads it: `'x'` when printable, else `0x1f`.
pub(crate) fn show_byte(b: u8) -> String {
    if b.is_ascii_graphic() || b == b' ' {
        format!("'{}' (0x{b:02x})", b as char)
    } else {
        format!("0x{b:02x}")
    }
}

/// The first bytes of a response (up to 48, escaped), enough to tell TLS (`\x16\x03`), HTTP/2
/// (`\x00\x00`), another protocol's banner or a mangled status line apart.
fn show_start(input: &[u8]) -> String {
    const SHOWN: usize = 48;
    let head = &input[..input.len().min(SHOWN)];
    let mut text = String::with_capacity(head.len() + 8);
    text.push('"');
    text.extend(
        head.iter()
            .flat_map(|&b| std::ascii::escape_default(b).map(char::from)),
    );
    text.push('"');
    if input.len() > SHOWN {
        text.push_str("...");
    }
    text
}

fn head_error(e: httparse::Error) -> &'static str {
    match e {
        httparse::Error::HeaderName => "bad response head: invalid header name",
        httparse::Error::HeaderValue => "bad response head: invalid header value",
        httparse::Error::NewLine => "bad response head: invalid line ending",
        httparse::Error::Status => "bad response head: invalid status line",
        httparse::Error::Token => "bad response head: invalid token",
        httparse::Error::TooManyHeaders => "bad response head: more than 64 header lines",
        httparse::Error::Version => {
            "bad response head: not an HTTP/1.x status line (expected e.g. \"HTTP/1.1 200 OK\")"
        }
    }
}
