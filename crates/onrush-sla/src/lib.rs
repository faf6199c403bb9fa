//! onrush-sla: thresholds (SLAs) of a plan, checked against a run's results.
//!
//! The plan crate reads `thresholds:` into [`onrush_plan::Threshold`]s (scope, metric,
//! operator, limit). This crate evaluates them:
//!
//! * [`evaluate`] against the run's [`Summary`] (and the generator-health verdict) at the end:
//!   one [`ThresholdResult`] per threshold. The end of a run records them in `summary.json`
//!   as `"thresholds"` ([`outcomes`]: onrush-results' [`ThresholdOutcome`]) and exits with
//!   code 1 when one failed ([`all_passed`]).
//! * [`evaluate_with`] does the same with the run's [`Histograms`] (read from
//!   `intervals.jsonl`), for the figures `summary.json` lacks: percentiles other than
//!   p50/p90/p95/p99/p99.9, a step's percentiles over several scenarios (merged exactly), and
//!   `service`/`connect`/`ttfb` percentiles of a whole scenario. [`needs_histograms`] says
//!   whether the thresholds use any of them.
//! * [`abort_check`] while the test runs: the first `abort_on_fail` threshold, past its
//!   `grace`, that fails on the figures so far.
//! * [`print_results`]: `✓`/`✗` lines for the end-of-run output; [`junit_xml`]: one JUnit
//!   test case per threshold for CI.
//!
//! ```
//! let plan = onrush_plan::load_str_with_grammars(
//!     "plan.yaml",
//!     "target: builtin\nthresholds: [\"p99 < 100ms\", \"failure_rate < 1%\"]\nscenarios:\n  - { name: s, load: { vus: 1, iterations: 1 }, steps: [{ get: / }] }\n",
//!     std::path::Path::new("."),
//!     &[],
//!     &[],
//!     onrush_protocols::grammars(),
//! )
//! .unwrap();
//! # use onrush_metrics::*;
//! # let layout = Layout::new([("s", ["GET /"])]);
//! # let mut worker = WorkerMetrics::new(&layout);
//! # let mut collector = Collector::new(layout, RunInfo::new("plan", 0));
//! # worker.record_request(0, 0, &RequestRecord { latency_us: 2_150, service_us: 2_150, connect_us: None, ttfb_us: Some(2_000), bytes_in: 10, bytes_out: 10, status: 200, failure: None, handshake: None });
//! # collector.add(0, worker.take_snapshot());
//! # collector.set_duration(std::time::Duration::from_secs(1));
//! let summary = collector.summary(); // at the end of the run
//! let results = onrush_sla::evaluate(&plan.all_thresholds(), &summary, Some("healthy"));
//! assert!(onrush_sla::all_passed(&results));
//! assert_eq!(results[0].measured_text, "2.151 ms");
//! onrush_sla::print_results(&results, &mut std::io::stdout());
//! let json = serde_json::to_value(&results).unwrap(); // summary.json "thresholds"
//! assert_eq!(json[0]["passed"], true);
//! let xml = onrush_sla::junit_xml(&results, "plan", summary.run.duration_s);
//! assert!(xml.contains("<testcase name=\"p99 &lt; 100ms\""));
//! ```

use std::time::Duration;

use onrush_metrics::Summary;
use onrush_plan::{LatencyStat, Threshold, ThresholdMetric, ThresholdScope};
use onrush_results::ThresholdOutcome;
use serde::ser::{Serialize, Serializer};

mod eval;
mod fmt;
mod hists;
mod output;

pub use hists::Histograms;
pub use output::{junit_xml, print_results, write_results};

/// The outcome of one threshold.
#[derive(Clone, Debug, PartialEq)]
pub struct ThresholdResult {
    /// The threshold as written (plan variables substituted): `home: p95 < 50ms`.
    pub threshold: String,
    /// What it was measured over: `total`, `scenario closed`, `step closed/home`, `step home`
    /// (a step of several scenarios, together), `generator`.
    pub scope: String,
    /// The measured value in the threshold's unit: ms for times, a fraction for `failure_rate`
    /// and `dropped_rate` (0.0041 = 0.41%), per second for rates, a count. `None` when there
    /// is none (no requests, an unknown scope) and for `generator: healthy`.
    pub measured: Option<f64>,
    /// The measured value for people: `87.2 ms`, `0.41%`, `7,012/s`, `12,345`, `healthy`, or
    /// why there is none (`no requests`).
    pub measured_text: String,
    pub passed: bool,
    /// One line: `p99 87.2 ms < 100 ms`, `p95 61.3 ms is not < 50 ms`, `no requests in step
    /// closed/cart: p99 is undefined`, ...
    pub message: String,
    /// The condition for people: `< 100 ms`, `< 1%`, `> 7,000/s`, `healthy`.
    pub limit: String,
}

