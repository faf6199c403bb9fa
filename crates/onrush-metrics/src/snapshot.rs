//! What one worker measured in one interval, and the per-step / per-scenario interval data
//! shared by the collector, the result files and merge.

use std::collections::BTreeMap;

use crate::failure::FailureClass;
use crate::hist::{merge_opt, Hist};

/// Counters of one step over some span (an interval, or the whole run).
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct StepCounters {
    pub requests: u64,
    pub failures: u64,
    pub failures_by_class: [u64; FailureClass::CAPACITY],
    /// Exact status → count; status 0 (no response) is not counted.
    pub status_codes: BTreeMap<u16, u64>,
    pub bytes_in: u64,
    pub bytes_out: u64,
    /// TLS handshakes: full ones and resumed ones.
    pub handshakes_full: u64,
    pub handshakes_resumed: u64,
}

// By hand: `Default` is derived for arrays of up to 32 elements only.
impl Default for StepCounters {
    fn default() -> Self {
        StepCounters {
            requests: 0,
            failures: 0,
            failures_by_class: [0; FailureClass::CAPACITY],
            status_codes: BTreeMap::new(),
            bytes_in: 0,
            bytes_out: 0,
            handshakes_full: 0,
            handshakes_resumed: 0,
        }
    }
}

impl StepCounters {
    pub fn add(&mut self, o: &StepCounters) {
        self.requests += o.requests;
        self.failures += o.failures;
        for (a, b) in self.failures_by_class.iter_mut().zip(o.failures_by_class) {
            *a += b;
        }
        for (&code, &n) in &o.status_codes {
            *self.status_codes.entry(code).or_insert(0) += n;
        }
        self.bytes_in += o.bytes_in;
        self.bytes_out += o.bytes_out;
        self.handshakes_full += o.handshakes_full;
        self.handshakes_resumed += o.handshakes_resumed;
    }

    /// Non-zero failure classes by name.
    pub fn failures_by_class_map(&self) -> BTreeMap<String, u64> {
        FailureClass::all()
            .filter(|c| self.failures_by_class[c.index()] > 0)
            .map(|c| (c.as_str().to_string(), self.failures_by_class[c.index()]))
            .collect()
    }
}

/// One step's data for one interval (of one worker, or merged). Histograms are `None` when
/// nothing was recorded in them.
#[derive(Clone, Debug, Default)]
pub(crate) struct StepInterval {
    pub counters: StepCounters,
    pub latency: Option<Hist>,
    pub service: Option<Hist>,
    pub connect: Option<Hist>,
    pub ttfb: Option<Hist>,
    /// TLS handshake times.
    pub handshake: Option<Hist>,
}

impl StepInterval {
    /// Merges `o` into `self` exactly (counters summed, histograms added).
    pub fn merge(&mut self, o: StepInterval) {
        self.counters.add(&o.counters);
        merge_opt(&mut self.latency, o.latency);
        merge_opt(&mut self.service, o.service);
        merge_opt(&mut self.connect, o.connect);
        merge_opt(&mut self.ttfb, o.ttfb);
        merge_opt(&mut self.handshake, o.handshake);
    }
}

/// Passes and fails of one check over some span.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CheckCounts {
    pub passes: u64,
    pub fails: u64,
}

impl CheckCounts {
    pub fn add(&mut self, o: &CheckCounts) {
        self.passes += o.passes;
        self.fails += o.fails;
    }

    /// passes + fails.
    pub fn total(&self) -> u64 {
        self.passes + self.fails
    }

    pub fn is_zero(&self) -> bool {
        self.total() == 0
    }
}

/// Adds `src` into `dst` element-wise (`dst` grows as needed).
pub(crate) fn add_checks(dst: &mut Vec<CheckCounts>, src: &[CheckCounts]) {
    if dst.len() < src.len() {
        dst.resize(src.len(), CheckCounts::default());
    }
    for (a, b) in dst.iter_mut().zip(src) {
        a.add(b);
    }
}

/// One scenario's data for one interval.
#[derive(Clone, Debug, Default)]
pub(crate) struct ScenarioInterval {
    pub iterations: u64,
    pub dropped_iterations: u64,
    pub connections_opened: u64,
    /// Gauge: active VUs at the end of the interval (summed over workers / runs).
    pub active_vus: u64,
    pub schedule_lag: Option<Hist>,
    /// Per check (indexed like the owner's check list; shorter or empty: the rest are zero).
    pub checks: Vec<CheckCounts>,
}

