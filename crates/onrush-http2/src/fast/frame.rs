//! HTTP/2 frame constants and writers (RFC 9113 §4, §6): frames are appended to the
//! connection's one write buffer, never built as values.

pub(crate) const PREFACE: &[u8] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";

pub(crate) const DATA: u8 = 0x0;
pub(crate) const HEADERS: u8 = 0x1;
pub(crate) const PRIORITY: u8 = 0x2;
pub(crate) const RST_STREAM: u8 = 0x3;
pub(crate) const SETTINGS: u8 = 0x4;
pub(crate) const PUSH_PROMISE: u8 = 0x5;
pub(crate) const PING: u8 = 0x6;
pub(crate) const GOAWAY: u8 = 0x7;
pub(crate) const WINDOW_UPDATE: u8 = 0x8;
pub(crate) const CONTINUATION: u8 = 0x9;

pub(crate) const END_STREAM: u8 = 0x1;
pub(crate) const ACK: u8 = 0x1;
pub(crate) const END_HEADERS: u8 = 0x4;
pub(crate) const PADDED: u8 = 0x8;
pub(crate) const PRIORITY_FLAG: u8 = 0x20;

pub(crate) const SETTINGS_ENABLE_PUSH: u16 = 0x2;
pub(crate) const SETTINGS_MAX_CONCURRENT_STREAMS: u16 = 0x3;
pub(crate) const SETTINGS_INITIAL_WINDOW_SIZE: u16 = 0x4;
pub(crate) const SETTINGS_MAX_FRAME_SIZE: u16 = 0x5;

pub(crate) const NO_ERROR: u32 = 0x0;
pub(crate) const PROTOCOL_ERROR: u32 = 0x1;
pub(crate) const FLOW_CONTROL_ERROR: u32 = 0x3;
pub(crate) const STREAM_CLOSED: u32 = 0x5;
pub(crate) const FRAME_SIZE_ERROR: u32 = 0x6;
pub(crate) const REFUSED_STREAM: u32 = 0x7;
pub(crate) const CANCEL: u32 = 0x8;
pub(crate) const COMPRESSION_ERROR: u32 = 0x9;
pub(crate) const ENHANCE_YOUR_CALM: u32 = 0xb;

/// The frame size every peer must accept (RFC 9113 §4.2), and the protocol's bounds.
pub(crate) const DEFAULT_MAX_FRAME: usize = 16_384;
pub(crate) const MAX_FRAME_LIMIT: u32 = (1 << 24) - 1;
/// The largest flow-control window (RFC 9113 §6.9.1).
pub(crate) const MAX_WINDOW: i64 = (1 << 31) - 1;
/// The initial window of a stream and of the connection before any SETTINGS.
pub(crate) const DEFAULT_WINDOW: i64 = 65_535;
/// The last client stream id (odd, 31 bits).
pub(crate) const MAX_STREAM_ID: u32 = (1 << 31) - 1;

/// Appends a 9-byte frame header.
#[inline]
pub(crate) fn head(buf: &mut Vec<u8>, len: usize, typ: u8, flags: u8, id: u32) {
    let l = len as u32;
    let id = id & 0x7fff_ffff;
    buf.extend_from_slice(&[
        (l >> 16) as u8,
        (l >> 8) as u8,
        l as u8,
        typ,
        flags,
        (id >> 24) as u8,
        (id >> 16) as u8,
        (id >> 8) as u8,
        id as u8,
    ]);
}

/// Rewrites the frame header at `at` (a placeholder written earlier).
pub(crate) fn patch_head(buf: &mut [u8], at: usize, len: usize, typ: u8, flags: u8, id: u32) {
    let l = len as u32;
    let id = id & 0x7fff_ffff;
    buf[at..at + 9].copy_from_slice(&[
        (l >> 16) as u8,
        (l >> 8) as u8,
        l as u8,
        typ,
        flags,
        (id >> 24) as u8,
        (id >> 16) as u8,
        (id >> 8) as u8,
        id as u8,
    ]);
}

pub(crate) fn window_update(buf: &mut Vec<u8>, id: u32, increment: u32) {
    head(buf, 4, WINDOW_UPDATE, 0, id);
    buf.extend_from_slice(&(increment & 0x7fff_ffff).to_be_bytes());
}

pub(crate) fn rst_stream(buf: &mut Vec<u8>, id: u32, code: u32) {
    head(buf, 4, RST_STREAM, 0, id);
    buf.extend_from_slice(&code.to_be_bytes());
}

pub(crate) fn goaway(buf: &mut Vec<u8>, last_stream_id: u32, code: u32) {
    head(buf, 8, GOAWAY, 0, 0);
    buf.extend_from_slice(&(last_stream_id & 0x7fff_ffff).to_be_bytes());
    buf.extend_from_slice(&code.to_be_bytes());
}

pub(crate) fn setting(buf: &mut Vec<u8>, id: u16, value: u32) {
    buf.extend_from_slice(&id.to_be_bytes());
    buf.extend_from_slice(&value.to_be_bytes());
}

/// A big-endian u32 from the first 4 bytes of `b` (which has at least 4).
#[inline]
pub(crate) fn be32(b: &[u8]) -> u32 {
    u32::from_be_bytes([b[0], b[1], b[2], b[3]])
}

/// The name of an error code, for messages.
pub(crate) fn reason(code: u32) -> &'static str {
    match code {
        0x0 => "NO_ERROR",
        0x1 => "PROTOCOL_ERROR",
        0x2 => "INTERNAL_ERROR",
        0x3 => "FLOW_CONTROL_ERROR",
        0x4 => "SETTINGS_TIMEOUT",
        0x5 => "STREAM_CLOSED",
        0x6 => "FRAME_SIZE_ERROR",
        0x7 => "REFUSED_STREAM",
        0x8 => "CANCEL",
        0x9 => "COMPRESSION_ERROR",
        0xa => "CONNECT_ERROR",
        0xb => "ENHANCE_YOUR_CALM",
        0xc => "INADEQUATE_SECURITY",
        0xd => "HTTP_1_1_REQUIRED",
        _ => "unknown error code",
    }
}
