//! Entry points for the fuzz targets (crates/onrush-fuzz), behind the `fuzzing` feature: the
//! HPACK decoder is private, and reaching it only through whole connections would spend most
//! of each fuzz input on framing.

use super::hpack_dec::{huffman_decode, Decoder};

/// Decodes `blocks` in order with one decoder (so the dynamic table carries over, as on a
/// connection), whose table may hold `allowed` bytes; calls `field` for each decoded field.
/// Returns how many blocks decoded before the first error.
pub fn hpack_decode(
    allowed: usize,
    blocks: &[&[u8]],
    field: &mut dyn FnMut(&[u8], &[u8]),
) -> usize {
    let mut decoder = Decoder::new(allowed);
    for (i, block) in blocks.iter().enumerate() {
        if decoder.decode(block, &mut *field).is_err() {
            return i;
        }
    }
    blocks.len()
}

/// Decodes a Huffman-coded string; `None` when it is not valid.
pub fn huffman(src: &[u8]) -> Option<Vec<u8>> {
    let mut out = Vec::new();
    huffman_decode(src, &mut out).ok().map(|()| out)
}
