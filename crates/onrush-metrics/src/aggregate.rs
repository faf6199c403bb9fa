//! Cumulative totals built from 1-second intervals. The one source of truth for the summary:
//! the collector feeds it the intervals it closes, `merge` the intervals it reads back, and
//! both build `summary.json` with [`Aggregate::summary`].

use crate::hist::{add_into, new_hist, round3, Hist, MsStats};
use crate::record::{Layout, ScenarioLayout, StepKind};
use crate::snapshot::{CheckCounts, ScenarioInterval, StepCounters, StepInterval};
use crate::summary::{
    CheckStats, CheckSummary, Extras, HandshakeStats, RunSummary, ScenarioSummary, StepSummary,
    Summary, Totals,
};

/// The window of `rate_10s_*`, in seconds.
pub(crate) const RATE_WINDOW_S: usize = 10;

/// A second counts as full for the rate figures when at least this much of it (1 - 10 ms)
/// lies inside the run, so a 10 s run measured as 9.995 s still has 10 full seconds.
const FULL_SECOND_SLACK_S: f64 = 0.01;

/// Identity of a run: what the summary's `run` holds besides figures.
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct RunMeta {
    pub plan: String,
    pub start_unix_ms: u64,
    /// `None`: the number of seconds seen.
    pub duration_s: Option<f64>,
    pub merged_from: Option<Vec<String>>,
}

#[derive(Clone, Debug)]
pub(crate) struct StepAgg {
    pub name: String,
    pub kind: StepKind,
    pub counters: StepCounters,
    pub latency: Hist,
    pub service: Hist,
    pub connect: Hist,
    pub ttfb: Hist,
    pub handshake: Hist,
}

#[derive(Clone, Debug)]
pub(crate) struct ScenarioAgg {
    pub name: String,
    pub steps: Vec<StepAgg>,
    pub iterations: u64,
    pub dropped_iterations: u64,
    pub connections_opened: u64,
    pub active_vus_max: u64,
    pub latency: Hist,
    pub schedule_lag: Hist,
    pub handshake: Hist,
    pub checks: Vec<CheckAgg>,
}

/// One check of a scenario, identified by its step (metric) name and its own name.
#[derive(Clone, Debug)]
pub(crate) struct CheckAgg {
    pub step: String,
    pub name: String,
    pub counts: CheckCounts,
}

#[derive(Clone, Debug, Default)]
pub(crate) struct SecondAgg {
    pub requests: u64,
    pub active_vus: u64,
}

#[derive(Clone, Debug)]
pub(crate) struct Aggregate {
    pub scenarios: Vec<ScenarioAgg>,
    /// Indexed by second.
    pub seconds: Vec<SecondAgg>,
    pub latency: Hist,
    pub service: Hist,
    pub connect: Hist,
    pub ttfb: Hist,
    pub schedule_lag: Hist,
    pub handshake: Hist,
}

fn add_opt(dst: &mut Hist, src: &Option<Hist>) {
    if let Some(s) = src {
        add_into(dst, s);
    }
}

fn rate(n: u64, d: f64) -> f64 {
    if d > 0.0 {
        n as f64 / d
    } else {
        0.0
    }
}

impl Aggregate {
    pub fn new(layout: &Layout) -> Aggregate {
        let mut a = Aggregate {
            scenarios: Vec::new(),
            seconds: Vec::new(),
            latency: new_hist(),
            service: new_hist(),
            connect: new_hist(),
            ttfb: new_hist(),
            schedule_lag: new_hist(),
            handshake: new_hist(),
        };
        for s in &layout.scenarios {
            a.add_layout(s);
        }
        a
    }

    /// Registers the steps (with their kinds) and checks of one scenario of a layout; returns
    /// the scenario's index and the indexes of its steps and checks here.
    pub fn add_layout(&mut self, s: &ScenarioLayout) -> (usize, Vec<usize>, Vec<usize>) {
        let si = self.scenario_index(&s.name);
        let steps: Vec<usize> = s
            .steps
            .iter()
            .enumerate()
            .map(|(i, step)| self.step_index_kind(si, step, s.kind(i)))
            .collect();
        let checks = s
            .checks
            .iter()
            .map(|(name, step)| {
                let step = s.steps.get(*step).map_or("", String::as_str);
                self.check_index(si, step, name)
            })
            .collect();
        (si, steps, checks)
    }

    /// The layout (names) of the scenarios and steps known so far, in first-seen order.
    pub fn layout(&self) -> Layout {
        Layout {
            scenarios: self
                .scenarios
                .iter()
                .map(|s| ScenarioLayout {
                    name: s.name.clone(),
                    steps: s.steps.iter().map(|st| st.name.clone()).collect(),
                    kinds: s.steps.iter().map(|st| st.kind).collect(),
                    checks: s
                        .checks
                        .iter()
                        .map(|c| {
                            let step = s.steps.iter().position(|st| st.name == c.step);
                            (c.name.clone(), step.unwrap_or(usize::MAX))
                        })
                        .collect(),
                })
                .collect(),
        }
    }

