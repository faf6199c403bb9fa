//! HPACK decoding of response header blocks (RFC 7541): static and dynamic tables, size
//! updates, Huffman coding.
//!
//! Hand-written because `loona-hpack` (measured first) builds a HashMap-based Huffman decoder
//! for every Huffman-coded string: ~190,000 instructions per response from hyper's server,
//! which Huffman-codes `content-length` (never indexed) in every response. This decoder uses
//! a 4-bit state machine built once per process, borrows strings from the block or the table
//! where it can, and allocates only when an entry is added to the dynamic table.

use std::collections::VecDeque;
use std::sync::OnceLock;

use super::hpack_tables::{HUFFMAN, STATIC};

/// Why a block could not be decoded (a COMPRESSION_ERROR).
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct DecodeError;

/// One dynamic-table entry: name and value back to back.
struct Entry {
    bytes: Box<[u8]>,
    name_len: usize,
}

impl Entry {
    fn size(&self) -> usize {
        self.bytes.len() + 32
    }
}

pub(crate) struct Decoder {
    /// Newest first (index 62 is `table[0]`).
    table: VecDeque<Entry>,
    size: usize,
    max_size: usize,
    /// What SETTINGS_HEADER_TABLE_SIZE allows (we announce the default, 4096).
    allowed: usize,
    name_buf: Vec<u8>,
    value_buf: Vec<u8>,
}

/// A decoded string: where its bytes are.
#[derive(Clone, Copy)]
enum Str {
    /// `block[start..end]`
    Block(usize, usize),
    /// The name (or value) scratch buffer.
    Scratch,
    /// Static table entry's name or value.
    Static(&'static [u8]),
    /// Dynamic table entry `i`'s name.
    TableName(usize),
}

impl Decoder {
    pub(crate) fn new(allowed: usize) -> Decoder {
        Decoder {
            table: VecDeque::new(),
            size: 0,
            max_size: allowed,
            allowed,
            name_buf: Vec::new(),
            value_buf: Vec::new(),
        }
    }

    fn evict(&mut self, room: usize) {
        while self.size + room > self.max_size {
            match self.table.pop_back() {
                Some(e) => self.size -= e.size(),
                None => break,
            }
        }
    }

    /// Decodes `block`, calling `f(name, value)` for each field in order.
    pub(crate) fn decode(
        &mut self,
        block: &[u8],
        mut f: impl FnMut(&[u8], &[u8]),
    ) -> Result<(), DecodeError> {
        let mut pos = 0;
        let mut fields = false;
        while pos < block.len() {
            let first = block[pos];
            if first & 0x80 != 0 {
                let idx = int(block, &mut pos, 7)?;
                fields = true;
                match idx {
                    0 => return Err(DecodeError),
                    1..=61 => {
                        let (n, v) = STATIC[idx - 1];
                        f(n, v);
                    }
                    _ => {
                        let e = self.table.get(idx - 62).ok_or(DecodeError)?;
                        let (n, v) = e.bytes.split_at(e.name_len);
                        f(n, v);
                    }
                }
                continue;
            }
            if first & 0xe0 == 0x20 {
                // A dynamic table size update: only before the first field.
                if fields {
                    return Err(DecodeError);
                }
                let size = int(block, &mut pos, 5)?;
                if size > self.allowed {
                    return Err(DecodeError);
                }
                self.max_size = size;
                self.evict(0);
                continue;
            }
            fields = true;
            let (prefix, index) = if first & 0xc0 == 0x40 {
                (6, true)
            } else {
                (4, false)
            };
            let name_idx = int(block, &mut pos, prefix)?;
            let name = match name_idx {
                0 => string(block, &mut pos, &mut self.name_buf)?,
                1..=61 => Str::Static(STATIC[name_idx - 1].0),
                _ => {
                    if name_idx - 62 >= self.table.len() {
                        return Err(DecodeError);
                    }
                    Str::TableName(name_idx - 62)
                }
            };
            let value = string(block, &mut pos, &mut self.value_buf)?;
            let n = self.resolve(block, name, true);
            let v = self.resolve(block, value, false);
            f(n, v);
            if index {
                let len = n.len() + v.len();
                let mut bytes = Vec::with_capacity(len);
                bytes.extend_from_slice(n);
                bytes.extend_from_slice(v);
                let entry = Entry {
                    bytes: bytes.into_boxed_slice(),
                    name_len: n.len(),
                };
                let size = entry.size();
                if size > self.max_size {
                    // Too big for the table: it empties the table (RFC 7541 §4.4).
                    self.table.clear();
                    self.size = 0;
                } else {
                    self.evict(size);
                    self.size += size;
                    self.table.push_front(entry);
                }
            }
        }
        Ok(())
    }

