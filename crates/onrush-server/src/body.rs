//! The one response body type: a single buffer, or N bytes of a fixed pattern streamed in 64 KiB
//! frames that all point into one static buffer.
//!
//! One concrete type (no boxing) keeps the per-request cost down, and streaming from a static
//! buffer lets `/bytes/N` serve many GiB with constant memory: each frame is a `Bytes` view of
//! the same static memory, so nothing is allocated or copied per frame.
//!
//! `/bytes/N?encoding=E` compresses the same pattern as it streams: each poll feeds pattern
//! frames to a streaming encoder (gzip, zlib or brotli, writing into a `Vec` that is emptied
//! into each output frame) until it has output, so memory is the encoder's window whatever N.

use std::io::Write;
use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::Bytes;
use hyper::body::{Body, Frame, SizeHint};
use hyper::header::HeaderValue;

/// Frame size of streamed bodies; a multiple of 256 so every frame starts at pattern offset 0.
pub(crate) const CHUNK: usize = 64 * 1024;

/// The byte at offset `i` of every `/bytes` body is `i % 256`: clients can check content, not
/// only length, and the SHA-256 of a body is easy to compute independently.
static PATTERN: [u8; CHUNK] = pattern();

const fn pattern() -> [u8; CHUNK] {
    let mut buf = [0u8; CHUNK];
    let mut i = 0;
    while i < CHUNK {
        buf[i] = i as u8;
        i += 1;
    }
    buf
}

/// Body of every response this server sends.
pub struct ResponseBody {
    kind: Kind,
}

enum Kind {
    /// One buffer, sent in one frame (taken on the first poll).
    Once(Option<Bytes>),
    /// `remaining` pattern bytes left to send; `exact` says whether the length is announced
    /// (Content-Length) or not (hyper then uses chunked transfer encoding).
    Pattern { remaining: u64, exact: bool },
    /// Pattern bytes compressed on the fly (boxed: the encoders' state is large).
    Encoded(Box<Encoded>),
    /// Frames sent by a task as it produces them, trailers included (gRPC calls); boxed so
    /// that HTTP responses stay as small as before.
    Channel(Box<tokio::sync::mpsc::Receiver<Frame<Bytes>>>),
}

/// A `Content-Encoding` this server can produce.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Encoding {
    Gzip,
    /// zlib-wrapped deflate (RFC 1950), which is what HTTP's `deflate` means.
    Deflate,
    Brotli,
}

/// Brotli settings for streamed bodies: fast, with a 256 KiB window (constant memory).
const BROTLI_QUALITY: u32 = 1;
const BROTLI_LGWIN: u32 = 18;
/// Pattern frames compressed per poll at most before yielding, so a highly compressible body
/// never holds the thread for long without output.
const FRAMES_PER_POLL: usize = 16;

impl Encoding {
    /// `gzip`, `deflate`, `br` (also `brotli`).
    pub(crate) fn parse(name: &str) -> Option<Encoding> {
        match name {
            "gzip" => Some(Encoding::Gzip),
            "deflate" => Some(Encoding::Deflate),
            "br" | "brotli" => Some(Encoding::Brotli),
            _ => None,
        }
    }

    /// The `Content-Encoding` value.
    pub(crate) fn header(self) -> HeaderValue {
        HeaderValue::from_static(match self {
            Encoding::Gzip => "gzip",
            Encoding::Deflate => "deflate",
            Encoding::Brotli => "br",
        })
    }

    /// `data` compressed whole (for small documents).
    pub(crate) fn compress(self, data: &[u8]) -> Vec<u8> {
        let mut enc = Encoder::new(self);
        // Writing to a Vec cannot fail.
        let _ = enc.write(data);
        enc.finish().unwrap_or_default()
    }
}

enum Encoder {
    Gzip(flate2::write::GzEncoder<Vec<u8>>),
    Deflate(flate2::write::ZlibEncoder<Vec<u8>>),
    /// Boxed: the brotli state is far larger than flate2's.
    Brotli(Box<brotli::CompressorWriter<Vec<u8>>>),
}

