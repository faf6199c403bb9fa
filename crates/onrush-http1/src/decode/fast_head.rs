//! A fast path for the common response head, tried before httparse.
//!
//! Why by hand (the project's rule: only what a library was measured too slow for): httparse
//! cost 947 user instructions per keep-alive response of `onrush serve` (a status line and
//! three headers; callgrind, worker thread, docs/benchmarks.md, 2026-11-26), much of it the
//! set-up of its vectorised scanners, which does not pay off on lines of 2-30 bytes. This path
//! costs ~600 on the same responses, the framing headers' reading included (2026-11-27): it
//! reads names and values sixteen bytes at a time with SSE2, which every x86_64 CPU has (no
//! detection at run time), eight at a time in a plain `u64` elsewhere and near the input's
//! end, and feeds each line to the decoder's framing as it goes (no second loop).
//!
//! It accepts only a strict subset of what httparse accepts, and gives the same result for it:
//! `HTTP/1.1` or `HTTP/1.0`, one space, three digits, one space, a reason phrase of visible
//! ASCII and spaces, CRLF; then at most [`FAST_HEADERS`] lines of a token name, a colon, spaces,
//! a value of visible ASCII and spaces (trailing spaces trimmed, as httparse does), CRLF; then
//! CRLF. Anything else, and a head not complete in the input, returns `None` and the caller
//! runs httparse, which decides: a malformed head is reported by httparse's rules, with its
//! error, exactly as before this path existed.

use std::mem::MaybeUninit;

use super::Framing;
use crate::MAX_HEAD_BYTES;

/// The most header lines this path handles; a head with more is left to httparse. Sixteen
/// covers the responses of common servers and APIs.
pub(super) const FAST_HEADERS: usize = 16;

/// A head this path parsed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct FastHead {
    /// 1 for HTTP/1.1, 0 for HTTP/1.0 (as httparse's `version`).
    pub version: u8,
    pub status: u16,
    /// Bytes of the head, its final CRLF included.
    pub len: usize,
}

/// RFC 9110 `tchar`: what a header name is made of.
static TOKEN: [bool; 256] = {
    let mut table = [false; 256];
    let mut b = 0;
    while b < 256 {
        let c = b as u8;
        table[b] = c.is_ascii_alphanumeric()
            || matches!(
                c,
                b'!' | b'#'
                    | b'$'
                    | b'%'
                    | b'&'
                    | b'\''
                    | b'*'
                    | b'+'
                    | b'-'
                    | b'.'
                    | b'^'
                    | b'_'
                    | b'`'
                    | b'|'
                    | b'~'
            );
        b += 1;
    }
    table
};

/// Parses the head at the start of `input` into `slots`, or `None` (see the module's doc).
/// Returns the header lines it wrote, and has fed each to `framing` as it went (one pass over
/// the head rather than a second loop over the lines); a line `framing` refuses makes it
/// step aside too, so httparse and the decoder's general path report it as before.
pub(super) fn parse<'h, 'b>(
    input: &'b [u8],
    slots: &'h mut [MaybeUninit<httparse::Header<'b>>; FAST_HEADERS],
    framing: &mut Framing,
) -> Option<(FastHead, &'h [httparse::Header<'b>])> {
    let (version, status) = status_line(input)?;
    // "HTTP/1.1 200 " is 13 bytes; the reason phrase runs to the first CR.
    let reason = &input[13..];
    let mut rest = crlf(&reason[text_len(reason)..])?;
    let mut count = 0;
    loop {
        // Slices rather than an index: no bounds check per byte.
        let name_len = token_len(rest)?;
        let (name, after_name) = rest.split_at(name_len);
        let [b':', after_colon @ ..] = after_name else {
            if name_len == 0 {
                // The blank line that ends the head (or something httparse must judge).
                let len = input.len() - crlf(rest)?.len();
                if len > MAX_HEAD_BYTES {
                    return None;
                }
                // SAFETY: `count` grows only right after `slots[count]` was written, so the
                // first `count` slots are initialised; `slots` stays borrowed for `'h`.
                let headers = unsafe { std::slice::from_raw_parts(slots.as_ptr().cast(), count) };
                return Some((
                    FastHead {
                        version,
                        status,
                        len,
                    },
                    headers,
                ));
            }
            return None;
        };
        if name_len == 0 {
            return None;
        }
        // Nearly always one space after the colon: checked without a loop.
        let value_and_rest = match after_colon {
            [b' ', rest @ ..] if rest.first() != Some(&b' ') => rest,
            _ => &after_colon[after_colon.iter().position(|&b| b != b' ')?..],
        };
        let (mut value, after_value) = value_and_rest.split_at(text_len(value_and_rest));
        rest = crlf(after_value)?;
        while let [trimmed @ .., b' '] = value {
            value = trimmed;
        }
        framing.header(name, value).ok()?;
        let slot = slots.get_mut(count)?;
        // SAFETY: every byte of `name` passed `TOKEN`, which holds only ASCII bytes, so it is
        // UTF-8. (`str::from_utf8` cost ~120 instructions per response here, callgrind.)
        let name = unsafe { std::str::from_utf8_unchecked(name) };
        slot.write(httparse::Header { name, value });
        count += 1;
    }
}

