//! [`Feeder`]: which row a virtual user gets next.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use crate::Table;

/// How rows are handed out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// One cursor shared by all VUs of all worker threads: rows 0, 1, 2, … in pick order,
    /// wrapping around after the last row.
    Circular,
    /// A uniformly random row per pick, drawn from the VU's own random source (no shared state).
    Random,
    /// Each row at most once in the whole test, across all threads, in order.
    Unique {
        /// What happens after the last row has been handed out.
        on_exhausted: Exhausted,
    },
    /// Row `k - 1` for VU `k` (1-based), on every pick; wraps when there are more VUs than rows.
    PerVu,
}

/// What a [`Mode::Unique`] feeder does once every row has been used.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Exhausted {
    /// [`Feeder::pick`] returns `None` from then on (the caller stops the VU or the test).
    Stop,
    /// Start again from the first row (each row once per round).
    Recycle,
}

/// The cursor on its own cache line, so picks do not false-share with the `Arc` counts or the
/// table header.
#[repr(align(128))]
struct Cursor(AtomicU64);

/// A [`Table`] (shared through an `Arc`, one copy for all VUs and threads) plus a pick mode.
///
/// Cost of a pick: `Circular` and `Unique` do one relaxed `fetch_add` on a shared `AtomicU64`
/// (for `Unique` + `Stop`, a relaxed load first, so an exhausted feeder is read-only); that is
/// the only cross-thread cost. `Random` and `PerVu` touch no shared state at all. No lock,
/// no allocation.
pub struct Feeder {
    table: Arc<Table>,
    mode: Mode,
    cursor: Cursor,
}

impl Feeder {
    pub fn new(table: Arc<Table>, mode: Mode) -> Feeder {
        Feeder {
            table,
            mode,
            cursor: Cursor(AtomicU64::new(0)),
        }
    }

    /// The row index for this pick, or `None` when a `Unique` + `Stop` feeder is exhausted
    /// (or the table has no rows).
    ///
    /// `vu` is the 1-based VU number (used by `PerVu`; 0 is taken as 1); `rng` is the VU's own
    /// random source (used by `Random`: it must return uniformly distributed `u64`s).
    #[inline]
    pub fn pick(&self, vu: u64, rng: &mut impl FnMut() -> u64) -> Option<usize> {
        let n = self.table.len() as u64;
        if n == 0 {
            return None;
        }
        let i = match self.mode {
            Mode::Circular => self.cursor.0.fetch_add(1, Ordering::Relaxed) % n,
            Mode::Random => uniform(n, rng),
            Mode::Unique { on_exhausted } => {
                // In a distributed run this process owns every `parts`-th row only
                // (crate::share); alone, all of them.
                let (part, parts) = crate::share::process_share();
                let mine = crate::share::rows_of_part(n, part, parts);
                if mine == 0 {
                    return None;
                }
                let local = match on_exhausted {
                    Exhausted::Stop => {
                        if self.cursor.0.load(Ordering::Relaxed) >= mine {
                            return None;
                        }
                        let i = self.cursor.0.fetch_add(1, Ordering::Relaxed);
                        if i >= mine {
                            return None;
                        }
                        i
                    }
                    Exhausted::Recycle => self.cursor.0.fetch_add(1, Ordering::Relaxed) % mine,
                };
                local * parts + part
            }
            Mode::PerVu => vu.saturating_sub(1) % n,
        };
        Some(i as usize)
    }

    pub fn table(&self) -> &Table {
        &self.table
    }

    /// The shared table (to hand to another feeder or thread).
    pub fn table_arc(&self) -> &Arc<Table> {
        &self.table
    }

    pub fn mode(&self) -> Mode {
        self.mode
    }
}

/// Uniform in `0..n` (`n > 0`) by Lemire's multiply-shift: one multiplication, no division,
/// no loop (so even a broken random source cannot make a pick hang). The bias is below
/// `n / 2^64` (under 10^-12 for a million rows), far below anything a load test can see.
#[inline]
fn uniform(n: u64, rng: &mut impl FnMut() -> u64) -> u64 {
    ((u128::from(rng()) * u128::from(n)) >> 64) as u64
}

/// A small, fast random source for a VU (SplitMix64): `let mut r = SplitMix64::new(seed);`
/// then `feeder.pick(vu, &mut || r.next_u64())`.
#[derive(Debug, Clone)]
pub struct SplitMix64(u64);

impl SplitMix64 {
    pub fn new(seed: u64) -> SplitMix64 {
        SplitMix64(seed)
    }

    #[inline]
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
}
