//! The per-second figures of the summary — `rate_10s_*`, `rate_1s_max`, `active_vus_max`,
//! `run.seconds` — folded in as the seconds come, in memory that does not grow with the run:
//! the last [`KEEP`] seconds are kept one by one, older ones only as the extremes of the
//! windows that began in them.
//!
//! Which seconds are *full* (count for the rates) is known only at the end, from the measured
//! length of the run; only the last second or two of a run are ever partial, so the seconds
//! that leave the detailed tail are taken as full. The figures are then exactly those of
//! [`window_rates`] over every second, as long as the run's measured length is within
//! `KEEP - RATE_WINDOW_S` seconds of the seconds seen (a run's is within one second).

use std::collections::VecDeque;

/// The window of `rate_10s_*`, in seconds.
pub(crate) const RATE_WINDOW_S: usize = 10;

/// A second counts as full for the rate figures when at least this much of it (1 - 10 ms)
/// lies inside the run, so a 10 s run measured as 9.995 s still has 10 full seconds.
const FULL_SECOND_SLACK_S: f64 = 0.01;

/// Seconds kept one by one: the window, and 54 s of slack for the partial tail.
const KEEP: usize = 64;

/// Figures of one second.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct SecondAgg {
    pub requests: u64,
    pub active_vus: u64,
}

impl SecondAgg {
    fn is_zero(&self) -> bool {
        *self == SecondAgg::default()
    }
}

/// The seconds of a run, folded as they come (see the module docs).
#[derive(Clone, Debug, Default)]
pub(crate) struct Seconds {
    /// Seconds `base .. base + recent.len()`, one by one.
    recent: VecDeque<SecondAgg>,
    base: u64,
    /// Lowest and highest request count of the windows that start before `base`.
    settled_windows: Option<(u64, u64)>,
    /// Highest request count and active VUs of the seconds before `base`.
    settled_max_1s: u64,
    settled_vus_max: u64,
}

impl Seconds {
    /// Number of seconds seen: the highest second index plus one.
    pub fn count(&self) -> u64 {
        self.base + self.recent.len() as u64
    }

    /// Second `t`, created (with any before it) when new. The callers go in second order; a
    /// second older than the detailed tail (never seen in practice) is counted in the oldest
    /// second kept, so totals stay whole.
    pub fn at(&mut self, t: u64) -> &mut SecondAgg {
        let end = t.saturating_add(1);
        while self.count() < end {
            if self.recent.len() == KEEP {
                if self.recent.iter().all(SecondAgg::is_zero) {
                    // A long silence (or a second index far ahead): every window that starts
                    // in it holds zeros, so skip it in one step rather than second by second.
                    self.settled_windows = Some(self.settled_windows.map_or((0, 0), |w| (0, w.1)));
                    self.base = end - KEEP as u64;
                    break;
                }
                self.settle_oldest();
            }
            self.recent.push_back(SecondAgg::default());
        }
        let i = t.saturating_sub(self.base) as usize;
        &mut self.recent[i]
    }

    /// Moves the oldest kept second into the settled figures, with the window starting at it
    /// (whole: `KEEP` seconds are kept, more than a window).
    fn settle_oldest(&mut self) {
        let window: u64 = self
            .recent
            .iter()
            .take(RATE_WINDOW_S)
            .map(|s| s.requests)
            .sum();
        self.settled_windows = Some(match self.settled_windows {
            None => (window, window),
            Some((lo, hi)) => (lo.min(window), hi.max(window)),
        });
        let oldest = self.recent.pop_front().expect("KEEP seconds are kept");
        self.settled_max_1s = self.settled_max_1s.max(oldest.requests);
        self.settled_vus_max = self.settled_vus_max.max(oldest.active_vus);
        self.base += 1;
    }

    /// Highest active VUs of any second.
    pub fn active_vus_max(&self) -> u64 {
        self.recent
            .iter()
            .map(|s| s.active_vus)
            .fold(self.settled_vus_max, u64::max)
    }