/// `HTTP/1.x DDD ` at the start of `input`: the version (0 or 1) and the status code.
fn status_line(input: &[u8]) -> Option<(u8, u16)> {
    let line: &[u8; 13] = input.first_chunk()?;
    // One eight-byte compare (a match on the byte strings cost ~17 instructions).
    let version = match u64::from_le_bytes(*line.first_chunk()?) {
        v if v == u64::from_le_bytes(*b"HTTP/1.1") => 1,
        v if v == u64::from_le_bytes(*b"HTTP/1.0") => 0,
        _ => return None,
    };
    let [b' ', hundreds, tens, ones, b' '] = line[8..] else {
        return None;
    };
    let mut status = 0u16;
    for digit in [hundreds, tens, ones] {
        if !digit.is_ascii_digit() {
            return None;
        }
        status = status * 10 + u16::from(digit - b'0');
    }
    Some((version, status))
}

/// `bytes` after the CRLF it starts with.
fn crlf(bytes: &[u8]) -> Option<&[u8]> {
    // One two-byte compare (the slice pattern compared byte by byte: ~12 instructions a line).
    bytes.strip_prefix(b"\r\n")
}

/// How many bytes at the start of `bytes` are token bytes ([`TOKEN`]): the length of a header
/// name. `None` when they all are (the head goes on beyond the input). Letters, digits and `-`,
/// what header names are made of, are recognised eight at a time; the other token bytes, and
/// the byte that ends the name, one at a time. Sixteen at a time with SSE2 where it exists
/// (every x86_64), while sixteen bytes remain.
#[inline(always)]
fn token_len(bytes: &[u8]) -> Option<usize> {
    // Inlined, the common name (under 16 bytes of letters, digits and `-`, then `:`): one
    // block and no call. A call per line cost ~16 instructions of saving registers.
    #[cfg(all(target_arch = "x86_64", target_feature = "sse2"))]
    if let Some(block) = bytes.first_chunk::<16>() {
        let stops = sse2::common_name_stops(block);
        if stops != 0 {
            let len = stops.trailing_zeros() as usize;
            if !TOKEN[usize::from(block[len & 15])] {
                return Some(len);
            }
        }
    }
    token_len_long(bytes)
}

/// [`token_len`] for any name: sixteen bytes at a time while they last, then eight.
#[inline(never)]
fn token_len_long(bytes: &[u8]) -> Option<usize> {
    #[cfg(all(target_arch = "x86_64", target_feature = "sse2"))]
    let len = {
        let mut len = 0;
        while let Some(block) = bytes.get(len..len + 16) {
            let stops = sse2::common_name_stops(block.try_into().expect("16 bytes"));
            if stops != 0 {
                let len = len + stops.trailing_zeros() as usize;
                let tail = bytes[len..].iter().position(|&b| !TOKEN[usize::from(b)])?;
                return Some(len + tail);
            }
            len += 16;
        }
        len
    };
    #[cfg(not(all(target_arch = "x86_64", target_feature = "sse2")))]
    let len = 0;
    token_len_words(&bytes[len..]).map(|n| len + n)
}

/// [`token_len`] eight bytes at a time in a `u64`.
fn token_len_words(bytes: &[u8]) -> Option<usize> {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGH: u64 = 0x8080_8080_8080_8080;
    // Per byte of a word whose high bits are clear: the high bit set when `lo <= byte <= hi`.
    // No carry crosses a byte (each sum stays below 0x100), so every byte's answer is exact.
    let in_range = |x: u64, lo: u8, hi: u8| {
        x.wrapping_add(ONES * u64::from(0x80 - lo))
            & !x.wrapping_add(ONES * u64::from(0x7f - hi))
            & HIGH
    };
    let mut len = 0;
    for word in bytes.chunks_exact(8) {
        let w = u64::from_le_bytes(word.try_into().expect("chunks of 8"));
        let low7 = w & !HIGH;
        // Setting bit 5 turns exactly the upper-case letters into lower-case ones.
        let letters = in_range(low7 | (ONES * 0x20), b'a', b'z');
        let common = (letters | in_range(low7, b'0', b'9') | in_range(low7, b'-', b'-')) & !w;
        if common != HIGH {
            len += ((!common & HIGH).trailing_zeros() / 8) as usize;
            break;
        }
        len += 8;
    }
    let tail = bytes[len..].iter().position(|&b| !TOKEN[usize::from(b)])?;
    Some(len + tail)
}

