//! A virtual user's runtime variables: values set by feeders, extractors and loops, read by
//! templates. One [`Vars`] per VU, owned by its worker thread.

use std::cell::Cell;

/// The value of one runtime variable.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum VarValue {
    /// Never set (or cleared): rendering it is a counted failure unless the reference has a
    /// default (`${name:-default}`).
    #[default]
    Unset,
    One(Vec<u8>),
    /// Several values (an extractor with `occurrence: all`); renders as the values joined with
    /// `,`; a `foreach` loop walks them.
    Many(Vec<Vec<u8>>),
}

/// A VU's runtime variables (indexed by slot, see `onrush_plan::Scenario::vars`), its per-VU
/// counters and its random source.
#[derive(Debug)]
pub struct Vars {
    values: Vec<VarValue>,
    counters: Vec<Cell<u64>>,
    rng: Cell<u64>,
}

impl Vars {
    /// `slots` variables, `counters` per-VU counters, random source seeded from `seed`.
    pub fn new(slots: usize, counters: usize, seed: u64) -> Vars {
        Vars {
            values: vec![VarValue::Unset; slots],
            counters: (0..counters).map(|_| Cell::new(0)).collect(),
            // Any odd non-zero state works for xorshift; mix the seed so VUs differ.
            rng: Cell::new(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1),
        }
    }

    pub fn get(&self, slot: usize) -> &VarValue {
        &self.values[slot]
    }

    /// Sets a single value, reusing the slot's buffer.
    pub fn set(&mut self, slot: usize, value: &[u8]) {
        match &mut self.values[slot] {
            VarValue::One(v) => {
                v.clear();
                v.extend_from_slice(value);
            }
            other => *other = VarValue::One(value.to_vec()),
        }
    }

    pub fn set_value(&mut self, slot: usize, value: VarValue) {
        self.values[slot] = value;
    }

    pub fn unset(&mut self, slot: usize) {
        self.values[slot] = VarValue::Unset;
    }

    /// The next number of a per-VU counter (1, 2, 3, ...).
    pub fn next_counter(&self, index: usize) -> u64 {
        let c = &self.counters[index];
        c.set(c.get() + 1);
        c.get()
    }

    /// A uniformly distributed 64-bit number (xorshift64*: load data needs no crypto).
    pub fn random(&self) -> u64 {
        let mut x = self.rng.get();
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.rng.set(x);
        x.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    /// A uniform number in `0..n` (`n > 0`).
    pub fn random_below(&self, n: u64) -> u64 {
        // Multiply-shift: unbiased enough for test data, no division.
        ((self.random() as u128 * n as u128) >> 64) as u64
    }
}

impl Default for Vars {
    fn default() -> Self {
        Vars::new(0, 0, 1)
    }
}
