//! Streaming decompression of response bodies: [`Decompress`] wraps the caller's [`BodySink`]
//! and, per response, picks the decoder from `Content-Encoding` at `head` time.
//!
//! Each piece of the compressed body is inflated at once, piece by piece, into one fixed
//! 32 KiB output buffer, whose contents go to the inner sink: memory does not grow with the
//! body (the decoders' own state is bounded by the format's window: 32 KiB for gzip and
//! deflate, at most 16 MiB for brotli, 4 MiB with common encoder settings).

use std::fmt;

use brotli_decompressor::{BrotliDecompressStream, BrotliResult, BrotliState, StandardAlloc};
use flate2::{FlushDecompress, Status};

use crate::{BodySink, Headers};

/// Decoded output buffer size.
const OUT: usize = 32 * 1024;

/// The content coding of a response, from its `Content-Encoding` header.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Encoding {
    /// No `Content-Encoding` (or `identity`): the body passes through.
    #[default]
    Identity,
    /// `gzip` (or `x-gzip`), RFC 1952, CRC and length checked; concatenated members are
    /// decoded one after the other; bytes after the last complete member are ignored.
    Gzip,
    /// `deflate`: zlib-wrapped (RFC 1950) as the standard says, or raw deflate (RFC 1951) when
    /// the body doesn't start with a zlib header, as browsers accept.
    Deflate,
    /// `br`, RFC 7932.
    Brotli,
    /// A coding not supported here, or several codings: the body passes through undecoded.
    Unsupported,
}

/// A [`BodySink`] adaptor that decodes `Content-Encoding: gzip`, `deflate` and `br` bodies
/// as they stream in and gives the decoded bytes to the inner sink (`head` and `end` are
/// forwarded too, the head unchanged). Reuse one for every request: its buffers are kept.
///
/// Corrupt or truncated compressed data never panics: decoding stops, the inner sink gets
/// nothing more for that response, and [`error`](Self::error) says what went wrong until the
/// next response's head.
///
/// With an HTTP/1.1 connection (onrush-http1; HTTP/2's `H2Connection::send` is the same):
///
/// ```text
/// use onrush_http1::{Decompress, Discard};
/// let mut sink = Decompress::new(Discard);
/// let resp = conn.send(&req, &mut sink).await?;
/// if let Some(e) = sink.error() { eprintln!("bad body: {e}"); }
/// println!("{} wire body bytes, {} decoded", resp.body_bytes, sink.decoded_bytes());
/// ```
///
/// What a connection does with it, by hand: the head first, then the body as it arrives.
///
/// ```
/// use onrush_http::{BodySink, Decompress, Headers};
/// let raw = [httparse::Header { name: "Content-Encoding", value: b"deflate" }];
/// let mut sink = Decompress::new(Vec::new());
/// sink.head(200, &Headers::new(&raw));
/// sink.data(&[0x78, 0x9c, 0xcb, 0x48, 0xcd, 0xc9, 0xc9, 0x07, 0x00, 0x06, 0x2c, 0x02, 0x15]);
/// sink.end();
/// assert_eq!(sink.error(), None);
/// assert_eq!(sink.decoded_bytes(), 5); // "hello"
/// ```
pub struct Decompress<S> {
    inner: S,
    encoding: Encoding,
    codec: Codec,
    /// Kept across responses (allocated on the first compressed one).
    inflater: Option<flate2::Decompress>,
    out: Vec<u8>,
    error: Option<String>,
    decoded: u64,
    encoded: u64,
}

enum Codec {
    /// Identity or unsupported: pass through.
    Pass,
    Gzip(Gzip),
    /// Deflate: the first two bytes decide between zlib and raw.
    DeflateSniff {
        buf: [u8; 2],
        have: usize,
    },
    Deflate {
        done: bool,
    },
    Brotli {
        state: Box<BrotliState<StandardAlloc, StandardAlloc, StandardAlloc>>,
        done: bool,
    },
    /// After an error: drop the rest.
    Failed,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum GzPhase {
    /// Collecting the 10-byte fixed header.
    Fixed,
    ExtraLen,
    Extra(usize),
    Name,
    Comment,
    HeaderCrc,
    Body,
    /// Collecting the 8-byte trailer.
    Trailer,
    /// A member is complete; more bytes start another one.
    MemberDone,
    /// Bytes after the last member that are not a gzip member: ignored.
    Trailing,
}

struct Gzip {
    phase: GzPhase,
    /// Header / trailer bytes being collected.
    buf: [u8; 10],
    have: usize,
    flags: u8,
    crc: crc32fast::Hasher,
    size: u32,
    members: u32,
    /// The inflater was reset for this member's body.
    body_started: bool,
}

const FHCRC: u8 = 2;
const FEXTRA: u8 = 4;
const FNAME: u8 = 8;
const FCOMMENT: u8 = 16;

impl Gzip {
    fn new() -> Self {
        Gzip {
            phase: GzPhase::Fixed,
            buf: [0; 10],
            have: 0,
            flags: 0,
            crc: crc32fast::Hasher::new(),
            size: 0,
            members: 0,
            body_started: false,
        }
    }

