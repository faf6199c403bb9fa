//! RFC 6455 §5 framing, sans I/O: a frame header read from bytes, and a client's (masked)
//! frame written into a buffer. What a frame means (messages, fragments, control frames,
//! compression) is `socket.rs`'s business.

/// Opcodes (RFC 6455 §5.2).
pub(crate) const CONTINUATION: u8 = 0x0;
pub(crate) const TEXT: u8 = 0x1;
pub(crate) const BINARY: u8 = 0x2;
pub(crate) const CLOSE: u8 = 0x8;
pub(crate) const PING: u8 = 0x9;
pub(crate) const PONG: u8 = 0xA;

/// The longest payload of a control frame (§5.5).
pub(crate) const CONTROL_MAX: usize = 125;

/// A server's frame header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Header {
    pub fin: bool,
    /// RSV1: the message is compressed (permessage-deflate, RFC 7692 §6).
    pub rsv1: bool,
    pub opcode: u8,
    /// Bytes of the header (2 to 10: a server's frames are not masked).
    pub header_len: usize,
    /// Bytes of the payload.
    pub payload_len: usize,
}

impl Header {
    pub(crate) fn is_control(&self) -> bool {
        self.opcode & 0x8 != 0
    }

    /// Header and payload.
    pub(crate) fn frame_len(&self) -> usize {
        self.header_len + self.payload_len
    }
}

/// Reads the header at the start of `buf`: `None` while it is incomplete. A frame whose
/// payload would exceed `max_payload` is refused from its header, before any of it is read.
/// `rsv1_allowed`: permessage-deflate was negotiated. The error says what the server broke.
pub(crate) fn parse_header(
    buf: &[u8],
    max_payload: usize,
    rsv1_allowed: bool,
) -> Result<Option<Header>, &'static str> {
    let [b0, b1, ..] = *buf else { return Ok(None) };
    let fin = b0 & 0x80 != 0;
    let rsv1 = b0 & 0x40 != 0;
    let opcode = b0 & 0x0F;
    if b0 & 0x30 != 0 {
        return Err("RSV2 or RSV3 set, no extension defines them");
    }
    if rsv1 && !rsv1_allowed {
        return Err("RSV1 set without permessage-deflate negotiated");
    }
    if !matches!(opcode, CONTINUATION | TEXT | BINARY | CLOSE | PING | PONG) {
        return Err("reserved opcode");
    }
    if b1 & 0x80 != 0 {
        return Err("a masked frame from the server (RFC 6455 §5.1)");
    }
    let (header_len, len) = match b1 & 0x7F {
        126 => match buf.get(2..4) {
            Some(b) => (4, u16::from_be_bytes([b[0], b[1]]) as u64),
            None => return Ok(None),
        },
        127 => match buf.get(2..10) {
            Some(b) => {
                let len = u64::from_be_bytes(b.try_into().expect("8 bytes"));
                if len >> 63 != 0 {
                    return Err("a 64-bit length with its most significant bit set");
                }
                (10, len)
            }
            None => return Ok(None),
        },
        n => (2, n as u64),
    };
    let header = Header {
        fin,
        rsv1,
        opcode,
        header_len,
        payload_len: usize::try_from(len).unwrap_or(usize::MAX),
    };
    if header.is_control() {
        if !fin {
            return Err("a fragmented control frame");
        }
        if header.payload_len > CONTROL_MAX {
            return Err("a control frame longer than 125 bytes");
        }
        if rsv1 {
            return Err("RSV1 set on a control frame");
        }
    }
    if header.payload_len > max_payload {
        return Err("a frame longer than max_message");
    }
    Ok(Some(header))
}

/// Appends a client's frame (FIN set, masked with `mask`) to `out`.
pub(crate) fn encode(out: &mut Vec<u8>, opcode: u8, rsv1: bool, payload: &[u8], mask: [u8; 4]) {
    let b0 = 0x80 | if rsv1 { 0x40 } else { 0 } | opcode;
    out.reserve(14 + payload.len());
    out.push(b0);
    match payload.len() {
        n @ 0..=125 => out.push(0x80 | n as u8),
        n @ 126..=0xFFFF => {
            out.push(0x80 | 126);
            out.extend_from_slice(&(n as u16).to_be_bytes());
        }
        n => {
            out.push(0x80 | 127);
            out.extend_from_slice(&(n as u64).to_be_bytes());
        }
    }
    out.extend_from_slice(&mask);
    let start = out.len();
    out.extend_from_slice(payload);
    apply_mask(&mut out[start..], mask);
}

