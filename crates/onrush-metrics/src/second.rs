//! One closed second in detail, per step and per scenario, for live exporters (Prometheus,
//! InfluxDB, ...): see [`Collector::closed_seconds`](crate::Collector::closed_seconds).

use std::collections::BTreeMap;

use crate::failure::FailureClass;
use crate::hist::{Hist, MsStats};
use crate::snapshot::{CheckCounts, ScenarioInterval, StepInterval};

/// One second closed by the collector, with every step's counters and histograms.
///
/// Built by [`Collector::close_second`](crate::Collector::close_second) (and
/// [`finish`](crate::Collector::finish)) from the data it already merged: the histograms are
/// moved, not copied, and the collector keeps only the seconds of its latest close call.
#[derive(Clone, Debug)]
pub struct SecondData {
    /// Index of the second since the start of the run (`t` in `intervals.jsonl`).
    pub second: u64,
    /// Unix time in ms of the start of that second (`start_unix_ms + 1000 * second`).
    pub unix_ms: u64,
    /// Every scenario of the layout, in layout order.
    pub scenarios: Vec<ScenarioSecond>,
    /// The request steps with activity in that second (as the `step` lines of
    /// `intervals.jsonl`), in layout order. Groups are not here but in `groups`.
    pub steps: Vec<StepSecond>,
    /// The groups (transactions) with activity in that second (the `group` lines), in layout
    /// order: `requests` counts the runs of the group. Not in `totals`.
    pub groups: Vec<StepSecond>,
    /// That second over all steps and scenarios, and the running totals.
    pub totals: SecondTotals,
}

/// One step's second.
#[derive(Clone, Debug)]
pub struct StepSecond {
    /// Index of the scenario in the [`Layout`](crate::Layout).
    pub scenario_index: usize,
    /// Index of the step in its scenario.
    pub step_index: usize,
    /// Scenario name.
    pub scenario: String,
    /// Step (metric) name.
    pub step: String,
    pub requests: u64,
    pub failures: u64,
    /// Failures per class, indexed by [`FailureClass::index`].
    pub failures_by_class: [u64; FailureClass::CAPACITY],
    /// Exact status → count (requests without a response are not counted here).
    pub status_codes: BTreeMap<u16, u64>,
    pub bytes_in: u64,
    pub bytes_out: u64,
    /// Histograms of that second, µs; `None` when nothing was recorded.
    pub latency: Option<Hist>,
    pub service: Option<Hist>,
    pub connect: Option<Hist>,
    pub ttfb: Option<Hist>,
    /// TLS handshakes in that second: full and resumed ones.
    pub handshakes_full: u64,
    pub handshakes_resumed: u64,
    /// TLS handshake times of that second, µs; `None` when none.
    pub handshake: Option<Hist>,
}

impl StepSecond {
    /// The failure classes that occurred, with their counts, in class order.
    pub fn failure_classes(&self) -> impl Iterator<Item = (FailureClass, u64)> + '_ {
        FailureClass::all()
            .map(|c| (c, self.failures_by_class[c.index()]))
            .filter(|&(_, n)| n > 0)
    }

    /// Latency statistics of that second in ms (the `summary.json` conventions; all zero
    /// without a value).
    pub fn latency_stats(&self) -> MsStats {
        self.latency
            .as_ref()
            .map_or_else(MsStats::default, MsStats::from_hist)
    }

    pub(crate) fn new(
        scenario_index: usize,
        step_index: usize,
        scenario: &str,
        step: &str,
        d: StepInterval,
    ) -> StepSecond {
        let c = d.counters;
        StepSecond {
            scenario_index,
            step_index,
            scenario: scenario.to_string(),
            step: step.to_string(),
            requests: c.requests,
            failures: c.failures,
            failures_by_class: c.failures_by_class,
            status_codes: c.status_codes,
            bytes_in: c.bytes_in,
            bytes_out: c.bytes_out,
            latency: d.latency,
            service: d.service,
            connect: d.connect,
            ttfb: d.ttfb,
            handshakes_full: c.handshakes_full,
            handshakes_resumed: c.handshakes_resumed,
            handshake: d.handshake,
        }
    }
}

/// One scenario's second.
#[derive(Clone, Debug)]
pub struct ScenarioSecond {
    /// Index of the scenario in the [`Layout`](crate::Layout).
    pub scenario_index: usize,
    /// Scenario name.
    pub scenario: String,
    /// Iterations completed in that second.
    pub iterations: u64,
    /// Iterations the open model could not start in that second.
    pub dropped_iterations: u64,
    pub connections_opened: u64,
    /// Gauge: active VUs (each worker's peak of the second, summed over workers).
    pub active_vus: u64,
    /// Start lag of the iterations of that second, µs; `None` when none.
    pub schedule_lag: Option<Hist>,
    /// Passes and fails of the scenario's checks in that second, indexed like
    /// [`ScenarioLayout::checks`](crate::ScenarioLayout::checks); empty (or shorter) when
    /// none (the rest) ran.
    pub checks: Vec<CheckCounts>,
}

impl ScenarioSecond {
    pub(crate) fn new(scenario_index: usize, scenario: &str, d: ScenarioInterval) -> Self {
        ScenarioSecond {
            scenario_index,
            scenario: scenario.to_string(),
            iterations: d.iterations,
            dropped_iterations: d.dropped_iterations,
            connections_opened: d.connections_opened,
            active_vus: d.active_vus,
            schedule_lag: d.schedule_lag,
            checks: d.checks,
        }
    }
}

/// A second over all steps and scenarios, plus the running totals of the run.
#[derive(Clone, Debug, Default)]
pub struct SecondTotals {
    pub requests: u64,
    pub failures: u64,
    pub bytes_in: u64,
    pub bytes_out: u64,
    pub iterations: u64,
    pub dropped_iterations: u64,
    pub connections_opened: u64,
    pub active_vus: u64,
    /// Checks of every scenario in that second.
    pub checks: CheckCounts,
    /// Latency of every step in that second, µs; `None` when no request.
    pub latency: Option<Hist>,
    /// Running totals since the start of the run, including this second.
    pub total_requests: u64,
    pub total_failures: u64,
    pub total_dropped_iterations: u64,
}

impl SecondTotals {
    /// Latency statistics of that second over all steps, ms.
    pub fn latency_stats(&self) -> MsStats {
        self.latency
            .as_ref()
            .map_or_else(MsStats::default, MsStats::from_hist)
    }
}