    /// The header phase that follows `after`, given the flags.
    fn next_phase(&self, after: GzPhase) -> GzPhase {
        let order = [
            (GzPhase::ExtraLen, FEXTRA),
            (GzPhase::Name, FNAME),
            (GzPhase::Comment, FCOMMENT),
            (GzPhase::HeaderCrc, FHCRC),
        ];
        let rank = |p: GzPhase| match p {
            GzPhase::Fixed => 0,
            GzPhase::ExtraLen | GzPhase::Extra(_) => 1,
            GzPhase::Name => 2,
            GzPhase::Comment => 3,
            _ => 4,
        };
        order
            .iter()
            .filter(|(p, _)| rank(*p) > rank(after))
            .find(|(_, f)| self.flags & f != 0)
            .map_or(GzPhase::Body, |(p, _)| *p)
    }

    /// Copies bytes of `input` into `buf` until it holds `want`; true when it does.
    fn collect(&mut self, input: &mut &[u8], want: usize) -> bool {
        let take = (want - self.have).min(input.len());
        self.buf[self.have..self.have + take].copy_from_slice(&input[..take]);
        self.have += take;
        *input = &input[take..];
        self.have == want
    }
}

impl<S: BodySink> Decompress<S> {
    /// Wraps `inner`, which will receive the decoded bodies.
    pub fn new(inner: S) -> Self {
        Decompress {
            inner,
            encoding: Encoding::Identity,
            codec: Codec::Pass,
            inflater: None,
            out: Vec::new(),
            error: None,
            decoded: 0,
            encoded: 0,
        }
    }

    /// The coding of the current (last) response.
    pub fn encoding(&self) -> Encoding {
        self.encoding
    }

    /// Why the current (last) response's body could not be decoded (corrupt or truncated
    /// data), if so.
    pub fn error(&self) -> Option<&str> {
        self.error.as_deref()
    }

    /// Decoded bytes given to the inner sink for the current (last) response.
    pub fn decoded_bytes(&self) -> u64 {
        self.decoded
    }

    /// Body bytes received for the current (last) response, before decoding.
    pub fn encoded_bytes(&self) -> u64 {
        self.encoded
    }

    /// The inner sink.
    pub fn get_ref(&self) -> &S {
        &self.inner
    }

    /// The inner sink, mutably.
    pub fn get_mut(&mut self) -> &mut S {
        &mut self.inner
    }

    /// Unwraps the inner sink.
    pub fn into_inner(self) -> S {
        self.inner
    }

    fn fail(&mut self, msg: String) {
        self.error = Some(msg);
        self.codec = Codec::Failed;
    }

    fn decode(&mut self, mut input: &[u8]) {
        if self.out.is_empty() {
            self.out = vec![0; OUT];
        }
        let result = match &mut self.codec {
            Codec::Pass | Codec::Failed => Ok(()),
            Codec::Gzip(_) => self.gzip(&mut input),
            Codec::DeflateSniff { buf, have } => {
                let take = (2 - *have).min(input.len());
                buf[*have..*have + take].copy_from_slice(&input[..take]);
                *have += take;
                input = &input[take..];
                if *have < 2 {
                    return;
                }
                let head = *buf;
                let cmf = head[0];
                let zlib = cmf & 0x0f == 8
                    && cmf >> 4 <= 7
                    && (u16::from(cmf) << 8 | u16::from(head[1])) % 31 == 0;
                fresh_inflater(&mut self.inflater, zlib);
                self.codec = Codec::Deflate { done: false };
                let mut first = &head[..];
                self.deflate(&mut first)
                    .and_then(|()| self.deflate(&mut input))
            }
            Codec::Deflate { .. } => self.deflate(&mut input),
            Codec::Brotli { .. } => self.brotli(input),
        };
        if let Err(e) = result {
            self.fail(e);
        }
    }

    fn deflate(&mut self, input: &mut &[u8]) -> Result<(), String> {
        let Codec::Deflate { done } = &mut self.codec else {
            unreachable!()
        };
        if *done {
            return Ok(()); // bytes after the end of the stream: ignored
        }
        let inflater = self
            .inflater
            .as_mut()
            .expect("set when the codec was chosen");
        *done = inflate(
            inflater,
            input,
            &mut self.out,
            &mut self.inner,
            &mut self.decoded,
            None,
        )
        .map_err(|e| format!("corrupt deflate body: {e}"))?;
        Ok(())
    }

