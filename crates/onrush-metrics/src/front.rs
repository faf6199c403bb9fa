//! A counting front for the worker's hot-path histograms.
//!
//! `Histogram::record` is not inlined and does more than the hot path needs (index, bounds
//! check, saturating add, min/max, total count): ~71 instructions a record. A [`FrontedHist`]
//! records a value below [`FRONT_LIMIT_US`] by computing its bucket index — hdrhistogram's own
//! `index_for` for [`new_hist`]'s layout — and incrementing an 8-bit counter. Every read goes
//! through [`FrontedHist::hist`], which first moves the counts into the histogram with one
//! `record_n` of the bucket's lowest value per touched bucket.
//!
//! Exact: the front's buckets are hdrhistogram's, so the histogram gets the same counts per
//! bucket, total, size (resizing depends only on the bucket of the largest value), and
//! `min()`/`max()` (hdrhistogram reports the lowest/highest equivalent value of what was
//! recorded, the same for every value of a bucket). The tests below check this against
//! hdrhistogram for every value the front takes.

use crate::hist::{new_hist, record, take_hist, Hist, MAX_VALUE_US};

/// Values below this (2^20 µs, ~1.05 s) are counted in the front; larger ones are recorded in
/// the histogram directly.
pub(crate) const FRONT_LIMIT_US: u64 = 1 << 20;

/// hdrhistogram's layout for 3 significant digits and a lowest discernible value of 1
/// ([`new_hist`]): unit magnitude 0, 2,048 sub-buckets (the power of two above 2 × 10^3), half
/// of them (1,024 = 2^10) per bucket after the first.
const SUB_BUCKET_HALF_MAGNITUDE: u32 = 10;
const SUB_BUCKET_MASK: u64 = (1 << (SUB_BUCKET_HALF_MAGNITUDE + 1)) - 1;

/// Counters in a front: the index of the largest value it takes, plus one (11,264 bytes).
///
/// One byte each: a front exists per histogram of a step on each worker that ran it, so a plan
/// of hundreds of steps on many workers pays for every byte here; a counter that wraps moves
/// 256 records into the histogram (one `record_n`, ~70 instructions), rare enough to be free
/// (a bucket taking 100,000 records a second wraps ~400 times).
pub(crate) const FRONT_LEN: usize = index_of(FRONT_LIMIT_US - 1) + 1;

/// hdrhistogram's `index_for(value)` (`bucket_for`, `sub_bucket_for`, then the bucket's base
/// index plus the offset in it), simplified for the layout above: bucket `b` is
/// `ilog2(value | 2047) - 10` (0 below 2,048) and the index `(b << 10) + (value >> b)`.
/// Non-decreasing in `value`, so every value at or above [`FRONT_LIMIT_US`] (up to `u64::MAX`)
/// has an index of at least [`FRONT_LEN`].
#[inline(always)]
const fn index_of(value: u64) -> usize {
    let bucket = (value | SUB_BUCKET_MASK).ilog2() - SUB_BUCKET_HALF_MAGNITUDE;
    ((bucket << SUB_BUCKET_HALF_MAGNITUDE) as u64 + (value >> bucket)) as usize
}

/// hdrhistogram's `value_for(index)`: the lowest value of the bucket at `index` (for an index
/// of a value up to [`MAX_VALUE_US`]).
const fn value_of(index: usize) -> u64 {
    let half = 1 << SUB_BUCKET_HALF_MAGNITUDE;
    if index < 2 * half {
        index as u64
    } else {
        let bucket = (index >> SUB_BUCKET_HALF_MAGNITUDE) - 1;
        (((index & (half - 1)) + half) as u64) << bucket
    }
}

/// A front's counter.
type Counter = u8;

/// Records of one bucket that wrap its counter.
const WRAP: u64 = Counter::MAX as u64 + 1;

