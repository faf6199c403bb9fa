//! Reads `intervals.jsonl` into per-second series: counters summed over steps and scenarios,
//! failures by class, active VUs per scenario, latency percentiles of every second (all steps
//! merged, and per step), schedule-lag p99, and the whole-run histograms. Streams with
//! onrush-results' reader: the lines of a second are contiguous, so each second is finished
//! when the next begins, and memory holds the series, not the file.

use std::collections::{BTreeMap, HashMap};
use std::path::Path;

use onrush_results::{quantiles, Dense, HistDecoder, IntervalsReader, Line, Sparse};

use crate::ReportError;

/// Seconds beyond this are taken for a corrupt file (about 115 days).
pub(crate) const MAX_SECONDS: u64 = 10_000_000;

/// One (scenario, step) of the run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct StepId {
    pub scenario: String,
    pub name: String,
}

/// p50 / p90 / p99 / max per second, in ms; `None` for a second without a value.
#[derive(Clone, Debug, Default)]
pub(crate) struct Quantiles {
    pub p50: Vec<Option<f64>>,
    pub p90: Vec<Option<f64>>,
    pub p99: Vec<Option<f64>>,
    pub max: Vec<Option<f64>>,
}

impl Quantiles {
    /// Sets second `t` from p50, p90, p99, max in µs (growing the vectors as needed).
    fn set(&mut self, t: usize, q: &[u64]) {
        for v in [&mut self.p50, &mut self.p90, &mut self.p99, &mut self.max] {
            if v.len() <= t {
                v.resize(t + 1, None);
            }
        }
        self.p50[t] = Some(us_to_ms(q[0]));
        self.p90[t] = Some(us_to_ms(q[1]));
        self.p99[t] = Some(us_to_ms(q[2]));
        self.max[t] = Some(us_to_ms(q[3]));
    }
}

fn us_to_ms(us: u64) -> f64 {
    us as f64 / 1000.0
}

/// Everything the charts need, per second `0..seconds`.
pub(crate) struct Series {
    pub seconds: usize,
    pub steps: Vec<StepId>,
    pub scenarios: Vec<String>,
    /// Whole-number fields summed per second over the step and scenario lines: `requests`,
    /// `failures`, `bytes_in`, `bytes_out`, `iterations`, `dropped_iterations`,
    /// `connections_opened`, `active_vus`, and any counter a newer writer adds.
    pub counters: BTreeMap<String, Vec<u64>>,
    /// Active VUs per second, one vector per scenario (same order as `scenarios`).
    pub vus: Vec<Vec<u64>>,
    pub failures_by_class: BTreeMap<String, Vec<u64>>,
    /// All steps merged.
    pub latency: Quantiles,
    /// Per step (same order as `steps`).
    pub step_latency: Vec<Quantiles>,
    pub step_requests: Vec<Vec<u64>>,
    /// Schedule lag p99 per second, all scenarios merged.
    pub lag_p99: Vec<Option<f64>>,
    /// Whole-run latency histogram of each step.
    pub step_hists: Vec<Dense>,
}

impl Series {
    /// The whole-run latency histogram, all steps.
    pub fn total_hist(&self) -> Dense {
        let mut total = Dense::default();
        for h in &self.step_hists {
            total.add(h);
        }
        total
    }
}

/// The quantiles of the per-second charts.
const QS: [f64; 4] = [0.5, 0.9, 0.99, 1.0];

#[derive(Default)]
struct Names {
    scenarios: Vec<String>,
    steps: Vec<StepId>,
    scenario_index: HashMap<String, usize>,
    step_index: HashMap<String, HashMap<String, usize>>,
}

impl Names {
    fn scenario(&mut self, name: &str) -> usize {
        if let Some(&i) = self.scenario_index.get(name) {
            return i;
        }
        self.scenarios.push(name.to_string());
        self.scenario_index
            .insert(name.to_string(), self.scenarios.len() - 1);
        self.scenarios.len() - 1
    }

    fn step(&mut self, scenario: &str, name: &str) -> usize {
        if let Some(&i) = self.step_index.get(scenario).and_then(|m| m.get(name)) {
            return i;
        }
        self.scenario(scenario);
        self.steps.push(StepId {
            scenario: scenario.to_string(),
            name: name.to_string(),
        });
        let i = self.steps.len() - 1;
        self.step_index
            .entry(scenario.to_string())
            .or_default()
            .insert(name.to_string(), i);
        i
    }
}

fn slot<T: Clone + Default>(v: &mut Vec<T>, t: usize) -> &mut T {
    if v.len() <= t {
        v.resize(t + 1, T::default());
    }
    &mut v[t]
}

fn item<T: Default>(v: &mut Vec<T>, i: usize) -> &mut T {
    if v.len() <= i {
        v.resize_with(i + 1, T::default);
    }
    &mut v[i]
}

/// The histograms of the second being read: all steps merged, and the schedule lag.
#[derive(Default)]
struct OpenSecond {
    t: Option<usize>,
    latency: Dense,
    lag: Dense,
}

impl OpenSecond {
    /// Sets the quantiles of the open second and starts second `t` (`None`: the end).
    fn close(
        &mut self,
        next: Option<usize>,
        latency: &mut Quantiles,
        lag_p99: &mut Vec<Option<f64>>,
    ) {
        if let Some(t) = self.t {
            if self.latency.total() > 0 {
                latency.set(t, &self.latency.quantiles(&QS));
            }
            if self.lag.total() > 0 {
                *slot(lag_p99, t) = Some(us_to_ms(self.lag.quantiles(&[0.99])[0]));
            }
        }
        self.latency.clear();
        self.lag.clear();
        self.t = next;
    }
}