    fn gzip(&mut self, input: &mut &[u8]) -> Result<(), String> {
        let Codec::Gzip(gz) = &mut self.codec else {
            unreachable!()
        };
        while !input.is_empty() {
            match gz.phase {
                GzPhase::Fixed => {
                    if !gz.collect(input, 10) {
                        break;
                    }
                    let b = gz.buf;
                    if b[0] != 0x1f || b[1] != 0x8b || b[2] != 8 || b[3] & 0xe0 != 0 {
                        if gz.members > 0 {
                            gz.phase = GzPhase::Trailing;
                            continue;
                        }
                        return Err("not a gzip stream (bad header)".into());
                    }
                    gz.flags = b[3];
                    gz.have = 0;
                    gz.phase = gz.next_phase(GzPhase::Fixed);
                }
                GzPhase::ExtraLen => {
                    if !gz.collect(input, 2) {
                        break;
                    }
                    gz.phase =
                        GzPhase::Extra(usize::from(u16::from_le_bytes([gz.buf[0], gz.buf[1]])));
                    gz.have = 0;
                }
                GzPhase::Extra(n) => {
                    let take = n.min(input.len());
                    *input = &input[take..];
                    gz.phase = if take == n {
                        gz.next_phase(GzPhase::Extra(0))
                    } else {
                        GzPhase::Extra(n - take)
                    };
                }
                GzPhase::Name | GzPhase::Comment => match input.iter().position(|&b| b == 0) {
                    Some(i) => {
                        *input = &input[i + 1..];
                        gz.phase = gz.next_phase(gz.phase);
                    }
                    None => *input = &[],
                },
                GzPhase::HeaderCrc => {
                    if !gz.collect(input, 2) {
                        break;
                    }
                    gz.have = 0;
                    gz.phase = GzPhase::Body;
                }
                GzPhase::Body => {
                    if !gz.body_started {
                        gz.body_started = true;
                        fresh_inflater(&mut self.inflater, false);
                    }
                    let inflater = self.inflater.as_mut().expect("set just above");
                    let end = inflate(
                        inflater,
                        input,
                        &mut self.out,
                        &mut self.inner,
                        &mut self.decoded,
                        Some((&mut gz.crc, &mut gz.size)),
                    )
                    .map_err(|e| format!("corrupt gzip body: {e}"))?;
                    if end {
                        gz.body_started = false;
                        gz.phase = GzPhase::Trailer;
                        gz.have = 0;
                    }
                }
                GzPhase::Trailer => {
                    if !gz.collect(input, 8) {
                        break;
                    }
                    let b = gz.buf;
                    let crc = u32::from_le_bytes([b[0], b[1], b[2], b[3]]);
                    let size = u32::from_le_bytes([b[4], b[5], b[6], b[7]]);
                    let got = std::mem::replace(&mut gz.crc, crc32fast::Hasher::new()).finalize();
                    if crc != got {
                        return Err(format!(
                            "corrupt gzip body: CRC mismatch (trailer {crc:08x}, data {got:08x})"
                        ));
                    }
                    if size != gz.size {
                        return Err(format!(
                            "corrupt gzip body: length mismatch (trailer {size}, data {})",
                            gz.size
                        ));
                    }
                    gz.size = 0;
                    gz.have = 0;
                    gz.members += 1;
                    gz.phase = GzPhase::MemberDone;
                }
                GzPhase::MemberDone => gz.phase = GzPhase::Fixed,
                GzPhase::Trailing => *input = &[],
            }
        }
        Ok(())
    }

    fn brotli(&mut self, input: &[u8]) -> Result<(), String> {
        let Codec::Brotli { state, done } = &mut self.codec else {
            unreachable!()
        };
        if *done {
            return Ok(());
        }
        let mut avail_in = input.len();
        let mut in_off = 0;
        loop {
            let mut avail_out = self.out.len();
            let mut out_off = 0;
            let mut total = 0;
            let r = BrotliDecompressStream(
                &mut avail_in,
                &mut in_off,
                input,
                &mut avail_out,
                &mut out_off,
                &mut self.out,
                &mut total,
                state,
            );
            if out_off > 0 {
                self.inner.data(&self.out[..out_off]);
                self.decoded += out_off as u64;
            }
            match r {
                BrotliResult::ResultSuccess => {
                    *done = true;
                    return Ok(());
                }
                BrotliResult::NeedsMoreInput => return Ok(()),
                BrotliResult::NeedsMoreOutput => continue,
                BrotliResult::ResultFailure => {
                    return Err("corrupt brotli body".into());
                }
            }
        }
    }

