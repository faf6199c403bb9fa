//! The first failing exchanges of each step and failure class, per worker: what a failing
//! request got back (docs/results.md, `failing_exchanges`).
//!
//! A worker keeps at most [`EXAMPLES_PER_KIND`] per (scenario, step, class) for the whole run:
//! a byte counter per kind says whether it still has room, so a failing request beyond those
//! costs one comparison and a successful one nothing. The examples leave with the worker's
//! next snapshot; the collector keeps the run's earliest of each kind.

use onrush_results::exchanges::EXAMPLES_PER_KIND;
use onrush_results::FailingExchange;

use crate::failure::FailureClass;
use crate::record::Layout;

/// A worker's room for failing exchanges and the ones kept since its last snapshot.
#[derive(Default)]
pub(crate) struct FailingCapture {
    /// Per scenario: the offset of its first step in `kept`.
    offsets: Vec<usize>,
    /// Per (step, class), flattened: examples kept so far in the run.
    kept: Vec<u8>,
    pub(crate) pending: Vec<FailingExchange>,
}

impl FailingCapture {
    pub(crate) fn new(layout: &Layout) -> Self {
        let mut offsets = Vec::with_capacity(layout.scenarios.len());
        let mut steps = 0;
        for s in &layout.scenarios {
            offsets.push(steps);
            steps += s.steps.len();
        }
        FailingCapture {
            offsets,
            kept: vec![0; steps * FailureClass::CAPACITY],
            pending: Vec::new(),
        }
    }

    fn slot(&self, scenario: usize, step: usize, class: FailureClass) -> usize {
        (self.offsets[scenario] + step) * FailureClass::CAPACITY + class.index()
    }

    /// Whether an example of this kind would still be kept.
    #[inline]
    pub(crate) fn wants(&self, scenario: usize, step: usize, class: FailureClass) -> bool {
        usize::from(self.kept[self.slot(scenario, step, class)]) < EXAMPLES_PER_KIND
    }

    pub(crate) fn keep(
        &mut self,
        scenario: usize,
        step: usize,
        class: FailureClass,
        example: FailingExchange,
    ) {
        let slot = self.slot(scenario, step, class);
        if usize::from(self.kept[slot]) < EXAMPLES_PER_KIND {
            self.kept[slot] += 1;
            self.pending.push(example);
        }
    }
}

impl crate::WorkerMetrics {
    /// Whether this worker would still keep a failing exchange of `class` on `step` (at most
    /// [`EXAMPLES_PER_KIND`](onrush_results::exchanges::EXAMPLES_PER_KIND) per kind and run):
    /// ask before building one.
    #[inline]
    pub fn wants_failing(&self, scenario: usize, step: usize, class: FailureClass) -> bool {
        self.failing.wants(scenario, step, class)
    }

    /// Keeps `example` (a request of `step` that failed with `class`) for the next snapshot,
    /// while this worker has room for the kind.
    pub fn keep_failing(
        &mut self,
        scenario: usize,
        step: usize,
        class: FailureClass,
        example: FailingExchange,
    ) {
        self.failing.keep(scenario, step, class, example);
    }
}

#[cfg(test)]
mod tests {
    use crate::{Collector, Layout, RunInfo, WorkerMetrics};

    use super::*;

    fn example(t: u64) -> FailingExchange {
        FailingExchange {
            time_unix_ms: t,
            scenario: "s".into(),
            step: "b".into(),
            class: "check_failed".into(),
            ..Default::default()
        }
    }

    #[test]
    fn a_worker_keeps_three_per_kind_and_the_collector_the_earliest_three() {
        let layout = Layout::new([("s", ["a", "b"])]);
        let mut collector = Collector::new(layout.clone(), RunInfo::new("p", 0));
        let class = FailureClass::CheckFailed;
        // Two workers; the second's failures came earlier.
        for (w, base) in [(0, 100), (1, 0)] {
            let mut m = WorkerMetrics::new(&layout);
            for i in 0..5 {
                if m.wants_failing(0, 1, class) {
                    m.keep_failing(0, 1, class, example(base + i));
                }
            }
            assert!(!m.wants_failing(0, 1, class));
            assert!(
                m.wants_failing(0, 0, class),
                "another step has its own room"
            );
            assert!(m.wants_failing(0, 1, FailureClass::Timeout));
            let snap = m.take_snapshot();
            collector.add(w, snap);
            assert!(m.take_snapshot().failing.is_empty(), "sent once");
        }
        let kept = collector.summary().extra.failing_exchanges.unwrap();
        let times: Vec<u64> = kept.iter().map(|e| e.time_unix_ms).collect();
        assert_eq!(times, [0, 1, 2]);
    }
}
