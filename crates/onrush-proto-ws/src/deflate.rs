//! permessage-deflate (RFC 7692): the offer a client makes, the server's answer read, and a
//! message compressed or decompressed with the contexts the answer allows.
//!
//! **The offer** is `permessage-deflate` with no parameter, as the smallest offer every server
//! understands. Without `client_max_window_bits` in the offer the server may not shrink the
//! client's window (§7.1.2.2), which matters because the deflater (miniz_oxide, pure Rust, as
//! HTTP's decoders) always uses 32 KiB; the inflater reads any window up to that, so the
//! server's `server_max_window_bits` is accepted whatever it is.
//!
//! **Memory.** A compressor holds ~300 KiB and a decompressor ~45 KiB, per socket: each is
//! allocated at its socket's first compressed message, not at the handshake, so an idle socket
//! costs nothing more. Where the server's answer says a context is not taken over between
//! messages (`server_no_context_takeover`), the decompressor is freed after each message.
//! Messages are compressed at level 1: the server's work (inflating) is the same at every
//! level, and the generator's CPU is what a load tool must save.

use flate2::{Compress, Compression, Decompress, FlushCompress, FlushDecompress, Status};

/// The `Sec-WebSocket-Extensions` value a client offers.
pub(crate) const OFFER: &str = "permessage-deflate";

/// What ends every compressed message before the sender strips it (§7.2.1), and what the
/// receiver puts back (§7.2.2).
const TAIL: [u8; 4] = [0x00, 0x00, 0xff, 0xff];

/// What the server's answer said.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) struct Agreed {
    /// The server resets its compressor after each message.
    pub server_no_context_takeover: bool,
    /// The client must reset its compressor after each message.
    pub client_no_context_takeover: bool,
}

/// Reads the server's `Sec-WebSocket-Extensions` values: `Ok(None)` when none accepts an
/// extension; an error names what the server answered that was not offered or is malformed.
pub(crate) fn parse_answer<'a>(
    values: impl Iterator<Item = &'a str>,
) -> Result<Option<Agreed>, String> {
    let mut agreed: Option<Agreed> = None;
    for extension in values.flat_map(|v| v.split(',')) {
        let mut params = extension.split(';').map(str::trim);
        let name = params.next().unwrap_or_default();
        if name.is_empty() {
            continue;
        }
        if !name.eq_ignore_ascii_case(OFFER) {
            return Err(format!(
                "the server accepted {name:?}, which was not offered"
            ));
        }
        if agreed.is_some() {
            return Err("the server accepted permessage-deflate twice".into());
        }
        let mut a = Agreed::default();
        for param in params {
            let (key, value) = match param.split_once('=') {
                Some((k, v)) => (k.trim(), Some(v.trim().trim_matches('"'))),
                None => (param, None),
            };
            match (key.to_ascii_lowercase().as_str(), value) {
                ("server_no_context_takeover", None) => a.server_no_context_takeover = true,
                ("client_no_context_takeover", None) => a.client_no_context_takeover = true,
                ("server_max_window_bits", Some(bits))
                    if bits.parse::<u8>().is_ok_and(|b| (8..=15).contains(&b)) => {}
                // Not offered, so the server may not answer it (§7.1.2.2); 15 changes nothing.
                ("client_max_window_bits", Some("15")) => {}
                _ => {
                    return Err(format!(
                        "permessage-deflate parameter {param:?} is not one this offer allows"
                    ))
                }
            }
        }
        agreed = Some(a);
    }
    Ok(agreed)
}

/// One socket's compression contexts.
pub(crate) struct Deflate {
    agreed: Agreed,
    compress: Option<Box<Compress>>,
    decompress: Option<Box<Decompress>>,
}

/// A compressed message that does not inflate, or inflates past the limit.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum InflateError {
    Corrupt,
    TooLong,
}

impl Deflate {
    pub(crate) fn new(agreed: Agreed) -> Self {
        Deflate {
            agreed,
            compress: None,
            decompress: None,
        }
    }