    /// The rate figures of a run of `duration_s` with `total` requests.
    pub fn rates(&self, duration_s: f64, total: u64) -> WindowRates {
        let full = ((duration_s + FULL_SECOND_SLACK_S).floor().max(0.0)) as u64;
        let count = |i: u64| {
            i.checked_sub(self.base)
                .and_then(|k| self.recent.get(k as usize))
                .map_or(0, |s| s.requests)
        };
        // Seconds after the last one seen are zeros: they cannot raise a maximum, and one
        // window of them is as low as all of them.
        let seen = self.count();
        let max_1s = if full == 0 {
            rate(total, duration_s)
        } else {
            (self.base..full.min(seen))
                .map(count)
                .fold(self.settled_max_1s, u64::max) as f64
        };
        if full < RATE_WINDOW_S as u64 {
            let r = rate(total, duration_s);
            return WindowRates {
                max_10s: r,
                min_10s: r,
                window_s: duration_s,
                whole_run: true,
                max_1s,
            };
        }
        let w = RATE_WINDOW_S as u64;
        let (mut lo, mut hi) = self.settled_windows.unwrap_or((u64::MAX, 0));
        for start in self.base..=(full - w).min(seen) {
            let sum: u64 = (start..start + w).map(count).sum();
            lo = lo.min(sum);
            hi = hi.max(sum);
        }
        let w = RATE_WINDOW_S as f64;
        WindowRates {
            max_10s: hi as f64 / w,
            min_10s: lo as f64 / w,
            window_s: w,
            whole_run: false,
            max_1s,
        }
    }
}

pub(crate) fn rate(n: u64, d: f64) -> f64 {
    if d > 0.0 {
        n as f64 / d
    } else {
        0.0
    }
}

/// Rate figures over 1-second request counts.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct WindowRates {
    pub max_10s: f64,
    pub min_10s: f64,
    pub window_s: f64,
    pub whole_run: bool,
    pub max_1s: f64,
}

