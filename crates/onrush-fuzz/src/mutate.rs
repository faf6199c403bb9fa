//! A small deterministic mutator, for the fuzz runs inside `cargo test` (no coverage
//! feedback there: the coverage-guided runs are cargo-afl's, see `fuzz/afl`). It applies the
//! classic byte-level mutations (bit flips, interesting values, insertions, deletions, block
//! copies, splices with another corpus file, dictionary tokens) to corpus files, from a seeded
//! generator, so a failure in CI reproduces exactly from its seed.

/// SplitMix64: tiny, seedable, and good enough to pick mutations.
#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed)
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// A number in `0..n` (`n > 0`).
    pub fn below(&mut self, n: usize) -> usize {
        (self.next_u64() % n as u64) as usize
    }
}

/// Byte values that break parsers more often than random ones: boundaries of signed and
/// unsigned integers, and the structural characters of the formats fuzzed here.
const INTERESTING: &[u8] = &[
    0, 1, 0x7f, 0x80, 0xff, b'\r', b'\n', b' ', b'\t', b':', b',', b'"', b'\'', b'{', b'}', b'[',
    b']', b'<', b'>', b'/', b'\\', b'$', b'-', b'0', b'9', b'&', b'=', b';', b'#',
];

/// Mutates `data` in place with 1 to 4 stacked mutations. `other` is another corpus file to
/// splice with; `dict` are tokens of the target's format; `max_len` bounds the result.
pub fn mutate(data: &mut Vec<u8>, other: &[u8], dict: &[&[u8]], max_len: usize, rng: &mut Rng) {
    for _ in 0..1 + rng.below(4) {
        mutate_once(data, other, dict, rng);
    }
    data.truncate(max_len);
}

fn mutate_once(data: &mut Vec<u8>, other: &[u8], dict: &[&[u8]], rng: &mut Rng) {
    if data.is_empty() {
        data.push(INTERESTING[rng.below(INTERESTING.len())]);
        return;
    }
    let len = data.len();
    let at = rng.below(len);
    match rng.below(11) {
        // Flip one bit.
        0 => data[at] ^= 1 << rng.below(8),
        // A random byte.
        1 => data[at] = rng.next_u64() as u8,
        // An interesting byte.
        2 => data[at] = INTERESTING[rng.below(INTERESTING.len())],
        // Insert an interesting byte.
        3 => data.insert(at, INTERESTING[rng.below(INTERESTING.len())]),
        // Delete a block.
        4 => {
            let n = 1 + rng.below((len - at).min(16));
            data.drain(at..at + n);
        }
        // Duplicate a block (repetition finds length and nesting limits).
        5 => {
            let n = 1 + rng.below((len - at).min(64));
            let block = data[at..at + n].to_vec();
            let to = rng.below(len + 1);
            data.splice(to..to, block);
        }
        // Overwrite with a block from elsewhere in the input.
        6 => {
            let from = rng.below(len);
            let n = 1 + rng.below((len - from).min(len - at).min(32));
            data.copy_within(from..from + n, at);
        }
        // Splice: our head, the other file's tail.
        7 if !other.is_empty() => {
            let cut = rng.below(other.len());
            data.truncate(at);
            data.extend_from_slice(&other[cut..]);
        }
        // Insert or overwrite with a dictionary token.
        8 | 9 if !dict.is_empty() => {
            let token = dict[rng.below(dict.len())];
            if rng.below(2) == 0 {
                data.splice(at..at, token.iter().copied());
            } else {
                let end = (at + token.len()).min(len);
                data.splice(at..end, token.iter().copied());
            }
        }
        // Add a small number to a byte (lengths and counts in binary formats).
        _ => data[at] = data[at].wrapping_add(rng.below(35) as u8).wrapping_sub(17),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_same_seed_gives_the_same_mutations_and_the_length_is_bounded() {
        let run = |seed| {
            let mut rng = Rng::new(seed);
            let mut out = Vec::new();
            for _ in 0..1000 {
                let mut d = b"GET / HTTP/1.1\r\n\r\n".to_vec();
                mutate(&mut d, b"other", &[b"token"], 20, &mut rng);
                assert!(d.len() <= 20);
                out.push(d);
            }
            out
        };
        assert_eq!(run(7), run(7));
        assert_ne!(run(7), run(8));
        // It does change its input (most of the time).
        let seed_input = b"GET / HTTP/1.1\r\n\r\n".to_vec();
        assert!(run(7).iter().filter(|d| **d != seed_input).count() > 900);
    }
}