    /// Appends `message` compressed (the tail stripped) to `out`.
    pub(crate) fn compress(&mut self, mut message: &[u8], out: &mut Vec<u8>) {
        let c = self
            .compress
            .get_or_insert_with(|| Box::new(Compress::new(Compression::fast(), false)));
        let start = out.len();
        loop {
            if out.len() == out.capacity() {
                out.reserve(message.len() / 2 + 64);
            }
            let before = c.total_in();
            // A raw deflate stream in memory: miniz_oxide fails only on a misused state,
            // which a sync flush after every message never leaves.
            c.compress_vec(message, out, FlushCompress::Sync)
                .expect("deflate into memory");
            message = &message[(c.total_in() - before) as usize..];
            if message.is_empty() && out.len() < out.capacity() {
                break;
            }
        }
        if out[start..].ends_with(&TAIL) {
            out.truncate(out.len() - TAIL.len());
        }
        if self.agreed.client_no_context_takeover {
            c.reset();
        }
    }

    /// Appends the inflated `message` (the payloads of its frames, in order) to `out`, at most
    /// `max` bytes of it.
    pub(crate) fn decompress(
        &mut self,
        message: &[u8],
        out: &mut Vec<u8>,
        max: usize,
    ) -> Result<(), InflateError> {
        let d = self
            .decompress
            .get_or_insert_with(|| Box::new(Decompress::new(false)));
        let limit = out.len() + max;
        let done = inflate(d, message, out, limit, FlushDecompress::None).and_then(|end| {
            if end {
                Ok(true)
            } else {
                inflate(d, &TAIL, out, limit, FlushDecompress::Sync)
            }
        });
        match done {
            // A final block (BFINAL) ends the stream: the next message starts a new one.
            Ok(true) => self.decompress = None,
            Ok(false) if self.agreed.server_no_context_takeover => self.decompress = None,
            Ok(false) => {}
            Err(e) => {
                self.decompress = None;
                return Err(e);
            }
        }
        Ok(())
    }
}