    fn resolve<'a>(&'a self, block: &'a [u8], s: Str, name: bool) -> &'a [u8] {
        match s {
            Str::Block(a, b) => &block[a..b],
            Str::Scratch if name => &self.name_buf,
            Str::Scratch => &self.value_buf,
            Str::Static(s) => s,
            Str::TableName(i) => {
                let e = &self.table[i];
                &e.bytes[..e.name_len]
            }
        }
    }
}

/// An integer with an `n`-bit prefix at `block[*pos]` (RFC 7541 §5.1).
#[inline]
fn int(block: &[u8], pos: &mut usize, n: u8) -> Result<usize, DecodeError> {
    let max = (1usize << n) - 1;
    let mut value = (block[*pos] as usize) & max;
    *pos += 1;
    if value < max {
        return Ok(value);
    }
    let mut shift = 0;
    loop {
        let b = *block.get(*pos).ok_or(DecodeError)?;
        *pos += 1;
        value += ((b & 0x7f) as usize) << shift;
        if b & 0x80 == 0 {
            return Ok(value);
        }
        shift += 7;
        if shift > 28 {
            return Err(DecodeError);
        }
    }
}

/// A string literal at `block[*pos]`: borrowed from the block, or Huffman-decoded into
/// `scratch`.
#[inline]
fn string(block: &[u8], pos: &mut usize, scratch: &mut Vec<u8>) -> Result<Str, DecodeError> {
    let huffman = *block.get(*pos).ok_or(DecodeError)? & 0x80 != 0;
    let len = int(block, pos, 7)?;
    let start = *pos;
    let end = start.checked_add(len).ok_or(DecodeError)?;
    if end > block.len() {
        return Err(DecodeError);
    }
    *pos = end;
    if !huffman {
        return Ok(Str::Block(start, end));
    }
    scratch.clear();
    huffman_decode(&block[start..end], scratch)?;
    Ok(Str::Scratch)
}

const EMIT: u8 = 1;
const ACCEPT: u8 = 2;
const FAIL: u8 = 4;

/// One transition of the Huffman state machine: from a state (an internal node of the code
/// tree), 4 input bits lead to `next`, emitting at most one symbol.
#[derive(Clone, Copy, Default)]
struct Step {
    next: u8,
    sym: u8,
    flags: u8,
}

type Machine = [[Step; 16]; 256];

fn machine() -> &'static Machine {
    static MACHINE: OnceLock<Box<Machine>> = OnceLock::new();
    MACHINE.get_or_init(build_machine)
}