    /// Index of the scenario named `name`, added at the end when new.
    pub fn scenario_index(&mut self, name: &str) -> usize {
        if let Some(i) = self.scenarios.iter().position(|s| s.name == name) {
            return i;
        }
        self.scenarios.push(ScenarioAgg {
            name: name.to_string(),
            steps: Vec::new(),
            iterations: 0,
            dropped_iterations: 0,
            connections_opened: 0,
            active_vus_max: 0,
            latency: new_hist(),
            schedule_lag: new_hist(),
            handshake: new_hist(),
            checks: Vec::new(),
        });
        self.scenarios.len() - 1
    }

    /// Index of step `name` in scenario `si`, added at the end with `kind` when new (a known
    /// step keeps the kind it was first seen with).
    pub fn step_index_kind(&mut self, si: usize, name: &str, kind: StepKind) -> usize {
        let steps = &mut self.scenarios[si].steps;
        if let Some(i) = steps.iter().position(|s| s.name == name) {
            return i;
        }
        steps.push(StepAgg {
            name: name.to_string(),
            kind,
            counters: StepCounters::default(),
            latency: new_hist(),
            service: new_hist(),
            connect: new_hist(),
            ttfb: new_hist(),
            handshake: new_hist(),
        });
        steps.len() - 1
    }

    /// Index of the check `name` of step `step` in scenario `si`, added at the end when new.
    pub fn check_index(&mut self, si: usize, step: &str, name: &str) -> usize {
        let checks = &mut self.scenarios[si].checks;
        if let Some(i) = checks.iter().position(|c| c.step == step && c.name == name) {
            return i;
        }
        checks.push(CheckAgg {
            step: step.to_string(),
            name: name.to_string(),
            counts: CheckCounts::default(),
        });
        checks.len() - 1
    }

    fn second(&mut self, t: u64) -> &mut SecondAgg {
        let t = t as usize;
        if self.seconds.len() <= t {
            self.seconds.resize(t + 1, SecondAgg::default());
        }
        &mut self.seconds[t]
    }

    /// Adds second `t` of step `step` of scenario `si` (all workers / runs already merged).
    /// A group counts only in its own step, not in the scenario's or the run's totals.
    pub fn add_step(&mut self, t: u64, si: usize, step: usize, d: &StepInterval) {
        self.second(t);
        if self.scenarios[si].steps[step].kind.is_group() {
            let st = &mut self.scenarios[si].steps[step];
            st.counters.add(&d.counters);
            add_opt(&mut st.latency, &d.latency);
            add_opt(&mut st.service, &d.service);
            add_opt(&mut st.connect, &d.connect);
            add_opt(&mut st.ttfb, &d.ttfb);
            add_opt(&mut st.handshake, &d.handshake);
            return;
        }
        self.second(t).requests += d.counters.requests;
        let sc = &mut self.scenarios[si];
        add_opt(&mut sc.latency, &d.latency);
        add_opt(&mut sc.handshake, &d.handshake);
        let st = &mut sc.steps[step];
        st.counters.add(&d.counters);
        add_opt(&mut st.latency, &d.latency);
        add_opt(&mut st.service, &d.service);
        add_opt(&mut st.connect, &d.connect);
        add_opt(&mut st.ttfb, &d.ttfb);
        add_opt(&mut st.handshake, &d.handshake);
        add_opt(&mut self.handshake, &d.handshake);
        add_opt(&mut self.latency, &d.latency);
        add_opt(&mut self.service, &d.service);
        add_opt(&mut self.connect, &d.connect);
        add_opt(&mut self.ttfb, &d.ttfb);
    }

    /// Adds second `t` of scenario `si` (all workers / runs already merged). `d.checks` is
    /// indexed by this aggregate's check indexes ([`check_index`](Self::check_index)).
    pub fn add_scenario(&mut self, t: u64, si: usize, d: &ScenarioInterval) {
        self.second(t).active_vus += d.active_vus;
        let sc = &mut self.scenarios[si];
        sc.iterations += d.iterations;
        sc.dropped_iterations += d.dropped_iterations;
        sc.connections_opened += d.connections_opened;
        sc.active_vus_max = sc.active_vus_max.max(d.active_vus);
        add_opt(&mut sc.schedule_lag, &d.schedule_lag);
        for (c, n) in sc.checks.iter_mut().zip(&d.checks) {
            c.counts.add(n);
        }
        add_opt(&mut self.schedule_lag, &d.schedule_lag);
    }

