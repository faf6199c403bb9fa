//! When things should happen: arrival times of the open model and the VU count of the closed
//! model's stages. Pure functions of time, so every worker computes its own share without
//! talking to the others.

use std::time::Duration;

use onrush_plan::{RateStage, VuStage};

/// The open model's arrivals: the i-th arrival (0-based) happens when the integral of the rate
/// reaches i. Rates ramp linearly within a stage, from the previous stage's rate.
#[derive(Debug, Clone)]
pub struct Arrivals {
    /// (start offset s, duration s, rate at start /s, rate at end /s, arrivals before this stage)
    segments: Vec<Segment>,
    total: f64,
    end: f64,
}

#[derive(Debug, Clone)]
struct Segment {
    start: f64,
    length: f64,
    from: f64,
    to: f64,
    before: f64,
}

impl Arrivals {
    pub fn new(start_rate: f64, stages: &[RateStage]) -> Self {
        let mut segments = Vec::with_capacity(stages.len());
        let (mut t, mut rate, mut count) = (0.0, start_rate, 0.0);
        for stage in stages {
            let length = stage.over.as_secs_f64();
            segments.push(Segment {
                start: t,
                length,
                from: rate,
                to: stage.per_second,
                before: count,
            });
            count += length * (rate + stage.per_second) / 2.0;
            t += length;
            rate = stage.per_second;
        }
        Arrivals {
            segments,
            total: count,
            end: t,
        }
    }

    /// This schedule with its rate set to `per_second` from `at` until its end (a live load
    /// change, steer.rs): no arrival before `at` (those are past), then a constant rate.
    pub fn switched(&self, per_second: f64, at: Duration) -> Arrivals {
        let end = self.duration();
        let at = at.min(end);
        Arrivals::new(
            0.0,
            &[
                RateStage {
                    per_second: 0.0,
                    over: at,
                },
                RateStage {
                    per_second,
                    over: Duration::ZERO,
                },
                RateStage {
                    per_second,
                    over: end - at,
                },
            ],
        )
    }

    /// How many arrivals the whole schedule has.
    pub fn count(&self) -> u64 {
        (self.total - 1e-9).ceil().max(0.0) as u64
    }

    /// How long the schedule lasts.
    pub fn duration(&self) -> Duration {
        Duration::from_secs_f64(self.end)
    }

    /// The index of the first arrival at or after `at` (the count of arrivals before it).
    pub fn first_at_or_after(&self, at: Duration) -> u64 {
        let t = at.as_secs_f64();
        if t <= 0.0 {
            return 0;
        }
        let before = match self.segments.iter().rev().find(|s| s.start <= t) {
            None => 0.0,
            Some(s) => {
                let x = (t - s.start).min(s.length);
                let slope = if s.length > 0.0 {
                    (s.to - s.from) / s.length
                } else {
                    0.0
                };
                s.before + s.from * x + slope * x * x / 2.0
            }
        };
        // Arrival i is at the time the integral reaches i: those with i < before are earlier.
        (before - 1e-9).ceil().max(0.0) as u64
    }

    /// Offset from the start of the i-th arrival, or None when the schedule has ended before it.
    /// `cursor` remembers the segment of the previous call (arrivals are asked in order).
    pub fn time_of(&self, i: u64, cursor: &mut usize) -> Option<Duration> {
        let n = i as f64;
        // An arrival exactly at the end belongs to the next run, not this one.
        if n >= self.total - 1e-9 {
            return None;
        }
        while *cursor < self.segments.len() {
            let s = &self.segments[*cursor];
            let in_segment = n - s.before;
            let segment_count = s.length * (s.from + s.to) / 2.0;
            if in_segment < segment_count - 1e-9 {
                return Some(Duration::from_secs_f64(s.start + s.solve(in_segment)));
            }
            *cursor += 1;
        }
        None
    }
}

impl Segment {
    /// Time within the segment at which `k` arrivals have happened:
    /// solves from*x + (to-from)/(2*length) * x^2 = k.
    fn solve(&self, k: f64) -> f64 {
        if k <= 0.0 {
            return 0.0;
        }
        let a = (self.to - self.from) / (2.0 * self.length);
        if a.abs() < 1e-12 {
            return if self.from > 0.0 { k / self.from } else { 0.0 };
        }
        let b = self.from;
        let disc = (b * b + 4.0 * a * k).max(0.0);
        // Numerically stable root of a*x^2 + b*x - k = 0.
        let x = 2.0 * k / (b + disc.sqrt());
        x.clamp(0.0, self.length)
    }
}