/// How many bytes at the start of `bytes` are visible ASCII or a space (0x20..=0x7e): the
/// extent of a reason phrase or a header value. Eight bytes at a time: a byte stops the run
/// when it is below 0x20 (CR, LF, a tab, a control byte), 0x7f, or 0x80 and above. Sixteen at
/// a time with SSE2 where it exists (every x86_64), while sixteen bytes remain.
fn text_len(bytes: &[u8]) -> usize {
    #[cfg(all(target_arch = "x86_64", target_feature = "sse2"))]
    let len = {
        let mut len = 0;
        while let Some(block) = bytes.get(len..len + 16) {
            let stops = sse2::text_stops(block.try_into().expect("16 bytes"));
            if stops != 0 {
                return len + stops.trailing_zeros() as usize;
            }
            len += 16;
        }
        len
    };
    #[cfg(not(all(target_arch = "x86_64", target_feature = "sse2")))]
    let len = 0;
    len + text_len_words(&bytes[len..])
}

/// [`text_len`] eight bytes at a time in a `u64`.
fn text_len_words(bytes: &[u8]) -> usize {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGH: u64 = 0x8080_8080_8080_8080;
    let mut words = bytes.chunks_exact(8);
    let mut len = 0;
    for word in &mut words {
        let w = u64::from_le_bytes(word.try_into().expect("chunks of 8"));
        // The lowest flagged byte is exact in each term (a borrow only reaches above a byte
        // that is flagged itself): below 0x20, equal to 0x7f, high bit set.
        let below_space = w.wrapping_sub(ONES * 0x20) & !w;
        let delete = {
            let x = w ^ (ONES * 0x7f);
            x.wrapping_sub(ONES) & !x
        };
        let stop = (below_space | delete | w) & HIGH;
        if stop != 0 {
            return len + (stop.trailing_zeros() / 8) as usize;
        }
        len += 8;
    }
    len + words
        .remainder()
        .iter()
        .take_while(|&&b| (0x20..0x7f).contains(&b))
        .count()
}

/// The scans sixteen bytes at a time. SSE2 is part of every x86_64 CPU (the target's baseline),
/// so no detection at run time. Each function returns a bit per byte of the block, set where
/// the run stops.
#[cfg(all(target_arch = "x86_64", target_feature = "sse2"))]
mod sse2 {
    use std::arch::x86_64::{
        __m128i, _mm_add_epi8, _mm_andnot_si128, _mm_cmpeq_epi8, _mm_cmpgt_epi8, _mm_loadu_si128,
        _mm_movemask_epi8, _mm_or_si128, _mm_set1_epi8,
    };

    // SAFETY (every `unsafe` below): the module is compiled only where SSE2 is enabled at
    // compile time (`target_feature = "sse2"`, part of the x86_64 baseline), so the intrinsics'
    // instructions exist on every CPU the binary runs on; they read only their arguments, and
    // the one load reads the 16 bytes of a `&[u8; 16]` (`loadu`: any alignment).

    fn load(block: &[u8; 16]) -> __m128i {
        // SAFETY: see the module's comment.
        unsafe { _mm_loadu_si128(block.as_ptr().cast()) }
    }

    /// Per byte: all ones where `lo <= byte <= hi` (with `hi - lo < 128`). Adding `0x80 - lo`
    /// moves the range to the bottom of the signed bytes, where one signed compare bounds it.
    fn in_range(x: __m128i, lo: u8, hi: u8) -> __m128i {
        // SAFETY: see the module's comment.
        unsafe {
            let shifted = _mm_add_epi8(x, _mm_set1_epi8(0x80u8.wrapping_sub(lo) as i8));
            _mm_cmpgt_epi8(
                _mm_set1_epi8((i8::MIN as u8 + (hi - lo) + 1) as i8),
                shifted,
            )
        }
    }

    /// Where the block stops being visible ASCII or a space (0x20..=0x7e).
    pub(super) fn text_stops(block: &[u8; 16]) -> u32 {
        let v = load(block);
        // SAFETY: see the module's comment.
        let text = unsafe {
            // Signed: 0x80..=0xff are negative, so "greater than 0x1f" rejects them too.
            let text = _mm_andnot_si128(
                _mm_cmpeq_epi8(v, _mm_set1_epi8(0x7f)),
                _mm_cmpgt_epi8(v, _mm_set1_epi8(0x1f)),
            );
            _mm_movemask_epi8(text) as u32
        };
        !text & 0xffff
    }

    /// Where the block stops being letters, digits and `-` (what names are made of; the other
    /// token bytes are the caller's to check one at a time).
    pub(super) fn common_name_stops(block: &[u8; 16]) -> u32 {
        let v = load(block);
        // SAFETY: see the module's comment.
        let common = unsafe {
            // Setting bit 5 turns exactly the upper-case letters into lower-case ones (and no
            // byte outside the letters into one).
            let letters = in_range(_mm_or_si128(v, _mm_set1_epi8(0x20)), b'a', b'z');
            let digits = in_range(v, b'0', b'9');
            let dash = _mm_cmpeq_epi8(v, _mm_set1_epi8(b'-' as i8));
            _mm_movemask_epi8(_mm_or_si128(_mm_or_si128(letters, digits), dash)) as u32
        };
        !common & 0xffff
    }
}

#[cfg(test)]
#[path = "fast_head_tests.rs"]
mod tests;
