//! gRPC's wire format over HTTP/2 bodies: each message is a 5-byte prefix (a compressed flag,
//! then the length as a big-endian u32) and the message's bytes; the call's outcome is the
//! `grpc-status` / `grpc-message` of the trailers (or of the head, for a "trailers-only"
//! response).

use std::io::{Read, Write};

use flate2::read::GzDecoder;
use flate2::write::GzEncoder;
use flate2::Compression;

/// Appends one message to `out`: prefix and bytes, gzip-compressed (flag 1) when `gzip`.
pub fn encode(out: &mut Vec<u8>, message: &[u8], gzip: bool) {
    let start = out.len();
    out.extend_from_slice(&[0; 5]);
    if gzip {
        let mut enc = GzEncoder::new(std::mem::take(out), Compression::fast());
        enc.write_all(message)
            .expect("writing to a Vec cannot fail");
        *out = enc.finish().expect("writing to a Vec cannot fail");
        out[start] = 1;
    } else {
        out.extend_from_slice(message);
    }
    let len = (out.len() - start - 5) as u32;
    out[start + 1..start + 5].copy_from_slice(&len.to_be_bytes());
}

/// Why a response body is not a valid sequence of gRPC messages.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FrameError {
    /// A message longer than the step's `max_message` (its prefix says so, or it inflates to
    /// more): gRPC's RESOURCE_EXHAUSTED.
    Oversized,
    /// A compressed message without a `grpc-encoding` we know, or one that does not inflate.
    BadCompression,
    /// The prefix's flag is neither 0 nor 1.
    BadFlag,
    /// The body ended inside a message (the server closed the stream mid-message).
    Truncated,
}

/// Splits a response body, as it arrives in pieces, into messages. Holds at most one
/// message's bytes (up to the limit): memory does not grow with the stream's length.
pub struct Deframer {
    buf: Vec<u8>,
    max: usize,
    /// The response's `grpc-encoding` is gzip.
    pub gzip: bool,
    inflated: Vec<u8>,
}

impl Deframer {
    pub fn new() -> Self {
        Deframer {
            buf: Vec::new(),
            max: 4 << 20,
            gzip: false,
            inflated: Vec::new(),
        }
    }

    /// Starts a new response whose messages may be up to `max` bytes.
    pub fn reset(&mut self, max: usize) {
        self.buf.clear();
        self.max = max;
        self.gzip = false;
        if self.buf.capacity() > (1 << 20) {
            self.buf = Vec::new();
        }
    }

    /// Adds `chunk`, and calls `each` with every message it completes (decompressed).
    pub fn push(
        &mut self,
        mut chunk: &[u8],
        mut each: impl FnMut(&[u8]),
    ) -> Result<(), FrameError> {
        while !chunk.is_empty() {
            // The prefix first, then exactly its length: never more than one message held.
            let want = if self.buf.len() < 5 {
                5 - self.buf.len()
            } else {
                5 + self.declared() - self.buf.len()
            };
            let take = want.min(chunk.len());
            self.buf.extend_from_slice(&chunk[..take]);
            chunk = &chunk[take..];
            if self.buf.len() == 5 {
                if self.buf[0] > 1 {
                    return Err(FrameError::BadFlag);
                }
                if self.declared() > self.max {
                    return Err(FrameError::Oversized);
                }
            }
            if self.buf.len() >= 5 && self.buf.len() == 5 + self.declared() {
                if self.buf[0] == 1 {
                    if !self.gzip {
                        return Err(FrameError::BadCompression);
                    }
                    self.inflated.clear();
                    let mut dec = GzDecoder::new(&self.buf[5..]).take(self.max as u64 + 1);
                    dec.read_to_end(&mut self.inflated)
                        .map_err(|_| FrameError::BadCompression)?;
                    if self.inflated.len() > self.max {
                        return Err(FrameError::Oversized);
                    }
                    each(&self.inflated);
                } else {
                    each(&self.buf[5..]);
                }
                self.buf.clear();
            }
        }
        Ok(())
    }

    /// At the end of the body: a message left incomplete is an error.
    pub fn finish(&self) -> Result<(), FrameError> {
        if self.buf.is_empty() {
            Ok(())
        } else {
            Err(FrameError::Truncated)
        }
    }

    fn declared(&self) -> usize {
        u32::from_be_bytes([self.buf[1], self.buf[2], self.buf[3], self.buf[4]]) as usize
    }
}

impl Default for Deframer {
    fn default() -> Self {
        Self::new()
    }
}

