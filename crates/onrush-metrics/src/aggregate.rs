//! Cumulative totals built from 1-second intervals. The one source of truth for the summary:
//! the collector feeds it the intervals it closes, `merge` the intervals it reads back, and
//! both build `summary.json` with [`Aggregate::summary`]. It holds running totals and
//! histograms per step and scenario, and the per-second figures folded by [`Seconds`]: its
//! size does not grow with the length of the run.

use std::collections::BTreeMap;

use crate::failure::FailureClass;
use crate::hist::{add_into, new_hist, round3, Hist, MsStats};
use crate::rates::{rate, Seconds};
use crate::record::{Layout, ScenarioLayout, StepKind};
use crate::snapshot::{CheckCounts, ScenarioInterval, StepCounters, StepInterval};
use crate::summary::{
    CheckStats, CheckSummary, Extras, FailureClassInfo, HandshakeStats, RunSummary,
    ScenarioSummary, StepSummary, Summary, Totals,
};

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
    /// The first and the last second in which it had requests (runs, for a group).
    pub active: Active,
}

/// The first and the last second in which something had requests: its own active time, over
/// which its rate is not diluted by the rest of the run.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Active(Option<(u64, u64)>);

impl Active {
    fn see(&mut self, t: u64) {
        self.0 = Some(self.0.map_or((t, t), |(a, b)| (a.min(t), b.max(t))));
    }

    /// (rate over the active time, the active time in s), the time at most `duration`.
    fn rate(&self, requests: u64, duration: f64) -> (Option<f64>, Option<f64>) {
        match self.0 {
            Some((a, b)) if requests > 0 => {
                let span = ((b - a + 1) as f64).min(duration);
                let span = if span > 0.0 { span } else { (b - a + 1) as f64 };
                (Some(round3(requests as f64 / span)), Some(round3(span)))
            }
            _ => (None, None),
        }
    }
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
    /// Its request steps' [`Active`] together.
    pub active: Active,
}

/// One check of a scenario, identified by its step (metric) name and its own name.
#[derive(Clone, Debug)]
pub(crate) struct CheckAgg {
    pub step: String,
    pub name: String,
    pub counts: CheckCounts,
}

#[derive(Clone, Debug)]
pub(crate) struct Aggregate {
    pub scenarios: Vec<ScenarioAgg>,
    pub seconds: Seconds,
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

impl Aggregate {
    pub fn new(layout: &Layout) -> Aggregate {
        let mut a = Aggregate {
            scenarios: Vec::new(),
            seconds: Seconds::default(),
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
            active: Active::default(),
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
            active: Active::default(),
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

    /// Adds second `t` of step `step` of scenario `si` (all workers / runs already merged).
    /// A group counts only in its own step, not in the scenario's or the run's totals.
    pub fn add_step(&mut self, t: u64, si: usize, step: usize, d: &StepInterval) {
        self.seconds.at(t);
        if self.scenarios[si].steps[step].kind.is_group() {
            let st = &mut self.scenarios[si].steps[step];
            if d.counters.requests > 0 {
                st.active.see(t);
            }
            st.counters.add(&d.counters);
            add_opt(&mut st.latency, &d.latency);
            add_opt(&mut st.service, &d.service);
            add_opt(&mut st.connect, &d.connect);
            add_opt(&mut st.ttfb, &d.ttfb);
            add_opt(&mut st.handshake, &d.handshake);
            return;
        }
        self.seconds.at(t).requests += d.counters.requests;
        let sc = &mut self.scenarios[si];
        if d.counters.requests > 0 {
            sc.active.see(t);
            sc.steps[step].active.see(t);
        }
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
        self.seconds.at(t).active_vus += d.active_vus;
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
        let seconds = self.seconds.count();
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
                let (rps_active, active_s) = st.active.rate(c.requests, duration);
                steps.push(StepSummary {
                    scenario: sc.name.clone(),
                    name: st.name.clone(),
                    kind: st.kind,
                    requests: c.requests,
                    failures: c.failures,
                    failure_rate: ratio(c.failures, c.requests),
                    rps: round3(rate(c.requests, duration)),
                    rps_active,
                    active_s,
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
            let (rps_active, active_s) = sc.active.rate(sc_counters.requests, duration);
            scenarios.push(ScenarioSummary {
                name: sc.name.clone(),
                iterations: sc.iterations,
                dropped_iterations: sc.dropped_iterations,
                connections_opened: sc.connections_opened,
                requests: sc_counters.requests,
                failures: sc_counters.failures,
                failure_rate: ratio(sc_counters.failures, sc_counters.requests),
                rps: round3(rate(sc_counters.requests, duration)),
                rps_active,
                active_s,
                active_vus_max: sc.active_vus_max,
                latency_ms: MsStats::from_hist(&sc.latency),
                schedule_lag_ms: MsStats::from_hist(&sc.schedule_lag),
                handshakes: handshake_stats(&sc_counters, &sc.handshake),
                checks: check_stats(&sc_checks),
            });
        }

        let rates = self.seconds.rates(duration, all.requests);
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
            active_vus_max: self.seconds.active_vus_max(),
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
            failure_classes: failure_classes(&steps),
            steps,
            checks,
            extra: extra.clone(),
        }
    }
}

/// The group and hint of every class counted in `steps` (the totals' classes are theirs),
/// recorded beside the counts: a reader without the class's protocol learns them there.
fn failure_classes(steps: &[StepSummary]) -> BTreeMap<String, FailureClassInfo> {
    steps
        .iter()
        .flat_map(|st| st.failures_by_class.keys())
        .filter_map(|name| Some((name.clone(), FailureClass::named(name)?.info())))
        .collect()
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