impl ThresholdResult {
    /// The outcome as `summary.json` records it (`"thresholds"`, `"aborted_by"`): onrush-results'
    /// one shape for it. A measured value that is not finite is recorded as none.
    pub fn outcome(&self) -> ThresholdOutcome {
        ThresholdOutcome {
            threshold: self.threshold.clone(),
            scope: self.scope.clone(),
            measured: self.measured.filter(|v| v.is_finite()),
            measured_text: self.measured_text.clone(),
            passed: self.passed,
            message: self.message.clone(),
        }
    }
}

/// The outcomes of `results`, as `summary.json` `"thresholds"` records them.
pub fn outcomes(results: &[ThresholdResult]) -> Vec<ThresholdOutcome> {
    results.iter().map(ThresholdResult::outcome).collect()
}

/// As in `summary.json` `"thresholds"`: its [`outcome`](ThresholdResult::outcome).
impl Serialize for ThresholdResult {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.outcome().serialize(s)
    }
}

/// Evaluates every threshold against the run's summary. `generator_verdict` is
/// `summary.json` `"generator.verdict"` (`generator: healthy` passes only when it is
/// `"healthy"`; without a verdict it fails). A threshold whose metric has no value fails with
/// a message saying why (`no requests`); one that needs histograms fails saying so (use
/// [`evaluate_with`]).
pub fn evaluate(
    thresholds: &[Threshold],
    summary: &Summary,
    generator_verdict: Option<&str>,
) -> Vec<ThresholdResult> {
    evaluate_with(thresholds, summary, generator_verdict, None)
}

/// [`evaluate`] with the run's histograms, for what `summary.json` does not hold (see
/// [`needs_histograms`]). With `histograms: None` it is [`evaluate`].
pub fn evaluate_with(
    thresholds: &[Threshold],
    summary: &Summary,
    generator_verdict: Option<&str>,
    histograms: Option<&Histograms>,
) -> Vec<ThresholdResult> {
    thresholds
        .iter()
        .map(|t| eval::evaluate_one(t, summary, generator_verdict, histograms).0)
        .collect()
}

/// True when evaluating `thresholds` exactly needs the run's histograms: a percentile that
/// `summary.json` does not hold (e.g. `p75`), `service_`/`connect_`/`ttfb_` percentiles of a
/// scenario, or a percentile of a step that is in several scenarios (without histograms that
/// one is checked per scenario, and fails if any scenario's fails).
pub fn needs_histograms(thresholds: &[Threshold]) -> bool {
    thresholds.iter().any(|t| {
        t.needs_histograms()
            || matches!(
                (&t.scope, t.metric),
                (
                    ThresholdScope::Step { scenario: None, .. },
                    ThresholdMetric::Latency {
                        stat: LatencyStat::Percentile(_),
                        ..
                    }
                )
            )
    })
}

/// True when every threshold passed (also when there are none).
pub fn all_passed(results: &[ThresholdResult]) -> bool {
    results.iter().all(|r| r.passed)
}

/// While the test runs: the first threshold with `abort_on_fail` whose `grace` is over
/// (`elapsed >= grace`) and that fails on `so_far`, the summary of the run up to now. A
/// threshold without a value yet (no requests so far) does not abort. Call it at most once a
/// second (e.g. after closing a second); when it returns a result, stop the run and report it.
pub fn abort_check(
    thresholds: &[Threshold],
    so_far: &Summary,
    elapsed: Duration,
    generator_verdict: Option<&str>,
) -> Option<ThresholdResult> {
    thresholds
        .iter()
        .filter(|t| t.abort_on_fail && elapsed >= t.grace)
        .map(|t| eval::evaluate_one(t, so_far, generator_verdict, None))
        .find(|(r, defined)| *defined && !r.passed)
        .map(|(r, _)| r)
}