/// Builds the 4-bit decoding machine from the code table.
fn build_machine() -> Box<Machine> {
    // The code tree: node 0 the root; children[i] = [left, right]; leaf symbols apart.
    const NONE: u16 = u16::MAX;
    let mut children: Vec<[u16; 2]> = vec![[NONE, NONE]];
    let mut leaf: Vec<u16> = vec![NONE];
    for (sym, &(code, len)) in HUFFMAN.iter().enumerate() {
        let mut node = 0usize;
        for i in (0..len).rev() {
            let bit = ((code >> i) & 1) as usize;
            if children[node][bit] == NONE {
                children.push([NONE, NONE]);
                leaf.push(NONE);
                children[node][bit] = (children.len() - 1) as u16;
            }
            node = children[node][bit] as usize;
        }
        leaf[node] = sym as u16;
    }
    // Internal nodes get state ids 0..256; note which are a valid padding (all ones, < 8 bits).
    let mut state_of = vec![0u8; children.len()];
    let mut padding_ok = vec![false; children.len()];
    let mut internal = Vec::new();
    let mut stack = vec![(0usize, 0u32, true)];
    while let Some((node, depth, ones)) = stack.pop() {
        if leaf[node] != NONE {
            continue;
        }
        state_of[node] = internal.len() as u8;
        internal.push(node);
        padding_ok[node] = ones && depth <= 7;
        for (bit, &c) in children[node].iter().enumerate() {
            if c != NONE {
                stack.push((c as usize, depth + 1, ones && bit == 1));
            }
        }
    }
    let mut m: Box<Machine> = Box::new([[Step::default(); 16]; 256]);
    for &node in &internal {
        for nibble in 0..16u8 {
            let mut cur = node;
            let mut step = Step::default();
            for i in (0..4).rev() {
                let bit = ((nibble >> i) & 1) as usize;
                let c = children[cur][bit];
                if c == NONE {
                    step.flags |= FAIL;
                    break;
                }
                cur = c as usize;
                if leaf[cur] != NONE {
                    if leaf[cur] == 256 {
                        step.flags |= FAIL;
                        break;
                    }
                    step.flags |= EMIT;
                    step.sym = leaf[cur] as u8;
                    cur = 0;
                }
            }
            if step.flags & FAIL == 0 {
                step.next = state_of[cur];
                if padding_ok[cur] {
                    step.flags |= ACCEPT;
                }
            }
            m[state_of[node] as usize][nibble as usize] = step;
        }
    }
    m
}