    /// Builds the summary. `duration_s` defaults to the number of seconds seen.
    pub fn summary(&self, meta: &RunMeta, extra: &Extras) -> Summary {
        let seconds = self.seconds.len() as u64;
        let duration = meta.duration_s.unwrap_or(seconds as f64).max(0.0);

        let mut all = StepCounters::default();
        let mut all_checks = CheckCounts::default();
        let mut steps = Vec::new();
        let mut scenarios = Vec::new();
        let mut checks = Vec::new();
        for sc in &self.scenarios {
            let mut sc_counters = StepCounters::default();
            let mut sc_checks = CheckCounts::default();
            for c in &sc.checks {
                sc_checks.add(&c.counts);
                checks.push(CheckSummary {
                    scenario: sc.name.clone(),
                    step: c.step.clone(),
                    name: c.name.clone(),
                    passes: c.counts.passes,
                    fails: c.counts.fails,
                    pass_rate: ratio(c.counts.passes, c.counts.total()),
                });
            }
            all_checks.add(&sc_checks);
            for st in &sc.steps {
                if !st.kind.is_group() {
                    sc_counters.add(&st.counters);
                }
                let c = &st.counters;
                steps.push(StepSummary {
                    scenario: sc.name.clone(),
                    name: st.name.clone(),
                    kind: st.kind,
                    requests: c.requests,
                    failures: c.failures,
                    failure_rate: ratio(c.failures, c.requests),
                    rps: round3(rate(c.requests, duration)),
                    failures_by_class: c.failures_by_class_map(),
                    status_codes: c.status_codes.clone(),
                    bytes_in: c.bytes_in,
                    bytes_out: c.bytes_out,
                    latency_ms: MsStats::from_hist(&st.latency),
                    service_ms: MsStats::from_hist(&st.service),
                    connect_ms: MsStats::from_hist(&st.connect),
                    ttfb_ms: MsStats::from_hist(&st.ttfb),
                    handshakes: handshake_stats(c, &st.handshake),
                });
            }
            all.add(&sc_counters);
            scenarios.push(ScenarioSummary {
                name: sc.name.clone(),
                iterations: sc.iterations,
                dropped_iterations: sc.dropped_iterations,
                connections_opened: sc.connections_opened,
                requests: sc_counters.requests,
                failures: sc_counters.failures,
                failure_rate: ratio(sc_counters.failures, sc_counters.requests),
                rps: round3(rate(sc_counters.requests, duration)),
                active_vus_max: sc.active_vus_max,
                latency_ms: MsStats::from_hist(&sc.latency),
                schedule_lag_ms: MsStats::from_hist(&sc.schedule_lag),
                handshakes: handshake_stats(&sc_counters, &sc.handshake),
                checks: check_stats(&sc_checks),
            });
        }

        let rates = window_rates(&self.per_second_requests(), duration, all.requests);
        let totals = Totals {
            requests: all.requests,
            failures: all.failures,
            failure_rate: ratio(all.failures, all.requests),
            iterations: self.scenarios.iter().map(|s| s.iterations).sum(),
            dropped_iterations: self.scenarios.iter().map(|s| s.dropped_iterations).sum(),
            connections_opened: self.scenarios.iter().map(|s| s.connections_opened).sum(),
            rps: round3(rate(all.requests, duration)),
            bytes_in: all.bytes_in,
            bytes_out: all.bytes_out,
            latency_ms: MsStats::from_hist(&self.latency),
            service_ms: MsStats::from_hist(&self.service),
            connect_ms: MsStats::from_hist(&self.connect),
            ttfb_ms: MsStats::from_hist(&self.ttfb),
            schedule_lag_ms: MsStats::from_hist(&self.schedule_lag),
            failures_by_class: all.failures_by_class_map(),
            status_codes: all.status_codes.clone(),
            rate_10s_max: round3(rates.max_10s),
            rate_10s_min: round3(rates.min_10s),
            rate_10s_window_s: round3(rates.window_s),
            rate_10s_whole_run: rates.whole_run,
            rate_1s_max: round3(rates.max_1s),
            active_vus_max: self.seconds.iter().map(|s| s.active_vus).max().unwrap_or(0),
            handshakes: handshake_stats(&all, &self.handshake),
            checks: check_stats(&all_checks),
        };
        Summary {
            onrush_results: onrush_results::RESULTS_FORMAT_VERSION,
            onrush_version: crate::ONRUSH_VERSION.to_string(),
            run: RunSummary {
                plan: meta.plan.clone(),
                start_unix_ms: meta.start_unix_ms,
                duration_s: round3(duration),
                seconds,
                merged_from: meta.merged_from.clone(),
            },
            totals,
            scenarios,
            steps,
            checks,
            extra: extra.clone(),
        }
    }

    fn per_second_requests(&self) -> Vec<u64> {
        self.seconds.iter().map(|s| s.requests).collect()
    }
}

fn handshake_stats(c: &StepCounters, h: &Hist) -> HandshakeStats {
    HandshakeStats {
        full: c.handshakes_full,
        resumed: c.handshakes_resumed,
        time_ms: MsStats::from_hist(h),
    }
}

fn check_stats(c: &CheckCounts) -> CheckStats {
    CheckStats {
        passes: c.passes,
        fails: c.fails,
        pass_rate: ratio(c.passes, c.total()),
    }
}

fn ratio(a: u64, b: u64) -> f64 {
    if b == 0 {
        0.0
    } else {
        a as f64 / b as f64
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
pub(crate) fn window_rates(per_second: &[u64], duration_s: f64, total: u64) -> WindowRates {
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
    let mut sum: u64 = (0..RATE_WINDOW_S).map(count).sum();
    let (mut lo, mut hi) = (sum, sum);
    for end in RATE_WINDOW_S..full {
        sum = sum + count(end) - count(end - RATE_WINDOW_S);
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

#[cfg(test)]
mod tests {
    use super::*;

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
}