    /// Whether the compressed stream of the current response reached its proper end.
    fn complete(&self) -> bool {
        match &self.codec {
            Codec::Pass | Codec::Failed => true,
            Codec::Gzip(gz) => matches!(gz.phase, GzPhase::MemberDone | GzPhase::Trailing),
            Codec::DeflateSniff { .. } => false,
            Codec::Deflate { done } | Codec::Brotli { done, .. } => *done,
        }
    }
}

/// Resets the kept inflater (or makes the first one) for a new stream.
fn fresh_inflater(slot: &mut Option<flate2::Decompress>, zlib: bool) {
    match slot {
        Some(d) => d.reset(zlib),
        None => *slot = Some(flate2::Decompress::new(zlib)),
    }
}

/// Inflates as much of `input` as possible (advancing it), giving the output to `sink`.
/// Returns true at the end of the deflate stream.
fn inflate(
    inflater: &mut flate2::Decompress,
    input: &mut &[u8],
    out: &mut [u8],
    sink: &mut impl BodySink,
    decoded: &mut u64,
    mut gzip: Option<(&mut crc32fast::Hasher, &mut u32)>,
) -> Result<bool, String> {
    loop {
        let (in0, out0) = (inflater.total_in(), inflater.total_out());
        let status = inflater
            .decompress(input, out, FlushDecompress::None)
            .map_err(|e| e.to_string())?;
        let consumed = (inflater.total_in() - in0) as usize;
        let produced = (inflater.total_out() - out0) as usize;
        *input = &input[consumed..];
        if produced > 0 {
            let piece = &out[..produced];
            if let Some((crc, size)) = &mut gzip {
                crc.update(piece);
                **size = size.wrapping_add(produced as u32);
            }
            sink.data(piece);
            *decoded += produced as u64;
        }
        match status {
            Status::StreamEnd => return Ok(true),
            Status::Ok | Status::BufError => {
                if produced == out.len() {
                    continue; // more output may be pending
                }
                if input.is_empty() {
                    return Ok(false);
                }
                if consumed == 0 && produced == 0 {
                    return Err("the inflater made no progress".into());
                }
            }
        }
    }
}

fn coding_of(headers: &Headers<'_>) -> Encoding {
    let mut found = Encoding::Identity;
    let mut count = 0;
    for value in headers.get_all("content-encoding") {
        for token in value.split(|&b| b == b',') {
            let token = token.trim_ascii();
            if token.is_empty() || token.eq_ignore_ascii_case(b"identity") {
                continue;
            }
            count += 1;
            found = if token.eq_ignore_ascii_case(b"gzip") || token.eq_ignore_ascii_case(b"x-gzip")
            {
                Encoding::Gzip
            } else if token.eq_ignore_ascii_case(b"deflate") {
                Encoding::Deflate
            } else if token.eq_ignore_ascii_case(b"br") {
                Encoding::Brotli
            } else {
                Encoding::Unsupported
            };
        }
    }
    if count > 1 {
        Encoding::Unsupported
    } else {
        found
    }
}

impl<S: BodySink> BodySink for Decompress<S> {
    fn head(&mut self, status: u16, headers: &Headers<'_>) {
        self.error = None;
        self.decoded = 0;
        self.encoded = 0;
        self.encoding = coding_of(headers);
        self.codec = match self.encoding {
            Encoding::Identity | Encoding::Unsupported => Codec::Pass,
            Encoding::Gzip => Codec::Gzip(Gzip::new()),
            Encoding::Deflate => Codec::DeflateSniff {
                buf: [0; 2],
                have: 0,
            },
            Encoding::Brotli => Codec::Brotli {
                state: Box::new(BrotliState::new(
                    StandardAlloc::default(),
                    StandardAlloc::default(),
                    StandardAlloc::default(),
                )),
                done: false,
            },
        };
        self.inner.head(status, headers);
    }

    fn data(&mut self, chunk: &[u8]) {
        self.encoded += chunk.len() as u64;
        match self.codec {
            Codec::Pass => {
                self.decoded += chunk.len() as u64;
                self.inner.data(chunk);
            }
            Codec::Failed => {}
            _ => self.decode(chunk),
        }
    }

    fn end(&mut self) {
        if self.encoded > 0 && self.error.is_none() && !self.complete() {
            let what = match self.encoding {
                Encoding::Gzip => "gzip",
                Encoding::Deflate => "deflate",
                _ => "brotli",
            };
            self.fail(format!(
                "truncated {what} body: the compressed stream ended early"
            ));
        }
        self.inner.end();
    }
}

impl<S: fmt::Debug> fmt::Debug for Decompress<S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Decompress")
            .field("inner", &self.inner)
            .field("encoding", &self.encoding)
            .field("error", &self.error)
            .field("decoded", &self.decoded)
            .field("encoded", &self.encoded)
            .finish()
    }
}

#[cfg(test)]
#[path = "decompress_tests.rs"]
mod tests;