impl Encoder {
    fn new(encoding: Encoding) -> Self {
        let level = flate2::Compression::fast();
        match encoding {
            Encoding::Gzip => Encoder::Gzip(flate2::write::GzEncoder::new(Vec::new(), level)),
            Encoding::Deflate => {
                Encoder::Deflate(flate2::write::ZlibEncoder::new(Vec::new(), level))
            }
            Encoding::Brotli => Encoder::Brotli(Box::new(brotli::CompressorWriter::new(
                Vec::new(),
                4096,
                BROTLI_QUALITY,
                BROTLI_LGWIN,
            ))),
        }
    }

    fn write(&mut self, data: &[u8]) -> std::io::Result<()> {
        match self {
            Encoder::Gzip(e) => e.write_all(data),
            Encoder::Deflate(e) => e.write_all(data),
            Encoder::Brotli(e) => e.write_all(data),
        }
    }

    /// The compressed bytes produced so far and not yet taken.
    fn take(&mut self) -> Vec<u8> {
        std::mem::take(match self {
            Encoder::Gzip(e) => e.get_mut(),
            Encoder::Deflate(e) => e.get_mut(),
            Encoder::Brotli(e) => e.get_mut(),
        })
    }

    /// Ends the stream: the remaining compressed bytes, trailer included.
    fn finish(self) -> std::io::Result<Vec<u8>> {
        match self {
            Encoder::Gzip(e) => e.finish(),
            Encoder::Deflate(e) => e.finish(),
            Encoder::Brotli(e) => Ok((*e).into_inner()),
        }
    }
}

pub(crate) struct Encoded {
    /// Pattern bytes not yet fed to the encoder.
    remaining: u64,
    /// `None` once the trailer was sent (or the encoder failed).
    encoder: Option<Encoder>,
}

impl Encoded {
    /// The next output frame; `Ok(None)` asks to yield (wake and poll again), `Err(())` means
    /// the stream is over.
    fn next(&mut self) -> Result<Option<Bytes>, ()> {
        let Some(encoder) = self.encoder.as_mut() else {
            return Err(());
        };
        for _ in 0..FRAMES_PER_POLL {
            if self.remaining == 0 {
                let rest = self.encoder.take().map(Encoder::finish);
                return match rest {
                    Some(Ok(rest)) if !rest.is_empty() => Ok(Some(Bytes::from(rest))),
                    _ => Err(()),
                };
            }
            let n = self.remaining.min(CHUNK as u64) as usize;
            self.remaining -= n as u64;
            if encoder.write(&PATTERN[..n]).is_err() {
                self.encoder = None;
                return Err(());
            }
            let out = encoder.take();
            if !out.is_empty() {
                return Ok(Some(Bytes::from(out)));
            }
        }
        Ok(None)
    }
}

impl ResponseBody {
    fn new(kind: Kind) -> Self {
        ResponseBody { kind }
    }

    pub(crate) fn empty() -> Self {
        ResponseBody::new(Kind::Once(None))
    }

    pub(crate) fn from_static(data: &'static [u8]) -> Self {
        Self::bytes(Bytes::from_static(data))
    }

    pub(crate) fn bytes(data: Bytes) -> Self {
        ResponseBody::new(Kind::Once(if data.is_empty() { None } else { Some(data) }))
    }

    /// `len` pattern bytes compressed with `encoding`, streamed (always chunked).
    pub(crate) fn encoded_pattern(len: u64, encoding: Encoding) -> Self {
        ResponseBody::new(Kind::Encoded(Box::new(Encoded {
            remaining: len,
            encoder: Some(Encoder::new(encoding)),
        })))
    }

    /// The frames `rx` receives, until its sender is dropped.
    pub(crate) fn channel(rx: tokio::sync::mpsc::Receiver<Frame<Bytes>>) -> Self {
        ResponseBody::new(Kind::Channel(Box::new(rx)))
    }

    /// `len` pattern bytes; `chunked` hides the length so the response is sent chunked.
    pub(crate) fn pattern(len: u64, chunked: bool) -> Self {
        ResponseBody::new(Kind::Pattern {
            remaining: len,
            exact: !chunked,
        })
    }
}

