//! The clock a request is timed with.
//!
//! A [`Moment`] is a reading of the monotonic clock (`CLOCK_MONOTONIC`, the clock
//! `std::time::Instant` reads on Linux) kept as one `u64` of nanoseconds. Reading it, subtracting
//! two readings, adding a timeout and comparing are a few instructions each, inline.
//!
//! Why not `Instant`: it is the same clock, but an `Instant` is a (seconds, nanoseconds) pair, and
//! std does its arithmetic out of line with the checks a pair needs. A keep-alive request reads
//! the clock twice, subtracts once for its service time, adds its timeout once and compares a few
//! times; with `Instant` that was ~80 user instructions of a request's ~3,200 under callgrind
//! (`Timespec::sub_timespec` ~37 a call, `Timespec::now` ~12 besides `clock_gettime`, the add
//! ~13): docs/benchmarks.md, session 9.
//!
//! tokio's timers still take `Instant`s: [`Moment::to_instant`] converts through one pair of
//! readings taken once per process, an addition and no clock read. The two readings of that pair
//! are a few tens of nanoseconds apart, which is the conversion's error (a moment becomes an
//! instant that late, never earlier): nothing next to a timer's millisecond.

use std::ops::{Add, Sub};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

const NANOS_PER_SEC: u64 = 1_000_000_000;

/// The furthest [`Moment::to_instant`] goes: thirty years.
const FAR_FUTURE: Duration = Duration::from_secs(30 * 365 * 86_400);

/// A reading of the monotonic clock, in nanoseconds since an origin of the clock's own (the
/// machine's boot, on Linux). Only differences between readings mean anything.
///
/// Arithmetic saturates: a moment minus a later one is zero, as
/// `Instant::saturating_duration_since` is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Moment(u64);

impl Moment {
    /// Now.
    #[inline]
    pub fn now() -> Moment {
        read_clock()
    }

    /// Whole microseconds from `earlier` to `self`, 0 if `earlier` is later (the unit of every
    /// figure in the results).
    #[inline]
    pub fn micros_since(self, earlier: Moment) -> u64 {
        self.0.saturating_sub(earlier.0) / 1_000
    }

    /// The time from `earlier` to `self`, zero if `earlier` is later.
    #[inline]
    pub fn saturating_duration_since(self, earlier: Moment) -> Duration {
        Duration::from_nanos(self.0.saturating_sub(earlier.0))
    }

    /// The time since `self`, zero if `self` is in the future.
    #[inline]
    pub fn elapsed(self) -> Duration {
        Moment::now().saturating_duration_since(self)
    }

    /// The same moment as an `Instant`, for a timer (see the crate's docs for its precision).
    /// A moment more than thirty years after the process's first conversion (a saturated
    /// addition) becomes that far, as tokio's own "far future", rather than overflow an
    /// `Instant`.
    pub fn to_instant(self) -> Instant {
        let anchor = anchor();
        if self >= anchor.moment {
            let after = self.saturating_duration_since(anchor.moment);
            anchor
                .instant
                .checked_add(after.min(FAR_FUTURE))
                .unwrap_or(anchor.instant)
        } else {
            let before = anchor.moment.saturating_duration_since(self);
            anchor.instant.checked_sub(before).unwrap_or(anchor.instant)
        }
    }

    /// The moment of an `Instant` (see the crate's docs for its precision).
    pub fn from_instant(instant: Instant) -> Moment {
        let anchor = anchor();
        match instant.checked_duration_since(anchor.instant) {
            Some(after) => anchor.moment + after,
            None => anchor.moment - anchor.instant.duration_since(instant),
        }
    }
}

/// Nanoseconds of a duration, saturating at `u64::MAX` (584 years).
#[inline]
fn nanos(d: Duration) -> u64 {
    d.as_secs()
        .saturating_mul(NANOS_PER_SEC)
        .saturating_add(u64::from(d.subsec_nanos()))
}

impl Add<Duration> for Moment {
    type Output = Moment;
    #[inline]
    fn add(self, d: Duration) -> Moment {
        Moment(self.0.saturating_add(nanos(d)))
    }
}

