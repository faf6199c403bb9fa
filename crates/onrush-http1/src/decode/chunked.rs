//! `Transfer-Encoding: chunked` (RFC 9112 §7.1) as a byte-at-a-time state machine for the
//! framing and bulk slices for the data, so it resumes at any split point and passes chunk data
//! to the sink straight from the read buffer.
//!
//! As strict as hyper's decoder about line endings (CRLF required after sizes and data):
//! lenience here would hide target bugs that real clients trip on. Extensions and trailers are
//! skipped, not stored, so they cost no memory; their lengths are still capped so that a
//! server streaming garbage is reported rather than waited on forever.

use crate::{BodySink, Error};

/// Longest chunk-size line extension, and longest trailer section, accepted.
const MAX_SKIPPED: usize = 64 * 1024;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
enum St {
    /// Expecting the first hex digit of a chunk size.
    #[default]
    Start,
    /// In the hex digits.
    Size,
    /// Whitespace after the size (before `;` or CR).
    SizeWs,
    /// In a chunk extension, skipped up to CR.
    Ext,
    /// Expecting LF after the size line's CR.
    SizeLf,
    /// In chunk data, `size` bytes still to come.
    Data,
    /// Expecting CR after the data.
    DataCr,
    /// Expecting LF after the data's CR.
    DataLf,
    /// At the start of a trailer line or of the final empty line.
    TrailerStart,
    /// In a trailer field line, skipped up to CR.
    Trailer,
    /// Expecting LF after a trailer line's CR.
    TrailerLf,
    /// Expecting the LF of the final empty line.
    EndLf,
}

#[derive(Debug, Default)]
pub(super) struct Chunked {
    st: St,
    /// Size of the current chunk; during `Data`, the bytes still to come.
    size: u64,
    /// Bytes of extension on the current size line, or of trailers so far.
    skipped: usize,
}

/// The framing error `msg`, naming the byte that broke it (the parse reason a user needs to
/// tell a broken server from a wrong port).
fn bad(msg: &'static str, b: u8) -> Error {
    Error::bad(format!("{msg} (at byte {})", crate::decode::show_byte(b)))
}

impl Chunked {
    /// Consumes what it can of `input`; returns the bytes consumed and whether the body (with
    /// its trailers) ended. Consumes everything unless the body ended before the end of `input`.
    pub(super) fn decode(
        &mut self,
        input: &[u8],
        sink: &mut impl BodySink,
        body_bytes: &mut u64,
    ) -> Result<(usize, bool), Error> {
        let mut i = 0;
        while i < input.len() {
            if self.st == St::Data {
                let take = self.size.min((input.len() - i) as u64) as usize;
                sink.data(&input[i..i + take]);
                i += take;
                *body_bytes += take as u64;
                self.size -= take as u64;
                if self.size == 0 {
                    self.st = St::DataCr;
                }
                continue;
            }
            let b = input[i];
            i += 1;
            self.st = match (self.st, b) {
                (St::Start, _) => match hex(b) {
                    Some(d) => {
                        self.size = u64::from(d);
                        St::Size
                    }
                    None => return Err(bad("bad chunked body: a chunk size is missing", b)),
                },
                (St::Size, b' ' | b'\t') => St::SizeWs,
                (St::Size | St::SizeWs, b';') => {
                    self.skipped = 0;
                    St::Ext
                }
                (St::Size | St::SizeWs, b'\r') => St::SizeLf,
                (St::Size, _) => match hex(b) {
                    Some(d) => {
                        if self.size >> 60 != 0 {
                            return Err(bad("bad chunked body: a chunk size is too large", b));
                        }
                        self.size = self.size << 4 | u64::from(d);
                        St::Size
                    }
                    None => return Err(bad("bad chunked body: invalid chunk size", b)),
                },
                (St::SizeWs, b' ' | b'\t') => St::SizeWs,
                (St::SizeWs, _) => {
                    return Err(bad("bad chunked body: invalid chunk size line", b));
                }
                (St::Ext, b'\r') => St::SizeLf,
                (St::Ext, b'\n') => {
                    return Err(bad(
                        "bad chunked body: a chunk extension contains a bare LF",
                        b,
                    ));
                }
                (St::Ext, _) => {
                    self.skipped += 1;
                    if self.skipped > MAX_SKIPPED {
                        return Err(bad("bad chunked body: a chunk extension is over 64 KiB", b));
                    }
                    St::Ext
                }
                (St::SizeLf, b'\n') if self.size == 0 => {
                    self.skipped = 0;
                    St::TrailerStart
                }
                (St::SizeLf, b'\n') => St::Data,
                (St::SizeLf, _) => {
                    return Err(bad(
                        "bad chunked body: chunk size line not ended by CRLF",
                        b,
                    ));
                }
                (St::DataCr, b'\r') => St::DataLf,
                (St::DataLf, b'\n') => St::Start,
                (St::DataCr | St::DataLf, _) => {
                    return Err(bad(
                        "bad chunked body: chunk data not followed by CRLF (longer than its size?)",
                        b,
                    ));
                }
                (St::TrailerStart, b'\r') => St::EndLf,
                (St::TrailerStart | St::Trailer, b'\n') => {
                    return Err(bad(
                        "bad chunked body: a trailer line ends with a bare LF",
                        b,
                    ));
                }
                (St::TrailerStart | St::Trailer, _) if b == b'\r' => St::TrailerLf,
                (St::TrailerStart | St::Trailer, _) => {
                    self.skipped += 1;
                    if self.skipped > MAX_SKIPPED {
                        return Err(bad("bad chunked body: trailers are over 64 KiB", b));
                    }
                    St::Trailer
                }
                (St::TrailerLf, b'\n') => St::TrailerStart,
                (St::TrailerLf, _) => {
                    return Err(bad("bad chunked body: a trailer line not ended by CRLF", b));
                }
                (St::EndLf, b'\n') => return Ok((i, true)),
                (St::EndLf, _) => {
                    return Err(bad("bad chunked body: the final CRLF is missing", b));
                }
                (St::Data, _) => unreachable!("handled above"),
            };
        }
        Ok((i, false))
    }
}

fn hex(b: u8) -> Option<u8> {
    match b {
        b'0'..=b'9' => Some(b - b'0'),
        b'a'..=b'f' => Some(b - b'a' + 10),
        b'A'..=b'F' => Some(b - b'A' + 10),
        _ => None,
    }
}
