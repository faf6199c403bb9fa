//! What the live page shows of the run so far, kept from the closed seconds the collector
//! hands every exporter ([`SecondData`], the same snapshots `intervals.jsonl` gets): running
//! totals and each step's whole-run latency histogram (exact percentiles, as `summary.json`
//! computes them: `MsStats::from_hist`), the last second's figures, and where each second's
//! lines start in `intervals.jsonl` for the charts' polls. Its size does not grow with the
//! run's length: one histogram per step, and the offsets of the last [`WINDOW`] seconds.

use std::collections::{BTreeMap, VecDeque};

use onrush_metrics::{FailureClass, Layout, SecondData};
use onrush_results::{Event, Hist, MsStats};
use serde::Serialize;

/// Seconds whose start in `intervals.jsonl` is remembered: a page that polls from further back
/// gets the seconds from the oldest kept on (it has the earlier ones from its loading).
pub const WINDOW: usize = 3_600;

#[derive(Default)]
pub(crate) struct StepTotals {
    scenario: String,
    step: String,
    requests: u64,
    failures: u64,
    last_requests: u64,
    latency: Option<Hist>,
}

#[derive(Default)]
pub(crate) struct ScenarioTotals {
    name: String,
    iterations: u64,
    dropped_iterations: u64,
    active_vus: u64,
    last_iterations: u64,
}

/// The run so far.
#[derive(Default)]
pub(crate) struct LiveState {
    /// The last closed second (`None` before the first).
    pub last_second: Option<u64>,
    pub steps: Vec<StepTotals>,
    step_index: BTreeMap<(usize, usize), usize>,
    pub scenarios: Vec<ScenarioTotals>,
    pub requests: u64,
    pub failures: u64,
    pub last_requests: u64,
    pub last_failures: u64,
    pub connections_opened: u64,
    pub bytes_in: u64,
    pub bytes_out: u64,
    pub failures_by_class: BTreeMap<String, u64>,
    /// `(second, byte offset of its first line in intervals.jsonl)`, the last [`WINDOW`].
    pub offsets: VecDeque<(u64, u64)>,
    pub events: Vec<Event>,
}

impl LiveState {
    pub fn begin(&mut self, layout: &Layout) {
        self.scenarios = layout
            .scenarios
            .iter()
            .map(|s| ScenarioTotals {
                name: s.name.clone(),
                ..ScenarioTotals::default()
            })
            .collect();
        for (si, s) in layout.scenarios.iter().enumerate() {
            for (k, step) in s.steps.iter().enumerate() {
                if !s.is_group(k) {
                    self.step(si, k, &s.name, step);
                }
            }
        }
    }

    fn step(&mut self, scenario: usize, step: usize, sname: &str, name: &str) -> usize {
        let next = self.steps.len();
        let i = *self.step_index.entry((scenario, step)).or_insert(next);
        if i == next {
            self.steps.push(StepTotals {
                scenario: sname.to_string(),
                step: name.to_string(),
                ..StepTotals::default()
            });
        }
        i
    }

    /// Second `data` closed; its lines in `intervals.jsonl` began at byte `offset`.
    pub fn add(&mut self, data: &SecondData, offset: Option<u64>) {
        self.last_second = Some(data.second);
        if let Some(offset) = offset {
            if self.offsets.len() == WINDOW {
                self.offsets.pop_front();
            }
            self.offsets.push_back((data.second, offset));
        }
        let t = &data.totals;
        self.requests = t.total_requests;
        self.failures = t.total_failures;
        self.last_requests = t.requests;
        self.last_failures = t.failures;
        self.connections_opened += t.connections_opened;
        self.bytes_in += t.bytes_in;
        self.bytes_out += t.bytes_out;
        for st in &mut self.steps {
            st.last_requests = 0;
        }
        for s in &data.steps {
            let i = self.step(s.scenario_index, s.step_index, &s.scenario, &s.step);
            let st = &mut self.steps[i];
            st.requests += s.requests;
            st.failures += s.failures;
            st.last_requests = s.requests;
            if let Some(h) = &s.latency {
                match &mut st.latency {
                    Some(total) => {
                        // Same bounds (the workers' histograms): cannot fail.
                        let _ = total.add(h);
                    }
                    None => st.latency = Some(h.clone()),
                }
            }
            for (class, n) in s.failure_classes() {
                *self.failures_by_class.entry(class_name(class)).or_default() += n;
            }
        }
        for sc in &data.scenarios {
            if let Some(s) = self.scenarios.get_mut(sc.scenario_index) {
                s.iterations += sc.iterations;
                s.dropped_iterations += sc.dropped_iterations;
                s.active_vus = sc.active_vus;
                s.last_iterations = sc.iterations;
            }
        }
    }

    /// Where the lines of `from` (or the oldest second kept after it) begin.
    pub fn offset_of(&self, from: u64) -> Option<(u64, u64)> {
        self.offsets.iter().copied().find(|&(t, _)| t >= from)
    }
}

fn class_name(class: FailureClass) -> String {
    class.as_str().to_string()
}

/// One step in `/api/status`.
#[derive(Serialize)]
pub(crate) struct StepStatus<'a> {
    pub scenario: &'a str,
    pub step: &'a str,
    pub requests: u64,
    pub failures: u64,
    /// Requests in the last closed second.
    pub rate: u64,
    /// Latency since the start, ms, exact (the summary's figures at the end).
    pub latency_ms: MsStats,
}

impl StepTotals {
    pub fn status(&self) -> StepStatus<'_> {
        StepStatus {
            scenario: &self.scenario,
            step: &self.step,
            requests: self.requests,
            failures: self.failures,
            rate: self.last_requests,
            latency_ms: self
                .latency
                .as_ref()
                .map_or_else(MsStats::default, MsStats::from_hist),
        }
    }
}

/// One scenario's figures in `/api/status` (its load settings are added by the caller).
pub(crate) struct ScenarioFigures {
    pub iterations: u64,
    pub dropped_iterations: u64,
    pub active_vus: u64,
    pub iterations_last_second: u64,
}

impl LiveState {
    pub fn scenario_figures(&self, name: &str) -> Option<ScenarioFigures> {
        self.scenarios
            .iter()
            .find(|s| s.name == name)
            .map(|s| ScenarioFigures {
                iterations: s.iterations,
                dropped_iterations: s.dropped_iterations,
                active_vus: s.active_vus,
                iterations_last_second: s.last_iterations,
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn second(t: u64) -> SecondData {
        SecondData {
            second: t,
            unix_ms: t * 1000,
            scenarios: Vec::new(),
            steps: Vec::new(),
            groups: Vec::new(),
            totals: onrush_metrics::SecondTotals {
                requests: 10,
                total_requests: 10 * (t + 1),
                ..Default::default()
            },
        }
    }

    /// An hour-long run and a day-long one keep the same state: the offsets of the last
    /// WINDOW seconds, the totals.
    #[test]
    fn the_state_does_not_grow_with_the_run() {
        let mut state = LiveState::default();
        for t in 0..(WINDOW as u64 * 3) {
            state.add(&second(t), Some(100 * t));
        }
        assert_eq!(state.offsets.len(), WINDOW);
        assert_eq!(state.requests, 10 * WINDOW as u64 * 3);
        let oldest = WINDOW as u64 * 2;
        assert_eq!(
            state.offset_of(0),
            Some((oldest, 100 * oldest)),
            "from the oldest kept"
        );
        assert_eq!(
            state.offset_of(oldest + 5),
            Some((oldest + 5, 100 * (oldest + 5)))
        );
        assert_eq!(state.offset_of(WINDOW as u64 * 3), None, "not closed yet");
    }
}