impl ScenarioInterval {
    /// Merges `o` into `self`; the VU gauges add up (they count different VUs).
    pub fn merge(&mut self, o: ScenarioInterval) {
        self.iterations += o.iterations;
        self.dropped_iterations += o.dropped_iterations;
        self.connections_opened += o.connections_opened;
        self.active_vus += o.active_vus;
        merge_opt(&mut self.schedule_lag, o.schedule_lag);
        add_checks(&mut self.checks, &o.checks);
    }
}

/// Everything one worker recorded since its previous snapshot: per-step counters and
/// histograms, per-scenario counters, the schedule-lag histogram and the active-VU gauge.
/// Produced by [`WorkerMetrics::take_snapshot`](crate::WorkerMetrics::take_snapshot), sent to
/// the collector thread, consumed by [`Collector::add`](crate::Collector::add).
#[derive(Clone, Debug)]
pub struct Snapshot {
    pub(crate) worker: u64,
    /// Failing exchanges the worker kept since its previous snapshot (few: a worker keeps
    /// three per step and class for the whole run).
    pub(crate) failing: Vec<onrush_results::FailingExchange>,
    /// `steps[scenario][step]`, `None` when the step had no activity.
    pub(crate) steps: Vec<Vec<Option<StepInterval>>>,
    pub(crate) scenarios: Vec<ScenarioInterval>,
}

impl Snapshot {
    /// Process-unique id of the [`WorkerMetrics`](crate::WorkerMetrics) that produced it.
    pub fn worker_id(&self) -> u64 {
        self.worker
    }

    /// Requests recorded in this snapshot, over all steps.
    pub fn requests(&self) -> u64 {
        self.sum_steps(|c| c.requests)
    }

    /// Failed requests recorded in this snapshot, over all steps.
    pub fn failures(&self) -> u64 {
        self.sum_steps(|c| c.failures)
    }

    fn sum_steps(&self, counter: impl Fn(&StepCounters) -> u64) -> u64 {
        self.steps
            .iter()
            .flatten()
            .flatten()
            .map(|s| counter(&s.counters))
            .sum()
    }

    /// Requests of one step (0 for an unknown step).
    pub fn step_requests(&self, scenario: usize, step: usize) -> u64 {
        self.step(scenario, step).map_or(0, |s| s.counters.requests)
    }

    /// Failures of one step (0 for an unknown step).
    pub fn step_failures(&self, scenario: usize, step: usize) -> u64 {
        self.step(scenario, step).map_or(0, |s| s.counters.failures)
    }

    /// Latency histogram (µs) of one step, `None` when nothing was recorded.
    pub fn step_latency(&self, scenario: usize, step: usize) -> Option<&Hist> {
        self.step(scenario, step).and_then(|s| s.latency.as_ref())
    }

    /// Iterations of a scenario in this snapshot.
    pub fn iterations(&self, scenario: usize) -> u64 {
        self.scenarios.get(scenario).map_or(0, |s| s.iterations)
    }

    /// Active VUs of a scenario when the snapshot was taken.
    pub fn active_vus(&self, scenario: usize) -> u64 {
        self.scenarios.get(scenario).map_or(0, |s| s.active_vus)
    }

    /// Iterations of a scenario that could not start because all its VUs were busy.
    pub fn dropped_iterations(&self, scenario: usize) -> u64 {
        self.scenarios
            .get(scenario)
            .map_or(0, |s| s.dropped_iterations)
    }

    /// Connections a scenario opened in this snapshot.
    pub fn connections_opened(&self, scenario: usize) -> u64 {
        self.scenarios
            .get(scenario)
            .map_or(0, |s| s.connections_opened)
    }

    /// Schedule lag (µs) of a scenario's iterations, `None` when nothing was recorded.
    pub fn schedule_lag(&self, scenario: usize) -> Option<&Hist> {
        self.scenarios.get(scenario)?.schedule_lag.as_ref()
    }

    /// Passes and fails of check `check` of `scenario` in this snapshot (zero when unknown).
    pub fn check_counts(&self, scenario: usize, check: usize) -> CheckCounts {
        self.scenarios
            .get(scenario)
            .and_then(|s| s.checks.get(check))
            .copied()
            .unwrap_or_default()
    }

    /// Number of scenarios in the layout.
    pub fn scenario_count(&self) -> usize {
        self.scenarios.len()
    }

    pub(crate) fn step(&self, scenario: usize, step: usize) -> Option<&StepInterval> {
        self.steps.get(scenario)?.get(step)?.as_ref()
    }
}