/// Decodes a Huffman-coded string (RFC 7541 §5.2) into `out`.
pub(crate) fn huffman_decode(src: &[u8], out: &mut Vec<u8>) -> Result<(), DecodeError> {
    let m = machine();
    let mut state = 0usize;
    let mut accept = true;
    out.reserve(src.len() * 8 / 5 + 1);
    for &b in src {
        for nibble in [b >> 4, b & 0xf] {
            let step = m[state][nibble as usize];
            if step.flags & FAIL != 0 {
                return Err(DecodeError);
            }
            if step.flags & EMIT != 0 {
                out.push(step.sym);
            }
            state = step.next as usize;
            accept = step.flags & ACCEPT != 0;
        }
    }
    if accept {
        Ok(())
    } else {
        Err(DecodeError)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hex(s: &str) -> Vec<u8> {
        let s: String = s.chars().filter(|c| !c.is_whitespace()).collect();
        (0..s.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
            .collect()
    }

    fn decode_all(d: &mut Decoder, block: &[u8]) -> Vec<(String, String)> {
        let mut v = Vec::new();
        d.decode(block, |n, val| {
            v.push((
                String::from_utf8(n.to_vec()).unwrap(),
                String::from_utf8(val.to_vec()).unwrap(),
            ))
        })
        .unwrap();
        v
    }

    fn pairs(p: &[(&str, &str)]) -> Vec<(String, String)> {
        p.iter()
            .map(|(a, b)| (a.to_string(), b.to_string()))
            .collect()
    }

    /// RFC 7541 C.6: responses with Huffman coding, table size 256 (evictions).
    #[test]
    fn rfc7541_c6_responses_with_huffman_and_eviction() {
        let mut d = Decoder::new(256);
        let r1 = hex("4882 6402 5885 aec3 771a 4b61 96d0 7abe 9410 54d4 44a8 2005 9504 0b81 66e0 82a6 2d1b ff6e 919d 29ad 1718 63c7 8f0b 97c8 e9ae 82ae 43d3");
        assert_eq!(
            decode_all(&mut d, &r1),
            pairs(&[
                (":status", "302"),
                ("cache-control", "private"),
                ("date", "Mon, 21 Oct 2013 20:13:21 GMT"),
                ("location", "https://www.example.com"),
            ])
        );
        assert_eq!(d.size, 222);
        let r2 = hex("4883 640e ffc1 c0bf");
        assert_eq!(
            decode_all(&mut d, &r2),
            pairs(&[
                (":status", "307"),
                ("cache-control", "private"),
                ("date", "Mon, 21 Oct 2013 20:13:21 GMT"),
                ("location", "https://www.example.com"),
            ])
        );
        let r3 = hex("88c1 6196 d07a be94 1054 d444 a820 0595 040b 8166 e084 a62d 1bff c05a 839b d9ab 77ad 94e7 821d d7f2 e6c7 b335 dfdf cd5b 3960 d5af 2708 7f36 72c1 ab27 0fb5 291f 9587 3160 65c0 03ed 4ee5 b106 3d50 07");
        assert_eq!(
            decode_all(&mut d, &r3),
            pairs(&[
                (":status", "200"),
                ("cache-control", "private"),
                ("date", "Mon, 21 Oct 2013 20:13:22 GMT"),
                ("location", "https://www.example.com"),
                ("content-encoding", "gzip"),
                (
                    "set-cookie",
                    "foo=ASDJKHQKBZXOQWEOPIUAXQWEOIU; max-age=3600; version=1"
                ),
            ])
        );
        assert_eq!(d.size, 215);
    }

    /// RFC 7541 C.3: requests without Huffman coding, table size 4096.
    #[test]
    fn rfc7541_c3_requests_without_huffman() {
        let mut d = Decoder::new(4096);
        let r1 = hex("8286 8441 0f77 7777 2e65 7861 6d70 6c65 2e63 6f6d");
        assert_eq!(
            decode_all(&mut d, &r1),
            pairs(&[
                (":method", "GET"),
                (":scheme", "http"),
                (":path", "/"),
                (":authority", "www.example.com"),
            ])
        );
        let r2 = hex("8286 84be 5808 6e6f 2d63 6163 6865");
        assert_eq!(
            decode_all(&mut d, &r2),
            pairs(&[
                (":method", "GET"),
                (":scheme", "http"),
                (":path", "/"),
                (":authority", "www.example.com"),
                ("cache-control", "no-cache"),
            ])
        );
    }

    #[test]
    fn bad_blocks_are_errors_not_panics() {
        let mut d = Decoder::new(4096);
        for bad in [
            &[0x80][..],                                 // index 0
            &[0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f], // huge index
            &[0xbe],                                     // empty dynamic table
            &[0x40, 0x85, 0xff],                         // string past the end
            &[0x00, 0x81, 0xff, 0x00],                   // Huffman: EOS / bad padding
            &[0x3f, 0xe2, 0x1f],                         // size update above 4096
            &[0x88, 0x20],                               // size update after a field
            &[0x0f],                                     // truncated integer
        ] {
            assert!(d.decode(bad, |_, _| {}).is_err(), "{bad:?}");
        }
        // Every byte sequence of length <= 2 decodes or fails without panicking.
        for a in 0..=255u8 {
            for b in 0..=255u8 {
                let _ = Decoder::new(4096).decode(&[a, b], |_, _| {});
            }
        }
    }

    #[test]
    fn huffman_round_trips_every_symbol() {
        // Encode every byte value with the table, decode it back.
        let input: Vec<u8> = (0..=255u8).chain(b"hello, world".iter().copied()).collect();
        let mut bits: u64 = 0;
        let mut nbits = 0u32;
        let mut enc = Vec::new();
        for &c in &input {
            let (code, len) = HUFFMAN[c as usize];
            bits = (bits << len) | code as u64;
            nbits += len as u32;
            while nbits >= 8 {
                enc.push((bits >> (nbits - 8)) as u8);
                nbits -= 8;
            }
            bits &= (1u64 << nbits) - 1;
        }
        if nbits > 0 {
            enc.push(((bits << (8 - nbits)) as u8) | (0xff >> nbits));
        }
        let mut out = Vec::new();
        huffman_decode(&enc, &mut out).unwrap();
        assert_eq!(out, input);
    }
}