/// Reads `path` (an `intervals.jsonl`). `known_steps` (from `summary.json`) fixes the order
/// of steps that the header's layout may lack.
pub(crate) fn read(path: &Path, known_steps: &[StepId]) -> Result<Series, ReportError> {
    let lines = IntervalsReader::open(path).map_err(read_err)?;
    read_lines(lines, known_steps, 0)
}

fn read_err(e: onrush_results::ReadError) -> ReportError {
    match e {
        onrush_results::ReadError::Io { path, source } => ReportError::io(&path, source),
        e => ReportError::parse(e.path(), e.line().unwrap_or(1), e.message()),
    }
}

/// The series of the seconds from `origin` on in `lines` (second `origin` at index 0; earlier
/// ones are skipped): the whole run from 0, or the live page's latest seconds.
pub(crate) fn read_lines<R: std::io::BufRead>(
    mut lines: IntervalsReader<R>,
    known_steps: &[StepId],
    origin: u64,
) -> Result<Series, ReportError> {
    let mut names = Names::default();
    for s in &lines.header().layout {
        names.scenario(&s.scenario);
        // Groups have `group` lines, not request data.
        for st in s.request_steps() {
            names.step(&s.scenario, st);
        }
    }
    for st in known_steps {
        names.step(&st.scenario, &st.name);
    }

    let mut counters: BTreeMap<String, Vec<u64>> = BTreeMap::new();
    let mut failures: BTreeMap<String, Vec<u64>> = BTreeMap::new();
    let mut vus: Vec<Vec<u64>> = Vec::new();
    let mut step_requests: Vec<Vec<u64>> = Vec::new();
    let mut latency = Quantiles::default();
    let mut step_latency: Vec<Quantiles> = Vec::new();
    let mut step_hists: Vec<Dense> = Vec::new();
    let mut lag_p99: Vec<Option<f64>> = Vec::new();
    let mut open = OpenSecond::default();
    let mut decoder = HistDecoder::new();
    let mut sparse = Sparse::new();
    let mut seconds = 0usize;
    while let Some(line) = lines.next_line().map_err(read_err)? {
        let err = |msg: String| read_err(lines.error(msg));
        let t = match &line {
            Line::Step(l) => l.t,
            Line::Scenario(l) => l.t,
            _ => continue, // groups have no per-second series
        };
        if t >= MAX_SECONDS {
            return Err(err(format!("second t = {t} is out of range")));
        }
        if t < origin {
            continue;
        }
        let t = (t - origin) as usize;
        if open.t != Some(t) {
            open.close(Some(t), &mut latency, &mut lag_p99);
        }
        seconds = seconds.max(t + 1);
        let mut count = |k: &str, n: u64| {
            if !counters.contains_key(k) {
                counters.insert(k.to_string(), Vec::new());
            }
            *slot(counters.get_mut(k).expect("inserted"), t) += n;
        };
        match &line {
            Line::Scenario(l) => {
                l.counters().for_each(|(k, n)| count(k, n));
                let si = names.scenario(&l.scenario);
                *slot(item(&mut vus, si), t) += l.active_vus;
                if let Some(text) = &l.schedule_lag {
                    decoder
                        .decode(text, &mut sparse)
                        .map_err(|e| err(format!("schedule_lag: {e}")))?;
                    open.lag.add_sparse(&sparse);
                }
            }
            Line::Step(l) => {
                l.counters().for_each(|(k, n)| count(k, n));
                let si = names.step(&l.scenario, &l.step);
                *slot(item(&mut step_requests, si), t) += l.requests;
                for (class, n) in &l.failures_by_class {
                    *slot(failures.entry(class.clone()).or_default(), t) += n;
                }
                if let Some(text) = &l.latency {
                    decoder
                        .decode(text, &mut sparse)
                        .map_err(|e| err(format!("latency: {e}")))?;
                    if !sparse.is_empty() {
                        let total = sparse.iter().map(|e| e.1).sum();
                        let q = quantiles(sparse.iter().map(|&(i, c)| (i as usize, c)), total, &QS);
                        item(&mut step_latency, si).set(t, &q);
                        open.latency.add_sparse(&sparse);
                        item(&mut step_hists, si).add_sparse(&sparse);
                    }
                }
            }
            _ => {}
        }
    }
    open.close(None, &mut latency, &mut lag_p99);

    let n_steps = names.steps.len();
    let fit = |v: &mut Vec<u64>| v.resize(seconds, 0);
    counters.values_mut().for_each(fit);
    failures.values_mut().for_each(fit);
    vus.resize(names.scenarios.len(), Vec::new());
    vus.iter_mut().for_each(fit);
    step_requests.resize(n_steps, Vec::new());
    step_requests.iter_mut().for_each(fit);
    let fit_q = |q: &mut Quantiles| {
        for v in [&mut q.p50, &mut q.p90, &mut q.p99, &mut q.max] {
            v.resize(seconds, None);
        }
    };
    fit_q(&mut latency);
    step_latency.resize_with(n_steps, Quantiles::default);
    step_latency.iter_mut().for_each(fit_q);
    step_hists.resize_with(n_steps, Dense::default);
    lag_p99.resize(seconds, None);
    Ok(Series {
        seconds,
        steps: names.steps,
        scenarios: names.scenarios,
        counters,
        vus,
        failures_by_class: failures,
        latency,
        step_latency,
        step_requests,
        lag_p99,
        step_hists,
    })
}