impl Body for ResponseBody {
    type Data = Bytes;
    type Error = std::convert::Infallible;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Self::Error>>> {
        let this = self.get_mut();
        let data = match &mut this.kind {
            Kind::Channel(rx) => return rx.poll_recv(cx).map(|f| f.map(Ok)),
            Kind::Encoded(enc) => match enc.next() {
                Ok(Some(data)) => Some(data),
                Ok(None) => {
                    cx.waker().wake_by_ref();
                    return Poll::Pending;
                }
                Err(()) => None,
            },
            Kind::Once(data) => data.take(),
            Kind::Pattern { remaining, .. } => {
                if *remaining == 0 {
                    None
                } else {
                    let n = (*remaining).min(CHUNK as u64) as usize;
                    *remaining -= n as u64;
                    Some(Bytes::from_static(&PATTERN[..n]))
                }
            }
        };
        Poll::Ready(data.map(|d| Ok(Frame::data(d))))
    }

    fn is_end_stream(&self) -> bool {
        match &self.kind {
            Kind::Once(data) => data.is_none(),
            Kind::Pattern { remaining, exact } => *exact && *remaining == 0,
            Kind::Encoded(enc) => enc.encoder.is_none(),
            Kind::Channel(_) => false,
        }
    }

    fn size_hint(&self) -> SizeHint {
        match &self.kind {
            Kind::Once(data) => SizeHint::with_exact(data.as_ref().map_or(0, |d| d.len() as u64)),
            Kind::Pattern {
                remaining,
                exact: true,
            } => SizeHint::with_exact(*remaining),
            Kind::Pattern { exact: false, .. } | Kind::Encoded(_) | Kind::Channel(_) => {
                SizeHint::default()
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use http_body_util::BodyExt;

    #[test]
    fn pattern_wraps_every_256_bytes() {
        assert_eq!(PATTERN[0], 0);
        assert_eq!(PATTERN[255], 255);
        assert_eq!(PATTERN[256], 0);
        assert_eq!(PATTERN[CHUNK - 1], 255);
    }

    #[test]
    fn pattern_body_streams_exact_length_in_chunks() {
        let rt = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        let len = 3 * CHUNK as u64 + 17;
        let mut body = ResponseBody::pattern(len, false);
        assert_eq!(body.size_hint().exact(), Some(len));
        let mut total = 0u64;
        let mut frames = 0;
        rt.block_on(async {
            while let Some(frame) = body.frame().await {
                let data = frame.unwrap().into_data().unwrap();
                assert!(data.len() <= CHUNK);
                assert_eq!(data[0], 0);
                total += data.len() as u64;
                frames += 1;
            }
        });
        assert_eq!(total, len);
        assert_eq!(frames, 4);
    }

    #[test]
    fn encoded_pattern_decompresses_to_the_pattern() {
        use std::io::Read;
        let rt = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        let len = 5 * CHUNK as u64 + 1000;
        let expected: Vec<u8> = (0..len).map(|i| i as u8).collect();
        for encoding in [Encoding::Gzip, Encoding::Deflate, Encoding::Brotli] {
            let mut body = ResponseBody::encoded_pattern(len, encoding);
            assert_eq!(body.size_hint().exact(), None);
            let compressed = rt.block_on(async { (&mut body).collect().await.unwrap().to_bytes() });
            assert!(body.is_end_stream());
            let mut plain = Vec::new();
            match encoding {
                Encoding::Gzip => flate2::read::GzDecoder::new(&compressed[..])
                    .read_to_end(&mut plain)
                    .unwrap(),
                Encoding::Deflate => flate2::read::ZlibDecoder::new(&compressed[..])
                    .read_to_end(&mut plain)
                    .unwrap(),
                Encoding::Brotli => brotli::Decompressor::new(&compressed[..], 4096)
                    .read_to_end(&mut plain)
                    .unwrap(),
            };
            assert!(plain == expected, "{encoding:?}");
            let empty = rt.block_on(async {
                ResponseBody::encoded_pattern(0, encoding)
                    .collect()
                    .await
                    .unwrap()
                    .to_bytes()
            });
            assert!(!empty.is_empty(), "{encoding:?}: even no data has a header");
        }
    }

    #[test]
    fn chunked_pattern_hides_length() {
        let body = ResponseBody::pattern(10, true);
        assert_eq!(body.size_hint().exact(), None);
        assert!(!body.is_end_stream());
    }
}