/// Highest / lowest mean rate over every full 10-second window (sliding by one second) of
/// `per_second` (request counts of seconds 0, 1, ...; missing seconds count 0). Only the full
/// seconds of a run of `duration_s` are used (a partial last second would fake a dip). With
/// fewer than 10 full seconds both are the whole-run mean `total / duration_s` and `whole_run`
/// is set.
#[cfg(test)]
pub(crate) fn window_rates(per_second: &[u64], duration_s: f64, total: u64) -> WindowRates {
    let mut seconds = Seconds::default();
    for (t, &n) in per_second.iter().enumerate() {
        seconds.at(t as u64).requests += n;
    }
    seconds.rates(duration_s, total)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The definition, over every second at once: what the folded figures must equal.
    fn by_definition(per_second: &[u64], duration_s: f64, total: u64) -> WindowRates {
        let full = ((duration_s + FULL_SECOND_SLACK_S).floor().max(0.0)) as usize;
        let count = |i: usize| per_second.get(i).copied().unwrap_or(0);
        let max_1s = if full == 0 {
            rate(total, duration_s)
        } else {
            (0..full).map(count).max().unwrap_or(0) as f64
        };
        if full < RATE_WINDOW_S {
            let r = rate(total, duration_s);
            return WindowRates {
                max_10s: r,
                min_10s: r,
                window_s: duration_s,
                whole_run: true,
                max_1s,
            };
        }
        let sums: Vec<u64> = (0..=full - RATE_WINDOW_S)
            .map(|s| (s..s + RATE_WINDOW_S).map(count).sum())
            .collect();
        WindowRates {
            max_10s: *sums.iter().max().unwrap() as f64 / 10.0,
            min_10s: *sums.iter().min().unwrap() as f64 / 10.0,
            window_s: 10.0,
            whole_run: false,
            max_1s,
        }
    }

    #[test]
    fn ten_second_windows_slide_by_one_second() {
        // 20 full seconds: 100/s, except seconds 5..=6 at 0 and second 15 at 1100.
        let mut per: Vec<u64> = vec![100; 20];
        per[5] = 0;
        per[6] = 0;
        per[15] = 1100;
        let r = window_rates(&per, 20.0, per.iter().sum());
        assert!(!r.whole_run);
        assert_eq!(r.window_s, 10.0);
        // lowest: any window holding 5 and 6 but not 15: 800 / 10
        assert_eq!(r.min_10s, 80.0);
        // highest: windows holding 15 but not 5, 6: (900 + 1100) / 10
        assert_eq!(r.max_10s, 200.0);
        assert_eq!(r.max_1s, 1100.0);
    }

    #[test]
    fn partial_last_second_is_left_out_and_missing_seconds_are_zero() {
        // 12.4 s: 12 full seconds; seconds 10 and 11 had nothing (missing from the vec).
        let per: Vec<u64> = vec![50; 10];
        let r = window_rates(&per, 12.4, 500);
        assert_eq!(r.max_10s, 50.0);
        assert_eq!(r.min_10s, 40.0); // seconds 2..12: 8 * 50 / 10
                                     // a 10 s run measured a hair short still has a full window
        let r = window_rates(&per, 9.995, 500);
        assert!(!r.whole_run);
        assert_eq!((r.min_10s, r.max_10s), (50.0, 50.0));
    }

    #[test]
    fn short_run_uses_the_whole_run() {
        let per = vec![10, 30, 20];
        let r = window_rates(&per, 2.5, 60);
        assert!(r.whole_run);
        assert_eq!(r.window_s, 2.5);
        assert_eq!(r.max_10s, 24.0);
        assert_eq!(r.min_10s, 24.0);
        assert_eq!(r.max_1s, 30.0); // second 2 is partial and left out
        let r = window_rates(&[], 0.0, 0);
        assert_eq!((r.max_10s, r.min_10s, r.max_1s), (0.0, 0.0, 0.0));
    }

    #[test]
    fn folded_figures_equal_the_definition_over_long_runs() {
        // Long runs (seconds leave the detailed tail), with peaks and dips early and late, a
        // partial last second, and runs a little shorter than the seconds seen.
        let mut x: u64 = 12345;
        for len in [9, 10, 11, 63, 64, 65, 74, 75, 200, 1000] {
            let per: Vec<u64> = (0..len)
                .map(|_| {
                    x = x
                        .wrapping_mul(6364136223846793005)
                        .wrapping_add(1442695040888963407);
                    (x >> 33) % 1000
                })
                .collect();
            let total = per.iter().sum();
            for duration in [
                len as f64,
                len as f64 - 0.5,
                len as f64 - 1.2,
                len as f64 + 3.0,
            ] {
                assert_eq!(
                    window_rates(&per, duration, total),
                    by_definition(&per, duration, total),
                    "{len} seconds, duration {duration}"
                );
            }
        }
    }

    #[test]
    fn memory_stays_bounded_and_long_silences_are_skipped_at_once() {
        let mut s = Seconds::default();
        for t in 0..10_000 {
            s.at(t).requests += 5;
        }
        assert!(s.recent.len() <= KEEP);
        assert_eq!(s.count(), 10_000);
        // A second far ahead (a long silence) costs no time second by second, and its windows
        // of zeros count.
        s.at(u64::MAX / 2).requests += 7;
        assert_eq!(s.count(), u64::MAX / 2 + 1);
        let r = s.rates((u64::MAX / 2) as f64, 50_007);
        assert_eq!((r.min_10s, r.max_10s, r.max_1s), (0.0, 5.0, 7.0));
        s.at(3).active_vus += 9; // out of order: counted in the oldest second kept
        assert_eq!(s.active_vus_max(), 9);
    }
}