impl Sub<Duration> for Moment {
    type Output = Moment;
    #[inline]
    fn sub(self, d: Duration) -> Moment {
        Moment(self.0.saturating_sub(nanos(d)))
    }
}

/// `later - earlier`: the time between, zero if `earlier` is later.
impl Sub for Moment {
    type Output = Duration;
    #[inline]
    fn sub(self, earlier: Moment) -> Duration {
        self.saturating_duration_since(earlier)
    }
}

/// One reading of both clocks, taken back to back: what [`Moment::to_instant`] and
/// [`Moment::from_instant`] convert through.
struct Anchor {
    instant: Instant,
    moment: Moment,
}

fn anchor() -> &'static Anchor {
    static ANCHOR: OnceLock<Anchor> = OnceLock::new();
    ANCHOR.get_or_init(|| {
        // The moment first: the instant is then read a little after it, so a moment converts to
        // an instant a little *after* it, and a timer armed for a moment never fires before it.
        let moment = read_clock();
        Anchor {
            instant: Instant::now(),
            moment,
        }
    })
}

#[cfg(unix)]
#[inline]
fn read_clock() -> Moment {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec; CLOCK_MONOTONIC exists on every supported
    // system, so the call cannot fail (std's `Instant::now` relies on the same).
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    Moment((ts.tv_sec as u64) * NANOS_PER_SEC + ts.tv_nsec as u64)
}

/// Elsewhere, `Instant` from a fixed origin: the same guarantees, at `Instant`'s cost.
#[cfg(not(unix))]
fn read_clock() -> Moment {
    static ORIGIN: OnceLock<Instant> = OnceLock::new();
    // One second in, so that an `Instant` a little before the origin still has a moment.
    Moment(NANOS_PER_SEC + nanos(ORIGIN.get_or_init(Instant::now).elapsed()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn readings_never_go_back_and_follow_instant() {
        let (i0, m0) = (Instant::now(), Moment::now());
        std::thread::sleep(Duration::from_millis(20));
        let (m1, i1) = (Moment::now(), Instant::now());
        assert!(m1 >= m0);
        // m0..m1 lies inside i0..i1 (read in that order), to the clocks' resolution.
        let between = m1 - m0;
        assert!(between >= Duration::from_millis(20), "{between:?}");
        assert!(between <= i1 - i0, "{between:?} against {:?}", i1 - i0);
    }

    #[test]
    fn differences_saturate_and_round_down_to_microseconds() {
        let m = Moment::now();
        let later = m + Duration::from_nanos(2_999);
        assert_eq!(later.micros_since(m), 2);
        assert_eq!(m.micros_since(later), 0);
        assert_eq!(m - later, Duration::ZERO);
        assert_eq!(later - m, Duration::from_nanos(2_999));
        assert_eq!(later - Duration::from_nanos(2_999), m);
        assert_eq!(
            m + Duration::from_secs(3) + Duration::from_millis(5) - m,
            Duration::from_millis(3_005)
        );
        assert_eq!(Moment(5) - Duration::from_secs(1), Moment(0));
        assert_eq!(
            Moment(u64::MAX - 1) + Duration::from_secs(1),
            Moment(u64::MAX)
        );
        // Saturated, it still converts (to the far future) rather than overflow an `Instant`.
        assert!(Moment(u64::MAX).to_instant() > Instant::now() + Duration::from_secs(86_400));
    }

    #[test]
    fn instants_convert_both_ways_within_a_microsecond() {
        let now = Instant::now();
        for instant in [
            now,
            now + Duration::from_secs(30),
            now.checked_sub(Duration::from_millis(700)).unwrap_or(now),
        ] {
            let back = Moment::from_instant(instant).to_instant();
            let error = if back > instant {
                back - instant
            } else {
                instant - back
            };
            assert!(error < Duration::from_micros(1), "{error:?}");
        }
        // A moment read now is an instant read now, to the anchor's few tens of nanoseconds
        // (100 µs allowed: a loaded machine, or valgrind, may stop a thread between two reads).
        let (i, m) = (Instant::now(), Moment::now());
        let converted = m.to_instant();
        assert!(converted + Duration::from_micros(100) >= i);
        assert!(converted <= Instant::now() + Duration::from_micros(100));
    }
}