/// Inflates all of `input` into `out`, which may not grow past `limit`: `Ok(true)` when the
/// stream ended (a final block).
fn inflate(
    d: &mut Decompress,
    mut input: &[u8],
    out: &mut Vec<u8>,
    limit: usize,
    flush: FlushDecompress,
) -> Result<bool, InflateError> {
    loop {
        if out.len() == out.capacity() {
            // One byte past the limit tells a message that is too long from one that fits.
            let room = (limit + 1).saturating_sub(out.len());
            if room == 0 {
                return Err(InflateError::TooLong);
            }
            out.reserve_exact((input.len() * 4).clamp(256, 64 * 1024).min(room));
        }
        let (before_in, before_out) = (d.total_in(), d.total_out());
        let status = d
            .decompress_vec(input, out, flush)
            .map_err(|_| InflateError::Corrupt)?;
        input = &input[(d.total_in() - before_in) as usize..];
        if out.len() > limit {
            return Err(InflateError::TooLong);
        }
        match status {
            Status::StreamEnd => return Ok(true),
            _ if input.is_empty() && out.len() < out.capacity() => return Ok(false),
            // No progress with room to write: the input is cut short or corrupt.
            _ if d.total_in() == before_in
                && d.total_out() == before_out
                && out.len() < out.capacity() =>
            {
                return Err(InflateError::Corrupt)
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// RFC 7692 §7.2.3.1-2: "Hello" compressed, and twice with the context taken over.
    #[test]
    fn the_rfc_examples_inflate() {
        let mut d = Deflate::new(Agreed::default());
        let mut out = Vec::new();
        d.decompress(&[0xf2, 0x48, 0xcd, 0xc9, 0xc9, 0x07, 0x00], &mut out, 100)
            .unwrap();
        assert_eq!(out, b"Hello");
        out.clear();
        // The second "Hello" refers back to the first (§7.2.3.2).
        d.decompress(&[0xf2, 0x00, 0x11, 0x00, 0x00], &mut out, 100)
            .unwrap();
        assert_eq!(out, b"Hello");
        // A stored (uncompressed) block, §7.2.3.3.
        out.clear();
        let mut fresh = Deflate::new(Agreed::default());
        fresh
            .decompress(
                &[
                    0x00, 0x05, 0x00, 0xfa, 0xff, 0x48, 0x65, 0x6c, 0x6c, 0x6f, 0x00,
                ],
                &mut out,
                100,
            )
            .unwrap();
        assert_eq!(out, b"Hello");
    }

    #[test]
    fn messages_round_trip_with_and_without_context_takeover() {
        for agreed in [
            Agreed::default(),
            Agreed {
                server_no_context_takeover: true,
                client_no_context_takeover: true,
            },
        ] {
            let mut client = Deflate::new(agreed);
            // The other side of the socket: what the client compresses, it inflates.
            let mut server = Deflate::new(Agreed {
                server_no_context_takeover: agreed.client_no_context_takeover,
                client_no_context_takeover: false,
            });
            let mut sizes = Vec::new();
            for i in 0..5 {
                let message = format!("{{\"op\":\"quote\",\"symbol\":\"ACME\",\"n\":{i}}}")
                    .repeat(if i == 4 { 5000 } else { 1 });
                let mut wire = Vec::new();
                client.compress(message.as_bytes(), &mut wire);
                assert!(!wire.ends_with(&TAIL), "the tail is stripped");
                sizes.push(wire.len());
                let mut back = Vec::new();
                server.decompress(&wire, &mut back, 1 << 20).unwrap();
                assert!(back == message.as_bytes(), "{agreed:?} message {i}");
            }
            // Taken over, the second message refers back to the first and is shorter.
            if !agreed.client_no_context_takeover {
                assert!(sizes[1] < sizes[0], "{sizes:?}");
            }
            assert!(sizes[4] < 5000, "200 KB of repeats compress: {sizes:?}");
        }
        // An empty message is the empty string on the wire and back.
        let mut c = Deflate::new(Agreed::default());
        let mut wire = Vec::new();
        c.compress(b"", &mut wire);
        let mut back = Vec::new();
        Deflate::new(Agreed::default())
            .decompress(&wire, &mut back, 10)
            .unwrap();
        assert!(back.is_empty());
    }

    #[test]
    fn a_bomb_stops_at_the_limit_and_garbage_is_corrupt() {
        let mut c = Deflate::new(Agreed::default());
        let mut wire = Vec::new();
        c.compress(&vec![b'x'; 10 << 20], &mut wire);
        assert!(wire.len() < 64 * 1024, "{}", wire.len());
        let mut out = Vec::new();
        let mut d = Deflate::new(Agreed::default());
        assert_eq!(
            d.decompress(&wire, &mut out, 1 << 20),
            Err(InflateError::TooLong)
        );
        assert!(
            out.capacity() <= (1 << 20) + 64 * 1024,
            "{}",
            out.capacity()
        );
        let mut out = Vec::new();
        assert_eq!(
            Deflate::new(Agreed::default()).decompress(&[0xff; 40], &mut out, 1 << 20),
            Err(InflateError::Corrupt)
        );
    }

    #[test]
    fn the_servers_answer_is_read_strictly() {
        let read = |v: &[&str]| parse_answer(v.iter().copied());
        assert_eq!(read(&[]), Ok(None));
        assert_eq!(read(&["permessage-deflate"]), Ok(Some(Agreed::default())));
        assert_eq!(
            read(&["permessage-deflate; server_max_window_bits=12; client_no_context_takeover"]),
            Ok(Some(Agreed {
                server_no_context_takeover: false,
                client_no_context_takeover: true
            }))
        );
        assert_eq!(
            read(&["Permessage-Deflate; Server_No_Context_Takeover"]),
            Ok(Some(Agreed {
                server_no_context_takeover: true,
                client_no_context_takeover: false
            }))
        );
        for bad in [
            "x-webkit-deflate-frame",
            "permessage-deflate, permessage-deflate",
            "permessage-deflate; client_max_window_bits=10",
            "permessage-deflate; server_max_window_bits=7",
            "permessage-deflate; mystery",
        ] {
            assert!(read(&[bad]).is_err(), "{bad}");
        }
    }
}