/// `grpc-status`: a decimal code; anything else is not a status.
pub fn parse_status(value: &[u8]) -> Option<u32> {
    if value.is_empty() || value.len() > 9 || !value.iter().all(u8::is_ascii_digit) {
        return None;
    }
    std::str::from_utf8(value).ok()?.parse().ok()
}

/// `grpc-message`, percent-decoded (gRPC percent-encodes it on the wire).
pub fn decode_message(value: &[u8]) -> String {
    let mut out = Vec::with_capacity(value.len());
    let mut i = 0;
    while i < value.len() {
        let hex = |b: u8| (b as char).to_digit(16);
        if value[i] == b'%' && i + 2 < value.len() {
            if let (Some(h), Some(l)) = (hex(value[i + 1]), hex(value[i + 2])) {
                out.push((h * 16 + l) as u8);
                i += 3;
                continue;
            }
        }
        out.push(value[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// `grpc-timeout` for `d`: at most 8 digits and a unit (milliseconds, or seconds when longer).
pub fn timeout_value(d: std::time::Duration) -> String {
    let ms = d.as_millis().max(1);
    if ms < 100_000_000 {
        format!("{ms}m")
    } else {
        format!("{}S", d.as_secs().min(99_999_999))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn all(d: &mut Deframer, chunks: &[&[u8]]) -> Result<Vec<Vec<u8>>, FrameError> {
        let mut out = Vec::new();
        for c in chunks {
            d.push(c, |m| out.push(m.to_vec()))?;
        }
        d.finish()?;
        Ok(out)
    }

    #[test]
    fn messages_are_length_prefixed() {
        let mut wire = Vec::new();
        encode(&mut wire, b"hello", false);
        encode(&mut wire, b"", false);
        assert_eq!(&wire[..10], b"\0\0\0\0\x05hello");
        assert_eq!(&wire[10..], b"\0\0\0\0\0");
        // Split anywhere, even inside a prefix: the same messages.
        for cut in 0..wire.len() {
            let mut d = Deframer::new();
            let got = all(&mut d, &[&wire[..cut], &wire[cut..]]).unwrap();
            assert_eq!(got, [b"hello".to_vec(), Vec::new()], "cut at {cut}");
        }
    }

    #[test]
    fn compressed_flag_inflates_with_gzip_only() {
        let mut wire = Vec::new();
        encode(&mut wire, &[7u8; 1000], true);
        assert_eq!(wire[0], 1, "the compressed flag");
        assert!(wire.len() < 100, "1000 equal bytes compress");
        let mut d = Deframer::new();
        assert_eq!(all(&mut d, &[&wire]), Err(FrameError::BadCompression));
        let mut d = Deframer::new();
        d.gzip = true;
        assert_eq!(all(&mut d, &[&wire]).unwrap(), [vec![7u8; 1000]]);
        // Inflating past the limit is oversized, though the compressed bytes are few.
        let mut d = Deframer::new();
        d.reset(999);
        d.gzip = true;
        assert_eq!(all(&mut d, &[&wire]), Err(FrameError::Oversized));
    }

    #[test]
    fn bad_frames_are_errors_not_panics() {
        let mut d = Deframer::new();
        d.reset(10);
        assert_eq!(
            all(&mut d, &[b"\0\0\0\0\x0bxxxxxxxxxxx"]),
            Err(FrameError::Oversized)
        );
        let mut d = Deframer::new();
        assert_eq!(all(&mut d, &[b"\x02\0\0\0\0"]), Err(FrameError::BadFlag));
        let mut d = Deframer::new();
        assert_eq!(
            all(&mut d, &[b"\0\0\0\0\x05hel"]),
            Err(FrameError::Truncated)
        );
        let mut d = Deframer::new();
        assert_eq!(all(&mut d, &[b"\0\0"]), Err(FrameError::Truncated));
    }

    #[test]
    fn trailers_parse() {
        assert_eq!(parse_status(b"0"), Some(0));
        assert_eq!(parse_status(b"14"), Some(14));
        assert_eq!(parse_status(b""), None);
        assert_eq!(parse_status(b"x1"), None);
        assert_eq!(decode_message(b"no%20such%20user"), "no such user");
        assert_eq!(decode_message(b"100%"), "100%");
        assert_eq!(decode_message(b"%zz"), "%zz");
        assert_eq!(timeout_value(std::time::Duration::from_secs(2)), "2000m");
        assert_eq!(timeout_value(std::time::Duration::from_micros(10)), "1m");
    }
}