/// The closed model's VU count over time: linear ramps between stage targets.
#[derive(Debug, Clone)]
pub struct VuRamp {
    start_vus: u32,
    stages: Vec<VuStage>,
}

impl VuRamp {
    pub fn new(start_vus: u32, stages: &[VuStage]) -> Self {
        VuRamp {
            start_vus,
            stages: stages.to_vec(),
        }
    }

    pub fn duration(&self) -> Duration {
        self.stages.iter().map(|s| s.over).sum()
    }

    /// The highest VU count the ramp ever asks for.
    pub fn max_vus(&self) -> u32 {
        self.stages
            .iter()
            .map(|s| s.vus)
            .fold(self.start_vus, u32::max)
    }

    /// VUs that should be running `at` into the scenario (floor of the linear ramp).
    pub fn vus_at(&self, at: Duration) -> u32 {
        let mut from = self.start_vus as f64;
        let mut t = at.as_secs_f64();
        for stage in &self.stages {
            let length = stage.over.as_secs_f64();
            if t < length {
                let fraction = if length > 0.0 { t / length } else { 1.0 };
                return (from + (stage.vus as f64 - from) * fraction).floor() as u32;
            }
            t -= length;
            from = stage.vus as f64;
        }
        0
    }

    /// [`VuRamp::vus_at`] with how long it holds: `(vus, until)`, the count keeping its value
    /// until `until` when `at` falls in a flat stage (a constant `vus`, the common `vus` +
    /// `duration`), else `until == at` (nothing known beyond the instant). A closed-model VU
    /// then skips the ramp's arithmetic on every iteration of a flat stage.
    pub fn vus_steady(&self, at: Duration) -> (u32, Duration) {
        let mut from = self.start_vus;
        let mut stage_start = Duration::ZERO;
        for stage in &self.stages {
            let stage_end = stage_start + stage.over;
            if at < stage_end {
                let until = if stage.vus == from { stage_end } else { at };
                return (self.vus_at(at), until);
            }
            stage_start = stage_end;
            from = stage.vus;
        }
        (0, at)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rate(per_second: f64, secs: f64) -> RateStage {
        RateStage {
            per_second,
            over: Duration::from_secs_f64(secs),
        }
    }

    fn all(a: &Arrivals) -> Vec<Duration> {
        let mut cursor = 0;
        (0..).map_while(|i| a.time_of(i, &mut cursor)).collect()
    }

    #[test]
    fn constant_rate_gives_exact_count_evenly_spaced() {
        let a = Arrivals::new(500.0, &[rate(500.0, 4.0)]);
        let times = all(&a);
        assert_eq!(times.len(), 2000);
        assert_eq!(a.count(), 2000);
        assert_eq!(times[0], Duration::ZERO);
        assert!((times[1].as_secs_f64() - 0.002).abs() < 1e-9);
        assert!(times[1999] < Duration::from_secs(4));
    }

    #[test]
    fn linear_ramp_counts_the_integral() {
        // 0 -> 100/s over 10 s: 500 arrivals, denser at the end.
        let a = Arrivals::new(0.0, &[rate(100.0, 10.0)]);
        let times = all(&a);
        assert_eq!(times.len(), 500);
        assert_eq!(a.count(), 500);
        let first_half = times.iter().filter(|t| t.as_secs_f64() < 5.0).count();
        assert_eq!(first_half, 125);
        assert!(times.windows(2).all(|w| w[0] <= w[1]));
    }

    #[test]
    fn stages_chain_from_previous_rate() {
        let a = Arrivals::new(10.0, &[rate(10.0, 1.0), rate(0.0, 0.0), rate(20.0, 1.0)]);
        assert_eq!(all(&a).len(), 10 + 10);
        assert_eq!(a.duration(), Duration::from_secs(2));
    }

    #[test]
    fn the_first_arrival_at_or_after_a_time_counts_those_before_it() {
        let schedules = [
            Arrivals::new(500.0, &[rate(500.0, 4.0)]),
            Arrivals::new(0.0, &[rate(100.0, 10.0)]),
            Arrivals::new(10.0, &[rate(10.0, 1.0), rate(0.0, 0.0), rate(20.0, 1.0)]),
            Arrivals::new(50.0, &[rate(10.0, 3.0), rate(70.0, 2.5)]),
        ];
        for a in &schedules {
            let times = all(a);
            for ms in (0..=12_000).step_by(7) {
                let at = Duration::from_millis(ms);
                let before = times.iter().filter(|t| **t < at).count() as u64;
                assert_eq!(a.first_at_or_after(at), before, "{a:?} at {at:?}");
            }
        }
    }

    /// What `vus_steady` promises holds: the count it gives is `vus_at`'s, and stays so until
    /// the instant it gives; a flat stage is known to its end, a slope only at the instant.
    #[test]
    fn a_steady_vu_count_holds_until_the_instant_given() {
        let stage = |vus, ms| VuStage {
            vus,
            over: Duration::from_millis(ms),
        };
        let ramps = [
            VuRamp::new(50, &[stage(50, 10_000)]),
            VuRamp::new(0, &[stage(10, 1_000), stage(10, 500), stage(0, 500)]),
            VuRamp::new(
                3,
                &[
                    stage(3, 0),
                    stage(7, 700),
                    stage(7, 300),
                    stage(7, 0),
                    stage(2, 0),
                ],
            ),
        ];
        for r in &ramps {
            for ms in (0..=2_100).step_by(3) {
                let at = Duration::from_millis(ms);
                let (vus, until) = r.vus_steady(at);
                assert_eq!(vus, r.vus_at(at), "{r:?} at {at:?}");
                assert!(until >= at);
                let mut t = at;
                while t < until {
                    assert_eq!(
                        r.vus_at(t),
                        vus,
                        "{r:?}: {at:?} said steady until {until:?}, not at {t:?}"
                    );
                    t += Duration::from_micros(997);
                }
            }
        }
        let flat = &ramps[0];
        assert_eq!(
            flat.vus_steady(Duration::from_millis(1)),
            (50, Duration::from_secs(10))
        );
        let sloped = &ramps[1];
        let at = Duration::from_millis(250);
        assert_eq!(sloped.vus_steady(at), (2, at));
        assert_eq!(
            sloped.vus_steady(Duration::from_millis(1_200)),
            (10, Duration::from_millis(1_500))
        );
    }

    #[test]
    fn vu_ramp_follows_stages() {
        let stage = |vus, secs| VuStage {
            vus,
            over: Duration::from_secs(secs),
        };
        let r = VuRamp::new(0, &[stage(10, 10), stage(10, 5), stage(0, 5)]);
        assert_eq!(r.vus_at(Duration::ZERO), 0);
        assert_eq!(r.vus_at(Duration::from_millis(5500)), 5);
        assert_eq!(r.vus_at(Duration::from_secs(12)), 10);
        assert_eq!(r.vus_at(Duration::from_millis(17500)), 5);
        assert_eq!(r.vus_at(Duration::from_secs(20)), 0);
        assert_eq!(r.max_vus(), 10);
    }
}

impl VuRamp {
    /// The first offset at or after `from` when VU `k` (0-based) should be running, if any.
    pub fn next_active(&self, k: u32, from: Duration) -> Option<Duration> {
        let need = k as f64 + 1.0;
        let from = from.as_secs_f64();
        let (mut start, mut value) = (0.0, self.start_vus as f64);
        for stage in &self.stages {
            let length = stage.over.as_secs_f64();
            let end = start + length;
            let target = stage.vus as f64;
            if end > from && length > 0.0 {
                let slope = (target - value) / length;
                let t0 = from.max(start);
                let at_t0 = value + slope * (t0 - start);
                if at_t0 >= need - 1e-9 {
                    return Some(Duration::from_secs_f64(t0));
                }
                if slope > 0.0 && target >= need {
                    let t = start + (need - value) / slope;
                    return Some(Duration::from_secs_f64(t.max(t0)));
                }
            }
            start = end;
            value = target;
        }
        None
    }
}

#[cfg(test)]
mod next_active_tests {
    use super::*;

    #[test]
    fn finds_the_ramp_crossing() {
        let stage = |vus, secs| VuStage {
            vus,
            over: Duration::from_secs(secs),
        };
        let r = VuRamp::new(0, &[stage(10, 10), stage(0, 10), stage(10, 10)]);
        // VU 4 (the 5th) starts when the ramp reaches 5, at 5 s.
        assert_eq!(
            r.next_active(4, Duration::ZERO),
            Some(Duration::from_secs(5))
        );
        // After the ramp-down passes it, it comes back on the second ramp-up.
        let again = r.next_active(4, Duration::from_secs(16)).unwrap();
        assert!((again.as_secs_f64() - 25.0).abs() < 1e-6, "{again:?}");
        assert_eq!(r.next_active(10, Duration::ZERO), None);
        let fixed = VuRamp::new(3, &[stage(3, 10)]);
        assert_eq!(
            fixed.next_active(2, Duration::from_secs(1)),
            Some(Duration::from_secs(1))
        );
        assert_eq!(fixed.next_active(2, Duration::from_secs(10)), None);
    }
}