/// Counters `flush` skips at once when all are zero: 16 bytes.
const GROUP: usize = 16 / std::mem::size_of::<Counter>();

/// The touched range's `lo` when nothing is counted (then `lo > hi`).
const EMPTY_LO: u32 = u32::MAX;

/// A histogram behind a counting front (see the module's documentation).
pub(crate) struct FrontedHist {
    hist: Hist,
    /// Empty until the first record below [`FRONT_LIMIT_US`], then [`FRONT_LEN`] counters.
    counts: Vec<Counter>,
    /// Indexes `lo..=hi` hold every non-zero counter (none when `lo > hi`).
    lo: u32,
    hi: u32,
}

impl FrontedHist {
    pub(crate) fn new() -> Self {
        FrontedHist {
            hist: new_hist(),
            counts: Vec::new(),
            lo: EMPTY_LO,
            hi: 0,
        }
    }

    /// Records `value_us` as [`record`] would in the histogram.
    #[inline]
    pub(crate) fn record(&mut self, value_us: u64) {
        let i = index_of(value_us);
        // Out of bounds: the front is not allocated yet, or the value is beyond it.
        if let Some(c) = self.counts.get_mut(i) {
            let (n, wrapped) = c.overflowing_add(1);
            *c = n;
            if wrapped {
                self.spill(i);
            }
            self.lo = self.lo.min(i as u32);
            self.hi = self.hi.max(i as u32);
        } else {
            self.record_cold(value_us);
        }
    }

    #[cold]
    #[inline(never)]
    fn record_cold(&mut self, value_us: u64) {
        if value_us < FRONT_LIMIT_US {
            debug_assert!(self.counts.is_empty());
            self.counts = vec![0; FRONT_LEN];
            self.record(value_us);
        } else {
            record(&mut self.hist, value_us);
        }
    }

    /// The counter at `i` wrapped to 0: [`WRAP`] values of its bucket go to the histogram.
    #[cold]
    #[inline(never)]
    fn spill(&mut self, i: usize) {
        let _ = self.hist.record_n(value_of(i), WRAP);
    }

    /// Moves the front's counts into the histogram.
    fn flush(&mut self) {
        if self.lo > self.hi {
            return;
        }
        // The touched range, widened to whole groups of counters: often sparse (one value per
        // bucket), so it is skipped 16 bytes at a time.
        let lo = self.lo as usize / GROUP * GROUP;
        let hi = (self.hi as usize / GROUP + 1) * GROUP;
        let (groups, rest) = self.counts[lo..hi].as_chunks_mut::<GROUP>();
        debug_assert!(rest.is_empty());
        for (g, group) in groups.iter_mut().enumerate() {
            if *group == [0; GROUP] {
                continue;
            }
            for (j, c) in group.iter_mut().enumerate() {
                if *c != 0 {
                    // As `record` does: an auto-resizing histogram takes any value.
                    let _ = self
                        .hist
                        .record_n(value_of(lo + g * GROUP + j), u64::from(*c));
                    *c = 0;
                }
            }
        }
        self.lo = EMPTY_LO;
        self.hi = 0;
    }

    /// The histogram, with every value recorded so far.
    pub(crate) fn hist(&mut self) -> &mut Hist {
        self.flush();
        &mut self.hist
    }

    /// Nothing recorded since the last [`take`](Self::take).
    pub(crate) fn is_empty(&self) -> bool {
        self.lo > self.hi && self.hist.is_empty()
    }

    /// Moves every value recorded so far out (`None` when there is none), keeping the
    /// histogram's grown size (see [`take_hist`]).
    pub(crate) fn take(&mut self) -> Option<Hist> {
        take_hist(self.hist())
    }

    /// Replaces the recorded values with those of `src`.
    pub(crate) fn set_to(&mut self, src: &Hist) {
        if self.lo <= self.hi {
            self.counts[self.lo as usize..=self.hi as usize].fill(0);
            self.lo = EMPTY_LO;
            self.hi = 0;
        }
        self.hist.clone_from(src);
    }

