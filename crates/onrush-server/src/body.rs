//! The one response body type: a single buffer, or N bytes of a fixed pattern streamed in 64 KiB
//! frames that all point into one static buffer.
//!
//! One concrete type (no boxing) keeps the per-request cost down, and streaming from a static
//! buffer lets `/bytes/N` serve many GiB with constant memory: each frame is a `Bytes` view of
//! the same static memory, so nothing is allocated or copied per frame.

use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::Bytes;
use hyper::body::{Body, Frame, SizeHint};

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
}

impl ResponseBody {
    pub(crate) fn empty() -> Self {
        ResponseBody {
            kind: Kind::Once(None),
        }
    }

    pub(crate) fn from_static(data: &'static [u8]) -> Self {
        Self::bytes(Bytes::from_static(data))
    }

    pub(crate) fn bytes(data: Bytes) -> Self {
        ResponseBody {
            kind: Kind::Once(if data.is_empty() { None } else { Some(data) }),
        }
    }

    /// `len` pattern bytes; `chunked` hides the length so the response is sent chunked.
    pub(crate) fn pattern(len: u64, chunked: bool) -> Self {
        ResponseBody {
            kind: Kind::Pattern {
                remaining: len,
                exact: !chunked,
            },
        }
    }
}

impl Body for ResponseBody {
    type Data = Bytes;
    type Error = std::convert::Infallible;

    fn poll_frame(
        self: Pin<&mut Self>,
        _cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Self::Error>>> {
        let this = self.get_mut();
        let data = match &mut this.kind {
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
        }
    }

    fn size_hint(&self) -> SizeHint {
        match &self.kind {
            Kind::Once(data) => SizeHint::with_exact(data.as_ref().map_or(0, |d| d.len() as u64)),
            Kind::Pattern {
                remaining,
                exact: true,
            } => SizeHint::with_exact(*remaining),
            Kind::Pattern { exact: false, .. } => SizeHint::default(),
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
    fn chunked_pattern_hides_length() {
        let body = ResponseBody::pattern(10, true);
        assert_eq!(body.size_hint().exact(), None);
        assert!(!body.is_end_stream());
    }
}