/// XORs `data` with the repeated `mask` (§5.3), eight bytes at a time.
pub(crate) fn apply_mask(data: &mut [u8], mask: [u8; 4]) {
    let wide = u64::from_ne_bytes([
        mask[0], mask[1], mask[2], mask[3], mask[0], mask[1], mask[2], mask[3],
    ]);
    let mut chunks = data.chunks_exact_mut(8);
    for chunk in &mut chunks {
        let v = u64::from_ne_bytes((&*chunk).try_into().expect("8 bytes")) ^ wide;
        chunk.copy_from_slice(&v.to_ne_bytes());
    }
    for (i, b) in chunks.into_remainder().iter_mut().enumerate() {
        *b ^= mask[i & 3];
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// RFC 6455 §5.7's examples, as a server sends them.
    #[test]
    fn the_rfc_examples_parse() {
        let hello = [0x81, 0x05, 0x48, 0x65, 0x6c, 0x6c, 0x6f];
        let h = parse_header(&hello, 1 << 20, false).unwrap().unwrap();
        assert_eq!(
            (h.fin, h.opcode, h.header_len, h.payload_len),
            (true, TEXT, 2, 5)
        );
        let first = [0x01, 0x03, 0x48, 0x65, 0x6c];
        let h = parse_header(&first, 1 << 20, false).unwrap().unwrap();
        assert_eq!((h.fin, h.opcode), (false, TEXT));
        let cont = [0x80, 0x02, 0x6c, 0x6f];
        let h = parse_header(&cont, 1 << 20, false).unwrap().unwrap();
        assert_eq!((h.fin, h.opcode), (true, CONTINUATION));
        // 256 bytes binary, 16-bit length; 64 KiB, 64-bit length.
        let h = parse_header(&[0x82, 0x7E, 0x01, 0x00], 1 << 20, false)
            .unwrap()
            .unwrap();
        assert_eq!((h.header_len, h.payload_len), (4, 256));
        let h = parse_header(&[0x82, 0x7F, 0, 0, 0, 0, 0, 1, 0, 0], 1 << 20, false)
            .unwrap()
            .unwrap();
        assert_eq!((h.header_len, h.payload_len), (10, 65536));
    }

    #[test]
    fn an_incomplete_header_asks_for_more() {
        for partial in [
            &[][..],
            &[0x81],
            &[0x82, 0x7E, 0x01],
            &[0x82, 0x7F, 0, 0, 0],
        ] {
            assert_eq!(
                parse_header(partial, 1 << 20, false),
                Ok(None),
                "{partial:?}"
            );
        }
    }

    #[test]
    fn what_a_server_may_not_send_is_refused() {
        let cases: [(&[u8], &str); 9] = [
            (&[0xC1, 0x00], "RSV1 set without"),
            (&[0xA1, 0x00], "RSV2 or RSV3"),
            (&[0x83, 0x00], "reserved opcode"),
            (&[0x8F, 0x00], "reserved opcode"),
            (&[0x81, 0x85, 1, 2, 3, 4], "masked"),
            (&[0x09, 0x00], "fragmented control"),
            (&[0x89, 0x7E, 0x00, 0x7E], "longer than 125"),
            (
                &[0x81, 0x7F, 0x80, 0, 0, 0, 0, 0, 0, 0],
                "most significant bit",
            ),
            (&[0x82, 0x7E, 0x10, 0x00], "longer than max_message"),
        ];
        for (bytes, reason) in cases {
            let err = parse_header(bytes, 1024, false).unwrap_err();
            assert!(err.contains(reason), "{bytes:?}: {err}");
        }
        assert_eq!(
            parse_header(&[0xC9, 0x00], 1024, true),
            Err("RSV1 set on a control frame")
        );
        assert!(
            parse_header(&[0xC1, 0x00], 1024, true)
                .unwrap()
                .unwrap()
                .rsv1
        );
    }

    /// RFC 6455 §5.7: "Hello" masked with 37 fa 21 3d.
    #[test]
    fn a_masked_frame_is_written_as_the_rfc_shows() {
        let mut out = Vec::new();
        encode(&mut out, TEXT, false, b"Hello", [0x37, 0xfa, 0x21, 0x3d]);
        assert_eq!(
            out,
            [0x81, 0x85, 0x37, 0xfa, 0x21, 0x3d, 0x7f, 0x9f, 0x4d, 0x51, 0x58]
        );
    }

    #[test]
    fn lengths_take_the_shortest_form_and_masking_round_trips() {
        for len in [0, 125, 126, 65535, 65536, 100_003] {
            let payload: Vec<u8> = (0..len).map(|i| (i % 251) as u8).collect();
            let mut out = Vec::new();
            encode(&mut out, BINARY, true, &payload, [9, 8, 7, 6]);
            let header_len = match len {
                0..=125 => 2,
                126..=65535 => 4,
                _ => 10,
            };
            assert_eq!(out.len(), header_len + 4 + len, "{len}");
            assert_eq!(out[0], 0x80 | 0x40 | BINARY);
            let mut body = out[header_len + 4..].to_vec();
            apply_mask(&mut body, [9, 8, 7, 6]);
            assert!(body == payload, "{len}");
            // The same header, unmasked, as a server would send it, parses to the same length.
            let mut server = out[..header_len].to_vec();
            server[1] &= 0x7F;
            let h = parse_header(&server, 1 << 20, true).unwrap().unwrap();
            assert_eq!((h.header_len, h.payload_len), (header_len, len));
        }
    }
}