    /// Heap bytes held: the histogram's counters and the front's.
    pub(crate) fn heap_bytes(&self) -> usize {
        self.hist.distinct_values() * std::mem::size_of::<u64>()
            + self.counts.capacity() * std::mem::size_of::<Counter>()
    }
}

// `flush` scans whole groups of counters.
const _: () = assert!(
    FRONT_LEN == 11 * 1024 && FRONT_LEN.is_multiple_of(GROUP) && FRONT_LIMIT_US <= MAX_VALUE_US
);

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::hist::Encoder;

    /// splitmix64: a deterministic stream of test values.
    pub(crate) struct Rng(pub(crate) u64);
    impl Rng {
        pub(crate) fn next(&mut self) -> u64 {
            self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
            let mut z = self.0;
            z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
            z ^ (z >> 31)
        }
        /// Log-uniform in `0..=max`: as many values per power of two.
        pub(crate) fn log_uniform(&mut self, max: u64) -> u64 {
            let bits = (self.next() % u64::from(max.checked_ilog2().map_or(1, |l| l + 2))) as u32;
            let mask = if bits == 0 {
                0
            } else {
                u64::MAX >> (64 - bits)
            };
            (self.next() & mask).min(max)
        }
    }

    /// Checks `index_of` and `value_of` against hdrhistogram at `v`: same bucket.
    fn check_value(h: &Hist, v: u64) {
        let i = index_of(v);
        assert_eq!(value_of(i), h.lowest_equivalent(v), "value {v}");
        assert!(h.equivalent(value_of(i), v), "value {v}");
        assert_eq!(i < FRONT_LEN, v < FRONT_LIMIT_US, "value {v}");
    }

    #[test]
    fn the_front_buckets_are_hdrhistograms() {
        let h = new_hist();
        // Every value the front takes: its bucket's lowest value is hdrhistogram's, and a new
        // index starts exactly where hdrhistogram's next bucket starts (so the front's buckets
        // are hdrhistogram's, one to one).
        let mut last = 0;
        for v in 0..FRONT_LIMIT_US {
            check_value(&h, v);
            let i = index_of(v);
            if v > 0 {
                assert_eq!(i != last, !h.equivalent(v, v - 1), "value {v}");
                assert!(i == last || i == last + 1, "value {v}");
            }
            last = i;
        }
        assert_eq!(last, FRONT_LEN - 1);
        // Above it, up to the largest value recorded: the same buckets, beyond the front.
        let mut edges = vec![FRONT_LIMIT_US, MAX_VALUE_US, MAX_VALUE_US - 1];
        for b in 11..=MAX_VALUE_US.ilog2() + 1 {
            let p = 1u64 << b;
            edges.extend([p - 1, p, p + 1]);
        }
        let mut rng = Rng(7);
        edges.extend(
            (0..200_000).map(|_| FRONT_LIMIT_US + rng.next() % (MAX_VALUE_US - FRONT_LIMIT_US)),
        );
        for v in edges.into_iter().filter(|&v| v <= MAX_VALUE_US) {
            check_value(&h, v);
        }
        // Values clamped by `record` index beyond the front too.
        assert!(index_of(MAX_VALUE_US + 1) >= FRONT_LEN);
        assert!(index_of(u64::MAX) >= FRONT_LEN);
    }

    /// `a` and `b` hold the same values, through everything hdrhistogram's API shows.
    pub(crate) fn assert_same(a: &Hist, b: &Hist) {
        assert_eq!(a, b);
        assert_eq!(a.len(), b.len());
        assert_eq!(a.min(), b.min());
        assert_eq!(a.min_nz(), b.min_nz());
        assert_eq!(a.max(), b.max());
        assert_eq!(a.high(), b.high());
        assert_eq!(a.distinct_values(), b.distinct_values());
        assert_eq!(a.mean().to_bits(), b.mean().to_bits());
        assert_eq!(a.stdev().to_bits(), b.stdev().to_bits());
        for q in [0.0, 0.1, 0.5, 0.9, 0.99, 0.999, 0.9999, 1.0] {
            assert_eq!(a.value_at_quantile(q), b.value_at_quantile(q), "q {q}");
        }
        let rec = |h: &Hist| {
            h.iter_recorded()
                .map(|v| (v.value_iterated_to(), v.count_at_value()))
                .collect::<Vec<_>>()
        };
        assert_eq!(rec(a), rec(b));
        let all = |h: &Hist| {
            h.iter_all()
                .map(|v| (v.value_iterated_to(), v.count_at_value()))
                .collect::<Vec<_>>()
        };
        assert_eq!(all(a), all(b));
        let mut enc = Encoder::new();
        assert_eq!(enc.encode(a), enc.encode(b));
    }

    #[test]
    fn streams_through_the_front_equal_direct_records() {
        let mut rng = Rng(42);
        let streams: [fn(&mut Rng) -> u64; 6] = [
            |r| r.next() % 3_000,
            |r| 80 + r.next() % 400,
            |r| r.log_uniform(FRONT_LIMIT_US),
            |r| r.log_uniform(MAX_VALUE_US),
            |r| r.log_uniform(u64::MAX),
            |r| match r.next() % 8 {
                0 => 0,
                1 => FRONT_LIMIT_US - 1,
                2 => FRONT_LIMIT_US,
                3 => MAX_VALUE_US,
                4 => u64::MAX,
                _ => r.next() % 100_000,
            },
        ];
        for (s, stream) in streams.iter().enumerate() {
            let mut front = FrontedHist::new();
            let mut direct = new_hist();
            // Several intervals, each taken as the worker does; the sizes grow across them.
            for (interval, n) in [0, 1, 10, 1_000, 50_000, 3].into_iter().enumerate() {
                for _ in 0..n {
                    let v = stream(&mut rng);
                    front.record(v);
                    record(&mut direct, v);
                }
                assert_eq!(front.is_empty(), direct.is_empty());
                let (a, b) = (front.take(), take_hist(&mut direct));
                assert_eq!(a.is_some(), b.is_some(), "stream {s} interval {interval}");
                if let (Some(a), Some(b)) = (a, b) {
                    assert_same(&a, &b);
                }
                assert!(front.is_empty());
            }
        }
    }

    #[test]
    fn a_counter_that_wraps_spills_into_the_histogram() {
        let mut front = FrontedHist::new();
        let mut direct = new_hist();
        for (v, n) in [(1_500, 3 * WRAP + 7), (700, WRAP - 1), (701, WRAP), (9, 1)] {
            for _ in 0..n {
                front.record(v);
            }
            direct.record_n(v, n).unwrap();
        }
        assert_same(front.hist(), &direct);
    }

    #[test]
    fn set_to_drops_the_counted_values() {
        let mut front = FrontedHist::new();
        front.record(5);
        front.record(2_000_000);
        let mut src = new_hist();
        src.record(77).unwrap();
        front.set_to(&src);
        front.record(8);
        src.record(8).unwrap();
        assert_same(front.hist(), &src);
    }

    #[test]
    fn the_front_is_allocated_at_its_first_record() {
        let mut front = FrontedHist::new();
        let fresh = new_hist().distinct_values() * 8;
        assert_eq!(front.heap_bytes(), fresh);
        front.record(FRONT_LIMIT_US);
        assert!(front.counts.is_empty());
        front.record(FRONT_LIMIT_US - 1);
        assert_eq!(front.counts.capacity(), FRONT_LEN);
        // One byte per counter: 11 KiB.
        assert_eq!(
            front.heap_bytes(),
            front.hist.distinct_values() * 8 + 11_264
        );
    }
}
