//! The HTTP/2 client's HPACK decoder, directly (through onrush-http2's `fuzzing` feature).
//!
//! First byte: the dynamic table size the decoder allows (0, 64, 4096 or 65536 bytes); second
//! byte: the length of the header blocks the rest is cut into (0: one block), decoded in order
//! by one decoder so that the dynamic table carries over as on a connection. The rest is also
//! decoded as one Huffman string.

use onrush_http2::fast::fuzzing::{hpack_decode, huffman};

pub fn run(data: &[u8]) {
    let [sizes, cut, rest @ ..] = data else {
        return;
    };
    let allowed = [0, 64, 4096, 65536][usize::from(*sizes) % 4];
    // Blocks of `cut` bytes (one block when 0): the table carries over between them.
    let blocks: Vec<&[u8]> = if *cut == 0 {
        vec![rest]
    } else {
        rest.chunks(usize::from(*cut)).collect()
    };
    let mut fields = 0usize;
    let mut bytes = 0usize;
    hpack_decode(allowed, &blocks, &mut |name, value| {
        fields += 1;
        bytes += name.len() + value.len();
    });
    // A field is at least one byte of the block (an index); its text comes from the block,
    // the static table or the dynamic table, which holds at most `allowed` bytes.
    assert!(fields <= rest.len(), "more fields than bytes");
    if let Some(decoded) = huffman(rest) {
        // The shortest Huffman code is 5 bits.
        assert!(
            decoded.len() * 5 <= rest.len() * 8,
            "Huffman output too long"
        );
    }
}

pub const DICT: &[&[u8]] = &[
    b"\x82",
    b"\x88",
    b"\xbe",
    b"\xff\x00",
    b"\x40",
    b"\x00",
    b"\x10",
    b"\x20",
    b"\x3f\xe1\x1f",
    b"\x7f\xff\xff\xff\x0f",
    b"\x80\xff\xff\xff\x0f",
    b"\x85",
    b"\x8f",
    b"\xff\xff\xff\xff",
    b"\x1f",
    b"\x3f",
];
