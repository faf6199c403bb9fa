//! The data embedded in the page for the charts (`<script type="application/json"
//! id="onrush-data">`): per-second series keyed by name, per-step series, and the latency
//! distribution curves.

use std::collections::BTreeMap;

use serde::Serialize;

use crate::input::Run;
use onrush_results::Dense;

/// One per-second series: counts or optional milliseconds.
#[derive(Serialize)]
#[serde(untagged)]
pub(crate) enum Column<'a> {
    Counts(&'a [u64]),
    Ms(&'a [Option<f64>]),
}

#[derive(Serialize)]
pub(crate) struct StepSeries<'a> {
    requests: &'a [u64],
    p50: &'a [Option<f64>],
    p90: &'a [Option<f64>],
    p99: &'a [Option<f64>],
    max: &'a [Option<f64>],
}

/// Percentile curves on a common grid: `x` = log10(1 / (1 - quantile)), so 1 = p90,
/// 2 = p99, 3 = p99.9...; values in ms.
#[derive(Serialize)]
pub(crate) struct Distribution {
    pub x: Vec<f64>,
    pub total: Vec<Option<f64>>,
    pub steps: Vec<Vec<Option<f64>>>,
}

#[derive(Serialize)]
struct Baseline<'a> {
    label: String,
    seconds: usize,
    series: BTreeMap<String, Column<'a>>,
    dist: Vec<Option<f64>>,
}

#[derive(Serialize)]
struct Payload<'a> {
    plan: &'a str,
    start_unix_ms: u64,
    seconds: usize,
    scenarios: &'a [String],
    steps: Vec<String>,
    series: BTreeMap<String, Column<'a>>,
    step_series: Vec<StepSeries<'a>>,
    dist: Distribution,
    baseline: Option<Baseline<'a>>,
    /// The run has an open-model scenario: only then can iterations be dropped and start
    /// late, and only then is the "dropped iterations and schedule lag" chart drawn (for a
    /// closed-only run it was an empty chart that made readers look for drops).
    open_model: bool,
    /// Markers for the charts over time: `events.jsonl`.
    events: Vec<crate::events::Marker>,
}

/// Every per-second series of a run by name: the counters (`requests`, `iterations`, ...),
/// `lat_p50/p90/p99/max`, `lag_p99`, `vus:<scenario>`, `fail:<class>`, and in a distributed
/// run `agent:<name>` (each agent's requests per second).
pub(crate) fn columns(run: &Run) -> BTreeMap<String, Column<'_>> {
    let mut m = series_columns(&run.series);
    for a in &run.agents {
        m.insert(format!("agent:{}", a.name), Column::Counts(&a.requests));
    }
    m
}

/// [`columns`] without the agents: what `intervals.jsonl` alone gives.
pub(crate) fn series_columns(s: &crate::intervals::Series) -> BTreeMap<String, Column<'_>> {
    let mut m: BTreeMap<String, Column> = s
        .counters
        .iter()
        .map(|(k, v)| (k.clone(), Column::Counts(v)))
        .collect();
    m.insert("lat_p50".into(), Column::Ms(&s.latency.p50));
    m.insert("lat_p90".into(), Column::Ms(&s.latency.p90));
    m.insert("lat_p99".into(), Column::Ms(&s.latency.p99));
    m.insert("lat_max".into(), Column::Ms(&s.latency.max));
    m.insert("lag_p99".into(), Column::Ms(&s.lag_p99));
    for (name, v) in s.scenarios.iter().zip(&s.vus) {
        m.insert(format!("vus:{name}"), Column::Counts(v));
    }
    for (class, v) in &s.failures_by_class {
        m.insert(format!("fail:{class}"), Column::Counts(v));
    }
    m
}

/// The x grid of the distribution: up to the 1-in-`count` quantile, at most p99.9999.
pub(crate) fn dist_grid(count: u64) -> Vec<f64> {
    let top = (count.max(10) as f64).log10().min(6.0);
    let steps = (top / 0.02).ceil() as usize;
    (0..=steps).map(|i| (i as f64 * 0.02).min(top)).collect()
}

/// Values of `h` at the grid's quantiles (ms); all `None` for an empty histogram.
pub(crate) fn dist_values(h: &Dense, grid: &[f64]) -> Vec<Option<f64>> {
    if h.total() == 0 {
        return vec![None; grid.len()];
    }
    let qs: Vec<f64> = grid.iter().map(|x| 1.0 - 10f64.powf(-x)).collect();
    h.quantiles(&qs)
        .into_iter()
        .map(|us| Some(us as f64 / 1000.0))
        .collect()
}

/// The JSON text to embed (not yet escaped for the script tag).
pub(crate) fn payload_json(run: &Run, base: Option<&Run>) -> String {
    let s = &run.series;
    let total = s.total_hist();
    let base_total = base.map(|b| b.series.total_hist());
    let count = total
        .total()
        .max(base_total.as_ref().map_or(0, Dense::total));
    let x = dist_grid(count);
    let dist = Distribution {
        total: dist_values(&total, &x),
        steps: s.step_hists.iter().map(|h| dist_values(h, &x)).collect(),
        x: x.clone(),
    };
    let baseline = base.map(|b| Baseline {
        label: format!("baseline ({})", b.summary.run.plan),
        seconds: b.series.seconds,
        series: columns(b),
        dist: dist_values(base_total.as_ref().expect("computed with base"), &x),
    });
    let payload = Payload {
        plan: &run.summary.run.plan,
        start_unix_ms: run.summary.run.start_unix_ms,
        seconds: s.seconds,
        scenarios: &s.scenarios,
        steps: s
            .steps
            .iter()
            .map(|st| format!("{} / {}", st.scenario, st.name))
            .collect(),
        series: columns(run),
        step_series: step_series(s),
        dist,
        baseline,
        open_model: has_open_model(run),
        events: crate::events::markers(run),
    };
    serde_json::to_string(&payload).expect("the payload always serialises")
}

/// Per step: its requests and latency percentiles per second.
pub(crate) fn step_series(s: &crate::intervals::Series) -> Vec<StepSeries<'_>> {
    (0..s.steps.len())
        .map(|i| StepSeries {
            requests: &s.step_requests[i],
            p50: &s.step_latency[i].p50,
            p90: &s.step_latency[i].p90,
            p99: &s.step_latency[i].p99,
            max: &s.step_latency[i].max,
        })
        .collect()
}

/// An open-model scenario: named so by the load models of summary.json, or (results without
/// them, e.g. merged) seen by what only the open model records: drops and schedule lag.
pub(crate) fn has_open_model(run: &Run) -> bool {
    run.extras
        .load
        .iter()
        .any(|(_, model)| model.starts_with("open"))
        || run
            .summary
            .scenarios
            .iter()
            .any(|sc| sc.dropped_iterations > 0 || sc.schedule_lag_ms.count > 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grid_and_values() {
        let g = dist_grid(1000);
        assert_eq!(g[0], 0.0);
        assert_eq!(*g.last().unwrap(), 3.0);
        assert_eq!(dist_grid(u64::MAX).last(), Some(&6.0));
        let mut h = Dense::default();
        let sparse: Vec<(u32, u64)> = (1..=1000u32).map(|v| (v, 1)).collect();
        h.add_sparse(&sparse);
        let v = dist_values(&h, &[0.0, 1.0, 2.0, 3.0]);
        assert_eq!(v, vec![Some(0.001), Some(0.9), Some(0.99), Some(0.999)]);
    }
}
